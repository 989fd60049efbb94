"""validate's table conventions (validate.conventions): blank-field defaults, disaggregated
pools predicted by evaluate_disaggregated, MTP rows, and skip reasons for malformed pools."""

import csv

import pytest

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.serving import evaluate, evaluate_disaggregated
from llm_codesign.specs.engine import engine_for_framework
from llm_codesign.validate import (
    MTP_ACCEPTANCE,
    REQUIRED_COLUMNS,
    bundled_data,
    disaggregated_inputs,
    map_row,
    validate,
)
from llm_codesign.validate.campaigns import (
    AIC_CAMPAIGN_COPIES_FILE,
    AIC_HARNESS_SHARE,
    aic_campaign_copies,
    aic_campaign_run_dates,
    aic_copy_evidence,
    aic_harness,
    aic_inferencex_campaigns,
    inferencex_campaign_evidence,
)
from llm_codesign.validate.conventions import MTP_ACCEPTANCE_INFERENCEX, draft_head
from llm_codesign.validate.mapping import iter_measurements
from llm_codesign.validate.tables import bundled_rows

DISAGG_NOTES = (
    "disaggregated: prefill_gpus=8 (workers=1), decode_gpus=72 (workers=9), "
    "is_multinode=True; spec_method=none; run date 2026-03-23"
)
METRICS = ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu", "total_tok_s_per_gpu")


def row(**kw):
    base = dict(
        source_id="ix",
        model="DeepSeek-R1-0528",
        gpu="H200",
        num_gpus="8",
        precision="fp8/?/?",
        tp="8",
        pp="",
        ep="1",
        dp="",
        framework="sglang (lmsysorg/sglang:v0.5.12-cu130)",
        isl="1024",
        osl="1024",
        concurrency_or_batch="16",
        metric="tpot_ms",
        value="10",
        notes="aggregated single-node; spec_method=none",
    )
    base.update(kw)
    return base


def disagg_row(**kw):
    base = dict(
        num_gpus="80",
        tp="P:tp8/D:tp8",
        ep="P:ep8/D:ep8",
        dp="P:dpattn=True/D:dpattn=False",
        framework="dynamo-trt (nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1)",
        concurrency_or_batch="576",
        notes=DISAGG_NOTES,
    )
    base.update(kw)
    return row(**base)


def write_csv(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(REQUIRED_COLUMNS) + ["notes"])
        w.writeheader()
        w.writerows(rows)
    return path


def by_hand(prefill_adp, decode_adp, decode_count, prefill_batch, concurrency):
    def plan(adp):
        return {"tp": 8, "pp": 1, "ep": 8, "cp": 1, "attention_dp": adp}

    return evaluate_disaggregated(
        load_model("deepseek-r1"),
        load_hardware("h200-sxm"),
        parse_precision("fp8+fp8_block-w"),  # its checkpoint's FP8 (validate.mapping)
        load_engine("trtllm"),
        prefill_plan=plan(prefill_adp),
        decode_plan=plan(decode_adp),
        prefill_count=1,
        decode_count=decode_count,
        prefill_batch=prefill_batch,
        concurrency=concurrency,
        isl=1024,
        osl=1024,
    )


def test_disaggregated_row_predicts_what_evaluate_disaggregated_gives_by_hand(tmp_path):
    rows = [disagg_row(metric=m) for m in METRICS]
    rows.append(
        disagg_row(
            metric="output_tok_s_per_gpu",
            notes=DISAGG_NOTES + "; output_tput_per_gpu (divides by decode GPUs only)",
        )
    )
    rep = validate(write_csv(tmp_path / "d.csv", rows))
    assert rep.skipped == [] and len(rep.rows) == len(rows)
    # C = 576 clients over 9 decode workers: 64 each; prefill batch = 8192 // 1024 = 8 prompts
    # on each of the prefill worker's 8 attention-DP ranks: 64
    r = by_hand(True, False, 9, 64, 576 / 9)
    assert float(r.num_gpus) == 80 and bool(r.feasible)
    want = {
        "ttft_ms": float(r.ttft_s) * 1e3,
        "tpot_ms": float(r.tpot_s) * 1e3,
        "tok_s_per_user": 1.0 / float(r.tpot_s),
        "output_tok_s_per_gpu": float(r.output_tok_s_per_gpu),
        "total_tok_s_per_gpu": float(r.total_tok_s_per_gpu),
    }
    got = {rec["metric"]: rec["predicted"] for rec in rep.rows[: len(METRICS)]}
    assert got == pytest.approx(want, rel=1e-9)
    # the row whose note says it divides by the decode GPUs only: 80 / 72 of the all-GPU value
    assert rep.rows[-1]["predicted"] == pytest.approx(want["output_tok_s_per_gpu"] * 80 / 72)
    assert "decode GPUs only" in rep.rows[-1]["note"]
    assert all(rec["mode"] == "disaggregated" for rec in rep.rows)
    assert rep.rows[0]["plan"] == "P:1x tp8 ep8 adp / D:9x tp8 ep8"
    assert rep.rows[0]["engine"] == "trtllm"
    assert "pp blank: 1" in rep.rows[0]["note"]
    assert rep.summary["known_load"]  # disaggregated rows have a known concurrency


def test_disaggregated_prefill_batch_and_fewer_clients_than_decode_workers(tmp_path):
    # C = 3 < 9 decode workers: 3 busy workers of one sequence; the prefill worker packs the 3
    # outstanding prompts (below the 8-prompt chunk budget); per-GPU over all 80 GPUs
    rows = [disagg_row(metric=m, concurrency_or_batch="3") for m in METRICS]
    rep = validate(write_csv(tmp_path / "d.csv", rows))
    r = by_hand(True, False, 3, 3, 1.0)
    got = {rec["metric"]: rec["predicted"] for rec in rep.rows}
    assert got["tpot_ms"] == pytest.approx(float(r.tpot_s) * 1e3, rel=1e-9)
    assert got["ttft_ms"] == pytest.approx(float(r.ttft_s) * 1e3, rel=1e-9)
    used = float(r.num_gpus)
    assert used == 8 + 3 * 8
    assert got["output_tok_s_per_gpu"] == pytest.approx(
        float(r.output_tok_s_per_gpu) * used / 80, rel=1e-9
    )
    # 8k prompts fill a rank's 8192-token budget alone: one per attention-DP rank, 8 in all;
    # without attention-DP in the prefill pool, one
    m = map_row(0, disagg_row(isl="8192"))
    assert disaggregated_inputs(m, load_engine("trtllm"))["prefill_batch"] == 8
    m = map_row(0, disagg_row(isl="8192", dp="P:dpattn=False/D:dpattn=False"))
    assert disaggregated_inputs(m, load_engine("trtllm"))["prefill_batch"] == 1


def test_blank_pp_is_one_with_a_note():
    m = map_row(0, row())
    assert not isinstance(m, str)
    assert (m.tp, m.pp, m.ep, m.attention_dp) == (8, 1, 1, False)
    assert "pp blank: 1" in m.note and "dp blank: tensor-parallel attention" in m.note
    m = map_row(0, row(pp="1"))
    assert m.pp == 1 and "pp blank" not in m.note
    # attention-DP over the tp group
    m = map_row(0, row(dp="attn-DP", ep="8", framework="trt"))
    assert (m.attention_dp, m.ep, m.engine) == (True, 8, "trtllm")
    assert map_row(0, row(tp="")).startswith("plan not stated")


def test_framework_labels_map_to_engines():
    assert engine_for_framework("trt") == "trtllm"
    assert engine_for_framework("trt (nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14)") == "trtllm"
    assert engine_for_framework("dynamo-trt (nvcr.io/x/tensorrtllm-runtime:0.8.1)") == "trtllm"
    assert engine_for_framework("dynamo-sglang (lmsysorg/sglang:v0.5.8-cu130)") == "sglang"
    assert engine_for_framework("TensorRT-LLM v0.17 (TRT engine)") == "trtllm-trt"
    # AMD's ATOM is vLLM-like (ROCm/ATOM README): vLLM's constants, not the pooled fit
    assert engine_for_framework("atom (rocm/atom:rocm7.1.1-ubuntu24.04)") == "vllm"
    assert engine_for_framework("atomic-llm 1.0") == "generic"


def test_mtp_row_passes_draft_length_and_acceptance(tmp_path):
    notes = "aggregated single-node; spec_method=mtp"
    m = map_row(0, row(notes=notes))
    # SGLang's MTP recipe: 2 draft tokens; acceptance: the published DeepSeek-V3 figure
    assert (m.spec_tokens, m.spec_acceptance) == (2, MTP_ACCEPTANCE)
    assert "MTP: 2 draft tokens" in m.note and "2412.19437" in m.note
    # TensorRT-LLM's recipe: 3 drafts with TP attention, 1 with attention-DP
    assert map_row(0, row(notes=notes, framework="trt")).spec_tokens == 3
    assert map_row(0, row(notes=notes, framework="trt", dp="attn-DP", ep="8")).spec_tokens == 1
    # stated in the row: used as stated
    m = map_row(0, row(notes=notes + "; spec_tokens=4; spec_acceptance=0.7"))
    assert (m.spec_tokens, m.spec_acceptance) == (4, 0.7) and "stated" in m.note
    assert map_row(0, row(notes=notes + "; spec_acceptance=1.5")).startswith("MTP acceptance")
    assert map_row(0, row(notes="spec_method=eagle3")).startswith("speculative decoding eagle3")
    # a model without MTP modules: skipped unless its draft head is known (DRAFT_HEADS)
    assert draft_head("llama-3.1-8b") is None and draft_head("minimax-m3")[0] == 3
    assert map_row(0, row(model="Llama-3.1-8B", tp="1", notes=notes)).startswith(
        "spec_method=mtp on a model without MTP modules"
    )

    rows = [row(notes=notes), row(notes="aggregated single-node; spec_method=none")]
    rep = validate(write_csv(tmp_path / "m.csv", rows))
    mtp, plain = (rec["predicted"] for rec in rep.rows)
    assert rep.rows[0]["plan"].endswith("mtp2")

    def tpot(**spec):
        return (
            float(
                evaluate(
                    load_model("deepseek-r1"),
                    load_hardware("h200-sxm"),
                    parse_precision("fp8+fp8_block-w"),  # its checkpoint's FP8
                    load_engine("sglang"),
                    tp=8,
                    ep=1,
                    isl=1024,
                    osl=1024,
                    concurrency=16,
                    benchmark_burst=True,
                    **spec,
                ).tpot_s
            )
            * 1e3
        )

    want_mtp, want_plain = tpot(spec_tokens=2, spec_acceptance=0.85), tpot()
    assert (mtp, plain) == pytest.approx((want_mtp, want_plain), rel=1e-9)
    # a memory-bound decode step verifies 3 tokens for about the price of one and yields
    # 1 + 0.85 + 0.85^2 = 2.57 tokens: TPOT falls
    assert mtp < plain


def test_disaggregated_mtp_rows_run_the_speculative_decode_pool(tmp_path):
    """A disaggregated MTP row: the decode pool's layout picks the draft length (TensorRT-LLM,
    tensor-parallel attention in the decode pool: 3), and the prediction is evaluate_disaggregated
    with those drafts. Speculation changes the decode pool only: the same prefill, a TPOT per
    token below the plain pool's (a memory-bound decode step verifies 4 tokens for little more
    than one), and with no draft accepted never below it."""
    notes = DISAGG_NOTES.replace("spec_method=none", "spec_method=mtp")
    m = map_row(0, disagg_row(notes=notes))
    assert not isinstance(m, str) and (m.spec_tokens, m.spec_acceptance) == (3, MTP_ACCEPTANCE)
    rep = validate(write_csv(tmp_path / "d.csv", [disagg_row(notes=notes)]))
    assert rep.skipped == [] and len(rep.rows) == 1
    plain = by_hand(True, False, 9, 64, 576 / 9)

    def with_spec(k, a):
        plan = {"tp": 8, "pp": 1, "ep": 8, "cp": 1, "attention_dp": False}
        return evaluate_disaggregated(
            load_model("deepseek-r1"), load_hardware("h200-sxm"),
            parse_precision("fp8+fp8_block-w"), load_engine("trtllm"),
            prefill_plan=dict(plan, attention_dp=True), decode_plan=plan, prefill_count=1,
            decode_count=9, prefill_batch=64, concurrency=576 / 9, isl=1024, osl=1024,
            spec_tokens=k, spec_acceptance=a,
        )  # fmt: skip

    mtp = with_spec(3, MTP_ACCEPTANCE)
    assert rep.rows[0]["predicted"] == pytest.approx(float(mtp.tpot_s) * 1e3, rel=1e-9)
    assert float(mtp.tpot_s) < 0.6 * float(plain.tpot_s)
    assert float(with_spec(3, 0.0).tpot_s) > float(plain.tpot_s)
    for key in plain.prefill_breakdown:
        assert float(mtp.prefill_breakdown[key]) == float(plain.prefill_breakdown[key])


@pytest.mark.parametrize(
    "kw,reason",
    [
        (dict(tp="P:tp8"), "disaggregated pool plan not stated"),
        (dict(tp="P:tp8/D:tpX"), "disaggregated pool plan not stated"),
        (dict(tp="P:tp0/D:tp8"), "disaggregated pool plan not stated"),
        (dict(ep="P:ep8/D:"), "disaggregated expert parallelism"),
        (dict(dp="P:dpattn=maybe/D:dpattn=True"), "disaggregated attention-DP"),
        (dict(pp="2"), "disaggregated row with pp=2"),
        (dict(notes="disaggregated: prefill_gpus=8, decode_gpus=72"), "disaggregated pool sizes"),
        (dict(num_gpus="64"), "disaggregated pool sizes disagree"),
        (
            dict(notes=DISAGG_NOTES.replace("decode_gpus=72", "decode_gpus=64")),
            "disaggregated pool sizes disagree",
        ),
        (dict(concurrency_or_batch="max-throughput"), "disaggregated row with offline"),
    ],
)
def test_malformed_pools_give_a_skip_reason(kw, reason):
    assert map_row(0, disagg_row(**kw)).startswith(reason)


def test_malformed_pools_are_counted_not_fatal(tmp_path):
    rows = [disagg_row(tp="P:tp8"), disagg_row(num_gpus="7"), disagg_row(metric="tpot_ms")]
    rep = validate(write_csv(tmp_path / "d.csv", rows))
    assert len(rep.rows) == 1
    assert sum(s["count"] for s in rep.skipped) == 2
    assert all(s["reason"].startswith("disaggregated") for s in rep.skipped)


def test_aic_campaigns_of_inferencex_runs_are_proven_and_mapped_as_such():
    """Each campaign of ``aic_inferencex_campaigns`` (a data file) has rows equal to InferenceX
    rows of the bundled tables (same plan, lengths, concurrency, metric) and every such
    InferenceX row states the campaign's spec method; no other campaign equals any InferenceX
    row. Its rows map as InferenceX rows (client lengths) with that spec method."""
    aic = [
        r
        for name in ("aic_silicon_moe_hopper.csv", "aic_silicon_dense.csv")
        for r in iter_measurements(bundled_data(name))
    ]
    ix = list(iter_measurements(bundled_data("inferencex_hopper.csv")))
    evidence = inferencex_campaign_evidence(aic, ix)
    assert set(aic_inferencex_campaigns()) <= set(evidence)  # every listed campaign has rows
    for campaign, counts in evidence.items():
        methods = {k for k in counts if k != "rows" and not k.startswith("run ")}
        dates = {k.removeprefix("run ") for k in counts if k.startswith("run ")}
        if campaign in aic_inferencex_campaigns():
            assert methods == {aic_inferencex_campaigns()[campaign]}, campaign
            # the one run date of the InferenceX runs it equals is the date it maps with
            assert dates == {aic_campaign_run_dates()[campaign]}, campaign
        else:
            assert not methods, campaign
    mtp_id = "2026_03_25_deepseek_r1_h200_sxm_trtllm_fp8_agg_1024x8192_c16_tp8_0_ep8_0_1"
    aic_row = row(
        source_id="aic_silicon_sample", model="DeepSeek-R1", gpu="H200 SXM", ep="8",
        framework="trtllm 1.1.0rc2.post2", osl="8192", notes=f"id={mtp_id}; moe_tp=1",
    )  # fmt: skip
    m = map_row(0, aic_row)
    # InferenceX's TensorRT-LLM MTP recipe (3 drafts), its client's mean lengths (0.9 L) and
    # the acceptance of its random-token prompts
    assert m.spec_tokens == 3 and "spec_method=mtp (an InferenceX campaign" in m.note
    assert m.spec_acceptance == MTP_ACCEPTANCE_INFERENCEX and "random data" in m.note
    assert (m.mean_isl, m.mean_osl) == (921.5, 7372.5)
    # another campaign of the same source: its own harness share, no MTP
    other = dict(aic_row, notes="id=2026_03_25_glm_5_h200_sxm_sglang_fp8_agg_1024x8192_c16_tp8")
    assert map_row(0, other).spec_tokens == 0 and map_row(0, other).mean_isl == 0.0
    # the database dump's copy of InferenceX's DeepSeek-R1 runs of 2025-11-02 says DeepSeek-V3
    # and EP 1, as InferenceX's API does: it maps as the run it is (R1; its script's EP 8)
    dump = row(
        source_id="aic_silicon_sample", model="DeepSeek-V3", gpu="H200 SXM", ep="1",
        framework="trtllm ", osl="1024", concurrency_or_batch="4",
        notes="id=dsr1_h200_trtllm_fp8_agg_1024x1024_c4_cfg83; moe_tp=8",
    )  # fmt: skip
    m = map_row(0, dump)
    assert (m.model, m.ep) == ("deepseek-r1", 8) and "run of 2025-11-02" in m.note


def test_aic_campaigns_that_copy_dated_runs_are_proven_and_take_the_runs_share():
    """Each campaign of ``aic_campaign_copies`` (a data file) has more than half of its
    TTFT/TPOT rows equal to rows of the same runs in an earlier dated campaign at the printed
    precision (the file's counts, checked), its run campaign among them; no other campaign has
    most of its rows so. Its rows take that harness's start-up share: the Qwen3.5-397B SGLang
    run of 8k/1k at 64 clients (TTFT 1224.4687 ms in the dated campaign, 1224.47 in the
    gap-analysis copy) maps to one share in both."""
    aic = [
        r
        for name in ("aic_silicon_moe_hopper.csv", "aic_silicon_dense.csv")
        for r in iter_measurements(bundled_data(name))
    ]
    evidence = aic_copy_evidence(aic)
    copies = aic_campaign_copies()
    listed = {r["campaign"]: r for r in bundled_rows(AIC_CAMPAIGN_COPIES_FILE)}
    for campaign, counts in evidence.items():
        if campaign in copies:
            run, harness = copies[campaign]
            assert (counts["rows"], counts["equal"]) == tuple(
                int(listed[campaign][k]) for k in ("rows", "equal")
            ), campaign
            assert 2 * counts["equal"] > counts["rows"] and counts.get(run, 0) > 0, campaign
            assert harness == aic_harness("aic_silicon_sample", f"id={run}_1024x1024_c4")
        else:
            assert 2 * counts["equal"] <= counts["rows"], campaign
    assert set(copies) <= set(evidence)
    # the harness of every copied run has a share for every engine
    for _, harness in copies.values():
        assert all((harness, e) in AIC_HARNESS_SHARE for e in ("trtllm", "vllm", "sglang"))
    # the rows' printed precision: 629.1 (one decimal) equals 629.0955889387988, not 629.2
    one = dict(row(metric="ttft_ms"), source_id="aic_silicon_sample")
    one["notes"] = "id=2026_01_01_a_agg_1024x1024_c4; moe_tp=1"
    later = [dict(one, notes=one["notes"].replace("2026_01_01_a", "2026_02_02_b"), value=v)
             for v in ("629.1", "629.2", "six hundred")]  # fmt: skip
    got = aic_copy_evidence([dict(one, value="629.0955889387988"), later[0]])
    assert got["2026_02_02_b_agg"]["equal"] == 1
    assert (
        aic_copy_evidence([dict(one, value="629.0955889387988"), later[1]])["2026_02_02_b_agg"][
            "equal"
        ]
        == 0
    )
    # a value that is no number is left out, not fatal
    assert "2026_02_02_b_agg" not in aic_copy_evidence([one, later[2]])
    tail = "_8192x1024_c64_tp8_0_ep8_0_592"
    dated = row(
        source_id="aic_silicon_sample", model="Qwen3.5-397B-A17B", gpu="H200 SXM", ep="8",
        framework="sglang 0.5.9", isl="8192", osl="1024", concurrency_or_batch="64",
        metric="ttft_ms", value="1224.4687461316062",
        notes=f"id=2026_03_25_qwen3_5_397b_h200_sxm_sglang_fp8_agg{tail}; moe_tp=1",
    )  # fmt: skip
    gap = dict(
        dated,
        value="1224.47",
        notes="id=qwen3_5_397b_gap_analysis_qwen3_5_397b_gap_analysis_h200_sxm_sglang_fp8_agg"
        f"{tail}; moe_tp=1",
    )
    a, b = map_row(0, dated), map_row(0, gap)
    assert a.burst_share == b.burst_share == AIC_HARNESS_SHARE[("aic-dated", "sglang")]
    assert "the runs of 2026_03_25_qwen3_5_397b" in b.note and "runs of" not in a.note
    # a gap-analysis campaign that copies nothing keeps its harness's share
    own = dict(gap, notes=gap["notes"].replace("qwen3_5_397b_gap", "qwen3_5_other_gap"))
    assert map_row(0, own).burst_share == AIC_HARNESS_SHARE[("aic-gap-analysis", "sglang")]
    # the database dump collects dated campaigns' runs (every one of its bundled campaigns
    # copies one): a campaign of it not in the tables takes the dated share too
    dump = dict(dated, notes="id=qwen3_5_397b_h200_sglang_fp8_agg_8192x1024_c64_cfg9; moe_tp=1")
    assert map_row(0, dump).burst_share == AIC_HARNESS_SHARE[("aic-dated", "sglang")]
    assert not any(h == "aic-db-dump" for h, _ in AIC_HARNESS_SHARE)


def test_stated_block_scaled_fp8_weights_are_priced_as_such():
    """AIConfigurator's notes state the quantization a run used: ``moe_quant=fp8_block`` (an MoE
    model) or ``gemm_quant=fp8_block`` (a dense one) are 128 x 128 block-scaled FP8 weights,
    priced as fp8+fp8_block-w; a row stating per-tensor ``fp8`` keeps it, and so does a row
    that states nothing."""
    # the release's name (no published checkpoint's format: the notes decide)
    moe = dict(model="Qwen3-235B-A22B", gpu="H200 SXM", tp="8", ep="8", precision="fp8/fp8/?",
               framework="trtllm 1.0.0rc3", source_id="aic_silicon_sample")  # fmt: skip
    m = map_row(0, row(**moe, notes="id=x; moe_tp=1; gemm_quant=fp8_block; moe_quant=fp8_block"))
    assert m.precision == "fp8+fp8_block-w" and "moe_quant=fp8_block" in m.note
    assert map_row(0, row(**moe, notes="gemm_quant=fp8; moe_quant=fp8")).precision == "fp8"
    assert map_row(0, row(**moe, notes="")).precision == "fp8"
    dense = dict(moe, model="Llama-3.1-8B-Instruct", tp="1", ep="")
    got = map_row(0, row(**dense, notes="gemm_quant=fp8_block; moe_quant=fp8_block"))
    assert got.precision == "fp8+fp8_block-w"
    # a block-scaled checkpoint already priced so (DeepSeek-R1's preset) gains nothing twice
    ds = dict(moe, model="DeepSeek-R1")
    assert map_row(0, row(**ds, notes="moe_quant=fp8_block")).precision == "fp8+fp8_block-w"


def test_a_row_naming_a_published_block_scaled_checkpoint_is_priced_in_its_weights():
    """Qwen3's -FP8 checkpoints store 128 x 128 block-scaled FP8 weights (their model card). A row
    that names one is priced so whatever its notes call the run's quantization (AIConfigurator's
    vLLM rows of Qwen3-235B-A22B-FP8 say per-tensor ``fp8``, its SGLang and TensorRT-LLM rows of
    the same checkpoint ``fp8_block``), and says which checkpoint it read."""
    moe = dict(gpu="H200 SXM", tp="2", ep="", precision="fp8/fp8/?", framework="vllm 0.12.0",
               source_id="aic_silicon_sample",
               notes="moe_tp=2; gemm_quant=fp8; moe_quant=fp8")  # fmt: skip
    for name in ("Qwen3-235B-A22B-FP8", "Qwen/Qwen3-235B-A22B-FP8"):
        m = map_row(0, row(**moe, model=name))
        assert (m.model, m.precision) == ("qwen3-235b-a22b", "fp8+fp8_block-w")
        assert "Qwen/Qwen3-235B-A22B-FP8: quantization_config fp8 e4m3 block 128x128" in m.note
    assert map_row(0, row(**moe, model="Qwen3-235B-A22B")).precision == "fp8"


def test_a_moe_plan_the_notes_contradict_is_skipped_with_the_reason():
    """AIConfigurator rows whose notes state an MoE tensor-parallel size that does not make the
    row's plan (moe_tp x ep != tp: ``tp=1``, ``moe_tp=2`` on one GPU) are skipped, not priced as
    some other plan; a consistent one (tp 8 = moe_tp 1 x ep 8) maps."""
    base = dict(model="Qwen3-235B-A22B-FP8", gpu="H200 SXM", precision="fp8/fp8/?",
                framework="vllm 0.12.0", source_id="aic_silicon_sample")  # fmt: skip
    bad = map_row(0, row(**base, tp="1", ep="1", num_gpus="1", notes="moe_tp=2; moe_quant=fp8"))
    assert bad == "MoE plan of the notes does not fit the row (moe_tp 2 x ep 1 != tp 1)"
    good = map_row(0, row(**base, tp="8", ep="8", notes="moe_tp=1; moe_quant=fp8"))
    assert not isinstance(good, str) and (good.tp, good.ep) == (8, 8)
    # a dense model's notes are not read for an MoE plan
    dense = dict(base, model="Llama-3.1-8B-Instruct")
    assert not isinstance(map_row(0, row(**dense, tp="1", ep="", notes="moe_tp=2")), str)


def test_input_per_node_and_pool_rates_follow_from_the_same_prediction():
    # the shared tables' phase-specific prefill/decode rates and per-node metrics (SOURCES.md):
    # every throughput metric is the same closed loop read another way, checked by hand here
    from llm_codesign.validate import metric_class
    from llm_codesign.validate.predict import predict_rows

    names = ("output_tok_s_per_gpu", "total_tok_s_per_gpu", "input_tok_s_per_gpu")
    names += ("output_tok_s_per_node", "input_tok_s")
    agg = [map_row(0, row(metric=m, concurrency_or_batch="64")) for m in names]
    v = dict(zip(names, predict_rows(agg)[0]))
    assert v["input_tok_s_per_gpu"] == pytest.approx(
        v["total_tok_s_per_gpu"] - v["output_tok_s_per_gpu"]
    )
    assert v["output_tok_s_per_node"] == pytest.approx(8 * v["output_tok_s_per_gpu"])  # HGX
    assert v["input_tok_s"] == pytest.approx(8 * v["input_tok_s_per_gpu"])  # the TP8 group
    gb = map_row(0, row(gpu="GB200", framework="trt", metric="output_tok_s_per_node"))
    gb_gpu = map_row(0, row(gpu="GB200", framework="trt", metric="output_tok_s_per_gpu"))
    per_node, per_gpu = predict_rows([gb, gb_gpu])[0]
    assert per_node == pytest.approx(4 * per_gpu)  # an NVL72 compute tray holds 4 GPUs
    # a pool's rate: output over the 72 decode GPUs, prompts over the 8 prefill GPUs
    pools = ("output_tok_s_per_gpu", "total_tok_s_per_gpu", "decode_tok_s_per_gpu")
    pools += ("prefill_tok_s_per_gpu", "decode_tok_s_per_node")
    dis = [map_row(0, disagg_row(metric=m)) for m in pools]
    d = dict(zip(pools, predict_rows(dis)[0]))
    assert d["decode_tok_s_per_gpu"] * 72 == pytest.approx(d["output_tok_s_per_gpu"] * 80)
    assert d["prefill_tok_s_per_gpu"] * 8 == pytest.approx(
        (d["total_tok_s_per_gpu"] - d["output_tok_s_per_gpu"]) * 80
    )
    assert d["decode_tok_s_per_node"] == pytest.approx(8 * d["decode_tok_s_per_gpu"])
    assert all(metric_class(m) == "throughput" for m in names + pools)
    # a pool's rate on a row without pools names no pool: skipped with the reason
    why = map_row(0, row(metric="decode_tok_s_per_gpu"))
    assert isinstance(why, str) and "pool's rate" in why


def test_amd_quark_export_names_its_activations():
    """AMD's W4A8 gpt-oss (``amd/gpt-oss-120b-w-mxfp4-a-fp8``, InferenceX's MI355X vLLM runs)
    is gpt-oss-120b, served with 8-bit activations: its name states them where the row's
    precision text does not; the bundled checkpoint (weight-only MXFP4) stays W4A16 there."""
    from dataclasses import replace

    from llm_codesign.specs.checkpoint import named_activations
    from llm_codesign.validate.conventions import map_precision
    from llm_codesign.validate.mapping import match_model_name

    name = "amd/gpt-oss-120b-w-mxfp4-a-fp8"
    assert match_model_name(name) == "gpt-oss-120b"
    assert named_activations(name) == "fp8" and named_activations("gpt-oss-120b") == ""
    hw, base = load_hardware("mi355x"), load_model("gpt-oss-120b")
    named = replace(base, name=name)
    assert map_precision(base, hw, "fp4/?/?") == "mxfp4-a16"
    assert map_precision(named, hw, "fp4/?/?") == "mxfp4-a8"
    # a row stating 16-bit activations keeps them
    assert map_precision(named, hw, "fp4/bf16/?") == "mxfp4-a16"
