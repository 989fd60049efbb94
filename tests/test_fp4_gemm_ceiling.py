"""The dense FP4 GEMM ceilings of the Blackwell GPUs against AIConfigurator's measured NVFP4 GEMM
tables (ai-dynamo/aiconfigurator @095f58a, systems/data/<gpu>/gemm/<engine>/<version>/
gemm_perf.parquet; benchmarks/fp4_gemm_report.py prints the figures quoted here).

B300 and GB300 had no FP4 entry and fell back to their FP8 fraction, which priced an 8192^3
NVFP4 GEMM at 10-11 PFLOPS where the tables measure 4.3-5.2 (no kernel faster than 6.5 at any
shape): their files now carry the sibling's fraction (B200, GB200) over by the ratio the same
kernels measure on the two GPUs. The RTX PRO 6000 had fallen back to its BF16 fraction for FP8
and FP4: it now states the fastest kernel its tables measure at the reference shape."""

from __future__ import annotations

import pytest

from llm_codesign.advise.gemm import gemm_sweep
from llm_codesign.cost import _REFERENCE_SHAPE
from llm_codesign.specs.hardware import load_hardware

# (GPU, sibling, lowest and highest GPU / sibling TFLOP/s ratio at 8192^3 over the engine
# releases the tables measure on both: B300/B200 6 releases, GB300/GB200 7)
SIBLING_RATIOS = [("b300", "b200", 0.964, 1.202), ("gb300", "gb200", 0.865, 1.229)]
# the fastest NVFP4 GEMM the tables measure on each GPU at the reference shape (TFLOP/s)
FASTEST_AT_REFERENCE = {
    "b200": 4858,
    "b300": 4781,
    "gb200": 5342,
    "gb300": 5236,
    "rtx-pro-6000": 1271,
}
# the fastest NVFP4 GEMM the tables measure on each GPU, at any shape (TFLOP/s)
FASTEST_MEASURED = {"b200": 5764, "b300": 6091, "gb200": 6478, "gb300": 6467, "rtx-pro-6000": 1553}


def fp4_tflops(hw_id: str, m: float, n: float, k: float) -> float:
    """The model's TFLOP/s of one dense NVFP4 GEMM (its compute and memory terms; the GEMM
    explorer without a launch cost)."""
    dims = (int(m), int(n), int(k))
    sweep = gemm_sweep(hw_id, "nvfp4", *dims, engine="default", launch_overhead_s=0.0)
    return float(sweep.tflops[0])


@pytest.mark.parametrize(("gpu", "sibling", "lo", "hi"), SIBLING_RATIOS)
def test_fp4_ceiling_keeps_the_measured_sibling_ratio(gpu, sibling, lo, hi):
    """At the reference shape the GPU runs NVFP4 at the ratio to its sibling that the same
    kernels measure (not the 1.5x of the two datasheets' dense FP4 peaks)."""
    ratio = fp4_tflops(gpu, *_REFERENCE_SHAPE) / fp4_tflops(sibling, *_REFERENCE_SHAPE)
    assert lo <= ratio <= hi
    assert load_hardware(gpu).peak_flops("nvfp4") / load_hardware(sibling).peak_flops(
        "nvfp4"
    ) == pytest.approx(1.5)


@pytest.mark.parametrize("gpu", sorted(FASTEST_MEASURED))
def test_fp4_ceiling_not_above_the_fastest_measured_kernel(gpu):
    """No shape prices a dense NVFP4 GEMM faster than the fastest one measured on the GPU: the
    reference shape and a larger one."""
    for shape in (_REFERENCE_SHAPE, (16384.0, 16384.0, 16384.0)):
        assert fp4_tflops(gpu, *shape) <= FASTEST_MEASURED[gpu]


@pytest.mark.parametrize("gpu", sorted(FASTEST_AT_REFERENCE))
def test_fp4_reference_shape_near_the_fastest_kernel_there(gpu):
    """At the reference shape the model is within 20% above the fastest kernel the tables measure
    there: B200's fraction is cuBLASLt's 5,239 (b200.yaml), 8% above the engines' 4,858, and
    B300 and GB300 inherit that anchor through the measured ratio."""
    tf = fp4_tflops(gpu, *_REFERENCE_SHAPE)
    assert FASTEST_AT_REFERENCE[gpu] * 0.95 <= tf <= FASTEST_AT_REFERENCE[gpu] * 1.2


def test_fp4_fraction_stated_not_fallen_back():
    """Every Blackwell GPU states its own FP4 fraction, not FP8's (a fallback to FP8's priced
    B300 at 0.745 of 13.5 PF; the RTX PRO 6000 had fallen back to BF16's 0.857, where its FP4
    kernels reach 0.64-0.68), and MXFP4 takes NVFP4's (the same tensor-core rate)."""
    for gpu in FASTEST_MEASURED:
        hw = load_hardware(gpu)
        eff = hw.gemm_efficiency
        assert "nvfp4" in eff and "mxfp4" in eff
        assert eff["mxfp4"].value == eff["nvfp4"].value
        assert eff["nvfp4"].value < hw.gemm_efficiency_for("fp8").value
