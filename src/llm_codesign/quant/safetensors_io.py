"""A small, defensive safetensors reader (no pickle, no ``safetensors`` package needed).

Format (huggingface/safetensors): an 8-byte little-endian header length ``N``, ``N`` bytes of
UTF-8 JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``,
then the data buffer; offsets are relative to the buffer start. The reader checks, before any
tensor is read: ``N <= 100 MB`` and inside the file, valid JSON object without duplicate keys,
exactly the three keys per tensor, a known dtype, non-negative integer dims, ``begin <= end``
inside the buffer, ``end - begin == prod(shape) * itemsize``, and no two tensors overlapping.
Any violation raises :class:`~llm_codesign.errors.DataFileError` naming the file and tensor.

Tensors are returned one at a time as read-only ``np.memmap`` views, so a caller that streams
them holds at most the tensor it is working on.

Example:
    >>> for name, array in read_safetensors("model.safetensors"):  # doctest: +SKIP
    ...     print(name, array.shape, array.dtype)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from ..errors import DataFileError
from ..specs._load import unique_json_pairs

MAX_HEADER_BYTES = 100_000_000
MAX_NDIM = 16  # numpy allows 64; checkpoint tensors have at most 5 or 6
MAX_DIM = 2**48  # no dimension of a real tensor comes near (a zero dim elsewhere hides a huge one)

DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
FLOAT_DTYPES = frozenset({"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"})


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives: ``file``, absolute byte ``offset``, ``nbytes``, dtype and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path
    offset: int
    nbytes: int

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:80]}..."


def _load_json(raw: bytes, where: str) -> dict:
    try:
        obj = json.loads(raw.decode("utf-8"), object_pairs_hook=unique_json_pairs)
    except (UnicodeDecodeError, ValueError) as exc:
        raise DataFileError(f"{where}: header is not valid JSON ({exc})") from None
    except RecursionError:
        raise DataFileError(f"{where}: header JSON is nested too deeply") from None
    if not isinstance(obj, dict):
        raise DataFileError(f"{where}: header must be a JSON object")
    return obj


def read_header(path: str | os.PathLike[str]) -> tuple[list[TensorInfo], dict[str, str]]:
    """Validated tensor table (sorted by offset) and ``__metadata__`` of one safetensors file."""
    path = Path(path)
    where = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise DataFileError(f"{where}: truncated: {size} bytes, no 8-byte header length")
            n = int.from_bytes(head, "little")
            if n > MAX_HEADER_BYTES:
                raise DataFileError(
                    f"{where}: header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit"
                )
            if 8 + n > size:
                raise DataFileError(
                    f"{where}: truncated: header claims {n} bytes but the file has {size - 8}"
                )
            raw = fh.read(n)
    except OSError as exc:
        raise DataFileError(f"{where}: cannot read ({exc.strerror or exc})") from None
    header = _load_json(raw, where)
    buffer_start = 8 + n
    buffer_len = size - buffer_start
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise DataFileError(f"{where}: __metadata__ must map strings to strings")
    infos: list[TensorInfo] = []
    for name, entry in header.items():
        infos.append(_tensor_info(where, path, name, entry, buffer_start, buffer_len))
    infos.sort(key=lambda t: (t.offset, t.offset + t.nbytes))
    last_end, last_name = buffer_start, ""
    for info in infos:
        if info.nbytes and info.offset < last_end:
            raise DataFileError(f"{where}: tensor {info.name!r} overlaps {last_name!r}")
        if info.nbytes:
            last_end, last_name = info.offset + info.nbytes, info.name
    return infos, metadata


def _tensor_info(
    where: str, path: Path, name: str, entry: object, buffer_start: int, buffer_len: int
) -> TensorInfo:
    if not name:
        raise DataFileError(f"{where}: empty tensor name")
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise DataFileError(
            f"{where}: tensor {name!r} must have exactly dtype, shape and data_offsets"
        )
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in DTYPES:
        raise DataFileError(
            f"{where}: tensor {name!r} has unsupported dtype {dtype!r}; "
            f"supported: {', '.join(DTYPES)}"
        )
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM for d in shape
    ):
        raise DataFileError(
            f"{where}: tensor {name!r} shape {_brief(shape)} is not a list of ints from 0 to 2**48"
        )
    if len(shape) > MAX_NDIM:
        raise DataFileError(
            f"{where}: tensor {name!r} has {len(shape)} dimensions (at most {MAX_NDIM})"
        )
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        raise DataFileError(f"{where}: tensor {name!r} data_offsets must be [begin, end]")
    begin, end = offsets
    if not 0 <= begin <= end <= buffer_len:
        raise DataFileError(
            f"{where}: tensor {name!r} data_offsets [{begin}, {end}] outside the "
            f"{buffer_len}-byte data buffer (truncated file?)"
        )
    numel = 1
    for d in shape:
        numel *= d
    expected = numel * DTYPES[dtype].itemsize
    if end - begin != expected:
        raise DataFileError(
            f"{where}: tensor {name!r} is {dtype}{shape} = {expected} bytes but its "
            f"data_offsets span {end - begin}"
        )
    return TensorInfo(name, dtype, tuple(shape), path, buffer_start + begin, end - begin)


def _index_files(folder: Path) -> list[Path]:
    preferred = folder / "model.safetensors.index.json"
    if preferred.is_file():
        return [preferred]
    return sorted(folder.glob("*.safetensors.index.json"))


def list_tensors(path: str | os.PathLike[str]) -> list[TensorInfo]:
    """Every tensor of a ``.safetensors`` file, a sharded folder with its index, or a HF model
    folder, validated, in reading order (shard by shard, by offset)."""
    path = Path(path)
    try:
        is_file, is_dir = path.is_file(), path.is_dir()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        shown = str(path) if len(str(path)) <= 120 else f"{str(path)[:120]}..."
        raise DataFileError(
            f"{shown}: cannot read ({getattr(exc, 'strerror', None) or exc})"
        ) from None
    if is_file:
        return read_header(path)[0]
    if not is_dir:
        raise DataFileError(f"{path}: no such file or folder")
    indexes = _index_files(path)
    if len(indexes) > 1:
        names = ", ".join(p.name for p in indexes)
        raise DataFileError(f"{path}: several safetensors indexes ({names}); pass one file")
    if indexes:
        return _list_indexed(path, indexes[0])
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise DataFileError(f"{path}: no .safetensors file or safetensors index in the folder")
    infos: list[TensorInfo] = []
    seen: dict[str, Path] = {}
    for file in files:
        for info in read_header(file)[0]:
            if info.name in seen:
                raise DataFileError(
                    f"{path}: tensor {info.name!r} is in both {seen[info.name].name} "
                    f"and {file.name}"
                )
            seen[info.name] = file
            infos.append(info)
    return infos


def _list_indexed(folder: Path, index: Path) -> list[TensorInfo]:
    where = str(index)
    if index.stat().st_size > MAX_HEADER_BYTES:
        raise DataFileError(f"{where}: index larger than {MAX_HEADER_BYTES} bytes")
    doc = _load_json(index.read_bytes(), where)
    weight_map = doc.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise DataFileError(f"{where}: weight_map must map tensor names to shard file names")
    shards: dict[str, set[str]] = {}  # shard -> its tensor names, in first-seen order (O(n))
    for name, shard in weight_map.items():
        if shard not in shards:
            if shard != Path(shard).name or shard in ("", ".", ".."):
                raise DataFileError(f"{where}: shard {shard!r} must be a file name in {folder}")
            shards[shard] = set()
        shards[shard].add(name)
    infos: list[TensorInfo] = []
    for shard, wanted in shards.items():
        file = folder / shard
        if not file.is_file():
            raise DataFileError(f"{where}: shard {shard} is missing from {folder}")
        by_name = {t.name: t for t in read_header(file)[0]}
        missing = sorted(wanted - set(by_name))
        if missing:
            raise DataFileError(f"{file}: tensors listed in the index are missing: {missing[:5]}")
        infos.extend(t for t in by_name.values() if t.name in wanted)
    return infos


def load_tensor(info: TensorInfo) -> np.ndarray:
    """A read-only memory-mapped array of one tensor (nothing is read until used)."""
    dtype = DTYPES[info.dtype]
    if info.nbytes == 0:
        return np.zeros(info.shape, dtype)
    try:
        size = info.file.stat().st_size
        if info.offset + info.nbytes > size:
            raise DataFileError(f"{info.file}: truncated while reading tensor {info.name!r}")
        mm = np.memmap(info.file, dtype=dtype, mode="r", offset=info.offset, shape=(info.numel,))
        return mm.reshape(info.shape)
    except OSError as exc:
        raise DataFileError(f"{info.file}: cannot read tensor {info.name!r} ({exc})") from None


def read_safetensors(path: str | os.PathLike[str]) -> Iterator[tuple[str, np.ndarray]]:
    """Stream ``(name, array)`` pairs from a file, a sharded folder or a HF model folder.

    All headers are validated first; arrays are memory-mapped one at a time.
    """
    for info in list_tensors(path):
        yield info.name, load_tensor(info)


def write_safetensors(
    path: str | os.PathLike[str],
    tensors: dict[str, np.ndarray],
    metadata: dict[str, str] | None = None,
) -> Path:
    """Write ``tensors`` as a safetensors file (8-byte aligned header, tensors in given order).

    Example:
        >>> write_safetensors("w.safetensors", {"w": np.ones((2, 2), np.float32)})  # doctest: +SKIP
    """
    names = {np.dtype(v): k for k, v in DTYPES.items()}
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    arrays = []
    for name, value in tensors.items():
        arr = np.asarray(value)
        arr = arr if arr.flags.c_contiguous else arr.copy()  # ascontiguousarray makes 0-d 1-d
        dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
        if np.dtype(dtype) not in names:
            raise DataFileError(f"cannot write tensor {name!r} of dtype {arr.dtype}")
        header[name] = {
            "dtype": names[np.dtype(dtype)],
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + arr.nbytes],
        }
        offset += arr.nbytes
        arrays.append(arr.astype(dtype, copy=False))
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * ((-len(raw)) % 8)
    path = Path(path)
    with path.open("wb") as fh:
        fh.write(len(raw).to_bytes(8, "little"))
        fh.write(raw)
        for arr in arrays:
            fh.write(arr.tobytes())
    return path
