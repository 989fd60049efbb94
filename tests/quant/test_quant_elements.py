"""Element casts: exact known values, and the fast table against direct ml_dtypes casts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.quant.elements import E2M1, E2M3, E3M2, E4M3, E5M2, ELEMENTS, decode, encode

ALL = list(ELEMENTS.values())


def reference(y: np.ndarray, element) -> np.ndarray:
    """Saturating cast straight through ml_dtypes."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.clip(y, -element.max, element.max).astype(element.dtype).view(np.uint8)


def test_known_maxima():
    assert E4M3.max == 448.0
    assert E5M2.max == 57344.0
    assert E2M3.max == 7.5
    assert E3M2.max == 28.0
    assert E2M1.max == 6.0
    assert (E4M3.has_nan, E5M2.has_nan, E2M1.has_nan, E2M3.has_nan) == (True, True, False, False)


def test_e2m1_grid():
    magnitudes = sorted({abs(float(v)) for v in E2M1.decode_table[:16]})
    assert magnitudes == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert len({float(v) for v in E2M1.decode_table[:16]}) == 15  # +-0 collapse


def test_e2m1_round_to_nearest_even_ties():
    ties = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.75, -5.0], np.float32)
    assert decode(encode(ties, E2M1), E2M1).tolist() == [
        0.0,
        1.0,
        1.0,
        2.0,
        2.0,
        4.0,
        4.0,
        -1.0,
        -4.0,
    ]
    above = np.nextafter(ties, np.float32(np.inf) * np.sign(ties))
    assert decode(encode(above, E2M1), E2M1).tolist() == [
        0.5,
        1.0,
        1.5,
        2.0,
        3.0,
        4.0,
        6.0,
        -1.0,
        -6.0,
    ]


def test_saturation_and_specials():
    y = np.array([448, 464, 500, 1e30, np.inf, -np.inf, np.nan], np.float32)
    assert decode(encode(y, E4M3), E4M3)[:6].tolist() == [448, 448, 448, 448, 448, -448]
    assert np.isnan(decode(encode(y, E4M3), E4M3)[6])
    assert decode(encode(y, E2M1), E2M1)[:6].tolist() == [6, 6, 6, 6, 6, -6]
    assert decode(encode(np.array([7.0, 100.0], np.float32), E5M2), E5M2).tolist() == [7, 96]


def test_e4m3_subnormals():
    tiny = 2.0**-9  # smallest E4M3 subnormal
    y = np.array([tiny, tiny / 2, tiny * 1.5, tiny * 2.5, tiny / 2 * 1.001], np.float32)
    got = decode(encode(y, E4M3), E4M3).tolist()
    assert got == [tiny, 0.0, 2 * tiny, 2 * tiny, tiny]


@pytest.mark.parametrize("element", ALL, ids=lambda e: e.name)
def test_table_matches_ml_dtypes_on_every_bf16_value(element):
    bits = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        nudged = bits * np.float32(1.0 + 2**-20)
    for y in (bits, nudged):
        got, want = encode(y, element), reference(y, element)
        nan = np.isnan(y)
        if element.has_nan:
            assert np.array_equal(got, want)
        else:
            assert np.array_equal(got[~nan], want[~nan])


@pytest.mark.parametrize("element", ALL, ids=lambda e: e.name)
def test_table_matches_ml_dtypes_on_random_bits_and_midpoints(element):
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    grid = element.decode_table[: 1 << element.bits]
    grid = np.sort(np.unique(grid[np.isfinite(grid)]))
    mids = ((grid[1:] + grid[:-1]) / 2).astype(np.float32)
    near = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    scaled = np.concatenate([raw, near, near * 0.5, near * 1.5]).astype(np.float32)
    finite = ~np.isnan(scaled)
    assert np.array_equal(encode(scaled, element)[finite], reference(scaled, element)[finite])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=64))
def test_encode_decode_is_nearest_grid_point(values):
    y = np.array(values, np.float32)
    for element in (E4M3, E2M1):
        back = decode(encode(y, element), element)
        grid = element.decode_table[: 1 << element.bits]
        grid = grid[np.isfinite(grid)]
        clipped = np.clip(y, -element.max, element.max).astype(np.float64)
        best = np.abs(clipped[:, None] - grid[None, :].astype(np.float64)).min(axis=1)
        assert np.allclose(np.abs(clipped - back), best, rtol=0, atol=0)
        assert np.array_equal(back, reference(y, element).view(element.dtype).astype(np.float32))


def test_decode_agrees_with_ml_dtypes():
    for element in ALL:
        codes = np.arange(1 << element.bits, dtype=np.uint8)
        want = codes.view(element.dtype).astype(np.float32)
        got = decode(codes, element)
        assert np.array_equal(got, want, equal_nan=True)
        assert element.dtype in (
            ml_dtypes.float8_e4m3fn,
            ml_dtypes.float8_e5m2,
            ml_dtypes.float6_e2m3fn,
            ml_dtypes.float6_e3m2fn,
            ml_dtypes.float4_e2m1fn,
        )
