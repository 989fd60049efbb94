"""The step-time table of the request-level simulator: one configuration's engine step priced
once, vectorized, on a grid, and interpolated in the event loop (``serving.simulate``).

Pricing a step with the cost model takes tens of microseconds per call even vectorized, and a
simulated run takes one step per few requests' tokens: so the simulator prices the step
(:func:`serving.step.discrete_step`, plus MTP drafts: :func:`serving.step.draft_time`) on a
grid over (decoding sequences d, prompt tokens in the step p, the decoding sequences' mean
context, the prompt tokens' mean context) and interpolates multilinearly. A pure decode step
(p = 0: most steps) has its own finer table over (d, context), every integer d up to
``EXACT_DECODE_ROWS``. Between grid points the step is close to linear in each axis (GEMM
rows, KV bytes and attention FLOPs grow linearly; kernel-width steps are the exception, which
the exact rows of the decode table resolve); ``tests/test_simulate.py`` states the error
against direct pricing.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import plan_feasibility
from ..specs.precision import Precision
from ..specs.traffic import Requests
from .admission import admitted
from .aggregated import _evaluate_running
from .balance import holds_context
from .memory import (
    MAX_CONCURRENCY,
    WEIGHTS_EXCEED_MEMORY,
    WORKSPACE_EXCEEDS_MEMORY,
    memory_fit,
    memory_reason,
    rank_token_budget,
    scheduling_ranks,
)
from .step import discrete_step, draft_time, tokens_per_step

Array = np.ndarray

EXACT_DECODE_ROWS = 256  # the decode table holds every d up to this, then DECODE_PER_OCTAVE
DECODE_PER_OCTAVE = 16
MIXED_EXACT_ROWS = 8  # the mixed table: d = 0..8, then MIXED_PER_OCTAVE
MIXED_PER_OCTAVE = 4
PROMPT_PER_OCTAVE = 3
CONTEXT_POINTS = 6  # geometric from MIN_CONTEXT to the longest context (+ 0 for prompts)
MIN_CONTEXT = 16.0


def _rows(lo_exact: int, top: float, per_octave: int) -> Array:
    """0..lo_exact, then ``per_octave`` geometric points per doubling up to ``top``."""
    top = max(float(top), 1.0)
    exact = np.arange(0, min(lo_exact, int(np.ceil(top))) + 1, dtype=float)
    if top <= lo_exact:
        return exact
    n = int(np.ceil(np.log2(top / lo_exact) * per_octave))
    return np.unique(np.concatenate([exact, lo_exact * 2.0 ** (np.arange(1, n + 1) / per_octave)]))


def _bracket(grid: list[float], x: float) -> tuple[int, float]:
    """(i, w): x lies between grid[i] and grid[i+1] at weight w (clamped to the grid)."""
    n = len(grid)
    if n == 1 or x <= grid[0]:
        return 0, 0.0
    if x >= grid[-1]:
        return n - 2, 1.0
    i = bisect_right(grid, x) - 1
    lo = grid[i]
    return i, (x - lo) / (grid[i + 1] - lo)


@dataclass
class StepTable:
    """Step seconds on a grid, with scalar lookups for the event loop.

    ``decode(d, ctx)``: a step decoding d sequences of mean context ctx, no prompt;
    ``mixed(d, p, ctx, pctx)``: d decoding sequences and p prompt tokens of mean context pctx.
    """

    d_dec: list[float]
    c_dec: list[float]
    t_dec: list[float]  # flat [d][c]
    d_mix: list[float]
    p_mix: list[float]
    c_mix: list[float]
    q_mix: list[float]
    t_mix: list[float]  # flat [d][p][c][q]
    points: int  # grid points priced

    def decode(self, d: float, ctx: float) -> float:
        i, wi = _bracket(self.d_dec, d)
        j, wj = _bracket(self.c_dec, ctx)
        nc = len(self.c_dec)
        t = self.t_dec
        a = i * nc + j
        b = a + nc
        j1 = 1 if nc > 1 else 0
        top = t[a] + wj * (t[a + j1] - t[a]) if j1 else t[a]
        if len(self.d_dec) == 1:
            return top
        bot = t[b] + wj * (t[b + j1] - t[b]) if j1 else t[b]
        return top + wi * (bot - top)

    def mixed(self, d: float, p: float, ctx: float, pctx: float) -> float:
        grids = (self.d_mix, self.p_mix, self.c_mix, self.q_mix)
        sizes = [len(g) for g in grids]
        idx, wts = [], []
        for g, x in zip(grids, (d, p, ctx, pctx)):
            i, w = _bracket(g, x)
            idx.append(i)
            wts.append(w)
        strides = (sizes[1] * sizes[2] * sizes[3], sizes[2] * sizes[3], sizes[3], 1)
        total = 0.0
        t = self.t_mix
        for corner in range(16):
            w = 1.0
            off = 0
            for ax in range(4):
                hi = (corner >> ax) & 1
                if hi and sizes[ax] == 1:
                    w = 0.0
                    break
                w *= wts[ax] if hi else 1.0 - wts[ax]
                off += (idx[ax] + hi) * strides[ax]
            if w:
                total += w * t[off]
        return total


def step_table(
    model: ModelSpec,
    prec: Precision,
    hw: HardwareSpec,
    eng: EngineConstants,
    axes: dict[str, Any],
    *,
    max_rows: float,
    max_prompt: float,
    max_context: float,
    spec_tokens: int = 0,
) -> StepTable:
    """Price one configuration's steps on the grid (``axes``: tp, pp, ep, cp, attention_dp as
    scalars) up to ``max_rows`` decoding sequences, ``max_prompt`` prompt tokens per step and
    ``max_context`` tokens of context. With ``spec_tokens`` k a decoding sequence verifies
    1 + k tokens and the step adds k drafts' time (as ``serving.evaluate`` does)."""
    memo: dict = {}
    query = 1.0 + spec_tokens
    ctx_top = max(float(max_context), MIN_CONTEXT * 2)
    ctx = np.geomspace(MIN_CONTEXT, ctx_top, CONTEXT_POINTS)

    def price(d: Array, p: Array, c: Array, pc: Array) -> Array:
        t = discrete_step(
            model,
            prec,
            hw,
            eng,
            **axes,  # type: ignore[arg-type]
            decode_seqs=d,
            decode_ctx=c,
            prefill_tokens=p,
            prefill_ctx=pc,
            decode_query=query,
            memo=memo,
        )
        if spec_tokens:
            plain = discrete_step(
                model, prec, hw, eng, **axes, decode_seqs=d, decode_ctx=c, memo=memo
            )  # type: ignore[arg-type]
            drafts = draft_time(
                model, eng, plain, axes["pp"], spec_tokens, d, axes["tp"], axes["attention_dp"]
            )
            t = t + np.where(d > 0, drafts, 0.0)
        return t

    d_dec = _rows(EXACT_DECODE_ROWS, max_rows, DECODE_PER_OCTAVE)
    dd, cc = np.meshgrid(d_dec, ctx, indexing="ij")
    t_dec = price(dd, np.zeros_like(dd), cc, np.zeros_like(dd))
    d_mix = _rows(MIXED_EXACT_ROWS, max_rows, MIXED_PER_OCTAVE)
    p_mix = np.concatenate([[0.0], _rows(1, max(max_prompt, 1.0), PROMPT_PER_OCTAVE)[1:]])
    q_mix = np.concatenate([[0.0], ctx])
    d4, p4, c4, q4 = np.meshgrid(d_mix, p_mix, ctx, q_mix, indexing="ij")
    t_mix = price(d4, p4, c4, q4)
    return StepTable(
        d_dec=d_dec.tolist(),
        c_dec=ctx.tolist(),
        t_dec=np.asarray(t_dec, dtype=float).ravel().tolist(),
        d_mix=d_mix.tolist(),
        p_mix=p_mix.tolist(),
        c_mix=ctx.tolist(),
        q_mix=q_mix.tolist(),
        t_mix=np.asarray(t_mix, dtype=float).ravel().tolist(),
        points=int(t_dec.size + t_mix.size),
    )


@dataclass
class Engine:
    """What the scheduler of one replica needs: the step table and its limits."""

    table: StepTable
    max_running: int
    kv_tokens: float  # KV capacity of the replica, in tokens
    budget: float  # tokens per step (decode + prompt)
    chunk_cap: float  # one prompt's tokens in one step: a sequence lives on one rank
    full_admission: bool
    overhead_s: float
    tokens_per_step: float  # expected tokens a decoding sequence yields per step (MTP)
    query: float  # query tokens a decoding sequence puts in a step (1 + MTP drafts)
    # TensorRT-LLM's batch waiting (serving.balance.batch_wait_window): prompts wait, while a
    # sequence decodes, until the step's tokens reach hold_tokens or hold_iters steps have
    # passed (0: no waiting; never under attention-DP)
    hold_iters: int = 0
    hold_tokens: float = 0.0
    # attention-DP: the scheduling ranks (each request lives on one, with its share of the
    # budget and of max_running) and the hold on them, TensorRT-LLM's context balance or
    # SGLang's prefill delayer (serving.sim_ranks; serving.balance prices it in the mean; 0: none)
    ranks: int = 1
    balance_timeout: int = 0
    balance_wait: int = 0
    balance_kind: str = "executor"
    # a run that preempts more often stops (0: never; ``simulate``'s ``max_preemptions``)
    max_preemptions: int = 0


class Thrashing(Exception):
    """A simulated run passed its ``Engine.max_preemptions`` (its message ends in
    ``THRASHING``)."""


THRASHING = "(the run thrashes)"  # the end of a stopped run's reason: what callers look for


def engine_for(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    axes: dict[str, Any],
    reqs: Requests,
    spec_tokens: int,
    spec_acceptance: float,
    replica_requests: int,
) -> Engine | str:
    """The replica's scheduler limits and step table, or why the configuration cannot run."""
    eng = for_gpu(eng, hw)  # (the runtime's limits on hw: specs.gpu_defaults)
    tp, pp, ep, cp, adp = (axes[k] for k in ("tp", "pp", "ep", "cp", "attention_dp"))
    reason = str(plan_feasibility(model, tp, pp, ep, adp, cp, eng.moe_partial_ep).reshape(-1)[0])
    if reason:
        return reason
    ctx_ref = float(np.mean(reqs.isl) + np.mean(reqs.osl))
    w_bytes, kv_seq, _, usable, _ = memory_fit(
        model,
        hw,
        prec,
        eng,
        np.asarray(tp),
        np.asarray(pp),
        np.asarray(ep),
        np.asarray(adp),
        np.asarray(cp),
        np.asarray(ctx_ref),
        spec_tokens,
    )
    usable_f, kv_seq_f = float(np.reshape(usable, -1)[0]), float(np.reshape(kv_seq, -1)[0])
    plan = (np.asarray(tp), np.asarray(pp), np.asarray(adp))
    no_kv = memory_reason(hw, eng, w_bytes, usable, kv_seq, plan, spec_tokens > 0)
    no_kv = str(np.reshape(no_kv, -1)[0])  # (a mean request's KV: shorter ones may still run)
    if usable_f <= 0 or no_kv in (WEIGHTS_EXCEED_MEMORY, WORKSPACE_EXCEEDS_MEMORY):
        return no_kv
    ranks = int(scheduling_ranks(np.asarray(tp), np.asarray(adp)))
    kv_tokens = usable_f / max(kv_seq_f / ctx_ref, 1e-30) * ranks
    max_running = int(min(eng.max_batch_size * ranks, MAX_CONCURRENCY))
    rank_tokens = float(rank_token_budget(eng, ranks))  # (a rank's; SGLang's server share)
    budget = rank_tokens * ranks * int(pp)
    waits = holds_context(eng, False) and not bool(adp)
    balances = bool(adp) and ranks > 1 and holds_context(eng, True)
    longest = float(np.max(reqs.isl + reqs.osl))
    # a sequence's own KV: its prompt less a shared (cached) prefix
    unique = float(np.min(np.maximum(reqs.isl - reqs.prefix_len, 1)))
    rows = min(max_running, replica_requests, max(kv_tokens / unique, 1.0))
    table = step_table(
        model,
        prec,
        hw,
        eng,
        {"tp": int(tp), "pp": int(pp), "ep": int(ep), "cp": int(cp), "attention_dp": bool(adp)},
        max_rows=max(rows, 1.0),
        max_prompt=budget,
        max_context=longest,
        spec_tokens=spec_tokens,
    )
    return Engine(
        table=table,
        max_running=max_running,
        kv_tokens=kv_tokens,
        budget=budget,
        chunk_cap=rank_tokens,
        full_admission=eng.kv_admission == "full",
        overhead_s=eng.request_overhead_s,
        tokens_per_step=tokens_per_step(spec_tokens, spec_acceptance),
        query=1.0 + spec_tokens,
        hold_iters=eng.batch_wait_timeout_iters if waits else 0,
        hold_tokens=eng.batch_wait_max_tokens_ratio * budget if waits else 0.0,
        ranks=ranks,
        balance_timeout=eng.adp_balance_timeout_iters if balances else 0,
        balance_wait=eng.adp_balance_wait_iters if balances else 0,
        balance_kind=eng.adp_balance_kind,
    )


def tuned_batch_limit(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    axes: dict[str, Any],
    reqs: Requests,
    clients: int,
    spec_tokens: int,
    spec_acceptance: float,
) -> int:
    """The running batch a closed loop of ``clients`` keeps where ``serving.evaluate``'s tuned
    admission (``serving.admission``) caps it below what memory and the engine allow, at the
    requests' mean lengths (else ``clients``): the simulator runs the engine the analytic
    model describes."""
    kw = dict(
        **axes,
        isl=float(np.mean(reqs.isl)),
        osl=float(np.mean(reqs.osl)),
        concurrency=clients,
        spec_tokens=spec_tokens,
        spec_acceptance=spec_acceptance,
    )
    # the loop at the memory and engine caps, and the one a tuned engine runs (evaluate's own
    # admission)
    opts = {k: kw.pop(k) for k in ("spec_tokens", "spec_acceptance")}
    plain, tuned = admitted(_evaluate_running, (model, hw, prec, eng), kw, opts)
    run_t, run_p = float(tuned.running_concurrency), float(plain.running_concurrency)
    if not (bool(tuned.feasible) and run_t < run_p):
        return clients
    return max(int(run_t), 1)
