"""Attention-DP ranks in the request simulator (serving.sim_ranks): the placement and
TensorRT-LLM's attention-DP context balance as its executor runs them (PyExecutor
._balance_adp_requests, read at the source), a late prompt released at the balance's timeout
round (its time checked by hand against directly priced steps), a closed loop's clients starting
together, and validate pricing the closed loops under the balance with the simulator."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign import (
    SpecError,
    Traffic,
    load_engine,
    load_hardware,
    load_model,
    parse_precision,
    simulate,
    validate,
)
from llm_codesign.cli import main
from llm_codesign.serving.sim_ranks import Ranks
from llm_codesign.serving.step import discrete_step
from llm_codesign.specs.traffic import Requests, Trace, fixed


def test_a_request_goes_to_the_least_loaded_rank_which_has_room_while_the_replica_has():
    r = Ranks(4, running=2)
    r.placed[:] = [2, 1, 1, 2]
    assert r.place() == 1  # the fewest, the lowest index among equals
    # a replica limit of 7 (each rank's share ceil(7 / 4) = 2): below it, the rank chosen has
    # room, however the requests are spread
    for placed in itertools.product(range(3), repeat=4):
        if sum(placed) < 7:
            r.placed[:] = placed
            assert r.placed[r.place()] < r.running


def test_the_balance_releases_when_every_rank_has_a_prompt_else_at_its_timeout():
    """T = 5: with a prompt on 2 of 4 ranks, the count (0) grows by one an iteration and the
    prompts wait 4 iterations (T - 1 - 0); at the fifth the count reaches T: they go and the count
    restarts. With a prompt on every rank they go at once."""
    r = Ranks(4, running=8, timeout=5)
    r.decoding[:] = [1, 1, 1, 1]
    assert r.hold(4) == 0 and r.count_iters == 0
    assert r.hold(2) == 4
    r.held(4)
    assert r.count_iters == 4
    assert r.hold(2) == 0 and r.count_iters == 0
    # a rank with nothing decoding: the executor lets the prompts through
    r.decoding[:] = [1, 0, 1, 1]
    assert r.hold(2) == 0
    # a full rank (no free batch slot, so no prompt of its own) keeps the others' waiting
    r.decoding[:] = [8, 1, 1, 1]
    assert r.hold(3) == 4


def test_the_batching_wait_holds_b_iterations_once_every_rank_has_a_prompt():
    r = Ranks(2, running=8, timeout=60, wait=3)
    r.decoding[:] = [2, 2]
    assert r.hold(2) == 3 and r.batching_hold
    r.held(3)
    assert r.batching == 3
    assert r.hold(2) == 0 and r.batching == 0


def test_the_count_runs_through_iterations_without_prompts_and_restarts_at_the_timeout():
    r = Ranks(8, running=4, timeout=60)
    r.decoding[:] = [1] * 8
    r.idle(45)
    assert r.count_iters == 45
    r.idle(20)  # the timeout at 60 restarts it: 5 more
    assert r.count_iters == 5
    r.decoding[3] = 0  # a rank with nothing decoding restarts it every iteration
    r.idle(7)
    assert r.count_iters == 0
    assert Ranks(1, running=4, timeout=60).timeout == 0  # one rank: nothing to balance
    assert Ranks(8, running=4).hold(3) == 0  # no balance


@pytest.fixture(scope="module")
def dsr1_h200():
    return load_model("deepseek-r1"), load_hardware("h200-sxm"), parse_precision("fp8")


def _late_prompt(dsr1_h200, arrive_s: float, timeout: int):
    """Eight 1,024-token prompts at t = 0 (one per attention-DP rank), decoding 2,000 tokens,
    and a ninth arriving at ``arrive_s``: the simulated run."""
    m, hw, p = dsr1_h200
    eng = load_engine("trtllm").with_overrides(adp_balance_timeout_iters=timeout)
    n = 9
    arrival = np.array([0.0] * 8 + [arrive_s])
    osl = np.array([2000] * 8 + [10], dtype=np.int64)
    reqs = Requests(
        arrival_s=arrival,
        isl=np.full(n, 1024, dtype=np.int64),
        osl=osl,
        prefix_id=np.full(n, -1, dtype=np.int64),
        prefix_len=np.zeros(n, dtype=np.int64),
    )
    tr = Traffic(arrival="trace", trace=Trace(path="late.csv", requests=reqs))
    return eng, simulate(m, hw, p, eng, tr, tp=8, ep=8, attention_dp=True)


@pytest.mark.parametrize("arrive_s,round_iter", [(0.8, 61), (2.0, 121)])
def test_a_late_prompt_waits_for_the_timeout_round(dsr1_h200, arrive_s, round_iter):
    """Balance on (T = 60): the eight prompts go in iteration 1 (no rank decodes yet), the count
    restarts and then grows every iteration; the ninth prompt, alone on its rank, goes in the
    iteration where the count reaches 60 after its arrival: 61 for an arrival at 0.8 s (iteration
    61 ends near 1.4 s), 121 for one at 2 s (the count restarted at 61 with nothing to release).
    Its first token comes at the end of that iteration: the first round, then round_iter - 2
    decode steps of eight sequences, then that step with its prompt, each priced directly."""
    m, hw, p = dsr1_h200
    eng, res = _late_prompt(dsr1_h200, arrive_s, 60)
    kw = dict(tp=8, pp=1, ep=8, cp=1, attention_dp=True)
    first_round = float(
        discrete_step(m, p, hw, eng, **kw, decode_seqs=0.0, decode_ctx=0.0,
                      prefill_tokens=8 * 1024, prefill_ctx=512.0)
    )  # fmt: skip
    steps = discrete_step(m, p, hw, eng, **kw, decode_seqs=8.0,
                          decode_ctx=1025.0 + np.arange(round_iter - 2))  # fmt: skip
    decodes = float(np.sum(steps))
    last = float(
        discrete_step(m, p, hw, eng, **kw, decode_seqs=8.0, decode_ctx=1025.0 + round_iter - 2,
                      prefill_tokens=1024, prefill_ctx=512.0)
    )  # fmt: skip
    start = eng.request_overhead_s  # the first eight reach the engine after it
    # the arrival falls in the window that ends at that round: after iteration round_iter - 60
    # ends (the count's last restart), before round_iter ends
    restart = start + first_round + float(np.sum(steps[: round_iter - 61]))
    assert restart < arrive_s + eng.request_overhead_s < start + first_round + decodes
    expected = start + first_round + decodes + last
    assert res.first_token_s[8] == pytest.approx(expected, rel=0.02)
    # without the balance the prompt goes in the first step after it reaches the engine
    _, free = _late_prompt(dsr1_h200, arrive_s, 0)
    assert free.ttft_s[8] < eng.request_overhead_s + 2 * last
    assert res.ttft_s[8] > free.ttft_s[8] + 0.5


def test_clients_start_is_checked_counted_and_reported():
    with pytest.raises(SpecError, match=r"clients_start 'burst' is not one of spread, together"):
        Traffic(clients=4, clients_start="burst")
    spread = Traffic(clients=4, num_requests=100)
    together = Traffic(clients=4, num_requests=100, clients_start="together")
    # a benchmark counts its run from the start; a loop started spread drops its first fifth
    assert (spread.warmup_requests, together.warmup_requests) == (20, 0)
    assert together.to_dict()["clients_start"] == "together"
    assert Traffic(arrival="burst", num_requests=10).to_dict()["clients_start"] is None


def test_clients_that_start_together_prefill_as_one_wave():
    """Eight clients of one request each, starting together on one GPU with a budget that
    holds all eight prompts: every request's first token comes at the end of the same step."""
    m, hw, p = load_model("llama-3.1-8b"), load_hardware("h200-sxm"), parse_precision("bf16")
    eng = load_engine("trtllm")
    tr = Traffic(clients=8, num_requests=8, isl=fixed(512), osl=fixed(32),
                 clients_start="together")  # fmt: skip
    r = simulate(m, hw, p, eng, tr)
    assert np.all(r.issue_s == 0.0)
    assert np.ptp(r.first_token_s) == 0.0


def test_cli_clients_start_together_in_the_json():
    out = CliRunner().invoke(
        main,
        ["estimate", "-m", "llama-3.1-8b", "-g", "h200-sxm", "-c", "8", "--percentiles",
         "--num-requests", "40", "--clients-start", "together", "--json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    tr = json.loads(out.output)["simulation"]["traffic"]
    assert (tr["clients_start"], tr["warmup_requests"]) == ("together", 0)


INFERENCEX_H200_ADP = (
    "source_id,model,gpu,num_gpus,precision,tp,pp,ep,dp,framework,isl,osl,concurrency_or_batch,"
    "metric,value,notes\n"
    # InferenceX, DeepSeek-R1-0528 FP8 on 8 x H200, TensorRT-LLM, 8k/1k, 64 clients, run of
    # 2025-11-02 (github.com/SemiAnalysisAI/InferenceX/actions/runs/19019430552): its script ran
    # attention-DP with the balance (timeout_iters 60); mean TTFT 4,995 ms
    "inferencex_api_fixture,DeepSeek-R1-0528,H200,8,fp8/?/?,8,,1,,trt,8192,1024,64,ttft_ms,"
    "4995.062101,aggregated single-node; spec_method=none; run date 2025-11-02\n"
    # the same campaign at 1k/1k: EP 8 without attention-DP (no balance), mean TTFT 755 ms
    "inferencex_api_fixture,DeepSeek-R1-0528,H200,8,fp8/?/?,8,,1,,trt,1024,1024,64,ttft_ms,"
    "754.612736,aggregated single-node; spec_method=none; run date 2025-11-02\n"
)


def test_validate_simulates_the_closed_loops_under_the_balance(tmp_path):
    """The 8k/1k run under the balance is priced by the simulator (its clients starting
    together, rank by rank), within 15% of its published TTFT. The 1k/1k run without
    attention-DP is InferenceX's client too: simulated, without the balance. An
    AIConfigurator row of the same plan (its harness's start-up share) stays analytic."""
    f = tmp_path / "ix.csv"
    f.write_text(INFERENCEX_H200_ADP)
    rows = validate([str(f)]).rows
    adp, ep = rows
    assert "adp" in adp["plan"] and "adp" not in ep["plan"]
    for r in rows:
        assert "simulated (closed, clients start together (the start-up waves run" in r["note"]
        assert "640 requests" in r["note"] and "InferenceX client" in r["note"]
    assert "attention-DP balance, rank by rank" in adp["note"]
    assert "rank by rank" not in ep["note"]
    assert abs(adp["error"]) < 0.15
    header = INFERENCEX_H200_ADP.splitlines()[0]
    aic_id = "2026_01_01_x_h200_sxm_trtllm_fp8_agg_1024x1024_c64_tp8_ep8"
    aic = (
        f"{header}\naic_silicon_sample,DeepSeek-R1,H200 SXM,8,fp8/?/?,8,1,8,,trtllm 1.1.0rc2,"
        f"1024,1024,64,ttft_ms,754.6,id={aic_id}; moe_tp=1\n"
    )
    f.write_text(aic)
    (row,) = validate([str(f)]).rows
    assert "simulated" not in row["note"] and "aic-dated harness" in row["note"]


def test_sglang_prefill_delayer_counts_only_the_passes_it_delays():
    """SGLang's delayer (PrefillDelayer._negotiate_should_allow_prefill_pure, T = max passes -
    1 = 29): a lone prompt starts an episode and waits all 29 passes, not the residual of a
    running count; a pass with no prompt anywhere ends the episode; every rank holding one lets
    them through; with nothing decoding the passes are idle loops and the prompts go."""
    r = Ranks(4, running=8, timeout=29, kind="delayer")
    r.decoding[:] = [1, 1, 0, 1]  # (no guard on the ranks decoding, unlike the executor)
    r.idle(100)
    assert r.hold(1) == 29
    r.held(10)
    assert r.hold(2) == 19
    r.held(19)
    assert r.hold(2) == 0 and r.count_iters == 0  # the 29th delayed pass was the last
    assert r.hold(1) == 29  # a new episode
    r.held(4)
    r.idle(1)  # a pass with no prompt anywhere ends it
    assert r.count_iters == 0 and r.hold(1) == 29
    r.held(6)
    assert r.hold(4) == 0 and r.count_iters == 0  # every rank has one
    # nothing decoding: the delay passes are idle loops; the prompts go and the episode ends
    assert r.hold(1) == 29
    r.held(10)
    r.decoding[:] = [0, 0, 0, 0]
    assert r.hold(1) == 0 and r.count_iters == 0
    r.decoding[:] = [1, 1, 1, 1]
    assert r.hold(1) == 29  # the next episode counts from its own first pass


def test_the_delayer_gates_new_prompts_and_the_executor_every_chunk():
    """A step with a begun prompt's chunk (request 0, rank 0) and a new prompt (request 1, rank
    1) on two of four ranks: the delayer lets the begun chunk go in a delayed pass and holds the
    new one; TensorRT-LLM's balance holds both."""
    chunks, rank_of = [(0, 512), (1, 1024)], [0, 1]
    fresh = {0: False, 1: True}.__getitem__
    d = Ranks(4, running=8, timeout=29, kind="delayer")
    d.decoding[:] = [1, 1, 1, 1]
    assert d.gate(chunks, rank_of, fresh) == ([(0, 512)], 0) and d.count_iters == 1
    ex = Ranks(4, running=8, timeout=60)
    ex.decoding[:] = [1, 1, 1, 1]
    assert ex.gate(chunks, rank_of, fresh) == ([], 59)


def test_the_hold_kind_is_an_engine_constant_checked_by_name():
    assert load_engine("sglang").adp_balance_kind == "delayer"
    assert load_engine("trtllm").adp_balance_kind == "executor"
    with pytest.raises(SpecError, match=r"adp_balance_kind='fifo' is not a known attention-DP "
                       r"hold; allowed: executor, delayer"):  # fmt: skip
        load_engine("trtllm").with_overrides(adp_balance_kind="fifo")


@pytest.mark.parametrize("adp", [False, True])
def test_a_preemption_that_leaves_nothing_running_does_not_stop_admission(dsr1_h200, adp):
    """Allocate-as-you-go admission with a KV cache of 6,000 tokens, prompts of 100-9,000 and
    outputs of 1-3,000: preemptions are frequent, and one may leave nothing running (its
    request's recompute no longer fits beside the others). Admission then goes on: every
    request whose whole context fits the cache (less vLLM's 1% watermark) finishes, and the
    unfinished are the dropped (a review found every later request left unfinished)."""
    from dataclasses import replace

    import llm_codesign.serving.simulate as sim
    from llm_codesign.specs.traffic import LengthDist

    m, hw, p = dsr1_h200
    eng = load_engine("trtllm").with_overrides(kv_admission="mean")
    tr = Traffic(arrival="poisson", rate_per_s=20, num_requests=200,
                 isl=LengthDist("uniform", 100, 9000, text="u"),
                 osl=LengthDist("uniform", 1, 3000, text="o"))  # fmt: skip
    reqs = tr.requests()
    axes = dict(tp=8, pp=1, ep=8, cp=1, attention_dp=adp)
    e = replace(sim.engine_for(m, hw, p, eng, axes, reqs, 0, 0.0, 200), kv_tokens=6000.0)
    steps = sim.decode_steps(reqs.osl, 0, 0.0, np.random.default_rng(0))
    counts = {"preemptions": 0, "rejected": 0, "steps": 0, "events": 0}
    _, first, finish = sim.run_replica(e, reqs, np.arange(200), steps, 0, counts)
    fits = reqs.isl + reqs.osl - 1 <= 6000 * (1 - sim.KV_WATERMARK)
    assert counts["preemptions"] > 0
    assert not np.any(np.isnan(finish) & fits)
    assert int(np.isnan(finish).sum()) == counts["rejected"]
