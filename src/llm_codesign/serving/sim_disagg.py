"""Request-level simulation of a disaggregated deployment (``serving.simulate`` for one
aggregated replica): x prefill workers feed y decode workers over a KV transfer, as
``serving.disaggregated`` prices them in the mean.

* prefill pool: a FCFS queue served by x workers; a free worker takes the prompts waiting
  (at most ``prefill_batch``) and prefills them in steps of ``max_num_tokens`` per
  scheduling rank; the step that ends a batch yields its prompts' first tokens (TTFT);
* KV transfer: each request's KV moves to a decode worker (``kv_transfer_time``, affine in
  the prompt's tokens);
* decode pool: requests go to the y workers round robin in the order their KV arrives; each
  worker is the aggregated scheduler (``run_replica``) with no prompts to prefill: admission
  by KV and batch, decode steps, preemption under allocate-as-you-go admission.

Open-loop traffic only (a rate, a burst, a trace): the pools then decouple (the decode pool
cannot hold back the prefill pool's arrivals), so each is simulated in turn. A closed loop's
next request waits for the decode pool, which couples them both ways: refused, with the reason.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import replace

import numpy as np

from ..errors import SpecError
from ..specs.context import context_share_note
from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import DisaggregatedPlan
from ..specs.precision import Precision
from ..specs.traffic import Traffic
from .disaggregated import kv_transfer_time
from .sim_stats import summarize_run
from .sim_table import engine_for
from .simulate import SimulationResult, decode_steps, run_replica

Array = np.ndarray


def simulate_disaggregated(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    traffic: Traffic,
    plan: DisaggregatedPlan,
) -> SimulationResult:
    """Simulate open-loop ``traffic`` on the pools of ``plan`` (module docstring)."""
    if traffic.arrival == "closed":
        raise SpecError(
            "a disaggregated simulation takes open-loop traffic (an arrival rate, a burst or a "
            "trace): a closed loop couples the prefill and decode pools"
        )
    hw.compute_rate_class(prec.compute_class)
    eng = for_gpu(eng, hw)  # (the runtime's limits on hw: specs.gpu_defaults)
    wall = time.perf_counter()
    reqs = traffic.requests()
    n = len(reqs.isl)
    steps = decode_steps(reqs.osl, 0, 0.0, np.random.default_rng([traffic.seed, 1]))
    pre_axes, dec_axes = plan.axes("prefill"), plan.axes("decode")
    pre = engine_for(model, hw, prec, eng, pre_axes, reqs, 0, 0.0, plan.prefill_batch)
    per_worker = -(-n // plan.decode_workers)
    dec = engine_for(model, hw, prec, eng, dec_axes, reqs, 0, 0.0, per_worker)
    issue = reqs.arrival_s.astype(float)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    for role, e in (("prefill", pre), ("decode", dec)):
        if isinstance(e, str):
            return SimulationResult(
                issue, first, finish, reqs.isl, reqs.osl, {}, feasible=False, reason=f"{role}: {e}"
            )
    assert not isinstance(pre, str) and not isinstance(dec, str)
    first = _prefill_pool(pre, reqs.isl, issue + eng.request_overhead_s, plan)
    # the KV transfer: affine in the prompt's tokens (latency + bytes over the links)
    gp, gd = plan.prefill.gpus_per_replica, plan.decode.gpus_per_replica
    ends = [
        float(
            np.reshape(
                kv_transfer_time(
                    model, hw, prec, eng, *map(np.asarray, (gp, gd, plan.num_gpus)), x
                )[0],
                -1,
            )[0]
        )
        for x in (1, 2)
    ]
    transfer = ends[0] + (reqs.isl - 1) * (ends[1] - ends[0])
    at_decode = first + transfer
    order = np.argsort(at_decode, kind="stable")
    counts = {"preemptions": 0, "rejected": 0, "steps": 0, "events": 0}
    dec0 = replace(dec, overhead_s=0.0)  # the request overhead was paid before the prefill
    shifted = replace(reqs, arrival_s=at_decode)
    for w in range(plan.decode_workers):
        idx = order[w :: plan.decode_workers]
        if idx.size:
            _, _, done = run_replica(dec0, shifted, idx, steps, 0, counts, prefilled=True)
            finish[idx] = done
    summary = summarize_run(
        issue,
        first,
        finish,
        reqs.isl,
        reqs.osl,
        traffic,
        gpus_per_replica=plan.num_gpus,
        replicas=1,
        closed=False,
    )
    summary.update(counts)
    summary["table_points"] = pre.table.points + dec.table.points
    summary["kv_transfer_ms_mean"] = float(np.mean(transfer)) * 1e3
    summary["wall_s"] = time.perf_counter() - wall
    notes = context_share_note(model, reqs.isl, reqs.osl)  # (lengths past the window)
    if counts["rejected"]:
        notes.append(f"{counts['rejected']} requests never fit a decode worker's KV cache")
    return SimulationResult(issue, first, finish, reqs.isl, reqs.osl, summary, notes=notes)


def _prefill_pool(e, isl: Array, arrive: Array, plan: DisaggregatedPlan) -> Array:
    """First-token times: FCFS over ``prefill_workers`` workers, each taking up to
    ``prefill_batch`` waiting prompts per batch, prefilled in steps of the worker's budget."""
    n = len(isl)
    order = np.argsort(arrive, kind="stable").tolist()
    arr = arrive.tolist()
    lengths = isl.tolist()
    free = [(0.0, w) for w in range(plan.prefill_workers)]  # (free at, worker)
    heapq.heapify(free)
    first = [float("nan")] * n
    k = 0
    while k < n:
        at, w = heapq.heappop(free)
        start = max(at, arr[order[k]])
        batch = [order[k]]
        k += 1
        while k < n and len(batch) < plan.prefill_batch and arr[order[k]] <= start:
            batch.append(order[k])
            k += 1
        left = float(sum(lengths[i] for i in batch))
        ctx = float(np.mean([lengths[i] for i in batch])) / 2.0
        t = start
        while left > 0:
            chunk = min(left, e.budget)
            t += e.table.mixed(0, chunk, 16.0, ctx)
            left -= chunk
        for i in batch:
            first[i] = t
        heapq.heappush(free, (t, w))
    return np.asarray(first)
