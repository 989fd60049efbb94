"""The HBM streaming fit (calibrate.streaming) and the hardware files' measured efficiency.hbm."""

from __future__ import annotations

import re

import numpy as np
import pytest

from llm_codesign.calibrate.streaming import MIN_KERNELS, streaming_fit
from llm_codesign.errors import SpecError
from llm_codesign.specs.hardware import load_hardware


def test_fit_recovers_bandwidth_and_fixed_latency_by_hand():
    # 4 us + bytes / 4.0 TB/s on a 4.8 TB/s GPU: 64 MiB take 4 + 16.777 us = 20.777 us
    nbytes = np.array([32, 64, 128, 256, 512, 1024, 2048, 4096], dtype=float) * 2**20
    seconds = 4e-6 + nbytes / 4.0e12
    assert seconds[1] == pytest.approx(20.777e-6, rel=1e-4)
    fit = streaming_fit(nbytes, seconds, 4.8e12)
    assert fit.bytes_per_s == pytest.approx(4.0e12, rel=1e-9)
    assert fit.fixed_s == pytest.approx(4e-6, rel=1e-6)
    assert fit.fraction == pytest.approx(4.0 / 4.8, rel=1e-9)
    assert (fit.kernels, fit.invalid, fit.too_fast) == (8, 0, 0)


def test_kernels_faster_than_the_datasheet_are_left_out():
    nbytes = np.linspace(64, 1024, 10) * 2**20
    seconds = 3e-6 + nbytes / 3.0e12
    seconds[3] = nbytes[3] / 9.0e12  # faster than the 4.8 TB/s datasheet: a bad row
    fit = streaming_fit(nbytes, seconds, 4.8e12)
    assert (fit.too_fast, fit.invalid, fit.kernels) == (1, 0, 9)
    assert fit.bytes_per_s == pytest.approx(3.0e12, rel=1e-9)


def test_rows_without_a_finite_positive_size_or_time_are_counted_apart():
    nbytes = np.linspace(64, 1024, 12) * 2**20
    seconds = 3e-6 + nbytes / 3.0e12
    seconds[0], seconds[1], nbytes[2] = np.nan, -1.0, np.inf
    fit = streaming_fit(nbytes, seconds, 4.8e12)
    assert (fit.invalid, fit.too_fast, fit.kernels, fit.dropped) == (3, 0, 9, 3)
    assert fit.bytes_per_s == pytest.approx(3.0e12, rel=1e-9)


SIZES = np.linspace(1e8, 1e9, 10)


@pytest.mark.parametrize(
    ("nbytes", "seconds", "peak", "needle"),
    [
        ([1e8] * 3, [1e-4] * 3, 4.8e12, f"at least {MIN_KERNELS} kernels, got 3"),
        # three NaN times leave 7: the message names why rows were left out
        (SIZES, [np.nan] * 3 + [1e-3] * 7, 4.8e12, re.escape("got 7 (3 with a non-finite")),
        # 64 and 65 MiB: the slope would be the noise of near-equal sizes
        (np.r_[[64 * 2**20] * 5, [65 * 2**20] * 5], [2e-5] * 10, 4.8e12, "at least 2x apart"),
        (SIZES, np.linspace(1e-3, 4e-4, 10), 4.8e12, "do not grow"),
        # 10 us + bytes / 5 TB/s: every kernel is under the 4.8 TB/s line, the slope is above it
        (SIZES, 1e-5 + SIZES / 5e12, 4.8e12, "exceeds the datasheet"),
        (SIZES, SIZES / 3e12, float("inf"), "positive finite"),
        (SIZES, SIZES / 3e12, 0.0, "positive finite"),
        ([1e8, 2e8], [1e-4], 4.8e12, "same length"),
    ],
)
def test_fit_refuses_what_it_cannot_fit(nbytes, seconds, peak, needle):
    with pytest.raises(SpecError, match=needle):
        streaming_fit(nbytes, seconds, peak)


# GPUs with AIConfigurator GEMM tables (benchmarks/hbm_fraction_report.py), and the sibling each
# GPU without one takes (the same die and memory type)
MEASURED = (
    "a100-sxm-80gb",
    "b200",
    "b300",
    "gb200",
    "gb300",
    "h100-sxm",
    "h200-sxm",
    "l40s",
    "rtx-pro-6000",
)
SIBLINGS = {"gh200": "h100-sxm", "h800-sxm": "h100-sxm", "h20": "h100-sxm"}


@pytest.mark.parametrize("gpu", MEASURED)
def test_measured_streaming_fractions_are_plausible_and_sourced(gpu):
    # every table's fit lies in 0.78-0.91 of the datasheet: a streaming kernel reaches neither
    # the datasheet nor less than about three quarters of it on these GPUs
    hbm = load_hardware(gpu).hbm_efficiency
    assert 0.75 <= hbm.value <= 0.92
    assert "hbm_fraction_report" in hbm.source and "@095f58a" in hbm.source


@pytest.mark.parametrize("gpu", sorted(SIBLINGS))
def test_gpus_without_a_table_take_their_siblings_fraction(gpu):
    hbm = load_hardware(gpu).hbm_efficiency
    assert hbm.value == load_hardware(SIBLINGS[gpu]).hbm_efficiency.value
    assert "from sibling H100 SXM" in hbm.source
