"""Groups of configurations: the rows of a grid that share inputs, so that work depending on
those inputs alone is done once per group (``serving.evaluate`` prices the steps that do not
depend on the concurrency once per group; admission solves each round limit once per
configuration of a grid)."""

from __future__ import annotations

import numpy as np

from ..distinct import distinct_rows

Array = np.ndarray


def concurrency_groups(inputs: list[Array], shape: tuple[int, ...]) -> Array:
    """A group id per configuration of the broadcast ``shape`` (flat), equal where all of
    ``inputs`` (every input but the concurrency, not yet broadcast) are equal: from the
    broadcast where the concurrency has axes of its own, else from the values (flat lists of
    configurations, e.g. a frontier chunk)."""
    group_shape = np.broadcast(*inputs).shape
    size = int(np.prod(shape))
    if int(np.prod(group_shape)) < size:
        ids = np.arange(int(np.prod(group_shape)), dtype=np.int64).reshape(group_shape)
        return np.broadcast_to(ids, shape).ravel()
    if size <= 1:  # one configuration: one group
        return np.zeros(size, dtype=np.int64)
    return distinct_rows([np.broadcast_to(x, shape).ravel() for x in inputs])[0]


def group_members(group: Array, idx: Array) -> tuple[Array, Array]:
    """Positions in ``idx`` of one member of each group present (any member: their inputs are
    the same), and for each position of ``idx`` the slot of its group among those members."""
    g = group[idx]
    slot = np.full(int(g.max(initial=0)) + 1, -1, dtype=np.int64)
    slot[g] = np.arange(idx.size)
    present = np.flatnonzero(slot >= 0)
    which = np.zeros(slot.size, dtype=np.int64)
    which[present] = np.arange(present.size)
    return slot[present], which[g]


def compact(v: Array) -> Array:
    """``v``, or its one value as a 0-d array where every element holds that value."""
    a = np.asarray(v)
    if a.ndim == 0 or a.size == 0:
        return a
    first = a.flat[0]
    return np.asarray(first) if bool(np.all(a == first)) else a
