"""SGLang's default ``mem_fraction_static`` (``serving.memory.sglang_memory_fraction``): the
bundled sglang engine's memory fraction is SGLang's own for each plan and GPU
(``memory_utilization`` 0), hand-computed here from SGLang's rule (ServerArgs.
_handle_gpu_memory_settings: reserved MiB = 512 + 1.5 x max(chunk, 2048) + 2 x cuda_graph_max_bs +
1024 x tp x pp / 8, + 4.5 x cuda_graph_max_bs x dp under DP attention when the graphs exceed
300 sequences, at least 10 GiB on GPUs over 60 GiB, + 2 GiB with drafts)."""

import pytest

from llm_codesign import load_engine, load_hardware, load_model
from llm_codesign.errors import SpecError
from llm_codesign.serving.memory import (
    kv_budget_bytes,
    sglang_memory_fraction,
    weights_and_workspace,
)
from llm_codesign.specs.precision import parse_precision

MIB = 2**20


@pytest.mark.parametrize(
    ("gpu_mib", "tp", "adp", "chunk", "bs", "drafts", "reserved"),
    [
        (81559, 8, False, 8192, None, False, 512 + 12288 + 2 * 512 + 1024),  # H100, TP 8
        (81559, 1, False, 8192, None, False, 512 + 12288 + 2 * 256 + 128),  # H100, TP 1
        (81559, 1, False, 2048, None, False, 10240),  # the 10 GiB floor
        (143771, 8, True, 8192, None, False, 512 + 12288 + 1024 + 1024 + 512 * 8 * 4.5),
        (143771, 8, True, 8192, 128, False, 512 + 12288 + 256 + 1024 + 128 * 8 * 3),
        (183359, 8, False, 16384, None, True, 512 + 24576 + 1024 + 1024 + 2048),  # B200, MTP
        (49152, 1, False, 8192, None, False, 512 + 12288 + 2 * 32 + 128),  # 48 GiB: no floor
    ],
)
def test_the_fraction_is_sglangs_rule(gpu_mib, tp, adp, chunk, bs, drafts, reserved):
    got = sglang_memory_fraction(gpu_mib * MIB, tp, 1, adp, chunk, bs, drafts)
    assert float(got) == round((gpu_mib - reserved) / gpu_mib, 3)


def test_the_sglang_engine_takes_it_per_plan():
    """The bundled engine's budget is the rule's fraction of the GPU less the weights, and DP
    attention's CUDA-graph reserve leaves it less KV on the same GPUs."""
    hw = load_hardware("h200-sxm")
    eng = load_engine("sglang", hw)  # (SGLang's own chunk on the H200: 8,192)
    assert eng.memory_utilization == 0 and eng.max_num_tokens == 8192
    model, prec = load_model("deepseek-r1"), parse_precision("fp8")
    budgets = {}
    for adp in (False, True):
        w, o = weights_and_workspace(model, prec, hw, eng, 8, 1, 8, adp, 1)
        u = float(sglang_memory_fraction(hw.device_memory, 8, 1, adp, eng.max_num_tokens))
        fixed = eng.with_overrides(memory_utilization=u)
        budgets[adp] = float(kv_budget_bytes(hw, eng, w, o, (8, 1, adp)))
        assert budgets[adp] == pytest.approx(
            float(kv_budget_bytes(hw, fixed, w, o, (8, 1, adp))), rel=1e-12
        )
    assert budgets[True] < budgets[False]


def test_zero_needs_sglangs_static_budget():
    with pytest.raises(SpecError, match="memory_utilization=0.0 .*memory_budget static"):
        load_engine("vllm").with_overrides(memory_utilization=0.0)


def test_a_batch_sglang_cannot_hold_queues():
    """Qwen3-32B in BF16 on one H100 under SGLang with 16 clients (aic_silicon_dense.csv, six
    rows of 1,024 or 2,048 prompt and 128 to 512 output tokens): the first tokens took 6.8-89 s,
    and Little's law on each row's TTFT and TPOT leaves 2 to 5 sequences running. SGLang's own
    fraction (0.835 there) holds at most half the clients at 2,048 / 512 tokens; a flat 0.9 held
    nearly all of them."""
    from llm_codesign import Workload, estimate

    flat = load_engine("sglang").with_overrides(memory_utilization=0.9)
    kw = dict(workload=Workload(2048, 512, 16), explain=False)
    e = estimate("qwen3-32b", "h100-sxm", engine="sglang", **kw)
    e_flat = estimate("qwen3-32b", "h100-sxm", engine=flat, **kw)
    assert e.max_concurrency <= 8 < e_flat.max_concurrency


@pytest.mark.parametrize(
    ("flags", "fraction"),
    [
        ("", 0.769),  # 512 + 12288 + 1024 + 1024 + 512 x 8 x 4.5 MiB reserved
        ("--cuda-graph-max-bs 128", 0.881),  # 512 + 12288 + 256 + 1024 + 128 x 8 x 3
        ("--speculative-algorithm EAGLE --speculative-num-steps 2", 0.754),  # + 2 GiB
        ("--mem-fraction-static 0.8", 0.8),  # the line's own
    ],
)
def test_estimate_from_takes_an_sglang_lines_own_default(flags, fraction):
    """``estimate --from`` of an SGLang line without --mem-fraction-static prices SGLang's
    default for its plan with that line's CUDA-graph batch and drafts (DeepSeek-R1, DP attention
    over 8 H200s: 143,771 MiB)."""
    from llm_codesign.report.deploy_map import read_deployment

    line = (
        "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1-0528 --tp 8 "
        f"--dp 8 --enable-dp-attention --ep 8 {flags}"
    )
    dep = read_deployment([line], load_hardware("h200-sxm"), explicit={"spec_acceptance": 0.7})
    assert dep.engine_constants.memory_utilization == fraction
