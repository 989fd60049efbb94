"""Concurrency grids: one geometric grid definition for every sweep (frontier, its adaptive
refinement, the advisor's operating points, validate's offline search)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import SpecError
from ..serving.memory import MAX_CONCURRENCY, memory_fit, memory_reason
from ..specs.engine import EngineConstants
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision
from .plans import PlanTable
from .points import Points

Array = np.ndarray

POINTS_PER_OCTAVE = 4
# the advisor's grid: powers of two 1 .. 4096 requests per replica
ADVISOR_MAX_CONCURRENCY = 4096


def memory_limit(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plans: PlanTable,
    context: float,
    spec_tokens: int = 0,
) -> tuple[Array, Array, Array]:
    """(max concurrency per replica at ``context`` tokens, usable KV bytes per GPU, why not one
    sequence fits or "": ``serving.memory_reason``) per plan: :func:`serving.memory_fit`
    (with ``spec_tokens`` drafts: the MTP blocks' memory too), so the concurrency grid stops at
    the limit before anything is evaluated."""
    safe = plans.valid
    tp, ep, cp, pp = (np.where(safe, v, 1) for v in (plans.tp, plans.ep, plans.cp, plans.pp))
    ctx = np.asarray(float(context))
    adp = plans.attention_dp
    w_bytes, kv_seq, _, usable, max_conc = memory_fit(
        model, hw, prec, eng, tp, pp, ep, adp, cp, ctx, spec_tokens
    )
    no_kv = memory_reason(hw, eng, w_bytes, usable, kv_seq, (tp, pp, adp), spec_tokens > 0)
    return max_conc, usable, no_kv


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
    n = np.where(
        limit >= 1, np.floor(np.log2(np.maximum(limit, 1)) * ppo + 1e-9).astype(np.int64) + 2, 0
    )
    row = np.repeat(np.arange(len(limit)), n)
    start = np.cumsum(n) - n
    j = np.arange(n.sum()) - np.repeat(start, n)
    last = j == np.repeat(n - 1, n)
    c = np.where(last, limit[row], np.minimum(np.round(np.power(2.0, j / ppo)), limit[row]))
    dup = np.zeros(len(c), dtype=bool)
    dup[1:] = (c[1:] == c[:-1]) & (row[1:] == row[:-1])
    return row[~dup], c[~dup]


def grid_count(limit: Array, ppo: float) -> Array:
    """Points ``concurrency_grid`` makes per row (an upper bound: rounding merges a few)."""
    limit = np.floor(np.asarray(limit, dtype=float))
    n = np.floor(np.log2(np.maximum(limit, 1.0)) * ppo + 1e-9) + 2
    return np.where(limit >= 1, np.minimum(n, limit + 1), 0).astype(np.int64)


def refine_grid(
    near: Points,
    pv_row: Array,
    grids: list[tuple[int, Array]],
    coarse_ppo: float,
    ppo: int,
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


def power_of_two_grid(limit: int = ADVISOR_MAX_CONCURRENCY) -> tuple[int, ...]:
    """Powers of two from 1 to ``limit`` (and ``limit``): ``concurrency_grid`` at one point
    per octave.

    Example:
        >>> power_of_two_grid(8)
        (1, 2, 4, 8)
    """
    return tuple(int(c) for c in concurrency_grid(np.array([limit]), 1)[1])
