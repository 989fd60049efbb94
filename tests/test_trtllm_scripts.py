"""InferenceX's TensorRT-LLM aggregated launch scripts of each model family
(``validate.trtllm_scripts``, read in SemiAnalysisAI/InferenceX with their history): what a
MiniMax-M2.5, Qwen3.5 or DeepSeek-R1 FP8 B200 row runs with, through the whole mapping
(``map_row``) and the engine the recipe gives (``recipe_behaviour``)."""

from llm_codesign import parse_precision
from llm_codesign.specs.engine import load_engine
from llm_codesign.validate import map_row
from llm_codesign.validate.recipes import recipe_behaviour

TRT = load_engine("trtllm")
ROW = {
    "source_id": "inferencex_api_fixture",
    "model": "minimax-m2.5",
    "gpu": "B200",
    "num_gpus": "4",
    "precision": "fp4/?/?",
    "tp": "4",
    "pp": "",
    "ep": "1",
    "dp": "",
    "framework": "trt (nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc18)",
    "isl": "1024",
    "osl": "1024",
    "concurrency_or_batch": "64",
    "metric": "tpot_ms",
    "value": "10",
    "notes": "aggregated single-node; spec_method=none; run date 2026-06-15",
}


def _engine(row):
    m = map_row(0, row)
    return m, recipe_behaviour(m.recipe, TRT)


def test_minimax_rows_run_with_its_script():
    """minimaxm2.5_fp4_b200_trt.sh: max_num_tokens 16384, the client count as batch limit, KV
    fraction 0.9 with an FP8 cache, the TRTLLM MoE backend with attention-DP too, TensorRT-LLM's
    default balance counts under attention-DP, MAX_UTILIZATION (KV admitted as it fills)."""
    m, eng = _engine(ROW)
    assert (eng.max_batch_size, eng.max_num_tokens, eng.memory_utilization) == (64, 16384, 0.9)
    assert eng.moe_kernels == "trtllm_gen" and eng.kv_admission == "mean"
    assert eng.adp_balance_timeout_iters == 0 and eng.batch_wait_timeout_iters == 0
    assert parse_precision(m.precision).kv_fp8 and "MiniMax recipe" in m.note
    assert "stream_interval 100 not priced" in m.note
    m, eng = _engine(dict(ROW, tp="8", ep="8", dp="true", concurrency_or_batch="256"))
    assert eng.moe_kernels == "trtllm_gen" and eng.max_batch_size == 256
    assert (eng.adp_balance_timeout_iters, eng.adp_balance_wait_iters) == (50, 10)
    # on Hopper no MiniMax script of its own: the DeepSeek-R1 scripts' limits
    m, eng = _engine(dict(ROW, gpu="H200", precision="fp8/?/?"))
    assert "MiniMax recipe" not in m.note and eng.kv_admission == TRT.kv_admission


def test_qwen35_rows_run_with_its_script():
    """qwen3.5_fp4_b200_trt.sh: without attention-DP the TRTLLM MoE and batch waiting (50
    iterations, 0.45 of the budget), batch 512 at TP 4; max_num_tokens 16384 at 1k/1k, 32768
    at 8k/1k; under attention-DP CUTEDSL (the engine's CUTLASS path), balance 500 / 10, batch
    128 at TP 8; KV 0.9 with an FP8 cache, MAX_UTILIZATION."""
    q = dict(ROW, model="qwen3.5-397b-a17b", ep="4", concurrency_or_batch="16")
    m, eng = _engine(q)
    assert (eng.max_batch_size, eng.max_num_tokens, eng.memory_utilization) == (512, 16384, 0.9)
    assert (eng.batch_wait_timeout_iters, eng.batch_wait_max_tokens_ratio) == (50, 0.45)
    assert eng.moe_kernels == "trtllm_gen" and eng.kv_admission == "mean"
    assert parse_precision(m.precision).kv_fp8 and "Qwen3.5 recipe" in m.note
    _, eng = _engine(dict(q, isl="8192"))
    assert eng.max_num_tokens == 32768
    _, eng = _engine(dict(q, tp="2", ep="2", num_gpus="2", concurrency_or_batch="64"))
    assert eng.max_batch_size == 32
    m, eng = _engine(dict(q, tp="8", ep="8", num_gpus="8", dp="true", concurrency_or_batch="512"))
    assert eng.max_batch_size == 128 and eng.moe_kernels == TRT.moe_kernels
    assert (eng.adp_balance_timeout_iters, eng.adp_balance_wait_iters) == (500, 10)
    assert eng.batch_wait_timeout_iters == 0 and "CUTEDSL (priced as CUTLASS)" in m.note


def test_qwen35_mtp_rows_run_with_its_mtp_script():
    """qwen3.5_fp4_b200_trt_mtp.sh: batch the clients (an eighth under attention-DP), KV by
    layout (0.75 at 1k, TP 2, EP 2), batch waiting at 0.0625 of the budget at a 1k input."""
    q = dict(ROW, model="qwen3.5-397b-a17b", tp="2", ep="2", num_gpus="2")
    q["notes"] = "aggregated single-node; spec_method=mtp; run date 2026-06-25"
    m, eng = _engine(q)
    assert m.spec_tokens > 0 and "(MTP)" in m.note
    assert (eng.max_batch_size, eng.memory_utilization) == (64, 0.75)
    assert (eng.batch_wait_timeout_iters, eng.batch_wait_max_tokens_ratio) == (50, 0.0625)
    _, eng = _engine(dict(q, tp="8", ep="8", num_gpus="8", dp="true", concurrency_or_batch="1024"))
    assert (eng.max_batch_size, eng.memory_utilization) == (128, 0.8)


def test_deepseek_fp8_b200_rows_wait_where_their_script_does():
    """dsr1_fp8_b200_trt.sh from 2026-01-29: batch waiting 40 / 0.8 at 1k/1k from 64 clients;
    not below 64 clients, not before that date, not on H200, not for FP4."""
    ds = dict(ROW, model="DeepSeek-R1-0528", precision="fp8/?/?", tp="8", ep="8", num_gpus="8")
    ds["notes"] = "aggregated single-node; spec_method=none; run date 2026-03-01"
    m, eng = _engine(ds)
    assert (eng.batch_wait_timeout_iters, eng.batch_wait_max_tokens_ratio) == (40, 0.8)
    assert "batch waiting (40 iterations, 0.8 of the budget" in m.note
    early = dict(ds, notes=ds["notes"].replace("2026-03-01", "2026-01-10"))
    for row in (dict(ds, concurrency_or_batch="32"), early, dict(ds, gpu="H200"),
                dict(ds, precision="fp4/?/?"), dict(ds, isl="8192")):  # fmt: skip
        assert _engine(row)[1].batch_wait_timeout_iters == 0


QWEN35_OPTIONS = """\
backend: pytorch
print_iter_log: true
enable_layerwise_nvtx_marker: false
disable_overlap_scheduler: false
enable_iter_perf_stats: true
enable_chunked_prefill: false
stream_interval: 20
num_postprocess_workers: 4
enable_attention_dp: false
scheduler_config:
    capacity_scheduler_policy: {policy}
    context_chunking_policy: FIRST_COME_FIRST_SERVED
kv_cache_config:
    free_gpu_memory_fraction: 0.9
    enable_block_reuse: false
    dtype: fp8
cuda_graph_config:
    enable_padding: true
    max_batch_size: 512
moe_config:
    backend: TRTLLM
    use_low_precision_moe_combine: true
batch_wait_timeout_iters: 50
batch_wait_max_tokens_ratio: 0.45
"""


def test_the_qwen35_scripts_options_file_reads_whole(tmp_path):
    """The options file qwen3.5_fp4_b200_trt.sh writes (without attention-DP) reads through
    ``estimate --from``: every key mapped or ignored by name with its reason, the engine the
    recipe gives for the same run (batch waiting, KV admitted as it fills, TRTLLM MoE, KV 0.9);
    a capacity policy the model does not price is refused, naming the allowed ones."""
    import pytest

    from llm_codesign import load_hardware
    from llm_codesign.errors import SpecError
    from llm_codesign.report import read_deployment

    opts = tmp_path / "qwen3.5-fp4-trt.yml"
    opts.write_text(QWEN35_OPTIONS.format(policy="MAX_UTILIZATION"))
    cmd = (
        "trtllm-serve nvidia/Qwen3.5-397B-A17B-NVFP4 --backend=pytorch --max_batch_size 512 "
        "--max_seq_len=8192 --max_num_tokens=16384 --tp_size=4 --ep_size=4 "
        f"--extra_llm_api_options={opts}"
    )
    hw = load_hardware("b200")
    dep = read_deployment([cmd], hw).to_dict()
    shown = " ".join(x["setting"] for x in dep["mapped"] + dep["ignored"])
    for key in ("enable_iter_perf_stats", "num_postprocess_workers", "context_chunking_policy",
                "use_low_precision_moe_combine", "capacity_scheduler_policy"):  # fmt: skip
        assert key in shown, key
    assert all(x["reason"] for x in dep["ignored"])
    eng = read_deployment([cmd], hw).engine_constants
    q = dict(ROW, model="qwen3.5-397b-a17b", ep="4", concurrency_or_batch="16")
    want = recipe_behaviour(map_row(0, q).recipe, TRT)
    for f in ("batch_wait_timeout_iters", "batch_wait_max_tokens_ratio", "kv_admission",
              "moe_kernels", "memory_utilization", "max_batch_size", "max_num_tokens"):  # fmt: skip
        assert getattr(eng, f) == getattr(want, f), f
    opts.write_text(QWEN35_OPTIONS.format(policy="STATIC_BATCH"))
    with pytest.raises(SpecError, match="GUARANTEED_NO_EVICT, MAX_UTILIZATION"):
        read_deployment([cmd], hw)


def test_gpt_oss_runs_before_the_search_space_take_their_scripts_plan():
    """Before 2025-11-03 the gpt-oss scripts chose EP and attention-DP themselves (the API's
    ep / dp are the defaults; data/validation/inferencex_trtllm_script_plans.csv): on B200 until
    2025-10-20 EP = TP from 16 clients at TP 4 or 8 (1k/1k, 1k/8k), attention-DP from 256; then
    only the latter; on H200 from 2025-09-28 EP = TP at every client count."""
    gpt = dict(ROW, model="gpt-oss-120b", tp="8", num_gpus="8")

    def plan(clients, date, **kw):
        notes = f"aggregated single-node; spec_method=none; run date {date}"
        m = map_row(0, dict(gpt, concurrency_or_batch=str(clients), notes=notes, **kw))
        return m.ep, m.attention_dp

    assert plan(64, "2025-10-01") == (8, False)
    assert plan(8, "2025-10-01") == (1, False)
    assert plan(64, "2025-10-01", tp="2", num_gpus="2") == (1, False)
    assert plan(256, "2025-10-01") == (8, True)
    assert plan(64, "2025-10-25") == (1, False) and plan(256, "2025-10-25") == (8, True)
    assert plan(4, "2025-10-01", gpu="H200") == (8, False)
    assert plan(64, "2025-12-01") == (1, False)  # the API's own plan from 2025-11-03


def test_llama_70b_runs_of_2025_wait_where_their_scripts_did():
    """The Llama-3.3-70B scripts of 2025-09-18 .. 2025-10-29 set batch waiting 20 / 0.9 at
    1k/1k below TP 8 (data/validation/inferencex_trtllm_batch_wait.csv); not at TP 8, not after
    the scripts' removal."""
    ll = dict(ROW, model="llama-3.3-70b", gpu="H200", precision="fp8/?/?", tp="4", ep="1")
    ll["notes"] = "aggregated single-node; spec_method=none; run date 2025-10-01"
    m, eng = _engine(ll)
    assert (eng.batch_wait_timeout_iters, eng.batch_wait_max_tokens_ratio) == (20, 0.9)
    # and their own limits: 16384 tokens, TensorRT-LLM's batch limit and KV fraction, FP8 KV
    assert (eng.max_num_tokens, eng.max_batch_size, eng.memory_utilization) == (
        16384, TRT.max_batch_size, 0.9,
    )  # fmt: skip
    assert parse_precision(m.precision).kv_fp8 and "Llama recipe" in m.note
    assert "batch waiting (20 iterations" in m.note
    early = dict(ll, notes=ll["notes"].replace("2025-10-01", "2025-09-16"))
    assert _engine(early)[1].max_num_tokens == 2048  # the max model length, ISL + OSL
    assert _engine(dict(ll, tp="8", num_gpus="8"))[1].batch_wait_timeout_iters == 0
    late = dict(ll, notes=ll["notes"].replace("2025-10-01", "2025-11-15"))
    assert _engine(late)[1].batch_wait_timeout_iters == 0
