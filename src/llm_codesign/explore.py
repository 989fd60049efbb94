"""Explore: the throughput-interactivity frontier of a model on a GPU system.

A vectorized deployment search over parallel plans x precisions x concurrency (aggregated
serving), plus disaggregated prefill/decode pools, on top of :func:`serving.evaluate` and
:func:`serving.step_cost` (no second cost model here). One ``evaluate`` call covers a chunk of
flat (plan, concurrency) pairs of one precision; no Python loop runs over configurations.

What is searched (``enumerate_plans``), for a budget of N GPUs:
  * tp, pp from A = {powers of two <= N} U {divisors of N}, with tp x pp <= N; dp = N // (tp x pp)
    replicas fill the budget (GPUs left over stay idle and are not counted);
  * MoE: ep from the divisors of tp (the tp group splits as ep x moe_tp), each with tensor-parallel
    attention and with data-parallel attention (wide EP + attention DP, DESIGN.md guideline 5);
  * Helix KV-parallel attention cp | tp (cp > 1), pp = 1, wherever tensor-parallel attention
    would replicate the KV cache (GQA: tp > KV heads; MLA: tp > 1). Elsewhere Helix shards
    nothing more than TP does and only adds its all-to-all, so it is not generated; Helix
    (arXiv 2507.07120) pairs KV parallelism with TP/EP, not with pipeline stages;
  * dense models: ep = 1 and no attention DP (on a dense model attention DP over tp GPUs is
    tp replicas, which dp already covers).
  Plans that break a model rule (``serving.plan_feasibility``) are kept, one row each, with
  their reason; plans whose weights do not fit keep one row with ``weights_exceed_memory``.
  Concurrency per replica runs over a geometric grid (``points_per_octave`` per doubling, plus
  the limit) from 1 to the memory limit, capped at the engine's ``max_batch_size`` (serving
  queues clients beyond it: more concurrency only adds TTFT).

Adaptive refinement (default when the full grid exceeds 20,000 points): every plan is first
evaluated at every other power of two; around each coarse point within ``refine_tolerance``
(25%) of the coarse frontier (or of the frontier of points meeting the latency targets) the full
grid is evaluated out to the neighbouring coarse points. ``refine=False`` evaluates the full grid
everywhere; tests check both give the same frontier. Large sweeps run on a forked process pool
(``workers``), chunk by chunk, so memory stays bounded.

Disaggregated serving (``disagg=True``): prefill workers and decode workers with their own plans.
  * prefill worker: batches of b prompts (b x ISL <= max_num_tokens when ISL fits) in chunks of
    at most max_num_tokens, pipelined over pp stages: latency (n_chunks + pp - 1) x stage time,
    rate R_p = b / (n_chunks x stage time) requests/s;
  * decode worker: a decode-only step of C sequences at mean context ISL + OSL / 2 (no prefill
    chunks mixed in): TPOT = pp x stage time + PP hops, R_d = C / ((OSL - 1) x TPOT) requests/s;
  * KV transfer: the request's KV bytes over min(g_p, g_d) parallel links, NVLink when both pools
    fit in one scale-up domain, else the scale-out NIC; TTFT = prefill latency + transfer;
  * x prefill : y decode workers, x g_p + y g_d <= N, chosen to maximize
    min(x R_p, y R_d) x OSL / (x g_p + y g_d) (``balance_pools``); per-GPU throughput counts
    both pools.

Frontier area (``frontier_area``): the mean, over tokens/s/user log-uniform on [lo, hi]
(default 10 to 1000), of F(x) = the highest output tokens/s/GPU among frontier points offering
at least x tokens/s/user (0 where none does). Units: tokens/s/GPU; two designs compare by the
ratio of their areas. ``readings`` gives F at chosen interactivities.

Example:
    >>> f = frontier("llama-3.1-8b", "h200-sxm", num_gpus=1, isl=1024, osl=256, precision="fp8")
    >>> all(a > b for a, b in zip(f.pareto_points()["output_tok_s_per_gpu"], f.pareto_points()["output_tok_s_per_gpu"][1:]))
    True
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import numpy as np

from .calibrate import resolve_hardware
from .cost import collective_time, op_time
from .errors import SpecError, UnsupportedError
from .ops import (
    OP_CLASSES,
    StepShape,
    kv_bytes_per_sequence_per_gpu,
    step_ops,
)
from .serving import evaluate, memory_fit, pipeline_hops, plan_feasibility, step_cost
from .specs.engine import EngineConstants, load_engine
from .specs.hardware import HardwareSpec
from .specs.model import ModelSpec, load_model
from .specs.plan import ParallelPlan
from .specs.precision import Precision, parse_precision

Array = np.ndarray

# Presets searched by default: one per native tensor-core format (fp16 costs as bf16; int8 as
# fp8; w4a16 and mixed presets are opt-in with --precision).
DEFAULT_PRECISIONS = ("bf16", "fp8", "nvfp4", "mxfp4")
POINTS_PER_OCTAVE = 4
COARSE_POINTS_PER_OCTAVE = 0.5  # first pass of the adaptive search: every other power of two
MAX_CONCURRENCY = 1 << 22
REFINE_TOLERANCE = 0.25
DISAGG_DECODE_TOLERANCE = 0.25
AREA_RANGE = (10.0, 1000.0)
READINGS_AT = (20.0, 50.0, 100.0, 200.0)
CHUNK_POINTS = 32768
PARALLEL_MIN_POINTS = 8000  # searches smaller than this run inline (a pool costs ~10 ms a worker)
PARALLEL_MIN_STAGE_POINTS = 2000
REFINE_MIN_POINTS = 20000  # smaller full grids are evaluated directly (fewer evaluate calls)
KEEP_ALL_MAX_POINTS = 1_000_000
PHASES = ("prefill", "decode", "mixed_step")
REGIONS = ("compute-bound", "memory-bound", "communication-bound", "overhead-bound")

MODE_AGGREGATED, MODE_DISAGGREGATED = 0, 1
MODES = ("aggregated", "disaggregated")

_INT_COLS = ("precision", "mode", "plan_id", "tp", "pp", "ep", "cp", "dp", "p_tp", "p_pp", "p_ep", "p_cp",
             "p_batch", "prefill_workers", "decode_workers")
_BOOL_COLS = ("attention_dp", "p_attention_dp", "fits_in_memory", "feasible")
_FLOAT_COLS = ("concurrency", "ttft_s", "tpot_s", "tok_s_per_user", "output_tok_s_per_gpu",
               "total_tok_s_per_gpu", "num_gpus", "memory_per_gpu_bytes", "max_concurrency",
               "kv_transfer_s") + tuple(f"bd_{p}_{c}" for p in PHASES for c in OP_CLASSES)
COLUMNS = _INT_COLS + _BOOL_COLS + _FLOAT_COLS + ("reason",)


# ---------------------------------------------------------------------------------------------
# Points: a column table (dict of equal-length numpy arrays)
# ---------------------------------------------------------------------------------------------


class Points:
    """Evaluated configurations as columns (``COLUMNS``); one row per (plan, precision, concurrency).

    ``precision`` indexes ``Frontier.precisions``; ``plan_id`` indexes ``Frontier.plans`` (the
    decode plan when disaggregated); ``mode`` is 0 aggregated, 1 disaggregated;
    ``p_*`` columns hold the prefill plan of disaggregated points (0 for aggregated ones).
    """

    __slots__ = ("cols",)

    def __init__(self, cols: dict[str, Array]):
        n = len(next(iter(cols.values()))) if cols else 0
        full: dict[str, Array] = {}
        for name in COLUMNS:
            if name in cols:
                full[name] = np.asarray(cols[name])
            elif name == "reason":
                full[name] = np.full(n, "", dtype=object)
            elif name in _BOOL_COLS:
                full[name] = np.zeros(n, dtype=bool)
            elif name in _INT_COLS:
                full[name] = np.zeros(n, dtype=np.int64)
            else:
                full[name] = np.zeros(n)
        for name, col in full.items():
            assert len(col) == n, (name, len(col), n)
        self.cols = full

    def __len__(self) -> int:
        return len(self.cols["tp"])

    def __getitem__(self, name: str) -> Array:
        return self.cols[name]

    def take(self, idx: Array) -> Points:
        return Points({k: v[idx] for k, v in self.cols.items()})

    @staticmethod
    def concat(parts: Sequence[Points]) -> Points:
        parts = [p for p in parts if len(p)]
        if not parts:
            return Points({})
        return Points({k: np.concatenate([p.cols[k] for p in parts]) for k in COLUMNS})


# ---------------------------------------------------------------------------------------------
# Pareto extraction and frontier area
# ---------------------------------------------------------------------------------------------


def pareto_mask(x: Array, y: Array) -> Array:
    """Mask of the points no other point dominates, maximizing both ``x`` and ``y``.

    A point is dominated when another has x' >= x and y' >= y with one strictly greater. Exact
    duplicates do not dominate each other (both are kept). Non-finite points are never Pareto.

    Example:
        >>> pareto_mask(np.array([1.0, 2.0, 1.5]), np.array([3.0, 1.0, 0.5])).tolist()
        [True, True, False]
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    mask = np.zeros(x.shape, dtype=bool)
    ok = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    if ok.size == 0:
        return mask
    xs, ys = x[ok], y[ok]
    order = np.lexsort((-ys, -xs))  # x descending, then y descending
    xs, ys = xs[order], ys[order]
    new_group = np.ones(len(xs), dtype=bool)
    new_group[1:] = xs[1:] != xs[:-1]
    start = np.maximum.accumulate(np.where(new_group, np.arange(len(xs)), 0))
    cummax = np.maximum.accumulate(ys)
    before = np.where(start > 0, cummax[np.maximum(start - 1, 0)], -np.inf)  # best y at larger x
    keep = (ys == ys[start]) & (ys > before)
    mask[ok[order[keep]]] = True
    return mask


def staircase(x_front: Array, y_front: Array, x: Array) -> Array:
    """F(x): the highest ``y_front`` among frontier points with ``x_front >= x`` (0 if none).

    Example:
        >>> staircase(np.array([10.0, 50.0]), np.array([900.0, 200.0]), np.array([5.0, 20.0, 60.0])).tolist()
        [900.0, 200.0, 0.0]
    """
    x_front = np.asarray(x_front, dtype=float)
    y_front = np.asarray(y_front, dtype=float)
    x = np.asarray(x, dtype=float)
    if x_front.size == 0:
        return np.zeros(x.shape)
    order = np.argsort(x_front)
    xf, yf = x_front[order], y_front[order]
    best_right = np.maximum.accumulate(yf[::-1])[::-1]  # max y over x_front >= xf[i]
    i = np.searchsorted(xf, x, side="left")
    return np.where(i < len(xf), best_right[np.minimum(i, len(xf) - 1)], 0.0)


def frontier_area(x_front: Array, y_front: Array, x_range: tuple[float, float] = AREA_RANGE) -> float:
    """Normalized area under the frontier: mean of F(x) over x log-uniform on ``x_range``.

    With F the staircase of :func:`staircase`, area = (1 / ln(hi/lo)) * integral of F(x) dln x,
    in the units of y (tokens/s/GPU when x is tokens/s/user). Exact for the staircase.

    Example:
        >>> round(frontier_area(np.array([100.0]), np.array([1000.0]), (10.0, 1000.0)), 3)
        500.0
    """
    lo, hi = float(x_range[0]), float(x_range[1])
    if not (0 < lo < hi):
        raise SpecError(f"area range must satisfy 0 < lo < hi, got {x_range}")
    x_front = np.asarray(x_front, dtype=float)
    y_front = np.asarray(y_front, dtype=float)
    ok = np.isfinite(x_front) & np.isfinite(y_front) & (x_front > 0)
    if not ok.any():
        return 0.0
    xf = x_front[ok]
    # F is constant on the intervals between consecutive frontier x values
    edges = np.unique(np.concatenate([[lo, hi], np.clip(xf, lo, hi)]))
    left, right = edges[:-1], edges[1:]
    value = staircase(xf, y_front[ok], right)  # F on (left, right]
    return float(np.sum(value * np.log(right / left)) / math.log(hi / lo))


# ---------------------------------------------------------------------------------------------
# Plan enumeration
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanTable:
    """Candidate plans as arrays; ``reason`` is '' for a valid plan, else why it cannot run."""

    tp: Array
    pp: Array
    ep: Array
    cp: Array
    attention_dp: Array
    dp: Array
    reason: Array

    def __len__(self) -> int:
        return len(self.tp)

    @property
    def valid(self) -> Array:
        return self.reason == ""

    @property
    def gpus_per_replica(self) -> Array:
        return self.tp * self.pp

    def take(self, idx: Array) -> PlanTable:
        return PlanTable(*(np.asarray(getattr(self, f))[idx] for f in ("tp", "pp", "ep", "cp", "attention_dp", "dp", "reason")))

    def plan(self, i: int) -> ParallelPlan:
        return ParallelPlan(int(self.tp[i]), int(self.pp[i]), int(self.ep[i]), int(self.dp[i]), bool(self.attention_dp[i]), int(self.cp[i]))


def axis_values(num_gpus: int) -> list[int]:
    """Candidate sizes of one parallel axis: powers of two up to N and the divisors of N.

    Example:
        >>> axis_values(12)
        [1, 2, 3, 4, 6, 8, 12]
    """
    if num_gpus < 1:
        raise SpecError(f"num_gpus must be >= 1, got {num_gpus}")
    vals = {1 << i for i in range(num_gpus.bit_length()) if (1 << i) <= num_gpus}
    vals |= {d for d in range(1, num_gpus + 1) if num_gpus % d == 0}
    return sorted(vals)


def enumerate_plans(
    model: ModelSpec, hw: HardwareSpec, num_gpus: int, *, max_pp: int | None = None,
    helix: bool = True, attention_dp: bool = True,
) -> PlanTable:
    """Every candidate plan for ``num_gpus`` GPUs (module docstring), invalid ones with a reason.

    Example (Llama-3.1-8B on 4 GPUs: (tp, pp) in {(1,1),(1,2),(1,4),(2,1),(2,2),(4,1)}):
        >>> len(enumerate_plans(load_model("llama-3.1-8b"), load_hardware("h100-sxm"), 4))
        6
    """
    if num_gpus < 1 or num_gpus > 1_000_000:
        raise SpecError(f"num_gpus must lie in 1..1,000,000, got {num_gpus}")
    a = np.array(axis_values(num_gpus), dtype=np.int64)
    moe = model.moe is not None
    # (tp, ep, cp) with ep | tp and cp | tp, then x pp with tp x pp <= N, then x attention layout
    tp, ep, cp = (g.ravel() for g in np.meshgrid(a, a, a, indexing="ij"))
    ok = (tp % ep == 0) & (tp % cp == 0)
    tp, ep, cp = tp[ok], ep[ok], cp[ok]
    i, j = (g.ravel() for g in np.meshgrid(np.arange(len(tp)), np.arange(len(a)), indexing="ij"))
    ok = tp[i] * a[j] <= num_gpus
    i, pp = i[ok], a[j[ok]]
    tp, ep, cp = tp[i], ep[i], cp[i]
    tp, ep, cp, pp = (np.concatenate([v, v]) for v in (tp, ep, cp, pp))
    adp = np.repeat(np.array([False, True]), len(tp) // 2)
    keep = ~(adp & (cp > 1)) & ~(adp & (tp == 1))
    if max_pp is not None:
        keep &= pp <= max_pp
    if not moe:
        keep &= (ep == 1) & ~adp
    if not attention_dp:
        keep &= ~adp
    at = model.attention
    kv_replicated = (tp > 1) if at.kind == "mla" else (tp > at.num_kv_heads)
    keep &= (cp == 1) | (helix & kv_replicated & (pp == 1))
    tp, pp, ep, cp, adp = tp[keep], pp[keep], ep[keep], cp[keep], adp[keep]
    order = np.lexsort((cp, adp, ep, pp, tp))
    tp, pp, ep, cp, adp = tp[order], pp[order], ep[order], cp[order], adp[order]
    reason = plan_feasibility(model, tp, pp, ep, adp, cp)
    reason = np.asarray(np.broadcast_to(reason, tp.shape), dtype=object).copy()
    if hw.scaleout_bytes_per_s <= 0:
        reason = np.where((reason == "") & (tp > hw.scaleup_domain_size), "no_scaleout_network", reason)
    return PlanTable(tp, pp, ep, cp, adp, num_gpus // (tp * pp), reason)


# ---------------------------------------------------------------------------------------------
# Memory limit (same arithmetic as serving.evaluate, which tests pin)
# ---------------------------------------------------------------------------------------------


def memory_limit(model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, plans: PlanTable, context: float) -> tuple[Array, Array]:
    """(max concurrency per replica at ``context`` tokens, usable KV bytes per GPU) per plan:
    :func:`serving.memory_fit`, so the concurrency grid stops at the limit before anything is
    evaluated."""
    safe = plans.valid
    tp, ep, cp, pp = (np.where(safe, v, 1) for v in (plans.tp, plans.ep, plans.cp, plans.pp))
    _, _, _, usable, max_conc = memory_fit(model, hw, prec, eng, tp, pp, ep, plans.attention_dp, cp, np.asarray(float(context)))
    return max_conc, usable


def concurrency_grid(limit: Array, points_per_octave: float) -> tuple[Array, Array]:
    """Geometric integer grid 1..limit per row (``points_per_octave`` per doubling, may be
    fractional: 0.5 = every other power of two; the limit itself included): returns
    (row index, concurrency) as flat arrays.

    Example:
        >>> concurrency_grid(np.array([5, 1]), 1)[1].tolist()
        [1.0, 2.0, 4.0, 5.0, 1.0]
    """
    limit = np.floor(np.asarray(limit, dtype=float))
    ppo = float(points_per_octave)
    if not ppo > 0:
        raise SpecError(f"points_per_octave must be positive, got {points_per_octave}")
    n = np.where(limit >= 1, np.floor(np.log2(np.maximum(limit, 1)) * ppo + 1e-9).astype(np.int64) + 2, 0)
    row = np.repeat(np.arange(len(limit)), n)
    start = np.cumsum(n) - n
    j = np.arange(n.sum()) - np.repeat(start, n)
    last = j == np.repeat(n - 1, n)
    c = np.where(last, limit[row], np.minimum(np.round(np.power(2.0, j / ppo)), limit[row]))
    dup = np.zeros(len(c), dtype=bool)
    dup[1:] = (c[1:] == c[:-1]) & (row[1:] == row[:-1])
    return row[~dup], c[~dup]


# ---------------------------------------------------------------------------------------------
# Chunked, optionally parallel evaluation
# ---------------------------------------------------------------------------------------------


@dataclass
class _Job:
    """Shared, read-only inputs of one search (inherited by forked workers, never pickled)."""

    model: ModelSpec
    hw: HardwareSpec
    eng: EngineConstants
    precisions: tuple[Precision, ...]
    isl: int
    osl: int
    spec_tokens: int = 0
    spec_acceptance: float = 0.0


_JOB: _Job | None = None


def _eval_task(task: tuple[int, dict[str, Array]]) -> dict[str, Array]:
    """Evaluate one chunk of aggregated points of one precision (runs in a worker or inline)."""
    job = _JOB
    assert job is not None
    pi, a = task
    r = evaluate(job.model, job.hw, job.precisions[pi], job.eng, tp=a["tp"], pp=a["pp"], ep=a["ep"], dp=a["dp"],
                 attention_dp=a["attention_dp"], cp=a["cp"], isl=job.isl, osl=job.osl, concurrency=a["concurrency"],
                 spec_tokens=job.spec_tokens, spec_acceptance=job.spec_acceptance)
    out = dict(a)
    out.update(
        precision=np.full(len(a["tp"]), pi, dtype=np.int64), ttft_s=r.ttft_s, tpot_s=r.tpot_s,
        tok_s_per_user=r.tok_s_per_user, output_tok_s_per_gpu=r.output_tok_s_per_gpu,
        total_tok_s_per_gpu=r.total_tok_s_per_gpu, num_gpus=np.asarray(r.num_gpus, dtype=float),
        memory_per_gpu_bytes=r.memory_per_gpu_bytes, max_concurrency=r.max_concurrency,
        fits_in_memory=r.fits_in_memory, feasible=r.feasible, reason=r.reason,
    )
    for phase, bd in (("prefill", r.prefill_breakdown), ("decode", r.decode_breakdown), ("mixed_step", r.mixed_breakdown)):
        for c in OP_CLASSES:
            out[f"bd_{phase}_{c}"] = np.broadcast_to(bd[c], r.tpot_s.shape).astype(float)
    return out


def _grid_count(limit: Array, ppo: float) -> Array:
    """Points ``concurrency_grid`` makes per row (an upper bound: rounding merges a few)."""
    limit = np.floor(np.asarray(limit, dtype=float))
    n = np.floor(np.log2(np.maximum(limit, 1.0)) * ppo + 1e-9) + 2
    return np.where(limit >= 1, np.minimum(n, limit + 1), 0).astype(np.int64)


def _split_tasks(tasks: list[tuple[int, dict[str, Array]]], chunk: int, workers: int) -> list[tuple[int, dict[str, Array]]]:
    out = []
    total = sum(len(a["tp"]) for _, a in tasks)
    per = max(min(chunk, math.ceil(total / max(workers, 1))), 1)
    for pi, a in tasks:
        n = len(a["tp"])
        k = max(math.ceil(n / per), 1)
        for s in range(k):
            lo, hi = s * n // k, (s + 1) * n // k
            if hi > lo:
                out.append((pi, {name: v[lo:hi] for name, v in a.items()}))
    return out


class _Executor:
    """Runs evaluation tasks inline, or on one forked process pool shared by every stage of a
    search (workers inherit the job at fork time; only index arrays and results travel)."""

    def __init__(self, job: _Job, workers: int):
        self.job = job
        self.workers = workers
        self.pool: Any = None

    def __enter__(self) -> Self:
        global _JOB
        _JOB = self.job
        if self.workers > 1 and "fork" in _start_methods():
            import multiprocessing

            self.pool = multiprocessing.get_context("fork").Pool(self.workers)
        return self

    def __exit__(self, *exc: object) -> None:
        global _JOB
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None
        _JOB = None

    def run(self, tasks: Iterable[tuple[int, dict[str, Array]]], total: int, progress: Any) -> Iterator[Points]:
        """Evaluate tasks (lazily produced); at most 2 x workers chunks are in flight at once."""
        if total == 0:
            return
        if self.pool is None or total < PARALLEL_MIN_STAGE_POINTS:
            results: Iterable[dict[str, Array]] = map(_eval_task, tasks)
        else:
            results = self._pooled(tasks)
        for out in results:
            if progress is not None:
                progress(len(out["tp"]))
            yield Points(out)

    def _pooled(self, tasks: Iterable[tuple[int, dict[str, Array]]]) -> Iterator[dict[str, Array]]:
        from collections import deque

        pending: deque[Any] = deque()
        for t in tasks:
            pending.append(self.pool.apply_async(_eval_task, (t,)))
            if len(pending) >= 2 * self.workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def _start_methods() -> list[str]:
    import multiprocessing

    return multiprocessing.get_all_start_methods()


def default_workers() -> int:
    """Processes for large sweeps: the CPUs this process may use (numpy ufuncs are single-threaded)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - non-Linux
        return max(os.cpu_count() or 1, 1)


class _Progress:
    """A rich progress bar on stderr for long sweeps (TTY only, or forced)."""

    def __init__(self, total: int, enabled: bool | None):
        self.bar = None
        if enabled is None:
            enabled = total >= 500_000 and sys.stderr.isatty()
        if enabled and total > 0:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("frontier"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=True)
            self.task = self.bar.add_task("points", total=total)
            self.bar.start()

    def add(self, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, total=(self.bar.tasks[0].total or 0) + total)

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


# ---------------------------------------------------------------------------------------------
# Regime of a step: what bounds it (for labelling frontier regions)
# ---------------------------------------------------------------------------------------------


def classify_regions(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, *, tp: Array, pp: Array,
    ep: Array, cp: Array, attention_dp: Array, concurrency: Array, isl: int, osl: int, decode_only: Array | bool = False,
) -> Array:
    """Which resource dominates the step at each configuration: time of compute-bound ops,
    memory-bound ops, communication, or fixed kernel/step overheads, whichever is largest.

    Aggregated points use the nominal mixed step (C decode tokens + C x ISL / OSL prompt tokens
    per replica, split into pp micro-batches); disaggregated decode points a decode-only step.
    """
    tp, pp, ep, cp = (np.asarray(v, dtype=np.int64) for v in (tp, pp, ep, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    conc = np.asarray(concurrency, dtype=float)
    micro = pp.astype(float)
    pre = np.where(decode_only, 0.0, conc * isl / osl)
    s = StepShape(decode_seqs=conc / micro, decode_ctx=np.asarray(isl + osl / 2.0), prefill_tokens=pre / micro,
                  prefill_seqs=pre / isl / micro, prefill_ctx=np.asarray(isl / 2.0), tp=tp, ep=ep, pp=pp, cp=cp, attention_dp=adp)
    shape = np.broadcast(tp, pp, ep, cp, adp, conc).shape
    bucket = {"compute": np.zeros(shape), "memory": np.zeros(shape), "network": np.zeros(shape)}
    used = np.zeros(shape)
    for op in step_ops(model, prec, s):
        t, bound = op_time(op, hw, eng)
        t = np.broadcast_to(np.asarray(t) * op.layers, shape)
        used = used + t
        if op.kind == "comm":
            bucket["network"] = bucket["network"] + t
        else:
            is_c = np.broadcast_to(np.asarray(bound) == "compute", shape)
            bucket["compute"] = bucket["compute"] + np.where(is_c, t, 0.0)
            bucket["memory"] = bucket["memory"] + np.where(is_c, 0.0, t)
    total = step_cost(model, prec, hw, eng, s).total_s
    overhead = np.maximum(np.broadcast_to(total, shape) - used, 0.0)
    stack = np.stack([bucket["compute"], bucket["memory"], bucket["network"], overhead])
    return np.asarray(REGIONS, dtype=object)[np.argmax(stack, axis=0)]


# ---------------------------------------------------------------------------------------------
# Disaggregated serving
# ---------------------------------------------------------------------------------------------


def balance_pools(
    rate_prefill: Array, rate_decode: Array, gpus_prefill: Array, gpus_decode: Array, num_gpus: int,
) -> tuple[Array, Array, Array, Array]:
    """Best integer split into x prefill and y decode workers within ``num_gpus`` GPUs.

    Inputs broadcast: requests/s of one prefill worker (R_p) and of one decode worker (R_d), and
    the GPUs each worker uses (g_p, g_d). For each y in 1..N, x is floor or ceil of the balance
    point y R_d / R_p (clipped to what the budget leaves); the pair maximizing requests/s per
    GPU, min(x R_p, y R_d) / (x g_p + y g_d), wins. Returns (x, y, requests/s, GPUs used);
    zeros where not even one worker of each fits.

    Example (R_p = 10, R_d = 5 req/s, g_p = 1, g_d = 2, 8 GPUs: 1 prefill : 2 decode, 10 req/s on 5 GPUs):
        >>> [float(v) for v in balance_pools(10.0, 5.0, 1, 2, 8)]
        [1.0, 2.0, 10.0, 5.0]
    """
    rp, rd, gp, gd = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (rate_prefill, rate_decode, gpus_prefill, gpus_decode)))
    shape = rp.shape
    y = np.arange(1, int(num_gpus) + 1, dtype=float).reshape((1,) * len(shape) + (-1,))
    rp_, rd_, gp_, gd_ = (v[..., None] for v in (rp, rd, gp, gd))
    x_max = np.floor((num_gpus - y * gd_) / gp_)
    x_star = y * rd_ / np.maximum(rp_, 1e-30)
    fits = x_max >= 1

    x_cap = np.maximum(x_max, 1.0)
    y_rd, y_gd = y * rd_, y * gd_

    def per_gpu(x: Array) -> tuple[Array, Array]:
        x = np.minimum(np.maximum(x, 1.0), x_cap)
        return x, np.where(fits, np.minimum(x * rp_, y_rd) / (x * gp_ + y_gd), -1.0)

    x_lo, per_lo = per_gpu(np.floor(x_star))
    x_hi, per_hi = per_gpu(np.ceil(x_star))
    use_hi = per_hi > per_lo
    per = np.where(use_hi, per_hi, per_lo)
    k = np.argmax(per, axis=-1)[..., None]
    best = np.take_along_axis(per, k, -1)[..., 0]
    bx = np.take_along_axis(np.where(use_hi, x_hi, x_lo), k, -1)[..., 0]
    by = (k[..., 0] + 1).astype(float)
    none = best < 0
    bx, by = np.where(none, 0.0, bx), np.where(none, 0.0, by)
    gpus = bx * gp + by * gd
    return bx, by, np.where(none, 0.0, best * gpus), gpus


def _disagg_points(
    job: _Job, pi: int, plans: PlanTable, num_gpus: int, points_per_octave: int, ttft_target_s: float | None,
) -> Points:
    """Disaggregated points of one precision: every decode (plan, concurrency) with the best
    prefill worker of each size, balanced within the budget (module docstring)."""
    m, hw, eng, prec, isl, osl = job.model, job.hw, job.eng, job.precisions[pi], job.isl, job.osl
    if osl < 2:
        raise SpecError(f"disaggregated serving needs osl >= 2 (the decode pool makes tokens 2..osl), got osl={osl}")
    ok = plans.valid & (plans.gpus_per_replica < num_gpus)  # leave room for the other pool
    pl = plans.take(np.flatnonzero(ok))
    if len(pl) == 0:
        return Points.concat([])
    # ---- prefill workers: plans x batch sizes ----
    b_max = max(1, eng.max_num_tokens // isl)
    batches = np.unique(np.minimum(np.round(2.0 ** np.arange(0, math.log2(b_max) + 1)), b_max).tolist() + [b_max])
    pidx = np.repeat(np.arange(len(pl)), len(batches))
    b = np.tile(batches, len(pl)).astype(float)
    p_tp, p_pp, p_ep, p_cp, p_adp = (v[pidx] for v in (pl.tp, pl.pp, pl.ep, pl.cp, pl.attention_dp))
    lim_p, _ = memory_limit(m, hw, prec, eng, pl, isl)
    fits_p = lim_p[pidx] >= b
    tokens = np.minimum(b * isl, eng.max_num_tokens)
    n_chunks = np.ceil(b * isl / tokens)
    zeros = np.zeros(len(b))
    pre = step_cost(m, prec, hw, eng, StepShape(
        decode_seqs=zeros, decode_ctx=np.asarray(float(isl)), prefill_tokens=tokens, prefill_seqs=tokens / isl,
        prefill_ctx=np.asarray(isl / 2.0), tp=p_tp, ep=p_ep, pp=p_pp, cp=p_cp, attention_dp=p_adp))
    stage_p = np.asarray(pre.total_s)
    latency_p = (n_chunks + p_pp - 1.0) * stage_p + eng.request_overhead_s
    rate_p = b / (n_chunks * stage_p)
    g_p = (p_tp * p_pp).astype(float)
    kv_req = float(kv_bytes_per_sequence_per_gpu(m, prec, np.asarray(float(isl)), np.asarray(1), np.asarray(1), np.asarray(False), np.asarray(1)))
    good = fits_p & np.isfinite(rate_p) & (rate_p > 0)
    if ttft_target_s is not None and np.any(good & (latency_p <= ttft_target_s)):
        good &= latency_p <= ttft_target_s
    if not good.any():
        return Points.concat([])
    # best prefill candidate per worker size (requests/s per GPU)
    cand = np.flatnonzero(good)
    per_gpu = rate_p[cand] / g_p[cand]
    order = np.lexsort((-per_gpu, g_p[cand]))
    cand = cand[order]
    first = np.ones(len(cand), dtype=bool)
    first[1:] = g_p[cand][1:] != g_p[cand][:-1]
    cand = cand[first]
    # a larger prefill worker is only worth balancing with if it is more efficient per GPU
    eff = rate_p[cand] / g_p[cand]
    cand = cand[eff >= np.maximum.accumulate(eff)]
    # ---- decode workers: plans x concurrency ----
    lim_d, _ = memory_limit(m, hw, prec, eng, pl, isl + osl / 2.0)
    ranks_d = np.where(pl.attention_dp, pl.tp, 1)  # max_batch_size holds per attention-DP rank
    limit = np.minimum(lim_d, np.minimum(eng.max_batch_size * ranks_d, MAX_CONCURRENCY))
    row, conc = concurrency_grid(limit, points_per_octave)
    if len(row) == 0:
        return Points.concat([])
    d_tp, d_pp, d_ep, d_cp, d_adp = (v[row] for v in (pl.tp, pl.pp, pl.ep, pl.cp, pl.attention_dp))
    micro = d_pp.astype(float)
    dec = step_cost(m, prec, hw, eng, StepShape(
        decode_seqs=conc / micro, decode_ctx=np.asarray(isl + osl / 2.0), prefill_tokens=np.zeros(len(conc)),
        prefill_seqs=np.zeros(len(conc)), prefill_ctx=np.asarray(isl / 2.0), tp=d_tp, ep=d_ep, pp=d_pp, cp=d_cp, attention_dp=d_adp))
    hops = pipeline_hops(m, hw, prec, eng, d_pp, conc)
    tpot = micro * dec.total_s + hops
    rate_d = conc / ((osl - 1.0) * tpot)
    g_d = (d_tp * d_pp).astype(float)
    # only decode configurations near the decode-only frontier (tok/s/user vs requests/s/GPU)
    # can reach the combined frontier: combined requests/s/GPU = 1 / (g_p/R_p + g_d/R_d)
    x_u, y_e = 1.0 / tpot, rate_d / g_d
    okd = np.isfinite(x_u) & np.isfinite(y_e)
    front = np.flatnonzero(okd & pareto_mask(np.where(okd, x_u, np.nan), np.where(okd, y_e, np.nan)))
    s_tol = 1.0 + DISAGG_DECODE_TOLERANCE
    keep = np.flatnonzero(okd & (y_e * s_tol >= staircase(x_u[front], y_e[front], x_u * s_tol)))
    row, conc, tpot, rate_d, g_d, hops = row[keep], conc[keep], tpot[keep], rate_d[keep], g_d[keep], hops[keep]
    d_tp, d_pp, d_ep, d_cp, d_adp, micro = (v[keep] for v in (d_tp, d_pp, d_ep, d_cp, d_adp, micro))
    dec_by_class = {cl: np.broadcast_to(dec.by_class[cl], okd.shape)[keep] for cl in OP_CLASSES}
    # ---- combine: decode points x prefill candidates, integer balance ----
    x, y, req_s, gpus, k = _best_split(rate_p[cand], g_p[cand], rate_d, g_d, num_gpus)
    c = cand[k]
    links = np.minimum(g_p[c], g_d)
    inside = gpus <= hw.scaleup_domain_size
    group = np.where(inside, 2, hw.scaleup_domain_size + 1)
    transfer = collective_time("p2p", np.full(len(conc), kv_req) / links, group, hw, eng)
    reason = np.full(len(conc), "", dtype=object)
    reason = np.where(gpus <= 0, "budget_too_small_for_two_pools", reason)
    if hw.scaleout_bytes_per_s <= 0:
        reason = np.where((reason == "") & ~inside, "no_scaleout_network", reason)
    reason = np.where((reason == "") & ~np.isfinite(tpot), "numeric", reason)
    feasible = reason == ""
    safe_g = np.maximum(gpus, 1.0)
    cols: dict[str, Array] = {
        "precision": np.full(len(conc), pi, dtype=np.int64), "mode": np.full(len(conc), MODE_DISAGGREGATED, dtype=np.int64),
        "plan_id": np.flatnonzero(ok)[row], "tp": d_tp, "pp": d_pp, "ep": d_ep, "cp": d_cp, "attention_dp": d_adp,
        "dp": y.astype(np.int64),
        "p_tp": p_tp[c], "p_pp": p_pp[c], "p_ep": p_ep[c], "p_cp": p_cp[c], "p_attention_dp": p_adp[c],
        "p_batch": b[c].astype(np.int64), "prefill_workers": x.astype(np.int64), "decode_workers": y.astype(np.int64),
        "concurrency": conc, "ttft_s": latency_p[c] + transfer, "tpot_s": tpot, "tok_s_per_user": 1.0 / tpot,
        "output_tok_s_per_gpu": np.where(feasible, req_s * osl / safe_g, 0.0),
        "total_tok_s_per_gpu": np.where(feasible, req_s * (isl + osl) / safe_g, 0.0),
        "num_gpus": gpus, "max_concurrency": lim_d[row], "fits_in_memory": conc <= lim_d[row],
        "memory_per_gpu_bytes": _decode_memory(m, hw, prec, eng, pl, row, conc, isl + osl / 2.0),
        "kv_transfer_s": transfer, "feasible": feasible, "reason": reason,
    }
    steps = n_chunks[c] + p_pp[c] - 1.0
    for cl in OP_CLASSES:
        cols[f"bd_prefill_{cl}"] = np.asarray(np.broadcast_to(pre.by_class[cl], stage_p.shape))[c] * steps
        d = dec_by_class[cl] * micro
        if cl == "communication":
            d = d + hops
        cols[f"bd_decode_{cl}"] = d
        cols[f"bd_mixed_step_{cl}"] = d
    return Points(cols)


def _best_split(rate_p: Array, g_p: Array, rate_d: Array, g_d: Array, num_gpus: int) -> tuple[Array, ...]:
    """For each decode configuration, the prefill candidate and x : y split with the most
    requests/s per GPU (chunks of decode rows bound the (rows x candidates x y) arrays)."""
    n = len(rate_d)
    out = [np.zeros(n) for _ in range(4)] + [np.zeros(n, dtype=np.int64)]
    step = max(1, 200_000 // max(len(rate_p) * int(num_gpus), 1))  # cache-sized blocks
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        x, y, req_s, gpus = balance_pools(rate_p[None, :], rate_d[lo:hi, None], g_p[None, :], g_d[lo:hi, None], num_gpus)
        per = np.where(gpus > 0, req_s / np.maximum(gpus, 1), -1.0)
        k = np.argmax(per, axis=1)
        rows = np.arange(hi - lo)
        for o, v in zip(out, (x, y, req_s, gpus)):
            o[lo:hi] = v[rows, k]
        out[4][lo:hi] = k
    return tuple(out)


def _decode_memory(m: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, pl: PlanTable, row: Array, conc: Array, ctx: float) -> Array:
    tp, pp, ep, cp, adp = (v[row] for v in (pl.tp, pl.pp, pl.ep, pl.cp, pl.attention_dp))
    w, kv, workspace, _, _ = memory_fit(m, hw, prec, eng, tp, pp, ep, adp, cp, np.asarray(float(ctx)))
    return w + np.ceil(conc / np.where(adp, tp, 1)) * kv + workspace


# ---------------------------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------------------------


@dataclass
class Targets:
    """Latency targets a configuration must meet (None = no target)."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    min_tok_s_per_user: float | None = None

    def __post_init__(self) -> None:
        for name in ("ttft_ms", "tpot_ms", "min_tok_s_per_user"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and 0 < v < 1e9):
                raise SpecError(f"target {name} must be a positive number, got {v!r}")

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.min_tok_s_per_user))

    def met(self, p: Points) -> Array:
        ok = p["feasible"].copy()
        if self.ttft_ms is not None:
            ok &= p["ttft_s"] * 1e3 <= self.ttft_ms
        if self.tpot_ms is not None:
            ok &= p["tpot_s"] * 1e3 <= self.tpot_ms
        if self.min_tok_s_per_user is not None:
            ok &= p["tok_s_per_user"] >= self.min_tok_s_per_user
        return ok

    def to_dict(self) -> dict[str, float | None]:
        return {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "min_tok_s_per_user": self.min_tok_s_per_user}


@dataclass
class Frontier:
    """Result of :func:`frontier`: evaluated points, the Pareto subset, area, best under targets."""

    model: ModelSpec
    hardware: HardwareSpec
    precisions: tuple[Precision, ...]
    engine: EngineConstants
    num_gpus: int
    isl: int
    osl: int
    points: Points
    pareto: Array  # indices into points, sorted by tok_s_per_user ascending
    evaluated: int
    feasible_count: int
    elapsed_s: float
    targets: Targets
    best: int | None
    regions: Array  # region label per pareto point
    area_range: tuple[float, float] = AREA_RANGE
    readings_at: tuple[float, ...] = READINGS_AT
    all_points_kept: bool = True
    plans: PlanTable | None = None
    label: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    # ---- derived numbers ----
    def pareto_points(self) -> Points:
        return self.points.take(self.pareto)

    @property
    def area(self) -> float:
        p = self.pareto_points()
        return frontier_area(p["tok_s_per_user"], p["output_tok_s_per_gpu"], self.area_range)

    def readings(self, at: Iterable[float] | None = None) -> list[dict[str, Any]]:
        """Tokens/s/GPU at X tokens/s/user: the best frontier point offering at least X."""
        p = self.pareto_points()
        xs = np.asarray(list(self.readings_at if at is None else at), dtype=float)
        ys = staircase(p["tok_s_per_user"], p["output_tok_s_per_gpu"], xs)
        out = []
        for x, y in zip(xs.tolist(), ys.tolist()):
            i = None
            if y > 0:
                match = np.flatnonzero((p["tok_s_per_user"] >= x) & (p["output_tok_s_per_gpu"] == y))
                i = int(self.pareto[match[0]]) if match.size else None
            out.append({"tok_s_per_user": x, "output_tok_s_per_gpu": y if y > 0 else None,
                        "plan": self.plan_label(i) if i is not None else None})
        return out

    def plan_label(self, i: int) -> str:
        """Human label of the point's plan, e.g. ``TP8 EP8 attnDP8`` or ``disagg 2xTP4 : 1xTP8``."""
        c = self.points.cols
        dec = _label(int(c["tp"][i]), int(c["pp"][i]), int(c["ep"][i]), bool(c["attention_dp"][i]), int(c["cp"][i]))
        if int(c["mode"][i]) == MODE_DISAGGREGATED:
            pre = _label(int(c["p_tp"][i]), int(c["p_pp"][i]), int(c["p_ep"][i]), bool(c["p_attention_dp"][i]), int(c["p_cp"][i]))
            return f"disagg {int(c['prefill_workers'][i])}x[{pre}] : {int(c['decode_workers'][i])}x[{dec}]"
        return dec

    def point_dict(self, i: int, region: str | None = None) -> dict[str, Any]:
        """One point in DESIGN.md's contract (estimate's fields + plan + precision + extras)."""
        c = self.points.cols
        f = {k: v[i] for k, v in c.items()}
        prec = self.precisions[int(f["precision"])]
        mode = MODES[int(f["mode"])]
        breakdown = {}
        for phase in PHASES:
            d = {cl: float(f[f"bd_{phase}_{cl}"]) for cl in OP_CLASSES}
            d["total"] = sum(d.values())
            breakdown[phase] = d
        plan = {"tp": int(f["tp"]), "pp": int(f["pp"]), "ep": int(f["ep"]), "dp": int(f["dp"]),
                "attention_dp": bool(f["attention_dp"]), "cp": int(f["cp"])}
        out: dict[str, Any] = {
            "ttft_ms": float(f["ttft_s"]) * 1e3, "tpot_ms": float(f["tpot_s"]) * 1e3,
            "tok_s_per_user": float(f["tok_s_per_user"]), "output_tok_s_per_gpu": float(f["output_tok_s_per_gpu"]),
            "total_tok_s_per_gpu": float(f["total_tok_s_per_gpu"]), "num_gpus": round(float(f["num_gpus"])),
            "fits_in_memory": bool(f["fits_in_memory"]), "memory_per_gpu_gb": float(f["memory_per_gpu_bytes"]) / 1e9,
            "breakdown": breakdown, "plan": plan, "plan_label": self.plan_label(i), "precision": prec.id,
            "mode": mode, "concurrency": int(f["concurrency"]),
            "concurrency_total": int(f["concurrency"]) * int(f["dp"]),
            "max_concurrency": int(f["max_concurrency"]) if np.isfinite(f["max_concurrency"]) else None,
            "feasible": bool(f["feasible"]), "reason": str(f["reason"]),
        }
        if region is not None:
            out["region"] = region
        if mode == "disaggregated":
            out["disaggregated"] = {
                "prefill_plan": {"tp": int(f["p_tp"]), "pp": int(f["p_pp"]), "ep": int(f["p_ep"]),
                                 "attention_dp": bool(f["p_attention_dp"]), "cp": int(f["p_cp"])},
                "prefill_workers": int(f["prefill_workers"]), "decode_workers": int(f["decode_workers"]),
                "prefill_batch_requests": int(f["p_batch"]), "kv_transfer_ms": float(f["kv_transfer_s"]) * 1e3,
            }
        return out

    def frontier_dicts(self) -> list[dict[str, Any]]:
        return [self.point_dict(int(i), str(r)) for i, r in zip(self.pareto, self.regions)]

    def best_dict(self) -> dict[str, Any] | None:
        if self.best is None:
            return None
        d = self.point_dict(self.best)
        d["launch"] = launch_settings(self, self.best)
        return d

    def to_dict(self, all_points: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model.id, "hardware": self.hardware.id, "engine": self.engine.id,
            "num_gpus": self.num_gpus, "isl": self.isl, "osl": self.osl,
            "precisions": [p.id for p in self.precisions],
            "points": self.frontier_dicts(),
            "area": self.area,
            "area_definition": (
                f"mean output tok/s/GPU of the frontier staircase over tok/s/user log-uniform on "
                f"[{self.area_range[0]:g}, {self.area_range[1]:g}]"),
            "area_range": list(self.area_range),
            "readings": self.readings(),
            "targets": self.targets.to_dict(),
            "best": self.best_dict(),
            "evaluated": self.evaluated, "feasible": self.feasible_count, "elapsed_s": self.elapsed_s,
            "search": self.settings,
        }
        if self.label:
            out["label"] = self.label
        if all_points:
            out["all_points"] = [self.point_dict(i) for i in range(len(self.points))]
        return out


def _label(tp: int, pp: int, ep: int, adp: bool, cp: int) -> str:
    return ParallelPlan(tp=tp, pp=pp, ep=ep, attention_dp=adp, cp=cp).label()


def _resolve_precisions(hw: HardwareSpec, precision: str | Precision | Sequence[str | Precision] | None) -> tuple[Precision, ...]:
    if precision is None:
        out = tuple(parse_precision(p) for p in DEFAULT_PRECISIONS if hw.supports(parse_precision(p).compute_class))
        if not out:
            raise UnsupportedError(f"{hw.id} runs none of the default precisions {', '.join(DEFAULT_PRECISIONS)} natively; pass --precision")
        return out
    items: list[str | Precision]
    if isinstance(precision, (str, Precision)):
        items = [s.strip() for s in precision.split(",")] if isinstance(precision, str) else [precision]
    else:
        items = list(precision)
    precs: list[Precision] = []
    for item in items:
        if isinstance(item, str) and not item:
            raise SpecError("precision list has an empty entry (e.g. 'fp8,,nvfp4')")
        p = parse_precision(item)
        hw.compute_rate_class(p.compute_class)  # raises UnsupportedError naming the format
        if p.id not in {q.id for q in precs}:
            precs.append(p)
    return tuple(precs)


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
    keep = f & pareto_mask(np.where(f, p["tok_s_per_user"], np.nan), np.where(f, p["output_tok_s_per_gpu"], np.nan))
    if targets.any:
        met = targets.met(p)
        keep |= met & pareto_mask(np.where(met, p["tok_s_per_user"], np.nan), np.where(met, p["output_tok_s_per_gpu"], np.nan))
    return keep


def _invalid_rows(plans: PlanTable, ids: Array, pi: int, reason: Array) -> Points:
    n = len(plans)
    cols: dict[str, Array] = {"precision": np.full(n, pi, dtype=np.int64), "plan_id": ids, "tp": plans.tp, "pp": plans.pp,
                              "ep": plans.ep, "cp": plans.cp, "attention_dp": plans.attention_dp, "dp": plans.dp,
                              "concurrency": np.ones(n), "reason": reason,
                              "num_gpus": (plans.tp * plans.pp * plans.dp).astype(float)}
    for name in _FLOAT_COLS:
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
) -> Frontier:
    """Search deployments of ``model`` on ``num_gpus`` x ``hardware`` and return the frontier.

    Every evaluated point is kept (``keep_points="all"``; ``"pareto"`` keeps only the running
    Pareto set so a 10^7-point sweep runs in bounded memory; ``"auto"`` switches above
    1,000,000 planned points). ``on_chunk(points, precisions)`` sees every evaluated chunk
    (streamed CSV). ``csv_path`` writes every evaluated point: at the end with ``pareto`` flags
    when all points are kept, else streamed as chunks arrive (flags blank); an interrupted run
    leaves no file. ``workers`` > 1 forks that many processes for large sweeps (default: the
    CPUs available). Units: ``ttft_ms``/``tpot_ms`` milliseconds, ``min_tok_s_per_user`` tok/s.
    ``spec_tokens`` / ``spec_acceptance``: speculative decoding or MTP with a stated acceptance
    rate (aggregated points; see :func:`serving.evaluate`).

    Example:
        >>> f = frontier("llama-3.1-8b", "h100-sxm", num_gpus=2, isl=512, osl=128, precision="fp8")
        >>> f.area > 0 and len(f.pareto) > 3
        True
    """
    t0 = time.perf_counter()
    m = load_model(model)
    hw = resolve_hardware(hardware)  # a calibration profile is a GPU too
    eng = load_engine(engine)
    for name, v in (("num_gpus", num_gpus), ("isl", isl), ("osl", osl), ("points_per_octave", points_per_octave), ("max_batch", 1 if max_batch is None else max_batch)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise SpecError(f"{name} must be a positive integer, got {v!r}")
    if points_per_octave > 4096:
        raise SpecError(f"points_per_octave={points_per_octave} is beyond integer resolution (max 4096)")
    if keep_points not in ("auto", "all", "pareto"):
        raise SpecError(f"keep_points must be 'auto', 'all' or 'pareto', got {keep_points!r}")
    if not 0 <= refine_tolerance <= 10:
        raise SpecError(f"refine_tolerance must lie in [0, 10], got {refine_tolerance}")
    if max_batch is not None:
        eng = eng.with_overrides(max_batch_size=int(max_batch))
    targets = Targets(ttft_ms, tpot_ms, min_tok_s_per_user)
    precs = _resolve_precisions(hw, precision)
    plans = enumerate_plans(m, hw, int(num_gpus), max_pp=max_pp, helix=helix, attention_dp=attention_dp)
    job = _Job(m, hw, eng, precs, int(isl), int(osl), int(spec_tokens), float(spec_acceptance))
    n_workers = default_workers() if workers is None else max(int(workers), 1)
    fine_ppo = int(points_per_octave)

    # ---- per precision: memory limit per plan, invalid rows, coarse grid ----
    valid_idx = np.flatnonzero(plans.valid)
    pv = plans.take(valid_idx)
    invalid: list[Points] = []
    grids: list[tuple[int, Array]] = []  # (precision index, concurrency limit per valid plan)
    for pi, prec in enumerate(precs):
        lim, usable = memory_limit(m, hw, prec, eng, pv, isl + osl / 2.0)
        ranks = np.where(pv.attention_dp, pv.tp, 1)  # max_batch_size holds per attention-DP rank
        lim = np.minimum(lim, np.minimum(eng.max_batch_size * ranks, MAX_CONCURRENCY))
        no_fit = usable <= 0
        no_seq = ~no_fit & (lim < 1)
        reason = np.where(no_fit, "weights_exceed_memory", np.where(no_seq, "oom", ""))
        bad = np.concatenate([np.flatnonzero(~plans.valid), valid_idx[no_fit | no_seq]])
        invalid.append(_invalid_rows(plans.take(bad), bad, pi, np.concatenate([plans.reason[~plans.valid], reason[no_fit | no_seq]]).astype(object)))
        grids.append((pi, np.where(no_fit | no_seq, 0, lim)))

    def task(pi: int, row: Array, conc: Array) -> tuple[int, dict[str, Array]]:
        return (pi, {"plan_id": valid_idx[row], "tp": pv.tp[row], "pp": pv.pp[row], "ep": pv.ep[row], "cp": pv.cp[row],
                     "attention_dp": pv.attention_dp[row], "dp": pv.dp[row], "concurrency": conc})

    def grid_tasks(ppo: float, per: int) -> Iterator[tuple[int, dict[str, Array]]]:
        """Chunks of about ``per`` points over consecutive plans, built lazily (bounded memory)."""
        for pi, lim in grids:
            counts = _grid_count(lim, ppo)
            block = (np.cumsum(counts) - 1) // max(per, 1)
            starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]]) if len(block) else np.zeros(0, dtype=np.int64)
            for lo, hi in zip(starts.tolist(), starts[1:].tolist() + [len(lim)]):
                row, conc = concurrency_grid(lim[lo:hi], ppo)
                if len(row):
                    yield task(pi, row + lo, conc)

    planned_fine = int(sum(_grid_count(lim, fine_ppo).sum() for _, lim in grids))
    refining = bool(refine) and fine_ppo > COARSE_POINTS_PER_OCTAVE and planned_fine >= REFINE_MIN_POINTS
    coarse_ppo = COARSE_POINTS_PER_OCTAVE if refining else fine_ppo
    planned = int(sum(_grid_count(lim, coarse_ppo).sum() for _, lim in grids))
    keep_all = keep_points == "all" or (keep_points == "auto" and planned_fine <= KEEP_ALL_MAX_POINTS)
    reducer = _Reducer(keep_all, targets)
    for p in invalid:
        reducer.add(p)
    bar = _Progress(planned, progress)
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
    ex = _Executor(job, workers_used)
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
                front = sub.take(np.flatnonzero(pareto_mask(sub["tok_s_per_user"], sub["output_tok_s_per_gpu"])))
                near |= ok & _near_frontier(cp_all, front, refine_tolerance)
            pv_row = np.full(len(plans), -1, dtype=np.int64)
            pv_row[valid_idx] = np.arange(len(valid_idx))
            stage2 = _refine_grid(cp_all.take(np.flatnonzero(near)), pv_row, grids, coarse_ppo, fine_ppo)
            n2 = sum(len(r) for _, r, _ in stage2)
            bar.add(n2)
            tasks2 = _split_tasks([task(pi, r, c) for pi, r, c in stage2 if len(r)], int(chunk_points), workers_used)
            for chunk in ex.run(tasks2, n2, bar):
                if on_chunk is not None:
                    on_chunk(chunk, precs)
                reducer.add(chunk)
        # ---- disaggregated pools ----
        if disagg:
            for pi in range(len(precs)):
                d = _disagg_points(job, pi, plans, int(num_gpus), fine_ppo, None if ttft_ms is None else ttft_ms / 1e3)
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
    pm = pareto_mask(np.where(f, pts["tok_s_per_user"], np.nan), np.where(f, pts["output_tok_s_per_gpu"], np.nan))
    pareto = _drop_ties(pts, np.flatnonzero(pm))
    pareto = pareto[np.lexsort((-pts["output_tok_s_per_gpu"][pareto], pts["tok_s_per_user"][pareto]))]
    met = targets.met(pts)
    best = None
    if targets.any and met.any():
        cand = np.flatnonzero(met)
        best = int(cand[np.argmax(pts["output_tok_s_per_gpu"][cand])])
    elif not targets.any and f.any():
        cand = np.flatnonzero(f)
        best = int(cand[np.argmax(pts["output_tok_s_per_gpu"][cand])])
    regions = _regions_for(job, pts, pareto)
    settings = {
        "points_per_octave": fine_ppo, "max_batch_size": eng.max_batch_size, "refine": refining, "coarse_points_per_octave": coarse_ppo,
        "refine_tolerance": refine_tolerance, "helix": helix, "attention_dp": attention_dp, "max_pp": max_pp,
        "disaggregated": disagg, "plans": len(plans), "valid_plans": int(plans.valid.sum()),
        "kept": "all" if keep_all else "pareto",
    }
    result = Frontier(
        model=m, hardware=hw, precisions=precs, engine=eng, num_gpus=int(num_gpus), isl=int(isl), osl=int(osl),
        points=pts, pareto=pareto, evaluated=reducer.evaluated, feasible_count=reducer.feasible,
        elapsed_s=time.perf_counter() - t0, targets=targets, best=best, regions=regions,
        area_range=(float(area_range[0]), float(area_range[1])), readings_at=tuple(float(x) for x in readings_at),
        all_points_kept=keep_all, plans=plans, label=label, settings=settings,
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


def _refine_grid(
    near: Points, pv_row: Array, grids: list[tuple[int, Array]], coarse_ppo: float, ppo: int,
) -> list[tuple[int, Array, Array]]:
    """Fine-grid concurrencies within one coarse step of each near-frontier coarse point,
    minus those already evaluated on the coarse grid."""
    window_octaves = 1.0 / coarse_ppo
    if len(near) == 0:
        return []
    span = max(math.ceil(window_octaves * ppo) - 1, 0)
    k = np.arange(-span, span + 1)
    base = MAX_CONCURRENCY * 2
    out = []
    for pi, lim in grids:
        sel = near["precision"] == pi
        if not sel.any():
            continue
        row = pv_row[near["plan_id"][sel]]
        c = near["concurrency"][sel]
        fine = np.round(c[:, None] * np.power(2.0, k[None, :] / ppo))
        rows = np.broadcast_to(row[:, None], fine.shape).ravel()
        fine = np.minimum(np.maximum(fine.ravel(), 1.0), lim[rows])
        keys = np.unique(rows.astype(np.int64) * base + fine.astype(np.int64))
        crow, cconc = concurrency_grid(lim, coarse_ppo)
        done = crow.astype(np.int64) * base + cconc.astype(np.int64)
        keys = keys[~np.isin(keys, done)]
        out.append((pi, keys // base, (keys % base).astype(float)))
    return out


def _regions_for(job: _Job, pts: Points, idx: Array) -> Array:
    out = np.full(len(idx), "", dtype=object)
    if len(idx) == 0:
        return out
    sub = pts.take(idx)
    for pi, prec in enumerate(job.precisions):
        sel = np.flatnonzero(sub["precision"] == pi)
        if sel.size == 0:
            continue
        s = sub.take(sel)
        out[sel] = classify_regions(job.model, job.hw, prec, job.eng, tp=s["tp"], pp=s["pp"], ep=s["ep"], cp=s["cp"],
                                    attention_dp=s["attention_dp"], concurrency=s["concurrency"], isl=job.isl, osl=job.osl,
                                    decode_only=s["mode"] == MODE_DISAGGREGATED)
    return out


# ---------------------------------------------------------------------------------------------
# Comparing designs
# ---------------------------------------------------------------------------------------------


COMPARE_AXES = ("model", "hardware", "precision")


def compare(
    designs: Sequence[dict[str, Any]], **common: Any,
) -> list[Frontier]:
    """Frontiers of several designs that differ in ``model``, ``hardware`` or ``precision``
    (each a dict of :func:`frontier` keyword overrides, plus an optional ``label``).

    Example:
        >>> fs = compare([{"precision": "fp8"}, {"precision": "bf16"}], model="llama-3.1-8b", hardware="h100-sxm", num_gpus=1, isl=512, osl=128)
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
        raise SpecError(f"--compare {spec!r}: expected AXIS=ID,ID,... with AXIS one of {', '.join(COMPARE_AXES)} (e.g. hardware=b200,h200-sxm)")
    return axis, values


# ---------------------------------------------------------------------------------------------
# Launch settings in engine vocabulary
# ---------------------------------------------------------------------------------------------


def _hf_id(model: ModelSpec) -> str:
    m = re.search(r"huggingface\.co/([^/\s]+/[^/\s]+)", model.source or "")
    return m.group(1) if m else model.id


_VLLM_QUANT = {"fp8": "fp8", "nvfp4": "modelopt_fp4", "mxfp4": "mxfp4", "w4a16": "awq", "int8": "int8"}


def launch_settings(fr: Frontier, i: int) -> dict[str, Any]:
    """Engine settings that reproduce point ``i``: TP/PP/EP, attention DP, Helix, max batch,
    chunk size, KV dtype, in TensorRT-LLM, vLLM and SGLang vocabulary (commands are templates:
    the checkpoint must already be in the point's precision)."""
    c = fr.points.cols
    prec = fr.precisions[int(c["precision"][i])]
    hf = _hf_id(fr.model)
    chunk = fr.engine.max_num_tokens
    kv_fp8 = prec.kv_cache.element_bits == 8
    quant = _VLLM_QUANT.get(prec.id.split("+")[0])

    def one(tp: int, pp: int, ep: int, adp: bool, cp: int, conc: int, replicas: int, role: str = "") -> dict[str, Any]:
        batch = math.ceil(conc / (tp if adp else 1))
        # TensorRT-LLM: Helix splits tp into attention-TP x context-parallel; MoE ep x moe_tp = tp
        trt_tp = tp // cp if cp > 1 else tp
        yaml_lines = [f"tensor_parallel_size: {trt_tp}", f"pipeline_parallel_size: {pp}"]
        if fr.model.moe:
            yaml_lines += [f"moe_expert_parallel_size: {ep}", f"moe_tensor_parallel_size: {tp // ep}"]
        yaml_lines += [f"enable_attention_dp: {'true' if adp else 'false'}", f"max_batch_size: {batch}",
                       f"max_num_tokens: {chunk}", "enable_chunked_prefill: true",
                       f"kv_cache_config: {{dtype: {'fp8' if kv_fp8 else 'auto'}}}"]
        if cp > 1:
            yaml_lines += [f"context_parallel_size: {cp}", "cp_config: {cp_type: HELIX}"]
        trt = {"command": f"trtllm-serve {hf} --config {role or 'config'}.yaml", "config_yaml": "\n".join(yaml_lines)}
        notes: list[str] = []
        # vLLM: attention DP is --data-parallel-size; MoE layers then span dp x tp ranks, as
        # experts (--enable-expert-parallel) or tensor-parallel (without it)
        v = ["vllm serve", hf]
        if adp:
            v += [f"--data-parallel-size {tp}", "--tensor-parallel-size 1"]
        else:
            v.append(f"--tensor-parallel-size {tp}")
        if fr.model.moe and ep == tp and ep > 1:
            v.append("--enable-expert-parallel")
        elif fr.model.moe and 1 < ep < tp:
            notes.append(f"vLLM: MoE runs either all-EP or all-TP over the {tp} ranks; ep={ep} x moe_tp={tp // ep} is not expressible")
        if pp > 1:
            v.append(f"--pipeline-parallel-size {pp}")
        if cp > 1:
            v.append(f"--decode-context-parallel-size {cp}")
        v += [f"--max-num-seqs {batch}", f"--max-num-batched-tokens {chunk}", "--enable-chunked-prefill"]
        if kv_fp8:
            v.append("--kv-cache-dtype fp8")
        if quant and prec.id != "bf16":
            v.append(f"--quantization {quant}")
        s = ["python -m sglang.launch_server", f"--model-path {hf}", f"--tp {tp}"]
        if adp:
            s += [f"--dp {tp}", "--enable-dp-attention"]
        if fr.model.moe and ep > 1:
            s.append(f"--ep {ep}")
        if pp > 1:
            s.append(f"--pp-size {pp}")
        s += [f"--max-running-requests {batch * (tp if adp else 1)}", f"--chunked-prefill-size {chunk}"]
        if kv_fp8:
            s.append("--kv-cache-dtype fp8_e4m3")
        if quant and prec.id != "bf16":
            s.append(f"--quantization {quant}")
        if cp > 1:
            notes.append("SGLang: no Helix/KV-parallel decode; nearest is the same tp without cp")
        if replicas > 1:
            notes.append(f"run {replicas} replicas of this server behind a router")
        return {"max_batch_per_rank": batch, "replicas": replicas, "trtllm": trt, "vllm": " ".join(v),
                "sglang": " ".join(s), "notes": notes}

    conc = int(c["concurrency"][i])
    dec = one(int(c["tp"][i]), int(c["pp"][i]), int(c["ep"][i]), bool(c["attention_dp"][i]), int(c["cp"][i]), conc,
              int(c["dp"][i]), "decode" if int(c["mode"][i]) == MODE_DISAGGREGATED else "")
    out: dict[str, Any] = {"precision": prec.id, "kv_cache_dtype": prec.kv_cache.id, "chunk_tokens": chunk}
    if int(c["mode"][i]) == MODE_DISAGGREGATED:
        pre = one(int(c["p_tp"][i]), int(c["p_pp"][i]), int(c["p_ep"][i]), bool(c["p_attention_dp"][i]), int(c["p_cp"][i]),
                  int(c["p_batch"][i]), int(c["prefill_workers"][i]), "prefill")
        out["prefill"] = pre
        out["decode"] = dec
        out["disaggregation"] = {
            "trtllm": "trtllm-serve disaggregated -c disagg.yaml (context_servers: prefill.yaml x "
                      f"{int(c['prefill_workers'][i])}, generation_servers: decode.yaml x {int(c['decode_workers'][i])})",
            "vllm": "add --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}' to both pools",
            "sglang": "add --disaggregation-mode prefill / --disaggregation-mode decode to the two pools",
        }
    else:
        out.update(dec)
    return out


# ---------------------------------------------------------------------------------------------
# CSV (atomic; streamed for huge sweeps)
# ---------------------------------------------------------------------------------------------


CSV_FIELDS = (
    "precision", "mode", "tp", "pp", "ep", "dp", "attention_dp", "cp", "concurrency", "ttft_ms", "tpot_ms",
    "tok_s_per_user", "output_tok_s_per_gpu", "total_tok_s_per_gpu", "num_gpus", "fits_in_memory",
    "memory_per_gpu_gb", "max_concurrency", "feasible", "reason", "pareto",
    "prefill_tp", "prefill_pp", "prefill_ep", "prefill_attention_dp", "prefill_cp", "prefill_batch",
    "prefill_workers", "decode_workers", "kv_transfer_ms",
) + tuple(f"{p}_{c}_s" for p in PHASES for c in OP_CLASSES)


def csv_rows(p: Points, precisions: Sequence[Precision], pareto: Array | None = None) -> Iterator[list[Any]]:
    """Rows (lists in ``CSV_FIELDS`` order) for a Points table; ``pareto`` marks frontier rows."""
    c = p.cols
    flag = np.zeros(len(p), dtype=bool)
    if pareto is not None:
        flag[pareto] = True
    names = np.array([q.id for q in precisions], dtype=object)

    def fmt(a: Array) -> list[Any]:
        return ["" if not np.isfinite(v) else f"{v:.6g}" for v in a.tolist()]

    cols = [
        names[c["precision"]].tolist(), np.array(MODES, dtype=object)[c["mode"]].tolist(), c["tp"].tolist(), c["pp"].tolist(),
        c["ep"].tolist(), c["dp"].tolist(), c["attention_dp"].astype(int).tolist(), c["cp"].tolist(), fmt(c["concurrency"]),
        fmt(c["ttft_s"] * 1e3), fmt(c["tpot_s"] * 1e3), fmt(c["tok_s_per_user"]), fmt(c["output_tok_s_per_gpu"]),
        fmt(c["total_tok_s_per_gpu"]), fmt(c["num_gpus"]), c["fits_in_memory"].astype(int).tolist(),
        fmt(c["memory_per_gpu_bytes"] / 1e9), fmt(c["max_concurrency"]), c["feasible"].astype(int).tolist(),
        [str(r) for r in c["reason"].tolist()], (flag.astype(int).tolist() if pareto is not None else [""] * len(p)),
        c["p_tp"].tolist(), c["p_pp"].tolist(), c["p_ep"].tolist(), c["p_attention_dp"].astype(int).tolist(), c["p_cp"].tolist(),
        c["p_batch"].tolist(), c["prefill_workers"].tolist(), c["decode_workers"].tolist(), fmt(c["kv_transfer_s"] * 1e3),
    ] + [fmt(c[f"bd_{ph}_{cl}"]) for ph in PHASES for cl in OP_CLASSES]
    return (list(r) for r in zip(*cols))


class AtomicWriter:
    """Write a file through a temporary sibling, renamed into place only on success, so an
    interrupted run (Ctrl-C) leaves no partial file."""

    def __init__(self, path: str | Path, mode: str = "w"):
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self.mode = mode
        self.fh: Any = None

    def __enter__(self) -> Any:
        try:
            self.fh = open(self.tmp, self.mode, newline="" if "b" not in self.mode else None)
        except OSError as exc:
            raise SpecError(f"cannot write {self.path}: {exc.strerror}") from None
        return self.fh

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.fh.close()
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass


def write_csv(result: Frontier | Sequence[Frontier], path: str | Path) -> Path:
    """Every kept point (all evaluated points unless the sweep streamed) with a ``pareto`` flag;
    several frontiers (``compare``) add a leading ``design`` column."""
    import csv

    frs = [result] if isinstance(result, Frontier) else list(result)
    multi = len(frs) > 1
    with AtomicWriter(path) as fh:
        w = csv.writer(fh)
        w.writerow((("design",) if multi else ()) + CSV_FIELDS)
        for f in frs:
            rows = csv_rows(f.points, f.precisions, f.pareto)
            w.writerows(([f.label] + r for r in rows) if multi else rows)
    return Path(path)


def frontier_json(results: Frontier | Sequence[Frontier], all_points: bool = False) -> dict[str, Any]:
    """The ``frontier --json`` document. One design: ``Frontier.to_dict``. Several (compare):
    ``points`` holds every design's frontier points tagged with ``design`` (each Pareto-optimal
    within its design), sorted by tok_s_per_user, and ``designs`` the per-design documents."""
    frs = [results] if isinstance(results, Frontier) else list(results)
    if len(frs) == 1:
        return frs[0].to_dict(all_points=all_points)
    docs = [f.to_dict(all_points=all_points) for f in frs]
    points = [dict(p, design=f.label) for f, d in zip(frs, docs) for p in d["points"]]
    points.sort(key=lambda p: p["tok_s_per_user"])
    base = docs[0]["area"] or 0.0
    summary = [{"design": f.label, "area": d["area"], "area_vs_first": (d["area"] / base) if base > 0 else None,
                "readings": d["readings"]} for f, d in zip(frs, docs)]
    return {"points": points, "comparison": summary, "designs": docs}


class StreamingCSV:
    """An ``on_chunk`` sink writing every evaluated point as it arrives (``pareto`` left blank),
    renamed into place by ``commit()``; ``abort()`` (or an exception in ``with``) removes it."""

    def __init__(self, path: str | Path):
        import csv

        self._atomic = AtomicWriter(path)
        self._fh = self._atomic.__enter__()
        self._w = csv.writer(self._fh)
        self._w.writerow(CSV_FIELDS)

    def __call__(self, p: Points, precisions: tuple[Precision, ...]) -> None:
        self._w.writerows(csv_rows(p, precisions))

    def commit(self) -> None:
        self._atomic.__exit__(None, None, None)

    def abort(self) -> None:
        self._atomic.__exit__(KeyboardInterrupt, None, None)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


__all__ = [
    "AREA_RANGE", "COLUMNS", "DEFAULT_PRECISIONS", "Frontier", "PlanTable", "Points", "StreamingCSV", "Targets",
    "axis_values", "balance_pools", "classify_regions", "compare", "concurrency_grid", "csv_rows", "enumerate_plans",
    "frontier", "frontier_area", "frontier_json", "launch_settings", "memory_limit", "pareto_mask", "parse_compare", "staircase",
    "write_csv",
]
