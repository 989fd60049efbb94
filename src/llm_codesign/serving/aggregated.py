"""Aggregated serving: in-flight-batched serving metrics (TTFT, TPOT,
tokens/s/user, tokens/s/GPU) with a breakdown by op class, vectorized over every axis.

Closed loop with concurrency C per replica (DESIGN.md). In steady state a request spends TTFT
waiting for and running its prefill, then OSL - 1 decode steps. Little's law gives the request
rate X = C / (TTFT + (OSL - 1) TPOT); each engine step decodes the C_d = X (OSL - 1) TPOT
requests in their decode phase and prefills the other clients' prompts (chunked prefill mixed
into the decode step), at most the engine's prompt capacity. TPOT is that mixed step's time.
The steady state is the root of one falling function of C_d (``_steady_state``), solved to a
tolerance with a bounded iteration count (vectorized, iterating only the unconverged subset);
points that do not converge are flagged ``not_converged`` and are infeasible.

The step is :func:`serving.step.pipelined_step`; memory and the concurrency cap
:mod:`serving.memory`; the batch a tuned engine keeps :mod:`serving.admission`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError
from ..ops import OP_CLASSES, step_shape
from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import NO_SCALEOUT_NETWORK, crosses_domain_without_network, plan_feasibility
from ..specs.precision import Precision
from .admission import admitted
from .balance import context_hold_wait
from .groups import compact, concurrency_groups, group_members
from .memory import (
    concurrency_cap,
    kv_context,
    memory_fit,
    memory_reason,
    rank_token_budget,
    running_kv_bytes,
    scheduling_ranks,
)
from .step import (
    PROMPT_BUDGET_FLOOR,
    draft_time,
    lone_prompt_passes,
    pipelined_step,
    speculating_engine,
    step_cost,
    tokens_per_step,
)

Array = np.ndarray

# the steady state's root: at most this many iterations, converged when the residual (relative
# error of the request rate) or the bracket (relative width) is below the tolerance; points
# whose residual stays above NOT_CONVERGED_RESIDUAL are flagged not_converged (infeasible)
FIXED_POINT_ITERATIONS = 60
FIXED_POINT_TOLERANCE = 1e-4
NOT_CONVERGED_RESIDUAL = 1e-3


@dataclass
class GridResult:
    """Arrays of serving metrics over a broadcast grid of configurations."""

    ttft_s: Array
    tpot_s: Array
    output_tok_s_per_gpu: Array
    total_tok_s_per_gpu: Array
    tok_s_per_user: Array
    memory_per_gpu_bytes: Array
    weight_bytes_per_gpu: Array
    kv_bytes_per_gpu: Array
    max_concurrency: Array
    running_concurrency: Array
    fits_in_memory: Array
    feasible: Array
    reason: Array
    decode_breakdown: dict[str, Array]
    prefill_breakdown: dict[str, Array]
    mixed_breakdown: dict[str, Array]
    num_gpus: Array
    # the converged steady-state step mix per replica: sequences decoding and prompt tokens
    # prefilled per step (``serving.step.pipelined_step`` of these is TPOT x tokens per step)
    step_decode_seqs: Array
    step_prefill_tokens: Array


def evaluate(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    *,
    tp: Array | int = 1,
    pp: Array | int = 1,
    ep: Array | int = 1,
    dp: Array | int = 1,
    attention_dp: Array | bool = False,
    cp: Array | int = 1,
    isl: Array | int,
    osl: Array | int,
    concurrency: Array | int,
    spec_tokens: int = 0,
    spec_acceptance: float = 0.0,
    benchmark_burst: bool = False,
) -> GridResult:
    """Serving metrics for every configuration of the broadcast inputs (one or a million).

    Speculative decoding / MTP: ``spec_tokens`` drafts per step, each accepted with probability
    ``spec_acceptance``: a step verifies 1 + k query tokens per sequence (one KV read), yields
    (1 - a^(k+1)) / (1 - a) tokens; a draft costs one layer-equivalent decode (an MTP block),
    plus a step's host work where the engine runs it as a pass of its own (``step.draft_time``).

    ``benchmark_burst``: report what a closed-loop benchmark with fixed lengths measures when
    its clients all start at once: a share ``ttft_burst`` of the run moves in synchronized
    cohorts (the C prompts prefilled as one wave, then decoded together with no prompt mixed
    in, finishing together), the rest in the staggered steady state. A cohort request waits
    half the wave for its first token and stalls the other half inside its decode; TPOT, TTFT
    and throughput blend the two. Used when comparing with such measurements; without it
    (estimate, frontier) every number is the steady state of real, staggered traffic.

    Admission (``serving.admission``): the batch limit of a tuned engine; for a deployment (not
    ``benchmark_burst``: limits as the benchmark set them) the best round limit below C too.
    """
    eng = speculating_engine(for_gpu(eng, hw), spec_tokens)  # (the runtime's limits on hw)
    kw = dict(
        tp=tp,
        pp=pp,
        ep=ep,
        dp=dp,
        attention_dp=attention_dp,
        cp=cp,
        isl=isl,
        osl=osl,
        concurrency=concurrency,
    )
    opts = dict(
        spec_tokens=spec_tokens, spec_acceptance=spec_acceptance, benchmark_burst=benchmark_burst
    )
    return admitted(_evaluate_running, (model, hw, prec, eng), kw, opts, not benchmark_burst)[1]


def _evaluate_running(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    *,
    tp: Array | int = 1,
    pp: Array | int = 1,
    ep: Array | int = 1,
    dp: Array | int = 1,
    attention_dp: Array | bool = False,
    cp: Array | int = 1,
    isl: Array | int,
    osl: Array | int,
    concurrency: Array | int,
    spec_tokens: int = 0,
    spec_acceptance: float = 0.0,
    benchmark_burst: bool = False,
    batch_limit: Array | None = None,
) -> GridResult:
    """The closed loop with the running batch at most ``batch_limit`` (per configuration;
    None: the memory and engine caps only)."""
    eng = for_gpu(eng, hw)  # (the runtime's limits on hw, for a caller of this loop alone)
    yield_per_step = tokens_per_step(spec_tokens, spec_acceptance)  # checks them
    k_spec = spec_tokens
    # hardware support for the precision is a property of the (hw, precision) pair: raise once
    hw.compute_rate_class(prec.compute_class)
    tp, pp, ep, dp, cp = (np.asarray(x, dtype=np.int64) for x in (tp, pp, ep, dp, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    isl_f = np.asarray(isl, dtype=float)
    osl_f = np.asarray(osl, dtype=float)
    conc = np.asarray(concurrency, dtype=float)
    shape = np.broadcast(tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc).shape
    # configurations that differ only in their concurrency share a group id (a few steps that
    # do not depend on C are priced once per group)
    group = concurrency_groups([tp, pp, ep, dp, cp, adp, isl_f, osl_f], shape)
    tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc = (
        np.broadcast_to(x, shape) for x in (tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc)
    )
    if np.any(conc < 1) or np.any(isl_f < 1) or np.any(osl_f < 1):
        raise SpecError("workload: isl, osl and concurrency must all be >= 1")

    memo: dict = {}  # per-call reuse of GEMM ceilings (pure: same inputs, same values)
    reason = plan_feasibility(model, tp, pp, ep, adp, cp, eng.moe_partial_ep)
    tp, ep, cp, pp = (np.where(reason == "", v, 1) for v in (tp, ep, cp, pp))
    gpus_per_replica = tp * pp
    axes: dict[str, Any] = {"tp": tp, "pp": pp, "ep": ep, "cp": cp, "attention_dp": adp}
    # the steps see a plan axis that is the same everywhere as one value: what depends on the
    # plan alone is then computed once, not once per configuration
    step_axes = {k: compact(v) for k, v in axes.items()}

    # ---- memory: clients beyond what the engine holds (KV or max_batch_size) queue ----
    w_bytes, kv_seq, workspace, usable, max_conc = memory_fit(
        model, hw, prec, eng, tp, pp, ep, adp, cp, kv_context(eng, isl_f, osl_f), k_spec
    )
    client_conc = conc
    conc = np.maximum(np.minimum(conc, concurrency_cap(eng, max_conc, tp, adp)), 1.0)
    if batch_limit is not None:
        conc = np.maximum(np.minimum(conc, batch_limit), 1.0)
    kv_total = running_kv_bytes(kv_seq, conc, tp, adp)
    mem = w_bytes + kv_total + workspace
    fits = (usable > 0) & (client_conc <= max_conc)
    no_kv = memory_reason(hw, eng, w_bytes, usable, kv_seq, (tp, pp, adp), k_spec > 0)
    reason = np.where(reason == "", no_kv, reason)  # (the weights, the profiled step, the KV)
    no_net = crosses_domain_without_network(hw, tp)
    reason = np.where((reason == "") & no_net, NO_SCALEOUT_NETWORK, reason)

    micro = pp.astype(float)

    def step(dec: Array, pre: Array, query: float = 1.0 + k_spec):
        return pipelined_step(
            model,
            prec,
            hw,
            eng,
            **step_axes,
            isl=isl_f,
            osl=osl_f,
            decode_seqs=dec,
            prefill_tokens=pre,
            decode_query=query,
            memo=memo,
        )

    # isolated prefill of one request (chunks of max_num_tokens through the pp stages, streamed
    # where the engine overlaps them, ``pp_prefill_overlap``, else one after the other): TTFT at
    # low load; under attention-DP the request's rank carries its whole chunk (its rank's token
    # budget: ``rank_token_budget``)
    rank_tokens = rank_token_budget(eng, scheduling_ranks(tp, adp))
    chunk = np.minimum(isl_f, rank_tokens)
    n_chunks = np.ceil(isl_f / chunk)
    flat = {
        k: v if v.ndim == 0 else np.broadcast_to(v, shape).ravel() for k, v in step_axes.items()
    }

    def axes_at(sel: Array) -> dict[str, Array]:
        """The plan axes of the flat positions ``sel`` (one value stays one value)."""
        return {k: v if v.ndim == 0 else v[sel] for k, v in flat.items()}

    isl_r, osl_r = isl_f.ravel(), osl_f.ravel()
    # (priced once per group: one member each, spread back over the grid)
    reps, back = group_members(group, np.arange(group.size))
    isl_p = isl_r[reps]
    chunk_p = np.minimum(isl_p, np.broadcast_to(rank_tokens, shape).ravel()[reps])
    pre_shape = step_shape(
        **axes_at(reps), isl=isl_p, osl=osl_r[reps], prefill_tokens=chunk_p,
        prefill_seqs=1.0 / np.ceil(isl_p / chunk_p), micro_batches=1.0,
        rank_prefill_tokens=chunk_p,
    )  # fmt: skip
    pre_cost = step_cost(model, prec, hw, eng, pre_shape, memo=memo)

    def spread(v: Array) -> Array:
        return np.broadcast_to(v, reps.shape)[back].reshape(shape)

    pre_by = {k: spread(v) for k, v in pre_cost.by_class.items()}
    prefill_alone = lone_prompt_passes(eng, n_chunks, pp) * spread(pre_cost.total_s)
    # the mixed step: the root over the decode population (``_steady_state``), iterating only
    # on the configurations not yet converged (flat index subsets)
    pp_r = np.broadcast_to(pp, shape).ravel().astype(float)

    def step_at(idx: Array, dec: Array, pre: Array, query: float = 1.0 + k_spec) -> Any:
        """The step (``PipelinedStep``) of the configurations ``idx`` (flat indices)."""
        return pipelined_step(
            model,
            prec,
            hw,
            eng,
            **axes_at(idx),
            isl=isl_r[idx],
            osl=osl_r[idx],
            decode_seqs=dec,
            prefill_tokens=pre,
            decode_query=query,
            memo=memo,
        )

    def drafts_at(idx: Array, dec: Array) -> Array:
        """k draft tokens, each one layer-equivalent of a plain decode step (no fixed overheads),
        for the configurations ``idx``."""
        if k_spec == 0:
            return np.zeros(len(idx))
        one = step_at(idx, dec, np.zeros(len(idx)), 1.0).total_s
        ax = axes_at(idx)  # micro-batches = pp here
        return draft_time(model, eng, one, pp_r[idx], k_spec, dec, ax["tp"], ax["attention_dp"])

    def drafts_over_grid(dec: Array) -> Array:
        """``drafts_at`` over the whole grid."""
        flat_dec = np.broadcast_to(dec, shape).ravel()
        return drafts_at(np.arange(flat_dec.size), flat_dec).reshape(shape)

    rate, tpot, c_dec, pre_tokens, ttft_need, residual, mix_by, drafts = _steady_state(
        step_at,
        drafts_at,
        eng,
        *(np.broadcast_to(x, shape).ravel() for x in (conc, isl_f, osl_f, pp, micro)),
        np.broadcast_to(scheduling_ranks(tp, adp), shape).ravel().astype(float),
        np.broadcast_to(prefill_alone, shape).ravel(),
        yield_per_step,
        group,
        1.0 + k_spec,
    )
    rate, tpot, c_dec, pre_tokens, ttft_need, residual, drafts = (
        x.reshape(shape) for x in (rate, tpot, c_dec, pre_tokens, ttft_need, residual, drafts)
    )
    # the converged mix as the loop priced it last (its breakdown is the estimate's mixed step;
    # TPOT = (that step + drafts) / tokens per step)
    mix_by = {k: v.reshape(shape) for k, v in mix_by.items()}
    # TTFT from Little's law (never below what a request needs: ill-conditioned at long OSL)
    ttft = np.maximum(conc / rate - np.maximum(osl_f - 1.0, 0.0) * tpot, ttft_need)
    burst = np.zeros(shape)
    decode_alone = step(conc, np.zeros(shape), 1.0)  # every running sequence, no prompt
    if benchmark_burst:
        # a share `ttft_burst` of the run in synchronized cohorts (docstring): the wave's mean
        # wait before the first token; the rest stalls the decode, whose steps carry no prompt
        share = eng.ttft_burst
        wave = startup_wave(model, prec, hw, eng, step_axes, isl_f, osl_f, conc, memo)
        full = decode_alone if k_spec == 0 else step(conc, np.zeros(shape))
        plain = (full.total_s + drafts_over_grid(conc)) / yield_per_step
        cohort_tpot = plain + 0.5 * wave / np.maximum(osl_f - 1.0, 1.0)
        tpot = (1.0 - share) * tpot + share * cohort_tpot
        burst = share * 0.5 * wave
    rate = conc / (ttft + burst + eng.request_overhead_s + np.maximum(osl_f - 1.0, 0.0) * tpot)
    # queued clients: each waits (client_conc - run) / rate before admission
    queue_wait = np.maximum(client_conc - conc, 0.0) / np.maximum(rate, 1e-30)
    ttft = ttft + burst + queue_wait + eng.request_overhead_s
    out_per_gpu = rate * osl_f / gpus_per_replica
    total_per_gpu = rate * (isl_f + osl_f) / gpus_per_replica

    dec_break = decode_alone.by_class
    # mixed_step: time per generated token of the steady-state step (= TPOT)
    mixed_break = dict(mix_by)
    mixed_break["other"] = mixed_break["other"] + drafts
    mixed_break = {k: v / yield_per_step for k, v in mixed_break.items()}
    feasible = reason == ""
    finite = np.isfinite(tpot) & np.isfinite(ttft)
    reason = np.where(feasible & ~finite, "numeric", reason)
    reason = np.where((reason == "") & (residual > NOT_CONVERGED_RESIDUAL), "not_converged", reason)
    feasible = reason == ""
    return GridResult(
        ttft_s=ttft,
        tpot_s=tpot,
        output_tok_s_per_gpu=out_per_gpu,
        total_tok_s_per_gpu=total_per_gpu,
        tok_s_per_user=1.0 / tpot,
        memory_per_gpu_bytes=mem,
        weight_bytes_per_gpu=w_bytes,
        kv_bytes_per_gpu=kv_total,
        max_concurrency=max_conc,
        running_concurrency=conc,
        fits_in_memory=fits,
        feasible=feasible,
        reason=reason,
        decode_breakdown=dec_break,
        prefill_breakdown={k: v * (n_chunks + pp - 1.0) for k, v in pre_by.items()},
        mixed_breakdown=mixed_break,
        num_gpus=gpus_per_replica * dp,
        step_decode_seqs=np.broadcast_to(c_dec, shape),
        step_prefill_tokens=np.broadcast_to(pre_tokens, shape),
    )


def _steady_state(
    step_at, drafts_at, eng, conc, isl, osl, pp, micro, ranks, prefill_alone, tps, group, query
):
    """The closed loop's steady state at concurrency C over flat arrays (DESIGN.md's closed
    loop): the request rate X, TPOT, the step's decode/prompt mix, the TTFT a request needs
    and the residual (relative error of X).

    The unknown is d, the sequences decoding per step (time-averaged over the C clients):

    * Little's law on the decode phase gives X = d k / ((OSL - 1) T), with T the step (plus
      drafts) and k tokens per step; the prompt tokens a step takes are then the other
      clients' prompts, p = X ISL T (C - 1)/C = d k ISL (C - 1) / (C (OSL - 1)), a closed form
      in d (no inner iteration), at most the step's budget B (``max_num_tokens`` per
      micro-batch and attention-DP rank, less its decode tokens);
    * a request's TTFT is the larger of a lone prompt's prefill and half a step's wait plus its
      chunks at the step's prefill load, in steps (a speculative step's extra tokens do not
      shorten the wait for the step that carries a prompt), plus the wait for its round where the
      scheduler holds prompts back (``serving.balance.context_hold_wait``: the attention-DP
      context balance, batch waiting). A chunk rides a mean step, except there: the round's step
      carries it, every held prompt at once (``PipelinedStep.prompt_step_s``, priced by
      ``chunked_prefill``'s rounds), which is far longer than a mean step;
    * Little's law on the whole loop gives TTFT = C/X - (OSL - 1) T / k = (C - d)(OSL - 1) T
      / (d k). g(d) = that - TTFT needed falls from +inf (d -> 0) to -TTFT (d = C): the root is
      unique, found by Illinois regula falsi on a bracket (started from d's image under the
      loop, which from above the root stays above it or brackets it).
    * prefill-bound: where p reaches B at d* < C and g(d*) >= 0, d = d* and the prompts queue
      (TTFT holds the wait);
    * OSL = 1: no decode, p = min(C ISL, B), X = p / (ISL T): closed form.

    Only configurations not yet converged (bracket or |g| / (TTFT + (OSL - 1) TPOT) below
    ``FIXED_POINT_TOLERANCE``) are iterated, at most ``FIXED_POINT_ITERATIONS`` times; the
    residual flags the rest (``not_converged``)."""
    n = conc.size
    osl1 = np.maximum(osl - 1.0, 0.0)
    others = (conc - 1.0) / conc
    sched = micro * ranks  # schedulers, each with its own token budget (a micro-batch each)
    tokens = rank_token_budget(eng, ranks)  # a scheduler's (``max_num_tokens``, or its share)
    full_budget = sched * tokens
    # prompt tokens per decoding sequence: p = d * kappa (0 where C = 1 or OSL = 1)
    kappa = np.where(osl1 > 0, tps * isl * others / np.maximum(osl1, 1.0), 0.0)
    # d*: where p meets the budget B(d) = S * max(M - d/S, floor M), S schedulers
    floor = PROMPT_BUDGET_FLOOR
    d_meet = full_budget / (kappa + 1.0)
    d_star = np.where(
        d_meet <= (1.0 - floor) * full_budget,
        d_meet,
        floor * full_budget / np.maximum(kappa, 1e-30),
    )
    d_hi0 = np.where(osl1 > 0, np.minimum(conc, d_star), 0.0)

    rate, tpot, c_dec, pre_tokens = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    # the settled step's time by op class and its drafts' time (the converged mix's breakdown)
    mix_by = {k: np.zeros(n) for k in OP_CLASSES}
    drafts = np.zeros(n)
    ttft_need, residual = np.zeros(n), np.zeros(n)

    def loop_at(act: Array, d: Array):
        """T, p, the decoding rows priced, the TTFT needed and g at decode population d."""
        dd = np.where(osl1[act] > 0, np.maximum(d, np.minimum(1.0, conc[act])), 0.0)
        mm, ss, tt = micro[act], sched[act], tokens[act]
        budget = ss * np.maximum(tt - dd / ss, PROMPT_BUDGET_FLOOR * tt)
        p = np.where(
            osl1[act] > 0,
            np.minimum(d * kappa[act], budget),
            np.minimum(conc[act] * isl[act], budget),
        )
        priced = step_at(act, dd, p)
        drafted = drafts_at(act, dd)
        t = priced.total_s + drafted
        # the engine's prompt capacity with these decode rows: every step full of prompt,
        # B / (ISL T_full), T_full affine in the decode rows between its two priced ends
        span = np.maximum(full_hi[act] - full_lo[act], 1e-12)
        w = np.clip((dd - full_lo[act]) / span, 0.0, 1.0)
        t_full = t_full_lo[act] + w * (t_full_hi[act] - t_full_lo[act])
        x_cap[act] = budget / np.maximum(isl[act] * t_full, 1e-300)
        load = np.clip(p / np.maximum(others[act] * budget, 1e-30), 0.0, 0.9)
        chunk_steps = np.ceil(isl[act] / (budget / ss))
        # the step carrying the request's prompt: a mean step, except where the scheduler holds
        # prompts back (attention-DP balance, batch waiting): its round prefills them together
        window, balance_wait = context_hold_wait(
            eng, ranks[act], isl[act], p, dd, mm, t, dd * query
        )
        t_prompt = np.where(window > 0, priced.prompt_step_s + drafted, t)
        wait = 0.5 * t + chunk_steps * t_prompt / (1.0 - load) + (pp[act] - 1.0) * t
        need = wait / np.maximum(mm, 1.0) + balance_wait
        # OSL = 1: the prompts' queue is inside C / X; a request needs its own prefill
        need = np.where(osl1[act] > 0, np.maximum(need, prefill_alone[act]), prefill_alone[act])
        with np.errstate(divide="ignore", invalid="ignore"):
            dec_time = osl1[act] * t / tps
            little = (conc[act] - d) * dec_time / np.maximum(d, 1e-300)
            # both relative and falling in d: Little's TTFT against the TTFT needed, and the
            # request rate against the engine's prompt capacity
            g = np.minimum(
                (little - need) / (need + dec_time),
                1.0 - d / np.maximum(dec_time * x_cap[act], 1e-300),
            )
        return t, p, dd, need, g, (priced.by_class, drafted)

    def settle(act: Array, d: Array, t, p, dd, need, res, parts):
        """Record the loop at d for the configurations ``act`` (``parts``: the priced step's
        time by op class and the drafts' time, the converged mix's breakdown)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(
                osl1[act] > 0,
                d * tps / np.maximum(osl1[act] * t, 1e-300),
                p / np.maximum(isl[act] * t, 1e-300),
            )
        rate[act], tpot[act], c_dec[act], pre_tokens[act] = x, t / tps, dd, p
        ttft_need[act], residual[act] = need, res
        by_class, drafted = parts
        for k, v in by_class.items():
            mix_by[k][act] = v
        drafts[act] = drafted

    def image_of(act: Array, dec_time: Array, need: Array) -> Array:
        """d's image under the loop: the smaller of Little's C (OSL-1)T/k / (TTFT + (OSL-1)T/k)
        and the capacity's X_cap (OSL-1)T/k; below d exactly where g(d) < 0."""
        return np.minimum(conc[act] * dec_time / (need + dec_time), dec_time * x_cap[act])

    idx_all = np.arange(n)
    # a step full of prompt (T_full) priced at the fewest and the most decoding rows the range
    # allows; ``loop_at`` interpolates between them (the capacity depends on d, not on C)
    x_cap = np.full(n, np.inf)
    full_lo, full_hi, t_full_lo, t_full_hi = (np.zeros(n) for _ in range(4))

    def full_prompt_step(at: Array, rows: Array) -> Array:
        """Seconds of a step of ``rows`` decoding rows and a full prompt budget (plus drafts)."""
        ss, tt = sched[at], tokens[at]
        budget = ss * np.maximum(tt - rows / ss, PROMPT_BUDGET_FLOOR * tt)
        return step_at(at, rows, budget).total_s + drafts_at(at, rows)

    dec_idx = idx_all[osl1 > 0]
    if dec_idx.size:
        # one row at the low end (C >= 1): the same in a group, priced once per group
        full_lo[dec_idx] = 1.0
        reps, back = group_members(group, dec_idx)
        t_full_lo[dec_idx] = full_prompt_step(dec_idx[reps], np.ones(reps.size))[back]
        full_hi[dec_idx] = hi_rows = np.maximum(d_hi0[dec_idx], 1.0)
        t_full_hi[dec_idx] = full_prompt_step(dec_idx, hi_rows)
    # OSL = 1: closed form (no decode phase)
    one = idx_all[osl1 <= 0]
    if one.size:
        t, p, dd, need, _, parts = loop_at(one, np.zeros(one.size))
        settle(one, np.zeros(one.size), t, p, dd, need, np.zeros(one.size), parts)
    act = idx_all[osl1 > 0]
    if act.size:
        # the top of the range: prefill-bound corners settle at once
        d = d_hi0[act]
        t, p, dd, need, g, parts = loop_at(act, d)
        settle(act, d, t, p, dd, need, np.zeros(act.size), parts)
        corner = g >= 0
        act, d, t, need, g = act[~corner], d[~corner], t[~corner], need[~corner], g[~corner]
        lo, g_lo = np.zeros(n), np.full(n, np.inf)
        hi, g_hi = np.zeros(n), np.zeros(n)
        hi[act], g_hi[act] = d, g
        side = np.zeros(n)  # +1: lo moved last, -1: hi moved last
        width = np.full(n, np.inf)  # log bracket width before the last step
        down = np.ones(n)  # unbracketed steps so far: the overshoot doubles with each
        # first guess: d's image under the loop, C (OSL-1)T/k / (TTFT + (OSL-1)T/k)
        d = image_of(act, osl1[act] * t / tps, need)
        for _ in range(FIXED_POINT_ITERATIONS):
            t, p, dd, need, g, parts = loop_at(act, d)
            dec_time = osl1[act] * t / tps
            a, b = lo[act], hi[act]
            ga, gb, sd = g_lo[act], g_hi[act], side[act]
            pinned = np.where(a > 0, b / np.maximum(a, 1e-300) - 1.0, np.inf)
            res = np.minimum(np.abs(g), pinned)
            settle(act, d, t, p, dd, need, res, parts)
            up = g >= 0  # d below the root
            gb = np.where(up & (sd > 0), 0.5 * gb, gb)
            ga = np.where(~up & (sd < 0) & np.isfinite(ga), 0.5 * ga, ga)
            a, ga = np.where(up, d, a), np.where(up, g, ga)
            b, gb = np.where(up, b, d), np.where(up, gb, g)
            bracketed = a > 0
            with np.errstate(invalid="ignore", divide="ignore"):
                secant = (a * gb - b * ga) / np.where(bracketed, gb - ga, 1.0)
            # safeguard: a bracket that did not halve (log width) since the last step bisects
            log_w = np.where(bracketed, np.log(b / np.maximum(a, 1e-300)), np.inf)
            ok = bracketed & (secant > a) & (secant < b) & (log_w <= 0.5 * width[act])
            width[act] = np.where(ok | ~bracketed, log_w, np.inf)
            # no lower end yet: past d's image (below d when g < 0) by 2, 4, 8 ... times the
            # gap, to bracket soon; the bracket's fallback is its geometric midpoint
            image = image_of(act, dec_time, need)
            mid = np.sqrt(np.maximum(a, 1e-300) * b)
            overshoot = np.maximum(d - down[act] * 2.0 * (d - image), 0.5 * image)
            down[act] = np.where(bracketed, down[act], 2.0 * down[act])
            new_d = np.where(ok, secant, np.where(bracketed, mid, overshoot))
            lo[act], g_lo[act], hi[act], g_hi[act] = a, ga, b, gb
            side[act] = np.where(up, 1.0, -1.0)
            keep = res >= FIXED_POINT_TOLERANCE
            act, d = act[keep], new_d[keep]
            if not act.size:
                break
    return rate, tpot, c_dec, pre_tokens, ttft_need, residual, mix_by, drafts


def startup_wave(
    model: ModelSpec,
    prec: Precision,
    hw: HardwareSpec,
    eng: EngineConstants,
    axes: dict[str, Any],
    isl: Array,
    osl: Array,
    conc: Array,
    memo: dict | None = None,
) -> Array:
    """Seconds to prefill the C prompts of a closed-loop benchmark's start-up wave (all clients
    start at once): full steps of each scheduling rank's token budget (``rank_token_budget``: each
    attention-DP rank fills its own; the MoE sees them all), streaming through the pp stages."""
    ranks = scheduling_ranks(axes["tp"], axes["attention_dp"]).astype(float)
    tokens = conc * isl
    per_step = np.minimum(tokens, ranks * rank_token_budget(eng, ranks))
    steps = np.ceil(tokens / per_step - 1e-9)
    shape = step_shape(
        **axes,
        isl=isl,
        osl=osl,
        prefill_tokens=per_step,
        prefill_seqs=per_step / isl,
        micro_batches=1.0,
    )
    cost = step_cost(model, prec, hw, eng, shape, memo=memo).total_s
    return (steps + axes["pp"] - 1.0) * cost
