"""Admission: the running batch an engine tuned for its load keeps (issue 15's "clients beyond
capacity queue, not slow the engine").

A step's GEMMs run in kernel widths: a swap-AB decode kernel carries at most
``cost.SWAP_AB_MAX_ROWS`` token rows per tile, so a step one row past a multiple of that width
launches one more tile per weight tile (257 rows: two tiles of 136 where 256 needed one of
256) and, where the GEMM is compute-bound, takes longer per token. Clients past that point
make the engine slower per token, and a closed loop then delivers less than it did with fewer
clients. An operator sets the engine's batch limit (``max_batch_size`` in TensorRT-LLM,
``--max-num-seqs`` in vLLM, ``--max-running-requests`` in SGLang) where adding sequences stops
adding throughput; the clients beyond it wait in the queue (their wait is inside TTFT by
Little's law, as for the memory cap).

:func:`batch_limit_candidates` proposes that limit: for each configuration whose step's rows
(per micro-batch and scheduling rank) passed a multiple of the kernel width, the batch that
puts the rows back at that multiple (rows scale with the running batch in the closed loop).
:func:`with_batch_limit` solves the loop again there where the step at the limit decodes
faster, and keeps whichever delivers more (:func:`keep_better`). ``running_concurrency`` then
states the limit the estimate assumes.

Steps that carry prompt chunks launch decode rows plus prompt tokens, and their GEMMs cross
tile and wave boundaries as the batch grows; a closed loop at the prompt budget can then also
deliver less with more clients. :func:`with_round_limits` makes throughput a non-decreasing
function of the clients: an operator who can set any round batch limit (``ROUND_LIMITS``: 1,
2, 3, 4, 6, 8, 12, ... the powers of two and 1.5x them, the sizes engines capture CUDA
graphs at) keeps the best of them below the clients, each limit's loop solved once per
configuration and reused for every client count of a grid.
:func:`admitted` applies both in order; ``serving.evaluate`` and the simulator's closed
loops use it.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from ..cost import SWAP_AB_MAX_ROWS, SWAP_AB_ROW_STEP
from ..distinct import distinct_rows
from .memory import scheduling_ranks
from .step import pipelined_step

Array = np.ndarray

# round batch limits: 2^k and 3 x 2^(k-1), up to 2^22 (every client count a grid may ask)
ROUND_LIMITS = np.unique(
    np.concatenate([2.0 ** np.arange(23), 3.0 * 2.0 ** np.arange(22)]).astype(float)
)


def batch_limit_candidates(
    running: Array,
    decode_rows: Array,
    micro: Array,
    ranks: Array,
    feasible: Array,
) -> tuple[Array, Array]:
    """Flat indices of the configurations to try with a lower batch limit, and that limit
    (an index may appear twice: once per candidate limit).

    ``decode_rows``: decoding query rows per step of the replica (sequences x query tokens
    each). Most steps of a closed loop carry no prompt chunk (``serving.step.chunked_prefill``),
    so their GEMMs launch these rows over the micro-batches and the scheduling (attention-DP)
    ranks. Two limits are tried for rows past a full swap-AB tiling: the batch that brings the
    rows back to the last count that fills t tiles of a width in steps of ``SWAP_AB_ROW_STEP``
    exactly, and the one at the last multiple of ``SWAP_AB_MAX_ROWS`` (one tile fewer). Rows
    scale with the running batch; the floor (per rank: engines bound the batch per attention-DP
    rank) keeps them at or below the target."""
    rows = decode_rows / np.maximum(micro * ranks, 1.0)
    t = np.maximum(np.ceil(rows / SWAP_AB_MAX_ROWS - 1e-9), 1.0)
    step = SWAP_AB_ROW_STEP * t
    fewer = (t - 1.0) * SWAP_AB_MAX_ROWS
    idx_all, limits = [], []
    for target in (np.maximum(np.floor(rows / step) * step, fewer), fewer):
        # a whole number of sequences per scheduling rank (engines bound the batch per rank)
        limit = np.floor(running / ranks * target / np.maximum(rows, 1e-30)) * ranks
        past = feasible & (target > 0) & (rows > target + 1e-6) & (limit >= 1.0)
        past = np.broadcast_to(past & (limit < running), rows.shape).ravel()
        idx = np.flatnonzero(past)
        idx_all.append(idx)
        limits.append(np.broadcast_to(limit, rows.shape).ravel()[idx])
    return np.concatenate(idx_all), np.concatenate(limits)


def keep_better(result: Any, idx: Array, trial: Any) -> Any:
    """``result`` (arrays over a grid) with the flat positions ``idx`` replaced by ``trial``
    (the same fields over ``idx`` only) where the trial delivers more output tokens/s/GPU and
    is feasible. Returns a new result of the same type."""
    if idx.size == 0:
        return result
    better = trial.feasible & (
        trial.output_tok_s_per_gpu > result.output_tok_s_per_gpu.ravel()[idx]
    )
    if not np.any(better):
        return result
    where = idx[better]

    def merged(full: Array, part: Array) -> Array:
        out = np.array(np.broadcast_to(full, result.feasible.shape))  # a writable copy
        flat = out.reshape(-1)
        flat[where] = np.broadcast_to(part, idx.shape)[better]
        return out

    values = {}
    for f in fields(result):
        full, part = getattr(result, f.name), getattr(trial, f.name)
        if isinstance(full, dict):
            values[f.name] = {k: merged(v, part[k]) for k, v in full.items()}
        else:
            values[f.name] = merged(full, part)
    return type(result)(**values)


# passes of the kernel-width search: a limit moves the rows, which can land past another
# boundary; searching again from the kept limit makes the result a fixed point (an engine set
# to the limit it reports is tuned no further). Each pass re-solves only the configurations
# the last one moved; DeepSeek-R1 on 8 x B200 with MTP (TP 2, PP 2, attention-DP) takes 8
BATCH_LIMIT_PASSES = 16


def with_batch_limit(run: Any, specs: tuple, kw: dict, opts: dict, result: Any) -> Any:
    """``result`` (``run(*specs, **kw, **opts)``, the loop at the memory and engine caps) with
    the configurations a lower batch limit serves better solved again at that limit
    (``run(..., batch_limit=...)``) and kept where they deliver more; searched again from
    each kept limit (``BATCH_LIMIT_PASSES`` at most) until no lower limit serves better."""
    only = None
    for _ in range(BATCH_LIMIT_PASSES):
        new = _batch_limit_pass(run, specs, kw, opts, result, only)
        if new is result:
            break
        only = np.flatnonzero(new.output_tok_s_per_gpu != result.output_tok_s_per_gpu)
        result = new
    return result


def _batch_limit_pass(
    run: Any, specs: tuple, kw: dict, opts: dict, result: Any, only: Array | None
) -> Any:
    """One pass of :func:`with_batch_limit` over the flat positions ``only`` (None: all)."""
    model, hw, prec, eng = specs
    shape = result.feasible.shape
    grid = {k: np.broadcast_to(np.asarray(v), shape) for k, v in kw.items()}
    ranks = scheduling_ranks(grid["tp"], grid["attention_dp"])
    query = 1.0 + opts.get("spec_tokens", 0)
    idx, limit = batch_limit_candidates(
        result.running_concurrency,
        result.step_decode_seqs * query,
        grid["pp"].astype(float),
        ranks,
        result.feasible,
    )
    if only is not None:
        pick = np.isin(idx, only)
        idx, limit = idx[pick], limit[pick]
    if idx.size == 0:
        return result
    sub = {k: v.ravel()[idx] for k, v in grid.items()}
    # solved again only where the step at the limit (the mix scaled to it) decodes faster per
    # second than the step the loop runs now: elsewhere the limit cannot deliver more
    dec, pre = (x.ravel()[idx] for x in (result.step_decode_seqs, result.step_prefill_tokens))
    scale = limit / result.running_concurrency.ravel()[idx]
    axes = {k: sub[k] for k in ("tp", "pp", "ep", "cp", "attention_dp")}

    memo: dict = {}

    def step_s(d: Array, q: Array) -> Array:
        return pipelined_step(
            model,
            prec,
            hw,
            eng,
            **axes,
            isl=sub["isl"],
            osl=sub["osl"],
            decode_seqs=d,
            prefill_tokens=q,
            decode_query=query,
            memo=memo,
        ).total_s

    # without drafts TPOT is the step the loop runs (no need to price it again)
    now = result.tpot_s.ravel()[idx] if query == 1.0 else step_s(dec, pre)
    at = step_s(dec * scale, pre * scale)
    keep = scale / np.maximum(at, 1e-300) > 1.0 / np.maximum(now, 1e-300)
    if not np.any(keep):
        return result
    sub = {k: v[keep] for k, v in sub.items()}
    trial = run(*specs, **sub, **opts, batch_limit=limit[keep])
    # an index tried at two limits: merged one after the other, so the better one stays
    idx = idx[keep]
    first = np.zeros(idx.size, dtype=bool)
    first[np.unique(idx, return_index=True)[1]] = True
    for part in (first, ~first):
        if np.any(part):
            result = keep_better(result, idx[part], _subset(trial, part))
    return result


def _subset(result: Any, sel: Array) -> Any:
    """The fields of a flat result at the positions ``sel`` (a boolean mask)."""
    values = {}
    for f in fields(result):
        v = getattr(result, f.name)
        if isinstance(v, dict):
            values[f.name] = {k: np.broadcast_to(x, sel.shape)[sel] for k, x in v.items()}
        else:
            values[f.name] = np.broadcast_to(v, sel.shape)[sel]
    return type(result)(**values)


def admitted(
    run: Any, specs: tuple, kw: dict, opts: dict, round_limits: bool = True
) -> tuple[Any, Any]:
    """The loop at the memory and engine caps (``run(*specs, **kw, **opts)``) and the loop a
    tuned engine runs: the kernel-width limit (:func:`with_batch_limit`), then, with
    ``round_limits``, the best round limit below the clients (:func:`with_round_limits`)."""
    plain = run(*specs, **kw, **opts)

    def tuned(grid: dict, first: Any) -> Any:
        return with_batch_limit(run, specs, grid, opts, first)

    first = tuned(kw, plain)
    if not round_limits:
        return plain, first
    cap = np.broadcast_to(plain.running_concurrency, plain.feasible.shape)
    return plain, with_round_limits(run, specs, kw, opts, first, tuned, cap)


def with_round_limits(
    run: Any, specs: tuple, kw: dict, opts: dict, result: Any, tuned: Any, cap: Array
) -> Any:
    """``result`` with each configuration that a round batch limit below its clients serves
    better solved again at that limit (the clients beyond it queue).

    The candidates of a client count C are the round limits below min(C, ``cap``), ``cap``
    being the batch the memory and engine caps let run (a limit at or above it changes
    nothing), from the ladder of the replica's scheduling ranks (:func:`round_limits`: under
    attention-DP with R ranks, R times the round limits).
    The loop at each round limit a configuration (all of ``kw`` but the concurrency) needs is
    solved once (``tuned(grid, run(grid))``, the kernel-width limit included) and shared by
    every client count of a grid; C takes the best candidate where it beats the loop at C.
    Throughput is thereby non-decreasing from any round limit C1 to any C2 > C1 (the loop at
    C1 is one of C2's candidates, or C1 is past the cap and both run the cap), and in practice
    across any two counts: what remains is a count just past a round limit (257) that runs
    faster than every candidate of a larger count, by the width of a wave step."""
    shape = result.feasible.shape
    if result.feasible.size == 0:
        return result
    conc = np.broadcast_to(np.asarray(kw["concurrency"], dtype=float), shape).ravel()
    names = [k for k in kw if k != "concurrency"]
    cols = [np.broadcast_to(np.asarray(kw[k]), shape).ravel() for k in names]
    key, first = distinct_rows(cols)
    nk = first.size
    feasible = result.feasible.ravel()
    ranks = np.broadcast_to(scheduling_ranks(kw["tp"], kw["attention_dp"]), shape).ravel()
    # candidates of each point: the first ``hi`` limits of its ranks' ladder
    top = np.minimum(conc, np.asarray(cap, dtype=float).ravel())
    hi = np.zeros(conc.size, dtype=np.int64)
    for r in np.unique(ranks):
        sel = ranks == r
        hi[sel] = np.searchsorted(round_limits(int(r)), top[sel], side="left")
    hi = np.where(feasible, hi, 0)
    if not np.any(hi):
        return result
    count = np.zeros(nk, dtype=np.int64)
    np.maximum.at(count, key, hi)
    width = int(count.max())
    owner = np.repeat(np.arange(nk), count)
    rank = np.arange(owner.size) - np.repeat(np.cumsum(count) - count, count)
    grid = {k: c[first[owner]] for k, c in zip(names, cols)}
    lim = np.zeros(owner.size)
    owner_ranks = ranks[first[owner]]
    for r in np.unique(owner_ranks):
        sel = owner_ranks == r
        lim[sel] = round_limits(int(r))[rank[sel]]
    grid["concurrency"] = lim
    at = tuned(grid, run(*specs, **grid, **opts))
    thr = np.full((nk, width), -np.inf)
    thr[owner, rank] = np.where(at.feasible, at.output_tok_s_per_gpu, -np.inf)
    running = np.ones((nk, width))
    running[owner, rank] = at.running_concurrency
    # the best limit at or below each rank: a running maximum along the limits
    env = np.maximum.accumulate(thr, axis=1)
    env_arg = np.maximum.accumulate(np.where(thr >= env, np.arange(width), 0), axis=1)
    j = np.maximum(hi - 1, 0)
    best = np.where(hi > 0, env[key, j], -np.inf)
    idx = np.flatnonzero(best > result.output_tok_s_per_gpu.ravel())
    if idx.size == 0:
        return result
    limit = running[key[idx], env_arg[key[idx], j[idx]]]
    sub = {k: np.broadcast_to(np.asarray(v), shape).ravel()[idx] for k, v in kw.items()}
    trial = run(*specs, **sub, **opts, batch_limit=limit)
    return keep_better(result, idx, trial)


def round_limits(ranks: int) -> Array:
    """The round batch limits of a replica with ``ranks`` scheduling ranks, ascending: R x
    ``ROUND_LIMITS`` (engines bound the batch per attention-DP rank), below R the round limits
    themselves (fewer clients than ranks: the ones beyond the limit wait at the front end), so
    a smaller client count's candidates are always among a larger one's."""
    return np.concatenate([ROUND_LIMITS[ROUND_LIMITS < ranks], ranks * ROUND_LIMITS])
