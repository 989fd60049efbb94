"""Pareto frontiers of throughput against interactivity: one definition of the Pareto mask,
the staircase F(x) and the frontier area, used by every command (``frontier``, ``search``,
``compare``, the disaggregated decode filter).

Frontier area: the mean, over tokens/s/user log-uniform on [lo, hi] (default 10 to 1000), of
F(x) = the highest output tokens/s/GPU among frontier points offering at least x tokens/s/user
(0 where none does). Units: tokens/s/GPU; two designs compare by the ratio of their areas.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import SpecError

Array = np.ndarray

AREA_RANGE = (10.0, 1000.0)  # tok/s/user: reading speed to the fastest interactive decode


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
        >>> x_front, y_front = np.array([10.0, 50.0]), np.array([900.0, 200.0])
        >>> staircase(x_front, y_front, np.array([5.0, 20.0, 60.0])).tolist()
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


def frontier_area(
    x_front: Array, y_front: Array, x_range: tuple[float, float] = AREA_RANGE
) -> float:
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
