"""vLLM 0.12's DeepGEMM MoE (``moe_kernels.padded_rows``): block-scaled FP8 experts on Hopper
computed over the worst case of rows, round_up(pairs + local experts x 127, 128), whatever the
batch; and the validate rows of the releases that ran it (``validate.recipes``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import load_hardware, load_model, parse_precision
from llm_codesign.moe_kernels import moe_kernel_path, padded_rows
from llm_codesign.serving import evaluate
from llm_codesign.specs.engine import load_engine
from llm_codesign.validate import map_row

QWEN = load_model("Qwen/Qwen3-235B-A22B-FP8")
H200 = load_hardware("h200-sxm")
BLOCK = parse_precision("fp8+fp8_block-w")
VLLM = load_engine("vllm")
DEEP = VLLM.with_overrides(moe_kernels="deepgemm")


def _tpot(eng, hw=H200, prec=BLOCK, **kw):
    r = evaluate(QWEN, hw, prec, eng, isl=1000, osl=1000, **kw)
    return np.asarray(r.tpot_s, dtype=float)


def test_padded_rows_closed_form():
    """round_up(P + E_l x 127, 128), by hand: 128 experts, top-8. 16 tokens: 128 + 16,256 =
    16,384 = 128 x 128; 20 tokens: 160 + 16,256 = 16,416 -> 16,512. The pairs are every token's
    the kernel is fed: EP 2 with 80 pairs per rank (10 tokens, all fed) counts 160, 160 + 8,128
    = 8,288 -> 8,320. From an MoE tensor parallel 8: 0 (Triton)."""
    moe = {"experts_local": 128.0, "ep": 1, "moe_tp": 2, "weights": "fp8_block", "adp": False,
           "pure_ep": False}  # fmt: skip
    rows = padded_rows(H200, DEEP, {**moe, "pairs_per_rank": np.array([128.0, 160.0])})
    assert rows.tolist() == [16384.0, 16512.0]
    ep2 = {**moe, "experts_local": 64.0, "ep": 2, "moe_tp": 1, "pairs_per_rank": 80.0}
    assert float(padded_rows(H200, DEEP, ep2)) == 8320.0
    assert float(padded_rows(H200, DEEP, {**moe, "moe_tp": 8, "pairs_per_rank": 128.0})) == 0.0
    # with expert parallelism vLLM's MoE tensor-parallel size is 1: EP 8 keeps DeepGEMM (16
    # local experts, 16 pairs per rank of 128 fed: 128 + 2,032 = 2,160 -> 2,176), with
    # attention-DP too where the ranks' tokens are all-gathered (vLLM's default dispatch)
    ep8 = {**moe, "experts_local": 16.0, "ep": 8, "moe_tp": 1, "pairs_per_rank": 16.0}
    assert float(padded_rows(H200, DEEP, ep8)) == 2176.0
    gathered = DEEP.with_overrides(moe_comm="allgather_reducescatter")
    adp = {**ep8, "adp": True, "pure_ep": True}
    assert float(padded_rows(H200, gathered, adp)) == 2176.0
    # behind a dispatch (DeepEP) the prepare step counts each expert's tokens: nothing padded
    assert float(padded_rows(H200, DEEP.with_overrides(moe_comm="deepep"), adp)) == 0.0
    # the path only: per-tensor FP8, another engine's path, a GPU DeepGEMM does not run on
    # (SM103's B300: is_deep_gemm_supported takes compute capability 9.0 and 10.0); SM100 runs it
    assert padded_rows(H200, DEEP, {**moe, "weights": "fp8", "pairs_per_rank": 8.0}) is None
    assert padded_rows(H200, VLLM, {**moe, "pairs_per_rank": 8.0}) is None
    b300 = load_hardware("b300")
    assert moe_kernel_path(b300, DEEP) == moe_kernel_path(b300, VLLM) == "trtllm_gen"
    assert padded_rows(b300, DEEP, {**moe, "pairs_per_rank": 8.0}) is None
    b200 = load_hardware("b200")
    assert float(padded_rows(b200, DEEP, {**moe, "pairs_per_rank": 128.0})) == 16384.0


@settings(max_examples=20, deadline=None)
@given(c=st.integers(1, 256), tp=st.sampled_from([2, 4]), ep=st.sampled_from([1, 2, 4]))
def test_padded_rows_never_speed_up_a_decode_step(c, tp, ep):
    """At decode batches the padded path computes at least the routed rows (every pair the
    kernel is fed plus each local expert's 127 spare rows, more than the busiest rank's routed
    rows), so its TPOT is never below the Triton path's, with expert parallelism too."""
    ep = min(ep, tp)
    a, b = _tpot(DEEP, tp=tp, ep=ep, concurrency=c), _tpot(VLLM, tp=tp, ep=ep, concurrency=c)
    assert a >= b * (1 - 1e-9)


def test_padded_work_does_not_grow_with_the_batch():
    """The padding is E_l x 127 rows at any batch, so from 4 to 20 clients the padded path's TPOT
    grows by less than the Triton path's, whose rows are the routed ones (AIConfigurator's vLLM
    0.12.0 rows of this checkpoint at TP 2 on H200 measure 51-59 ms from 4 to 20 clients)."""
    deep, tri = (
        _tpot(DEEP, tp=2, concurrency=np.array([4, 20])),
        _tpot(VLLM, tp=2, concurrency=np.array([4, 20])),
    )
    assert deep[1] - deep[0] < tri[1] - tri[0]


def test_where_the_path_does_not_run_nothing_changes():
    """Tensor parallel 8 (vLLM 0.12 runs Triton there), per-tensor FP8 experts, and a GPU
    DeepGEMM does not run on (B300, SM103) price as the engine's own path."""
    assert np.allclose(_tpot(DEEP, tp=8, concurrency=8), _tpot(VLLM, tp=8, concurrency=8))
    fp8 = parse_precision("fp8")
    assert np.allclose(
        _tpot(DEEP, prec=fp8, tp=2, concurrency=8), _tpot(VLLM, prec=fp8, tp=2, concurrency=8)
    )
    b300 = load_hardware("b300")
    assert np.allclose(
        _tpot(DEEP, hw=b300, tp=2, concurrency=8), _tpot(VLLM, hw=b300, tp=2, concurrency=8)
    )


def _row(framework: str, model: str = "Qwen3-235B-A22B-FP8", gpu: str = "H200 SXM"):
    return dict(
        source_id="aic_silicon_sample", model=model, gpu=gpu, num_gpus="2",
        precision="fp8/fp8/?", tp="2", pp="", ep="", dp="", framework=framework, isl="1000",
        osl="1000", concurrency_or_batch="16", metric="tpot_ms", value="52.0",
        notes="moe_tp=2; gemm_quant=fp8; moe_quant=fp8",
    )  # fmt: skip


def test_validate_prices_the_releases_that_ran_it():
    """vLLM 0.11.1-0.12.x rows of block-scaled FP8 experts on Hopper run the deepgemm path (their
    source: ``validate.recipes.VLLM_DEEPGEMM_MOE_RELEASES``); 0.11.0, 0.13+ and a dense model's
    rows do not, and the note says which."""
    for fw, runs in (("vllm 0.12.0", True), ("vllm 0.11.2", True), ("vllm 0.11.0", False),
                     ("vllm 0.16.0", False), ("sglang 0.5.6", False)):  # fmt: skip
        for gpu, arch_runs in (("H200 SXM", True), ("B200", True), ("B300", False)):
            m = map_row(0, _row(fw, gpu=gpu))
            assert (m.recipe == "vllm-deepgemm-moe") is (runs and arch_runs), (fw, gpu)
            assert ("DeepGEMM over padded rows" in m.note) is (runs and arch_runs), (fw, gpu)
    dense = map_row(0, {**_row("vllm 0.12.0", model="Qwen3-32B"), "notes": ""})
    assert dense.recipe == "" and "DeepGEMM" not in dense.note


def test_a_deployment_read_back_keeps_the_checkpoints_weights():
    """``estimate --from`` of a vLLM launch of Qwen/Qwen3-235B-A22B-FP8 prices the checkpoint's
    block-scaled weights, as the estimate that wrote it did (the named checkpoint's round trip)."""
    from llm_codesign.report.deploy_map import read_deployment

    dep = read_deployment(["vllm serve Qwen/Qwen3-235B-A22B-FP8 --tensor-parallel-size 4"], H200)
    assert dep.precision.startswith("fp8+fp8_block-w")
