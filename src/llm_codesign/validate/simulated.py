"""Predictions of the rows the request simulator prices (``serving.simulate``): request-rate
rows (Poisson arrivals at the offered rate; "INF" rows as a burst of the benchmark's
requests), percentile metrics (``ttft_ms_p99``, ``itl_ms_median`` ...) of client-concurrency
and request-rate rows, and every metric of a client-concurrency row on attention-DP ranks whose
engine holds their prompts back (TensorRT-LLM's attention-DP context balance, SGLang's prefill
delayer: ``balanced_loop``): the simulator runs that rule rank by rank (``serving.sim_ranks``),
where the analytic closed loop prices it as a mean round window (``serving.balance``), which
misses what a benchmark's run does with it: a rank that receives two prompts in one window
releases one per round, and clients that start together arrive in waves for several rounds.
Every closed loop of InferenceX's client is simulated (``inferencex_loop``): its clients start
together (``traffic_of``), so its start-up waves last several of its ten rounds (lengths drawn on
0.8-1 L decorrelate them slowly), and its throughput is its requests' tokens over the run's
duration, which ends with the last round's drain.

Each distinct (plan, lengths, arrival, rate or clients, request count) is simulated once,
seed 0, with the benchmark's request count where the row states it (else
``UNSTATED_REQUESTS``). A closed loop runs its clients on one replica (as the analytic model
does); open-loop requests spread over ``metric_gpus / (tp x pp)`` replicas. TTFT, TPOT (ITL)
and E2E are the counted requests' mean or percentile; throughput is the run's, first request
sent to last finished, as a benchmark client measures it (a closed loop started spread, another
source's percentile row: its steady window, ``serving.sim_stats``). A closed loop whose run
thrashes is priced by the analytic model instead (``PREEMPTED_SHARE``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..report.launch_data import gpus_per_node
from ..serving.balance import holds_context
from ..serving.sim_table import THRASHING
from ..serving.simulate import simulate
from ..specs.engine import EngineConstants
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision
from ..specs.traffic import STEADY_REQUESTS_PER_CLIENT, LengthDist, Traffic, fixed
from .conventions import throughput_value
from .mapping import MappedRow, split_percentile
from .recipes import inferencex_lengths

UNSTATED_REQUESTS = 1000  # requests simulated when a row does not state the benchmark's count


def simulated(r: MappedRow, eng: EngineConstants | None = None) -> bool:
    """Whether the simulator prices this row: a request rate (or INF), a percentile, a closed
    loop of InferenceX's client (``inferencex_loop``), or (the row's engine ``eng`` given) a
    closed loop under the attention-DP balance (``balanced_loop``)."""
    return (
        bool(r.arrival)
        or split_percentile(r.metric) is not None
        or inferencex_loop(r)
        or (eng is not None and balanced_loop(r, eng))
    )


def inferencex_loop(r: MappedRow) -> bool:
    """A client-concurrency row of one aggregated replica measured by InferenceX's client
    (``r.mean_isl``: it draws its lengths), which starts its clients together and counts every
    request of its ten rounds: the start-up waves and the last round's drain (the run's
    duration ends at its last request, as ``benchmark_serving.py`` times it) run in the
    simulator instead of the analytic model's start-up share and steady state."""
    return r.mode == "concurrency" and r.pools is None and bool(r.mean_isl)


def balanced_loop(r: MappedRow, eng: EngineConstants) -> bool:
    """A client-concurrency row of one aggregated replica on attention-DP ranks whose engine
    ``eng`` holds their prompts back (``serving.balance.holds_context``)."""
    ranks = r.attention_dp and r.tp > 1
    return r.mode == "concurrency" and r.pools is None and ranks and holds_context(eng, True)


# a simulated run stops once its preemptions pass this share of its requests; a closed loop
# (not a percentile row) is then priced analytically (``THRASH_NOTE``). The simulator recomputes
# a preempted request and admits again at once, with none of the engines' admission back-off,
# so under KV pressure its runs thrash: DeepSeek-R1 FP8 on 8 x MI300X (SGLang, TP 8), 8k/1k,
# 1,024 clients preempted 370,686 times over 10,240 requests, TPOT 66x the analytic model's
PREEMPTED_SHARE = 0.05
THRASH_NOTE = (
    "priced analytically: its simulated run preempted more than one request in twenty (the "
    "simulator recomputes a preempted request and admits again at once, with none of the "
    "engines' admission back-off, so under KV pressure its runs thrash)"
)


def traffic_of(r: MappedRow) -> tuple[Traffic, int]:
    """The traffic a row's benchmark sent, and the replicas it spread over."""
    isl, osl = fixed(r.isl), fixed(r.osl)
    if r.mean_isl:  # a client that draws its lengths (InferenceX: floor(0.8 L) .. L)
        isl, osl = (
            LengthDist(
                "uniform", *map(float, inferencex_lengths(n)), text=f"uniform (InferenceX {n})"
            )
            for n in (r.isl, r.osl)
        )
    n = r.requests or UNSTATED_REQUESTS
    replicas = max(r.metric_gpus // max(r.tp * r.pp, 1), 1)
    if r.arrival == "poisson":
        return Traffic(
            arrival="poisson", rate_per_s=r.offered_rate, num_requests=n, isl=isl, osl=osl
        ), (replicas)
    if r.arrival == "burst":
        return Traffic(arrival="burst", num_requests=n, isl=isl, osl=osl), replicas
    clients = int(r.load)
    n = max(STEADY_REQUESTS_PER_CLIENT * clients, r.requests or UNSTATED_REQUESTS)
    # InferenceX's client (benchmark_serving.py) finishes its warmup requests, then starts its
    # clients together (--request-rate inf under the --max-concurrency semaphore) and counts
    # every request it sends; other closed loops start spread, a fifth left out
    start = "together" if r.mean_isl else "spread"
    return Traffic(clients=clients, num_requests=n, isl=isl, osl=osl, clients_start=start), 1


def _value(metric: str, res: Any, warm: int, gpus: int, node_gpus: float) -> float:
    pct = split_percentile(metric)
    base, q = pct if pct else (metric, None)
    s = res.summary
    keep = slice(warm, None)
    if base in ("ttft_ms", "tpot_ms", "itl_ms", "request_latency_ms", "tok_s_per_user"):
        x = {
            "ttft_ms": res.ttft_s,
            "tpot_ms": res.tpot_s,
            "itl_ms": res.tpot_s,
            "request_latency_ms": res.e2e_s,
            "tok_s_per_user": res.tpot_s,
        }[base][keep]
        x = x[np.isfinite(x)]
        if not x.size:
            return float("nan")
        if base == "tok_s_per_user":
            return float(1.0 / np.mean(x))
        return float((np.mean(x) if q is None else np.percentile(x, q)) * 1e3)
    out = s["output_tok_s_per_gpu"]
    return float(throughput_value(base, out, s["total_tok_s_per_gpu"] - out, gpus, node_gpus))


def predict_simulated(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    rows: list[MappedRow],
    spec: dict[str, Any],
) -> tuple[list[float], list[str], list[bool]]:
    """(prediction, note, whether the analytic model prices it instead) per row; NaN and the
    reason where the simulation cannot run, and ``THRASH_NOTE`` with True for a closed loop
    (not a percentile) whose run thrashed (``PREEMPTED_SHARE``)."""
    runs: dict[tuple[Any, ...], tuple[Any, int, int] | str] = {}
    vals, notes, analytic = [], [], []
    for r in rows:
        if r.mode not in ("concurrency", "rate") or r.pools is not None:
            vals.append(float("nan"))
            notes.append(
                f"percentile metric of a {r.mode} row (the simulator runs client-concurrency "
                "and request-rate rows)"
            )
            analytic.append(False)
            continue
        traffic, replicas = traffic_of(r)
        key = (r.tp, r.pp, r.ep, r.attention_dp, traffic, replicas)
        if key not in runs:
            res = simulate(
                model,
                hw,
                prec,
                eng,
                traffic,
                tp=r.tp,
                pp=r.pp,
                ep=r.ep,
                attention_dp=r.attention_dp,
                dp=replicas,
                max_preemptions=max(math.ceil(PREEMPTED_SHARE * traffic.count), 1),
                **spec,
            )
            gpus = r.tp * r.pp * (replicas if traffic.arrival != "closed" else 1)
            runs[key] = (res, traffic.warmup_requests, gpus) if res.feasible else res.reason
        run = runs[key]
        if isinstance(run, str):
            # a closed loop the analytic model prices too: back to it where the run thrashed
            back = run.endswith(THRASHING) and split_percentile(r.metric) is None and not r.arrival
            vals.append(float("nan"))
            notes.append(THRASH_NOTE if back else run)
            analytic.append(back)
            continue
        analytic.append(False)
        res, warm, gpus = run
        # per-GPU metrics are the run's; totals scale to the row's GPUs
        v = _value(r.metric, res, warm, r.metric_gpus, gpus_per_node(hw))
        vals.append(v)
        start = f", clients start {traffic.clients_start}" if traffic.arrival == "closed" else ""
        if traffic.arrival == "closed" and traffic.clients_start == "together":
            start += " (the start-up waves run; throughput over the run, first send to last finish)"
        hold = "SGLang's prefill delayer" if eng.adp_balance_kind == "delayer" else "balance"
        why = f"; the attention-DP {hold}, rank by rank" if balanced_loop(r, eng) else ""
        notes.append(f"simulated ({traffic.arrival}{start}, {traffic.count} requests, seed 0{why})")
    return vals, notes, analytic
