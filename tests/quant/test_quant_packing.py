"""Packed sizes equal the registry's bytes per element; layouts round-trip; AWQ int32 order."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from format_ids import CAST_IDS, QUANT_IDS
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.errors import DataFileError, SpecError
from llm_codesign.formats import FORMATS
from llm_codesign.quant import (
    dequantize,
    from_awq,
    pack,
    packed_nbytes,
    quantize,
    to_awq,
    unpack,
)
from llm_codesign.quant.packing import AWQ_ORDER

IDS = CAST_IDS + QUANT_IDS
TENSOR_SCALE_BYTES = {"fp8": 4, "fp8_e5m2": 4, "nvfp4": 4}


def test_nvfp4_is_0_5625_bytes_per_element_plus_fp32():
    assert packed_nbytes((4096, 4096), "nvfp4") == 4096 * 4096 * 9 // 16 + 4
    q = quantize(np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32), "nvfp4")
    assert len(pack(q)) == 64 * 128 * 0.5625 + 4


@pytest.mark.parametrize("fid", IDS)
def test_size_law_on_block_aligned_weights(fid):
    """len(pack) == ceil(numel * bytes_per_element) + the per-tensor / per-channel scale."""
    rows, cols = 256, 512
    q = quantize(np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32), fid)
    extra = TENSOR_SCALE_BYTES.get(fid, 0) + (4 * rows if fid in ("int8", "fp8_channel") else 0)
    fmt = FORMATS[fid]
    bits = Fraction(fmt.element_bits) + (
        Fraction(fmt.scale_bits, fmt.block_size) if fmt.block_size else 0
    )
    expected = math.ceil(rows * cols * bits / 8) + extra
    assert len(pack(q)) == packed_nbytes((rows, cols), fid) == expected
    assert expected == math.ceil(rows * cols * fmt.bytes_per_element) + extra


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(IDS),
    st.lists(st.integers(1, 40), min_size=1, max_size=3),
    st.sampled_from(["weight", "activation"]),
)
def test_pack_unpack_round_trip_any_shape(fid, shape, role):
    shape = tuple(shape)
    x = np.random.default_rng(len(shape)).standard_t(3, size=shape).astype(np.float32)
    q = quantize(x, fid, role=role)
    blob = pack(q)
    assert len(blob) == packed_nbytes(shape, fid, role=role)
    back = unpack(blob, shape, fid, role=role)
    assert np.array_equal(back.codes, q.codes)
    assert np.array_equal(dequantize(back), dequantize(q), equal_nan=True)


def test_nibble_order_low_first():
    x = np.zeros((1, 32), np.float32)
    x[0, 0], x[0, 1] = 0.5, 6.0  # E2M1 codes 1 and 7 (block amax 6 -> scale 1)
    assert pack(quantize(x, "mxfp4"))[0] == 0x71


def test_fp8_block_activation_size():
    assert packed_nbytes((3, 256), "fp8_block", role="activation") == 3 * 256 + 4 * 3 * 2
    assert packed_nbytes((256, 256), "fp8_block") == 256 * 256 + 4 * 4


def test_unpack_rejects_wrong_length():
    with pytest.raises(
        DataFileError, match="needs 68 bytes, got 10"
    ):  # 4 x 32 / 2 bytes of codes + 4 block scales
        unpack(b"\x00" * 10, (4, 32), "mxfp4")


def test_awq_layout_round_trip_and_order():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 256)).astype(np.float32)  # [out, in]
    q = quantize(w, "w4a16")
    awq = to_awq(q)
    assert awq["qweight"].dtype == np.int32 and awq["qweight"].shape == (256, 2)
    assert awq["qzeros"].shape == (2, 2) and awq["scales"].shape == (2, 16)
    assert awq["scales"].dtype == np.float16
    word = int(awq["qweight"].view(np.uint32)[0, 0])
    nibbles = [(word >> (4 * i)) & 0xF for i in range(8)]
    assert nibbles == [int(q.codes[AWQ_ORDER[i], 0]) for i in range(8)]
    back = from_awq(awq["qweight"], awq["qzeros"], awq["scales"])
    assert np.array_equal(dequantize(back), dequantize(q))
    sym = quantize(w, "int4_g128_sym")
    s_awq = to_awq(sym)
    assert np.all(s_awq["qzeros"].view(np.uint32) == 0x88888888)
    back_sym = from_awq(s_awq["qweight"], s_awq["qzeros"], s_awq["scales"], symmetric=True)
    assert np.array_equal(dequantize(back_sym), dequantize(sym))


def test_awq_layout_rejects_bad_shapes():
    with pytest.raises(SpecError, match=r"in % 128 == 0 .*got shape \(16, 100\)"):
        to_awq(quantize(np.ones((16, 100), np.float32), "w4a16"))
    with pytest.raises(SpecError, match="needs an int4_g128 tensor, got nvfp4"):
        to_awq(quantize(np.ones((16, 128), np.float32), "nvfp4"))
