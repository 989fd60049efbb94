"""Benchmark recipes (validate.recipes): the engine limits trtllm-bench chose for the published
max-throughput tables, checked by hand against the rule in TensorRT-LLM's bench tuning code,
and the offline rows priced with them."""

import csv
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from llm_codesign import load_engine, load_hardware, load_model, parse_precision, simulate
from llm_codesign.errors import SpecError
from llm_codesign.serving import evaluate, evaluate_disaggregated
from llm_codesign.specs.traffic import LengthDist, Traffic
from llm_codesign.validate import disaggregated_inputs, map_row, validate
from llm_codesign.validate.disagg_recipes import disagg_prefill_engine
from llm_codesign.validate.recipes import (
    DEFAULT_LIMITS,
    INFERENCEX_DISAGG_LIMITS_FILE,
    TRTLLM_BENCH,
    inferencex_trtllm_moe,
    inferencex_trtllm_recipe,
    recipe_behaviour,
    trtllm_bench_limits,
    trtllm_bench_recipe,
)
from llm_codesign.validate.tables import bundled_rows


def limits(model, gpu, prec, tp, isl, osl, pp=1, frac=0.95):
    return trtllm_bench_limits(
        load_model(model), load_hardware(gpu), parse_precision(prec), tp, pp, isl, osl, frac
    )


def test_deepseek_r1_on_h200_by_hand():
    # MLA priced as 128 cached heads of hidden / heads = 56 (the config states no head_dim):
    # 2 x 61 x 128 x 56 x 1 B (FP8 KV) = 874,496 B per token
    per_token = 2 * 61 * 128 * 56 / 2**30
    hw = load_hardware("h200-sxm")
    weights = load_model("deepseek-r1").total_params / 2**30  # FP8: 1 B per element
    cache = (hw.hbm_bytes / 2**30 * 8 - weights) * 0.95
    requests = cache / (per_token * 2048)
    assert 256 < requests < 384  # rounds up to a multiple of 128
    # tokens: requests x (1 + 1024 / 1024) < 4096 -> at least 2048; ISL + batch = 1408 < 2048
    assert limits("deepseek-r1", "h200-sxm", "fp8", 8, 1024, 1024) == (384, 2048)
    # the checkpoint's block-scaled FP8 is one of the rule's formats too (FP8 block scales)
    assert limits("deepseek-r1", "h200-sxm", "fp8+fp8_block-w", 8, 1024, 1024) == (384, 2048)


def test_published_worked_examples_at_the_default_fraction():
    # kv_cache_free_gpu_mem_fraction 0.90 (trtllm-bench's default)
    assert limits("qwen3-235b-a22b", "h200-sxm", "fp8", 8, 1000, 1000, frac=0.90) == (2304, 4608)
    # 4 KV heads below tp 8: every rank counted with one head (max(tp, kv_heads) = 8)
    per_token = 2 * 94 * 8 * 128 / 2**30
    w = load_model("qwen3-235b-a22b").total_params / 2**30
    req = (load_hardware("h200-sxm").hbm_bytes / 2**30 * 8 - w) * 0.9 / (per_token * 2000)
    assert 256 * math.ceil(req / 256) == 2304
    # long prompts: chunked prefill off, so the budget holds a whole prompt plus the batch
    bs, tok = limits("qwen3-235b-a22b", "h200-sxm", "fp8", 8, 5000, 500, frac=0.90)
    assert bs == 896 and tok >= 5000 + bs and tok % 1024 == 0


def test_rounding_and_caps():
    bs, tok = limits("llama-3.1-8b", "h200-sxm", "fp8", 1, 128, 128)
    assert (bs, tok) == (4096, 8192)  # the request cap: 4096, tokens 2 x 4096
    bs, tok = limits("llama-3.3-70b", "h200-sxm", "fp8", 1, 20000, 2000)
    assert bs == 64 and tok == 20000 + 64  # the batch floor of 64
    # pipeline stages divide the batch
    assert limits("llama-3.1-8b", "h200-sxm", "fp8", 1, 128, 128, pp=2)[0] == 2048


def test_formats_outside_the_rule_keep_the_defaults():
    assert limits("gpt-oss-120b", "h200-sxm", "mxfp4-a16+fp8-kv", 1, 1024, 1024) == DEFAULT_LIMITS
    # NVFP4 checkpoints pack two values per byte: 9/16 of the parameters at 0.5 B
    small = limits("deepseek-r1", "b200", "nvfp4", 4, 1024, 1024)
    assert small == (384, 2048)


def _write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


ROW = dict(
    source_id="trtllm_perf_devguide",
    model="DeepSeek-R1-0528",
    gpu="H200 SXM 141GB",
    num_gpus="8",
    precision="fp8/?/fp8",
    tp="8",
    pp="1",
    ep="8",
    dp="attn-DP8",
    framework="TensorRT-LLM (PyTorch backend, trtllm-bench throughput)",
    isl="1024",
    osl="1024",
    concurrency_or_batch="max-throughput offline (all 3000 requests issued at once)",
    metric="output_tok_s_per_gpu",
    value="1620",
    notes="",
)


def test_offline_trtllm_bench_row_is_priced_with_the_recipe(tmp_path):
    m = map_row(0, ROW)
    # the developer guide's DeepSeek R1 llm_options.yml sets the attention-DP context balance
    # (attention_dp_config: batching_wait_iters 0, enable_balance true, timeout_iters 60)
    assert (m.recipe, m.requests) == (f"{TRTLLM_BENCH}:balance=60:wait=0", 3000)
    assert "timeout_iters 60" in m.note
    # another table of the same benchmark, or another model of it: no options beyond the limits
    assert map_row(0, dict(ROW, source_id="trtllm_perf_v1.0")).recipe == TRTLLM_BENCH
    assert map_row(0, dict(ROW, model="Qwen3-235B-A22B")).recipe == TRTLLM_BENCH
    # limits stated in the row, or another benchmark: the engine's own limits
    assert map_row(0, dict(ROW, notes="max_batch_size 896")).recipe == ""
    assert map_row(0, dict(ROW, framework="vllm 0.11")).recipe == ""
    rep = validate(_write(tmp_path / "r.csv", [ROW]))
    got = rep.rows[0]["predicted"]
    eng = replace(
        load_engine("trtllm"),
        max_batch_size=384,
        max_num_tokens=2048,
        adp_balance_timeout_iters=60,
        adp_balance_wait_iters=0,
    )
    want = evaluate(
        load_model("deepseek-r1"),
        load_hardware("h200-sxm"),
        parse_precision("fp8+fp8_block-w"),  # its checkpoint's FP8 (validate.mapping)
        eng,
        tp=8,
        ep=8,
        attention_dp=True,
        isl=1024,
        osl=1024,
        concurrency=3000,
        benchmark_burst=True,
    ).output_tok_s_per_gpu
    assert got == pytest.approx(float(want), rel=1e-9)
    assert "max_batch_size 384" in rep.rows[0]["note"]


IX_ROW = dict(
    ROW,
    source_id="inferencex_api_fixture",
    gpu="H200",
    precision="fp8/?/fp8",
    dp="",
    ep="1",
    framework="sglang (lmsysorg/sglang:v0.5.12)",
    concurrency_or_batch="16",
    metric="ttft_ms",
    value="300",
    notes="aggregated single-node; run date 2026-05-20",
)


def test_inferencex_client_lengths_and_start_up_wave(tmp_path):
    """InferenceX's client (validate.recipes): lengths drawn uniformly on the integers
    floor(0.8 L) .. L, so mean (819 + 1024) / 2 = 921.5 for 1,024 and (6553 + 8192) / 2 =
    7372.5 for 8,192; 10 x C requests at concurrency C, the first round in the start-up wave
    (share 1/10). The row keeps its nominal lengths; the prediction uses the means."""
    m = map_row(0, IX_ROW)
    assert (m.isl, m.osl) == (1024, 1024)
    assert (m.served_isl, m.served_osl) == (921.5, 921.5)
    assert m.requests == 160 and m.burst_share == pytest.approx(0.1)
    long = map_row(0, dict(IX_ROW, isl="8192"))
    assert long.served_isl == 7372.5
    # another source keeps its nominal lengths and the engine's own start-up share
    other = map_row(0, dict(IX_ROW, source_id="aic_silicon_sample", framework="sglang 0.5.9"))
    assert (other.served_isl, other.burst_share) == (1024.0, -1.0)
    # an estimate's analytic closed loop takes that share: serving.evaluate at the mean lengths
    # with its script's chunked-prefill budget and memory fraction (inferencex_kv.csv)
    script = dict(max_num_tokens=32768, memory_utilization=0.82)
    eng = load_engine("sglang").with_overrides(ttft_burst=0.1, **script)
    model, hw = load_model("deepseek-r1"), load_hardware("h200-sxm")
    prec = parse_precision("fp8+fp8_block-w")  # the row's FP8 KV: no BF16 default
    steady = evaluate(
        model, hw, prec, eng, tp=8, isl=921.5, osl=921.5, concurrency=16, benchmark_burst=True
    ).ttft_s
    # validate runs the client itself: 16 clients started together, 160 requests of lengths
    # drawn on 819 .. 1024, every one counted (the simulator, seed 0)
    rep = validate(_write(tmp_path / "ix.csv", [IX_ROW]))
    got = rep.rows[0]["predicted"]
    lengths = LengthDist("uniform", 819.0, 1024.0)
    traffic = Traffic(clients=16, num_requests=160, isl=lengths, osl=lengths,
                      clients_start="together")  # fmt: skip
    run = simulate(model, hw, prec, eng, traffic, tp=8)
    assert got == pytest.approx(float(np.mean(run.ttft_s)) * 1e3, rel=1e-9)
    assert "InferenceX client" in rep.rows[0]["note"] and "160 requests" in rep.rows[0]["note"]
    # the waves of 16 prompts the start sends cost more than the share's mean wait
    assert got > float(steady) * 1e3


def test_inferencex_sglang_rows_take_their_launch_scripts_kv_cache_by_run_date():
    """An InferenceX aggregated SGLang row that leaves its KV format unstated takes the one its
    launch script set in the version in force on its run date (data/validation/
    inferencex_kv.csv, from the scripts' history): the H200 DeepSeek-R1 scripts never
    pass --kv-cache-dtype (auto: BF16 for DeepSeek-R1's FP8 checkpoint), the B200 ones pass
    fp8_e4m3, and MI355X's FP8 script passes it from its version of 2026-03-05 on."""
    row = dict(IX_ROW, precision="fp8/?/?", notes="spec_method=none; run date 2026-05-20")
    h200 = map_row(0, row)
    assert h200.precision.endswith("+bf16-kv") and "no --kv-cache-dtype (auto)" in h200.note
    b200 = map_row(0, dict(row, gpu="B200"))
    assert parse_precision(b200.precision).kv_fp8 and "passed --kv-cache-dtype fp8;" in b200.note
    old = map_row(0, dict(row, gpu="MI355X", notes="spec_method=none; run date 2026-02-01"))
    new = map_row(0, dict(row, gpu="MI355X", notes="spec_method=none; run date 2026-04-01"))
    assert old.precision.endswith("+bf16-kv") and parse_precision(new.precision).kv_fp8
    assert "2026-03-05" in new.note
    # a run before the table's first version of its script, or without a run date, keeps the
    # BF16 default with its general note; a KV format the row states is kept
    early = map_row(0, dict(row, gpu="B200", notes="spec_method=none; run date 2025-08-01"))
    assert early.precision.endswith("+bf16-kv") and "does not cover" in early.note
    stated = map_row(0, dict(row, gpu="H200", precision="fp8/?/fp8"))
    assert parse_precision(stated.precision).kv_fp8
    # vLLM's scripts too: MiniMax-M2.5 FP8 on H100 passes none (auto: BF16), on B200 fp8 from
    # its version of 2026-04-03; a vLLM row the table does not cover keeps its preset's cache
    vllm = dict(row, model="MiniMax-M2.5", framework="vllm (vllm/vllm-openai:v0.18.0)")
    h100 = map_row(0, dict(vllm, gpu="H100"))
    assert h100.precision.endswith("+bf16-kv") and "no --kv-cache-dtype (auto)" in h100.note
    b200 = map_row(0, dict(vllm, gpu="B200"))
    assert parse_precision(b200.precision).kv_fp8 and "2026-04-03" in b200.note
    early = map_row(0, dict(vllm, gpu="B200", notes="spec_method=none; run date 2025-08-01"))
    assert parse_precision(early.precision).kv_fp8 and "KV unstated" not in early.note
    # ATOM's runs are priced with vLLM's constants but are not vLLM's scripts: their preset
    atom = map_row(0, dict(vllm, gpu="H100", framework="atom (rocm/atom:rocm7.1.1)"))
    assert atom.engine == "vllm" and "KV unstated" not in atom.note
    # a version committed on the run date is in force that day (MI355X FP8: 2026-03-05)
    day = map_row(0, dict(row, gpu="MI355X", notes="spec_method=none; run date 2026-03-05"))
    before = map_row(0, dict(row, gpu="MI355X", notes="spec_method=none; run date 2026-03-04"))
    assert parse_precision(day.precision).kv_fp8 and before.precision.endswith("+bf16-kv")
    # an MTP row takes the draft length its script proposed: 2 on B200, 3 on MI355X
    mtp = dict(row, notes="spec_method=mtp; run date 2026-06-01")
    assert map_row(0, dict(mtp, gpu="B200")).spec_tokens == 2
    amd = map_row(0, dict(mtp, gpu="MI355X"))
    assert amd.spec_tokens == 3 and "--speculative-num-steps 3" in amd.note
    assert (
        map_row(0, dict(mtp, gpu="MI355X", notes=mtp["notes"] + "; spec_tokens=1")).spec_tokens == 1
    )


def test_aic_harness_of_a_row_and_its_start_up_share():
    """AIConfigurator's row ids name their harness (validate.campaigns.AIC_HARNESSES, checked
    against the silicon_data_source of every id in AIConfigurator's silicon_sample.csv): the CI
    database dump ends in ``_cfg<n>``, the dated campaigns start with the date, every other id
    is the gap-analysis harness. A row at a client concurrency takes its (harness, engine)
    start-up share; other sources keep the engine's ``ttft_burst``."""
    from llm_codesign.validate.campaigns import AIC_HARNESS_SHARE, aic_harness

    db = "id=minimaxm2_5_b300_vllm_fp8_agg_8192x1024_c128_cfg733; moe_tp=4"
    dated = "id=2026_03_25_glm_5_h200_sxm_sglang_fp8_agg_1024x1024_c4_tp8_0_ep1_0_500"
    gap = "id=qwen_qwen3_32b_qwen_qwen3_32b_h100_sxm_sglang_agg_1024x128_c128_tp2; x"
    assert aic_harness("aic_silicon_sample", db) == "aic-db-dump"
    assert aic_harness("aic_silicon_sample", dated) == "aic-dated"
    assert aic_harness("aic_silicon_sample", gap) == "aic-gap-analysis"
    assert aic_harness("inferencex_api_fixture", dated) == ""
    from llm_codesign.validate.campaigns import aic_campaign

    # the campaign: the id less its lengths-and-concurrency tail (also where the concurrency or
    # the rest of the tail is missing)
    for tail in ("_1024x1024_c4_tp8_0_ep1_0_500", "_4000x1000_c_tp4_epnone_1", "_128x128_c8"):
        assert (
            aic_campaign("aic_silicon_sample", f"id=2026_03_25_glm_5{tail}") == "2026_03_25_glm_5"
        )
    row = dict(IX_ROW, source_id="aic_silicon_sample", framework="sglang 0.5.9", notes=dated)
    m = map_row(0, row)
    assert m.burst_share == AIC_HARNESS_SHARE[("aic-dated", "sglang")]
    assert 0.0 <= m.burst_share <= 1.0 and "aic-dated harness" in m.note
    assert map_row(0, dict(row, source_id="trtllm_perf_devguide")).burst_share == -1.0


def test_client_conventions_keep_to_closed_loop_rows_and_real_ids():
    """A request-rate INF row (all requests at once) is not a client concurrency: InferenceX's
    ten rounds and the start-up share do not apply, and its own request count stands. A row id
    is read only from an ``id=`` field of its own (not ``run_id=``), and a blank id names no
    harness. A percentile row of InferenceX's client runs the simulator on the lengths it drew
    (uniform on floor(0.8 L) .. L), not the nominal ones."""
    from llm_codesign.validate.campaigns import aic_harness
    from llm_codesign.validate.simulated import traffic_of

    inf = map_row(
        0, dict(IX_ROW, concurrency_or_batch="request rate INF", notes="640 requests at once")
    )
    assert (inf.requests, inf.burst_share, inf.mean_isl) == (640, -1.0, 0.0)
    assert aic_harness("aic_silicon_sample", "id= ; moe_tp=1") == ""
    assert aic_harness("aic_silicon_sample", "run_id=2024_01_01_x; id=abc_cfg3") == "aic-db-dump"
    p99 = map_row(0, dict(IX_ROW, metric="ttft_ms_p99"))
    traffic, _ = traffic_of(p99)
    assert (traffic.isl.kind, traffic.isl.a, traffic.isl.b) == ("uniform", 819.0, 1024.0)
    assert traffic.isl.mean == p99.served_isl == 921.5


def test_trtllm_bench_options_file_and_recipe_strings():
    # every listed model is a bundled one and every listed table is a trtllm-bench source
    from importlib import resources

    path = resources.files("llm_codesign") / "data" / "validation" / "trtllm_bench_options.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        listed = list(csv.DictReader(fh))
    assert listed
    for r in listed:
        assert load_model(r["model"]).id == r["model"]  # bundled ids, as rows map to them
        assert r["source_id"].startswith("trtllm_perf") and "llm_options.yml" in r["source"]
        recipe, note = trtllm_bench_recipe(r["source_id"], r["model"])
        assert recipe.startswith(f"{TRTLLM_BENCH}:balance=") and note
    assert trtllm_bench_recipe("trtllm_perf_v1.0", "deepseek-r1") == (TRTLLM_BENCH, "")
    base = load_engine("trtllm")
    assert recipe_behaviour(TRTLLM_BENCH, base) is base
    eng = recipe_behaviour(f"{TRTLLM_BENCH}:balance=60:wait=2", base)
    assert (eng.adp_balance_timeout_iters, eng.adp_balance_wait_iters) == (60, 2)
    for bad in (
        "balance=60",
        "balance=x:wait=0",
        "balance=60:wait=0:tokens=1",
        "balance=60:wait=0:balance=7",  # a repeated key
        "balance=60::wait=0",  # an empty field
        "balance=60:wait=0:",
        "balance=\u00b2:wait=0",  # a digit Python's isdigit() takes and int() refuses
    ):
        with pytest.raises(SpecError, match="balance= and wait="):
            recipe_behaviour(f"{TRTLLM_BENCH}:{bad}", base)


def _disagg_limits():
    return bundled_rows(INFERENCEX_DISAGG_LIMITS_FILE)


def test_inferencex_disagg_limits_agree_with_their_recipe_names():
    # the srt-slurm recipe names state the pools and the decode batch (TensorRT-LLM:
    # ctx<P>_gen<D>_<tep|dep><tp>_batch<B>_eplb0_mtp<k>; SGLang: <P>p<D>d, "dep" for a decode
    # pool with attention-DP): for the Hopper runs of the calibration set, the table's
    # transcription of each file and of the master config's pools must say the same (a few
    # Blackwell files disagree with their own names; the table keeps what the files set)
    rows = [r for r in _disagg_limits() if r["gpu"] in ("h100", "h200")]
    assert len(_disagg_limits()) > 500 and len(rows) >= 200
    # every speculative run's recipe (or settings) states its decode pool's drafts, no other does
    assert all((r["spec"] == "mtp") == bool(r["decode_draft_tokens"]) for r in _disagg_limits())
    trt = re.compile(r"ctx(\d+)_gen(\d+)_(tep|dep)(\d+)_batch(\d+)_eplb0_mtp(\d+)\.yaml$")
    sgl = re.compile(r"(\d+)p(\d+)d[-.]")
    for r in rows:
        name = r["config_file"].rsplit("/", 1)[-1]
        assert r["model"] == "deepseek-r1" and r["precision"] == "fp8"
        if r["framework"] == "dynamo-trt":
            ctx, gen, kind, tp, batch, mtp = trt.search(name).groups()
            assert int(r["decode_max_batch"]) == int(batch)
            assert (r["decode_adp"] == "True") == (kind == "dep")
            assert int(r["decode_tp"]) == int(tp)
            assert (r["spec"] == "mtp") == (int(mtp) > 0)
            # the decode pool's num_nextn_predict_layers, read from the file: its name's k
            assert int(r["decode_draft_tokens"] or 0) == int(mtp)
        else:
            assert r["framework"] == "dynamo-sglang"
            ctx, gen = sgl.search(name).groups()
            assert (r["decode_adp"] == "True") == ("-dep" in name)
            assert (r["spec"] == "mtp") == ("-mtp" in name or "/mtp/" in r["config_file"])
        assert (int(r["prefill_workers"]), int(r["decode_workers"])) == (int(ctx), int(gen))
        assert r["first_seen"] <= r["last_seen"]


def test_h100_trtllm_disagg_runs_offer_a_fifth_more_clients_than_decode_slots():
    # the convention of the H100 TensorRT-LLM recipes (validate.recipes): each decode worker is
    # offered ceil(1.2 x its slots) clients, slots = max_batch_size x scheduling ranks
    rows = [r for r in _disagg_limits() if (r["gpu"], r["framework"]) == ("h100", "dynamo-trt")]
    assert len(rows) >= 20
    for r in rows:
        ranks = int(r["decode_tp"]) if r["decode_adp"] == "True" else 1
        slots = int(r["decode_max_batch"]) * ranks
        assert int(r["concurrency"]) == int(r["decode_workers"]) * math.ceil(1.2 * slots - 1e-9)


def _ix_disagg_row(**kw):
    # InferenceX's H100 TensorRT-LLM run of 6 clients on 3 decode workers (a fixture row)
    return (
        dict(
            ROW,
            source_id="inferencex_api_fixture",
            gpu="H100",
            num_gpus="64",
            precision="fp8/?/?",
            tp="P:tp16/D:tp16",
            pp="",
            ep="P:ep16/D:ep16",
            dp="P:dpattn=True/D:dpattn=False",
            framework="dynamo-trt (nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post3)",
            concurrency_or_batch="6",
            metric="tpot_ms",
            notes="disaggregated: prefill_gpus=16 (workers=1), decode_gpus=48 (workers=3), "
            "is_multinode=True; spec_method=none; run date 2026-02-08",
        )
        | kw
    )


def test_inferencex_disaggregated_row_runs_its_recipes_pool_limits():
    m = map_row(0, _ix_disagg_row())
    # the recipe's prefill pool sets TRTLLM_FORCE_ALLTOALL_METHOD: DeepEP (its normal kernels,
    # family 4 of DISAGG_RECIPE_A2A); its decode pool leaves TensorRT-LLM its own choice
    assert m.recipe == "inferencex-disagg:decode=1:prefill=2:tokens=2048:pa2a=4"
    assert "ctx1_gen3_tep16_batch1_eplb0_mtp0.yaml" in m.note
    eng = recipe_behaviour(m.recipe, load_engine("trtllm"))
    assert (eng.max_batch_size, eng.max_num_tokens) == (1, 2048)
    assert eng.moe_comm == "auto"
    assert disagg_prefill_engine(m.recipe, eng).moe_comm == "deepep_normal"
    # the prefill worker's 16 attention-DP ranks hold 2 prompts each (2048 // 921.5 mean
    # tokens, and the recipe's max_batch_size 2): 32, at most the 6 outstanding prompts
    assert disaggregated_inputs(m, eng)["prefill_batch"] == 6
    # pools or a concurrency the runs did not use: the engine's own limits, said so
    other = map_row(0, _ix_disagg_row(concurrency_or_batch="7"))
    assert other.recipe == "" and "no InferenceX recipe" in other.note
    with pytest.raises(SpecError, match="inferencex_disagg_recipe"):
        recipe_behaviour("inferencex-disagg:decode=1:prefill=2", load_engine("trtllm"))


def test_inferencex_disaggregated_mtp_row_drafts_as_its_recipe():
    # the H100 run of 615 clients on one DEP16 decode worker: its recipe
    # (ctx1_gen1_dep16_batch32_eplb0_mtp2.yaml) sets num_nextn_predict_layers 2 on the decode
    # pool, not the 1 of TensorRT-LLM's aggregated attention-DP script (MTP_DRAFT_TOKENS)
    row = _ix_disagg_row(
        num_gpus="32", dp="P:dpattn=True/D:dpattn=True", concurrency_or_batch="615",
        notes="disaggregated: prefill_gpus=16 (workers=1), decode_gpus=16 (workers=1), "
        "is_multinode=True; spec_method=mtp; run date 2026-02-08",
    )  # fmt: skip
    m = map_row(0, row)
    assert m.spec_tokens == 2 and "ctx1_gen1_dep16_batch32_eplb0_mtp2.yaml" in m.note
    assert "MTP: 2 draft tokens (the decode pool's, recipe" in m.note
    # a row whose notes state the draft length keeps it
    said = map_row(0, row | {"notes": row["notes"] + "; num_nextn_predict_layers=1"})
    assert said.spec_tokens == 1


def test_vllm_data_parallel_pools_as_the_master_config_states_them():
    # InferenceX's master config states a vLLM DEP8 pool as tp 1, ep 8 with attention-DP
    # (--data-parallel-size 8 --tensor-parallel-size 1): 8 GPUs, the plan's tp 8 under
    # attention-DP, keyed alike in the recipes table (its B200 DeepSeek-V4-Pro 1P:1D run at 512)
    row = _ix_disagg_row(
        model="DeepSeek-V4-Pro", gpu="B200", num_gpus="16", precision="fp4/?/?",
        tp="P:tp1/D:tp1", ep="P:ep8/D:ep8", dp="P:dpattn=True/D:dpattn=True",
        framework="dynamo-vllm (image)", isl="8192", osl="1024", concurrency_or_batch="512",
        notes="disaggregated: prefill_gpus=8 (workers=1), decode_gpus=8 (workers=1), "
        "is_multinode=False; spec_method=mtp; run date 2026-08-10",
    )  # fmt: skip
    m = map_row(0, row)
    assert not isinstance(m, str), m
    assert (m.tp, m.ep, m.attention_dp) == (8, 8, True)
    assert "disagg-b200-1p1d-dep8-dep8-mtp.yaml" in m.note and m.spec_tokens == 3


def test_decode_batch_limit_makes_clients_wait_a_whole_decode():
    # 3 decode workers of one sequence each (max_batch_size 1), 6 closed-loop clients: 3
    # decode while 3 wait. Decode-bound, requests/s X = 3 / ((OSL - 1) TPOT), and by Little's
    # law each cycle lasts 6 / X = 2 (OSL - 1) TPOT, so TTFT = (OSL - 1) TPOT: a client waits
    # for another client's whole decode
    plan = {"tp": 8, "pp": 1, "ep": 1, "cp": 1, "attention_dp": False}
    eng = replace(load_engine("trtllm"), max_batch_size=1)
    r = evaluate_disaggregated(
        load_model("llama-3.1-70b"), load_hardware("h200-sxm"), parse_precision("fp8"), eng,
        prefill_plan=plan, decode_plan=plan, prefill_count=1, decode_count=3, prefill_batch=1,
        concurrency=2, isl=1024, osl=1024,
    )  # fmt: skip
    decode_s = 1023 * float(r.tpot_s)
    assert float(r.running_concurrency) == 1.0
    assert float(r.requests_per_s) == pytest.approx(3 / decode_s, rel=1e-9)
    assert float(r.ttft_s) == pytest.approx(decode_s, rel=1e-6)
    # the same pool without the limit runs both clients of each worker: no wait beyond prefill
    free = evaluate_disaggregated(
        load_model("llama-3.1-70b"), load_hardware("h200-sxm"), parse_precision("fp8"),
        load_engine("trtllm"), prefill_plan=plan, decode_plan=plan, prefill_count=1,
        decode_count=3, prefill_batch=1, concurrency=2, isl=1024, osl=1024,
    )  # fmt: skip
    assert float(free.running_concurrency) == 2.0 and float(free.ttft_s) < 0.1 * decode_s


def test_inferencex_trtllm_blackwell_runs_take_the_trtllm_moe_backend():
    """InferenceX's TensorRT-LLM DeepSeek-R1 scripts on B200/B300 set moe_config.backend TRTLLM
    without attention-DP (FP4 from 2025-09-17; FP8 from 2026-01-29, its MTP form from
    2026-02-05; DEEPGEMM before), which the recipe prices as the TRTLLM-Gen path; Hopper runs,
    attention-DP runs and older FP8 runs keep the engine's CUTLASS runner."""
    b200, b300, h200 = (load_hardware(g) for g in ("b200", "b300", "h200-sxm"))
    assert inferencex_trtllm_moe(b200, "nvfp4", False, 0, "2026-05-01")
    assert inferencex_trtllm_moe(b300, "nvfp4", False, 3, "")  # undated: the current scripts
    assert not inferencex_trtllm_moe(b200, "nvfp4", True, 0, "2026-05-01")
    assert not inferencex_trtllm_moe(b200, "nvfp4", False, 0, "2025-09-16")
    assert not inferencex_trtllm_moe(h200, "fp8_block", False, 0, "2026-05-01")
    assert not inferencex_trtllm_moe(b200, "fp8_block", False, 0, "2026-01-28")
    assert inferencex_trtllm_moe(b200, "fp8_block", False, 0, "2026-01-29")
    assert not inferencex_trtllm_moe(b200, "fp8_block", False, 1, "2026-02-04")
    assert inferencex_trtllm_moe(b200, "fp8_block", False, 1, "2026-02-05")
    recipe, note = inferencex_trtllm_recipe(16, 1024, 8, False, 0, "2026-05-01", "B200", True)
    assert recipe.endswith(":moe=1") and "MoE backend TRTLLM" in note
    base = load_engine("trtllm")
    assert recipe_behaviour(recipe, base).moe_kernels == "trtllm_gen"
    plain, _ = inferencex_trtllm_recipe(16, 1024, 8, False, 0, "2026-05-01", "B200")
    assert recipe_behaviour(plain, base).moe_kernels == "cutlass"


def test_inferencex_disaggregated_row_runs_its_recipes_moe_dispatch_per_pool():
    """InferenceX's GB200 SGLang mid-curve recipe (recipes/gb200-fp4/1k1k/mid-curve.yaml)
    decodes on 32 attention-DP ranks with DeepEP's low-latency kernels (moe-a2a-backend deepep,
    deepep-mode low_latency) and prefills on 4-rank pools that leave SGLang's all-gather on:
    each pool's engine prices its own family."""
    row = _ix_disagg_row(
        gpu="GB200", num_gpus="48", precision="fp4/?/?", tp="P:tp4/D:tp32", ep="P:ep4/D:ep32",
        dp="P:dpattn=True/D:dpattn=True", concurrency_or_batch="2048",
        framework="dynamo-sglang (lmsysorg/sglang:v0.5.8)",
        notes="disaggregated: prefill_gpus=16 (workers=4), decode_gpus=32 (workers=1), "
        "is_multinode=True; spec_method=none; run date 2026-03-01",
    )  # fmt: skip
    m = map_row(0, row)
    assert "mid-curve.yaml" in m.note and "decode pool MoE dispatch deepep_low_latency" in m.note
    eng = recipe_behaviour(m.recipe, load_engine("sglang"))
    assert eng.moe_comm == "deepep_low_latency"
    assert disagg_prefill_engine(m.recipe, eng).moe_comm == "allgather_reducescatter"
    with pytest.raises(SpecError, match="a2a"):
        recipe_behaviour("inferencex-disagg:decode=1:prefill=2:tokens=8:a2a=9", eng)


def test_inferencex_sglang_rows_take_their_launch_scripts_memory_fraction_and_chunk():
    """An InferenceX aggregated SGLang row is priced at the --mem-fraction-static and
    --chunked-prefill-size its launch script passed in the version in force on its run date
    (inferencex_kv.csv's ``mem``, ``chunk``): the H200 DeepSeek-R1 scripts pass 0.82 and 32,768
    from their version of 2025-09-19, neither before (SGLang's own memory default then:
    serving.memory.sglang_memory_fraction; its 8,192-token chunk on the H200); the B200 FP8
    script sets both by TP (0.82 and 32,768 at TP 8, 0.95 and 8,192 at TP 4); the B200 FP4
    script of 2026-06-23 passes 16,384 tokens, 32,768 (the server's, 4,096 a rank) with
    attention-DP."""
    from llm_codesign.validate.recipes import recipe_behaviour

    eng = load_engine("sglang")
    row = dict(IX_ROW, precision="fp8/?/?", notes="spec_method=none; run date 2026-05-20")
    h200 = recipe_behaviour(map_row(0, row).recipe, eng)
    assert (h200.memory_utilization, h200.max_num_tokens) == (0.82, 32768)
    assert "passed --mem-fraction-static 0.82" in map_row(0, row).note
    early = map_row(0, dict(row, notes="spec_method=none; run date 2025-09-16"))
    assert recipe_behaviour(early.recipe, eng) == eng  # SGLang's defaults
    b200 = dict(row, gpu="B200", notes="spec_method=none; run date 2026-06-01")
    for tp, want in (("8", (0.82, 32768)), ("4", (0.95, 8192))):
        got = recipe_behaviour(map_row(0, dict(b200, tp=tp, num_gpus=tp, isl="8192")).recipe, eng)
        assert (got.memory_utilization, got.max_num_tokens) == want
    fp4 = dict(b200, precision="fp4/?/?", ep="8", notes="spec_method=none; run date 2026-06-24")
    for dp, chunk in (("", 16384), ("DEP8", 32768)):
        got = recipe_behaviour(map_row(0, dict(fp4, dp=dp)).recipe, eng)
        assert (got.memory_utilization, got.max_num_tokens) == (0.85, chunk)


def test_inferencex_vllm_rows_take_their_launch_scripts_memory_and_token_budget():
    """An InferenceX aggregated vLLM row is priced at the --gpu-memory-utilization and
    --max-num-batched-tokens its launch script passed (inferencex_kv.csv): gpt-oss on MI355X
    0.95 (2025-09-21 on); MiniMax-M2.5 FP8 on B200 0.90 and $((ISL * 2)) from 2026-04-03 (2,048
    tokens at 1k, 16,384 at 8k), 0.95 and vLLM's own budget before."""
    from llm_codesign.validate.recipes import recipe_behaviour

    vllm = load_engine("vllm")
    row = dict(IX_ROW, framework="vllm (vllm/vllm-openai:v0.11.2)", tp="8", num_gpus="8")
    mi355 = dict(row, model="gpt-oss-120b", gpu="MI355X", precision="fp4/?/?")
    got = map_row(0, dict(mi355, notes="spec_method=none; run date 2025-10-01"))
    assert got.recipe == "inferencex-vllm:mem=950" and "--gpu-memory-utilization 0.95" in got.note
    assert recipe_behaviour(got.recipe, vllm).memory_utilization == 0.95
    b200 = dict(row, model="MiniMax-M2.5", gpu="B200", precision="fp8/?/?")
    cases = (("1024", "2026-04-10", (0.90, 2048)), ("8192", "2026-04-10", (0.90, 16384)),
             ("1024", "2026-03-20", (0.95, 0)))  # (0: vLLM's own for the GPU)  # fmt: skip
    for isl, date, want in cases:
        m = map_row(0, dict(b200, isl=isl, notes=f"spec_method=none; run date {date}"))
        got = recipe_behaviour(m.recipe, vllm)
        assert (got.memory_utilization, got.max_num_tokens) == want
    assert "--max-num-batched-tokens 2048 (= ISL*2)" in map_row(0, dict(b200, notes=
        "spec_method=none; run date 2026-04-10")).note  # fmt: skip


def test_the_script_walker_reads_a_memory_fraction_per_tp():
    """``benchmarks/inferencex_kv.py`` reads --mem-fraction-static as a number, through its
    variable's assignment, or per TP where each assignment sits under an ``if [[ $TP -eq N ]]``
    test; an assignment it cannot place leaves the value unread ("")."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "inferencex_kv.py"
    spec = importlib.util.spec_from_file_location("inferencex_kv", path)
    walker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(walker)
    read = walker.script_value
    assert read("python3 -m sglang.launch_server --mem-fraction-static 0.85 --tp 8") == "0.85"
    assert read("M=${M:-0.8}\nsglang.launch_server --mem-fraction-static $M") == "0.8"
    by_tp = (
        "if [[ $TP -eq 8 ]]; then\n  if [[ $ISL -ne 1024 ]]; then\n    exit 1\n  fi\n"
        "  MEM=0.82\nelif [[ $TP -eq 4 ]]; then\n  MEM=0.95\nfi\n"
        "sglang.launch_server --mem-fraction-static $MEM"
    )
    assert read(by_tp) == "tp8=0.82 tp4=0.95"
    assert read(by_tp.replace("elif [[ $TP -eq 4 ]]; then", "else")) == ""
    assert read("sglang.launch_server --tp 8") == ""
    chunk = read(
        by_tp.replace("--mem-fraction-static", "--chunked-prefill-size"),
        walker.SGLANG_FLAGS["chunk"],
    )
    assert chunk == "tp8=0.82 tp4=0.95"  # the same reading, another flag
    by_adp = (  # InferenceX's DeepSeek-R1 FP4 B200 SGLang script of 2026-06-23
        'CHUNKED_PREFILL_SIZE=16384\nif [[ "$DP_ATTENTION" == "true" ]]; then\n'
        "    CHUNKED_PREFILL_SIZE=32768\nfi\n"
        'sglang.launch_server --chunked-prefill-size "$CHUNKED_PREFILL_SIZE"'
    )
    assert read(by_adp, walker.SGLANG_FLAGS["chunk"]) == "16384 adp=32768"
    one_line = 'if [[ "$MODEL" != /* ]]; then hf download "$MODEL"; fi\n'  # (closed on its line)
    assert read(one_line + by_adp, walker.SGLANG_FLAGS["chunk"]) == "16384 adp=32768"
    by_conc = (  # GLM-5 FP4 B200 MTP, 2026-06-12: 0.85, 0.8 above 128 clients (not read)
        'MEM=0.85\nif [[ "$CONC" -gt 128 ]]; then\n    MEM=0.8\nfi\n'
        "sglang.launch_server --mem-fraction-static $MEM"
    )
    assert read(by_conc) == ""
    vllm = walker.FLAGS["vllm"]  # vLLM's --gpu-memory-utilization, --max-num-batched-tokens
    line = 'vllm serve m --gpu-memory-utilization 0.95 --max-num-batched-tokens "$((ISL * 2 ))"'
    assert (read(line, vllm["mem"]), read(line, vllm["chunk"])) == ("0.95", "isl*2")
