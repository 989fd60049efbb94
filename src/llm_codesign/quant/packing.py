"""Byte layout of quantized tensors, sized by the shared format registry.

``pack(q)`` concatenates, little-endian, with no header:

1. element codes, row-major over the padded 2-D layout: 8-bit codes one per byte; 4-bit codes
   two per byte, element ``2i`` in the low nibble (OCP / PyTorch ``float4_e2m1fn_x2`` order);
   6-bit codes four per three bytes, element ``4i`` in bits 0-5 of a little-endian 24-bit word;
   bf16/fp16 two bytes, fp32 four;
2. the group scales, row-major: E8M0 and UE4M3 one byte each, FP16 two bytes, FP32 four;
3. INT4 asymmetric zero points, two per byte, low nibble first;
4. the NVFP4 FP32 per-tensor scale (``s_global``).

Size rule (pinned by tests): with ``n`` the element count after padding the last dimension to
the block (and, for 128x128 FP8 tiles, the rows to 128),
``len(pack(q)) == packed_nbytes(shape, id) == ceil(n * FORMATS[id].bits_per_element / 8) + extra``
where ``extra`` is the scale the registry counts as negligible: 4 bytes for a per-tensor FP32
scale (``fp8``, ``fp8_e5m2``, ``nvfp4``'s second level), 4 bytes per row for per-channel FP32
scales (``int8``, ``fp8_channel``), 0 otherwise. ``fp8_block`` activations (1x128 blocks, not the
registry's 128x128 weight tiles) take ``n + 4 * n / 128``.

Example: a 4096 x 4096 NVFP4 weight packs to ``4096 * 4096 * 0.5625 + 4 = 9437188`` bytes.

:func:`to_awq` gives the AWQ/GPTQ checkpoint layout of an INT4 g128 weight: ``qweight`` int32
``[in, out / 8]`` with AutoAWQ's nibble order ``[0, 2, 4, 6, 1, 3, 5, 7]``, ``qzeros`` int32
``[in / 128, out / 8]``, ``scales`` fp16 ``[in / 128, out]`` (vLLM ``awq.py``: 8 int4 per int32,
``reference/formats.md`` s2 [F15]).
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np

from ..errors import DataFileError, SpecError
from ..formats import FORMATS
from .numerics import _GRANULARITY, TILE, QuantizedTensor, resolve_format

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)

_SCALE_DTYPES: dict[str, np.dtype] = {
    "e8m0": np.dtype(ml_dtypes.float8_e8m0fnu),
    "ue4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "fp16": np.dtype("<f2"),
    "fp32": np.dtype("<f4"),
}


def _layout(shape: tuple[int, ...], format_id: str, role: str) -> dict[str, int]:
    """Padded 2-D code layout and scale-group grid of a tensor in a format."""
    fmt = resolve_format(format_id)
    kind = _GRANULARITY[fmt.id]
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) >= 1 else 1
    cols = int(shape[-1]) if shape else 1
    if kind == "tile":
        tile_rows = TILE if (role == "weight" and len(shape) >= 2) else 1
        rows_p = -(-rows // tile_rows) * tile_rows
        cols_p = -(-cols // TILE) * TILE
        return {
            "rows": rows_p,
            "cols": cols_p,
            "scale_rows": rows_p // tile_rows,
            "scale_cols": cols_p // TILE,
        }
    if kind in ("mx", "nvfp4", "int4_asym", "int4_sym"):
        cols_p = -(-cols // fmt.block_size) * fmt.block_size
        return {
            "rows": rows,
            "cols": cols_p,
            "scale_rows": rows,
            "scale_cols": cols_p // fmt.block_size,
        }
    if kind == "channel":
        return {"rows": rows, "cols": cols, "scale_rows": rows, "scale_cols": 1}
    if kind == "tensor":
        return {"rows": rows, "cols": cols, "scale_rows": 1, "scale_cols": 1}
    return {"rows": rows, "cols": cols, "scale_rows": 0, "scale_cols": 0}


def packed_nbytes(shape: tuple[int, ...], format_id: str, *, role: str = "weight") -> int:
    """Bytes :func:`pack` produces for a tensor of ``shape``, from the registry's bits/element.

    Example:
        >>> packed_nbytes((4096, 4096), "nvfp4")
        9437188
    """
    fmt = resolve_format(format_id)
    kind = _GRANULARITY[fmt.id]
    lay = _layout(tuple(shape), fmt.id, role)
    n = lay["rows"] * lay["cols"]
    if kind == "tile" and role == "activation" or (kind == "tile" and len(shape) < 2):
        return n + 4 * lay["scale_rows"] * lay["scale_cols"]
    bits = Fraction(fmt.element_bits)
    if fmt.block_size:
        bits += Fraction(fmt.scale_bits, fmt.block_size)
    extra = {"tensor": 4, "nvfp4": 4, "channel": 4 * lay["rows"]}.get(kind, 0)
    return math.ceil(n * bits / 8) + extra


def _pack_nibbles(codes: np.ndarray) -> bytes:
    flat = codes.reshape(-1).astype(np.uint8)
    if flat.size % 2:
        flat = np.append(flat, np.uint8(0))
    pairs = flat.reshape(-1, 2)
    return (pairs[:, 0] | (pairs[:, 1] << 4)).astype(np.uint8).tobytes()


def _unpack_nibbles(data: bytes, count: int) -> np.ndarray:
    packed = np.frombuffer(data, np.uint8)
    out = np.empty(packed.size * 2, np.uint8)
    out[0::2] = packed & 0x0F
    out[1::2] = packed >> 4
    return out[:count]


def _pack_sextets(codes: np.ndarray) -> bytes:
    flat = codes.reshape(-1).astype(np.uint32)
    pad = (-flat.size) % 4
    if pad:
        flat = np.append(flat, np.zeros(pad, np.uint32))
    q = flat.reshape(-1, 4)
    word = q[:, 0] | (q[:, 1] << 6) | (q[:, 2] << 12) | (q[:, 3] << 18)
    out = np.empty((word.size, 3), np.uint8)
    out[:, 0] = word & 0xFF
    out[:, 1] = (word >> 8) & 0xFF
    out[:, 2] = (word >> 16) & 0xFF
    return out.tobytes()


def _unpack_sextets(data: bytes, count: int) -> np.ndarray:
    b = np.frombuffer(data, np.uint8).reshape(-1, 3).astype(np.uint32)
    word = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
    out = np.stack([(word >> s) & 0x3F for s in (0, 6, 12, 18)], axis=1).astype(np.uint8)
    return out.reshape(-1)[:count]


def _codes_nbytes(count: int, bits: int) -> int:
    return math.ceil(count * bits / 8)


def pack(q: QuantizedTensor) -> bytes:
    """Serialize a :class:`QuantizedTensor` to the byte layout in the module docstring.

    Example:
        >>> from llm_codesign.quant.numerics import quantize
        >>> len(pack(quantize(np.ones((2, 32), np.float32), "mxfp4")))
        34
    """
    fmt = FORMATS[q.format_id]
    bits = fmt.element_bits
    if bits == 4:
        parts = [_pack_nibbles(q.codes)]
    elif bits == 6:
        parts = [_pack_sextets(q.codes)]
    else:
        parts = [np.ascontiguousarray(q.codes).astype(q.codes.dtype.newbyteorder("<")).tobytes()]
    if q.scales is not None:
        parts.append(q.scales.astype(_SCALE_DTYPES[fmt.scale_type], copy=False).tobytes())
    if q.zeros is not None:
        parts.append(_pack_nibbles(q.zeros))
    if q.global_scale is not None:
        parts.append(np.float32(q.global_scale).astype("<f4").tobytes())
    return b"".join(parts)


def unpack(
    data: bytes, shape: tuple[int, ...], format_id: str, *, role: str = "weight"
) -> QuantizedTensor:
    """Inverse of :func:`pack` (``saturated_blocks`` is not stored and reads back as 0)."""
    fmt = resolve_format(format_id)
    kind = _GRANULARITY[fmt.id]
    shape = tuple(int(d) for d in shape)
    expected = packed_nbytes(shape, fmt.id, role=role)
    if len(data) != expected:
        raise DataFileError(
            f"{fmt.id} tensor of shape {shape} needs {expected} bytes, got {len(data)}"
        )
    lay = _layout(shape, fmt.id, role)
    count = lay["rows"] * lay["cols"]
    pos = _codes_nbytes(count, fmt.element_bits)
    raw = data[:pos]
    if fmt.element_bits == 4:
        codes = _unpack_nibbles(raw, count)
    elif fmt.element_bits == 6:
        codes = _unpack_sextets(raw, count)
    else:
        dtype = np.dtype({8: "u1", 16: "<u2", 32: "<u4"}[fmt.element_bits])
        codes = np.frombuffer(raw, dtype).astype(dtype.newbyteorder("="))
    codes = codes.reshape(lay["rows"], lay["cols"])
    scales = zeros = global_scale = None
    n_groups = lay["scale_rows"] * lay["scale_cols"]
    if kind != "cast":
        sdt = _SCALE_DTYPES[fmt.scale_type]
        end = pos + n_groups * sdt.itemsize
        scales = np.frombuffer(data[pos:end], sdt).astype(sdt.newbyteorder("="))
        scales = scales.reshape(lay["scale_rows"], lay["scale_cols"])
        pos = end
    if kind == "int4_asym":
        end = pos + math.ceil(n_groups / 2)
        zeros = _unpack_nibbles(data[pos:end], n_groups).reshape(scales.shape)  # type: ignore[union-attr]
        pos = end
    if kind == "nvfp4":
        global_scale = np.frombuffer(data[pos : pos + 4], "<f4")[0].astype(np.float32)
    n_blocks = 0 if kind == "cast" else n_groups
    return QuantizedTensor(fmt.id, shape, role, codes, scales, zeros, global_scale, 0, n_blocks)


def to_awq(q: QuantizedTensor) -> dict[str, np.ndarray]:
    """AWQ checkpoint tensors (``qweight``, ``qzeros``, ``scales``) of an INT4 g128 weight.

    The weight must be 2-D ``[out, in]`` with ``in % 128 == 0`` and ``out % 8 == 0``. The
    symmetric variant stores its implicit zero point 8 in ``qzeros``.
    """
    if q.format_id not in ("int4_g128", "int4_g128_sym"):
        raise SpecError(f"AWQ layout needs an int4_g128 tensor, got {q.format_id}")
    if len(q.shape) != 2 or q.shape[1] % 128 or q.shape[0] % 8:
        raise SpecError(
            f"AWQ layout needs a 2-D [out, in] weight with in % 128 == 0 and out % 8 == 0, "
            f"got shape {q.shape}"
        )
    assert q.scales is not None
    zeros = q.zeros if q.zeros is not None else np.full(q.scales.shape, 8, np.uint8)
    return {
        "qweight": _awq_pack_cols(q.codes.T),
        "qzeros": _awq_pack_cols(zeros.T),
        "scales": np.ascontiguousarray(q.scales.T.astype(np.float16)),
    }


def _awq_pack_cols(nibbles: np.ndarray) -> np.ndarray:
    rows, cols = nibbles.shape
    grouped = nibbles.reshape(rows, cols // 8, 8)[:, :, list(AWQ_ORDER)].astype(np.uint32)
    shifts = (4 * np.arange(8, dtype=np.uint32))[None, None, :]
    return np.bitwise_or.reduce(grouped << shifts, axis=-1).view(np.int32)


def _awq_unpack_cols(packed: np.ndarray) -> np.ndarray:
    words = packed.view(np.uint32)
    shifts = (4 * np.arange(8, dtype=np.uint32))[None, None, :]
    nib = ((words[:, :, None] >> shifts) & 0xF).astype(np.uint8)  # nibble i = col order[i]
    out = np.empty_like(nib)
    out[:, :, list(AWQ_ORDER)] = nib
    return out.reshape(packed.shape[0], -1)


def from_awq(
    qweight: np.ndarray, qzeros: np.ndarray, scales: np.ndarray, *, symmetric: bool = False
) -> QuantizedTensor:
    """Inverse of :func:`to_awq`: a :class:`QuantizedTensor` of shape ``[out, in]``."""
    codes = _awq_unpack_cols(np.asarray(qweight, np.int32)).T
    zeros = _awq_unpack_cols(np.asarray(qzeros, np.int32)).T
    scales16 = np.ascontiguousarray(np.asarray(scales, np.float16).T)
    out_features, in_features = codes.shape
    fid = "int4_g128_sym" if symmetric else "int4_g128"
    return QuantizedTensor(
        fid,
        (out_features, in_features),
        "weight",
        np.ascontiguousarray(codes),
        scales16,
        None if symmetric else np.ascontiguousarray(zeros),
        None,
        0,
        scales16.size,
    )
