"""MiniMax-M3: GQA with MiniMax Sparse Attention (a block indexer keeping the 16 best blocks of
128 tokens) in layers 3-59, dense FFNs in layers 0-2, 128 experts top-4 + 1 shared elsewhere
(docs/MODEL_FACTS.md). Shapes and cache by hand from the checkpoint's config; its
loader's forms and errors; the indexer's own kernel chain; InferenceX's runs mapped."""

from __future__ import annotations

import copy
import csv

import numpy as np
import pytest

from llm_codesign import frontier, load_hardware, load_model, parse_precision
from llm_codesign.attention_kernels import MSA_TRITON_PREFILL_SM_FLOPS, msa_prefill_rate
from llm_codesign.cost import attention_time
from llm_codesign.errors import SpecError
from llm_codesign.ops import layer_group_ops, step_shape
from llm_codesign.report import launch_settings
from llm_codesign.report.launch_data import mtp_layers
from llm_codesign.serving.step import step_cost
from llm_codesign.specs.engine import load_engine, sglang_auto_kv_fp8
from llm_codesign.specs.model import DSA_INDEXER
from llm_codesign.specs.model_config import model_from_config
from llm_codesign.validate import REQUIRED_COLUMNS, map_row, validate
from llm_codesign.validate.conventions import MTP_ACCEPTANCE_INFERENCEX

M3 = load_model("minimax-m3")
D, H, KV, HD = 6144, 64, 4, 128


def test_layers_and_indexer_from_the_config():
    dense, sparse = sorted(M3.layer_groups, key=lambda g: g.count)
    assert (dense.count, dense.moe, dense.mixer) == (3, False, "attention")
    assert (sparse.count, sparse.moe, sparse.mixer) == (57, True, "sparse")
    idx = M3.indexer
    # 16 blocks of 128 tokens (the query's own among them, no initial block): 2,048 tokens
    assert (idx.num_heads, idx.head_dim, idx.topk, idx.block) == (4, 128, 16 * 128, 128)
    assert M3.intermediate_size == 12288 and M3.moe.expert_intermediate == 3072
    assert (M3.moe.num_experts, M3.moe.top_k, M3.moe.num_shared) == (128, 4, 1)
    assert M3.num_mtp_layers == 0  # the released checkpoints hold no MTP tensors


def test_indexer_weights_and_cache_by_hand():
    # q_proj 6144 -> 4 x 128, one shared key 6144 -> 128, an RMSNorm of 128 on each; no
    # per-head weights (DSA's weights_proj 7168 -> 64)
    assert M3.indexer.params(D, 0) == D * 512 + D * 128 + 2 * 128 == 3_932_416
    assert M3.indexer.key_width == 128 and DSA_INDEXER.key_width == 128 + 64
    # its key cache is BF16 (vLLM's default indexer_kv_dtype): 256 B a token and layer; DSA's
    # FP8 keys with a scale: 132 B
    assert M3.indexer.cache_bytes_per_token == 256.0 and DSA_INDEXER.cache_bytes_per_token == 132.0
    # a token's cache: K and V of 4 heads x 128 in 60 layers + the 57 sparse layers' keys
    assert M3.kv_bytes_per_token(2.0) == 60 * 2 * KV * HD * 2 + 57 * 256 == 137_472
    assert M3.kv_bytes_per_token(1.0) == 60 * 2 * KV * HD * 1 + 57 * 256 == 76_032


def test_parameter_counts_by_hand():
    attn = D * H * HD + 2 * D * KV * HD + H * HD * D + 2 * HD  # q, k, v, o, per-head QK norms
    idx = 3_932_416
    expert = 3 * D * 3072
    moe = 128 * expert + expert + D * 128 + 128  # experts, the shared one, router + its bias
    dense = 3 * D * 12288
    layer_norms = 2 * D
    total = (
        60 * (attn + layer_norms)
        + 57 * (idx + moe)
        + 3 * dense
        + 2 * 200064 * D  # embedding and head (untied)
        + D  # final norm
    )
    assert M3.total_params == total
    assert total == pytest.approx(426.17e9, rel=1e-4)


def test_the_sparse_core_stops_growing_at_its_blocks():
    """Past 2,048 tokens a sparse layer's core reads the 16 blocks' keys, a dense layer all of
    them; the indexer's scoring still reads every key (its share grows)."""
    prec = parse_precision("fp8")
    dense, sparse = sorted(M3.layer_groups, key=lambda g: g.count)

    def op_bytes(group, ctx, name):
        s = step_shape(4, 1, 1, 1, False, isl=float(ctx), osl=1e-9, decode_seqs=8.0)
        ops = layer_group_ops(M3, prec, group, s, 1.0)
        return float(np.asarray(next(o for o in ops if o.name == name).bytes))

    assert op_bytes(sparse, 4096, "attention_decode") == op_bytes(sparse, 16384, "attention_decode")
    assert op_bytes(dense, 16384, "attention_decode") == pytest.approx(
        4 * op_bytes(dense, 4096, "attention_decode"), rel=1e-3
    )
    assert op_bytes(sparse, 16384, "indexer_decode") > 3.9 * op_bytes(
        sparse, 4096, "indexer_decode"
    )


def test_its_indexer_chain_is_the_engines_msa_constant():
    hw, eng = load_hardware("h200-sxm"), load_engine("vllm")
    assert eng.msa_indexer_overhead_s != eng.indexer_overhead_s  # (DSA's chain is another)
    s = step_shape(8, 1, 1, 1, False, isl=1024.0, osl=1e-9, decode_seqs=4.0)
    prec = parse_precision("fp8")
    base = float(np.asarray(step_cost(M3, prec, hw, eng, s).total_s))
    more = eng.with_overrides(msa_indexer_overhead_s=eng.msa_indexer_overhead_s + 1e-3)
    slower = float(np.asarray(step_cost(M3, prec, hw, more, s).total_s))
    assert slower - base == pytest.approx(57 * 1e-3, rel=1e-6)  # one chain a sparse layer


def test_the_vision_language_wrapper_reads_its_text_config():
    flat = copy.deepcopy(M3.config)
    text = {k: v for k, v in flat.items() if k not in ("architectures", "model_type")}
    text["model_type"] = "minimax_m3_vl_text"
    wrapped = {"model_type": "minimax_m3_vl", "text_config": text, "vision_config": {}}
    m = model_from_config(wrapped, model_id="m3-vl")
    assert m.layer_groups == M3.layer_groups and m.indexer == M3.indexer
    assert m.total_params == M3.total_params


def test_loader_forms_and_errors():
    cfg = copy.deepcopy(M3.config)
    off = {**cfg, "sparse_attention_config": {**cfg["sparse_attention_config"]}}
    off["sparse_attention_config"]["use_sparse_attention"] = False
    m = model_from_config(off, model_id="m3-dense")
    assert m.indexer is None and {g.mixer for g in m.layer_groups} == {"attention"}
    bad = copy.deepcopy(cfg)
    bad["sparse_attention_config"]["sparse_attention_freq"] = [1] * 59
    with pytest.raises(SpecError, match="sparse_attention_freq.*60 layers"):
        model_from_config(bad, model_id="m3-bad")
    # no moe_layer_freq list: first_k_dense_replace says which layers are dense
    first = {k: v for k, v in cfg.items() if k != "moe_layer_freq"}
    assert model_from_config(first, model_id="m3-first").layer_groups == M3.layer_groups


def test_inferencex_runs_map_with_their_draft_head(tmp_path):
    base = dict(
        source_id="inferencex_api_fixture",
        model="MiniMax-M3-NVFP4",
        gpu="B200",
        num_gpus="4",
        precision="fp4/?/?",
        tp="4",
        pp="",
        ep="1",
        dp="",
        framework="vllm (vllm/vllm-openai:nightly-93d8f834dd8acf33eb0e2a75b2711b628cb6e226)",
        isl="1024",
        osl="1024",
        concurrency_or_batch="4",
        metric="tpot_ms",
        value="10",
        notes="aggregated single-node; spec_method=mtp; run date 2026-06-01",
    )
    m = map_row(0, base)
    assert m.model == "minimax-m3" and m.precision.startswith("nvfp4")
    # no MTP module: InferenceX's EAGLE3 head, 3 drafts, its random-prompt acceptance
    assert (m.spec_tokens, m.spec_acceptance) == (3, MTP_ACCEPTANCE_INFERENCEX)
    assert "minimax-m3 has no MTP module" in m.note
    # MI355X's MXFP4 export runs MXFP4 (the GPU has no NVFP4)
    amd = map_row(0, {**base, "model": "MiniMax-M3-MXFP4", "gpu": "MI355X"})
    assert amd.precision.startswith("mxfp4")
    path = tmp_path / "m3.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(REQUIRED_COLUMNS) + ["notes"])
        w.writeheader()
        w.writerows([base])
    rep = validate([str(path)])
    assert len(rep.rows) == 1 and rep.rows[0]["predicted"] > 0


def test_launch_files_page_vllms_cache_in_its_blocks_and_load_the_nvfp4_export():
    fr = frontier("minimax-m3", "b200", num_gpus=8, precision="nvfp4", engine="vllm")
    ls = launch_settings(fr, int(fr.pareto[0]))
    assert "--block-size 128" in ls["vllm_args"]  # (vLLM's page = MSA's block)
    assert ls["checkpoint"]["id"] == "nvidia/MiniMax-M3-NVFP4"
    dsa = frontier("deepseek-v3.2", "b200", num_gpus=8, precision="nvfp4", engine="vllm")
    assert "--block-size" not in launch_settings(dsa, int(dsa.pareto[0]))["vllm_args"]


def test_prefill_core_runs_the_triton_kernels_rate_per_sm_where_it_runs():
    """vLLM's and SGLang's Triton MSA prefill compute at a rate per SM (fitted on Hopper); vLLM
    on SM100 runs its fmha_sm100 kernel at the engine's prefill share instead."""
    sparse = next(g for g in M3.layer_groups if g.mixer == "sparse")
    s = step_shape(4, 1, 1, 1, False, isl=8192.0, osl=1.0, decode_seqs=0.0,
                   prefill_tokens=8192.0, prefill_seqs=1.0, micro_batches=1.0)  # fmt: skip
    op = next(
        o
        for o in layer_group_ops(M3, parse_precision("fp8"), sparse, s, 1.0)
        if o.name == "attention_prefill"
    )
    flops = float(np.asarray(op.flops))
    assert op.meta["msa"] and op.meta["fp8_cache"]
    for gpu, engine, sms in (("h200-sxm", "vllm", 132), ("b200", "sglang", 148)):
        _, compute, _ = attention_time(op, load_hardware(gpu), load_engine(engine))
        assert float(compute) == pytest.approx(flops / (MSA_TRITON_PREFILL_SM_FLOPS[True] * sms))
    b200, vllm = load_hardware("b200"), load_engine("vllm")
    _, compute, _ = attention_time(op, b200, vllm)
    share = vllm.attn_prefill_efficiency  # (head dim 128: the whole share)
    assert float(compute) == pytest.approx(flops / (b200.peak_flops(op.compute_class) * share))


def test_review_mends_kv_format_drafts_flags_and_amd():
    # SGLang's FP8 KV default is DSA's (is_deepseek_nsa), not MSA's
    assert not sglang_auto_kv_fp8(M3, load_hardware("b200"))
    assert sglang_auto_kv_fp8(load_model("deepseek-v3.2"), load_hardware("b200"))
    # no MTP blocks, whatever the config's num_nextn_predict_layers: no MTP drafting launched
    assert M3.config["num_nextn_predict_layers"] == 1 and mtp_layers(M3, "vllm") == 0
    # AMD's Triton kernels are not measured: the engine's prefill share there
    assert msa_prefill_rate(load_hardware("mi355x"), load_engine("vllm"), True) is None
    cfg = copy.deepcopy(M3.config)
    for bad, entry in ((2, "2"), (1.0, "1.0")):
        wrong = copy.deepcopy(cfg)
        wrong["moe_layer_freq"][5] = bad
        with pytest.raises(SpecError, match=f"moe_layer_freq' entry 5 is {entry}"):
            model_from_config(wrong, model_id="m3-bad")
    no_dense_width = {k: v for k, v in cfg.items() if k != "dense_intermediate_size"}
    with pytest.raises(SpecError, match="dense_intermediate_size"):
        model_from_config(no_dense_width, model_id="m3-no-dense")


def test_a_speculating_point_launches_no_mtp_drafter_it_does_not_have():
    fr = frontier("minimax-m3", "h200-sxm", num_gpus=8, precision="fp8", engine="vllm",
                  spec_tokens=3, spec_acceptance=0.65)  # fmt: skip
    ls = launch_settings(fr, int(fr.pareto[0]))
    assert '"method": "mtp"' not in ls["vllm"] and "--speculative-algorithm" not in ls["sglang"]
    assert any("no MTP drafter for minimax-m3" in n for n in ls["notes"])
