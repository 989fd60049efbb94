"""Latency targets as percentiles (``frontier --slo p99``): the request simulator decides, near
the targets' boundary, which point is the best one that meets them.

The analytic model gives the means of a closed loop. A percentile of a request's TTFT or TPOT is
at least its median and, for these right-skewed latencies, at least the mean: a point whose
means miss a target misses it at any percentile above the median too, so only points whose
means meet the targets can meet the percentile. Among those, the best (highest output
tokens/s/GPU) sits where latency is closest to the targets: ``choose_best`` simulates the
candidates in that order (``serving.simulate``: a closed loop of the point's concurrency per
replica, fixed ISL/OSL, ``specs.traffic.default_requests``: 2,000 requests, at least 10 a
client) and stops at the first whose percentile meets the targets. Points the analytic model
already rules out are never simulated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SpecError
from ..serving.simulate import simulate
from ..specs.traffic import DEFAULT_REQUESTS, Traffic, fixed
from .points import MODE_DISAGGREGATED, Points
from .result import Targets
from .runner import Job

SLO_STATISTICS = ("mean", "p50", "p90", "p99")
SLO_MAX_SIMULATED = 64  # candidates simulated before giving up (each is one simulation)

Array = np.ndarray


def check_statistic(statistic: str) -> str:
    if statistic not in SLO_STATISTICS:
        raise SpecError(
            f"slo {statistic!r} is not a latency statistic; allowed: {', '.join(SLO_STATISTICS)}"
        )
    return statistic


def _simulated(job: Job, pts: Points, i: int, statistic: str) -> dict[str, Any]:
    """The point's TTFT and TPOT at ``statistic`` (ms) from a closed-loop simulation."""
    clients = max(int(round(float(pts["concurrency"][i]))), 1)
    traffic = Traffic(
        arrival="closed",
        clients=clients,
        isl=fixed(job.isl),
        osl=fixed(job.osl),
    )
    r = simulate(
        job.model,
        job.hw,
        job.precisions[int(pts["precision"][i])],
        job.eng,
        traffic,
        tp=int(pts["tp"][i]),
        pp=int(pts["pp"][i]),
        ep=int(pts["ep"][i]),
        cp=int(pts["cp"][i]),
        attention_dp=bool(pts["attention_dp"][i]),
        spec_tokens=job.spec_tokens,
        spec_acceptance=job.spec_acceptance,
    )
    s = r.summary
    return {
        "point": i,
        "feasible": bool(r.feasible),
        "reason": r.reason,
        "ttft_ms": (s.get("ttft_ms") or {}).get(statistic),
        "tpot_ms": (s.get("tpot_ms") or {}).get(statistic),
        "requests": s.get("requests"),
    }


def _meets(row: dict[str, Any], targets: Targets) -> bool:
    if not row["feasible"]:
        return False
    ttft, tpot = row["ttft_ms"], row["tpot_ms"]
    if targets.ttft_ms is not None and (ttft is None or ttft > targets.ttft_ms):
        return False
    if targets.tpot_ms is not None and tpot is not None and tpot > targets.tpot_ms:
        return False  # (OSL 1: no TPOT, nothing to miss)
    if targets.min_tok_s_per_user is not None and tpot is not None:
        if 1e3 / tpot < targets.min_tok_s_per_user:
            return False
    return True


def choose_best(
    job: Job, pts: Points, met: Array, targets: Targets, statistic: str
) -> tuple[int | None, dict[str, Any]]:
    """The best point whose latency at ``statistic`` meets ``targets`` (index into ``pts`` or
    None) and what was checked: ``{"statistic", "requests", "checked": [...], "skipped":
    ...}``. ``met``: the points whose analytic means meet the targets (the candidates)."""
    report: dict[str, Any] = {
        "statistic": statistic,
        "requests": DEFAULT_REQUESTS,  # (a closed loop: at least 10 a client, default_requests)
        "checked": [],
        "skipped_disaggregated": 0,
        "note": "",
    }
    cand = np.flatnonzero(met)
    cand = cand[np.argsort(-pts["output_tok_s_per_gpu"][cand], kind="stable")]
    for i in cand:
        if int(pts["mode"][i]) == MODE_DISAGGREGATED:
            report["skipped_disaggregated"] += 1  # the simulator runs no disaggregated closed loop
            continue
        if len(report["checked"]) >= SLO_MAX_SIMULATED:
            report["note"] = (
                f"none of the {SLO_MAX_SIMULATED} highest-throughput points whose means meet "
                f"the targets meets them at {statistic}"
            )
            return None, report
        row = _simulated(job, pts, int(i), statistic)
        row["met"] = _meets(row, targets)
        report["checked"].append(row)
        if row["met"]:
            return int(i), report
    if not report["note"]:
        report["note"] = f"no point whose means meet the targets meets them at {statistic}"
    return None, report
