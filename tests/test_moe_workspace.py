"""The MoE runner's buffers at the step an engine profiles before it sizes its KV cache
(``serving.memory.moe_runner_workspace``), checked against the runners' own sizing rules by hand."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import load_engine, load_hardware, load_model
from llm_codesign.routing import reach_share
from llm_codesign.serving.memory import (
    FUSED_MOE_CHUNK_TOKENS,
    kv_budget_bytes,
    moe_runner_workspace,
    weights_and_workspace,
)
from llm_codesign.specs.precision import parse_precision

R1 = load_model("deepseek-r1")  # hidden 7,168, top-8, experts 2,048 wide
FP8_BLOCK = parse_precision("fp8+fp8_block-w")


def _ws(model, prec, gpu, engine, tp, ep, tokens):
    hw = load_hardware(gpu)
    eng = load_engine(engine, hw)
    return float(moe_runner_workspace(model, prec, hw, eng, np.array(tp), np.array(ep), tokens))


def test_cutlass_runner_block_scaled_by_hand():
    # CutlassMoeFCRunner, block-scaled FP8: per expert pick the GEMM-input region holds the BF16
    # FC2 result (2 x 7,168) above the FP8 input (7,168) and FC1 result (2,048), the output
    # region the gated FC1 result in BF16 (2 x 2 x 2,048); 4 int32 maps + 1 float scale; the
    # BF16 output once a token
    per_token = 8 * (2 * 7168 + 4 * 2048 + 20) + 2 * 7168
    assert per_token == 194_720
    got = _ws(R1, FP8_BLOCK, "h200-sxm", "trtllm", 8, 8, 65_536)
    assert got == pytest.approx(65_536 * per_token, rel=1e-12)


def test_cutlass_runner_unblocked_keeps_the_fc2_result_in_the_outputs():
    # per-tensor FP8: the output region is the larger of 4I and the FC2 result 2h
    per_token = 8 * (2 * 7168 + max(4 * 2048, 2 * 7168) + 20) + 2 * 7168
    got = _ws(R1, parse_precision("fp8"), "h200-sxm", "trtllm", 8, 8, 1000)
    assert got == pytest.approx(1000 * per_token, rel=1e-12)


def test_triton_experts_by_hand_and_chunked():
    # vLLM TritonExperts: workspace1 (M, k, max(I, h)), workspace2 (M, k, max(2I, h)) in BF16
    # and the output (M, h); TP 8 slices the experts to I = 256; M at most the fused-MoE chunk
    per_token = 8 * (7168 + 7168) * 2 + 2 * 7168
    assert _ws(R1, FP8_BLOCK, "h200-sxm", "vllm", 8, 1, 8192) == pytest.approx(8192 * per_token)
    big = _ws(R1, FP8_BLOCK, "h200-sxm", "vllm", 8, 1, 10 * FUSED_MOE_CHUNK_TOKENS)
    assert big == pytest.approx(FUSED_MOE_CHUNK_TOKENS * per_token)


def test_paths_it_does_not_price_hold_nothing():
    # FlashInfer's TRTLLM-Gen MoE (SGLang and vLLM on B200) keeps its own buffers; AITER's fused
    # MoE (vLLM on MI355X) is not read
    assert _ws(R1, parse_precision("nvfp4"), "b200", "sglang", 8, 8, 8192) == 0.0
    assert _ws(R1, parse_precision("fp8"), "mi355x", "vllm", 8, 8, 8192) == 0.0


def test_dense_models_keep_their_workspace():
    m, p, hw = load_model("llama-3.1-70b"), parse_precision("fp8"), load_hardware("h200-sxm")
    eng = load_engine("trtllm", hw)
    w, o = weights_and_workspace(m, p, hw, eng, 8, 1, 1, False, 1)
    step = eng.max_num_tokens * (8 * m.hidden_size + 4 * m.intermediate_size / 8) * 2
    assert float(o) == pytest.approx(2.0e9 + step)


def test_the_all_gather_feeds_every_rank_and_an_all_to_all_its_own():
    """Under attention-DP the all-gather hands the runner every rank's step tokens; an
    all-to-all only those with an expert on the GPU, 1 - (1 - 1/ep)^k of them."""
    hw, p = load_hardware("gb200"), parse_precision("nvfp4")
    base = load_engine("trtllm", hw)
    other = {}
    for family in ("allgather_reducescatter", "nvlink_one_sided"):
        eng = base.with_overrides(moe_comm=family)
        other[family] = float(weights_and_workspace(R1, p, hw, eng, 8, 1, 8, True, 1)[1])
    per_token = float(moe_runner_workspace(R1, p, hw, base, np.array(8), np.array(8), 1.0))
    gathered = 8 * base.max_num_tokens  # every rank's step tokens
    share = float(reach_share(R1.moe.top_k, 8))
    assert 0.6 < share < 0.7  # (1 - (7/8)^8 = 0.656)
    gap = other["allgather_reducescatter"] - other["nvlink_one_sided"]
    assert gap == pytest.approx(gathered * (1.0 - share) * per_token, rel=1e-9)


def test_sglang_static_budget_ignores_the_runner():
    """SGLang's fraction is of the whole GPU and the activations live outside it: the KV cache
    it gets does not change with the MoE runner's buffers (TensorRT-LLM's does)."""
    hw, p = load_hardware("h200-sxm"), FP8_BLOCK
    kv = {}
    for name in ("sglang", "trtllm"):
        eng = load_engine(name, hw)
        w, o = weights_and_workspace(R1, p, hw, eng, 8, 1, 8, True, 1)
        more = o + 10e9
        kv[name] = (
            float(kv_budget_bytes(hw, eng, w, o, (8, 1, True))),
            float(kv_budget_bytes(hw, eng, w, more, (8, 1, True))),
        )
    assert kv["sglang"][0] == kv["sglang"][1]
    assert kv["trtllm"][1] < kv["trtllm"][0]


@settings(max_examples=40, deadline=None)
@given(
    tokens=st.sampled_from([1024, 2048, 4096, 8192, 16384]),
    adp=st.booleans(),
    gpu=st.sampled_from(["h100-sxm", "h200-sxm", "b200"]),
)
def test_kv_never_grows_with_the_token_budget(tokens, adp, gpu):
    """A larger profiled step holds more MoE buffers, so TensorRT-LLM's KV cache never grows
    with ``max_num_tokens``."""
    hw = load_hardware(gpu)
    eng = load_engine("trtllm", hw)
    p = FP8_BLOCK if gpu != "b200" else parse_precision("nvfp4")
    kvs = []
    for t in (tokens, 2 * tokens):
        e = eng.with_overrides(max_num_tokens=t)
        w, o = weights_and_workspace(R1, p, hw, e, 8, 1, 8, adp, 1)
        kvs.append(float(kv_budget_bytes(hw, e, w, o, (8, 1, adp))))
    assert kvs[1] < kvs[0]


def test_the_estimate_says_what_the_runner_holds():
    """TensorRT-LLM's DeepSeek-R1 on 8 x H200 with attention-DP: 8 x 8,192 tokens all-gathered,
    194,720 bytes each, 12.8 GB a GPU (the closed form above); SGLang's static fraction and a
    dense model get no such note."""
    from llm_codesign import ParallelPlan, Workload, estimate

    plan, wl = ParallelPlan(tp=8, ep=8, attention_dp=True), Workload(1024, 1024, 64)

    def said(model, engine, prec="fp8", p=plan):
        est = estimate(model, "h200-sxm", prec, p, wl, engine=engine, explain=False)
        return [n for n in est.notes if "MoE runner's buffers" in n]

    note = said("deepseek-r1", "trtllm")
    assert len(note) == 1 and "65,536 tokens" in note[0] and "12.8 GB" in note[0]
    assert said("deepseek-r1", "sglang") == []
    assert said("llama-3.1-70b", "trtllm", p=ParallelPlan(tp=8)) == []
