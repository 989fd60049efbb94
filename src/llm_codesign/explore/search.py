"""The deployment search: every plan x precision x concurrency (aggregated) and, on request,
disaggregated prefill/decode pools, reduced to the throughput-interactivity frontier.

Concurrency per replica runs over a geometric grid (``points_per_octave`` per doubling, plus
the limit) from 1 to the engine's concurrency cap (``serving.memory.concurrency_cap``: what the
KV cache holds and ``max_batch_size``; serving queues clients beyond it, so more concurrency
only adds TTFT).

Adaptive refinement (default when the full grid exceeds 20,000 points): every plan is first
evaluated at every other power of two; around each coarse point within ``refine_tolerance``
(25%) of the coarse frontier (or of the frontier of points meeting the latency targets) the full
grid is evaluated out to the neighbouring coarse points. ``refine=False`` evaluates the full grid
everywhere; tests check both give the same frontier. Large sweeps run on a forked process pool
(``workers``), chunk by chunk, so memory stays bounded.

Example:
    >>> f = frontier("llama-3.1-8b", "h200-sxm", num_gpus=1, isl=1024, osl=256, precision="fp8")
    >>> y = f.pareto_points()["output_tok_s_per_gpu"]
    >>> bool(all(a > b for a, b in zip(y, y[1:])))
    True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..calibrate import resolve_hardware
from ..errors import SpecError
from ..pareto import AREA_RANGE, pareto_mask, staircase
from ..serving import bound_split, economics, pipelined_step, region_of
from ..serving.memory import concurrency_cap, kv_context
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec, load_model
from ..specs.precision import Precision
from ..specs.workload import check_speculative
from .disagg import disaggregated_points
from .export import StreamingCSV, write_csv
from .grid import POINTS_PER_OCTAVE, concurrency_grid, grid_count, memory_limit, refine_grid
from .plans import PlanTable, enumerate_plans
from .points import FLOAT_COLUMNS, Points
from .precisions import choose_precisions
from .result import READINGS_AT, Frontier, Targets
from .runner import Executor, Job, Progress, default_workers, split_tasks
from .slo import check_statistic, choose_best

Array = np.ndarray

COARSE_POINTS_PER_OCTAVE = 0.5  # first pass of the adaptive search: every other power of two
REFINE_TOLERANCE = 0.25
CHUNK_POINTS = 32768
PARALLEL_MIN_POINTS = 8000  # searches smaller than this run inline (a pool costs ~10 ms a worker)
REFINE_MIN_POINTS = 20000  # smaller full grids are evaluated directly (fewer evaluate calls)
KEEP_ALL_MAX_POINTS = 1_000_000


def _near_frontier(p: Points, front: Points, tol: float) -> Array:
    """Points within ``tol`` of the frontier: scaled up by 1 + tol they would not be dominated."""
    if len(front) == 0:
        return np.zeros(len(p), dtype=bool)
    s = 1.0 + tol
    f = staircase(front["tok_s_per_user"], front["output_tok_s_per_gpu"], p["tok_s_per_user"] * s)
    return p["feasible"] & (p["output_tok_s_per_gpu"] * s >= f)


class _Reducer:
    """Keeps every point, or only the running Pareto set (plus target-meeting Pareto set)."""

    def __init__(self, keep_all: bool, targets: Targets):
        self.keep_all = keep_all
        self.targets = targets
        self.parts: list[Points] = []
        self.evaluated = 0
        self.feasible = 0

    def add(self, p: Points) -> None:
        self.evaluated += len(p)
        self.feasible += int(np.count_nonzero(p["feasible"]))
        if self.keep_all:
            self.parts.append(p)
            return
        merged = Points.concat(self.parts + [p])
        self.parts = [merged.take(np.flatnonzero(_keep_mask(merged, self.targets)))]

    def result(self) -> Points:
        return Points.concat(self.parts)


def _keep_mask(p: Points, targets: Targets) -> Array:
    f = p["feasible"]
    keep = f & pareto_mask(
        np.where(f, p["tok_s_per_user"], np.nan), np.where(f, p["output_tok_s_per_gpu"], np.nan)
    )
    if targets.any:
        met = targets.met(p)
        keep |= met & pareto_mask(
            np.where(met, p["tok_s_per_user"], np.nan),
            np.where(met, p["output_tok_s_per_gpu"], np.nan),
        )
    return keep


def _invalid_rows(plans: PlanTable, ids: Array, pi: int, reason: Array) -> Points:
    n = len(plans)
    cols: dict[str, Array] = {
        "precision": np.full(n, pi, dtype=np.int64),
        "plan_id": ids,
        "tp": plans.tp,
        "pp": plans.pp,
        "ep": plans.ep,
        "cp": plans.cp,
        "attention_dp": plans.attention_dp,
        "dp": plans.dp,
        "concurrency": np.ones(n),
        "reason": reason,
        "num_gpus": (plans.tp * plans.pp * plans.dp).astype(float),
    }
    for name in FLOAT_COLUMNS:
        if name not in cols:
            cols[name] = np.full(n, np.nan)
    return Points(cols)


def frontier(
    model: str | Path | ModelSpec,
    hardware: str | Path | HardwareSpec,
    num_gpus: int = 8,
    isl: int = 1024,
    osl: int = 1024,
    *,
    precision: str | Precision | Sequence[str | Precision] | None = None,
    engine: str | Path | EngineConstants | None = None,
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    min_tok_s_per_user: float | None = None,
    disagg: bool = False,
    helix: bool = True,
    attention_dp: bool = True,
    max_pp: int | None = None,
    points_per_octave: int = POINTS_PER_OCTAVE,
    max_batch: int | None = None,
    refine: bool = True,
    refine_tolerance: float = REFINE_TOLERANCE,
    keep_points: str = "auto",
    workers: int | None = None,
    chunk_points: int = CHUNK_POINTS,
    progress: bool | None = None,
    area_range: tuple[float, float] = AREA_RANGE,
    readings_at: Sequence[float] = READINGS_AT,
    on_chunk: Callable[[Points, tuple[Precision, ...]], None] | None = None,
    csv_path: str | Path | None = None,
    label: str = "",
    spec_tokens: int = 0,
    spec_acceptance: float = 0.0,
    max_accuracy_drop: float | None = None,
    allow_unknown_accuracy: bool = False,
    measured_accuracy: dict[str, Any] | None = None,
    power_w: float | None = None,
    usd_per_gpu_hour: float | None = None,
    slo: str = "mean",
) -> Frontier:
    """Search deployments of ``model`` on ``num_gpus`` x ``hardware`` and return the frontier.

    Precisions (``explore.precisions.choose_precisions``): the given ones, else every native
    default plus the checkpoint's own; ``max_accuracy_drop`` (benchmark points) keeps those
    whose published drop is within it (``allow_unknown_accuracy`` also keeps those without a
    published number); ``measured_accuracy`` is a ``quant inspect`` result of the user's
    weights. Every point carries its precision's accuracy estimate (``Frontier.accuracy``) and
    its power and cost (``serving.economics``: ``power_w`` per GPU, default the TDP;
    ``usd_per_gpu_hour`` adds $ per million output tokens).

    Every evaluated point is kept (``keep_points="all"``; ``"pareto"`` keeps only the running
    Pareto set so a 10^7-point sweep runs in bounded memory; ``"auto"`` switches above
    1,000,000 planned points). ``on_chunk(points, precisions)`` sees every evaluated chunk
    (streamed CSV). ``csv_path`` writes every evaluated point: at the end with ``pareto`` flags
    when all points are kept, else streamed as chunks arrive (flags blank); an interrupted run
    leaves no file. ``workers`` > 1 forks that many processes for large sweeps (default: the
    CPUs available). Units: ``ttft_ms``/``tpot_ms`` milliseconds, ``min_tok_s_per_user`` tok/s.
    ``spec_tokens`` / ``spec_acceptance``: speculative decoding or MTP with a stated acceptance
    rate (aggregated points; see :func:`serving.evaluate`). ``slo`` (``mean``, ``p50``, ``p90``,
    ``p99``): the statistic the latency targets hold for; a percentile picks the best point with
    the request simulator near the targets (``explore.slo.choose_best``).

    Example:
        >>> f = frontier("llama-3.1-8b", "h100-sxm", num_gpus=2, isl=512, osl=128, precision="fp8")
        >>> f.area > 0 and len(f.pareto) > 3
        True
    """
    t0 = time.perf_counter()
    m = load_model(model)
    hw = resolve_hardware(hardware)  # a bundled id, a YAML/JSON spec or a calibration profile
    eng = load_engine(engine, hw)
    for name, v in (
        ("num_gpus", num_gpus),
        ("isl", isl),
        ("osl", osl),
        ("points_per_octave", points_per_octave),
        ("max_batch", 1 if max_batch is None else max_batch),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise SpecError(f"{name} must be a positive integer, got {v!r}")
    if points_per_octave > 4096:
        raise SpecError(
            f"points_per_octave={points_per_octave} is beyond integer resolution (max 4096)"
        )
    economics(1.0, hw.tdp_w, power_w=power_w, usd_per_gpu_hour=usd_per_gpu_hour)  # validates
    check_speculative(int(spec_tokens), float(spec_acceptance))
    check_statistic(slo)
    if keep_points not in ("auto", "all", "pareto"):
        raise SpecError(f"keep_points must be 'auto', 'all' or 'pareto', got {keep_points!r}")
    if not 0 <= refine_tolerance <= 10:
        raise SpecError(f"refine_tolerance must lie in [0, 10], got {refine_tolerance}")
    if max_batch is not None:
        eng = eng.with_overrides(max_batch_size=int(max_batch))
    targets = Targets(ttft_ms, tpot_ms, min_tok_s_per_user)
    precs, accuracy, decisions = choose_precisions(
        m,
        hw,
        precision,
        max_accuracy_drop=max_accuracy_drop,
        allow_unknown_accuracy=allow_unknown_accuracy,
        measured=measured_accuracy,
    )
    plans = enumerate_plans(
        m,
        hw,
        int(num_gpus),
        max_pp=max_pp,
        helix=helix,
        attention_dp=attention_dp,
        partial_ep=eng.moe_partial_ep,
    )
    job = Job(m, hw, eng, precs, int(isl), int(osl), int(spec_tokens), float(spec_acceptance))
    n_workers = default_workers() if workers is None else max(int(workers), 1)
    fine_ppo = int(points_per_octave)

    # ---- per precision: memory limit per plan, invalid rows, coarse grid ----
    valid_idx = np.flatnonzero(plans.valid)
    pv = plans.take(valid_idx)
    invalid: list[Points] = []
    grids: list[tuple[int, Array]] = []  # (precision index, concurrency limit per valid plan)
    ctx = float(kv_context(eng, isl, osl))  # (the same for every precision)
    for pi, prec in enumerate(precs):
        lim, usable, no_kv = memory_limit(m, hw, prec, eng, pv, ctx, job.spec_tokens)
        lim = concurrency_cap(eng, lim, pv.tp, pv.attention_dp)
        no_fit = no_kv != ""  # (the weights, the profiled step, one sequence's KV)
        no_seq = ~no_fit & (lim < 1)
        reason = np.where(no_fit, no_kv, np.where(no_seq, "oom", ""))
        bad = np.concatenate([np.flatnonzero(~plans.valid), valid_idx[no_fit | no_seq]])
        invalid.append(
            _invalid_rows(
                plans.take(bad),
                bad,
                pi,
                np.concatenate([plans.reason[~plans.valid], reason[no_fit | no_seq]]).astype(
                    object
                ),
            )
        )
        grids.append((pi, np.where(no_fit | no_seq, 0, lim)))

    def task(pi: int, row: Array, conc: Array) -> tuple[int, dict[str, Array]]:
        return (
            pi,
            {
                "plan_id": valid_idx[row],
                "tp": pv.tp[row],
                "pp": pv.pp[row],
                "ep": pv.ep[row],
                "cp": pv.cp[row],
                "attention_dp": pv.attention_dp[row],
                "dp": pv.dp[row],
                "concurrency": conc,
            },
        )

    def grid_tasks(ppo: float, per: int) -> Iterator[tuple[int, dict[str, Array]]]:
        """Chunks of about ``per`` points over consecutive plans, built lazily (bounded memory)."""
        for pi, lim in grids:
            counts = grid_count(lim, ppo)
            block = (np.cumsum(counts) - 1) // max(per, 1)
            starts = (
                np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
                if len(block)
                else np.zeros(0, dtype=np.int64)
            )
            for lo, hi in zip(starts.tolist(), starts[1:].tolist() + [len(lim)]):
                row, conc = concurrency_grid(lim[lo:hi], ppo)
                if len(row):
                    yield task(pi, row + lo, conc)

    planned_fine = int(sum(grid_count(lim, fine_ppo).sum() for _, lim in grids))
    refining = (
        bool(refine) and fine_ppo > COARSE_POINTS_PER_OCTAVE and planned_fine >= REFINE_MIN_POINTS
    )
    coarse_ppo = COARSE_POINTS_PER_OCTAVE if refining else fine_ppo
    planned = int(sum(grid_count(lim, coarse_ppo).sum() for _, lim in grids))
    keep_all = keep_points == "all" or (
        keep_points == "auto" and planned_fine <= KEEP_ALL_MAX_POINTS
    )
    reducer = _Reducer(keep_all, targets)
    for p in invalid:
        reducer.add(p)
    bar = Progress(planned, progress)
    sink = StreamingCSV(csv_path) if (csv_path is not None and not keep_all) else None
    user_chunk = on_chunk
    if sink is not None:

        def on_chunk(p: Points, precs_: tuple[Precision, ...]) -> None:
            sink(p, precs_)
            if user_chunk is not None:
                user_chunk(p, precs_)

    expected = planned * 2.5 if refining else planned
    workers_used = n_workers if expected >= PARALLEL_MIN_POINTS else 1
    per = max(min(int(chunk_points), math.ceil(planned / workers_used)), 1)
    ex = Executor(job, workers_used)
    try:
        ex.__enter__()
        coarse: list[Points] = []
        for chunk in ex.run(grid_tasks(coarse_ppo, per), planned, bar):
            if on_chunk is not None:
                on_chunk(chunk, precs)
            reducer.add(chunk)
            if refining:
                coarse.append(chunk.take(np.flatnonzero(chunk["feasible"])))
        # ---- refinement around near-frontier coarse points ----
        if refining:
            cp_all = Points.concat(coarse)
            near = np.zeros(len(cp_all), dtype=bool)
            for ok in [cp_all["feasible"]] + ([targets.met(cp_all)] if targets.any else []):
                sub = cp_all.take(np.flatnonzero(ok))
                front = sub.take(
                    np.flatnonzero(pareto_mask(sub["tok_s_per_user"], sub["output_tok_s_per_gpu"]))
                )
                near |= ok & _near_frontier(cp_all, front, refine_tolerance)
            pv_row = np.full(len(plans), -1, dtype=np.int64)
            pv_row[valid_idx] = np.arange(len(valid_idx))
            stage2 = refine_grid(
                cp_all.take(np.flatnonzero(near)), pv_row, grids, coarse_ppo, fine_ppo
            )
            n2 = sum(len(r) for _, r, _ in stage2)
            bar.add(n2)
            tasks2 = split_tasks(
                [task(pi, r, c) for pi, r, c in stage2 if len(r)], int(chunk_points), workers_used
            )
            for chunk in ex.run(tasks2, n2, bar):
                if on_chunk is not None:
                    on_chunk(chunk, precs)
                reducer.add(chunk)
        # ---- disaggregated pools ----
        if disagg:
            for pi in range(len(precs)):
                d = disaggregated_points(
                    job,
                    pi,
                    plans,
                    int(num_gpus),
                    fine_ppo,
                    None if ttft_ms is None else ttft_ms / 1e3,
                )
                if on_chunk is not None and len(d):
                    on_chunk(d, precs)
                reducer.add(d)
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    finally:
        ex.__exit__(None, None, None)
        bar.close()
    if sink is not None:
        sink.commit()

    pts = reducer.result()
    f = pts["feasible"]
    pm = pareto_mask(
        np.where(f, pts["tok_s_per_user"], np.nan), np.where(f, pts["output_tok_s_per_gpu"], np.nan)
    )
    pareto = _drop_ties(pts, np.flatnonzero(pm))
    pareto = pareto[
        np.lexsort((-pts["output_tok_s_per_gpu"][pareto], pts["tok_s_per_user"][pareto]))
    ]
    met = targets.met(pts)
    best = None
    slo_report: dict[str, Any] | None = None
    if targets.any and slo != "mean":
        best, slo_report = choose_best(job, pts, met, targets, slo)
    elif targets.any and met.any():
        cand = np.flatnonzero(met)
        best = int(cand[np.argmax(pts["output_tok_s_per_gpu"][cand])])
    elif not targets.any and f.any():
        cand = np.flatnonzero(f)
        best = int(cand[np.argmax(pts["output_tok_s_per_gpu"][cand])])
    regions = _regions_for(job, pts, pareto)
    settings = {
        "points_per_octave": fine_ppo,
        "max_batch_size": eng.max_batch_size,
        "refine": refining,
        "coarse_points_per_octave": coarse_ppo,
        "refine_tolerance": refine_tolerance,
        "helix": helix,
        "attention_dp": attention_dp,
        "max_pp": max_pp,
        "disaggregated": disagg,
        "plans": len(plans),
        "valid_plans": int(plans.valid.sum()),
        "kept": "all" if keep_all else "pareto",
        "spec_tokens": job.spec_tokens,
        "spec_acceptance": job.spec_acceptance,
    }
    result = Frontier(
        model=m,
        hardware=hw,
        precisions=precs,
        engine=eng,
        num_gpus=int(num_gpus),
        isl=int(isl),
        osl=int(osl),
        points=pts,
        pareto=pareto,
        evaluated=reducer.evaluated,
        feasible_count=reducer.feasible,
        elapsed_s=time.perf_counter() - t0,
        targets=targets,
        best=best,
        regions=regions,
        area_range=(float(area_range[0]), float(area_range[1])),
        readings_at=tuple(float(x) for x in readings_at),
        all_points_kept=keep_all,
        plans=plans,
        label=label,
        settings=settings,
        accuracy=accuracy,
        precision_decisions=decisions,
        economics_inputs={"power_w": power_w, "usd_per_gpu_hour": usd_per_gpu_hour},
        slo=slo_report,
    )
    if csv_path is not None and sink is None:
        write_csv(result, csv_path)
    return result


def _drop_ties(p: Points, idx: Array) -> Array:
    """Among frontier points with identical (tok/s/user, tok/s/GPU) keep the lowest TTFT (then
    the lowest concurrency): past saturation extra concurrency only queues (TTFT grows)."""
    if len(idx) < 2:
        return idx
    x, y = p["tok_s_per_user"][idx], p["output_tok_s_per_gpu"][idx]
    order = np.lexsort((p["concurrency"][idx], p["ttft_s"][idx], y, x))
    xs, ys = x[order], y[order]
    first = np.ones(len(idx), dtype=bool)
    first[1:] = (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])
    return idx[order[first]]


def _regions_for(job: Job, pts: Points, idx: Array) -> Array:
    """Region (what bounds the step, ``serving.REGIONS``) of each point in ``idx``: the
    converged step of aggregated points, the decode-only step of disaggregated ones."""
    out = np.full(len(idx), "", dtype=object)
    if len(idx) == 0:
        return out
    sub = pts.take(idx)
    for pi, prec in enumerate(job.precisions):
        sel = np.flatnonzero(sub["precision"] == pi)
        if sel.size == 0:
            continue
        s = sub.take(sel)
        step = pipelined_step(
            job.model,
            prec,
            job.hw,
            job.eng,
            tp=s["tp"],
            pp=s["pp"],
            ep=s["ep"],
            cp=s["cp"],
            attention_dp=s["attention_dp"],
            isl=job.isl,
            osl=job.osl,
            decode_seqs=s["step_decode_seqs"],
            prefill_tokens=s["step_prefill_tokens"],
            decode_query=1.0 + job.spec_tokens,  # both modes speculate (decode pools too)
            detail=True,
        )
        out[sel] = region_of(bound_split(job.model, prec, job.hw, job.eng, step))
    return out


COMPARE_AXES = ("model", "hardware", "precision")


def compare(
    designs: Sequence[dict[str, Any]],
    **common: Any,
) -> list[Frontier]:
    """Frontiers of several designs that differ in ``model``, ``hardware`` or ``precision``
    (each a dict of :func:`frontier` keyword overrides, plus an optional ``label``).

    Example:
        >>> fs = compare([{"precision": "fp8"}, {"precision": "bf16"}], model="llama-3.1-8b",
        ...              hardware="h100-sxm", num_gpus=1, isl=512, osl=128)
        >>> fs[0].area > fs[1].area
        True
    """
    if not designs:
        raise SpecError("compare needs at least one design")
    out = []
    for d in designs:
        kw = dict(common)
        kw.update(d)
        if "label" not in kw or not kw["label"]:
            kw["label"] = " / ".join(str(d[k]) for k in COMPARE_AXES if k in d) or "design"
        out.append(frontier(**kw))
    return out


def parse_compare(spec: str) -> tuple[str, list[str]]:
    """Parse ``AXIS=ID,ID,...`` (axis: model, hardware or precision) for ``--compare``.

    Example:
        >>> parse_compare("hardware=b200,h200-sxm")
        ('hardware', ['b200', 'h200-sxm'])
    """
    axis, sep, rest = spec.partition("=")
    axis = axis.strip().lower()
    values = [v.strip() for v in rest.split(",")]
    if not sep or axis not in COMPARE_AXES or not values or any(not v for v in values):
        raise SpecError(
            f"--compare {spec!r}: expected AXIS=ID,ID,... with AXIS one of "
            f"{', '.join(COMPARE_AXES)} (e.g. hardware=b200,h200-sxm)"
        )
    return axis, values
