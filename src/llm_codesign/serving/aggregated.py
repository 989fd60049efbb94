"""Aggregated serving: in-flight-batched serving metrics (TTFT, TPOT,
tokens/s/user, tokens/s/GPU) with a breakdown by op class, vectorized over every axis.

Closed loop with concurrency C per replica (DESIGN.md). In steady state a request spends TTFT
waiting for and running its prefill, then OSL - 1 decode steps. Little's law gives the request
rate X = C / (TTFT + (OSL - 1) TPOT); each engine step decodes the C_d = X (OSL - 1) TPOT
requests in their decode phase and prefills X ISL TPOT prompt tokens (chunked prefill mixed into
the decode step). TPOT is that mixed step's time; the fixed point is found by a few damped
iterations (vectorized, no loop over configurations).

The step itself (pp micro-batches, hops, overheads) is :func:`serving.step.pipelined_step`;
memory and the concurrency cap are :mod:`serving.memory`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError
from ..ops import step_shape
from ..specs.engine import EngineConstants
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import NO_SCALEOUT_NETWORK, crosses_domain_without_network, plan_feasibility
from ..specs.precision import Precision
from .memory import (
    concurrency_cap,
    kv_context,
    memory_fit,
    running_kv_bytes,
    scheduling_ranks,
    static_batch_fits,
)
from .step import pipeline_hops, pipelined_step, step_cost

Array = np.ndarray

FIXED_POINT_ITERATIONS = 6


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

    Speculative decoding / MTP: ``spec_tokens`` draft tokens per step, each accepted with
    probability ``spec_acceptance`` (stated by the user): a step verifies 1 + k query tokens
    per sequence (one KV read) and yields (1 - a^(k+1)) / (1 - a) tokens on average; each draft
    token costs one layer-equivalent decode (DeepSeek's MTP module is one transformer block).

    ``benchmark_burst``: report what a closed-loop benchmark with fixed lengths measures when
    its clients all start at once: a share ``ttft_burst`` of the run moves in synchronized
    cohorts (the C prompts prefilled as one wave, then decoded together with no prompt mixed
    in, finishing together), the rest in the staggered steady state. A cohort request waits
    half the wave for its first token and stalls the other half inside its decode; TPOT, TTFT
    and throughput blend the two. Used when comparing with such measurements; without it
    (estimate, frontier) every number is the steady state of real, staggered traffic.
    """
    if not (isinstance(spec_tokens, int) and 0 <= spec_tokens <= 16):
        raise SpecError(f"spec_tokens must be an integer in 0..16, got {spec_tokens!r}")
    if not 0.0 <= spec_acceptance <= 1.0:
        raise SpecError(f"spec_acceptance must lie in [0, 1], got {spec_acceptance!r}")
    k_spec, a_spec = spec_tokens, float(spec_acceptance)
    tokens_per_step = (
        (k_spec + 1.0) if a_spec >= 1.0 else (1.0 - a_spec ** (k_spec + 1)) / (1.0 - a_spec)
    )
    # hardware support for the precision is a property of the (hw, precision) pair: raise once
    hw.compute_rate_class(prec.compute_class)
    tp, pp, ep, dp, cp = (np.asarray(x, dtype=np.int64) for x in (tp, pp, ep, dp, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    isl_f = np.asarray(isl, dtype=float)
    osl_f = np.asarray(osl, dtype=float)
    conc = np.asarray(concurrency, dtype=float)
    shape = np.broadcast(tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc).shape
    tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc = (
        np.broadcast_to(x, shape) for x in (tp, pp, ep, dp, cp, adp, isl_f, osl_f, conc)
    )
    if np.any(conc < 1) or np.any(isl_f < 1) or np.any(osl_f < 1):
        raise SpecError("workload: isl, osl and concurrency must all be >= 1")

    memo: dict = {}  # per-call reuse of GEMM ceilings (pure: same inputs, same values)
    reason = plan_feasibility(model, tp, pp, ep, adp, cp)
    tp, ep, cp, pp = (np.where(reason == "", v, 1) for v in (tp, ep, cp, pp))
    gpus_per_replica = tp * pp
    axes: dict[str, Any] = {"tp": tp, "pp": pp, "ep": ep, "cp": cp, "attention_dp": adp}

    # ---- memory: clients beyond what the engine holds (KV or max_batch_size) queue ----
    w_bytes, kv_seq, workspace, usable, max_conc = memory_fit(
        model, hw, prec, eng, tp, pp, ep, adp, cp, kv_context(eng, isl_f, osl_f)
    )
    client_conc = conc
    conc = np.maximum(np.minimum(conc, concurrency_cap(eng, max_conc, tp, adp)), 1.0)
    kv_total = running_kv_bytes(kv_seq, conc, tp, adp)
    mem = w_bytes + kv_total + workspace
    fits = (usable > 0) & (client_conc <= max_conc)
    reason = np.where((reason == "") & (usable <= 0), "weights_exceed_memory", reason)
    reason = np.where((reason == "") & (max_conc < 1), "oom", reason)
    no_net = crosses_domain_without_network(hw, tp)
    reason = np.where((reason == "") & no_net, NO_SCALEOUT_NETWORK, reason)

    micro = pp.astype(float)

    def step(dec: Array, pre: Array, query: float = 1.0 + k_spec):
        return pipelined_step(
            model,
            prec,
            hw,
            eng,
            **axes,
            isl=isl_f,
            osl=osl_f,
            decode_seqs=dec,
            prefill_tokens=pre,
            decode_query=query,
            memo=memo,
        )

    def draft_time(dec: Array) -> Array:
        """k draft tokens, each one layer-equivalent of a plain decode step (no fixed overheads)."""
        if k_spec == 0:
            return np.zeros(shape)
        one = step(dec, np.zeros(shape), 1.0).stage
        per_layer = (one.total_s - eng.step_overhead_s / pp) * micro / model.num_layers
        return k_spec * max(model.num_mtp_layers, 1) * per_layer

    # isolated prefill of one request (chunks of max_num_tokens streaming through the pp
    # stages), no decode: TTFT at low load
    chunk = np.minimum(isl_f, eng.max_num_tokens)
    n_chunks = np.ceil(isl_f / chunk)
    pre_shape = step_shape(
        tp,
        pp,
        ep,
        cp,
        adp,
        isl=isl_f,
        osl=osl_f,
        prefill_tokens=chunk,
        prefill_seqs=1.0 / n_chunks,
        micro_batches=1.0,
    )
    pre_cost = step_cost(model, prec, hw, eng, pre_shape, memo=memo)
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
            # prompts of the other clients admitted per step: a request never decodes while its
            # own prompt is prefilled (that is its TTFT), so C = 1 decodes alone
            others = (conc - 1.0) / conc
            pre_tokens = rate * isl_f * tpot * tokens_per_step * others
            new_dec = np.maximum(conc - rate * ttft, 1.0)
            c_dec = 0.5 * c_dec + 0.5 * np.minimum(new_dec, conc)
        mixed = step(c_dec, pre_tokens)
        drafts = draft_time(c_dec)
        tpot = (mixed.total_s + drafts) / tokens_per_step
        # TTFT: wait half a step for admission, then the prompt's chunks, each a mixed step;
        # queueing when the prefill budget per step is nearly used by other requests' prompts
        budget = np.maximum(eng.max_num_tokens - c_dec / micro, 0.1 * eng.max_num_tokens)
        load = np.clip(pre_tokens / micro / budget, 0.0, 0.9)
        chunk_steps = np.ceil(isl_f / budget)
        ttft_steady = (0.5 + chunk_steps / (1.0 - load)) * tpot / np.maximum(micro, 1.0) * 1.0 + (
            pp - 1.0
        ) * tpot / micro
        ttft = np.maximum(ttft_steady, prefill_alone)
    burst = np.zeros(shape)
    decode_alone = step(conc, np.zeros(shape), 1.0)  # every running sequence, no prompt
    if benchmark_burst:
        # a share `ttft_burst` of the run in synchronized cohorts (docstring): the wave's mean
        # wait before the first token, the rest of the wave stalls the decode, whose steps
        # carry no prompt
        share = eng.ttft_burst
        wave = startup_wave(model, prec, hw, eng, axes, isl_f, osl_f, conc, memo)
        full = decode_alone if k_spec == 0 else step(conc, np.zeros(shape))
        plain = (full.total_s + draft_time(conc)) / tokens_per_step
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
    mixed_break = dict(mixed.by_class)
    mixed_break["other"] = mixed_break["other"] + drafts
    mixed_break = {k: v / tokens_per_step for k, v in mixed_break.items()}
    feasible = reason == ""
    finite = np.isfinite(tpot) & np.isfinite(ttft)
    reason = np.where(feasible & ~finite, "numeric", reason)
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
        prefill_breakdown={k: v * (n_chunks + pp - 1.0) for k, v in pre_cost.by_class.items()},
        mixed_breakdown=mixed_break,
        num_gpus=gpus_per_replica * dp,
        step_decode_seqs=np.broadcast_to(c_dec, shape),
        step_prefill_tokens=np.broadcast_to(pre_tokens, shape),
    )


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
    start at once): full steps of ``max_num_tokens`` per scheduling rank (each attention-DP rank
    fills its own budget; the MoE sees them all), streaming through the pp stages."""
    ranks = scheduling_ranks(axes["tp"], axes["attention_dp"]).astype(float)
    tokens = conc * isl
    per_step = np.minimum(tokens, ranks * eng.max_num_tokens)
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


def evaluate_static(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    *,
    tp: Array | int = 1,
    pp: Array | int = 1,
    ep: Array | int = 1,
    attention_dp: Array | bool = False,
    cp: Array | int = 1,
    isl: Array | int,
    osl: Array | int,
    batch: Array | int,
) -> dict[str, Array]:
    """Static batching (TensorRT-LLM <= v0.9 ``gptSessionBenchmark``): a batch of B requests is
    prefilled together, then decoded for OSL steps; throughput = B x OSL / (prefill + OSL decode
    steps). Returns arrays: ttft_s (the batch's prefill), tpot_s, output_tok_s_per_gpu,
    feasible, reason, fits_in_memory."""
    tp, pp, ep, cp = (np.asarray(x, dtype=np.int64) for x in (tp, pp, ep, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    isl_f, osl_f, b = (np.asarray(x, dtype=float) for x in (isl, osl, batch))
    shape = np.broadcast(tp, pp, ep, cp, adp, isl_f, osl_f, b).shape
    tp, pp, ep, cp, adp, isl_f, osl_f, b = (
        np.broadcast_to(x, shape) for x in (tp, pp, ep, cp, adp, isl_f, osl_f, b)
    )
    reason = plan_feasibility(model, tp, pp, ep, adp, cp)
    ok = reason == ""
    tp, ep, cp, pp = (np.where(ok, x, 1) for x in (tp, ep, cp, pp))
    micro = pp.astype(float)
    fits = static_batch_fits(model, hw, prec, eng, tp, pp, ep, adp, cp, isl_f + osl_f, b)
    reason = np.where(ok & ~fits, "oom", reason)
    axes: dict[str, Any] = {"tp": tp, "pp": pp, "ep": ep, "cp": cp, "attention_dp": adp}
    pre_shape = step_shape(**axes, isl=isl_f, osl=osl_f, prefill_tokens=b * isl_f, prefill_seqs=b)
    pre = step_cost(model, prec, hw, eng, pre_shape).total_s
    dec = step_cost(
        model, prec, hw, eng, step_shape(**axes, isl=isl_f, osl=osl_f, decode_seqs=b)
    ).total_s
    # a micro-batch holds whole sequences: min(pp, B) of them cross the pp stages
    batches = np.minimum(micro, np.maximum(b, 1.0))
    hop_pre = pipeline_hops(model, hw, prec, eng, pp, b * isl_f, batches)
    hop_dec = pipeline_hops(model, hw, prec, eng, pp, b, batches)
    # no request_overhead_s: the static C++ session benchmark times the engine alone (no server)
    ttft = micro * pre + hop_pre
    tpot = micro * dec + hop_dec
    total = ttft + np.maximum(osl_f - 1.0, 0.0) * tpot
    return {
        "ttft_s": ttft,
        "tpot_s": tpot,
        "output_tok_s_per_gpu": b * osl_f / total / (tp * pp),
        "total_tok_s_per_gpu": b * (isl_f + osl_f) / total / (tp * pp),
        "tok_s_per_user": 1.0 / tpot,
        "feasible": reason == "",
        "reason": reason,
        "fits_in_memory": fits,
    }
