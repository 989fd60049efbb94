"""Runs of a closed-loop concurrency sweep that contradict the rest of their own sweep.

A sweep is one source's rows of one configuration (model, GPU, precision, engine and the release
the row states, plan, input and output lengths) measured at several client concurrencies; a run
is the sweep's rows at one concurrency. Two releases of one engine are two engines: a campaign
that measured some concurrencies on vLLM 0.11.2 and the others on 0.18.0 holds two sweeps. In a
steady closed loop two bounds hold between any two runs at concurrencies C1 < C2 (TPOT: the mean
time per output token):

* more sequences never make a step faster: TPOT(C2) >= TPOT(C1). An engine whose batch limit is
  below C2 keeps TPOT at its limit's value (the other clients queue, TTFT grows); TPOT does not
  fall.
* a step of more sequences costs at most as much as that many steps of fewer:
  TPOT(C2) <= (C2 / C1) x TPOT(C1). Batching k times the sequences never takes longer than running
  the k batches one after the other, and the prompts that interrupt decoding grow at most in
  proportion to the clients.

Each bound holds within ``SWEEP_TOLERANCE`` (client lengths drawn at random, run-to-run noise).
A run that breaks the bounds against more of its sweep than any other run is not a measurement
of that configuration in steady state (a benchmark whose requests failed or timed out reports
such TPOTs: AIConfigurator's TensorRT-LLM Qwen3-32B run at 2 clients on GB200 measures 41.9 ms
where 1 client measures 8.1 ms and 8 clients 27.6 ms). :func:`contradicting_runs` removes such
runs one at a time, the one that breaks the most pairs first, until no pair breaks a bound or
the sweep cannot tell which run is wrong (two runs that break only each other). ``validate``
keeps such a run's rows in its figures as measured, their note ending in the pairs the run
breaks; ``calibrate-fit`` does not fit to them (no model monotone in load can meet them).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Hashable, Iterable
from typing import NamedTuple

from .campaigns import aic_campaign, run_date
from .mapping import MappedRow

# relative slack on both bounds: random client lengths (InferenceX draws them on 0.8 L .. L) and
# run-to-run noise move a TPOT by 10-20% (DeepSeek-R1 on 8 x H200 with TensorRT-LLM, the same
# InferenceX configuration at 8 and 256 clients on two run dates: 11-20% apart between
# inferencex_hopper.csv and its AIConfigurator copy in aic_silicon_moe_hopper.csv)
SWEEP_TOLERANCE = 0.25
# the metric a run's TPOT is read from (the mean; percentiles and ITL are not the same quantity)
TPOT_METRIC = "tpot_ms"


def breaks_bounds(c1: float, tpot1: float, c2: float, tpot2: float) -> bool:
    """Whether two runs of one sweep, at concurrencies ``c1`` and ``c2`` with mean TPOTs
    ``tpot1`` and ``tpot2``, break a closed-loop bound (module docstring) by more than
    ``SWEEP_TOLERANCE``.

    Example: 64 clients at 9.7 ms and 512 at 4.7 ms: 4.7 < 0.75 x 9.7 -> True; 1 client at
    8.1 ms and 2 at 41.9 ms: 41.9 > 1.25 x 2 x 8.1 -> True; 4 at 4.0 ms, 8 at 4.7 ms -> False.
    """
    if c1 > c2:
        c1, tpot1, c2, tpot2 = c2, tpot2, c1, tpot1
    if c1 == c2:
        return False
    return (
        tpot2 < (1.0 - SWEEP_TOLERANCE) * tpot1
        or tpot2 > (1.0 + SWEEP_TOLERANCE) * (c2 / c1) * tpot1
    )


def _violations(tpot: dict[float, float], runs: list[float]) -> dict[float, list[float]]:
    """For each run, the runs of ``runs`` it breaks a bound with."""
    return {c: [o for o in runs if o != c and breaks_bounds(c, tpot[c], o, tpot[o])] for c in runs}


def _sweep_outliers(tpot: dict[float, float]) -> dict[float, list[float]]:
    """The runs (concurrency -> the runs it breaks bounds with) to remove from one sweep."""
    runs = sorted(tpot)
    removed: dict[float, list[float]] = {}
    while len(runs) >= 3:
        broken = _violations(tpot, runs)
        worst = max(len(v) for v in broken.values())
        if worst == 0:
            break
        candidates = [c for c in runs if len(broken[c]) == worst]

        def left(c: float) -> int:
            rest = [r for r in runs if r != c]
            return sum(len(v) for v in _violations(tpot, rest).values())

        remaining = {c: left(c) for c in candidates}
        fewest = min(remaining.values())
        chosen = [c for c in candidates if remaining[c] == fewest]
        if len(chosen) > 1:  # the sweep cannot tell which of them is wrong
            break
        removed[chosen[0]] = broken[chosen[0]]
        runs.remove(chosen[0])
    return removed


def contradicting_runs(
    points: Iterable[tuple[Hashable, float, float]],
) -> dict[tuple[Hashable, float], str]:
    """The runs that contradict their sweep, each with the reason ``validate`` notes.

    ``points``: (sweep key, concurrency, mean TPOT in ms) of every closed-loop TPOT row; rows of
    one sweep at one concurrency are one run (their median TPOT). Returns {(sweep key,
    concurrency): reason}; sweeps of fewer than three runs flag nothing.

    Example:
        >>> pts = [("s", c, t) for c, t in ((4, 4.0), (8, 4.7), (16, 5.8), (32, 15.9), (64, 9.7))]
        >>> list(contradicting_runs(pts))
        [('s', 32)]
    """
    values: dict[Hashable, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for key, load, tpot_ms in points:
        if load > 0 and tpot_ms > 0:
            values[key][load].append(tpot_ms)
    out: dict[tuple[Hashable, float], str] = {}
    for key, by_load in values.items():
        tpot = {c: statistics.median(v) for c, v in by_load.items()}
        for c, against in _sweep_outliers(tpot).items():
            pairs = ", ".join(f"{tpot[o]:.3g} ms at {o:g}" for o in against)
            out[(key, c)] = (
                f"contradicts its own concurrency sweep (validate.consistency): TPOT "
                f"{tpot[c]:.3g} ms at {c:g} clients against {pairs} (a steady closed loop's "
                f"TPOT neither falls nor grows faster than the clients, "
                f"+/-{SWEEP_TOLERANCE:.0%})"
            )
    return out


class Sweep(NamedTuple):
    """A closed-loop sweep's identity (:func:`sweep_key`)."""

    source: str
    run: str
    model: str
    gpu: str
    precision: str
    engine: str
    release: str
    plan: str
    isl: int
    osl: int


def sweep_key(source_id: str, row: MappedRow) -> Sweep | None:
    """The sweep a mapped closed-loop row belongs to (None for other modes): its source, the run
    it is part of (an AIConfigurator campaign, an InferenceX run date; "" where the source names
    none), model, GPU, precision, engine, the framework text the row states (its release: one
    release, one engine; blank where the row names none), plan and lengths."""
    if row.mode != "concurrency":
        return None
    notes = row.raw.get("notes", "")
    run = aic_campaign(source_id, notes) or run_date(row.raw)
    release = " ".join(row.raw.get("framework", "").lower().split())
    return Sweep(source_id, run, row.model, row.hardware, row.precision, row.engine, release,
                 row.plan_label, row.isl, row.osl)  # fmt: skip


def mapped_contradictions(
    rows: list[MappedRow],
) -> tuple[list[Sweep | None], dict[tuple[Hashable, float], str]]:
    """Each mapped row's sweep key (:func:`sweep_key`) and the runs among them that contradict
    their sweep (:func:`contradicting_runs` of the rows' mean TPOTs)."""
    keys = [sweep_key(r.source_id, r) for r in rows]
    points = [
        (k, r.load, r.measured)
        for k, r in zip(keys, rows)
        if k is not None and r.metric == TPOT_METRIC
    ]
    return keys, contradicting_runs(points)


def consistent_rows(rows: list[MappedRow]) -> list[MappedRow]:
    """``rows`` without the runs that contradict their sweep (``calibrate.fit.load_rows``: no
    fit to them)."""
    keys, flagged = mapped_contradictions(rows)
    return [r for k, r in zip(keys, rows) if k is None or (k, r.load) not in flagged]
