"""One engine step: the time of one pipeline stage's step (op times x layers + kernel and host
overheads), the pipelined step of a replica (pp micro-batches + activation hops), and what
bounds it. Every command that talks about "the step" (estimate, frontier, lint, regimes)
prices it here, on a shape built by :func:`llm_codesign.ops.step_shape`.

Pipeline parallelism splits a replica's tokens into pp micro-batches, each stage holding
L / pp layers: step = pp x stage time + (pp - 1) activation transfers.

Chunked prefill is discrete (Sarathi-Serve): a step carries either no prompt tokens or a chunk
of up to ``max_num_tokens`` (:func:`chunked_prefill`; past one prompt per step, k or k + 1
whole prompts), so the mean step is a mixture of two steps, not a fluid share of prefill
spread over every step.
Under attention-DP the chunk lands on one rank while the others wait at the MoE collectives.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..comm import collective_time
from ..cost import op_time
from ..errors import SpecError
from ..ops import OP_CLASSES, Op, StepShape, draft_layers, step_ops, step_shape
from ..routing import normal_max_mean
from ..specs.cuda_graphs import graph_batch, graph_sizes
from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision
from .balance import adp_balance_window, batch_wait_window, prompt_rate
from .memory import rank_token_budget, scheduling_ranks

Array = np.ndarray

# What bounds a step: the time of compute-bound ops, memory-bound ops, collectives, or fixed
# kernel/host overheads, whichever is largest (``bound_split``).
# A step's prompt budget is max_num_tokens less its decode tokens, and never below this share
# of max_num_tokens: the model keeps prefill progressing when decode rows fill the budget (a
# modelling floor, not a measured figure: without one a decode-saturated loop has no steady
# state). The one home of that floor: chunked prefill here, the closed loop in
# ``serving.aggregated``, the request simulator in ``serving.simulate``.
PROMPT_BUDGET_FLOOR = 0.1
RESOURCES = ("compute", "memory", "network", "overhead")
REGIONS = tuple(f"{r}-bound" for r in ("compute", "memory", "communication", "overhead"))


@dataclass
class StepCost:
    """Time of one step per op class (seconds, arrays) and per-op detail."""

    total_s: Array
    by_class: dict[str, Array]
    ops: list[tuple[Op, Array, Any]] = field(default_factory=list)


def step_cost(
    model: ModelSpec,
    prec: Precision,
    hw: HardwareSpec,
    eng: EngineConstants,
    s: StepShape,
    detail: bool = False,
    memo: dict | None = None,
) -> StepCost:
    """Time of one pipeline stage's step: sum of op times x layers + kernel and step overheads;
    a decode-only step runs the engine's next captured CUDA graph (:func:`graph_padded`)."""
    s = graph_padded(s, hw, eng)
    ops = step_ops(model, prec, s)
    shape = np.broadcast(
        s.decode_seqs,
        s.prefill_tokens,
        s.tp,
        s.pp,
        s.ep,
        s.cp,
        s.attention_dp,
        s.decode_ctx,
        s.prefill_ctx,
    ).shape
    by_class = {c: np.zeros(shape) for c in OP_CLASSES}
    kernels = np.zeros(shape)
    detail_rows = []
    for op in ops:
        t, bound = op_time(op, hw, eng, memo, bound=detail)
        t_total = t * op.layers
        by_class[op.op_class] = by_class[op.op_class] + t_total
        # the op's kernels where it runs (a time of 0 launches nothing)
        kernels = kernels + (np.asarray(t) > 0) * (op.kernels * np.asarray(op.layers, dtype=float))
        if detail:
            detail_rows.append((op, t_total, bound))
    seqs = (s.decode_seqs + s.prefill_seqs) / scheduling_ranks(s.tp, s.attention_dp)
    by_class["other"] = by_class["other"] + kernels * eng.kernel_overhead_s
    # host work (scheduling, sampling, per-request bookkeeping); an overlap scheduler hides a
    # share of it behind the GPU work of the step
    gpu = sum(by_class.values())
    host = eng.step_overhead_s / s.pp + eng.per_seq_overhead_s * seqs * s.host_seq_share
    hidden = host_overlap_share(model, eng) * np.minimum(gpu, host)
    by_class["other"] = by_class["other"] + host - hidden
    total = sum(by_class.values())
    return StepCost(total, by_class, detail_rows)


def graph_padded(s: StepShape, hw: HardwareSpec, eng: EngineConstants) -> StepShape:
    """``s`` with the dummy sequences of the CUDA graph the engine replays for it
    (``specs.cuda_graphs``): a step without prompt tokens whose scheduling ranks hold b
    sequences each runs at the engine's next captured batch, every attention-DP rank at the same
    size; a step with prompt tokens runs as it is. The dummy rows pass the dense kernels and the
    collectives, not the attention's context nor the routed experts (``ops.StepShape.pad_seqs``),
    and cost no host work."""
    if eng.cuda_graph_batches == "none":
        return s
    eng = for_gpu(eng, hw)
    ranks = scheduling_ranks(s.tp, s.attention_dp).astype(float)
    per_rank = np.asarray(s.decode_seqs, dtype=float) / ranks
    tp = np.broadcast_to(s.tp, np.broadcast(per_rank, s.tp).shape)
    padded = np.broadcast_to(per_rank, tp.shape).copy()
    for t in np.unique(tp):  # (SGLang's largest size depends on the TP size)
        at = tp == t
        padded[at] = graph_batch(graph_sizes(eng, hw, int(t)), padded[at])
    decode_only = np.asarray(s.prefill_tokens, dtype=float) <= 0.0
    return replace(s, pad_seqs=np.where(decode_only, (padded - per_rank) * ranks, 0.0))


def chunked_prefill(
    eng: EngineConstants,
    isl: Array | float,
    tp: Array | int,
    attention_dp: Array | bool,
    decode_tokens: Array | float,
    prefill_tokens: Array | float,
    micro_batches: Array | float = 1.0,
    decode_seqs: Array | float | None = None,
) -> tuple[Array, Array, Array, Array]:
    """Discrete chunked prefill of a replica admitting ``prefill_tokens`` prompt tokens per step
    on average: (share of steps that carry the chunk, the replica's prompt tokens in such a
    step, the busiest attention rank's prompt tokens in such a step summed over its
    micro-batches, the replica's prompt tokens in the other steps). The step carrying prompt
    tokens is to be priced split into the same ``micro_batches``.

    A scheduler (one per attention-DP rank, else one per replica) fills each of the step's
    ``micro_batches`` pipeline micro-batches as its own batch: it prefills a prompt in chunks
    of min(ISL, budget), budget = the rank's tokens (``max_num_tokens``, or the rank's share of
    the server's: ``serving.memory.rank_token_budget``) less the micro-batch's decode tokens (at
    least a tenth of it); several prompts share a step once the mean demand exceeds a chunk. A rank
    carries a chunk in a share f = demand / chunk of steps; under attention-DP with R ranks a
    step carries prompt tokens with probability 1 - (1 - f)^R, and then the busiest rank holds
    one chunk. Past one prompt per step, a lone scheduler (no attention-DP) takes whole
    prompts: k x ISL or (k + 1) x ISL tokens (at most the budget) in the shares that keep the
    mean, not a fraction of a prompt in every step. Token totals are conserved: share x tokens
    per prefill step + (1 - share) x the other steps' tokens = the mean demand.

    Under TensorRT-LLM's attention-DP context balance (``adp_balance_window`` W > 0, with
    ``decode_seqs`` decoding) the ranks prefill together once every W iterations in which any of
    the window's n = lambda W prompts arrived (probability 1 - exp(-n)): the busiest rank holds
    E[max of R Poisson counts] of the round's mean per rank (``poisson_max_mean``; at least one
    prompt, at most all of them), prefilled in steps of at most the budget, so a share
    (1 - exp(-n)) max(1, busiest / budget) / W of steps carries prompt tokens. SGLang's prefill
    delayer (``adp_balance_kind`` ``delayer``) starts its window at a first prompt: a round of
    1 + n prompts once every W + 1 / lambda iterations.

    Under TensorRT-LLM's batch waiting without attention-DP (``batch_wait_window``: a round holds
    its first prompt W iterations while m more join) a round of 1 + m prompts comes once every
    W + 1 / lambda iterations (the hold, then the wait for the next first prompt), prefilled in
    steps of at most the budget: a share max(1, (1 + m) ISL / budget) / (W + 1 / lambda) of steps
    carries prompt tokens, which keeps the mean demand.

    Example: 1024-token prompts at 128 tokens per step without attention-DP: a 1024-token
    chunk in one step of eight.
    """
    ranks = scheduling_ranks(np.asarray(tp), np.asarray(attention_dp, dtype=bool)).astype(float)
    micro = np.maximum(np.asarray(micro_batches, dtype=float), 1.0)
    pre = np.maximum(np.asarray(prefill_tokens, dtype=float), 0.0)
    demand = pre / (ranks * micro)
    cap = rank_token_budget(eng, ranks)
    budget = np.maximum(
        cap - np.asarray(decode_tokens, dtype=float) / (ranks * micro), PROMPT_BUDGET_FLOOR * cap
    )
    isl_a = np.asarray(isl, dtype=float)
    chunk = np.maximum(np.minimum(np.maximum(isl_a, demand), budget), demand)
    f = np.where(chunk > 0, demand / np.maximum(chunk, 1e-30), 0.0)
    share = 1.0 - np.power(1.0 - np.clip(f, 0.0, 1.0), ranks)
    rank = np.where(share > 0, chunk * micro, 0.0)
    seqs = np.asarray(decode_tokens if decode_seqs is None else decode_seqs, dtype=float)
    window = adp_balance_window(eng, ranks, isl_a, pre, seqs, micro)
    if np.any(window > 0):
        # balanced rounds, one every W iterations where any prompt arrived (probability
        # 1 - exp(-n), n = lambda W prompts): every rank prefills its prompts of the window
        # in the same steps, the busiest holding the mean of the most of R Poisson counts of
        # the round's mean per rank (at least one prompt, at most all of them), in steps of at
        # most the budget; the shares keep the mean demand
        lam = prompt_rate(pre, isl_a, micro)  # prompts per iteration
        n = lam * window
        some = -np.expm1(-n)
        # rounds of n / some prompts every W / some iterations; SGLang's delayer: an episode
        # from a first prompt, 1 + n prompts every W + 1 / lambda iterations
        per_round, period = n / np.maximum(some, 1e-30), window / np.maximum(some, 1e-30)
        if eng.adp_balance_kind == "delayer":
            per_round, period = 1.0 + n, window + 1.0 / np.maximum(lam, 1e-300)
        per_rank = per_round / ranks
        most = np.clip(poisson_max_mean(per_rank, ranks), 1.0, np.maximum(per_round, 1.0))
        held = most * isl_a
        rounds = np.maximum(held / budget, 1.0)
        b_on = (window > 0) & (demand > 0)
        b_share = np.minimum(rounds / np.maximum(period, 1e-30), 1.0)
        share = np.where(b_on, b_share, share)
        rank = np.where(b_on, np.minimum(held, budget) * micro, rank)
    hold, joined, _ = batch_wait_window(eng, ranks, isl_a, pre, decode_tokens, seqs, micro)
    w_on = (hold > 0) & (demand > 0)
    if np.any(w_on):
        # batch waiting's rounds: 1 + m prompts once every W + 1 / lambda iterations, in steps
        # of at most the budget (the docstring)
        lam = demand / np.maximum(isl_a, 1e-30)
        cycle = hold + 1.0 / np.maximum(lam, 1e-300)
        round_tokens = (1.0 + joined) * isl_a
        w_share = np.minimum(np.maximum(round_tokens / budget, 1.0) / cycle, 1.0)
        share = np.where(w_on, w_share, share)
        rank = np.where(w_on, np.minimum(round_tokens, budget) * micro, rank)
    total = np.where(share > 0, demand * ranks * micro / np.maximum(share, 1e-30), 0.0)
    # one scheduler taking more than a prompt per micro-batch, within its budget: whole
    # prompts, k or k + 1 of them (the last one chunked at the budget), in the shares that
    # keep the mean demand
    whole = (ranks == 1.0) & (demand > isl_a) & (demand <= budget) & ~w_on
    if not np.any(whole):
        return share, total, rank, np.zeros(np.shape(total))
    low = np.minimum(np.floor(demand / np.maximum(isl_a, 1e-30) + 1e-9) * isl_a, demand)
    high = np.minimum(low + isl_a, budget)
    w = np.where(high > low, (demand - low) / np.maximum(high - low, 1e-30), 0.0)
    w = np.clip(w, 0.0, 1.0)
    share = np.where(whole, w, share)
    total = np.where(whole, np.where(w > 0, high, low) * micro, total)
    return share, total, np.where(whole, total, rank), np.where(whole, low * micro, 0.0)


# above this mean the most of R Poisson counts is the normal approximation's (within 0.1%)
POISSON_EXACT_MAX_MEAN = 400.0


def poisson_max_mean(mean: Array | float, count: Array | float) -> Array:
    """E[max of ``count`` independent Poisson(``mean``) counts] = sum over k >= 0 of
    1 - F(k)^count (F the Poisson CDF), summed to 12 standard deviations above the largest
    mean; means above ``POISSON_EXACT_MAX_MEAN`` take mean + sqrt(mean) E[max of count standard
    normals] (``routing.normal_max_mean``). Example: two Poisson(1) counts, 1.524 (by hand: (1 -
    0.3679^2) + (1 - 0.7358^2) + (1 - 0.9197^2) + (1 - 0.9810^2) + ... = 0.8647 + 0.4587 +
    0.1542 + 0.0376 + ...)."""
    m, r = np.broadcast_arrays(
        np.maximum(np.asarray(mean, dtype=float), 0.0),
        np.maximum(np.asarray(count, dtype=float), 1.0),
    )
    exact = m <= POISSON_EXACT_MAX_MEAN
    out = np.zeros(r.shape)
    if np.any(exact):
        me, re = m[exact], r[exact]
        top = int(np.ceil(float(me.max()) + 12.0 * np.sqrt(float(me.max())) + 30.0))
        term = np.exp(-me)
        cdf = term.copy()
        acc = np.zeros(me.shape)
        for k in range(1, top + 1):
            acc += 1.0 - cdf**re
            term = term * me / k
            cdf = np.minimum(cdf + term, 1.0)
        out[exact] = acc
    if not np.all(exact):
        mb, rb = m[~exact], r[~exact]
        out[~exact] = mb + np.sqrt(mb) * normal_max_mean(rb)
    return out


def _mix(a: StepCost, b: StepCost, w: Array) -> StepCost:
    """The mean of two step costs of the same ops, ``b`` with weight ``w``."""
    by_class = {k: (1.0 - w) * a.by_class[k] + w * b.by_class[k] for k in a.by_class}
    ops = [
        (op, (1.0 - w) * np.asarray(ta) + w * np.asarray(tb), bound)
        for (op, ta, _), (_, tb, bound) in zip(a.ops, b.ops)
    ]
    return StepCost((1.0 - w) * a.total_s + w * b.total_s, by_class, ops)


def pipeline_hops(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    pp: Array,
    tokens: Array,
    micro_batches: Array | None = None,
) -> Array:
    """Time of the (pp - 1) activation transfers between pipeline stages for one token step of
    ``tokens`` tokens split into ``micro_batches`` micro-batches (default pp); a model with mHC
    passes its ``hyper_connections`` residual streams."""
    stages = np.asarray(pp, dtype=float)
    micro = stages if micro_batches is None else np.asarray(micro_batches, dtype=float)
    width = model.hidden_size * max(model.hyper_connections, 1)
    act = np.asarray(tokens, dtype=float) / micro * width * prec.comm_bytes
    return (stages - 1.0) * collective_time("p2p", act, np.where(stages > 1, 2, 1), hw, eng)


@dataclass
class PipelinedStep:
    """A replica's step through all pp stages (seconds, arrays): ``total_s`` = pp x stage +
    hops (each stage runs every micro-batch once per step, or each micro-batch crosses every
    stage when there are fewer micro-batches than stages: pp stage times either way);
    ``by_class`` sums to it (hops are communication); ``stage`` is one stage's cost (its op
    rows, with ``detail``, are one stage's share of one micro-batch); ``stages`` is the
    multiplier pp of the stage time; ``prompt_step_s`` is a step that carries prompt tokens
    (discrete chunks: ``chunked_prefill``; the mean step where none do) and ``prompt_share``
    the share of steps that carry them."""

    total_s: Array
    by_class: dict[str, Array]
    stage: StepCost
    stages: Array
    hops_s: Array
    prompt_step_s: Array | float = 0.0
    prompt_share: Array | float = 0.0


def pipelined_step(
    model: ModelSpec,
    prec: Precision,
    hw: HardwareSpec,
    eng: EngineConstants,
    *,
    tp: Array | int,
    pp: Array | int,
    ep: Array | int,
    cp: Array | int,
    attention_dp: Array | bool,
    isl: Array | float,
    osl: Array | float,
    decode_seqs: Array | float,
    prefill_tokens: Array | float = 0.0,
    decode_query: Array | float = 1.0,
    detail: bool = False,
    memo: dict | None = None,
) -> PipelinedStep:
    """The steady-state step of a replica decoding ``decode_seqs`` sequences (``decode_query``
    tokens each) with ``prefill_tokens`` prompt tokens mixed in: the mixed step of DESIGN.md
    (``prefill_tokens=0`` gives a pure decode step). TPOT is this step's time (divided by the
    tokens a speculative step yields, in :func:`serving.evaluate`)."""
    eng = for_gpu(eng, hw)  # (the runtime's limits on hw: specs.gpu_defaults)
    pp_a = np.asarray(pp, dtype=np.int64)
    stages = pp_a.astype(float)
    dec_tokens = np.asarray(decode_seqs, dtype=float) * decode_query
    pre = np.asarray(prefill_tokens, dtype=float)

    def priced(
        prefill: Array, rank_prefill: Array | None, micro: Array | None = None
    ) -> tuple[StepCost, Array]:
        s = step_shape(
            tp,
            pp_a,
            ep,
            cp,
            attention_dp,
            isl=isl,
            osl=osl,
            decode_seqs=decode_seqs,
            prefill_tokens=prefill,
            decode_query=decode_query,
            micro_batches=micro,
            rank_prefill_tokens=rank_prefill,
        )
        if micro is not None:  # the micro-batches the chunks were packed into
            s = replace(s, host_seq_share=micro / stages)
        stage = step_cost(model, prec, hw, eng, s, detail=detail, memo=memo)
        return stage, pipeline_hops(
            model, hw, prec, eng, pp_a, dec_tokens + prefill, s.micro_batches
        )

    share, t_chunk = 0.0, None
    if not np.any(pre > 0):
        stage, hops = priced(pre, None)
    else:  # discrete chunks: a mixture of decode-only steps and steps carrying a chunk
        # the micro-batches step_shape splits the replica's sequences into
        micro = np.minimum(stages, np.maximum(np.asarray(decode_seqs) + pre / isl, 1.0))
        share, pre_on, rank_on, base = chunked_prefill(
            eng, isl, tp, attention_dp, dec_tokens, pre, micro, decode_seqs
        )
        plain, hops_plain = priced(base, None)
        chunked, hops_chunk = priced(pre_on, rank_on, micro)
        stage = _mix(plain, chunked, share)
        hops = (1.0 - share) * hops_plain + share * hops_chunk
        t_chunk = stages * chunked.total_s + hops_chunk
    total = stages * stage.total_s + hops
    # where no step carries prompt tokens, the step that would is the mean one
    t_prompt = total if t_chunk is None else np.where(share > 0, t_chunk, total)
    by_class = {k: v * stages for k, v in stage.by_class.items()}
    by_class["communication"] = by_class["communication"] + hops
    return PipelinedStep(total, by_class, stage, stages, hops, t_prompt, share)


def discrete_step(
    model: ModelSpec,
    prec: Precision,
    hw: HardwareSpec,
    eng: EngineConstants,
    *,
    tp: Array | int,
    pp: Array | int,
    ep: Array | int,
    cp: Array | int,
    attention_dp: Array | bool,
    decode_seqs: Array | float,
    decode_ctx: Array | float,
    prefill_tokens: Array | float = 0.0,
    prefill_ctx: Array | float = 0.0,
    decode_query: Array | float = 1.0,
    memo: dict | None = None,
) -> Array:
    """Seconds of one actual engine step (not a steady-state mean): ``decode_seqs`` sequences
    holding ``decode_ctx`` tokens each on average decode ``decode_query`` tokens each, and
    ``prefill_tokens`` prompt tokens attending to ``prefill_ctx`` tokens on average ride
    along. The same pricing as :func:`pipelined_step` (pp stages + hops, overheads), with the
    contexts given instead of the steady state's, and the prompt tokens as they are (no chunk
    mixture). Under attention-DP a step's prompt tokens fill one rank's token budget
    (``rank_token_budget``) before the next: the busiest rank holds min(tokens, that budget).
    Used by the request-level simulator (``serving.simulate``), which prices every step it runs."""
    eng = for_gpu(eng, hw)  # (the runtime's limits on hw: specs.gpu_defaults)
    pre = np.asarray(prefill_tokens, dtype=float)
    ranks = scheduling_ranks(np.asarray(tp), np.asarray(attention_dp, dtype=bool))
    rank_pre = np.where(ranks > 1, np.minimum(pre, rank_token_budget(eng, ranks)), pre)
    s = step_shape(
        tp,
        pp,
        ep,
        cp,
        attention_dp,
        isl=1.0,
        osl=0.0,
        decode_seqs=decode_seqs,
        prefill_tokens=pre,
        prefill_seqs=np.where(pre > 0, 1.0, 0.0),
        decode_query=decode_query,
        rank_prefill_tokens=rank_pre,
    )
    s = replace(
        s,
        decode_ctx=np.asarray(decode_ctx, dtype=float),
        prefill_ctx=np.asarray(prefill_ctx, dtype=float),
    )
    stage = step_cost(model, prec, hw, eng, s, memo=memo)
    pp_a = np.asarray(pp, dtype=np.int64)
    tokens = np.asarray(decode_seqs, dtype=float) * decode_query + pre
    hops = pipeline_hops(model, hw, prec, eng, pp_a, tokens, s.micro_batches)
    return pp_a.astype(float) * stage.total_s + hops


def lone_prompt_passes(eng: EngineConstants, n_chunks: Array, pp: Array) -> Array:
    """Stage passes of one prompt's ``n_chunks`` chunks through ``pp`` pipeline stages:
    n + pp - 1 where the engine overlaps them (``EngineConstants.pp_prefill_overlap``), else
    n x pp (each chunk waits for the previous to leave the last stage)."""
    n, p = np.asarray(n_chunks, dtype=float), np.asarray(pp, dtype=float)
    return n + p - 1.0 if eng.pp_prefill_overlap else n * p


def tokens_per_step(k: int, a: float) -> float:
    """Tokens a decoding sequence yields per step with ``k`` draft tokens (MTP / speculative
    decoding), each accepted with probability ``a``: (1 - a^(k+1)) / (1 - a), k + 1 at a = 1.
    Raises SpecError unless k is an integer in 0..16 and a lies in [0, 1]."""
    if isinstance(k, bool) or not (isinstance(k, int) and 0 <= k <= 16):
        raise SpecError(f"spec_tokens must be an integer in 0..16, got {k!r}")
    if not 0.0 <= a <= 1.0:
        raise SpecError(f"spec_acceptance must lie in [0, 1], got {a!r}")
    return float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)


def runs_without_overlap(model: ModelSpec, eng: EngineConstants) -> bool:
    """The engine runs this model without its overlap scheduler: a model with recurrent state
    (``ModelSpec.has_recurrent_state``) on an engine whose ``recurrent_state_overlap`` is false
    (SGLang, which keeps its radix cache and drops the overlap for them; a configuration that
    speculates keeps it, :func:`speculating_engine`)."""
    return not eng.recurrent_state_overlap and model.has_recurrent_state


def host_overlap_share(model: ModelSpec, eng: EngineConstants) -> float:
    """Share of a step's host work the engine's overlap scheduler hides behind its GPU work:
    ``host_overlap``, or 0 where :func:`runs_without_overlap`."""
    return 0.0 if runs_without_overlap(model, eng) else eng.host_overlap


def speculating_engine(eng: EngineConstants, spec_tokens: int) -> EngineConstants:
    """The engine a configuration with ``spec_tokens`` speculative drafts runs: one that drops
    its overlap scheduler for recurrent-state models keeps it when it speculates (SGLang drops
    the radix cache instead: ``recurrent_state_overlap`` true). Read by the entry points that
    take ``spec_tokens`` (``evaluate``, ``evaluate_disaggregated``, ``simulate``)."""
    if spec_tokens and not eng.recurrent_state_overlap:
        return eng.with_overrides(recurrent_state_overlap=True)
    return eng


def draft_note(model: ModelSpec, spec_tokens: int) -> list[str]:
    """An estimate's note on what its ``spec_tokens`` drafts load (``ops.draft_layers``): the
    model's MTP blocks, counted in weights and KV, or a draft model of its own, not counted."""
    if not spec_tokens:
        return []
    if n := draft_layers(model, spec_tokens):
        return [
            f"{model.id}'s MTP module ({n} block{'s' * (n > 1)}; each draft runs one) is loaded "
            "to draft: its weights and KV cache are counted in the memory fit"
        ]
    return [
        f"{model.id} has no MTP module: each draft is priced as one of its layers, and a draft "
        "model of its own (an EAGLE head) is not counted in the memory fit"
    ]


def overlap_note(model: ModelSpec, eng: EngineConstants, spec_tokens: int) -> list[str]:
    """An estimate's notes where the engine a configuration with ``spec_tokens`` runs has no
    overlap scheduler for this model (:func:`runs_without_overlap`), or runs its drafts as passes
    of their own (``EngineConstants.spec_separate_drafts``, :func:`draft_time`), and what the
    drafts load (:func:`draft_note`)."""
    if spec_tokens:
        host = f"{eng.step_overhead_s * 1e3:.2g} ms + {eng.per_seq_overhead_s * 1e6:.3g} us"
        return draft_note(model, spec_tokens) + [
            f"engine {eng.id} runs each of the {spec_tokens} drafts a step as a pass of its own "
            f"after the verify: {host} per sequence of host work each"
        ] * eng.spec_separate_drafts  # fmt: skip
    if not runs_without_overlap(model, eng):
        return []
    return [
        f"engine {eng.id} runs {model.id} (recurrent-state token mixers) without its overlap "
        f"scheduler while its radix cache is on: {eng.step_overhead_s * 1e3:.2g} ms of host "
        f"work a step plus {eng.per_seq_overhead_s * 1e6:.3g} us per sequence add to the "
        "GPU's instead of hiding behind it (a launch with --disable-radix-cache keeps it)"
    ]


def draft_time(
    model: ModelSpec,
    eng: EngineConstants,
    plain_s: Array,
    pp: Array,
    k_spec: int,
    decode_seqs: Array | float = 0.0,
    tp: Array | int = 1,
    attention_dp: Array | bool = False,
) -> Array:
    """Seconds of ``k_spec`` speculative draft tokens (MTP) per step: each one layer-equivalent
    of the plain decode step ``plain_s`` (one query token per sequence) without the fixed step
    overhead it shows (the share the overlap scheduler leaves in it, 1 - :func:`host_overlap_share`;
    exact where the step's GPU work is at least its host work): an MTP module is one block
    (DeepSeek-V3's, run k times; MiniMax-M2's ``mtp_transformer_layers`` and Qwen3.5's
    ``mtp_num_hidden_layers`` are 1). Where the engine runs the drafts as passes
    of their own (``EngineConstants.spec_separate_drafts``), each of the k passes adds the host
    work of a step for the ``decode_seqs`` a scheduling rank holds (as in :func:`step_cost`),
    ``step_overhead_s`` + ``per_seq_overhead_s`` x those, none of it hidden (the host builds a
    pass from the verify's results). Example: SGLang's 2 ms and 37.7 us, k = 2, 16 sequences:
    5.2 ms a step."""
    if k_spec == 0:
        return np.zeros(np.shape(plain_s))
    pp_f = np.asarray(pp, dtype=float)
    shown = eng.step_overhead_s * (1.0 - host_overlap_share(model, eng))
    per_layer = np.maximum(plain_s / pp_f - shown / pp_f, 0.0)
    gpu = k_spec * per_layer * pp_f / model.num_layers
    if not eng.spec_separate_drafts:
        return gpu
    seqs = np.asarray(decode_seqs) / scheduling_ranks(np.asarray(tp), np.asarray(attention_dp))
    return gpu + k_spec * (eng.step_overhead_s + eng.per_seq_overhead_s * seqs)


def bound_split(
    model: ModelSpec,
    prec: Precision,
    hw: HardwareSpec,
    eng: EngineConstants,
    step: PipelinedStep,
) -> dict[str, Array]:
    """Seconds of a pipelined step (computed with ``detail=True``) by what bounds them:
    compute-bound ops, memory-bound ops, network (collectives and pipeline hops) and
    overhead (per-kernel and host time); the four sum to ``step.total_s``."""
    if not step.stage.ops:
        raise ValueError("bound_split needs a step computed with detail=True")
    shape = np.shape(step.total_s)
    out = {r: np.zeros(shape) for r in RESOURCES}
    used = np.zeros(shape)
    for op, t, bound in step.stage.ops:
        t = np.broadcast_to(np.asarray(t) * step.stages, shape)
        used = used + t
        if op.kind == "comm":
            out["network"] = out["network"] + t
        elif op.kind == "fixed":  # fixed per-layer kernel time: counted as overhead below
            used = used - t
        else:
            is_c = np.broadcast_to(np.asarray(bound) == "compute", shape)
            out["compute"] = out["compute"] + np.where(is_c, t, 0.0)
            out["memory"] = out["memory"] + np.where(is_c, 0.0, t)
    out["network"] = out["network"] + np.broadcast_to(step.hops_s, shape)
    used = used + np.broadcast_to(step.hops_s, shape)
    out["overhead"] = np.maximum(np.broadcast_to(step.total_s, shape) - used, 0.0)
    return out


def region_of(split: dict[str, Array]) -> Array:
    """The region label (``REGIONS``) of the largest term of a :func:`bound_split`."""
    stack = np.stack([np.asarray(split[r], dtype=float) for r in RESOURCES])
    return np.asarray(REGIONS, dtype=object)[np.argmax(stack, axis=0)]
