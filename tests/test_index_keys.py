"""MiniMax Sparse Attention's index keys in FP8 (``+fp8-idx``: vLLM's ``indexer_kv_dtype fp8``,
scored by fmha_sm100 on SM100 alone), checked by hand: the key cache, the decode scoring, the
refusals, the launch flag and the InferenceX scripts that set it."""

from __future__ import annotations

import numpy as np
import pytest

from llm_codesign import estimate, frontier, load_model, parse_precision
from llm_codesign.errors import SpecError, UnsupportedError
from llm_codesign.mixers import cache_bytes_per_layer, indexer_of
from llm_codesign.ops import layer_group_ops, step_shape
from llm_codesign.report import launch_settings
from llm_codesign.specs.plan import ParallelPlan
from llm_codesign.specs.workload import Workload
from llm_codesign.validate import map_row

M3 = load_model("minimax-m3")


def test_the_precision_names_the_index_keys_format():
    p = parse_precision("fp8+fp8-idx")
    assert p.index_keys is not None and p.index_keys.id == "fp8"
    assert (
        p.summary()["index_keys"] == "fp8"
        and parse_precision("fp8").summary()["index_keys"] is None
    )
    assert p.kv_cache.id == "fp8" and p.weights.id == "fp8"  # (the other roles untouched)
    with pytest.raises(SpecError, match="index keys \\(idx\\) take bf16 or fp8"):
        parse_precision("fp8+nvfp4-idx")


def test_fp8_keys_are_one_byte_each_and_dsa_keeps_its_own():
    # M3's index key: 128 values, BF16 by default (256 B), FP8 E4M3 without a scale (128 B)
    assert indexer_of(M3, parse_precision("fp8")).cache_bytes_per_token == 256
    fp8 = indexer_of(M3, parse_precision("fp8+fp8-idx"))
    assert fp8.cache_bytes_per_token == 128 and fp8.math_class == "fp8"
    assert indexer_of(M3, parse_precision("fp8+bf16-idx")).cache_bytes_per_token == 256
    with pytest.raises(SpecError, match="MiniMax Sparse Attention's indexer only"):
        indexer_of(load_model("deepseek-v3.2"), parse_precision("fp8+fp8-idx"))


def test_a_sequences_cache_by_hand():
    """A sparse layer at TP8: M3's 4 KV heads leave one (replicated) a GPU, K and V of 128 FP8
    values each (256 B), plus the index key every GPU holds whole: 256 B BF16, 128 B FP8."""
    sparse = next(g for g in M3.layer_groups if g.mixer == "sparse")
    for prec, per_token in (("fp8", 256 + 256), ("fp8+fp8-idx", 256 + 128)):
        got = cache_bytes_per_layer(M3, parse_precision(prec), sparse, np.array(1000.0), 8.0)
        assert float(got) == 1000 * per_token


def test_decode_scoring_reads_half_the_keys():
    sparse = next(g for g in M3.layer_groups if g.mixer == "sparse")
    s = step_shape(8, 1, 1, 1, False, isl=8192.0, osl=1024.0, decode_seqs=64.0)

    def scoring(prec):
        ops = layer_group_ops(M3, parse_precision(prec), sparse, s, 1.0)
        return next(o for o in ops if o.name == "indexer_decode")

    bf16, fp8 = scoring("fp8"), scoring("fp8+fp8-idx")
    # the same scores; each key read costs 128 B less a token (the FP32 logits are the same)
    assert float(fp8.flops) == float(bf16.flops)
    ctx = float(np.asarray(s.decode_ctx))
    assert float(bf16.bytes) - float(fp8.bytes) == pytest.approx(64 * ctx * 128)
    assert fp8.compute_class == "fp8" and fp8.meta["index_fp8"] and not bf16.meta["index_fp8"]


def test_smaller_keys_never_slow_a_step_nor_shrink_the_batch():
    """At the same running batch a step is no slower; where the BF16 keys cap the batch (512
    clients at 8k prompts), the FP8 ones run more sequences: more tokens a second per GPU."""
    for c in (1, 64, 512):
        wl, plan = Workload(8192, 1024, c), ParallelPlan(tp=8)
        bf16 = estimate("minimax-m3", "b200", "fp8", plan, wl, engine="vllm", explain=False)
        fp8 = estimate("minimax-m3", "b200", "fp8+fp8-idx", plan, wl, engine="vllm", explain=False)
        assert fp8.max_concurrency >= bf16.max_concurrency
        assert fp8.kv_cache_per_gpu_gb <= bf16.kv_cache_per_gpu_gb
        assert fp8.output_tok_s_per_gpu >= bf16.output_tok_s_per_gpu
        if fp8.running_concurrency == bf16.running_concurrency:
            assert fp8.tpot_ms <= bf16.tpot_ms
        else:
            assert bf16.running_concurrency < fp8.running_concurrency == c


def test_only_sm100_scores_fp8_keys():
    plan, wl = ParallelPlan(tp=8), Workload(1024, 1024, 4)
    for gpu in ("b200", "b300", "gb200", "gb300"):
        assert estimate("minimax-m3", gpu, "fp8+fp8-idx", plan, wl, engine="vllm").tpot_ms > 0
    for gpu in ("h200-sxm", "mi355x"):
        with pytest.raises(UnsupportedError, match="fmha_sm100"):
            estimate("minimax-m3", gpu, "fp8+fp8-idx", plan, wl, engine="vllm")


def test_vllm_launch_asks_for_the_fp8_keys():
    fr = frontier("minimax-m3", "b200", num_gpus=8, precision="fp8+fp8-idx", engine="vllm")
    args = launch_settings(fr, int(fr.pareto[0]))["vllm_args"]
    assert "--attention-config.indexer_kv_dtype fp8" in args and "--block-size 128" in args
    fr = frontier("minimax-m3", "b200", num_gpus=8, precision="fp8", engine="vllm")
    assert "indexer_kv_dtype" not in launch_settings(fr, int(fr.pareto[0]))["vllm_args"]


def test_inferencex_scripts_that_asked_for_fp8_keys():
    """InferenceX's MiniMax-M3 FP8 B200 script passes --attention-config.indexer_kv_dtype fp8
    from its 2026-06-22 version (data/validation/inferencex_kv.csv, column idx)."""
    row = dict(
        source_id="inferencex_api_fixture", model="MiniMax-M3-MXFP8", gpu="B200", num_gpus="8",
        precision="fp8/?/?", tp="8", pp="", ep="1", dp="",
        framework="vllm (vllm/vllm-openai:minimax-m3)",
        isl="1024", osl="1024", concurrency_or_batch="4", metric="tpot_ms", value="10",
        notes="aggregated single-node; spec_method=none; run date 2026-07-01",
    )  # fmt: skip
    m = map_row(0, row)
    assert "+fp8-idx" in m.precision and "indexer_kv_dtype fp8" in m.note
    early = map_row(0, {**row, "notes": row["notes"].replace("2026-07-01", "2026-06-20")})
    assert "idx" not in early.precision
    hopper = map_row(0, {**row, "gpu": "H200"})
    assert "idx" not in hopper.precision
