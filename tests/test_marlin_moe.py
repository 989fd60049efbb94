"""The marlin path for 4-bit integer weight-only experts (issue 11): which engines run it, its
rate per SM, and whole MoE layers against AIConfigurator's measured Marlin modules on Hopper
(where the rate was fitted) and on Blackwell (where it is checked)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from llm_codesign import load_engine, load_hardware
from llm_codesign.errors import SpecError
from llm_codesign.formats import int4_weight_only
from llm_codesign.moe_kernels import (
    MARLIN_SM_FLOPS,
    MARLIN_TOKEN_TILES,
    grouped_efficiency,
    grouped_share,
    grouped_token_tiles,
    marlin_flops,
    marlin_rows,
    marlin_share,
    moe_kernel_path,
)
from llm_codesign.validate.moe_layer import moe_layer_time

KIMI = "int4_g32_sym"  # Kimi-K2.5's INT4 experts
KIMI_PRECISION = "w4a16+int4_g32_sym-w"
# Kimi-K2.5's routed experts: hidden 7,168, expert width 2,048, 384 experts, top-8
SHAPE = (384, 384, 8, 7168, 2048)


def test_int4_weight_only_formats():
    """The 4-bit integer weight-only formats (element int4, BF16 math) and no other."""
    assert all(int4_weight_only(f) for f in ("int4_g32_sym", "int4_g128", "int4_g128_sym"))
    assert not any(int4_weight_only(f) for f in ("mxfp4", "nvfp4", "fp8", "fp8_block", "bf16"))
    assert not int4_weight_only("") and not int4_weight_only("no_such_format")


def test_engines_run_int4_experts_on_their_own_paths():
    """vLLM runs Marlin on every NVIDIA GPU; SGLang TRTLLM-Gen's MxInt4 MoE on SM100/SM103 and
    Marlin elsewhere; TensorRT-LLM keeps its runner; AMD GPUs keep the engine's path; other
    formats, and a call without the weights, keep the engine's path."""
    vllm, sglang, trt = load_engine("vllm"), load_engine("sglang"), load_engine("trtllm")
    h200, b200, mi355x = (load_hardware(g) for g in ("h200-sxm", "b200", "mi355x"))
    assert moe_kernel_path(h200, vllm, KIMI) == moe_kernel_path(b200, vllm, KIMI) == "marlin"
    assert moe_kernel_path(load_hardware("gb300"), vllm, "int4_g128") == "marlin"
    assert moe_kernel_path(h200, sglang, KIMI) == "marlin"
    assert moe_kernel_path(b200, sglang, KIMI) == "trtllm_gen"
    assert moe_kernel_path(h200, trt, KIMI) == moe_kernel_path(b200, trt, KIMI) == "cutlass"
    assert moe_kernel_path(mi355x, vllm, KIMI) == moe_kernel_path(mi355x, vllm) == "triton"
    assert moe_kernel_path(b200, vllm, "nvfp4") == moe_kernel_path(b200, vllm) == "trtllm_gen"
    assert moe_kernel_path(h200, vllm, "fp8_block") == "triton"
    assert moe_kernel_path(load_hardware("b200"), load_engine("generic"), KIMI) == "trtllm_gen"


def test_an_unknown_int4_path_is_refused(tmp_path):
    with pytest.raises(SpecError, match="moe_kernels_int4='fast' is not a known INT4 MoE"):
        load_engine("vllm").with_overrides(moe_kernels_int4="fast")
    p = tmp_path / "eng.yaml"
    p.write_text(yaml.safe_dump({"id": "bad", "moe_kernels_int4": "machete"}))
    with pytest.raises(SpecError, match="allowed: same, marlin, trtllm_gen"):
        load_engine(str(p))


def test_marlin_rate_is_per_sm():
    """Marlin's rate is MARLIN_SM_FLOPS per SM by hand (H200 132 SMs, B200 148), not a share of
    the BF16 peak (B200's is 2.3x H200's); the share the estimate reports is that rate over the
    dense ceiling, and the path's token tiles are Marlin's 8-64 rows."""
    vllm = load_engine("vllm")
    h200, b200 = load_hardware("h200-sxm"), load_hardware("b200")
    assert marlin_flops(h200, vllm, KIMI) == pytest.approx(MARLIN_SM_FLOPS * 132)
    assert marlin_flops(b200, vllm, KIMI) == pytest.approx(MARLIN_SM_FLOPS * 148)
    assert marlin_flops(h200, vllm, "fp8_block") is None
    assert marlin_flops(h200, load_engine("trtllm"), KIMI) is None
    assert grouped_share(b200, vllm, "bf16", KIMI).value == 1.0
    share_h, share_b = (grouped_efficiency(g, vllm, "bf16", KIMI).value for g in (h200, b200))
    assert 0.0 < share_b < share_h < 1.0  # the same SMs' rate is a smaller share of Blackwell
    assert grouped_token_tiles(h200, vllm, KIMI) == MARLIN_TOKEN_TILES == (8, 16, 32, 48, 64)


def test_marlin_rows_and_share_by_hand():
    """vLLM's tile rule by hand (the first of 8-64 rows filled under 0.9, else 64): 7 rows -> 8,
    8 -> 16, 12 -> 16, 40 -> 48, 85 -> two tiles of 64, 341 -> six; the share is the rate over
    the ceiling on the rows computed, and no rows set no bound (no 0 / 0)."""
    assert list(marlin_rows([7, 8, 12, 40, 85, 341])) == [8, 16, 16, 48, 128, 384]
    h200, vllm = load_hardware("h200-sxm"), load_engine("vllm")
    s = marlin_share(h200, vllm, KIMI, np.array([0.0, 341.0]), 7.9e14)
    assert s[0] == 1.0 and s[1] == pytest.approx(MARLIN_SM_FLOPS * 132 / 7.9e14 * 341 / 384)
    assert marlin_share(h200, vllm, "fp8_block", 341.0, 7.9e14) is None


@pytest.mark.parametrize("gpu", ["h200-sxm", "b200", "gb300"])
def test_compute_bound_marlin_layer_sits_on_its_rate(gpu):
    """At 16,384 tokens (every expert fed 341 rows) the layer is compute-bound: its time is at
    least its routed FLOPs at Marlin's rate, 3 GEMMs of 7,168 x 2,048 per pair (by hand:
    16,384 x 8 x 2 x 3 x 7,168 x 2,048 = 11.5 TFLOP), and within 30% of it."""
    hw = load_hardware(gpu)
    t, _ = moe_layer_time(hw, load_engine("vllm"), KIMI_PRECISION, 16384, *SHAPE)
    flops = 16384 * 8 * 2 * 3 * 7168 * 2048
    floor = flops / (MARLIN_SM_FLOPS * hw.sm_count)
    assert floor <= t <= 1.3 * floor


def test_marlin_time_grows_with_tokens():
    """More tokens never make the layer faster (1 .. 16,384 tokens, H200 and B200)."""
    for gpu in ("h200-sxm", "b200"):
        ts = [
            moe_layer_time(gpu, load_engine("vllm"), KIMI_PRECISION, n, *SHAPE)[0]
            for n in (1, 4, 16, 64, 256, 1024, 4096, 16384)
        ]
        assert np.all(np.diff(ts) >= 0)


# AIConfigurator's measured vLLM 0.24.0 Marlin MoE modules of Kimi-K2.5's shape, experts all
# local, balanced routing (ai-dynamo/aiconfigurator @095f58a, aic-core/src/aiconfigurator_core/
# systems/data/{h200_sxm,b200_sxm}/moe/vllm/0.24.0/moe_perf.parquet, kernel_source
# vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts, latency in ms): the rate per SM was
# fitted on the Hopper tables (benchmarks/marlin_moe_report.py --scan), B200's is the check
MEASURED_MS = {
    ("h200-sxm", 4096): 15.359,
    ("h200-sxm", 16384): 46.736,
    ("b200", 4096): 14.23,
    ("b200", 16384): 43.04,
}


@pytest.mark.parametrize(("gpu", "tokens"), sorted(MEASURED_MS))
def test_marlin_layer_against_measured_modules(gpu, tokens):
    """Within 15% of the measured module (H200 fitted, B200 predicted from Hopper's rate per
    SM); before the marlin path, vLLM's INT4 experts priced 41-74% fast at these sizes."""
    t, _ = moe_layer_time(gpu, load_engine("vllm"), KIMI_PRECISION, tokens, *SHAPE)
    assert t * 1e3 == pytest.approx(MEASURED_MS[(gpu, tokens)], rel=0.15)
