"""DeepSeek-V4 (``deepseek_v4``): its attention, cache, precision and layer kinds, worked by hand
from the config (V4-Pro: hidden 7168, 128 heads of 512, q_lora 1536, o_groups 16 x o_lora 1024,
window 128, CSA ratio 4 with a 64 x 128 indexer choosing 1,024 entries, HCA ratio 128, mHC 4
streams) and the engines' layouts (vLLM models/deepseek_v4/, SGLang deepseek_v4_memory_pool.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.attention_kernels import sparse_fp8_cache_bytes, sparse_latent_bytes
from llm_codesign.mixers import FP8_SCALES, compressed_keys
from llm_codesign.ops import (
    kv_bytes_per_sequence_per_gpu,
    layer_group_ops,
    mtp_group,
    step_ops,
    step_shape,
)
from llm_codesign.specs.checkpoint import default_precision, kept_parts, preset_weights
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.hardware import load_hardware
from llm_codesign.specs.model import load_model
from llm_codesign.specs.precision import parse_precision
from llm_codesign.validate.conventions import map_precision

PRO = "deepseek-v4-pro"


def _groups(model_id):
    return sorted(
        (g.mixer, g.compress, g.window, g.count) for g in load_model(model_id).layer_groups
    )


def test_layer_kinds_follow_compress_ratios():
    # Pro: 128, 128, then 4 / 128 alternating over 61 layers (the 62nd entry is the MTP layer's 0)
    assert _groups(PRO) == [("compressed", 4, 128, 30), ("compressed", 128, 128, 31)]
    # Flash: two window-only layers first, then 4 / 128 alternating over 43
    assert _groups("deepseek-v4-flash") == [
        ("attention", 0, 128, 2),
        ("compressed", 4, 128, 21),
        ("compressed", 128, 128, 20),
    ]
    m = load_model(PRO)
    assert all(g.moe for g in m.layer_groups)  # every layer MoE (hash layers: same experts)
    assert (mtp_group(m).mixer, mtp_group(m).window) == ("attention", 128)


def test_attention_parameters_by_hand():
    # wq_a 7168x1536 + q_norm 1536 + wq_b 1536x(128x512) + wkv 7168x512 + kv_norm 512
    # + wo_a 16 groups of (8x512)x1024 + wo_b (16x1024)x7168 + 128 sinks
    hand = 7168 * 1536 + 1536 + 1536 * 65536 + 7168 * 512 + 512 + 65536 * 1024 + 16384 * 7168 + 128
    assert hand == 299_894_912
    assert load_model(PRO).attention_params_per_layer == hand


def test_compressed_keys_by_hand():
    m = load_model(PRO)
    csa, hca = (g for g in sorted(m.layer_groups, key=lambda g: g.compress))
    # decode at 8,192 tokens: the 128-token window + min(8192/4, 1024) or 8192/128 entries
    assert float(compressed_keys(m, csa, 8192.0, 0.0)[0]) == 128 + 1024
    assert float(compressed_keys(m, hca, 8192.0, 0.0)[0]) == 128 + 64
    # an 8,192-token prompt (mean causal context 4,096): positions uniform on [0, 8192] attend
    # on average 128 - 128^2 / (2 x 8192) = 127 window tokens and 4096 / 128 = 32 HCA entries
    assert float(compressed_keys(m, hca, 0.0, 4096.0)[1]) == pytest.approx(127 + 32)


def test_fp8_rows_in_flashmla_layout():
    b200, vllm = load_hardware("b200"), load_engine("vllm")
    # V4: 448 FP8 + 7 UE8M0 scales (one per 64) + 1 pad + 64 x 2 RoPE = 584; V3.2 unchanged
    assert sparse_fp8_cache_bytes(b200, vllm, 448, 64, FP8_SCALES["shared_kv"]) == 584
    assert sparse_fp8_cache_bytes(b200, vllm, 512, 64) == 656
    assert sparse_latent_bytes(load_model(PRO), b200, parse_precision("mxfp4-a8"), vllm) == 584


def test_cache_per_sequence_by_hand():
    m = load_model(PRO)
    prec = parse_precision("mxfp4-a8")  # FP8 KV
    # CSA: 128 raw + 2,048 entries of 584 B, 2,048 FP8 indexer keys of 132 B, FP32 states of
    # 8 slots x 2048 (64 KiB) and the indexer's 8 x 512 (16 KiB)
    csa = 128 * 584 + 2048 * (584 + 132) + 65536 + 16384
    # HCA: 128 raw + 64 entries, and 128 slots x 1024 FP32 (512 KiB)
    hca = 128 * 584 + 64 * 584 + 524288
    want = 30 * csa + 31 * hca
    assert want == 68_420_096
    got = kv_bytes_per_sequence_per_gpu(
        m, prec, np.array(8192.0), np.array(8), np.array(1), np.array(False), np.array(1),
        sparse_latent=584.0,
    )  # fmt: skip
    assert float(got) == want  # one KV head: every TP rank holds all of it


@settings(max_examples=60, deadline=None)
@given(ctx=st.floats(0, 2e6), more=st.floats(0, 1e6))
def test_keys_grow_with_context_and_csa_is_capped(ctx, more):
    m = load_model(PRO)
    for g in m.layer_groups:
        lo = float(compressed_keys(m, g, ctx, ctx)[0])
        hi = float(compressed_keys(m, g, ctx + more, ctx + more)[0])
        assert hi >= lo - 1e-9
        if g.compress == 4:
            assert hi <= 128 + 1024 + 1e-9


def test_checkpoint_precision_and_kept_parts():
    m = load_model(PRO)
    assert default_precision(m, load_hardware("b200"))[0] == "mxfp4-a8"
    assert default_precision(m, load_hardware("h200-sxm"))[0] == "mxfp4-a16+fp8-kv"
    assert kept_parts(m, parse_precision("nvfp4")) == {
        "attention": "fp8_block",
        "shared": "fp8_block",
    }
    assert kept_parts(m, parse_precision("fp8")) == {}
    assert preset_weights(m, "fp8")[0] == "fp8+fp8_block-w"
    assert kept_parts(load_model("deepseek-r1"), parse_precision("nvfp4")) == {}


def test_attention_gemms_priced_in_fp8_beside_fp4_experts():
    m, prec = load_model(PRO), parse_precision("mxfp4-a8")
    s = step_shape(8, 1, 8, 1, True, isl=1024, osl=1024, decode_seqs=64.0)
    ops = {op.name: op for op in step_ops(m, prec, s)}
    assert ops["q_b_proj"].compute_class == "fp8" and ops["q_b_proj"].w_bytes < 1.001
    assert ops["experts_up"].w_bytes == pytest.approx(0.53125)
    assert ops["compressor"].w_bytes == 2.0  # wkv / wgate unquantized (vLLM quant_config None)
    assert "hyper_connections" in ops and "indexer_decode" in ops


@pytest.mark.parametrize(
    ("gpu", "text", "want"),
    [
        ("b200", "fp4/?/?", "mxfp4-a8"),
        ("mi355x", "fp4/?/?", "mxfp4-a8"),
        # InferenceX's "fp8" runs (dsv4_fp8_h200.sh, dsv4_fp8_mi300x.sh: vLLM's --quantization
        # deepseek_v4_fp8) load the same checkpoint, its experts MXFP4 (weight-only without FP4
        # math); all-FP8 weights (1.6T parameters, 200 GB a GPU at TP8) would not fit 8 GPUs
        ("h200-sxm", "fp8/?/?", "mxfp4-a16+fp8-kv"),
        ("mi300x", "fp8/?/?", "mxfp4-a16+fp8-kv"),
        ("b200", "fp8/?/?", "mxfp4-a8"),
    ],
)
def test_published_rows_map_to_the_checkpoint(gpu, text, want):
    assert map_precision(load_model(PRO), load_hardware(gpu), text) == want


def test_the_fp8_runs_fit_the_gpus_they_ran_on():
    # the published TP8 runs on 8 x H200 (141 GB) and 8 x MI300X (192 GB): the checkpoint's
    # weights fit (InferenceX's MI300X script: "~131GB/GPU"), an all-FP8 model would not
    from llm_codesign import ParallelPlan, Workload, estimate

    wl = Workload(isl=8192, osl=1024, concurrency=16)
    for gpu in ("h200-sxm", "mi300x"):
        prec = map_precision(load_model(PRO), load_hardware(gpu), "fp8/?/?")
        e = estimate(PRO, gpu, prec, ParallelPlan(tp=8), wl, engine="vllm", explain=False)
        assert e.feasible and e.weights_per_gpu_gb < load_hardware(gpu).hbm_bytes / 1e9
        all_fp8 = estimate(PRO, gpu, "fp8", ParallelPlan(tp=8), wl, engine="vllm", explain=False)
        assert not all_fp8.feasible and all_fp8.reason == "weights_exceed_memory"


def test_softmax_baseline_attends_the_whole_context():
    base = load_model(PRO).with_softmax_attention()
    assert {(g.mixer, g.window, g.compress) for g in base.layer_groups} == {("attention", 0, 0)}


def _module_s(engine: str, gpu: str, ratio: int, batch: int, ctx: int) -> float:
    """One V4-Pro layer's attention ops at TP 8 (FP8 KV, FP8 block GEMMs), decode, each op with
    the engine's kernel overhead: what AIConfigurator's module tables time."""
    from llm_codesign.cost import op_time

    m, hw, eng = load_model(PRO), load_hardware(gpu), load_engine(engine)
    g = next(g for g in m.layer_groups if g.compress == ratio)
    s = step_shape(8, 1, 1, 1, False, isl=float(ctx), osl=1e-9, decode_seqs=float(batch))
    total = 0.0
    for op in layer_group_ops(m, parse_precision("fp8+fp8_block-w"), g, s, 1.0):
        if op.op_class == "attention":
            t = float(np.asarray(op_time(op, hw, eng, None)[0]))
            total += t + (eng.kernel_overhead_s * op.kernels if t > 0 else 0.0)
    return total


def test_module_chains_are_their_own_ops_and_no_mla_per_call_term():
    from llm_codesign.cost import op_time

    m, hw, eng = load_model(PRO), load_hardware("h200-sxm"), load_engine("vllm")
    csa = next(g for g in m.layer_groups if g.compress == 4)
    s = step_shape(8, 1, 1, 1, False, isl=1024.0, osl=1e-9, decode_seqs=1.0)
    ops = {op.name: op for op in layer_group_ops(m, parse_precision("fp8"), csa, s, 1.0)}
    t = {n: float(np.asarray(op_time(op, hw, eng, None)[0])) for n, op in ops.items()}
    assert t["compressed_chain"] == eng.compressed_overhead_s
    assert t["indexer_chain"] == eng.compressed_indexer_overhead_s
    assert t["indexer_topk"] == 0.0  # 1,024 tokens: 256 entries, within top-k (1,024)
    s = step_shape(8, 1, 1, 1, False, isl=8192.0, osl=1e-9, decode_seqs=1.0)
    far = {op.name: op for op in layer_group_ops(m, parse_precision("fp8"), csa, s, 1.0)}
    assert (
        float(np.asarray(op_time(far["indexer_topk"], hw, eng, None)[0])) == eng.compressed_topk_s
    )
    # one sequence's sparse core: far below the MLA op's 32 us per call on H200, not above it
    assert 0.0 < t["attention_decode"] < 5e-6


# AIConfigurator's measured DeepSeek-V4-Pro attention modules (ai-dynamo/aiconfigurator @095f58a,
# systems/data/b200_sxm/sparse_attention/{vllm/0.24.0,sglang/0.5.14}/dsv4_{hca,csa}_generation_
# module_perf.parquet; TP 8, batch 64, 4,096 tokens of history, FP8 KV): B200, where no constant
# was fitted for these engines (their chains come from H100 and H200)
B200_MODULES_MS = {("vllm", 128): 0.0683, ("vllm", 4): 0.1152,
                   ("sglang", 128): 0.0703, ("sglang", 4): 0.1161}  # fmt: skip


@pytest.mark.parametrize(("engine", "ratio"), sorted(B200_MODULES_MS))
def test_hopper_fitted_chains_price_blackwell_modules(engine, ratio):
    want = B200_MODULES_MS[(engine, ratio)] * 1e-3
    # (over the whole B200 tables, batch 1-64, the medians are 0.95-1.04 of measured)
    assert _module_s(engine, "b200", ratio, 64, 4096) == pytest.approx(want, rel=0.2)


def test_a_mixer_variant_keeps_the_compressed_layers():
    from llm_codesign.specs.model import gdn_like

    m = load_model("deepseek-v4-flash")
    v = m.with_mixer("linear", 0.5, "gdn", linear_attention=gdn_like(m.attention))
    kinds = sorted((g.mixer, g.compress, g.count) for g in v.layer_groups)
    assert ("compressed", 4, 21) in kinds and ("compressed", 128, 20) in kinds


def test_the_mtp_layer_weighs_a_moe_layer():
    from llm_codesign.ops import weight_bytes_per_gpu

    m, prec = load_model(PRO), parse_precision("mxfp4-a8")
    args = (np.array(8), np.array(8), np.array(1), np.array(True), np.array(1))
    extra = float(
        weight_bytes_per_gpu(m, prec, *args, drafts=1) - weight_bytes_per_gpu(m, prec, *args)
    )
    # 384 experts x 66.06M parameters x 0.53125 bytes over 8 GPUs = 1.69 GB, besides its attention
    assert 1.69e9 < extra < 2.5e9


def test_attention_tp_must_divide_the_output_groups():
    from llm_codesign.specs.plan import plan_feasibility

    flash = load_model("deepseek-v4-flash")  # o_groups 8
    got = plan_feasibility(flash, np.array([8, 16]), 1, 1, False, 1)
    assert list(got) == ["", "tp_not_dividing_o_groups"]


def test_rows_on_gpus_without_the_fp8_x_fp4_path_and_a_stated_cache():
    m = load_model(PRO)
    assert map_precision(m, load_hardware("h200-sxm"), "fp4/?/?") == "mxfp4-a16+fp8-kv"
    assert map_precision(m, load_hardware("b200"), "fp4/fp8/bf16") == "mxfp4-a8+bf16-kv"


def test_inferencex_h200_fp8_dep8_run_maps_with_its_script(tmp_path):
    # InferenceX's dsv4_fp8_h200.sh (its version of 2026-04-24): vLLM at TP 8 with attention-DP
    # (--data-parallel-size 8), --gpu-memory-utilization 0.95 and --max-num-batched-tokens 512
    # (the script table, benchmarks/inferencex_kv.py); at the engine's own 8,192 tokens a rank
    # the profiled step would leave no KV room (workspace_exceeds_memory)
    from llm_codesign.validate import validate

    table = tmp_path / "v4.csv"
    table.write_text(
        "source_id,model,gpu,num_gpus,precision,tp,pp,ep,dp,framework,isl,osl,"
        "concurrency_or_batch,metric,value,notes\n"
        "inferencex_api_fixture,DeepSeek-V4-Pro,H200,8,fp8/?/?,8,,8,attn-DP,"
        "vllm (vllm/vllm-openai:v0.25.1),8192,1024,64,tpot_ms,30,"
        "aggregated single-node; spec_method=none; run date 2026-05-01\n"
    )
    rep = validate([str(table)])
    assert len(rep.rows) == 1 and not rep.skipped, rep.skipped
    (r,) = rep.rows
    assert r["precision"] == "mxfp4-a16+fp8-kv"
    assert "0.95" in r["note"] or "950" in r["note"], r["note"]
