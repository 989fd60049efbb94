"""Quantize/dequantize: hand-worked scales, edge cases, registry agreement, properties."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from format_ids import CAST_IDS, QUANT_IDS
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from llm_codesign.errors import CodesignError, SpecError, UnknownIdError
from llm_codesign.formats import FORMATS
from llm_codesign.quant import (
    dequantize,
    fake_quantize,
    quant_format_ids,
    quantize,
    resolve_format,
)


def heavy(shape, seed=0, nu=4.0):
    return np.random.default_rng(seed).standard_t(nu, size=shape).astype(np.float32)


def sqnr(x, y):
    x = x.astype(np.float64)
    error = ((x - y) ** 2).sum()
    return math.inf if error == 0 else 10 * math.log10((x**2).sum() / error)


# ------------------------------------------------------------------------- ids and registry


def test_aliases_and_unknown_id():
    assert resolve_format("w4a16").id == "int4_g128"
    assert resolve_format("fp8-channel").id == "fp8_channel"
    with pytest.raises(UnknownIdError) as err:
        quantize(np.ones((1, 16)), "fp5")
    assert "nvfp4" in str(err.value) and "w4a16" in str(err.value)
    assert isinstance(err.value, CodesignError)
    assert set(QUANT_IDS + CAST_IDS) <= set(quant_format_ids())


def test_known_bytes_per_element():
    assert FORMATS["nvfp4"].bytes_per_element == 0.5625
    assert FORMATS["mxfp4"].bytes_per_element == 0.53125
    assert FORMATS["mxfp6"].bytes_per_element == 0.78125
    assert FORMATS["mxfp8"].bytes_per_element == 1.03125
    assert FORMATS["int4_g128"].bits_per_element == 4.15625
    assert FORMATS["int4_g128_sym"].bits_per_element == 4.125
    assert FORMATS["fp8_channel"].bytes_per_element == 1.0


@pytest.mark.parametrize("fid", QUANT_IDS)
def test_stored_layout_matches_registry(fid):
    """Element bits, block size and scale bits of the numerics are the registry's."""
    fmt = FORMATS[fid]
    q = quantize(heavy((256, 256)), fid)
    assert q.codes.dtype == np.uint8 and q.codes.max() < 2**fmt.element_bits
    if fmt.block_size:
        per_group = 256 * 256 // q.scales.size
        assert per_group == fmt.block_size
        zero_bits = 4 if q.zeros is not None else 0
        assert q.scales.dtype.itemsize * 8 + zero_bits == fmt.scale_bits
    assert {
        "e8m0": "float8_e8m0fnu",
        "ue4m3": "float8_e4m3fn",
        "fp16": "float16",
        "fp32": "float32",
    }[fmt.scale_type] == q.scales.dtype.name


# ------------------------------------------------------------------------- hand-worked values


def test_nvfp4_scales_as_reference_describes():
    """s_global = 448*6/A, s_block = E4M3(a_b/6 * s_global), x / (s_block / s_global)."""
    x = np.zeros((1, 32), np.float32)
    x[0, :3] = [6.0, 3.0, -1.5]  # block 0, amax 6 = A
    x[0, 16] = 0.1  # block 1, amax 0.1
    q = quantize(x, "nvfp4")
    assert q.global_scale == np.float32(448.0)
    # block 0: E4M3(1 * 448) = 448; block 1: E4M3(0.1 / 6 * 448 = 7.4667) = 7.5
    assert q.scales.astype(np.float32).tolist() == [[448.0, 7.5]]
    d = dequantize(q)
    assert d[0, :3].tolist() == [6.0, 3.0, -1.5]
    # 0.1 / (7.5 / 448) = 5.973 -> E2M1 6 -> 6 * 7.5 / 448
    assert d[0, 16] == np.float32(6.0) * (np.float32(7.5) / np.float32(448.0))
    assert q.saturated_blocks == 0 and q.n_blocks == 2


def test_mx_scale_rounding_up_and_floor():
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = 7.0
    x[0, 1] = 0.75
    up = quantize(x, "mxfp4")  # ceil(log2(7/6)) = 1 -> scale 2: 7/2 = 3.5 ties to 4 -> 8
    assert up.scales.astype(np.float32).tolist() == [[2.0]]
    assert dequantize(up)[0, :2].tolist() == [8.0, 1.0]
    assert up.scales.view(np.uint8).tolist() == [[128]]  # E8M0 code = e + 127
    floor = quantize(x, "mxfp4", scale_rounding="floor")  # floor(log2 7) - 2 = 0 -> scale 1
    assert floor.scales.astype(np.float32).tolist() == [[1.0]]
    assert dequantize(floor)[0, :2].tolist() == [6.0, 1.0]  # 7 clips to 6
    assert floor.saturated_blocks == 1 and up.saturated_blocks == 0


def test_fp8_per_tensor_scale_and_e4m3_max():
    x = np.array([[896.0, -2.0, 1.0, 0.0]], np.float32)
    q = quantize(x, "fp8")
    assert q.scales.tolist() == [[2.0]]  # amax / 448
    assert dequantize(q).tolist() == x.tolist()
    assert dequantize(quantize(np.array([[448.0, 1.0]]), "fp8")).tolist() == [[448.0, 1.0]]


def test_int4_asymmetric_and_symmetric_small_group():
    x = np.linspace(-1.0, 2.0, 128, dtype=np.float32).reshape(1, 128)
    q = quantize(x, "int4_g128")
    scale = np.float16(3.0 / 15)
    assert q.scales.tolist() == [[scale]]
    assert q.zeros.tolist() == [[5]]  # -round(-1 / 0.2)
    assert q.codes.min() == 0 and q.codes.max() == 15
    err = np.abs(dequantize(q) - x).max()
    assert err <= float(scale) / 2 + 1e-6
    s = quantize(x, "int4_g128_sym")
    assert s.scales.tolist() == [[np.float16(2.0 / 7)]] and s.zeros is None
    assert dequantize(s)[0, -1] == pytest.approx(2.0, rel=1e-3)  # +amax is exact, no clip


def test_int8_per_channel():
    x = np.array([[127.0, -1.0, 0.5], [0.0, 0.0, 0.0]], np.float32)
    q = quantize(x, "int8")
    assert q.scales.ravel().tolist() == [1.0, 1.0]
    assert q.codes.view(np.int8).tolist() == [[127, -1, 0], [0, 0, 0]]  # 0.5 ties to even


def test_fp8_block_weight_tiles_and_activation_rows():
    x = heavy((256, 384))
    x[0, 0] = 1000.0  # one outlier only moves its own 128x128 tile's scale
    q = quantize(x, "fp8_block")
    assert q.scales.shape == (2, 3)
    assert q.scales[0, 0] == np.float32(1000.0 / 448) or q.scales[0, 0] == np.float32(
        1000.0
    ) / np.float32(448)
    assert q.scales[1, 1] < 1.0
    a = quantize(x, "fp8_block", role="activation")
    assert a.scales.shape == (256, 3)
    assert sqnr(x, dequantize(a)) > sqnr(x, dequantize(q)) - 1


# ------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("fid", QUANT_IDS)
def test_zero_block_and_zero_tensor(fid):
    x = heavy((4, 256))
    x[1] = 0.0
    d = dequantize(quantize(x, fid))
    assert np.all(d[1] == 0.0)
    assert np.all(dequantize(quantize(np.zeros((2, 256), np.float32), fid)) == 0.0)


@pytest.mark.parametrize("fid", QUANT_IDS)
def test_huge_and_tiny_amax(fid):
    for amplitude in (1e30, 1e-30):
        x = heavy((2, 256)) * np.float32(amplitude)
        q = quantize(x, fid)
        d = dequantize(q)
        assert np.all(np.isfinite(d))
        if fid.startswith("int4"):  # FP16 scales: 65504 caps the range, tiny scales flush
            assert q.saturated_blocks == q.n_blocks if amplitude > 1 else np.all(d == 0)
        else:
            assert sqnr(x, d) > 10


@pytest.mark.parametrize("fid", QUANT_IDS)
def test_nan_and_inf(fid):
    x = heavy((4, 256))
    x[0, 5] = np.nan
    x[2, 7] = np.inf
    d = dequantize(quantize(x, fid))
    assert np.isnan(d[0, 5])
    assert np.all(np.isfinite(d[1])) and np.all(np.isfinite(d[3]))  # other rows untouched
    assert d[2, 7] > 0 and not np.isnan(d[2, 7])  # +inf saturates
    assert np.all(np.isfinite(d[2]))
    q = quantize(x, fid)
    assert np.allclose(dequantize(q)[1], fake_quantize(x[1:2], fid)[0]) or fid in (
        "fp8",
        "fp8_e5m2",
        "nvfp4",
        "fp8_block",
    )  # per-tensor scales see the whole tensor


def test_subnormal_codes_in_mx_and_fp8():
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = 448.0
    x[0, 1] = 2.0**-9  # E4M3 smallest subnormal at scale 1
    x[0, 2] = 2.0**-11  # below half of it: flushes to 0
    d = dequantize(quantize(x, "mxfp8"))
    assert d[0, :3].tolist() == [448.0, 2.0**-9, 0.0]


@pytest.mark.parametrize("fid", QUANT_IDS + CAST_IDS)
def test_shapes_padding_and_dtypes(fid):
    for shape in [(7,), (3, 100), (2, 3, 40), (130, 129)]:
        x = heavy(shape)
        for arr in (x, x.astype(ml_dtypes.bfloat16), x.astype(np.float16)):
            d = dequantize(quantize(arr, fid))
            assert d.shape == shape and d.dtype == np.float32
            assert sqnr(arr.astype(np.float32), d) > 8


def test_identity_and_casts():
    x = heavy((3, 64))
    assert np.array_equal(fake_quantize(x, "fp32"), x)
    assert np.array_equal(fake_quantize(x, "bf16"), x.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_bad_inputs():
    with pytest.raises(SpecError, match="empty tensor"):
        quantize(np.zeros((0, 16)), "nvfp4")
    with pytest.raises(SpecError, match="dtype <U1"):
        quantize(np.array(["a"]), "nvfp4")
    with pytest.raises(SpecError, match="scale_rounding must be"):
        quantize(np.ones((1, 32)), "mxfp4", scale_rounding="sideways")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="role must be"):
        quantize(np.ones((1, 32)), "mxfp4", role="bias")  # type: ignore[arg-type]


# ------------------------------------------------------------------------- accuracy ordering


def test_error_falls_as_bits_rise():
    x = heavy((128, 512), seed=3)
    s = {
        f: sqnr(x, fake_quantize(x, f))
        for f in ["mxfp4", "mxfp6", "mxfp8", "int4_g128", "int8", "nvfp4", "bf16"]
    }
    assert s["mxfp4"] < s["mxfp6"] < s["mxfp8"] < s["bf16"]
    assert s["int4_g128"] < s["int8"]
    assert s["mxfp4"] < s["nvfp4"] < s["mxfp8"]
    assert 19 < s["nvfp4"] < 23 and 30 < s["mxfp8"] < 33  # 3 mantissa bits ~ 31 dB


# ------------------------------------------------------------------------- properties

BOUND = {  # max |err| <= BOUND * max |x| (per-tensor amax is the loosest block amax)
    "fp8": 1 / 16,
    "fp8_e5m2": 1 / 8,
    "fp8_channel": 1 / 16,
    "fp8_block": 1 / 16,
    "mxfp8": 1 / 16,
    "mxfp6": 1 / 14,
    "mxfp6_e3m2": 1 / 7,
    "mxfp4": 1 / 3,
    "nvfp4": 0.2,
    "int8": 1 / 250,
    "int4_g128": 1 / 14,
    "int4_g128_sym": 1 / 13,
}

finite_arrays = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=70),
    elements=st.floats(-1e4, 1e4, width=32, allow_subnormal=False),
)


@settings(max_examples=60, deadline=None)
@given(finite_arrays, st.sampled_from(QUANT_IDS))
def test_error_bounded_by_amax(x, fid):
    amax = float(np.abs(x).max())
    # INT4 formats keep an FP16 scale (AWQ/GPTQ layout): a group whose scale falls below FP16's
    # smallest subnormal (2^-24) flushes to zero, as in those checkpoints; the bound holds where
    # the scale is representable
    assume(not fid.startswith("int4") or amax == 0.0 or amax / 15.0 >= 2.0**-14)
    d = dequantize(quantize(x, fid))
    assert d.shape == x.shape
    assert float(np.abs(d - x).max()) <= BOUND[fid] * amax + 1e-30
    assert np.all((np.sign(d) == np.sign(x)) | (d == 0))


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["mxfp8", "mxfp6", "mxfp6_e3m2", "mxfp4", "fp8"]),
    st.integers(-20, 20),
    st.integers(1, 3),
    st.data(),
)
def test_representable_values_round_trip_exactly(fid, exponent, rows, data):
    """Values already on the grid, with the block max at the element max, come back exact."""
    fmt = FORMATS[fid]
    from llm_codesign.quant.elements import ELEMENTS

    element = ELEMENTS[fmt.element]
    grid = element.decode_table[: 1 << element.bits]
    grid = grid[np.isfinite(grid)]
    idx = data.draw(hnp.arrays(np.int64, (rows, 64), elements=st.integers(0, grid.size - 1)))
    x = grid[idx].astype(np.float32)
    x[:, ::32] = element.max  # every block reaches the element max
    x *= np.float32(2.0**exponent)
    assert np.array_equal(fake_quantize(x, fid), x)
    assert np.array_equal(fake_quantize(fake_quantize(x, fid), fid), x)
