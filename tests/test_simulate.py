"""The request-level simulator (serving.simulate): hand-checked cases, agreement with the
analytic closed loop, Little's law, the step table's interpolation error, MTP, prefix caching,
preemption, traffic inputs and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from contract import SIMULATION_KEYS

from llm_codesign import (
    SpecError,
    Traffic,
    evaluate,
    load_engine,
    load_hardware,
    load_model,
    parse_length_dist,
    parse_precision,
    read_trace,
    simulate,
)
from llm_codesign.cli import main
from llm_codesign.serving.simulate import decode_steps, engine_for
from llm_codesign.serving.step import discrete_step
from llm_codesign.specs.traffic import fixed

AXES = {"tp": 1, "pp": 1, "ep": 1, "cp": 1, "attention_dp": False}


@pytest.fixture(scope="module")
def dense():
    return (
        load_model("llama-3.1-8b"),
        load_hardware("h200-sxm"),
        parse_precision("bf16"),
        load_engine("trtllm"),
    )


def test_single_request_is_its_prefill_then_its_decode_steps(dense):
    """One client, one request at a time: TTFT = overhead + the prompt's one step (priced
    directly, not from the table), E2E = TTFT + (OSL - 1) TPOT, and TPOT = the mean of the
    decode steps at contexts ISL + 1 .. ISL + OSL - 1 priced directly."""
    m, hw, p, e = dense
    isl, osl = 1000, 64
    r = simulate(m, hw, p, e, Traffic(clients=1, num_requests=3, isl=fixed(isl), osl=fixed(osl)))
    prefill = float(
        discrete_step(
            m, p, hw, e, **AXES, decode_seqs=0.0, decode_ctx=0.0, prefill_tokens=isl,
            prefill_ctx=isl / 2,
        )
    )  # fmt: skip
    ctx = isl + 1.0 + np.arange(osl - 1)
    steps = discrete_step(m, p, hw, e, **AXES, decode_seqs=1.0, decode_ctx=ctx)
    ttft, e2e, tpot = r.ttft_s, r.e2e_s, r.tpot_s
    assert ttft == pytest.approx(e.request_overhead_s + prefill, rel=0.01)
    assert tpot == pytest.approx(float(np.mean(steps)), rel=0.01)
    np.testing.assert_allclose(e2e, ttft + (osl - 1) * tpot, rtol=1e-9)
    # sequential: each request is sent when the one before finishes
    np.testing.assert_allclose(r.issue_s[1:], r.issue_s[:-1] + e2e[:-1], rtol=1e-12)


def test_step_table_interpolation_error_against_direct_pricing(dense):
    """The table (serving.sim_table) against discrete_step at random points of its range:
    median |error| under 1%, worst under 6% (kernel-width steps between mixed-grid rows)."""
    m, hw, p, e = dense
    tr = Traffic(clients=256, num_requests=256, isl=fixed(4000), osl=fixed(1000))
    eng = engine_for(m, hw, p, e, AXES, tr.requests(), 0, 0.0, 256)
    rng = np.random.default_rng(7)
    n = 300
    top = int(eng.table.d_dec[-1])  # the most sequences of 4,000 + tokens the KV holds
    assert 150 < top <= 256
    d = rng.integers(1, top + 1, n).astype(float)
    c = rng.uniform(100, 5000, n)
    direct = discrete_step(m, p, hw, e, **AXES, decode_seqs=d, decode_ctx=c)
    table = np.array([eng.table.decode(a, b) for a, b in zip(d, c)])
    err = np.abs(table / direct - 1)
    assert np.median(err) < 0.01 and err.max() < 0.03
    q = rng.integers(1, 8192, n).astype(float)
    pc = rng.uniform(0, 4000, n)
    direct = discrete_step(
        m, p, hw, e, **AXES, decode_seqs=d, decode_ctx=c, prefill_tokens=q, prefill_ctx=pc
    )
    table = np.array([eng.table.mixed(*x) for x in zip(d, q, c, pc)])
    err = np.abs(table / direct - 1)
    assert np.median(err) < 0.01 and err.max() < 0.06


@pytest.mark.parametrize("clients,osl", [(16, 256), (64, 1024)])
def test_closed_loop_agrees_with_the_analytic_model(dense, clients, osl):
    """N clients of identical requests: the simulated TPOT and throughput agree with
    serving.evaluate's fluid steady state within 5%. TTFT: the analytic model's prefill wait
    is a lone prompt's prefill (a lower bound: its chunk is priced as if the step carried
    nothing else); in the simulation the chunk rides in a step that also decodes the batch,
    after the residual of the step in flight: the engine-side TTFT lies between the lone
    prefill and two such mixed steps."""
    m, hw, p, e = dense
    isl = 1024
    tr = Traffic(clients=clients, num_requests=20 * clients, isl=fixed(isl), osl=fixed(osl))
    s = simulate(m, hw, p, e, tr).summary
    a = evaluate(m, hw, p, e, isl=isl, osl=osl, concurrency=clients)
    assert s["tpot_ms"]["mean"] == pytest.approx(float(a.tpot_s) * 1e3, rel=0.05)
    assert s["output_tok_s_per_gpu"] == pytest.approx(float(a.output_tok_s_per_gpu), rel=0.05)
    engine_ttft = s["ttft_ms"]["mean"] / 1e3 - e.request_overhead_s
    mixed = float(
        discrete_step(
            m, p, hw, e, **AXES, decode_seqs=float(clients), decode_ctx=isl + osl / 2,
            prefill_tokens=isl, prefill_ctx=isl / 2,
        )
    )  # fmt: skip
    assert float(a.ttft_s) - e.request_overhead_s <= engine_ttft * 1.01
    assert engine_ttft <= 2.0 * mixed


def test_littles_law_and_ordered_percentiles(dense):
    """A closed loop holds exactly its clients in flight: rate x mean E2E = clients (Little's
    law on the simulated run). Percentiles are ordered, the mean inside the range."""
    m, hw, p, e = dense
    tr = Traffic(
        clients=32,
        num_requests=1500,
        isl=parse_length_dist("uniform:200:3000", "isl"),
        osl=parse_length_dist("lognormal:400:200", "osl"),
    )
    s = simulate(m, hw, p, e, tr).summary
    assert s["request_rate_per_s"] * s["e2e_ms"]["mean"] / 1e3 == pytest.approx(32, rel=0.03)
    assert s["mean_in_flight"] == pytest.approx(32, rel=0.03)
    for key in ("ttft_ms", "tpot_ms", "e2e_ms"):
        d = s[key]
        assert d["p50"] <= d["p90"] <= d["p99"]
        assert d["mean"] > 0


def test_open_loop_below_capacity_carries_the_offered_rate_and_queues_above(dense):
    """Poisson arrivals: below capacity the run carries the offered rate and TTFT stays near
    a lone prefill; far above it, the queue grows and p99 TTFT exceeds p50 by far."""
    m, hw, p, e = dense
    lengths = {"isl": fixed(1000), "osl": fixed(200)}
    low = simulate(
        m, hw, p, e, Traffic(arrival="poisson", rate_per_s=2.0, num_requests=800, **lengths)
    ).summary
    assert low["request_rate_per_s"] == pytest.approx(2.0, rel=0.1)
    cap = evaluate(m, hw, p, e, isl=1000, osl=200, concurrency=2048)
    capacity = float(cap.output_tok_s_per_gpu) / 200
    high = simulate(
        m,
        hw,
        p,
        e,
        Traffic(arrival="poisson", rate_per_s=3 * capacity, num_requests=3000, **lengths),
    ).summary
    assert high["request_rate_per_s"] < 1.5 * capacity
    assert high["ttft_ms"]["p99"] > 3 * low["ttft_ms"]["p99"]


def test_same_seed_same_run_other_seed_other_run(dense):
    m, hw, p, e = dense
    kw = dict(arrival="poisson", rate_per_s=8.0, num_requests=300)
    kw["isl"] = parse_length_dist("normal:1500:500", "isl")
    a = simulate(m, hw, p, e, Traffic(**kw, seed=3))
    b = simulate(m, hw, p, e, Traffic(**kw, seed=3))
    c = simulate(m, hw, p, e, Traffic(**kw, seed=4))
    np.testing.assert_array_equal(a.finish_s, b.finish_s)
    assert not np.array_equal(a.finish_s, c.finish_s)


def test_mtp_steps_drawn_per_request_match_the_expected_tokens_per_step():
    """k = 3 drafts at acceptance a = 0.7 yield (1 - a^4) / (1 - a) tokens per step on
    average: the drawn steps of 2000 requests of 1001 tokens match it within 1%."""
    steps = decode_steps(np.full(2000, 1001), 3, 0.7, np.random.default_rng(0))
    tps = (1 - 0.7**4) / (1 - 0.7)
    assert 1000 / steps.mean() == pytest.approx(tps, rel=0.01)
    assert (steps >= 1000 / 4).all() and (steps <= 1000).all()
    assert (decode_steps(np.array([1, 5]), 0, 0.0, np.random.default_rng(0)) == [0, 4]).all()


def test_prefix_caching_cuts_prefill_and_ttft(dense):
    """A 3,000-token prefix shared by 3,500-token prompts: later requests prefill 500 tokens,
    so TTFT falls; the first request still computes the whole prompt."""
    m, hw, p, e = dense
    kw = dict(arrival="poisson", rate_per_s=4.0, num_requests=400, isl=fixed(3500), osl=fixed(50))
    off = simulate(m, hw, p, e, Traffic(**kw))
    on = simulate(m, hw, p, e, Traffic(**kw, prefix_len=3000))
    assert on.summary["ttft_ms"]["mean"] < off.summary["ttft_ms"]["mean"]
    assert on.ttft_s[0] == pytest.approx(off.ttft_s[0], rel=1e-9)
    prefill_full = off.ttft_s[1:].mean() - e.request_overhead_s
    prefill_cached = on.ttft_s[1:].mean() - e.request_overhead_s
    assert prefill_cached < 0.5 * prefill_full


def test_kv_pressure_preempts_under_allocate_as_you_go_and_everyone_finishes():
    """vLLM's admission (kv_admission: mean) over-admits a burst of long requests; the cache
    runs out and the newest decoding requests are preempted and recomputed; every request
    still finishes after its first token. TensorRT-LLM's reservation never preempts."""
    m, hw, p = load_model("llama-3.1-70b"), load_hardware("h100-sxm"), parse_precision("fp8")
    tr = Traffic(arrival="burst", num_requests=300, isl=fixed(3000), osl=fixed(1500))
    v = simulate(m, hw, p, load_engine("vllm"), tr, tp=2)
    assert v.summary["preemptions"] > 0
    assert np.isfinite(v.finish_s).all() and (v.finish_s >= v.first_token_s).all()
    t = simulate(m, hw, p, load_engine("trtllm"), tr, tp=2)
    assert t.summary["preemptions"] == 0 and np.isfinite(t.finish_s).all()


def test_moe_with_attention_dp_and_mtp_runs_and_agrees_on_tpot():
    m, hw, p = load_model("deepseek-v3"), load_hardware("h200-sxm"), parse_precision("fp8")
    e = load_engine("trtllm")
    kw = dict(tp=8, ep=8, attention_dp=True, spec_tokens=3, spec_acceptance=0.7)
    tr = Traffic(clients=128, num_requests=1500, isl=fixed(1024), osl=fixed(1024))
    s = simulate(m, hw, p, e, tr, **kw).summary
    a = evaluate(m, hw, p, e, isl=1024, osl=1024, concurrency=128, **kw)
    assert s["tpot_ms"]["mean"] == pytest.approx(float(a.tpot_s) * 1e3, rel=0.08)


@pytest.mark.parametrize(
    "text,needle",
    [
        ("gauss:1:2", "not a length distribution"),
        ("uniform:9:3", "uniform:LO:HI needs integers"),
        ("normal:100", "takes 2 number"),
        ("fixed:0", "fixed:N needs an integer"),
        ("file:/nonexistent/x", "does not exist"),
    ],
)
def test_length_distribution_errors_name_the_field(text, needle):
    with pytest.raises(SpecError, match=needle) as err:
        parse_length_dist(text, "--isl-dist")
    assert str(err.value).startswith("--isl-dist") and "\n" not in str(err.value)


def test_traces_jsonl_and_csv(tmp_path):
    j = tmp_path / "t.jsonl"
    j.write_text(
        '{"arrival_s": 0.5, "isl": 100, "osl": 10, "prefix_id": "sys"}\n'
        '{"arrival_s": 0.1, "isl": 200, "osl": 20}\n'
    )
    r = read_trace(j).requests
    assert r.arrival_s.tolist() == [0.1, 0.5] and r.isl.tolist() == [200, 100]
    assert r.prefix_id.tolist() == [-1, 0] and r.prefix_len.tolist() == [0, 0]
    # a common prefix: the row without an id shares it, the row with one has its own
    r = read_trace(j, prefix_len=50).requests
    assert r.prefix_id[0] != r.prefix_id[1] and r.prefix_len.tolist() == [50, 50]
    c = tmp_path / "t.csv"
    c.write_text("arrival_s,isl,osl\n0,100,10\n1.5,300,30\n")
    assert read_trace(c).requests.osl.tolist() == [10, 30]
    c.write_text("arrival_s,isl,osl,colour\n0,100,10,red\n")
    with pytest.raises(SpecError, match="unknown field colour"):
        read_trace(c)
    c.write_text("arrival_s,isl\n0,100\n")
    with pytest.raises(SpecError, match="missing field osl"):
        read_trace(c)
    # prefixes that contradict themselves: refused with the line
    c.write_text("arrival_s,isl,osl,prefix_id,prefix_len\n0,100,10,a,40\n1,100,10,a,60\n")
    with pytest.raises(SpecError, match=r"line 3: prefix_id a has prefix_len 60, but 40 on line 2"):
        read_trace(c)
    c.write_text("arrival_s,isl,osl,prefix_len\n0,100,10,40\n")
    with pytest.raises(SpecError, match="line 2: prefix_len 40 without a prefix_id"):
        read_trace(c)
    c.write_text("arrival_s,isl,osl,prefix_id,prefix_len\n0,100,10,a,400\n")
    with pytest.raises(SpecError, match=r"prefix_len 400 is longer than the prompt \(isl 100\)"):
        read_trace(c)
    # the common prefix longer than a row's prompt
    c.write_text("arrival_s,isl,osl\n0,100,10\n")
    with pytest.raises(SpecError, match="longer than the prompt"):
        read_trace(c, prefix_len=200)


BASE = ["estimate", "-m", "llama-3.1-8b", "-g", "h200-sxm"]


def test_cli_percentiles_at_a_rate_and_json_section():
    out = CliRunner().invoke(
        main,
        BASE
        + ["--arrival-rate", "10", "--isl-dist", "uniform:500:8000", "--osl-dist",
           "normal:300:100", "--percentiles", "--num-requests", "400", "--ttft-slo-ms", "2000"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "simulated latency" in out.output and "p99" in out.output and "goodput" in out.output
    res = CliRunner().invoke(main, BASE + ["--percentiles", "--num-requests", "200", "--json"])
    doc = json.loads(res.output)
    sim = doc["simulation"]
    assert SIMULATION_KEYS <= set(sim)
    for key in ("ttft_ms", "tpot_ms", "e2e_ms"):
        assert set(sim[key]) == {"mean", "p50", "p90", "p99"}
    assert sim["requests"] == 200 and sim["seed"] == 0 and "goodput" in sim
    plain = json.loads(CliRunner().invoke(main, BASE + ["--json"]).output)
    assert "simulation" not in plain


def test_cli_trace_and_prefix(tmp_path):
    t = tmp_path / "trace.csv"
    t.write_text("arrival_s,isl,osl\n" + "".join(f"{i * 0.1},{500 + i},{50}\n" for i in range(50)))
    out = CliRunner().invoke(main, BASE + ["--trace", str(t), "--prefix-len", "200"])
    assert out.exit_code == 0, out.output
    assert f"trace {t}" in out.output and "shared prefix 200" in out.output


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--arrival-rate", "5", "--burst"], "two arrival processes"),
        (["--isl-dist", "zipf:3"], "--isl-dist"),
        (["--arrival-rate", "0"], "arrival-rate"),
        (["--trace", "/nonexistent.csv"], "does not exist"),
        (["--percentiles", "--num-requests", "0"], "num-requests"),
    ],
)
def test_cli_simulation_options_fail_in_one_line(args, needle):
    out = CliRunner().invoke(main, BASE + args)
    assert out.exit_code == 2 and needle in out.output


def test_validate_predicts_percentile_and_request_rate_rows(tmp_path):
    """Percentile rows that state their plan and load are predicted (by the simulator), in
    order (p50 <= p90 <= p99 of one configuration); a static batch's percentile is skipped
    with its reason; a request-rate row's mean TTFT comes from the simulator too."""
    import csv

    from llm_codesign import validate
    from llm_codesign.validate.mapping import REQUIRED_COLUMNS

    base = dict(
        source_id="s", model="Llama-3.1-8B", gpu="H200 SXM 141GB", num_gpus="1",
        precision="bf16/bf16/bf16", tp="1", pp="1", ep="", dp="",
        framework="TensorRT-LLM v1.0", isl="1024", osl="256", concurrency_or_batch="32",
        value="100", notes="",
    )  # fmt: skip
    rows = [dict(base, metric=f"ttft_ms_{q}") for q in ("median", "p90", "p99")]
    rows.append(dict(base, metric="itl_ms_p99"))
    rate = "request rate 4 QPS"
    rows.append(dict(base, concurrency_or_batch=rate, notes="300 requests", metric="ttft_ms"))
    rows.append(dict(base, framework="TensorRT-LLM v0.9.0 static batching", metric="ttft_ms_p99"))
    path = tmp_path / "pct.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*REQUIRED_COLUMNS, "notes"])
        w.writeheader()
        w.writerows(rows)
    report = validate(path)
    got = {(r["metric"], r["mode"]): r for r in report.to_dict()["rows"]}
    p50, p90, p99 = (
        got[(f"ttft_ms_{q}", "concurrency")]["predicted"] for q in ("median", "p90", "p99")
    )
    assert 0 < p50 <= p90 <= p99
    assert got[("itl_ms_p99", "concurrency")]["predicted"] > 0
    assert "simulated (poisson, 300 requests" in got[("ttft_ms", "rate")]["note"]
    assert any("percentile metric of a static row" in s["reason"] for s in report.skipped)


def test_disaggregated_pools_lone_request_and_saturated_prefill():
    """At a low rate a request's TTFT is the overhead plus its prompt's prefill on a prefill
    worker (priced directly) and its TPOT a decode worker's lone-sequence step; past the
    prefill pool's capacity the prompts queue (p99 TTFT grows) while TPOT stays put. A closed
    loop is refused (it couples the pools)."""
    from llm_codesign import DisaggregatedPlan, ParallelPlan
    from llm_codesign.serving.sim_disagg import simulate_disaggregated

    m, hw, p = load_model("llama-3.1-70b"), load_hardware("h200-sxm"), parse_precision("fp8")
    e = load_engine("trtllm")
    plan = DisaggregatedPlan(ParallelPlan(tp=4), ParallelPlan(tp=4), 1, 2, 1)
    ax = {"tp": 4, "pp": 1, "ep": 1, "cp": 1, "attention_dp": False}
    lone = simulate_disaggregated(
        m, hw, p, e, Traffic(arrival="poisson", rate_per_s=0.05, num_requests=5,
                             isl=fixed(2000), osl=fixed(100)), plan,
    )  # fmt: skip
    prefill = float(
        discrete_step(m, p, hw, e, **ax, decode_seqs=0.0, decode_ctx=0.0, prefill_tokens=2000.0,
                      prefill_ctx=1000.0)
    )  # fmt: skip
    np.testing.assert_allclose(lone.ttft_s, e.request_overhead_s + prefill, rtol=0.01)
    step = discrete_step(m, p, hw, e, **ax, decode_seqs=1.0, decode_ctx=2050.0)
    np.testing.assert_allclose(lone.tpot_s, float(step), rtol=0.02)
    kw = dict(arrival="poisson", num_requests=1500, isl=fixed(2000), osl=fixed(300))
    capacity = 1.0 / prefill  # prompts per second of the one prefill worker
    low = simulate_disaggregated(m, hw, p, e, Traffic(rate_per_s=0.3 * capacity, **kw), plan)
    high = simulate_disaggregated(m, hw, p, e, Traffic(rate_per_s=1.3 * capacity, **kw), plan)
    assert high.summary["ttft_ms"]["p99"] > 5 * low.summary["ttft_ms"]["p99"]
    assert high.summary["request_rate_per_s"] < 1.05 * capacity
    with pytest.raises(SpecError, match="open-loop traffic"):
        simulate_disaggregated(m, hw, p, e, Traffic(clients=4, num_requests=10), plan)


def test_review_findings_closed_loop_replicas_traces_and_clipped_means(tmp_path):
    """A closed loop with dp replicas simulates one replica's clients: its per-GPU throughput
    is that of dp = 1 (it was divided by dp). A trace with a UTF-8 BOM reads; an arrival beyond
    the bound, or a row with more cells than the header, is a one-line error. A clipped normal's
    mean is the mean of what is drawn."""
    m, hw, p, eng = (
        load_model("llama-3.1-8b"),
        load_hardware("h100-sxm"),
        parse_precision("fp8"),
        load_engine("trtllm"),
    )
    t = Traffic(clients=16, num_requests=200, isl=fixed(512), osl=fixed(128))
    one, two = (simulate(m, hw, p, eng, t, dp=dp).summary for dp in (1, 2))
    assert two["output_tok_s_per_gpu"] == pytest.approx(one["output_tok_s_per_gpu"], rel=1e-9)
    bom = tmp_path / "bom.csv"
    bom.write_text("\ufeffarrival_s,isl,osl\n0,100,10\n0.5,200,20\n", encoding="utf-8")
    assert list(read_trace(bom).requests.isl) == [100, 200]
    far = tmp_path / "far.csv"
    far.write_text("arrival_s,isl,osl\n1e308,100,10\n")
    with pytest.raises(SpecError, match="arrival_s must be a number of seconds in"):
        read_trace(far)
    wide = tmp_path / "wide.csv"
    wide.write_text("arrival_s,isl,osl\n0,100,10,7\n")
    with pytest.raises(SpecError, match="more cells than the header"):
        read_trace(wide)
    d = parse_length_dist("normal:5:1000", "isl")
    drawn = d.draw(np.random.default_rng(1), 200_000)
    assert d.mean == pytest.approx(float(drawn.mean()), rel=0.02) and d.mean > 300


def test_one_long_prompt_under_attention_dp_sits_on_one_rank_in_both_models():
    """A lone request under attention-DP lives on one rank: the analytic prefill prices its
    whole chunk there (it was spread over the tp ranks) and the simulator caps one prompt's
    chunk at max_num_tokens (it spread a chunk over the ranks' budgets). With one client both
    models run the same four 8,192-token chunks: the same TTFT (the review found 1.07 s
    analytic against 0.77 s simulated before; each was off in its own way)."""
    m, hw, p, eng = (
        load_model("deepseek-r1"),
        load_hardware("b200"),
        parse_precision("nvfp4"),
        load_engine("trtllm"),
    )
    kw = dict(tp=8, ep=8, attention_dp=True)
    a = evaluate(m, hw, p, eng, **kw, isl=32768, osl=64, concurrency=1)
    s = simulate(m, hw, p, eng, Traffic(clients=1, num_requests=12, isl=fixed(32768),
                                        osl=fixed(64)), **kw)  # fmt: skip
    assert s.summary["ttft_ms"]["mean"] == pytest.approx(float(a.ttft_s) * 1e3, rel=0.02)
    # and the whole chunk on one rank costs more than an eighth of it on each
    spread = evaluate(m, hw, p, eng, tp=8, ep=8, attention_dp=False, isl=32768, osl=64,
                      concurrency=1)  # fmt: skip
    assert float(a.ttft_s) > float(spread.ttft_s)


def test_a_common_prefix_longer_than_a_drawn_prompt_is_refused():
    t = Traffic(num_requests=50, isl=parse_length_dist("uniform:100:2000", "isl"), prefix_len=500)
    with pytest.raises(SpecError, match=r"prefix_len 500 is longer than some prompts drawn"):
        t.requests()
    ok = Traffic(num_requests=50, isl=fixed(1000), prefix_len=500).requests()
    assert ok.prefix_len.tolist() == [500] * 50


def test_closed_loop_keeps_the_tuned_batch_limit_of_the_analytic_model():
    """Past a full swap-AB tiling the analytic model's tuned engine caps the running batch
    (serving.admission: llama-3.1-70b H200 BF16 TP2 128/1024 runs 256 of 257 clients); the
    simulator runs the same engine: 257 clients, 256 running, the same throughput as 256."""
    args = (load_model("llama-3.1-70b"), load_hardware("h200-sxm"), parse_precision("bf16"))
    eng = load_engine("trtllm")
    assert float(evaluate(*args, eng, tp=2, isl=128, osl=1024, concurrency=257)
                 .running_concurrency) == 256.0  # fmt: skip

    def run(c):
        t = Traffic(clients=c, num_requests=3 * c, isl=fixed(128), osl=fixed(1024))
        return simulate(*args, eng, t, tp=2)

    at, past = run(256), run(257)
    # (3 requests a client: both runs also say their statistics still hold the start-up)
    assert [n for n in at.notes if "3.0 a client" not in n] == []  # (no batch limit)
    assert any("limited to 256 sequences" in n for n in past.notes)
    assert all(any("3.0 a client" in n for n in r.notes) for r in (at, past))
    thr = [r.summary["output_tok_s_per_gpu"] for r in (at, past)]
    assert thr[1] == pytest.approx(thr[0], rel=0.01)


def test_closed_loops_take_enough_requests_to_settle():
    """A closed loop whose clients start spread needs about STEADY_REQUESTS_PER_CLIENT requests a
    client: the CLI's default takes them, a run with fewer says so (the few-rounds note), and a
    benchmark replay (clients together) is measured as it ran, without the note."""
    from dataclasses import replace

    from llm_codesign.serving.simulate import few_rounds_note
    from llm_codesign.specs.traffic import STEADY_REQUESTS_PER_CLIENT, default_requests

    assert default_requests("closed", 1024) == STEADY_REQUESTS_PER_CLIENT * 1024 == 10240
    assert default_requests("closed", 8) == 2000 and default_requests("poisson", 1024) == 2000
    assert few_rounds_note(Traffic(clients=1024, num_requests=10240)) == []
    (note,) = few_rounds_note(Traffic(clients=1024, num_requests=400))
    assert "0.4 a client" in note and "simulate 10,240 requests" in note
    # more clients than requests can ever be simulated: the note asks for the most allowed
    (huge,) = few_rounds_note(Traffic(clients=2_000_000, num_requests=4_000_000))
    assert "simulate 10,000,000 requests" in huge
    # the default follows the clients (dataclasses.replace recomputes it)
    assert replace(Traffic(clients=8), clients=1024).count == 10240
    assert few_rounds_note(Traffic(clients=1024, num_requests=400, clients_start="together")) == []
