"""The distinct rows of a grid's inputs: :func:`distinct_rows` (a dense id per distinct row;
``serving.groups`` and ``serving.admission`` group a grid's configurations with it) and
:func:`distinct`, which lets an elementwise function of a grid be evaluated once per distinct
point of its arguments.

The simulator's step tables (``serving.sim_table``) price a step on a 4-D grid of (decoding
sequences, prompt tokens, their two contexts), and an MoE layer's grouped GEMMs depend on the
tokens alone: DeepSeek-V3's attention-DP table with one MTP draft has 49,938 mixed points and
1,120 distinct expert rows. ``cost.gemm_time`` prices the routed GEMMs' tile efficiency (the
costliest part of a step) on those distinct points and spreads the result back. Every function
it is used for is elementwise in the reduced arguments, or depends on the whole array only
through its maximum (``routing.expected_row_tiles``' spread) or whether any element passes a
test (the swap-AB and narrow-tile checks of ``cost.gemm_shape_efficiency``), which the distinct
points share: the numbers are those of the whole grid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

Array = np.ndarray

MIN_POINTS = 256  # smaller grids are priced whole (the reduction costs more than it saves)
MAX_SHARE = 0.5  # reduce only where at most this share of the points is distinct


@dataclass
class Distinct:
    """The distinct points of broadcast arguments: ``columns`` (one 1-D array per argument),
    ``inverse`` (each grid point's row in them), the grid's ``shape``, and ``cache``, scratch a
    caller keeps with the reduction (values computed on the distinct points)."""

    columns: tuple[Array, ...]
    inverse: Array
    shape: tuple[int, ...]
    cache: dict = field(default_factory=dict)

    def expand(self, values: Array) -> Array:
        """Values on the distinct points spread back over the grid."""
        return np.asarray(values)[self.inverse].reshape(self.shape)


def distinct_rows(cols: list[Array]) -> tuple[Array, Array]:
    """A dense id per distinct row of the columns ``cols`` (equal length), and the first
    position of each id."""
    code = np.zeros(cols[0].size, dtype=np.int64)
    first = np.zeros(1, dtype=np.int64)
    for c in cols:
        _, inv = np.unique(c, return_inverse=True)
        code = code * (int(inv.max(initial=0)) + 1) + inv.ravel()
        # relabelled densely after each column (the code stays below the row count squared)
        _, first, code = np.unique(code, return_index=True, return_inverse=True)
        code = code.ravel()
    return code, first


def distinct(*arrays: Array | float) -> Distinct | None:
    """The distinct points of the broadcast ``arrays``, or None where the grid is small
    (``MIN_POINTS``) or mostly distinct (``MAX_SHARE``).

    Examples:
        >>> d = distinct(np.tile([1.0, 2.0], (300, 1)), 8.0)  # 600 points, 2 distinct
        >>> [c.tolist() for c in d.columns], d.shape
        ([[1.0, 2.0], [8.0, 8.0]], (300, 2))
        >>> float(d.expand(np.array([10.0, 20.0]))[7, 1])
        20.0
        >>> distinct(np.arange(600.0)) is None  # all distinct
        True
    """
    if np.broadcast(*arrays).size < MIN_POINTS:
        return None
    grid = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in arrays))
    shape = grid[0].shape
    flat = [g.reshape(-1) for g in grid]
    inverse, first = distinct_rows(flat)
    if first.size > MAX_SHARE * flat[0].size:
        return None
    return Distinct(tuple(c[first] for c in flat), inverse, shape)
