"""A benchmark client's run in the request simulator and in ``validate``: a closed loop whose
clients start together counts its throughput over the run, from the first request sent to the
last finished (``benchmark_serving.py``'s duration); a run that thrashes stops at its preemption
limit; ``validate`` simulates InferenceX's closed loops and prices one whose run thrashed
analytically."""

from __future__ import annotations

import numpy as np
from test_validate_conventions import disagg_row
from test_validate_recipes import IX_ROW

from llm_codesign import (
    Traffic,
    load_engine,
    load_hardware,
    load_model,
    parse_precision,
    simulate,
    validate,
)
from llm_codesign.specs.traffic import LengthDist, fixed
from llm_codesign.validate import map_row
from llm_codesign.validate.simulated import THRASH_NOTE, inferencex_loop


def test_clients_together_count_the_whole_run():
    """16 clients started together, 10 requests each, lengths drawn on 819..1024: throughput is
    every request's output tokens over (last finish - first send), as the benchmark divides
    them; the steady state (clients spread, a fifth left out) counts a window of sends."""
    m, hw, p = load_model("llama-3.1-8b"), load_hardware("h200-sxm"), parse_precision("bf16")
    eng = load_engine("vllm")
    lengths = LengthDist("uniform", 819.0, 1024.0)
    tr = Traffic(clients=16, num_requests=160, isl=lengths, osl=lengths, clients_start="together")
    r = simulate(m, hw, p, eng, tr)
    duration = np.max(r.finish_s) - np.min(r.issue_s)
    assert np.min(r.issue_s) == 0.0
    assert r.summary["window_s"] == duration
    assert r.summary["output_tok_s_per_gpu"] == np.sum(r.osl) / duration
    assert r.summary["total_tok_s_per_gpu"] == np.sum(r.isl + r.osl) / duration
    spread = simulate(m, hw, p, eng, Traffic(clients=16, num_requests=160, isl=lengths,
                                             osl=lengths))  # fmt: skip
    # the steady window ends at the last send, before the drain
    assert spread.summary["window_s"] < np.max(spread.finish_s) - np.min(spread.issue_s)


def test_a_thrashing_run_stops_at_its_preemption_limit():
    """Llama-3.1-8B FP8 on one L40S with vLLM, 256 clients of 4k/2k: the KV cache holds far
    fewer sequences than run, and the simulator (which recomputes a preempted request and
    admits again at once) preempts more often than it finishes requests. With a limit the run
    stops there, infeasible, and says why."""
    m, hw, p = load_model("llama-3.1-8b"), load_hardware("l40s"), parse_precision("fp8")
    eng = load_engine("vllm")
    tr = Traffic(clients=256, num_requests=1024, isl=fixed(4096), osl=fixed(2048),
                 clients_start="together")  # fmt: skip
    free = simulate(m, hw, p, eng, tr)
    assert free.feasible and free.summary["preemptions"] > free.summary["requests"]
    # it says so: more preemptions than requests, no admission back-off
    assert any("preemptions over 1024 requests" in n for n in free.notes)
    capped = simulate(m, hw, p, eng, tr, max_preemptions=52)
    assert not capped.feasible and "more than 52 preemptions" in capped.reason
    assert "thrashes" in capped.reason


def test_validate_prices_a_thrashing_inferencex_loop_analytically(tmp_path):
    """The same run as InferenceX's client: its simulated run preempts more than one request in
    twenty, so the analytic closed loop prices it (a finite TPOT, the note says why); a light
    row of the same table stays simulated."""
    head = "source_id,model,gpu,num_gpus,precision,tp,pp,ep,dp,framework,isl,osl,"
    head += "concurrency_or_batch,metric,value,notes\n"
    run = ",Llama-3.1-8B-Instruct,L40S,1,fp8/?/?,1,,1,,vllm (vllm/vllm-openai:v0.14.0),"
    note = "aggregated single-node; spec_method=none; run date 2026-05-18"
    f = tmp_path / "ix.csv"
    f.write_text(
        head
        + f"inferencex_api_fixture{run}4096,2048,256,tpot_ms,50,{note}\n"
        + f"inferencex_api_fixture{run}1024,1024,8,tpot_ms,10,{note}\n"
    )
    heavy, light = validate([str(f)]).rows
    assert np.isfinite(heavy["predicted"]) and heavy["predicted"] > 0
    assert THRASH_NOTE in heavy["note"] and "simulated (" not in heavy["note"]
    assert "simulated (closed, clients start together" in light["note"]


def test_which_rows_are_inferencex_closed_loops():
    """Only InferenceX's client-concurrency rows of an aggregated replica: not its request-rate
    rows, not its disaggregated pools, not another source's closed loop."""
    assert inferencex_loop(map_row(0, IX_ROW))
    rate = map_row(0, dict(IX_ROW, concurrency_or_batch="request rate INF", notes="640 requests"))
    assert not inferencex_loop(rate)
    aic = dict(IX_ROW, source_id="aic_silicon_sample", framework="sglang 0.5.9")
    assert not inferencex_loop(map_row(0, aic))
    pools = map_row(0, disagg_row(metric="tpot_ms"))
    assert pools.pools is not None and not inferencex_loop(pools)
