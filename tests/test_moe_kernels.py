"""The MoE kernels around the grouped GEMMs (issue 11): the bytes the permute and finalize stream
per kernel path, the path an engine runs, and whole fused-MoE layers against published timings
(``data/validation/moe_layer.csv``)."""

from __future__ import annotations

import csv
import functools
import statistics

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.cost import hbm_bytes_per_s_achieved, moe_permute_time, op_time
from llm_codesign.errors import SpecError
from llm_codesign.moe_kernels import (
    CUTLASS_FP4_LAYER_S,
    TRTLLM_GEN_FP8_BLOCK,
    TRTLLM_GEN_IDLE_CTA_S,
    TRTLLM_GEN_LAYER_S,
    TRTLLM_GEN_W4A16,
    fuses_activation,
    grouped_block_efficiency,
    grouped_efficiency,
    grouped_share,
    moe_kernel_path,
    takes_weight_only_path,
    trtllm_gen_idle_ctas,
    trtllm_gen_idle_time,
    weight_only_path,
    weight_only_tiles,
)
from llm_codesign.ops import MOE_LAYER_OPS, layer_group_ops, step_shape
from llm_codesign.validate import bundled_data, validate
from llm_codesign.validate.moe_layer import moe_layer_time

BASE = load_engine("base")


@functools.cache
def _layer_table() -> tuple[list[dict[str, str]], list[dict]]:
    """The kernel table's rows and their validation records (priced once per test session)."""
    path = bundled_data("moe_layer.csv")
    return list(csv.DictReader(path.open(encoding="utf-8"))), validate(path).rows


def _layer_errors(dtype: str, keep=lambda row: True) -> list[float]:
    """The relative errors of the kernel table's ``dtype`` rows that ``keep`` accepts."""
    raw, records = _layer_table()
    return [r["error"] for r in records if raw[r["row"]]["dtype"] == dtype and keep(raw[r["row"]])]


def _permute_op(model: str, prec: str, tokens: float, tp: int = 1, ep: int = 1):
    m = load_model(model)
    g = next(g for g in m.layer_groups if g.moe)
    s = step_shape(tp, 1, ep, 1, False, isl=tokens, osl=1, prefill_tokens=tokens)
    ops = layer_group_ops(m, parse_precision(prec), g, s, 1.0)
    return m, next(op for op in ops if op.name == "moe_permute")


def test_permute_bytes_by_path_by_hand():
    """Qwen3-30B-A3B (d 2048, top-8 of 128), 1,000 tokens, FP8 activations, one GPU: the
    cutlass path streams 2 T d (read the tokens) + 1 P d (one FP8 copy per pair); the triton path
    quantizes the tokens (2 + 1) T d and sums the pairs (2 P d read, 2 T d written)."""
    m, op = _permute_op("qwen3-30b-a3b", "fp8", 1000.0)
    hw = load_hardware("h100-sxm")
    bw = hbm_bytes_per_s_achieved(hw, BASE)
    t_d, p_d = 1000.0 * 2048, 8000.0 * 2048
    cutlass = BASE.with_overrides(moe_kernels="cutlass")
    triton = BASE.with_overrides(moe_kernels="triton")
    assert float(moe_permute_time(op, hw, cutlass)) == pytest.approx((2 * t_d + p_d) / bw)
    assert float(moe_permute_time(op, hw, triton)) == pytest.approx(
        (3 * t_d + 2 * p_d + 2 * t_d) / bw
    )
    # BF16 activations: no quantization pass on the triton path, a BF16 copy on the cutlass one
    _, op16 = _permute_op("qwen3-30b-a3b", "bf16", 1000.0)
    assert float(moe_permute_time(op16, hw, triton)) == pytest.approx((2 * p_d + 2 * t_d) / bw)
    assert float(moe_permute_time(op16, hw, cutlass)) == pytest.approx((2 * t_d + 2 * p_d) / bw)


def test_permute_pairs_follow_expert_parallelism():
    """Under EP 8 each GPU streams the pairs of its own experts: top-8 of 128 over 8 ranks is one
    pair per token on average."""
    _, op = _permute_op("qwen3-30b-a3b", "fp8", 4096.0, tp=8, ep=8)
    mp = op.meta["moe_permute"]
    assert float(mp["tokens"]) == 4096.0 and float(mp["pairs"]) == pytest.approx(4096.0)


def test_triton_path_zero_fills_the_pairs_of_other_ranks_by_hand():
    """vLLM's fused_moe under expert parallelism without a token dispatch (every rank holds every
    token): the blocks of pairs routed to another rank's experts write zeros to GEMM1's and
    GEMM2's outputs, and the activation and moe_sum run over every pair (vllm-project/vllm
    fused_moe.py ``fused_moe_kernel``: ``off_experts == -1`` -> ``write_zeros_to_output``).
    Qwen3-30B-A3B (d 2048, expert width 768, gated, top-8 of 128), BF16, TP8 EP8, 4,096 tokens:
    32,768 pairs, 4,096 of them local, 28,672 zero-filled at 2 x (2 x 1,536 + 768 + 2 x 2,048)
    bytes each."""
    _, op = _permute_op("qwen3-30b-a3b", "bf16", 4096.0, tp=8, ep=8)
    hw = load_hardware("h100-sxm")
    bw = hbm_bytes_per_s_achieved(hw, BASE)
    t_d = p_d = 4096.0 * 2048
    off = 2 * 28672 * (2 * 1536 + 768 + 2 * 2048)
    triton = BASE.with_overrides(moe_kernels="triton")
    cutlass = BASE.with_overrides(moe_kernels="cutlass")
    assert float(moe_permute_time(op, hw, triton)) == pytest.approx((2 * p_d + 2 * t_d + off) / bw)
    # TensorRT-LLM's runner permutes only its own experts' pairs
    assert float(moe_permute_time(op, hw, cutlass)) == pytest.approx((2 * t_d + 2 * p_d) / bw)
    # no expert parallelism: every pair is local, nothing to zero-fill
    _, op1 = _permute_op("qwen3-30b-a3b", "bf16", 4096.0, tp=8, ep=1)
    mp = op1.meta["moe_permute"]
    assert float(mp["pairs"]) == float(mp["pairs_all"]) == 32768.0
    # attention-DP: an all-gather feeds every token (zero-fills), an all-to-all only the pairs a
    # rank owns (none)
    m = load_model("qwen3-30b-a3b")
    g = next(g for g in m.layer_groups if g.moe)
    s = step_shape(8, 1, 8, 1, True, isl=4096.0, osl=1, prefill_tokens=4096.0)
    adp = next(
        o for o in layer_group_ops(m, parse_precision("bf16"), g, s, 1.0) if o.name == "moe_permute"
    )
    gathered = triton.with_overrides(moe_comm="allgather_reducescatter")
    dispatched = triton.with_overrides(moe_comm="nvlink_one_sided")
    assert float(moe_permute_time(adp, hw, gathered)) > float(moe_permute_time(adp, hw, dispatched))
    mp = adp.meta["moe_permute"]
    plain = (2 * float(mp["pairs"]) + 2 * float(mp["tokens"])) * 2048 / bw
    assert float(moe_permute_time(adp, hw, dispatched)) == pytest.approx(plain)


def test_kernel_path_auto_and_overrides():
    """auto: FlashInfer's TRTLLM-Gen fused MoE on the datacenter Blackwell GPUs (SM100/SM103),
    FlashInfer's CUTLASS one on the workstation Blackwell (SM120), Triton fused_moe elsewhere;
    TensorRT-LLM states cutlass; trtllm_gen asked for where its kernels do not exist runs the
    MoE runner (cutlass); an unknown path is refused with the field and the allowed values."""
    for gpu in ("b200", "gb200", "b300", "gb300"):
        assert moe_kernel_path(load_hardware(gpu), BASE) == "trtllm_gen"
    assert moe_kernel_path(load_hardware("rtx-pro-6000"), BASE) == "cutlass"
    assert moe_kernel_path(load_hardware("h200-sxm"), BASE) == "triton"
    assert moe_kernel_path(load_hardware("mi300x"), BASE) == "triton"
    for eng in ("trtllm", "trtllm-trt"):
        assert moe_kernel_path(load_hardware("h200-sxm"), load_engine(eng)) == "cutlass"
        assert moe_kernel_path(load_hardware("b200"), load_engine(eng)) == "cutlass"
    gen = BASE.with_overrides(moe_kernels="trtllm_gen")
    assert moe_kernel_path(load_hardware("b300"), gen) == "trtllm_gen"
    for gpu in ("h200-sxm", "rtx-pro-6000", "mi355x"):
        assert moe_kernel_path(load_hardware(gpu), gen) == "cutlass"
    assert load_engine("vllm").moe_kernels == "auto"
    with pytest.raises(SpecError, match="moe_kernels='fast' is not a known MoE kernel path"):
        BASE.with_overrides(moe_kernels="fast")


def test_engine_file_with_an_unknown_kernel_path_is_refused(tmp_path):
    p = tmp_path / "eng.yaml"
    p.write_text(yaml.safe_dump({"id": "bad", "moe_kernels": "cuda"}))
    with pytest.raises(SpecError, match="allowed: auto, cutlass, triton, trtllm_gen"):
        load_engine(str(p))


def _blog24_layer(eng, tokens: int) -> tuple[float, dict[str, float]]:
    """One TP8 rank's DeepSeek-V3 NVFP4 MoE layer on B200 (TensorRT-LLM tech blog 24's shape:
    256 experts on the GPU, each 2048 / 8 = 256 wide, top-8, hidden 7168)."""
    return moe_layer_time("b200", eng, "nvfp4", tokens, 256, 256, 8, 7168, 256)


def test_trtllm_gen_layer_has_its_own_fixed_chain_and_narrow_token_tiles():
    """The TRTLLM-Gen path charges its library's fixed chain (TRTLLM_GEN_LAYER_S) in place of the
    engine's moe_layer_overhead_s, as the cutlass path does with NVFP4 experts
    (CUTLASS_FP4_LAYER_S; other formats there take the engine's), tiles an expert's few tokens
    narrowly where CUTLASS pads them to a wide tile, and streams the triton path's bytes around
    its GEMMs without zero-filled pairs (it is fed only its own)."""
    trt = load_engine("trtllm").with_overrides(expert_balancer="uniform")
    gen = trt.with_overrides(moe_kernels="trtllm_gen")
    _, parts = _blog24_layer(gen, 1)
    assert parts["moe_routing"] == pytest.approx(TRTLLM_GEN_LAYER_S)
    _, parts = _blog24_layer(trt, 1)
    assert parts["moe_routing"] == pytest.approx(CUTLASS_FP4_LAYER_S)
    _, parts = moe_layer_time("b200", trt, "fp8", 1, 256, 256, 8, 7168, 256)
    assert parts["moe_routing"] == pytest.approx(trt.moe_layer_overhead_s)
    # at a few tokens per expert the narrow tiles beat the padded wide ones, for both GEMMs
    _, g = _blog24_layer(gen, 128)
    _, c = _blog24_layer(trt, 128)
    assert g["experts_up"] < c["experts_up"] and g["experts_down"] < c["experts_down"]
    # the path exists on SM100/SM103 only: on H200 the same constants price CUTLASS's layer
    h = moe_layer_time("h200-sxm", gen, "fp8", 128, 256, 256, 8, 7168, 256)
    assert h == moe_layer_time("h200-sxm", trt, "fp8", 128, 256, 256, 8, 7168, 256)


def test_trtllm_gen_layer_against_the_published_modules():
    """Tech blog 24's TRTLLM-Gen column (B200, TP8; moe_layer.csv, trtllm_blog24): the measured
    module is 26.8 us at one token, 161.9 us at 128 and 186.9 us at 384, against 96.8, 335.7 and
    368.1 us for CUTLASS. The priced TRTLLM-Gen layer is within 15% at each and under half the
    measured CUTLASS time at 128 and 384 tokens (a property of the kernels the blog shows:
    TRTLLM-Gen's narrow token tiles, not a value read off the model)."""
    gen = load_engine("trtllm").with_overrides(moe_kernels="trtllm_gen", expert_balancer="uniform")
    for tokens, measured, cutlass in (
        (1, 26.8e-6, 96.8e-6),
        (128, 161.9e-6, 335.7e-6),
        (384, 186.9e-6, 368.1e-6),
    ):
        t, _ = _blog24_layer(gen, tokens)
        assert t == pytest.approx(measured, rel=0.15)
        if tokens > 1:
            assert t < 0.6 * cutlass


def test_dense_models_have_no_moe_kernels_and_keep_their_elementwise_kernels():
    """The FFN activation is its own op now (class ffn); a dense layer still launches the same
    four elementwise kernels (three norm/residual/rope + one activation)."""
    m = load_model("llama-3.1-8b")
    s = step_shape(1, 1, 1, 1, False, isl=1024, osl=128, decode_seqs=8.0)
    ops = layer_group_ops(m, parse_precision("bf16"), m.layer_groups[0], s, 1.0)
    names = {op.name: op for op in ops}
    assert "moe_permute" not in names
    assert names["norms_elementwise"].kernels + names["ffn_activation"].kernels == 4.0
    # 8 tokens x 14,336 x 2 bytes x 3 (read gate and up, write their product)
    assert float(names["ffn_activation"].bytes) == pytest.approx(8 * 14336 * 2 * 3)


def test_moe_layer_grows_with_the_tokens():
    """A layer's time never falls as tokens are added (256 .. 32k), on both paths; on the
    trtllm_gen path (SGLang on B200, DeepSeek-V3's EP 8 rank) also token by token across the
    tile sizes' steps, where a power-of-two token tile would halve the idle grid."""
    for eng in (load_engine("vllm"), load_engine("trtllm")):
        times = [
            moe_layer_time("h200-sxm", eng, "fp8", t, 128, 128, 8, 2048, 768)[0]
            for t in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
        ]
        assert all(b >= a for a, b in zip(times, times[1:], strict=False))
    sglang = load_engine("sglang")
    for fmt in ("fp8_block", "nvfp4"):
        tokens = [*range(1, 80), *range(120, 300, 3), *range(1000, 1100, 7), 4096, 4100, 16384]
        times = [moe_layer_time("b200", sglang, fmt, t, 256, 32, 8, 7168, 2048)[0] for t in tokens]
        assert all(b >= a * (1 - 1e-12) for a, b in zip(times, times[1:], strict=False))


def test_published_fused_moe_layers():
    """The shipped kernel table (sources per row in moe_layer.csv; data/validation/SOURCES.md):
    the model's MoE layer (routing, permute, grouped GEMMs, activation, finalize) against
    published whole-layer timings.

    * vLLM's benchmark_moe.py timings of Triton fused_moe on L40S, A100, H100 and H200 (tuned
      configs and the current default heuristics): within 10% at the median, 25% on every row.
      The superseded default heuristics of vLLM PR #24700 ('old default') ran 1.4-2.8x slower
      and are reported, not held to this.
    * With AIConfigurator's vLLM and SGLang Triton fused_moe timings on H100 and H200, every
      Triton row without expert parallelism: 10% at the median, 25% at the 90th percentile.
    * TensorRT-LLM's CUTLASS MoE on H100 and H200 (AIConfigurator): within 15% at the median."""
    path = bundled_data("moe_layer.csv")
    raw = list(csv.DictReader(path.open(encoding="utf-8")))
    rep = validate(path)

    def errs(keep) -> list[float]:
        return [abs(r["error"]) for r in rep.rows if keep(raw[r["row"]])]

    prs = errs(lambda x: x["source_id"].startswith("vllm_pr") and x["config"] != "old default")
    assert len(prs) >= 50
    assert statistics.median(prs) <= 0.10 and max(prs) <= 0.25
    triton = errs(
        lambda x: (
            x["path"] == "triton"
            and x["config"] != "old default"
            and x["experts"] == x["experts_local"]
        )
    )
    assert len(triton) >= 100
    assert statistics.median(triton) <= 0.10
    assert float(np.quantile(triton, 0.9)) <= 0.25
    cutlass_hopper = errs(
        lambda x: x["framework"] == "trtllm" and x["gpu"] in ("H100 SXM", "H200 SXM")
    )
    assert len(cutlass_hopper) >= 60 and statistics.median(cutlass_hopper) <= 0.15
    # every op of the layer is priced (none silently zero at these sizes)
    _, parts = moe_layer_time("l40s", load_engine("vllm"), "fp8", 4096, 128, 128, 8, 2048, 768)
    assert set(parts) == set(MOE_LAYER_OPS) and all(v > 0 for v in parts.values())


def test_moe_layer_table_errors_name_the_problem(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("source_id,gpu\nx,h100\n")
    from llm_codesign.errors import DataFileError
    from llm_codesign.validate import validate_moe_layer

    with pytest.raises(DataFileError, match="missing column"):
        validate_moe_layer(p)
    cols = [
        "source_id", "gpu", "kernel", "framework", "path", "dtype", "tokens", "experts",
        "experts_local", "top_k", "hidden", "expert_intermediate", "time_us",
    ]  # fmt: skip
    good = ["h100", "k", "vllm", "triton", "fp8", "1024", "128", "128", "8", "2048", "768", "500"]
    rows = [["a", *good]]
    for sid, col, value in (("b", 0, "nope"), ("c", 3, "cuda"), ("d", 6, "48"), ("e", 4, "nvfp4")):
        row = [sid, *good]
        row[1 + col] = value
        rows.append(row)
    with p.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        w.writerows(rows)
    rep = validate_moe_layer(p)
    assert len(rep.rows) == 1 and rep.rows[0]["source_id"] == "a"
    reasons = {s["reason"] for s in rep.skipped}
    assert "unknown gpu nope" in reasons
    assert "path cuda (allowed: auto, cutlass, triton, trtllm_gen, deepgemm)" in reasons
    assert any("experts_local must divide" in x for x in reasons)
    assert "nvfp4 not native on h100-sxm" in reasons


def test_layer_ops_are_the_serving_ops():
    """The kernel validation prices the very ops a serving step adds up: the same op_time per
    op for an MoE layer of Qwen3-30B-A3B at 2,048 prompt tokens."""
    eng = load_engine("vllm")
    hw = load_hardware("h100-sxm")
    m = load_model("qwen3-30b-a3b")
    g = next(g for g in m.layer_groups if g.moe)
    s = step_shape(1, 1, 1, 1, False, isl=2048, osl=1, prefill_tokens=2048.0)
    want = 0.0
    for op in layer_group_ops(m, parse_precision("fp8"), g, s, 1.0):
        if op.name in MOE_LAYER_OPS:
            t = float(np.asarray(op_time(op, hw, eng)[0]))
            want += t + (op.kernels * eng.kernel_overhead_s if t > 0 else 0.0)
    got, _ = moe_layer_time("h100-sxm", eng, "fp8", 2048, 128, 128, 8, 2048, 768)
    assert got == pytest.approx(want, rel=1e-12)


def test_grouped_fp4_share_on_blackwell_by_hand():
    """B200's routed NVFP4 GEMMs on the CUTLASS path run at 0.42 of the dense FP4 ceiling
    (efficiency.grouped_gemm, fitted on AIConfigurator's TensorRT-LLM CUTLASS module; b200.yaml):
    the compute term of a routed GEMM is the same GEMM priced at the dense ceiling / 0.42; dense
    GEMMs, the per-group cost and the memory term do not move, and Hopper has no such share. The
    trtllm_gen path (base's auto on B200) runs its batched GEMMs at the dense rate."""
    from dataclasses import replace

    from llm_codesign.cost import gemm_time

    m = load_model("qwen3-30b-a3b")
    g = next(g for g in m.layer_groups if g.moe)
    s = step_shape(1, 1, 1, 1, False, isl=8192, osl=1, prefill_tokens=8192.0)
    ops = {op.name: op for op in layer_group_ops(m, parse_precision("nvfp4"), g, s, 1.0)}
    up = ops["experts_up"]
    hw = load_hardware("b200")
    assert hw.grouped_gemm_efficiency_for("nvfp4").value == 0.42
    dense_hw = replace(hw, grouped_gemm_efficiency={})
    cut = BASE.with_overrides(moe_kernels="cutlass")
    _, c, mem = gemm_time(up, hw, cut)
    _, c0, mem0 = gemm_time(up, dense_hw, cut)
    from llm_codesign.cost import GROUPED_GEMM_GROUP_ROWS, gemm_ceiling

    # each group's fixed rows stay at the dense ceiling
    rows = min(float(np.asarray(up.m)), GROUPED_GEMM_GROUP_ROWS)
    peak, ceiling = gemm_ceiling(hw, "nvfp4", BASE)
    fixed = float(np.asarray(up.groups)) * 2.0 * rows * up.n * up.k / (peak * ceiling)
    assert float(c) - fixed == pytest.approx((float(c0) - fixed) / 0.42, rel=1e-12)
    assert float(mem) == float(mem0)
    qkv = ops["qkv_proj"]
    assert float(gemm_time(qkv, hw, cut)[1]) == float(gemm_time(qkv, dense_hw, cut)[1])
    assert load_hardware("h200-sxm").grouped_gemm_efficiency_for("fp8").value == 1.0
    assert float(gemm_time(up, hw, BASE)[1]) == float(gemm_time(up, dense_hw, BASE)[1])


def test_blackwell_fp4_fused_moe_layers():
    """The CUTLASS FP4 rows of the kernel table at 1k tokens and more. TensorRT-LLM 1.2's CUTLASS
    NVFP4 module on B200 (AIConfigurator; the rows the grouped share 0.42 is fitted on): within
    15% at the median, the median bias within 6%, where the dense FP4 ceiling prices them
    1.4-2.9x too fast at 8k tokens. On B300 the same share on B300's own FP4 ceiling (b300.yaml,
    the B200 fraction carried over by the GEMM tables' measured B300/B200 ratio) prices
    TensorRT-LLM 1.3.0rc20's module within 25% at the median (slower than measured: the 1.3
    runner is faster than the 1.2 one the share describes, on B200 too) and FlashInfer 0.6.18's
    cutlass_fused_moe slower still (its faster kernel; sglang PR #40105, flashinfer PR #4985)."""

    def errs(source: str) -> list[float]:
        return _layer_errors(
            "nvfp4",
            lambda x: (
                x["source_id"] == source and int(x["tokens"]) >= 1024 and x["path"] == "cutlass"
            ),
        )

    b200 = errs("aiconfigurator_moe_b200_trtllm")
    assert len(b200) == 12
    assert statistics.median(abs(e) for e in b200) <= 0.15
    assert abs(statistics.median(b200)) <= 0.06
    b300 = errs("aiconfigurator_moe_b300_trtllm")
    assert len(b300) == 12
    assert 0.0 < statistics.median(b300) <= 0.25
    flashinfer = errs("sglang_pr40105") + errs("flashinfer_pr4985")
    assert len(flashinfer) == 8
    assert statistics.median(flashinfer) > statistics.median(b300)


def test_grouped_fp8_block_share_on_hopper_by_hand():
    """Hopper's routed GEMMs with DeepSeek-V3's 128x128 block-scaled FP8 weights compute their rows
    at no more than 0.32 of the FP8 ceiling (efficiency.grouped_gemm.fp8_block; h200-sxm.yaml): a
    floor of 2 m n k groups / (peak x ceiling x 0.32) plus each group's fixed rows on the
    per-tensor time (rows m with the busiest rank's imbalance); dense GEMMs and memory do not
    move; at one token the weight stream hides it. Blackwell has no entry: its CUTLASS path prices
    both alike, and its trtllm_gen path takes the TRTLLM-Gen kernels' own share (0.26)."""
    from llm_codesign.cost import GROUPED_GEMM_GROUP_ROWS, gemm_ceiling, gemm_time
    from llm_codesign.routing import moe_rank_imbalance
    from llm_codesign.specs.engine import EXPERT_POPULARITY_CV

    m = load_model("deepseek-r1")
    g = next(g for g in m.layer_groups if g.moe)
    s = step_shape(8, 1, 8, 1, True, isl=8192, osl=1, prefill_tokens=8192.0)

    def ops(prec: str, shape=s) -> dict:
        return {op.name: op for op in layer_group_ops(m, parse_precision(prec), g, shape, 1.0)}

    block, per_tensor = ops("fp8+fp8_block-w"), ops("fp8")
    hw = load_hardware("h200-sxm")
    assert hw.grouped_gemm_efficiency_for("fp8", "fp8_block").value == 0.32
    assert hw.grouped_gemm_efficiency_for("fp8", "fp8").value == 1.0
    up_b, up_t = block["experts_up"], per_tensor["experts_up"]
    tb, cb, mb = (float(x) for x in gemm_time(up_b, hw, BASE))
    tt, _, mt = (float(x) for x in gemm_time(up_t, hw, BASE))
    meta = up_t.meta["moe"]
    imb = moe_rank_imbalance(
        meta["pairs_per_rank"],
        meta["ep"],
        BASE.routing_skew,
        meta["top_k"],
        meta["experts_local"],
        EXPERT_POPULARITY_CV[BASE.expert_balancer],
    )
    rows = float(np.asarray(up_t.m)) * float(imb)
    groups = float(np.asarray(up_t.groups))
    peak, ceiling = gemm_ceiling(hw, "fp8", BASE)
    fixed = groups * 2.0 * min(rows, GROUPED_GEMM_GROUP_ROWS) * up_t.n * up_t.k / (peak * ceiling)
    floor = 2.0 * rows * up_t.n * up_t.k * groups / (peak * ceiling * 0.32) + fixed
    assert cb == pytest.approx(floor, rel=1e-12)
    assert tb == pytest.approx(max(tt, floor), rel=1e-12) and tb > 1.5 * tt  # compute-bound
    one = step_shape(8, 1, 8, 1, True, isl=1, osl=1, prefill_tokens=1.0)
    t1 = [
        float(gemm_time(ops(p, one)["experts_up"], hw, BASE)[0]) for p in ("fp8+fp8_block-w", "fp8")
    ]
    # memory-bound: the scales' bytes, and the busiest EP rank's 2.4 touched experts
    # (routing.busiest_rank_experts) whose padded tiles at 0.32 of the ceiling show through
    # the smooth maximum (cost.gemm_overlap_time) by under 3%
    assert t1[0] == pytest.approx(t1[1], rel=0.03)
    # the block scales add 32 bits per 16,384 weights to the weight bytes, nothing else
    assert mb == pytest.approx(mt, rel=1e-3)
    for name in ("q_a_proj", "o_proj", "shared_up"):
        assert float(gemm_time(block[name], hw, BASE)[1]) == pytest.approx(
            float(gemm_time(per_tensor[name], hw, BASE)[1]), rel=1e-12
        )
    b200, cut = load_hardware("b200"), BASE.with_overrides(moe_kernels="cutlass")
    assert float(gemm_time(up_b, b200, cut)[1]) == pytest.approx(
        float(gemm_time(up_t, b200, cut)[1]), rel=1e-12
    )
    assert TRTLLM_GEN_FP8_BLOCK.value == 0.26
    peak, ceiling = gemm_ceiling(b200, "fp8", BASE)  # BASE: trtllm_gen on B200
    gen = float(gemm_time(up_b, b200, BASE)[1])
    assert gen >= 2.0 * rows * up_t.n * up_t.k * groups / (peak * ceiling * 0.26)


def test_hopper_fp8_block_fused_moe_layers():
    """The FP8 block-scale rows of the kernel table (AIConfigurator: TensorRT-LLM 1.2.0rc5
    CUTLASS and vLLM 0.19.0 Triton on H100 and H200, DeepSeek-V3 / Qwen3 shapes): at 1k tokens
    and more they ran 1.1-2.0x slower than the per-tensor FP8 modules of the same shape; priced
    with the block share, TensorRT-LLM's rows without expert parallelism and with EP 8 are within
    20% at the median with a bias within 15%, and vLLM's rows without EP within 15%."""

    def errs(keep) -> list[float]:
        return _layer_errors("fp8_block", lambda x: int(x["tokens"]) >= 1024 and keep(x))

    trt = errs(lambda x: x["framework"] == "trtllm")
    assert len(trt) == 60
    assert statistics.median(abs(e) for e in trt) <= 0.20 and abs(statistics.median(trt)) <= 0.15
    vllm = errs(lambda x: x["framework"] == "vllm" and x["experts"] == x["experts_local"])
    assert len(vllm) >= 8 and statistics.median(abs(e) for e in vllm) <= 0.15


def test_collector_clamped_ep_rows_are_skipped_with_their_reason():
    """AIConfigurator's SGLang EP rows ran the pairs of other GPUs on local expert 0 (its
    collector clamps their expert ids; SOURCES.md): at 8,192 tokens each takes 0.8-2x the time
    of the same layer without EP in the same table (a rank's share would take about an
    eighth). validate skips them, counted with the reason."""
    path = bundled_data("moe_layer.csv")
    raw = list(csv.DictReader(path.open(encoding="utf-8")))
    clamped = [r for r in raw if "remote pairs clamped to local expert 0" in r["notes"]]
    assert len(clamped) == 18 and all(r["experts"] != r["experts_local"] for r in clamped)

    def shape(r):
        return (r["dtype"], r["tokens"], r["experts"], r["hidden"], r["expert_intermediate"])

    same = [r for r in raw if r["source_id"] == clamped[0]["source_id"]]
    whole = {shape(r): float(r["time_us"]) for r in same if r["experts"] == r["experts_local"]}
    big = [r for r in clamped if r["tokens"] == "8192" and shape(r) in whole]
    assert len(big) >= 4
    for r in big:
        assert 0.8 <= float(r["time_us"]) / whole[shape(r)] <= 2.0, shape(r)
    rep = validate(path)
    reason = "remote pairs clamped to a local expert by the collector (SOURCES.md)"
    assert {"reason": reason, "count": len(clamped)} in rep.skipped


def test_a_kernel_row_without_notes_is_priced(tmp_path):
    """A moe_layer row that leaves out its trailing notes field is priced like the same row with
    empty notes (the clamped-pairs check reads no notes as none)."""
    path = bundled_data("moe_layer.csv")
    lines = path.read_text(encoding="utf-8").splitlines()
    header, first = lines[0], next(r for r in csv.DictReader(lines) if r["path"] == "triton")
    cols = header.split(",")
    short = ",".join(first[c] for c in cols[:-1])  # no notes field at all
    empty = short + ","
    (tmp_path / "a.csv").write_text(header + "\n" + short + "\n", encoding="utf-8")
    (tmp_path / "b.csv").write_text(header + "\n" + empty + "\n", encoding="utf-8")
    a, b = validate(tmp_path / "a.csv"), validate(tmp_path / "b.csv")
    assert len(a.rows) == 1 and a.rows[0]["predicted"] == b.rows[0]["predicted"]


def test_grouped_mxfp4_share_on_hopper():
    """Hopper runs gpt-oss's MXFP4 experts weight-only (BF16 activations): its tensor cores take
    no FP4, so the kernels convert values and block scales to BF16 first, and the rows computed
    run at no more than 0.65 of the BF16 ceiling (efficiency.grouped_gemm.mxfp4, h100-sxm.yaml
    and h200-sxm.yaml; AIConfigurator's w4a16_mxfp4 modules). Where the experts are
    compute-bound (8,192 tokens) the floor sets the time; at 16 tokens the weight stream hides
    it; Blackwell (FP4 tensor cores) has no entry."""
    from llm_codesign.cost import gemm_time
    from llm_codesign.specs.hardware import Efficiency

    m = load_model("gpt-oss-120b")
    g = next(g for g in m.layer_groups if g.moe)

    def up(tokens: float):
        s = step_shape(1, 1, 1, 1, False, isl=tokens, osl=1, prefill_tokens=tokens)
        ops = layer_group_ops(m, parse_precision("mxfp4-a16"), g, s, 1.0)
        return next(op for op in ops if op.name == "experts_up")

    hw = load_hardware("h200-sxm")
    assert hw.block_scaled_efficiency("mxfp4", "bf16").value == 0.65
    assert load_hardware("h100-sxm").block_scaled_efficiency("mxfp4", "bf16").value == 0.65
    # measured for the weight-only BF16 kernels only: not for MXFP4 weights with FP8 math
    assert hw.block_scaled_efficiency("mxfp4", "fp8") is None
    assert load_hardware("b200").block_scaled_efficiency("mxfp4", "bf16") is None
    saved = hw.grouped_gemm_efficiency.pop("mxfp4")
    try:
        without = [float(gemm_time(up(t), hw, BASE)[0]) for t in (16.0, 8192.0, 32768.0)]
    finally:
        hw.grouped_gemm_efficiency["mxfp4"] = saved
    with_share = [float(gemm_time(up(t), hw, BASE)[0]) for t in (16.0, 8192.0, 32768.0)]
    assert with_share[0] == pytest.approx(without[0], rel=1e-9)  # memory-bound: hidden
    # compute-bound: the floor, more so with more tokens (1 / 0.65 = 1.54 at most)
    assert 1.1 < with_share[1] / without[1] < with_share[2] / without[2] <= 1.0 / 0.65
    hw.grouped_gemm_efficiency["mxfp4"] = Efficiency(1e9, "no floor")
    try:
        assert float(gemm_time(up(8192.0), hw, BASE)[0]) == pytest.approx(without[1], rel=1e-9)
    finally:
        hw.grouped_gemm_efficiency["mxfp4"] = saved


def test_hopper_mxfp4_fused_moe_layers():
    """The weight-only MXFP4 rows of the kernel table (AIConfigurator: TensorRT-LLM 1.2.0rc5 on
    H100 and H200, vLLM on H200; gpt-oss-120b's shape, no EP): at 8,192 tokens, where the share
    binds, every row within 12%."""
    errs = _layer_errors("mxfp4", lambda x: int(x["tokens"]) == 8192)
    assert len(errs) == 3
    assert max(abs(e) for e in errs) <= 0.12


def test_an_mxfp4_key_on_a_gpu_with_fp4_tensor_cores_is_the_class_share_once():
    """On Blackwell ``grouped_gemm.mxfp4`` names the FP4 class's grouped share (its tensor cores
    take MXFP4): it prices the routed GEMMs once, as a class share, and is no weight-only floor,
    neither for native MXFP4 math nor for weight-only runs there."""
    from importlib import resources

    from llm_codesign.cost import gemm_time
    from llm_codesign.specs.hardware import hardware_from_mapping

    root = resources.files("llm_codesign") / "data" / "hardware"
    data = yaml.safe_load((root / "b200.yaml").read_text())
    data["efficiency"]["grouped_gemm"]["mxfp4"] = {"value": 0.5, "source": "x"}
    hw = hardware_from_mapping(data, "test.yaml")
    assert hw.block_scaled_efficiency("mxfp4", "mxfp4") is None
    assert hw.block_scaled_efficiency("mxfp4", "bf16") is None
    assert hw.grouped_gemm_efficiency_for("mxfp4", "mxfp4").value == 0.5
    plain = hardware_from_mapping(yaml.safe_load((root / "b200.yaml").read_text()), "b200.yaml")
    m = load_model("gpt-oss-120b")
    g = next(g for g in m.layer_groups if g.moe)
    s = step_shape(1, 1, 1, 1, False, isl=32768, osl=1, prefill_tokens=32768.0)
    up = next(
        op
        for op in layer_group_ops(m, parse_precision("mxfp4"), g, s, 1.0)
        if op.name == "experts_up"
    )
    cut = BASE.with_overrides(moe_kernels="cutlass")  # (trtllm_gen takes no grouped share)
    with_key, without = (float(gemm_time(up, h, cut)[1]) for h in (hw, plain))
    # the share once: the math at half the rate (each group's fixed rows stay at the dense
    # ceiling), not at a quarter as a class share and a floor of the same 0.5 would give
    assert 1.9 * without < with_key <= without / 0.5


def test_weight_only_experts_run_the_engines_weight_only_path_without_moe_tp():
    """TensorRT-LLM runs MXFP4 experts on Hopper on its TRITON backend, which takes EP but not
    TP (its gpt-oss README's support matrix): the path applies to weight-only experts (MXFP4 on
    a GPU without FP4 tensor cores) at MoE TP 1 only; Blackwell (native MXFP4), other weight
    formats and engines without a weight-only path keep their own."""
    h200, b200 = load_hardware("h200-sxm"), load_hardware("b200")
    trt = load_engine("trtllm")
    assert weight_only_path(h200, trt, "mxfp4") == "triton"
    np.testing.assert_array_equal(takes_weight_only_path(np.array([1, 2, 8])), [True, False, False])
    assert weight_only_path(b200, trt, "mxfp4") is None  # Blackwell takes MXFP4 natively
    assert weight_only_path(h200, trt, "fp8_block") is None
    assert weight_only_path(h200, load_engine("vllm"), "mxfp4") is None  # already Triton
    assert weight_only_tiles(h200, trt, "mxfp4")  # the narrow token tiles
    assert h200.runs_weight_only("mxfp4") and not b200.runs_weight_only("mxfp4")
    assert not load_hardware("a100-sxm-80gb").runs_weight_only("fp8_block")  # block-scaled
    with pytest.raises(SpecError, match="moe_kernels_weight_only='cuda' is not a known"):
        trt.with_overrides(moe_kernels_weight_only="cuda")


@pytest.mark.parametrize("tp,ep,changes", [(1, 1, True), (2, 2, True), (2, 1, False)])
def test_weight_only_path_prices_only_moe_without_tensor_parallelism(tp, ep, changes):
    """gpt-oss-120b MXFP4 on H200 with TensorRT-LLM: its narrow-tile grouped GEMMs never make a
    decode step slower than the CUTLASS runner's full tiles (the tile is picked by efficiency),
    and a tensor-parallel MoE (tp 2, ep 1) is priced as before."""
    from llm_codesign import ParallelPlan, Workload, estimate

    trt = load_engine("trtllm")
    same = trt.with_overrides(moe_kernels_weight_only="same")
    kw = dict(plan=ParallelPlan(tp=tp, ep=ep), workload=Workload(1024, 1024, 32))
    own = estimate("gpt-oss-120b", "h200-sxm", "mxfp4-a16", engine=trt, **kw)
    cutlass = estimate("gpt-oss-120b", "h200-sxm", "mxfp4-a16", engine=same, **kw)
    assert own.tpot_ms <= cutlass.tpot_ms * (1 + 1e-12)
    assert (own.tpot_ms < cutlass.tpot_ms * 0.99) == changes


def test_estimate_states_the_moe_kernel_path_it_priced():
    """The estimate's assumptions name the fused-MoE kernels it priced (the engine's
    moe_kernels resolved on the GPU): SGLang's TRTLLM-Gen on B200, its Triton fused_moe on
    H200, TensorRT-LLM's CUTLASS runner on both; none for a dense model."""
    from llm_codesign import ParallelPlan, Workload, estimate

    def path(model: str, gpu: str, engine: str) -> str | None:
        plan = ParallelPlan(tp=8)
        e = estimate(model, gpu, "fp8", plan, Workload(1024, 1024, 4), engine=engine)
        return e.assumptions()["moe_kernel_path"]

    assert path("deepseek-r1", "b200", "sglang") == "trtllm_gen"
    assert path("deepseek-r1", "h200-sxm", "sglang") == "triton"
    assert path("deepseek-r1", "b200", "trtllm") == "cutlass"
    assert path("llama-3.1-70b", "b200", "sglang") is None


def test_trtllm_gen_idle_ctas_by_hand():
    """FlashInfer's TRTLLM-Gen grid (Routing::getMaxNumCtasInBatchDim, the GPU's experts) by hand.
    64 tokens, top-8, DeepSeek-V3's 256 experts of which 32 on the GPU (EP 8: 64 pairs), GEMM1
    and GEMM2 widths 4,096 and 7,168 (32 + 56 weight tiles of 128): 512 pairs over 256 experts is
    2 a expert, so tiles of 8 tokens; launched min(512, 32) + (512 - 32) // 8 = 92 token tiles;
    32 (1 - (1 - 8/256)^64) = 27.8 experts touched, 2.3 rows each, one tile each; so
    (92 - 27.8) x 88 = 5,650 idle CTAs. All experts local (EP 1) at 4,096 tokens of 128 experts:
    tiles of 64, 128 + (32,768 - 128) // 64 = 638 launched against about 4.5 routed tiles of each
    expert's 256 rows: fewer than one idle tile per expert."""
    touched = 32 * (1 - (1 - 8 / 256) ** 64)
    n = float(trtllm_gen_idle_ctas(64, 8, 256, 32, 64, (4096, 7168)))
    assert n == pytest.approx((92 - touched) * 88, rel=2e-3)
    local = float(trtllm_gen_idle_ctas(4096, 8, 128, 128, 32768, (3072, 4096)))
    assert 0 < local < 128 * (24 + 32)
    # no tokens, no grid
    assert float(trtllm_gen_idle_ctas(0, 8, 128, 16, 0, (3072, 4096))) == 0.0


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.integers(1, 65536),
    ep=st.sampled_from([1, 2, 4, 8, 16, 32]),
    top_k=st.sampled_from([1, 2, 4, 8]),
    experts=st.sampled_from([32, 64, 128, 256, 384]),
)
def test_trtllm_gen_idle_ctas_stay_within_the_launched_grid(tokens, ep, top_k, experts):
    """Idle CTAs are never negative nor more than the launched grid (min(T k, E) + (T k - E) / 8
    token tiles at the narrowest tile, times the weight tiles)."""
    local = experts / ep
    n = float(trtllm_gen_idle_ctas(tokens, top_k, experts, local, tokens * top_k / ep, (512, 256)))
    pairs = tokens * top_k
    first = min(pairs, local)
    assert 0.0 <= n <= (first + (pairs - first) / 8) * (4 + 2) + 1e-9


def test_trtllm_gen_idle_time_only_on_its_path():
    """The idle CTAs cost TRTLLM_GEN_IDLE_CTA_S of the weight format per CTA over the GPU's SMs on
    the trtllm_gen path (SGLang's auto on B200), nothing on TensorRT-LLM's CUTLASS path or on
    Hopper's Triton one; and they are what an EP rank's layer costs beyond 1 / EP of the
    all-local layer's routed work (Qwen3-235B's MoE, 8,192 tokens, block-scaled FP8)."""
    sglang, trt = load_engine("sglang"), load_engine("trtllm")
    b200 = load_hardware("b200")
    moe = {"top_k": 8.0, "ep": 8, "experts_local": 16.0, "adp": False, "pure_ep": True,
           "pairs_per_rank": 8192.0, "weights": "fp8_block"}  # fmt: skip
    widths = (3072.0, 4096.0)
    idle = trtllm_gen_idle_ctas(8192, 8, 128, 16, 8192, widths)
    t = float(trtllm_gen_idle_time(b200, sglang, moe, 8192, 1.0, widths))
    assert t == pytest.approx(float(idle) * TRTLLM_GEN_IDLE_CTA_S["fp8_block"] / 148, rel=1e-12)
    assert trtllm_gen_idle_time(b200, trt, moe, 8192, 1.0, widths) == 0.0
    assert trtllm_gen_idle_time(load_hardware("h200-sxm"), sglang, moe, 8192, 1.0, widths) == 0.0
    # NVFP4 takes the other formats' constant; MXFP4 weights under BF16 activations their own
    nv = float(trtllm_gen_idle_time(b200, sglang, moe | {"weights": "nvfp4"}, 8192, 0.5, widths))
    assert nv == pytest.approx(float(idle) * TRTLLM_GEN_IDLE_CTA_S[""] / 148, rel=1e-12)
    w4a16 = trtllm_gen_idle_time(b200, sglang, moe | {"weights": "mxfp4"}, 8192, 2.0, widths)
    per_cta = TRTLLM_GEN_IDLE_CTA_S["mxfp4-a16"]
    assert float(w4a16) == pytest.approx(float(idle) * per_cta / 148, rel=1e-12)
    # in the whole layer: the EP rank's permute op holds them
    _, ep8 = moe_layer_time("b200", sglang, "fp8_block", 8192, 128, 16, 8, 4096, 1536)
    _, trt8 = moe_layer_time("b200", trt, "fp8_block", 8192, 128, 16, 8, 4096, 1536)
    assert ep8["moe_permute"] > t > 0 and trt8["moe_permute"] < ep8["moe_permute"] - 0.9 * t


def test_sglang_trtllm_gen_modules_on_b200():
    """AIConfigurator's SGLang 0.5.14 FlashInfer TRTLLM-Gen modules on B200 (moe_layer.csv,
    aiconfigurator_moe_b200_sglang: Qwen3-235B's shape, block-scaled FP8 and NVFP4, all experts
    local or EP 8, 16 to 8,192 tokens; 16 rows): within 20% at the median and 60% on every row.
    Without the idle CTAs, the path's own FP8 block rate and NVFP4 at the dense rate the same
    rows were 28.5% at the median, -66% to +168% (benchmarks/RESULTS.md, stop 55)."""
    errs = _layer_errors("fp8_block", lambda r: r["source_id"] == "aiconfigurator_moe_b200_sglang")
    errs += _layer_errors("nvfp4", lambda r: r["source_id"] == "aiconfigurator_moe_b200_sglang")
    assert len(errs) == 16
    assert statistics.median(abs(e) for e in errs) <= 0.20 and max(abs(e) for e in errs) <= 0.60


def test_trtllm_gen_kernel_rates_by_path():
    """The TRTLLM-Gen path's batched GEMMs take their own rates, not the GPU file's CUTLASS
    grouped share: NVFP4 at the dense rate, block-scaled FP8 at TRTLLM_GEN_FP8_BLOCK, weight-only
    MXFP4 (BF16 math) at TRTLLM_GEN_W4A16; W4A8 (the tensor cores take MXFP4) none; TensorRT-LLM's
    CUTLASS path on B200 and every path on Hopper keep the GPU file's entries; the estimate's
    assumptions report the same (grouped_efficiency)."""
    b200, h200 = load_hardware("b200"), load_hardware("h200-sxm")
    gen, cut = load_engine("sglang"), load_engine("trtllm")
    assert grouped_share(b200, gen, "nvfp4").value == 1.0
    assert grouped_share(b200, cut, "nvfp4").value == 0.42

    def block(hw, eng, weights, rate):
        return grouped_block_efficiency(hw, eng, {"weights": weights}, rate)

    assert block(b200, gen, "fp8_block", "fp8") is TRTLLM_GEN_FP8_BLOCK
    assert block(b200, gen, "mxfp4", "bf16") is TRTLLM_GEN_W4A16
    assert block(b200, gen, "mxfp4", "mxfp8") is None and block(b200, gen, "nvfp4", "nvfp4") is None
    assert block(b200, cut, "fp8_block", "fp8") is None
    assert block(h200, gen, "fp8_block", "fp8").value == 0.32  # (triton on Hopper: the file's)
    assert grouped_efficiency(b200, gen, "nvfp4", "nvfp4").value == 1.0
    assert grouped_efficiency(b200, cut, "nvfp4", "nvfp4").value == 0.42
    assert grouped_efficiency(b200, gen, "fp8", "fp8_block") is TRTLLM_GEN_FP8_BLOCK
    assert grouped_efficiency(h200, cut, "fp8", "fp8_block").value == 0.32


def test_trtllm_gen_fuses_the_activation_but_for_block_fp8():
    """The TRTLLM-Gen kernels run the experts' SwiGLU in GEMM1's epilogue, except the DeepSeek FP8
    (block-scaled) cubins, which run it as a kernel of their own (FlashInfer
    trtllm_fused_moe_runner.cu): the layer's activation op costs nothing there, in time or
    launches; on the CUTLASS path and for block-scaled FP8 it streams its bytes as before, and a
    dense layer's activation is no MoE's."""
    sglang, trt = load_engine("sglang"), load_engine("trtllm")
    _, gen = moe_layer_time("b200", sglang, "nvfp4", 4096, 128, 16, 8, 4096, 1536)
    _, cut = moe_layer_time("b200", trt, "nvfp4", 4096, 128, 16, 8, 4096, 1536)
    _, block = moe_layer_time("b200", sglang, "fp8_block", 4096, 128, 16, 8, 4096, 1536)
    assert gen["ffn_activation"] == 0.0 and cut["ffn_activation"] > 0.0
    assert block["ffn_activation"] > 0.0
    b200 = load_hardware("b200")
    assert not fuses_activation(b200, sglang, {})  # a dense layer's activation
    assert fuses_activation(b200, sglang, {"moe": {"weights": "bf16"}})
    assert not fuses_activation(load_hardware("h200-sxm"), sglang, {"moe": {"weights": "bf16"}})
