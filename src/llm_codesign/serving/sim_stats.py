"""Statistics of a simulated run (``serving.simulate``): mean and percentiles of TTFT, TPOT
and end-to-end latency, throughput and goodput under an SLA.

Which requests count and over what window:

* a closed loop whose clients start spread leaves out its first ``Traffic.warmup_requests``
  and measures the steady state: throughput from the moment the first counted request is sent
  to the moment the last request is sent (after it the clients stop and the loop drains),
  completions in that window over its length;
* a closed loop whose clients start together is a benchmark client's run, and open-loop
  traffic (rate, burst, trace) is too: every request counts, and throughput is over the run,
  from the first request sent to the last one finished (``benchmark_serving.py``'s duration),
  the start-up waves and the last round's drain included.

Percentiles are numpy's linear interpolation (``np.percentile``); TPOT of a request is
(E2E - TTFT) / (OSL - 1) (requests with OSL 1 have none).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..specs.traffic import Traffic

Array = np.ndarray
PERCENTILES = (50, 90, 99)


def distribution(x_ms: Array) -> dict[str, float | None]:
    """mean, p50, p90, p99 of finite values (None when there are none)."""
    x = np.asarray(x_ms, dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        return {"mean": None, **{f"p{p}": None for p in PERCENTILES}}
    out: dict[str, float | None] = {"mean": float(np.mean(x))}
    for p, v in zip(PERCENTILES, np.percentile(x, PERCENTILES)):
        out[f"p{p}"] = float(v)
    return out


def summarize_run(
    issue: Array,
    first: Array,
    finish: Array,
    isl: Array,
    osl: Array,
    traffic: Traffic,
    *,
    gpus_per_replica: int,
    replicas: int,
    closed: bool,
) -> dict[str, Any]:
    """The run's statistics (module docstring). ``replicas``: the replicas the simulated
    requests were spread over (a closed loop simulates one replica's clients: 1)."""
    n = len(issue)
    warm = traffic.warmup_requests
    counted = np.zeros(n, dtype=bool)
    counted[warm:] = True
    ran = np.isfinite(finish)
    use = counted & ran
    ttft = (first - issue) * 1e3
    e2e = (finish - issue) * 1e3
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(osl > 1, (finish - first) / np.maximum(osl - 1, 1), np.nan) * 1e3
    steady = closed and traffic.clients_start != "together"
    if steady and n - 1 > warm and issue[n - 1] > issue[warm]:
        start, end = float(issue[warm]), float(issue[n - 1])
        in_window = ran & (finish >= start) & (finish <= end)
    else:
        start = float(np.nanmin(issue[use])) if use.any() else 0.0
        end = float(np.nanmax(finish[use])) if use.any() else 0.0
        in_window = use
    span = max(end - start, 1e-12)
    rate = float(np.count_nonzero(in_window)) / span
    out_tokens = float(np.sum(osl[in_window])) / span
    all_tokens = float(np.sum((isl + osl)[in_window])) / span
    gpus = gpus_per_replica * replicas
    met = in_window.copy()
    if traffic.ttft_slo_ms is not None:
        met &= ttft <= traffic.ttft_slo_ms
    if traffic.tpot_slo_ms is not None:
        met &= ~(tpot > traffic.tpot_slo_ms)  # OSL 1: no TPOT, nothing to miss
    sla = traffic.ttft_slo_ms is not None or traffic.tpot_slo_ms is not None
    return {
        "requests": int(n),
        "counted_requests": int(np.count_nonzero(use)),
        "warmup_requests": int(warm),
        "ttft_ms": distribution(ttft[use]),
        "tpot_ms": distribution(tpot[use]),
        "e2e_ms": distribution(e2e[use]),
        "window_s": span,
        "request_rate_per_s": rate,
        "output_tok_s_per_gpu": out_tokens / gpus,
        "total_tok_s_per_gpu": all_tokens / gpus,
        "mean_in_flight": _mean_in_flight(issue[use], finish[use], start, end),
        "goodput": {
            "ttft_slo_ms": traffic.ttft_slo_ms,
            "tpot_slo_ms": traffic.tpot_slo_ms,
            "request_rate_per_s": float(np.count_nonzero(met)) / span if sla else None,
            "output_tok_s_per_gpu": float(np.sum(osl[met])) / span / gpus if sla else None,
            "share": float(np.count_nonzero(met)) / max(int(np.count_nonzero(in_window)), 1)
            if sla
            else None,
        },
        "seed": traffic.seed,
    }


def _mean_in_flight(issue: Array, finish: Array, start: float, end: float) -> float:
    """Time-averaged requests in flight (sent, not finished) over [start, end], counted
    requests only: Little's law says it equals rate x mean E2E."""
    if end <= start:
        return 0.0
    lo = np.clip(issue, start, end)
    hi = np.clip(finish, start, end)
    return float(np.sum(np.maximum(hi - lo, 0.0)) / (end - start))
