"""A deployment that drafts with the model's MTP module loads it: its blocks' weights and KV
cache count in the memory fit, on the last pipeline stage (issue 11). Each draft runs one
block (DeepSeek-V3's one module k times; MiniMax-M2's three modules one a draft)."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import estimate, load_engine, load_hardware, load_model, parse_precision
from llm_codesign.api import ParallelPlan, Workload
from llm_codesign.ops import draft_layers, kv_bytes_per_sequence_per_gpu, weight_bytes_per_gpu
from llm_codesign.serving import evaluate
from llm_codesign.serving.memory import memory_fit
from llm_codesign.serving.step import draft_time

R1 = load_model("deepseek-r1")
FP8 = parse_precision("fp8+fp8_block-w")
ONE, NO = np.asarray(1), np.asarray(False)


def _weights(model, tp=1, pp=1, drafts=0):
    t, p = np.asarray(tp), np.asarray(pp)
    return float(weight_bytes_per_gpu(model, FP8, t, t, p, NO, ONE, drafts))


def test_deepseek_r1_mtp_block_by_hand():
    """DeepSeek-R1's MTP module at TP1: one MoE block (MLA attention, 256 routed experts and a
    shared one, router and norms as the model's layers) plus eh_proj (2d x d) and three norms
    in BF16. DeepSeek's model card: 685B = 671B main model + 14B MTP module, whose embedding
    and head (2 x 129,280 x 7,168 = 1.85B) are the main model's: about 12.1B of its own."""
    d, wb = R1.hidden_size, FP8.weight_bytes
    assert R1.num_mtp_layers == 1 and draft_layers(R1, 2) == 1 and draft_layers(R1, 0) == 0
    block = (R1.attention_params_per_layer + 256 * R1.expert_params + R1.shared_expert_params) * wb
    block += (R1.norm_params_per_layer + R1.router_params) * 2.0
    want = block + (2 * d * d + 3 * d) * 2.0
    got = _weights(R1, drafts=1) - _weights(R1)
    assert abs(got - want) <= 1e-9 * want
    published = 14e9 - 2 * 129_280 * 7_168
    assert abs(got - published) / published < 0.05  # (1 byte a parameter in FP8)


def test_the_block_sits_on_the_last_stage():
    """Pipeline stages split the model's layers, not the MTP block: the busiest (last) stage
    holds all of it whatever pp is."""
    for pp in (2, 4):
        extra = _weights(R1, 8, pp, 1) - _weights(R1, 8, pp)
        assert abs(extra - (_weights(R1, 8, 1, 1) - _weights(R1, 8))) < 1.0


def test_its_kv_is_one_more_layer():
    """DeepSeek-R1's 61 layers all cache one MLA latent a token: the MTP block's makes 62."""
    for pp in (1, 2):
        t, p = np.asarray(8), np.asarray(pp)
        kv = [
            float(kv_bytes_per_sequence_per_gpu(R1, FP8, np.asarray(4096.0), t, p, NO, ONE, 0, n))
            for n in (0, 1)
        ]
        assert abs(kv[1] - kv[0] * (61 / pp + 1) / (61 / pp)) < 1e-6 * kv[0]


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(["deepseek-r1", "glm-5", "qwen3.5-397b-a17b", "minimax-m2.5"]),
    gpu=st.sampled_from(["h200-sxm", "b200", "mi355x"]),
    tp=st.sampled_from([4, 8]),
    adp=st.booleans(),
    ctx=st.sampled_from([2048.0, 9216.0, 33792.0]),
)
def test_drafting_never_fits_more(model, gpu, tp, adp, ctx):
    """Loading the MTP blocks never frees memory: the sequences that fit with drafts are at most
    those without, and the weights at least as many bytes."""
    m, hw, eng = load_model(model), load_hardware(gpu), load_engine("vllm")
    prec = parse_precision("fp8")
    t, a = np.asarray(tp), np.asarray(adp)
    plain = memory_fit(m, hw, prec, eng, t, ONE, t, a, ONE, np.asarray(ctx))
    draft = memory_fit(m, hw, prec, eng, t, ONE, t, a, ONE, np.asarray(ctx), 3)
    assert float(draft[0]) > float(plain[0])
    assert float(draft[1]) > float(plain[1])
    assert float(draft[4]) <= float(plain[4])


def test_minimax_loads_three_blocks_and_runs_one_a_draft():
    """MiniMax-M2.5's config: ``num_mtp_modules`` 3 of ``mtp_transformer_layers`` 1. All three
    are loaded; a draft runs one, as DeepSeek-R1's one module does (same step, same time)."""
    mm = load_model("minimax-m2.5")
    assert mm.num_mtp_layers == 3
    eng, plain, pp = load_engine("trtllm"), np.array(0.02), np.array(1.0)
    one_block = dataclasses.replace(mm, num_mtp_layers=1)
    assert float(draft_time(mm, eng, plain, pp, 2)) == float(
        draft_time(one_block, eng, plain, pp, 2)
    )


def test_the_estimate_counts_and_says_it():
    hw = load_hardware("h200-sxm")
    plan, wl = ParallelPlan(tp=8, ep=8), Workload(isl=1024, osl=1024, concurrency=64)
    kw = dict(model="deepseek-r1", hardware=hw, precision="fp8+fp8_block-w", plan=plan)
    plain = estimate(**kw, workload=wl)
    mtp = estimate(**kw, workload=wl, spec_tokens=2, spec_acceptance=0.7)
    block = _weights(R1, 8, 1, 1) - _weights(R1, 8)
    assert abs((mtp.weights_per_gpu_gb - plain.weights_per_gpu_gb) * 1e9 - block) < 0.01e9
    assert any("MTP module (1 block" in n for n in mtp.notes)
    assert not any("MTP module" in n for n in plain.notes)
    goss = estimate(model="gpt-oss-120b", hardware=hw, workload=wl, spec_tokens=2,
                    spec_acceptance=0.6)  # fmt: skip
    assert any("no MTP module" in n and "EAGLE" in n for n in goss.notes)


def test_the_closed_loop_sees_fewer_sequences_fit():
    """A KV-bound closed loop (DeepSeek-R1 on 8 x H200, 8k/1k) holds fewer sequences with its
    MTP block loaded."""
    hw, eng = load_hardware("h200-sxm"), load_engine("trtllm")
    kw = dict(tp=8, ep=8, isl=8192, osl=1024, concurrency=4096)
    plain = evaluate(R1, hw, FP8, eng, **kw)
    mtp = evaluate(R1, hw, FP8, eng, **kw, spec_tokens=1, spec_acceptance=0.8)
    assert float(mtp.max_concurrency) < float(plain.max_concurrency)


def test_every_path_that_knows_the_drafts_fits_no_more():
    """The decode workers of a disaggregated deployment, the frontier's memory grid and the
    launch files' memory fraction see the MTP block as the closed loop does: with drafts, no
    more sequences fit, and the fraction a launch file states gives the KV cache, under each
    engine's convention, the bytes the drafting prediction gave it (less the rounding down to
    0.001 of the GPU)."""
    from llm_codesign.explore.grid import memory_limit
    from llm_codesign.explore.plans import enumerate_plans
    from llm_codesign.serving.disaggregated import decode_workers
    from llm_codesign.serving.memory import memory_fraction_for

    hw, eng = load_hardware("h200-sxm"), load_engine("trtllm")
    axes = dict(tp=np.asarray(8), pp=ONE, ep=np.asarray(8), cp=ONE, attention_dp=NO)
    kw = dict(concurrency=4096.0, isl=8192, osl=1024)
    plain = decode_workers(R1, hw, FP8, eng, **axes, **kw)
    mtp = decode_workers(R1, hw, FP8, eng, **axes, **kw, spec_tokens=2, spec_acceptance=0.7)
    assert float(mtp.running) < float(plain.running)
    plans = enumerate_plans(R1, hw, 8)
    lim0, use0, _ = memory_limit(R1, hw, FP8, eng, plans, 9216.0)
    lim1, use1, _ = memory_limit(R1, hw, FP8, eng, plans, 9216.0, 2)
    assert np.all(lim1 <= lim0) and np.any(lim1 < lim0) and np.all(use1 <= use0)
    args = (np.asarray(8), ONE, np.asarray(8), NO, ONE, np.asarray(9216.0))
    kv = float(memory_fit(R1, hw, FP8, eng, *args, 2)[3])
    assert kv < float(memory_fit(R1, hw, FP8, eng, *args)[3])
    for budget in ("free", "total", "static"):
        f = memory_fraction_for(R1, hw, FP8, eng, (8, 1, 8, False, 1), budget, 2)
        other = eng.with_overrides(memory_budget=budget, memory_utilization=f)
        got = float(memory_fit(R1, hw, FP8, other, *args, 2)[3])
        assert kv - 0.001 * hw.device_memory <= got <= kv + 1.0, budget


def test_sglang_keeps_its_draft_reserve():
    """SGLang's default memory fraction sets 2 GiB more aside when it speculates
    (``SGLANG_DRAFT_RESERVED_MIB``): for a model without an MTP module (nothing else changes)
    the KV cache loses 2 GiB a GPU, within the fraction's rounding to 0.001 of the GPU."""
    hw, eng = load_hardware("h200-sxm"), load_engine("sglang")
    goss, prec = load_model("gpt-oss-120b"), parse_precision("mxfp4-a16")
    one = (ONE, ONE, ONE, NO, ONE, np.asarray(2048.0))
    usable = [float(memory_fit(goss, hw, prec, eng, *one, k)[3]) for k in (0, 2)]
    assert abs((usable[0] - usable[1]) - 2 * 2**30) <= 0.001 * hw.device_memory


def test_the_launch_files_draft_with_mtp_where_an_engine_runs_it():
    """A launch file writes an MTP drafter where the engine runs the model's MTP module:
    DeepSeek-style ``num_nextn_predict_layers`` checkpoints everywhere, Qwen3.5 on TensorRT-LLM
    (InferenceX's MTP script), vLLM (``qwen3_5_mtp``) and SGLang, MiniMax-M2.5 nowhere (no
    engine registers its modules); the memory fit loads the blocks wherever the prediction
    drafts."""
    from llm_codesign.report.launch_data import mtp_layers

    engines = ("trtllm", "vllm", "sglang")
    want = {
        "deepseek-r1": (1, 1, 1),
        "glm-5": (1, 1, 1),
        "qwen3.5-397b-a17b": (1, 1, 1),
        "minimax-m2.5": (0, 0, 0),
        "gpt-oss-120b": (0, 0, 0),
    }
    for mid, counts in want.items():
        m = load_model(mid)
        assert tuple(mtp_layers(m, e) for e in engines) == counts, mid
        assert draft_layers(m, 1) == m.num_mtp_layers
    assert draft_layers(load_model("minimax-m2.5"), 1) == 3


def test_mixer_savings_compare_like_with_like_when_drafting():
    """Qwen3.5's savings against softmax attention everywhere: the baseline drafts too, so its
    concurrency is the softmax model's with the MTP block loaded (not the plain one's)."""
    from llm_codesign.api import _evaluate_one

    plan, wl = ParallelPlan(tp=8, ep=8), Workload(isl=8192, osl=1024, concurrency=64)
    kw = dict(model="qwen3.5-397b-a17b", hardware="h200-sxm", precision="fp8", plan=plan)
    e = estimate(**kw, workload=wl, spec_tokens=2, spec_acceptance=0.7)
    dense = load_model("qwen3.5-397b-a17b").with_softmax_attention()
    hw, eng, prec = load_hardware("h200-sxm"), e.engine, parse_precision(e.precision)
    want = _evaluate_one(dense, hw, prec, eng, plan, wl, spec_tokens=2, spec_acceptance=0.7)
    assert e.mixer_savings["baseline_max_concurrency"] == int(want.max_concurrency)
    plain = _evaluate_one(dense, hw, prec, eng, plan, wl)
    assert int(want.max_concurrency) < int(plain.max_concurrency)


def test_tensorrt_llm_drafts_qwen35_with_its_gdn_prefill_off():
    """TensorRT-LLM launches Qwen3.5's MTP module as InferenceX's qwen3.5_fp4_b200_trt_mtp.sh
    does: ``speculative_config`` MTP with the draft tokens, and the FlashInfer GDN prefill off
    (an environment line before ``trtllm-serve`` on node 0, the command unchanged)."""
    from llm_codesign.explore import frontier
    from llm_codesign.report import launch_settings

    fr = frontier("qwen3.5-397b-a17b", "h200-sxm", 8, spec_tokens=2, spec_acceptance=0.7, workers=1)
    i = next(k for k in range(len(fr.points)) if fr.points.cols["feasible"][k])
    t = launch_settings(fr, i)["trtllm"]
    spec = {"decoding_type": "MTP", "num_nextn_predict_layers": 2}
    assert t["config"]["speculative_config"] == spec
    assert t["nodes"][0] == ["export TLLM_USE_FLASHINFER_GDN_PREFILL=0", t["command"]]
    assert t["command"].startswith("trtllm-serve")  # (one node: no MPI job)


def test_an_mtp_module_of_several_blocks_is_refused():
    """MiniMax-M2's config: a draft runs one module, whose ``mtp_transformer_layers`` the model
    prices as one block; another count is refused by name, not priced wrong."""
    import json
    from pathlib import Path

    import pytest

    from llm_codesign.errors import SpecError
    from llm_codesign.specs.model_config import model_from_config

    path = Path(__file__).parents[1] / "src/llm_codesign/data/models/minimax-m2.5.json"
    cfg = json.loads(path.read_text())
    cfg = cfg.get("config", cfg)
    with pytest.raises(SpecError, match="mtp_transformer_layers"):
        model_from_config({**cfg, "mtp_transformer_layers": 2}, model_id="mm2")
    plain = {**cfg, "num_mtp_modules": 0, "mtp_transformer_layers": 2}  # (no module: no matter)
    assert model_from_config(plain, model_id="mm2").num_mtp_layers == 0
