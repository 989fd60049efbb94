"""Token mixers (issue 12): each attention kind's parameters, decode/prefill FLOPs and bytes, and
KV/state bytes per sequence against hand-written closed forms (architectures.md sections 1, 2
and 9) at 8k, 128k and 1M tokens of context."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import estimate, load_engine, load_hardware, load_model
from llm_codesign.cost import attention_time
from llm_codesign.errors import SpecError
from llm_codesign.mixers import prefill_head_dim_share
from llm_codesign.ops import StepShape, kv_bytes_per_sequence_per_gpu, layer_group_ops
from llm_codesign.specs.model import bundled_models
from llm_codesign.specs.model_config import model_from_config
from llm_codesign.specs.plan import plan_feasibility
from llm_codesign.specs.precision import parse_precision

CONTEXTS = (8192, 131072, 1 << 20)


def _decode_step(ctx: float, seqs: float = 1.0, tp: int = 1) -> StepShape:
    one = np.asarray(1)
    return StepShape(
        decode_seqs=np.asarray(seqs),
        decode_ctx=np.asarray(float(ctx)),
        prefill_tokens=np.asarray(0.0),
        prefill_seqs=np.asarray(0.0),
        prefill_ctx=np.asarray(0.0),
        tp=np.asarray(tp),
        ep=one,
        pp=one,
        cp=one,
        attention_dp=np.asarray(False),
    )


def _prefill_step(tokens: float, mean_ctx: float) -> StepShape:
    one = np.asarray(1)
    return StepShape(
        decode_seqs=np.asarray(0.0),
        decode_ctx=np.asarray(0.0),
        prefill_tokens=np.asarray(float(tokens)),
        prefill_seqs=np.asarray(1.0),
        prefill_ctx=np.asarray(float(mean_ctx)),
        tp=one,
        ep=one,
        pp=one,
        cp=one,
        attention_dp=np.asarray(False),
    )


def _op(model, prec, mixer, name, step):
    g = next(g for g in model.layer_groups if g.mixer == mixer)
    ops = layer_group_ops(model, prec, g, step, np.asarray(1.0))
    return next(o for o in ops if o.name == name)


# ---- parameters ----


def test_gated_deltanet_layer_params_hand_count():
    # Qwen3-Next: d 2048, 16 key heads, 32 value heads, 128 x 128, conv 4 (architectures.md s2).
    # in_proj_qkvz + in_proj_ba: 2048 x (2*2048 + 2*4096 + 2*32); conv 8192 x 4; dt_bias and
    # A_log 2 x 32; gated norm 128; out_proj 4096 x 2048
    lin = load_model("qwen3-next-80b-a3b").linear_attention
    want = 2048 * 12352 + 8192 * 4 + 64 + 128 + 4096 * 2048
    assert lin.params(2048) == want == 33_718_464


def test_indexer_params_hand_count():
    # DeepSeek-V3.2: wq_b 1536 x (64 x 128), wk 7168 x 128 (+ LayerNorm 2 x 128), weights_proj
    # 7168 x 64 = 13.96M per layer (architectures.md s1: "about 14.0M/layer")
    m = load_model("deepseek-v3.2")
    want = 1536 * 8192 + 7168 * 128 + 256 + 7168 * 64
    assert m.indexer.params(7168, 1536) == want == 13_959_424
    assert m.total_params - load_model("deepseek-v3").total_params == 61 * want


# ---- KV / state bytes per sequence at 8k, 128k, 1M ----


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_cache_bytes_per_sequence_closed_forms(ctx):
    bf16, fp8 = parse_precision("bf16"), parse_precision("fp8")
    one = (1, 1, False, 1)

    def kv(model_id, prec):
        return float(kv_bytes_per_sequence_per_gpu(load_model(model_id), prec, ctx, *one))

    # GQA, every layer full: 32 layers x 8 KV heads x 128 x (K, V) x 2 B
    assert kv("llama-3.1-8b", bf16) == pytest.approx(32 * 8 * 128 * 2 * 2 * ctx)
    # gpt-oss-120b: 18 full + 18 sliding (window 128) layers of 8 x 64 x 2 x 2 B per token
    assert kv("gpt-oss-120b", bf16) == pytest.approx(18 * 2048 * ctx + 18 * 2048 * min(ctx, 128))
    # dense MLA: 61 layers x (512 latent + 64 rope) x KV bytes
    kvb = fp8.kv_bytes
    assert kv("deepseek-v3", fp8) == pytest.approx(61 * 576 * kvb * ctx)
    # DSA: the latent cache stays whole, plus the indexer's 128 FP8 + one FP32 scale per token
    assert kv("deepseek-v3.2", fp8) == pytest.approx(61 * (576 * kvb + 132) * ctx)
    # Gated DeltaNet hybrid (Qwen3.5): 15 full layers of 2 KV heads x 256, 45 linear layers of
    # a 64 x 128 x 128 FP32 state + a 3 x 12288 BF16 convolution window, whatever the context
    state = 64 * 128 * 128 * 4 + 3 * 12288 * 2
    assert kv("qwen3.5-397b-a17b", bf16) == pytest.approx(15 * 2 * 256 * 2 * 2 * ctx + 45 * state)


def test_linear_state_is_independent_of_context_and_split_over_tp():
    m, p = load_model("qwen3-next-80b-a3b"), parse_precision("bf16")
    lin_only = [g for g in m.layer_groups if g.mixer == "linear"]
    per = m.linear_attention.state_bytes_per_sequence()
    assert per == 32 * 128 * 128 * 2 + 3 * 8192 * 2  # BF16 state (no mamba_ssm_dtype)
    a = kv_bytes_per_sequence_per_gpu(m, p, 8192, 1, 1, False, 1)
    b = kv_bytes_per_sequence_per_gpu(m, p, 16384, 1, 1, False, 1)
    full_per_token = 12 * 2 * 256 * 2 * 2
    assert float(b - a) == pytest.approx(full_per_token * 8192)  # only the full layers grow
    assert sum(g.count for g in lin_only) == 36
    tp4 = kv_bytes_per_sequence_per_gpu(m, p, 0, 4, 1, False, 1)
    assert float(tp4) == pytest.approx(36 * per / 4)  # state heads split over tp


# ---- decode and prefill FLOPs, bytes and time ----


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_sparse_decode_counts(ctx):
    m, p = load_model("deepseek-v3.2"), parse_precision("fp8")
    step = _decode_step(ctx)
    idx = _op(m, p, "sparse", "indexer_decode", step)
    core = _op(m, p, "sparse", "attention_decode", step)
    # indexer: 64 heads x 128 dims scored against every cached key, reading 132 B per key and
    # writing one FP32 logit a key that the top-k reads back (8 B)
    assert float(idx.flops) == pytest.approx(2 * 64 * 128 * ctx)
    assert float(idx.bytes) == pytest.approx((132 + 8) * ctx)
    # MLA core in the absorbed form over the 2048 selected keys only
    k = min(ctx, 2048)
    assert float(core.flops) == pytest.approx(2 * 128 * k * (576 + 512))
    assert float(core.bytes) == pytest.approx(k * 576 * p.kv_bytes)
    dense = _op(load_model("deepseek-v3"), p, "attention", "attention_decode", step)
    assert float(dense.flops) == pytest.approx(2 * 128 * ctx * (576 + 512))


def test_sparse_prefill_switches_to_topk_beyond_it():
    m, p = load_model("deepseek-v3.2"), parse_precision("fp8")
    a = m.attention
    short = _op(m, p, "sparse", "attention_prefill", _prefill_step(1000, 500))
    # 2 x mean context 1000 <= 2048: dense MHA-form prefill (192 + 128 dims per head)
    assert float(short.flops) == pytest.approx(2 * 1000 * 500 * 128 * (a.head_dim + a.v_head_dim))
    long = _op(m, p, "sparse", "attention_prefill", _prefill_step(1000, 65536))
    # positions uniform on [0, 131072]: mean of min(p, 2048) = 2048 - 2048^2 / (2 x 131072)
    keys = 2048 - 2048 * 2048 / (2 * 131072)
    assert float(long.flops) == pytest.approx(2 * 1000 * keys * 128 * (576 + 512))
    idx = _op(m, p, "sparse", "indexer_prefill", _prefill_step(1000, 65536))
    assert float(idx.flops) == pytest.approx(1000 * 65536 * 2 * 64 * 128)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_linear_decode_counts_and_time(ctx):
    m, p = load_model("qwen3.5-397b-a17b"), parse_precision("bf16")
    hw, eng = load_hardware("h200-sxm"), load_engine("trtllm")
    op = _op(m, p, "linear", "linear_attention_decode", _decode_step(ctx, seqs=4))
    # 7 x H_v x d_k x d_v + conv 2 x 4 x conv_dim per token; state read + written once a step
    assert float(op.flops) == pytest.approx(4 * (7 * 64 * 128 * 128 + 2 * 4 * 12288))
    assert float(op.bytes) == pytest.approx(4 * 2 * (64 * 128 * 128 * 4 + 3 * 12288 * 2))
    t, _, _ = attention_time(op, hw, eng)
    peak = hw.peak_flops(hw.compute_rate_class("bf16"))
    want = max(
        float(op.flops) / (peak * eng.attn_prefill_efficiency),
        float(op.bytes) / (hw.hbm_bytes_per_s * eng.attn_decode_efficiency),
    )
    assert float(t) == pytest.approx(want)


def test_linear_prefill_is_linear_in_length():
    m, p = load_model("qwen3-next-80b-a3b"), parse_precision("bf16")
    a = _op(m, p, "linear", "linear_attention_prefill", _prefill_step(4096, 2048))
    b = _op(m, p, "linear", "linear_attention_prefill", _prefill_step(4096, 524288))
    assert float(a.flops) == float(b.flops) > 0  # no dependence on the context
    # chunkwise form, chunk 64: 4 H_v d_k d_v + 2 H_v 64 (2 d_k + d_v) + conv 2 x 4 x 8192
    per_tok = 4 * 32 * 128 * 128 + 2 * 32 * 64 * (2 * 128 + 128) + 2 * 4 * 8192
    assert float(a.flops) == pytest.approx(4096 * per_tok)


def test_gated_attention_projection_carries_the_output_gate():
    m, p = load_model("qwen3.5-397b-a17b"), parse_precision("bf16")
    qkv = _op(m, p, "attention", "qkv_proj", _decode_step(1024))
    assert float(qkv.n) == 32 * 256 * 2 + 2 * 2 * 256  # query + gate, then K and V


# ---- hybrid savings, the dense baseline, plan rules, config errors ----


def test_hybrid_and_sparse_models_save_against_softmax_attention_at_128k():
    from llm_codesign import estimate
    from llm_codesign.specs.plan import ParallelPlan
    from llm_codesign.specs.workload import Workload

    wl = Workload(131072, 1024, 8)
    e = estimate("qwen3.5-397b-a17b", "h200-sxm", "fp8", ParallelPlan(tp=8), wl, explain=False)
    s = e.mixer_savings
    assert s["kv_state_bytes_per_sequence"] < 0.3 * s["baseline_kv_state_bytes_per_sequence"]
    assert s["decode_attention_s"] < 0.5 * s["baseline_decode_attention_s"]
    assert s["max_concurrency"] > s["baseline_max_concurrency"]
    # 8 long sequences per rank: the indexer's fixed kernel chain (61 x indexer_overhead_s a
    # step) is shared by enough sequences for the sparse core's saving to show
    plan = ParallelPlan(tp=8, ep=8, attention_dp=True)
    e = estimate(
        "deepseek-v3.2", "h200-sxm", "fp8", plan, Workload(131072, 1024, 64), explain=False
    )
    s = e.mixer_savings
    assert s["decode_attention_s"] < 0.5 * s["baseline_decode_attention_s"]
    # DSA keeps the whole latent cache and adds the indexer key: memory does not fall
    assert s["kv_state_bytes_per_sequence"] > s["baseline_kv_state_bytes_per_sequence"]
    assert estimate("llama-3.1-8b", "h200-sxm", explain=False).mixer_savings is None


def test_softmax_baseline_keeps_layer_count_and_drops_the_mixers():
    m = load_model("qwen3-next-80b-a3b")
    d = m.with_softmax_attention()
    assert d.num_layers == m.num_layers and d.linear_attention is None
    assert {g.mixer for g in d.layer_groups} == {"attention"}
    assert sum(g.count for g in d.layer_groups) == 48
    assert load_model("llama-3.1-8b").with_softmax_attention() is load_model("llama-3.1-8b")


def test_tp_must_divide_linear_heads():
    # 8 query heads, 2 KV heads (replicated beyond tp 2), 2 linear key heads, 4 value heads
    m = model_from_config(_gdn_config(num_attention_heads=8, head_dim=32), model_id="tiny")
    got = plan_feasibility(m, np.array([1, 2, 4, 8]), 1, 1, False, 1).tolist()
    assert got == ["", "", "tp_not_dividing_linear_heads", "tp_not_dividing_linear_heads"]
    # attention-DP keeps every head on each rank
    assert plan_feasibility(m, 8, 1, 1, True, 1).tolist() == ""


def _gdn_config(**over):
    cfg = {
        "model_type": "qwen3_next",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 32,
        "linear_value_head_dim": 32,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 64,
        "shared_expert_intermediate_size": 64,
        "vocab_size": 1000,
    }
    cfg.update(over)
    return cfg


def test_gdn_hybrid_layout_from_interval_or_layer_types():
    m = model_from_config(_gdn_config(full_attention_interval=2), model_id="tiny")
    assert m.layer_mix() == "attention 2 + linear 2"
    types = ["linear_attention"] * 3 + ["full_attention"]
    m = model_from_config(_gdn_config(layer_types=types), model_id="tiny")
    assert m.layer_mix() == "attention 1 + linear 3"


@pytest.mark.parametrize(
    "over, field",
    [
        ({"linear_num_value_heads": None}, "linear_num_value_heads"),
        ({"layer_types": ["linear_attention"] * 3}, "layer_types"),
        ({"layer_types": ["mamba"] * 4}, "layer_types"),
        ({"mamba_ssm_dtype": "int3"}, "mamba_ssm_dtype"),
    ],
)
def test_gdn_config_errors_name_the_field(over, field):
    with pytest.raises(SpecError, match=field):
        model_from_config(_gdn_config(**over), model_id="tiny")


def test_lightning_attention_params_state_and_counts():
    """MiniMax-01 lightning attention (transformers MiniMaxLightningAttention): qkv_proj and
    output_gate from hidden, out_proj, an RMSNorm over all heads; one 128 x 128 K^T V state
    per head, no convolution; the closed form gives the report's 456B / 45.9B."""
    m = load_model("minimax-text-01")
    lin = m.linear_attention
    assert (lin.kind, lin.conv_kernel, lin.chunk) == ("lightning", 0, 256)
    assert lin.params(6144) == 6144 * 4 * 8192 + 8192 * 6144 + 8192
    assert m.layer_mix() == "attention 10 + linear 70"
    assert [g.mixer for g in m.layer_kinds()[:8]] == ["linear"] * 7 + ["attention"]
    assert lin.state_bytes_per_sequence() == 64 * 128 * 128 * 2  # BF16, no convolution window
    p = parse_precision("bf16")
    op = _op(m, p, "linear", "linear_attention_decode", _decode_step(1 << 20, seqs=2))
    assert float(op.flops) == pytest.approx(2 * 5 * 64 * 128 * 128)
    assert float(op.bytes) == pytest.approx(2 * 2 * 64 * 128 * 128 * 2)
    pre = _op(m, p, "linear", "linear_attention_prefill", _prefill_step(256, 10000))
    assert float(pre.flops) == pytest.approx(256 * (4 * 64 * 16384 + 2 * 64 * 256 * 384))


def test_minimax_layer_kinds_from_attn_type_list_or_layer_types():
    cfg = load_model("minimax-m2.5").config | {"attn_type_list": [0] + [1] * 61}
    m = model_from_config(cfg, model_id="mm")
    assert m.layer_mix() == "attention 61 + linear 1" and m.linear_attention.kind == "lightning"
    text01 = load_model("minimax-text-01").config
    types = ["linear_attention" if t == 0 else "full_attention" for t in text01["attn_type_list"]]
    cfg = {k: v for k, v in text01.items() if k != "attn_type_list"}
    m2 = model_from_config(cfg | {"model_type": "minimax", "layer_types": types}, model_id="t")
    assert m2.total_params == load_model("minimax-text-01").total_params
    with pytest.raises(SpecError, match="attn_type_list"):
        model_from_config(cfg | {"model_type": "minimax_text_01"}, model_id="t")
    with pytest.raises(SpecError, match="attn_type_list"):
        model_from_config(text01 | {"attn_type_list": [2] * 80}, model_id="t")


def test_frontier_moves_with_the_mixers_at_128k():
    """The frontier of a hybrid or sparse model at 128k/1k lies above the same model with
    softmax attention in every layer (less KV per sequence or less attention per token), by at
    least 5% in area (the margin shrinks as the engine's fixed costs per step and per
    sequence grow: they are not attention; DSA's indexer adds a fixed kernel chain per layer
    and step, ``indexer_overhead_s``, that costs more than the sparse core saves at one
    sequence per GPU)."""
    from llm_codesign import frontier

    for model_id in ("qwen3.5-397b-a17b", "deepseek-v3.2"):
        m = load_model(model_id)
        areas = [
            frontier(spec, "h200-sxm", num_gpus=8, precision="fp8", isl=131072, osl=1024).area
            for spec in (m, m.with_softmax_attention())
        ]
        assert areas[0] > 1.05 * areas[1] > 0, (model_id, areas)


@pytest.mark.parametrize("model_id", sorted(bundled_models()))
def test_every_bundled_model_has_a_frontier_that_estimate_reproduces(model_id):
    """frontier and estimate run on every bundled model (the new families included), and
    estimate prices the frontier's best aggregated point at the same TPOT."""
    from llm_codesign import estimate, frontier
    from llm_codesign.specs.plan import ParallelPlan
    from llm_codesign.specs.workload import Workload

    # FP8, or its 4-bit experts where FP8 weights pass 8 x 141 GB (DeepSeek-V4-Pro's 1.6T)
    prec = "fp8" if load_model(model_id).total_params < 1.1e12 else "mxfp4-a16+fp8-kv"
    fr = frontier(model_id, "h200-sxm", num_gpus=8, precision=prec, isl=8192, osl=1024)
    c = fr.points.cols
    ok = c["feasible"] & (c["mode"] == 0)
    assert np.any(ok), model_id
    i = int(np.argmax(np.where(ok, c["output_tok_s_per_gpu"], -1.0)))
    plan = ParallelPlan(
        int(c["tp"][i]),
        int(c["pp"][i]),
        int(c["ep"][i]),
        1,
        bool(c["attention_dp"][i]),
        int(c["cp"][i]),
    )
    wl = Workload(8192, 1024, int(c["concurrency"][i]))
    e = estimate(
        model_id, "h200-sxm", fr.precisions[int(c["precision"][i])], plan, wl, explain=False
    )
    assert e.tpot_ms == pytest.approx(c["tpot_s"][i] * 1e3, rel=1e-6)


def test_minimax_per_layer_qk_norm_all_reduces_its_variance_under_tp():
    """MiniMax-M2's QK RMSNorm spans all heads (qk_norm_type per_layer): tensor-parallel ranks
    all-reduce 2 FP32 variances per token each layer; none at tp 1 or under attention-DP."""
    m, p = load_model("minimax-m2.5"), parse_precision("fp8")
    assert m.attention.qk_norm_across_heads
    op = _op(m, p, "attention", "allreduce_qk_norm", _decode_step(4096, seqs=8, tp=4))
    assert float(op.bytes) == 8 * 2 * 4 and op.collective == "allreduce"
    assert float(_op(m, p, "attention", "allreduce_qk_norm", _decode_step(4096, 8, 1)).bytes) == 0
    assert not load_model("qwen3-235b-a22b").attention.qk_norm_across_heads  # per-head norms


def test_nemotron_h_blocks_and_mamba2_closed_forms():
    """Nemotron-H: single-purpose blocks (Mamba-2 mixer, attention mixer, squared-ReLU MLP) by
    hybrid_override_pattern; Mamba-2 parameters, state and decode counts by hand."""
    m = load_model("nemotron-h-8b")
    assert m.layer_mix() == "attention 4 + linear 24 + ffn-only 24"
    assert [g.mixer for g in m.layer_kinds()[:3]] == ["linear", "none", "linear"]
    # in_proj: z, x (8192 each), B, C (8 x 128 each), dt (128); conv over x, B, C with bias;
    # dt_bias, A_log, D; gated norm over 8192; out_proj
    mamba = 4096 * (2 * 8192 + 2 * 1024 + 128) + 10240 * 5 + 3 * 128 + 8192 + 8192 * 4096
    attention = 2 * 4096 * 4096 + 2 * 4096 * 1024
    mlp = 2 * 4096 * 21504
    want = 24 * mamba + 4 * attention + 24 * mlp + 52 * 4096 + 2 * 131072 * 4096 + 4096
    assert m.total_params == want
    p = parse_precision("bf16")
    g_m = next(g for g in m.layer_groups if g.mixer == "linear")
    ops = layer_group_ops(m, p, g_m, _decode_step(8192, seqs=2), np.asarray(1.0))
    assert not any(o.op_class == "ffn" for o in ops)  # a Mamba block has no FFN
    dec = next(o for o in ops if o.name == "linear_attention_decode")
    state = 128 * 128 * 64  # heads x d_state x head_dim
    assert float(dec.bytes) == pytest.approx(2 * 2 * (state * 2 + 3 * 10240 * 2))
    g_f = next(g for g in m.layer_groups if g.mixer == "none")
    ops = layer_group_ops(m, p, g_f, _decode_step(8192, seqs=2), np.asarray(1.0))
    assert not any(o.op_class == "attention" for o in ops)  # an MLP block has no mixer
    # KV only in the 4 attention blocks; 24 fixed Mamba states
    kv = kv_bytes_per_sequence_per_gpu(m, p, 8192, 1, 1, False, 1)
    assert float(kv) == pytest.approx(4 * 8 * 128 * 2 * 2 * 8192 + 24 * (state * 2 + 3 * 10240 * 2))


def test_nemotron_h_pattern_errors_name_the_field():
    cfg = load_model("nemotron-h-8b").config
    with pytest.raises(SpecError, match="hybrid_override_pattern"):
        model_from_config(cfg | {"hybrid_override_pattern": "M-X" * 17 + "M"}, model_id="n")
    with pytest.raises(SpecError, match="hybrid_override_pattern"):
        model_from_config(cfg | {"hybrid_override_pattern": "M-"}, model_id="n")


def test_dsa_indexer_chain_adds_its_fixed_time_per_sparse_layer():
    """The lightning indexer's kernel chain (engine ``indexer_overhead_s``) costs a fixed time
    per sparse layer of a step with tokens: GLM-5 (78 sparse layers) on one GPU's step adds
    exactly 78 x the constant, at any batch and context; a model without DSA adds nothing; a
    step without tokens launches nothing."""
    from llm_codesign.serving.step import step_cost

    hw, p = load_hardware("h200-sxm"), parse_precision("fp8")
    eng = load_engine("sglang")
    off = eng.with_overrides(indexer_overhead_s=0.0)
    on = eng.with_overrides(indexer_overhead_s=40e-6)
    m = load_model("glm-5")
    sparse_layers = sum(g.count for g in m.layer_groups if g.mixer == "sparse")
    assert sparse_layers == 78  # architectures.md section 5: 3 dense + 75 MoE, all DSA
    for seqs, ctx in ((1, 1024), (64, 8192)):
        s = _decode_step(ctx, seqs=seqs, tp=8)
        d = step_cost(m, p, hw, on, s).total_s - step_cost(m, p, hw, off, s).total_s
        assert float(d) == pytest.approx(78 * 40e-6, rel=1e-9)
    dense = load_model("deepseek-v3")
    s = _decode_step(1024, seqs=8, tp=8)
    assert float(step_cost(dense, p, hw, on, s).total_s) == float(
        step_cost(dense, p, hw, off, s).total_s
    )
    idle = _decode_step(1024, seqs=0.0, tp=8)
    ops = layer_group_ops(m, p, m.layer_groups[-1], idle, 1.0)
    chain = next(o for o in ops if o.name == "indexer_chain")
    from llm_codesign.cost import op_time

    assert float(op_time(chain, hw, on, None)[0]) == 0.0


def test_indexer_overhead_must_be_a_time():
    with pytest.raises(SpecError, match="indexer_overhead_s"):
        load_engine("sglang").with_overrides(indexer_overhead_s=-1e-6)


# ---- prefill attention by head dim (mixers.prefill_head_dim_share) ----


def test_prefill_head_dim_share_matches_flashattention_ratios():
    # FlashAttention-3 BF16 forward on H100 SXM5, head dim 64 over 128 (arXiv 2407.08608 Fig. 5):
    # 460/625 = 0.736 (2k) .. 496/646 = 0.768 (8k); FA4 on B200 at 8k: 1,079/1,418 = 0.761
    assert 0.69 <= prefill_head_dim_share(64) <= 0.78
    assert prefill_head_dim_share(128) == prefill_head_dim_share(256) == 1.0
    assert prefill_head_dim_share(32) == prefill_head_dim_share(64)  # (64's below 64)
    # linear in log2: 96 sits at log2(1.5) = 0.585 of the way from 64 to 128
    want = prefill_head_dim_share(64) + 0.585 * (1.0 - prefill_head_dim_share(64))
    assert prefill_head_dim_share(96) == pytest.approx(want, abs=1e-3)


@given(st.integers(1, 1024), st.integers(1, 1024))
@settings(max_examples=200, deadline=None)
def test_prefill_head_dim_share_is_monotone_and_bounded(a, b):
    lo, hi = sorted((a, b))
    assert 0.0 < prefill_head_dim_share(lo) <= prefill_head_dim_share(hi) <= 1.0


def test_prefill_attention_of_64_wide_heads_runs_at_their_share():
    # gpt-oss-120b (head dim 64) against the same op at head dim 128: a compute-bound prefill
    # (8k tokens over a 4k mean context) takes 1 / share as long; MLA's prefill keeps no share
    hw, eng, p = load_hardware("h200-sxm"), load_engine("trtllm"), parse_precision("bf16")
    step = _prefill_step(8192, 4096)
    op = _op(load_model("gpt-oss-120b"), p, "attention", "attention_prefill", step)
    assert op.meta == {"head_dim": 64}
    t64, c64, m64 = attention_time(op, hw, eng)
    t128, c128, _ = attention_time(replace(op, meta={"head_dim": 128}), hw, eng)
    assert float(c64) > float(m64)  # compute-bound
    assert float(t64) / float(t128) == pytest.approx(1.0 / prefill_head_dim_share(64))
    peak = hw.peak_flops(hw.compute_rate_class("bf16"))
    assert float(c128) == pytest.approx(float(op.flops) / (peak * eng.attn_prefill_efficiency))
    mla = _op(load_model("deepseek-r1"), p, "attention", "attention_prefill", step)
    assert mla.meta["head_dim"] is None and prefill_head_dim_share(None) == 1.0


def test_estimate_states_the_prefill_attention_efficiency_it_priced():
    # the assumptions show the engine's value x the head-dim share: gpt-oss (64) at 0.75 of it,
    # Llama (128) and DeepSeek-R1 (MLA) at the engine's own
    for model, share in (("gpt-oss-120b", prefill_head_dim_share(64)), ("llama-3.1-8b", 1.0)):
        e = estimate(model, "h200-sxm", engine="vllm")
        a = e.assumptions()["attention_prefill_efficiency"]
        assert a["head_dim_share"] == share
        assert a["value"] == pytest.approx(load_engine("vllm").attn_prefill_efficiency * share)
    a = estimate("deepseek-r1", "h200-sxm", engine="vllm").assumptions()
    assert a["attention_prefill_efficiency"]["head_dim_share"] == 1.0
