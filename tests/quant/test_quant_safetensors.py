"""The safetensors reader: round trips, sharded folders, and malformed or hostile files."""

from __future__ import annotations

import json
import struct

import ml_dtypes
import numpy as np
import pytest

from llm_codesign.errors import DataFileError
from llm_codesign.quant import list_tensors, read_header, read_safetensors, write_safetensors
from llm_codesign.quant.safetensors_io import MAX_HEADER_BYTES


def raw_file(path, header: object, data: bytes = b"", *, length: int | None = None):
    blob = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(blob) if length is None else length
    path.write_bytes(struct.pack("<Q", n) + blob + data)
    return path


def sample():
    rng = np.random.default_rng(0)
    return {
        "a.weight": rng.standard_normal((4, 8)).astype(ml_dtypes.bfloat16),
        "b.bias": rng.standard_normal(8).astype(np.float16),
        "c.fp8": rng.standard_normal((2, 16)).astype(ml_dtypes.float8_e4m3fn),
        "d.ids": np.arange(6, dtype=np.int64).reshape(2, 3),
        "e.scalar": np.array(3.5, np.float32),
        "f.empty": np.zeros((0, 4), np.float32),
    }


def test_round_trip(tmp_path):
    tensors = sample()
    path = write_safetensors(tmp_path / "m.safetensors", tensors, {"format": "pt"})
    _, meta = read_header(path)
    assert meta == {"format": "pt"}
    got = dict(read_safetensors(path))
    assert list(got) == list(tensors)  # file order = offset order
    for name, arr in tensors.items():
        assert got[name].dtype == arr.dtype and got[name].shape == arr.shape
        assert got[name].tobytes() == arr.tobytes()


def test_agrees_with_the_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    tensors = {k: v for k, v in sample().items() if v.dtype in (np.float16, np.int64, np.float32)}
    st.save_file(tensors, str(tmp_path / "theirs.safetensors"), metadata={"k": "v"})
    got = dict(read_safetensors(tmp_path / "theirs.safetensors"))
    for name, arr in tensors.items():
        assert np.array_equal(got[name], arr)
    write_safetensors(tmp_path / "ours.safetensors", tensors)
    back = st.load_file(str(tmp_path / "ours.safetensors"))
    for name, arr in tensors.items():
        assert np.array_equal(back[name], arr)


def test_sharded_folder_with_index(tmp_path):
    t = sample()
    write_safetensors(
        tmp_path / "model-00001-of-00002.safetensors",
        {"a.weight": t["a.weight"], "b.bias": t["b.bias"]},
    )
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"d.ids": t["d.ids"]})
    index = {
        "metadata": {"total_size": 1},
        "weight_map": {
            "a.weight": "model-00001-of-00002.safetensors",
            "b.bias": "model-00001-of-00002.safetensors",
            "d.ids": "model-00002-of-00002.safetensors",
        },
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    (tmp_path / "config.json").write_text("{}")
    assert [n for n, _ in read_safetensors(tmp_path)] == ["a.weight", "b.bias", "d.ids"]


def test_hf_folder_without_index(tmp_path):
    write_safetensors(tmp_path / "model.safetensors", {"w": np.ones((2, 2), np.float32)})
    assert [t.name for t in list_tensors(tmp_path)] == ["w"]


@pytest.mark.parametrize("shard", ["../evil.safetensors", "/etc/passwd", "sub/x.safetensors"])
def test_index_rejects_paths_outside_the_folder(tmp_path, shard):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": shard}}))
    with pytest.raises(DataFileError, match="file name"):
        list_tensors(tmp_path)


def test_index_missing_shard_and_missing_tensor(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"w": "a.safetensors"}})
    )
    with pytest.raises(DataFileError, match="missing"):
        list_tensors(tmp_path)
    write_safetensors(tmp_path / "a.safetensors", {"other": np.ones(2, np.float32)})
    with pytest.raises(DataFileError, match="missing"):
        list_tensors(tmp_path)


def test_empty_folder_and_missing_path(tmp_path):
    with pytest.raises(DataFileError, match="no .safetensors"):
        list_tensors(tmp_path)
    with pytest.raises(DataFileError, match="no such"):
        list_tensors(tmp_path / "nope")


def good_entry(**over):
    entry = {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}
    entry.update(over)
    return entry


@pytest.mark.parametrize(
    "header, data, message",
    [
        (b"{not json", b"", "not valid JSON"),
        (b"\xff\xfe{}", b"", "not valid JSON"),
        (b"[1, 2]", b"", "JSON object"),
        (
            (
                b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                b'"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
            ),
            b"\0" * 4,
            "duplicate",
        ),
        ({"w": {"dtype": "F32", "shape": [2, 2]}}, b"\0" * 16, "exactly"),
        ({"w": good_entry(extra=1)}, b"\0" * 16, "exactly"),
        ({"w": good_entry(dtype="PICKLE")}, b"\0" * 16, "unsupported dtype"),
        ({"w": good_entry(shape=[2, -2])}, b"\0" * 16, "shape"),
        ({"w": good_entry(shape=[True, 2])}, b"\0" * 16, "shape"),
        ({"w": good_entry(shape="2x2")}, b"\0" * 16, "shape"),
        ({"w": good_entry(data_offsets=[0, 16, 32])}, b"\0" * 16, "begin, end"),
        ({"w": good_entry(data_offsets=[8, 4])}, b"\0" * 16, "outside"),
        ({"w": good_entry(data_offsets=[0, 1 << 40], shape=[1 << 38])}, b"\0" * 16, "outside"),
        ({"w": good_entry(data_offsets=[0, 12])}, b"\0" * 16, "span"),
        ({"w": good_entry(), "v": good_entry(data_offsets=[8, 24])}, b"\0" * 24, "overlaps"),
        ({"__metadata__": {"a": 1}, "w": good_entry()}, b"\0" * 16, "__metadata__"),
        ({"": good_entry()}, b"\0" * 16, "empty tensor name"),
        ({"w": good_entry()}, b"\0" * 8, "truncated"),
    ],
)
def test_malformed_headers(tmp_path, header, data, message):
    path = raw_file(tmp_path / "bad.safetensors", header, data)
    with pytest.raises(DataFileError, match=message):
        list(read_safetensors(path))


def test_header_length_limits(tmp_path):
    path = raw_file(tmp_path / "huge.safetensors", b"{}", length=MAX_HEADER_BYTES + 1)
    with pytest.raises(DataFileError, match="limit"):
        read_header(path)
    path = raw_file(tmp_path / "short.safetensors", b"{}", length=1000)
    with pytest.raises(DataFileError, match="truncated"):
        read_header(path)
    (tmp_path / "tiny.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(DataFileError, match="truncated"):
        read_header(tmp_path / "tiny.safetensors")


def test_truncated_data_of_a_real_file(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"w": np.ones((64, 64), np.float32)})
    blob = path.read_bytes()
    path.write_bytes(blob[:-100])
    with pytest.raises(DataFileError, match="truncated"):
        list(read_safetensors(path))


def test_deeply_nested_header_is_a_clear_error(tmp_path):
    import struct

    from llm_codesign.errors import DataFileError
    from llm_codesign.quant import read_safetensors

    h = ("[" * 100000 + "]" * 100000).encode()
    p = tmp_path / "deep.safetensors"
    p.write_bytes(struct.pack("<Q", len(h)) + h)
    with pytest.raises(DataFileError, match="nested too deeply"):
        list(read_safetensors(p))
