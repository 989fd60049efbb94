"""Serving: memory fit and in-flight-batched aggregated serving metrics (TTFT, TPOT,
tokens/s/user, tokens/s/GPU) with a breakdown by op class, vectorized over every axis.

Closed loop with concurrency C per replica (DESIGN.md). In steady state a request spends TTFT
waiting for and running its prefill, then OSL - 1 decode steps. Little's law gives the request
rate X = C / (TTFT + (OSL - 1) TPOT); each engine step decodes the C_d = X (OSL - 1) TPOT
requests in their decode phase and prefills X ISL TPOT prompt tokens (chunked prefill mixed into
the decode step). TPOT is that mixed step's time; the fixed point is found by a few damped
iterations (vectorized, no loop over configurations).

Pipeline parallelism splits the C requests into pp micro-batches, each stage holding L / pp
layers: TPOT = pp x stage time + (pp - 1) activation transfers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .cost import collective_time, op_time
from .errors import SpecError
from .ops import (
    OP_CLASSES,
    Op,
    StepShape,
    kv_bytes_per_sequence_per_gpu,
    step_ops,
    weight_bytes_per_gpu,
)
from .specs.engine import EngineConstants
from .specs.hardware import HardwareSpec
from .specs.model import ModelSpec
from .specs.precision import Precision

Array = np.ndarray

# Per-GPU memory the engine cannot give to weights or KV: CUDA context, cuBLAS/NCCL workspaces.
RUNTIME_RESERVED_BYTES = 2.0e9
FIXED_POINT_ITERATIONS = 6


@dataclass
class StepCost:
    """Time of one step per op class (seconds, arrays) and per-op detail."""

    total_s: Array
    by_class: dict[str, Array]
    ops: list[tuple[Op, Array, Any]] = field(default_factory=list)


def step_cost(
    model: ModelSpec, prec: Precision, hw: HardwareSpec, eng: EngineConstants, s: StepShape,
    detail: bool = False, memo: dict | None = None,
) -> StepCost:
    """Time of one pipeline stage's step: sum of op times x layers + kernel and step overheads."""
    ops = step_ops(model, prec, s)
    shape = np.broadcast(s.decode_seqs, s.prefill_tokens, s.tp, s.pp, s.ep, s.cp, s.attention_dp, s.decode_ctx, s.prefill_ctx).shape
    by_class = {c: np.zeros(shape) for c in OP_CLASSES}
    kernels = np.zeros(shape)
    detail_rows = []
    for op in ops:
        t, bound = op_time(op, hw, eng, memo)
        t_total = t * op.layers
        by_class[op.op_class] = by_class[op.op_class] + t_total
        active = np.asarray(t) > 0
        kernels = kernels + np.where(active, op.kernels * np.asarray(op.layers), 0.0)
        if detail:
            detail_rows.append((op, t_total, bound))
    seqs = (s.decode_seqs + s.prefill_seqs) / np.where(s.attention_dp, s.tp, 1)
    by_class["other"] = by_class["other"] + kernels * eng.kernel_overhead_s
    # host work (scheduling, sampling, per-request bookkeeping); an overlap scheduler hides a
    # share of it behind the GPU work of the step
    gpu = sum(by_class.values())
    host = eng.step_overhead_s / s.pp + eng.per_seq_overhead_s * seqs
    by_class["other"] = by_class["other"] + host - eng.host_overlap * np.minimum(gpu, host)
    total = sum(by_class.values())
    return StepCost(total, by_class, detail_rows)


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


def memory_fit(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants,
    tp: Array, pp: Array, ep: Array, attention_dp: Array, cp: Array, context: Array,
) -> tuple[Array, Array, Array, Array, Array]:
    """Per-GPU memory: (weight bytes, KV bytes per sequence of ``context`` tokens, workspace
    bytes, bytes the KV cache may use, max concurrency per replica).

    The engine gives ``memory_utilization`` of the memory left after weights and workspace to
    the KV cache (TensorRT-LLM kv_cache_free_gpu_memory_fraction). ``context`` is the tokens a
    sequence holds: callers pass the steady-state mean ISL + OSL/2 for in-flight batching
    (paged KV blocks are allocated as tokens arrive and running sequences are spread over their
    decode phase: measured TensorRT-LLM runs hold more sequences than full ISL + OSL
    reservations would allow), the full ISL + OSL for static batches. Workspace = runtime
    reserve + activations of one ``max_num_tokens`` step.
    """
    w_bytes = weight_bytes_per_gpu(model, prec, tp, ep, pp, attention_dp, cp)
    kv_seq = kv_bytes_per_sequence_per_gpu(model, prec, np.asarray(context, dtype=float), tp, pp, attention_dp, cp)
    d = model.hidden_size
    workspace = RUNTIME_RESERVED_BYTES + eng.max_num_tokens * (8.0 * d + 4.0 * model.intermediate_size / np.where(attention_dp, 1, tp)) * 2.0
    usable = (hw.hbm_bytes - w_bytes - workspace) * eng.memory_utilization
    seqs_per_gpu = np.floor(np.maximum(usable, 0.0) / np.maximum(kv_seq, 1e-9))
    return w_bytes, kv_seq, workspace, usable, seqs_per_gpu * np.where(attention_dp, tp, 1)


def pipeline_hops(model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, pp: Array, tokens: Array) -> Array:
    """Time of the (pp - 1) activation transfers between pipeline stages for one token step of
    ``tokens`` tokens split into pp micro-batches."""
    micro = np.asarray(pp, dtype=float)
    act = np.asarray(tokens, dtype=float) / micro * model.hidden_size * prec.comm_bytes
    return (micro - 1.0) * collective_time("p2p", act, np.where(micro > 1, 2, 1), hw, eng)


def plan_feasibility(model: ModelSpec, tp: Array, pp: Array, ep: Array, attention_dp: Array, cp: Array) -> Array:
    """Vectorized plan rules (same as ParallelPlan.validate_for); '' where valid, else a reason."""
    a = model.attention
    shape = np.broadcast(tp, pp, ep, attention_dp, cp).shape
    reason = np.full(shape, "", dtype=object)
    atp = np.where(attention_dp, 1, tp // np.maximum(cp, 1))

    def mark(cond: Array, why: str) -> None:
        nonlocal reason
        reason = np.where((reason == "") & np.broadcast_to(cond, shape), why, reason)

    mark(tp % ep != 0, "ep_not_dividing_tp")
    mark(tp % cp != 0, "cp_not_dividing_tp")
    mark(attention_dp & (cp > 1), "attention_dp_with_cp")
    mark(a.num_heads % atp != 0, "tp_not_dividing_heads")
    if a.kind == "gqa":
        mark((atp > a.num_kv_heads) & (atp % a.num_kv_heads != 0), "tp_exceeds_kv_heads_unevenly")
        mark((atp < a.num_kv_heads) & (a.num_kv_heads % np.maximum(atp, 1) != 0), "tp_not_dividing_kv_heads")
    mark(pp > model.num_layers, "pp_exceeds_layers")
    if model.moe is None:
        mark(ep > 1, "ep_on_dense_model")
        mark(~attention_dp & (model.intermediate_size % tp != 0), "tp_not_dividing_ffn")
    else:
        mark(model.moe.num_experts % ep != 0, "ep_not_dividing_experts")
        mark(model.moe.expert_intermediate % np.maximum(tp // ep, 1) != 0, "moe_tp_not_dividing_expert_width")
    return reason


def evaluate(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, *,
    tp: Array | int = 1, pp: Array | int = 1, ep: Array | int = 1, dp: Array | int = 1,
    attention_dp: Array | bool = False, cp: Array | int = 1,
    isl: Array | int, osl: Array | int, concurrency: Array | int,
    spec_tokens: int = 0, spec_acceptance: float = 0.0, benchmark_burst: bool = False,
) -> GridResult:
    """Serving metrics for every configuration of the broadcast inputs (one or a million).

    Speculative decoding / MTP: ``spec_tokens`` draft tokens per step, each accepted with
    probability ``spec_acceptance`` (stated by the user): a step verifies 1 + k query tokens
    per sequence (one KV read) and yields (1 - a^(k+1)) / (1 - a) tokens on average; each draft
    token costs one layer-equivalent decode (DeepSeek's MTP module is one transformer block).

    ``benchmark_burst``: report the mean TTFT of a closed-loop benchmark whose clients all start
    at once (the engine's ``ttft_burst`` share of requests waits for the start-up wave); used
    when comparing with such measurements. Throughput is the steady state either way.
    """
    if not (isinstance(spec_tokens, int) and 0 <= spec_tokens <= 16):
        raise SpecError(f"spec_tokens must be an integer in 0..16, got {spec_tokens!r}")
    if not 0.0 <= spec_acceptance <= 1.0:
        raise SpecError(f"spec_acceptance must lie in [0, 1], got {spec_acceptance!r}")
    k_spec, a_spec = spec_tokens, float(spec_acceptance)
    tokens_per_step = (k_spec + 1.0) if a_spec >= 1.0 else (1.0 - a_spec ** (k_spec + 1)) / (1.0 - a_spec)
    # hardware support for the precision is a property of the (hw, precision) pair: raise once
    hw.compute_rate_class(prec.compute_class)
    tp, pp, ep, dp, cp = (np.asarray(x, dtype=np.int64) for x in (tp, pp, ep, dp, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    isl_f = np.asarray(isl, dtype=float)
    osl_f = np.asarray(osl, dtype=float)
    conc = np.asarray(concurrency, dtype=float)
    shape = np.broadcast(tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc).shape
    tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc = (np.broadcast_to(x, shape) for x in (tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc))
    if np.any(conc < 1) or np.any(isl_f < 1) or np.any(osl_f < 1):
        raise SpecError("workload: isl, osl and concurrency must all be >= 1")

    memo: dict = {}  # per-call reuse of GEMM ceilings (pure: same inputs, same values)
    reason = plan_feasibility(model, tp, pp, ep, adp, cp)
    safe_tp = np.where(reason == "", tp, 1)
    safe_ep = np.where(reason == "", ep, 1)
    safe_cp = np.where(reason == "", cp, 1)
    safe_pp = np.where(reason == "", pp, 1)
    tp, ep, cp, pp = safe_tp, safe_ep, safe_cp, safe_pp
    gpus_per_replica = tp * pp

    # ---- memory ----
    w_bytes, kv_seq, workspace, usable, max_conc = memory_fit(model, hw, prec, eng, tp, pp, ep, adp, cp, isl_f + osl_f / 2.0)
    rank_div = np.where(adp, tp, 1)
    # Clients beyond what the engine can hold (KV capacity or max_batch_size) wait in its queue:
    # the engine runs `run` requests; the rest add queueing delay to TTFT (Little's law below).
    client_conc = conc
    # max_batch_size holds per engine rank: each attention-DP rank schedules its own batch
    run = np.maximum(np.minimum(np.minimum(conc, max_conc), eng.max_batch_size * rank_div), 1.0)
    conc = run
    seqs_here = np.ceil(conc / rank_div)
    kv_total = seqs_here * kv_seq
    mem = w_bytes + kv_total + workspace
    fits = (usable > 0) & (client_conc <= max_conc)
    reason = np.where((reason == "") & (usable <= 0), "weights_exceed_memory", reason)
    reason = np.where((reason == "") & (max_conc < 1), "oom", reason)
    if hw.scaleout_bytes_per_s <= 0:
        reason = np.where((reason == "") & (tp > hw.scaleup_domain_size), "no_scaleout_network", reason)

    def shape_for(dec, dctx, pre, pseqs, pctx, micro, query=1.0 + k_spec):
        return StepShape(
            decode_seqs=dec / micro, decode_ctx=dctx, prefill_tokens=pre / micro,
            prefill_seqs=pseqs / micro, prefill_ctx=pctx, tp=tp, ep=ep, pp=pp, cp=cp, attention_dp=adp,
            decode_query=query,
        )

    def draft_time(dec):
        """k draft tokens, each one layer-equivalent of a plain decode step (no fixed overheads)."""
        if k_spec == 0:
            return np.zeros(shape)
        one = step_cost(model, prec, hw, eng, shape_for(dec, dctx, np.zeros(shape), np.zeros(shape), isl_f / 2.0, micro, 1.0), memo=memo)
        per_layer = (one.total_s - eng.step_overhead_s / pp) * micro / model.num_layers
        return k_spec * max(model.num_mtp_layers, 1) * per_layer

    micro = pp.astype(float)
    dctx = isl_f + osl_f / 2.0

    def hops(tokens: Array) -> Array:
        return pipeline_hops(model, hw, prec, eng, pp, tokens)

    def pipeline(total_stage: Array, tokens: Array) -> Array:
        return micro * total_stage + hops(tokens)

    # isolated prefill of one request (chunks of max_num_tokens), no decode: TTFT at low load
    chunk = np.minimum(isl_f, eng.max_num_tokens)
    n_chunks = np.ceil(isl_f / chunk)
    pre_cost = step_cost(model, prec, hw, eng, StepShape(
        decode_seqs=np.zeros(shape), decode_ctx=dctx, prefill_tokens=chunk, prefill_seqs=1.0 / n_chunks,
        prefill_ctx=isl_f / 2.0, tp=tp, ep=ep, pp=pp, cp=cp, attention_dp=adp), memo=memo)
    # chunked pipeline: chunks stream through pp stages
    prefill_alone = (n_chunks + pp - 1.0) * pre_cost.total_s
    # the mixed step, fixed point over the decode/prefill mix
    c_dec = conc.copy()
    tpot = np.zeros(shape)
    ttft = prefill_alone.copy()
    for it in range(FIXED_POINT_ITERATIONS):
        if it == 0:
            pre_tokens = conc * isl_f / osl_f
        else:
            rate = conc / (ttft + np.maximum(osl_f - 1.0, 0.0) * tpot + 1e-12)
            pre_tokens = rate * isl_f * tpot * tokens_per_step  # prompts admitted per step
            new_dec = np.maximum(conc - rate * ttft, 1.0)
            c_dec = 0.5 * c_dec + 0.5 * np.minimum(new_dec, conc)
        pseqs = pre_tokens / isl_f
        mixed = step_cost(model, prec, hw, eng, shape_for(c_dec, dctx, pre_tokens, pseqs, isl_f / 2.0, micro), memo=memo)
        drafts = draft_time(c_dec)
        step = pipeline(mixed.total_s, c_dec * (1.0 + k_spec) + pre_tokens) + drafts
        tpot = step / tokens_per_step
        # TTFT: wait half a step for admission, then the prompt's chunks, each a mixed step;
        # queueing when the prefill budget per step is nearly used by other requests' prompts
        budget = np.maximum(eng.max_num_tokens - c_dec / micro, 0.1 * eng.max_num_tokens)
        load = np.clip(pre_tokens / micro / budget, 0.0, 0.9)
        chunk_steps = np.ceil(isl_f / budget)
        ttft_steady = (0.5 + chunk_steps / (1.0 - load)) * tpot / np.maximum(micro, 1.0) * 1.0 + (pp - 1.0) * tpot / micro
        ttft = np.maximum(ttft_steady, prefill_alone)
    # closed-loop benchmarks start all C clients at once: a share `ttft_burst` of requests wait
    # for the start-up wave, whose mean wait is half of prefilling C prompts back to back
    rate = conc / (ttft + eng.request_overhead_s + np.maximum(osl_f - 1.0, 0.0) * tpot)
    # queued clients: each waits (client_conc - run) / rate before admission
    queue_wait = np.maximum(client_conc - conc, 0.0) / np.maximum(rate, 1e-30)
    ttft = ttft + queue_wait + eng.request_overhead_s
    if benchmark_burst:
        ttft = ttft + eng.ttft_burst * 0.5 * conc * (prefill_alone / np.maximum(n_chunks + pp - 1.0, 1.0)) * n_chunks / micro
    out_per_gpu = rate * osl_f / gpus_per_replica
    total_per_gpu = rate * (isl_f + osl_f) / gpus_per_replica

    dec_cost = step_cost(model, prec, hw, eng, shape_for(conc, dctx, np.zeros(shape), np.zeros(shape), isl_f / 2.0, micro, 1.0), memo=memo)
    dec_break = {k: v * micro for k, v in dec_cost.by_class.items()}
    dec_break["communication"] = dec_break["communication"] + hops(conc)
    # mixed_step: time per generated token of the steady-state step (= TPOT)
    mixed_break = {k: v * micro for k, v in mixed.by_class.items()}
    mixed_break["communication"] = mixed_break["communication"] + hops(c_dec * (1.0 + k_spec) + pre_tokens)
    mixed_break["other"] = mixed_break["other"] + drafts
    mixed_break = {k: v / tokens_per_step for k, v in mixed_break.items()}
    feasible = reason == ""
    finite = np.isfinite(tpot) & np.isfinite(ttft)
    reason = np.where(feasible & ~finite, "numeric", reason)
    feasible = reason == ""
    return GridResult(
        ttft_s=ttft, tpot_s=tpot, output_tok_s_per_gpu=out_per_gpu, total_tok_s_per_gpu=total_per_gpu,
        tok_s_per_user=1.0 / tpot, memory_per_gpu_bytes=mem, weight_bytes_per_gpu=w_bytes,
        kv_bytes_per_gpu=kv_total, max_concurrency=max_conc, running_concurrency=conc, fits_in_memory=fits, feasible=feasible,
        reason=reason, decode_breakdown=dec_break,
        prefill_breakdown={k: v * (n_chunks + pp - 1.0) for k, v in pre_cost.by_class.items()},
        mixed_breakdown=mixed_break,
        num_gpus=gpus_per_replica * dp,
    )


def evaluate_static(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, *,
    tp: Array | int = 1, pp: Array | int = 1, ep: Array | int = 1, attention_dp: Array | bool = False,
    cp: Array | int = 1, isl: Array | int, osl: Array | int, batch: Array | int,
) -> dict[str, Array]:
    """Static batching (TensorRT-LLM <= v0.9 ``gptSessionBenchmark``): a batch of B requests is
    prefilled together, then decoded for OSL steps; throughput = B x OSL / (prefill + OSL decode
    steps). Returns arrays: ttft_s (the batch's prefill), tpot_s, output_tok_s_per_gpu,
    feasible, reason, fits_in_memory."""
    tp, pp, ep, cp = (np.asarray(x, dtype=np.int64) for x in (tp, pp, ep, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    isl_f, osl_f, b = (np.asarray(x, dtype=float) for x in (isl, osl, batch))
    shape = np.broadcast(tp, pp, ep, cp, adp, isl_f, osl_f, b).shape
    tp, pp, ep, cp, adp, isl_f, osl_f, b = (np.broadcast_to(x, shape) for x in (tp, pp, ep, cp, adp, isl_f, osl_f, b))
    reason = plan_feasibility(model, tp, pp, ep, adp, cp)
    ok = reason == ""
    tp, ep, cp, pp = (np.where(ok, x, 1) for x in (tp, ep, cp, pp))
    micro = pp.astype(float)
    w_bytes = weight_bytes_per_gpu(model, prec, tp, ep, pp, adp, cp)
    kv_seq = kv_bytes_per_sequence_per_gpu(model, prec, isl_f + osl_f, tp, pp, adp, cp)
    rank_div = np.where(adp, tp, 1)
    usable = (hw.hbm_bytes - w_bytes - RUNTIME_RESERVED_BYTES) * eng.memory_utilization
    fits = usable >= np.ceil(b / rank_div) * kv_seq
    reason = np.where(ok & ~fits, "oom", reason)
    d = model.hidden_size
    pre = step_cost(model, prec, hw, eng, StepShape(
        decode_seqs=np.zeros(shape), decode_ctx=isl_f, prefill_tokens=b * isl_f / micro, prefill_seqs=b / micro,
        prefill_ctx=isl_f / 2.0, tp=tp, ep=ep, pp=pp, cp=cp, attention_dp=adp)).total_s
    dec = step_cost(model, prec, hw, eng, StepShape(
        decode_seqs=b / micro, decode_ctx=isl_f + osl_f / 2.0, prefill_tokens=np.zeros(shape),
        prefill_seqs=np.zeros(shape), prefill_ctx=isl_f / 2.0, tp=tp, ep=ep, pp=pp, cp=cp, attention_dp=adp)).total_s
    hop_pre = collective_time("p2p", b * isl_f / micro * d * prec.comm_bytes, np.where(pp > 1, 2, 1), hw, eng)
    hop_dec = collective_time("p2p", b / micro * d * prec.comm_bytes, np.where(pp > 1, 2, 1), hw, eng)
    # no request_overhead_s: the static C++ session benchmark times the engine alone (no server)
    ttft = micro * pre + (micro - 1.0) * hop_pre
    tpot = micro * dec + (micro - 1.0) * hop_dec
    total = ttft + np.maximum(osl_f - 1.0, 0.0) * tpot
    return {
        "ttft_s": ttft, "tpot_s": tpot, "output_tok_s_per_gpu": b * osl_f / total / (tp * pp),
        "total_tok_s_per_gpu": b * (isl_f + osl_f) / total / (tp * pp), "tok_s_per_user": 1.0 / tpot,
        "feasible": reason == "", "reason": reason, "fits_in_memory": fits,
    }
