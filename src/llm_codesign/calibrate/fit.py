"""Calibration fit: the engine constants that minimize the robust error on measured rows.

Procedure (documented and repeatable; ``llm-codesign calibrate-fit`` runs it):
  1. map every row of the calibration CSVs (``validate.map_row``) and keep those whose
     framework belongs to the engine being fitted;
  2. objective = mean over groups (metric class: throughput, tpot, ttft; times model family:
     dense, MoE) of the median |log(predicted / measured)| — robust to outlier rows, and each
     group weighs the same whatever its row count, so neither a table nor the dense rows
     dominate the MoE constants;
  3. coordinate descent over the named constants of ``FIT_SPACE`` in log space within
     physically plausible bounds (efficiencies <= 1, multipliers near 1, latencies >= 0), a few
     sweeps with a shrinking step; where no step of a sweep helps a constant, steps of a half
     and a quarter of it (``_finer``: an optimum inside a coarse step is found rather than
     missed); deterministic (no randomness). A step's candidates differ from the current
     engine in one constant each, so they are priced at once (``workers`` processes, each
     holding the rows) and then taken in order as the sequential descent takes them: the same
     fit on any number of workers.
No constant is per row or per model: every row of an engine shares the same few numbers.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..errors import DataFileError, UnknownIdError
from ..explore.runner import POOL_STOP_TIMEOUT_S, _stop, _worker_signals, default_workers
from ..outputs import write_text
from ..report.launch_data import gpus_per_node
from ..serving.memory import scheduling_ranks
from ..specs.engine import CHOICES, EngineConstants, load_engine
from ..specs.hardware import load_hardware
from ..specs.model import load_model
from ..validate import MappedRow, map_row, metric_class, predict_rows, read_measurements
from ..validate.consistency import consistent_rows
from ..validate.conventions import throughput_metric, throughput_value

# name -> (lower bound, upper bound, physical meaning)
FIT_SPACE: dict[str, tuple[float, float, str]] = {
    # ordered: benchmark-protocol and host terms first, so that efficiencies are not bent to
    # absorb queueing (coordinate descent is greedy)
    "ttft_burst": (0.0, 1.0, "share of requests in the closed-loop start-up wave"),
    "request_overhead_s": (0.0, 0.2, "fixed latency per request added to TTFT"),
    # host cost per sequence: vLLM V1's 5-6 ms gap between decode steps at 256 sequences
    # (vllm issue #10634, 2024-11: 20-23 us each, GIL contention; reference/moe-comm.md 5);
    # TensorRT-LLM's PyTorch executor logged a host step of 45.11 ms at 1,536 requests per
    # rank (NVIDIA/TensorRT-LLM PR #10273, 2025-12: gpt-oss-120b, GB200, attention-DP 2,
    # C++ scheduler): 29.4 us each; 40 us bounds them
    "per_seq_overhead_s": (0.0, 40e-6, "host cost per sequence per iteration"),
    "host_overlap": (0.0, 1.0, "share of host work hidden behind GPU work (overlap scheduler)"),
    "step_overhead_s": (20e-6, 20e-3, "fixed cost per engine iteration"),
    "kernel_overhead_s": (0.5e-6, 20e-6, "fixed cost per kernel"),
    "allreduce_latency_s": (2e-6, 80e-6, "all-reduce small-message latency"),
    # MoE (reference/moe-comm.md 2-3): the per-layer fixed kernels range from one fused top-k
    # kernel (4-7 us, vllm #34206) through ~24 us (fused trtllm-gen path, TB24) to ~95 us
    # (CUTLASS path at one token, TB24); top-k + align in SGLang/vLLM 27-72 us. Real routing
    # spreads up to ~20x uniform without EPLB (TB4); a balancer with redundant experts can
    # beat uniform routing (TB4 with EPLB: 1.4x uniform at EP32; a perfect one: 0)
    "moe_layer_overhead_s": (4e-6, 120e-6, "fixed MoE kernels per layer (routing, sort, ...)"),
    "routing_skew": (0.5, 20.0, "busiest EP rank's spread over uniform routing (TB4: ~19)"),
    # the old fraction bounds 0.5..0.95 over the bundled GPUs' efficiency.hbm of 0.80 (the files'
    # unmeasured default when the bounds were set; the measured fractions are 0.79-0.86)
    "hbm_efficiency_scale": (
        0.625,
        1.1875,
        "multiplier on the hardware file's measured HBM fraction (efficiency.hbm)",
    ),
    "attn_decode_efficiency": (0.3, 0.95, "decode attention fraction of HBM bandwidth"),
    "attn_prefill_efficiency": (0.2, 0.9, "prefill attention fraction of tensor-core peak"),
    "gemm_scale": (0.5, 1.0, "multiplier on measured MAMF GEMM ceiling"),
}


@dataclass
class FitResult:
    engine: EngineConstants
    before: float
    after: float
    rows: int
    history: list[tuple[str, float, float]]
    refit: str = ""  # the constants a refit from the file's values moved ("": a full fit)
    fitted: tuple[str, ...] = ()  # the constants the descent varied
    # the ranges the descent used where the rows narrow FIT_SPACE's (``fit_bounds``)
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def at_bounds(self) -> list[tuple[str, float, float]]:
        """(name, value, bound) of each fitted constant that ended on a bound of its range
        (``at_bound``): a sign of physics the model lacks, not a value to trust."""
        return at_bound(self.engine, list(self.fitted), self.bounds)


def host_cost_ceiling(rows: list[MappedRow]) -> float | None:
    """The largest host cost per sequence and iteration (``per_seq_overhead_s``, seconds) the
    rows allow, or None where none bounds it.

    Each iteration costs every running sequence c seconds of host work on its scheduler and
    yields it one token (no speculative drafts), and an iteration lasts at least its host work,
    hidden behind the GPU's or not (``serving.step.step_cost``). A scheduler therefore delivers
    under 1 / c output tokens per second, whatever the GPU and the batch: c < 1 / the fastest
    output rate per scheduler that a row measured (per GPU x tp / scheduling ranks; a total or
    per-node rate read per GPU as ``validate.conventions.throughput_value`` writes it). Rows with
    speculative drafts (more than a token an iteration), disaggregated pools or pipeline stages
    (a share of the host work per stage) do not bound it.

    Example: gpt-oss-20b on one GB200, TensorRT-LLM, 56,528 output tokens/s (serving.csv):
    c < 1 / 56,528 = 17.7 us."""
    fastest = 0.0
    for r in rows:
        kind = throughput_metric(r.metric)
        if r.spec_tokens or r.pools or r.pp != 1 or kind is None or kind[0] != "output":
            continue
        if not r.measured > 0:
            continue
        # the metric of one output token per second per GPU (validate's one conversion)
        node = float(gpus_per_node(load_hardware(r.hardware)))
        per_gpu = r.measured / throughput_value(r.metric, 1.0, 0.0, max(r.metric_gpus, 1), node)
        ranks = float(scheduling_ranks(r.tp, bool(r.attention_dp)))
        fastest = max(fastest, per_gpu * r.tp / ranks)
    return 1.0 / fastest if fastest > 0 else None


def fit_bounds(rows: list[MappedRow]) -> dict[str, tuple[float, float]]:
    """The range of each ``FIT_SPACE`` constant for these rows: FIT_SPACE's, with the host
    cost per sequence capped where a row's measured rate caps it (``host_cost_ceiling``)."""
    bounds = {name: (lo, hi) for name, (lo, hi, _) in FIT_SPACE.items()}
    ceiling = host_cost_ceiling(rows)
    if ceiling is not None:
        lo, hi = bounds["per_seq_overhead_s"]
        bounds["per_seq_overhead_s"] = (lo, min(hi, ceiling))
    return bounds


def at_bound(
    eng: EngineConstants,
    names: list[str],
    bounds: dict[str, tuple[float, float]] | None = None,
) -> list[tuple[str, float, float]]:
    """(name, value, bound) of the ``FIT_SPACE`` constants of ``names`` (each once) whose value
    in ``eng`` lies on a bound of its range (within 1e-3 relative: engine files store four
    significant digits). The 0 and 1 ends of a share (``ttft_burst``, ``host_overlap``),
    ``gemm_scale`` 1 (the measured GEMM ceiling itself) and a lower bound of 0 (a cost the rows
    show none of, e.g. ``request_overhead_s`` where no row times a first token) are limits of
    what the constant means, not of a plausible range: not reported. ``bounds``: the ranges
    the fit used where they differ from FIT_SPACE's (``fit_bounds``)."""
    natural = {("ttft_burst", 1.0), ("host_overlap", 1.0), ("gemm_scale", 1.0)}
    out = []
    for name in dict.fromkeys(names):
        lo, hi = (bounds or {}).get(name, FIT_SPACE[name][:2])
        v = float(getattr(eng, name))
        for bound in (lo, hi):
            meaning = bound == 0.0 or (name, bound) in natural
            if abs(v - bound) <= 1e-3 * max(abs(bound), 1e-30) and not meaning:
                out.append((name, v, bound))
    return out


@cache
def _is_moe(model: str) -> bool:
    return load_model(model).moe is not None


def objective(rows: list[MappedRow], eng: EngineConstants) -> float:
    preds, _ = predict_rows(rows, engine_override=eng)
    return objective_of(rows, preds)


def objective_of(rows: list[MappedRow], preds: list[float]) -> float:
    """The fit's objective for ``rows`` predicted as ``preds``: the mean over metric class x
    dense/MoE of the median |log predicted / measured| (rows without a finite prediction left
    out)."""
    by_class: dict[tuple[str, bool], list[float]] = {}
    for r, p in zip(rows, preds):
        if np.isfinite(p) and p > 0:
            key = (metric_class(r.metric), _is_moe(r.model))
            by_class.setdefault(key, []).append(abs(math.log(p / r.measured)))
    if not by_class:
        return float("inf")
    return float(np.mean([np.median(v) for v in by_class.values()]))


def load_rows(paths: list[str | Path], engine_id: str) -> list[MappedRow]:
    """The mapped rows of ``paths`` the fit of ``engine_id`` prices: that engine's rows (every
    framework's for ``generic``), less the closed-loop runs that contradict their own sweep
    (``validate.consistency``; ``validate`` keeps and marks them)."""
    rows: list[MappedRow] = []
    for p in paths:
        for i, raw in enumerate(read_measurements(p)):
            m = map_row(i, raw)
            # "generic" pools every framework: the fallback for engines without their own fit
            if not isinstance(m, str) and (m.engine == engine_id or engine_id == "generic"):
                rows.append(m)
    return consistent_rows(rows)


FIT_WORKERS = 6  # a step's most candidates (the shares' six coarse steps): more workers idle
_WORKER_ROWS: list[MappedRow] = []  # a worker process's rows (``_Objectives``)


def _hold_rows(rows: list[MappedRow]) -> None:
    global _WORKER_ROWS
    _worker_signals()
    _WORKER_ROWS = rows


def _worker_objective(eng: EngineConstants) -> float:
    return objective(_WORKER_ROWS, eng)


class _Objectives:
    """:func:`objective` of several engines on one row set: in this process, or over
    ``workers`` forked processes that hold the rows (the frontier's pool: its workers leave
    Ctrl-C to the parent and are stopped within ``POOL_STOP_TIMEOUT_S``); in this process where
    the platform cannot fork or this process is itself a pool's worker."""

    def __init__(self, rows: list[MappedRow], workers: int):
        self.rows = rows
        self.pool: Any = None
        forks = "fork" in multiprocessing.get_all_start_methods()
        if workers > 1 and forks and not multiprocessing.current_process().daemon:
            ctx = multiprocessing.get_context("fork")
            self.pool = ctx.Pool(workers, initializer=_hold_rows, initargs=(rows,))

    def __call__(self, engines: list[EngineConstants]) -> list[float]:
        if self.pool is None or len(engines) < 2:
            return [objective(self.rows, e) for e in engines]
        return list(self.pool.map(_worker_objective, engines, chunksize=1))

    def close(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            _stop(pool, timeout_s=POOL_STOP_TIMEOUT_S)


def _descend(
    rows: list[MappedRow],
    eng: EngineConstants,
    names: list[str],
    sweeps: int,
    progress: Callable[[str], None] | None,
    bounds: dict[str, tuple[float, float]],
    objectives: _Objectives | None = None,
) -> tuple[EngineConstants, float, list[tuple[str, float, float]]]:
    """Coordinate descent from ``eng`` (module doc, step 3) within ``bounds``; ``objectives``
    prices a step's candidates (default: one by one in this process)."""
    objectives = objectives or _Objectives(rows, 1)
    best = objective(rows, eng)
    history: list[tuple[str, float, float]] = []
    factor = 1.6
    for sweep in range(sweeps):
        for name in names:
            lo, hi = bounds[name]
            cur = getattr(eng, name)
            improved = False
            for stage in _stages(name, cur, sweep, (lo, hi), factor):
                # the coarse steps first; where none of them helps, steps between the current
                # value and them (an optimum inside a coarse step, e.g. a multiplier near 1)
                if improved:
                    break
                stage = [min(max(c, lo), hi) for c in stage]  # within the bounds
                # each candidate is the engine with one value of this constant, whichever of the
                # stage's earlier ones was taken: priced together, taken in order
                todo = list(dict.fromkeys(c for c in stage if c != getattr(eng, name)))
                trials = {c: eng.with_overrides(**{name: c}) for c in todo}
                vals = dict(zip(todo, objectives(list(trials.values()))))
                for c in stage:
                    # (a value the stage started at: the engine before this stage, never better)
                    if c == getattr(eng, name) or c not in trials:
                        continue
                    trial, val = trials[c], vals[c]
                    if val < best - 1e-6:
                        best, eng, improved = val, trial, True
                        history.append((name, c, val))
                        if progress:
                            progress(f"sweep {sweep + 1}: {name} = {c:.4g} -> objective {val:.4f}")
    return eng, best, history


def _stages(
    name: str, cur: float, sweep: int, bounds: tuple[float, float], factor: float
) -> tuple[list[float], list[float]]:
    """A step's candidates for ``name`` at ``cur``: the coarse steps (fixed first values where a
    host term starts at 0; shares by an added amount; the other constants by powers of
    ``factor``, shrinking with the sweep), then :func:`_finer`."""
    lo, hi = bounds
    if name == "per_seq_overhead_s" and cur == 0.0:
        cands = [2e-6, 8e-6, 20e-6, 50e-6]
    elif name == "request_overhead_s" and cur == 0.0:
        cands = [2e-3, 8e-3, 20e-3, 50e-3]
    elif name in ("ttft_burst", "host_overlap"):
        cands = [min(max(cur + d / (sweep + 1), lo), hi) for d in (-0.4, -0.2, -0.1, 0.1, 0.2, 0.4)]
    else:
        f = factor ** (1.0 / (sweep + 1))
        cands = [cur * f**j for j in (-2, -1, 1, 2)]
    return cands, _finer(name, cur, sweep, factor)


def _finer(name: str, cur: float, sweep: int, factor: float) -> list[float]:
    """Candidates between ``cur`` and the coarse steps of ``_descend``: a half and a quarter of
    the smallest coarse step each way (added to the shares, whose smallest step is 0.1 / (sweep
    + 1); powers of the factor for the other constants; none from 0)."""
    if name in ("ttft_burst", "host_overlap"):
        return [cur + d / (sweep + 1) for d in (-0.05, 0.05, -0.025, 0.025)]
    if cur == 0.0:
        return []
    f = factor ** (1.0 / (sweep + 1))
    return [cur * f**j for j in (-0.5, 0.5, -0.25, 0.25)]


def _clip(value: float, bounds: tuple[float, float]) -> float:
    return min(max(value, bounds[0]), bounds[1])


def fit_engine(
    paths: list[str | Path],
    engine_id: str,
    *,
    sweeps: int = 3,
    params: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
    max_rows: int | None = None,
    from_current: bool = False,
    workers: int = 1,
) -> FitResult:
    """Fit ``FIT_SPACE`` constants of one engine to the rows of ``paths`` for that engine.

    Coordinate descent is greedy, so it runs from two starts: every fitted constant at its base
    value, and (for a bundled engine) the engine file's current values; the better end point is
    kept. A refit is therefore never worse on the same data than the file it replaces.
    ``from_current``: only the second start (a refit of ``params`` after a change of physics;
    ``before`` is then the file's objective). ``workers``: processes pricing a step's
    candidates together (the same fit on any number; 0: the CPUs this process may use, at most
    ``FIT_WORKERS``)."""
    rows = load_rows(paths, engine_id)
    if not rows:  # nothing to fit: never a "fitted" engine made of the base values
        raise DataFileError(
            f"{', '.join(str(p) for p in paths) or 'no data'}: no row maps to engine "
            f"{engine_id!r} (validate reports why rows are skipped); nothing to fit"
        )
    # the ranges from every row (a subsample could drop the row that caps a constant)
    bounds = fit_bounds(rows)
    if max_rows is not None and len(rows) > max_rows:
        step = len(rows) / max_rows
        rows = [rows[int(i * step)] for i in range(max_rows)]
    # the engine's stated semantics (kernel family, KV admission, limits) come from its file
    base = load_engine("base")
    try:
        current = load_engine(engine_id)
    except UnknownIdError:
        current = base.with_overrides(id=engine_id)
    # the file's values held within today's bounds (a bound tightened since it was fitted, or
    # one the rows set: ``fit_bounds``)
    held = current.with_overrides(
        **{name: _clip(getattr(current, name), bounds[name]) for name in FIT_SPACE}
    )
    start = current.with_overrides(
        id=engine_id,
        **{name: _clip(getattr(base, name), bounds[name]) for name in FIT_SPACE},
    )
    if from_current:
        start = held
    before = objective(rows, start)
    if not math.isfinite(before):
        raise DataFileError(
            f"{len(rows)} row(s) of engine {engine_id!r} map, but none can be predicted; "
            "nothing to fit"
        )
    names = params or list(FIT_SPACE)
    objectives = _Objectives(rows, workers or min(default_workers(), FIT_WORKERS))
    try:
        eng, best, history = _descend(rows, start, names, sweeps, progress, bounds, objectives)
        if held.id == engine_id and held != start and not from_current:
            if progress:
                progress("second start: the engine file's current values")
            second = _descend(rows, held, names, sweeps, progress, bounds, objectives)
            if second[1] < best:
                eng, best, history = second
    finally:
        objectives.close()
    refit = f"{', '.join(names)} from the file's values" if from_current else ""
    return FitResult(eng, before, best, len(rows), history, refit, tuple(names), bounds)


def _fit_history(result: FitResult, data_files: list[str]) -> str:
    """The engine file's account of its fit: this fit's procedure, data and objective; a refit
    from the file's values (``result.refit``) keeps the file's earlier account before it."""
    eng = result.engine
    this = (
        f"llm-codesign calibrate-fit --engine {eng.id} on {', '.join(data_files)}; "
        + (f"a refit of {result.refit}; " if result.refit else "")
        + f"{result.rows} rows; objective (mean over metric classes of median |log "
        f"pred/meas|) {result.before:.4f} -> {result.after:.4f}"
    )
    earlier = str(eng.sources.get("fit", "")).strip()
    return f"{earlier}; then {this}" if result.refit and earlier else this


def _stored(value: float, bounds: tuple[float, float] | None) -> float:
    """A fitted value at four significant digits, as engine files store them; rounded toward
    zero where rounding would carry it past the top of the range the rows set (a capped
    constant stays under its cap)."""
    v = float(f"{value:.4g}")
    if bounds is not None and v > bounds[1] >= value > 0:
        digits = 3 - math.floor(math.log10(value))
        v = math.floor(value * 10**digits) / 10**digits
    return v


def _meaning(name: str, bounds: dict[str, tuple[float, float]]) -> str:
    """A fitted constant's meaning for the engine file, with the range the rows set where they
    narrowed FIT_SPACE's (``fit_bounds``)."""
    lo, hi, meaning = FIT_SPACE[name]
    if name == "per_seq_overhead_s" and bounds.get(name, (lo, hi))[1] < hi:
        cap = bounds[name][1]
        return (
            f"{meaning}; at most {cap * 1e6:.4g} us, the inverse of the fastest output rate per "
            "scheduler a row measured (calibrate.fit.host_cost_ceiling)"
        )
    return meaning


def write_engine_yaml(result: FitResult, path: str | Path, data_files: list[str]) -> None:
    """Store the fitted constants with the procedure and data that produced them."""
    eng = result.engine
    d: dict[str, Any] = {"id": eng.id}
    for name in FIT_SPACE:
        d[name] = _stored(getattr(eng, name), result.bounds.get(name))
    # the kernel families and conventions (specs.engine.CHOICES) and the unfitted constants
    keep = {name for name, _, _ in CHOICES} | {
        "moe_partial_ep",
        "pp_prefill_overlap",
        "recurrent_state_overlap",
        "spec_separate_drafts",
        "windowed_kv_share",
        "adp_balance_timeout_iters",
        "adp_balance_wait_iters",
        "batch_wait_timeout_iters",
        "batch_wait_max_tokens_ratio",
        "network_latency_s",
        "comm_efficiency",
        "max_num_tokens",
        "memory_utilization",
        "max_batch_size",
        "cuda_graph_batches",  # the runtime's capture sizes (specs.cuda_graphs)
        "indexer_overhead_s",  # measured from kernel tables (benchmarks/dsa_indexer_report.py)
        "msa_indexer_overhead_s",  # ... and this (benchmarks/msa_module_report.py --fit)
        "compressed_overhead_s",  # ... and these (benchmarks/dsv4_attention_report.py --fit)
        "compressed_indexer_overhead_s",
        "compressed_topk_s",
    }
    for name in sorted(keep):
        d[name] = getattr(eng, name)
    d["sources"] = {
        "fit": _fit_history(result, data_files),
        **{name: _meaning(name, result.bounds) for name in FIT_SPACE},
        "unfitted": (
            "network latency, comm efficiency, max_num_tokens, max_batch_size (0: the runtime's "
            "own for each GPU, gpu_defaults), memory utilization are not fitted (base.yaml's "
            "values unless the file sources its own) "
            "(MoE constants move only where MoE rows exist); "
            "moe_comm, moe_kernels, moe_kernels_weight_only, moe_kernels_int4, attention_kernels, "
            "gqa_decode_kernels, dsa_kernels, expert_balancer, cuda_graph_batches, "
            "kv_admission and memory_budget state the engine's own behaviour (see "
            "kv_admission_source)"
        ),
        # the sources of the engine's stated behaviour survive a refit
        **{k: v for k, v in eng.sources.items() if k.endswith("_source") or k in keep},
    }
    write_text(path, yaml.safe_dump(d, sort_keys=False))
