"""Disaggregated serving: prefill workers and decode workers with their own plans, the KV
transfer between them and the balance of the two pools (DESIGN.md). ``frontier`` searches over
these; ``evaluate_disaggregated`` prices one given deployment (``estimate --disagg``).

* prefill worker: batches of b prompts (b x ISL <= max_num_tokens when ISL fits) in chunks of
  at most max_num_tokens, through pp stages: latency (n_chunks + pp - 1) x stage time where the
  engine overlaps one prompt's chunks (``pp_prefill_overlap``), else n_chunks x pp
  (+ the per-request overhead), rate R_p = b / (n_chunks x stage time) requests/s;
* decode worker: a decode-only step of C sequences at mean context ISL + OSL / 2 (no prefill
  chunks mixed in): TPOT = pp x stage time + PP hops, R_d = C / ((OSL - 1) x TPOT) requests/s;
  C is at most what the worker holds (``serving.memory.concurrency_cap``): clients beyond it
  wait for a slot, and the closed loop puts their wait in TTFT;
* KV transfer: the request's KV bytes over min(g_p, g_d) parallel links, NVLink when both pools
  fit in one scale-up domain, else the scale-out NIC; TTFT = prefill latency + transfer;
* x prefill : y decode workers, x g_p + y g_d <= N, chosen to maximize
  min(x R_p, y R_d) x OSL / (x g_p + y g_d) (``balance_pools``); per-GPU throughput counts
  both pools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..attention_kernels import sparse_latent_bytes
from ..comm import collective_time
from ..errors import SpecError
from ..ops import OP_CLASSES, draft_layers, kv_bytes_per_sequence_per_gpu, step_shape
from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import NO_SCALEOUT_NETWORK, crosses_domain_without_network, plan_feasibility
from ..specs.precision import Precision
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
    PipelinedStep,
    draft_time,
    lone_prompt_passes,
    pipelined_step,
    speculating_engine,
    step_cost,
    tokens_per_step,
)

Array = np.ndarray


@dataclass
class PrefillWorkers:
    """Prefill workers (arrays broadcast over plans x batch sizes): request latency (s, with
    the per-request overhead), requests/s, GPUs per worker, whether the batch's KV fits (and
    why not), and seconds by op class of one request's prefill."""

    latency_s: Array
    rate_req_s: Array
    gpus: Array
    fits: Array
    by_class: dict[str, Array]
    # why a worker's batch has no KV room ("" where it fits; ``serving.memory_reason``, its
    # ``oom`` as prefill_batch_oom: the batch's prompts)
    no_kv: Array


def prefill_workers(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    *,
    tp: Array,
    pp: Array,
    ep: Array,
    cp: Array,
    attention_dp: Array,
    batch: Array | int,
    isl: int,
    spec_tokens: int = 0,
) -> PrefillWorkers:
    """Prefill workers running batches of ``batch`` prompts of ``isl`` tokens (module doc);
    with ``spec_tokens`` drafts they hold the model's MTP blocks (``ops.draft_layers``) too."""
    eng = for_gpu(eng, hw)  # (the runtime's limits on hw: specs.gpu_defaults)
    b = np.asarray(batch, dtype=float)
    tp, pp, ep, cp = (np.asarray(v, dtype=np.int64) for v in (tp, pp, ep, cp))
    # a prompt lives on one scheduling rank (attention-DP: one of tp, each with its own token
    # budget, ``rank_token_budget``): the busiest rank holds ceil(b / ranks) prompts, in chunks
    # of at most that budget; the step carries every rank's chunk (the MoE layers see them all)
    ranks = scheduling_ranks(tp, np.asarray(attention_dp, dtype=bool)).astype(float)
    per_rank = np.ceil(b / ranks)
    budget = rank_token_budget(eng, ranks)
    rank_tokens = np.minimum(per_rank * isl, budget)
    tokens = np.minimum(b * isl, ranks * budget)
    n_chunks = np.ceil(per_rank * isl / rank_tokens)
    shape = step_shape(
        tp,
        pp,
        ep,
        cp,
        attention_dp,
        isl=isl,
        osl=0.0,
        prefill_tokens=tokens,
        micro_batches=1.0,
        rank_prefill_tokens=rank_tokens,
    )
    stage = step_cost(model, prec, hw, eng, shape)
    stage_s = np.asarray(stage.total_s)
    # a batch's chunks through the stages (``serving.step.lone_prompt_passes``); under load the
    # stages fill with other batches either way (the rate)
    steps = lone_prompt_passes(eng, n_chunks, pp)
    w, kv, _, usable, max_conc = memory_fit(
        model, hw, prec, eng, tp, pp, ep, attention_dp, cp, np.asarray(float(isl)), spec_tokens
    )
    plan = (tp, pp, attention_dp)
    no_kv = memory_reason(hw, eng, w, usable, kv, plan, spec_tokens > 0, per_rank)
    by_class = {c: np.broadcast_to(stage.by_class[c], stage_s.shape) * steps for c in OP_CLASSES}
    return PrefillWorkers(
        latency_s=steps * stage_s + eng.request_overhead_s,
        rate_req_s=b / (n_chunks * stage_s),
        gpus=(tp * pp).astype(float),
        fits=max_conc >= b,
        by_class=by_class,
        no_kv=np.where(no_kv == "oom", "prefill_batch_oom", no_kv),
    )


def check_decode_length(osl: int) -> None:
    """The decode pool makes tokens 2..osl: disaggregation needs at least two output tokens."""
    if osl < 2:
        raise SpecError(
            "disaggregated serving needs osl >= 2 (the decode pool makes tokens 2..osl), got "
            f"osl={osl}"
        )


@dataclass
class DecodeWorkers:
    """Decode workers (arrays over plans x concurrency): TPOT, requests/s, GPUs per worker,
    the most sequences that fit, bytes on the busiest GPU, seconds per step by op class."""

    tpot_s: Array
    rate_req_s: Array
    gpus: Array
    max_concurrency: Array
    running: Array
    memory_per_gpu_bytes: Array
    weight_bytes_per_gpu: Array
    kv_bytes_per_gpu: Array
    by_class: dict[str, Array]
    no_kv: Array  # why not one sequence fits ("" where one does; ``serving.memory_reason``)


def decode_workers(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    *,
    tp: Array,
    pp: Array,
    ep: Array,
    cp: Array,
    attention_dp: Array,
    concurrency: Array | float,
    isl: int,
    osl: int,
    spec_tokens: int = 0,
    spec_acceptance: float = 0.0,
) -> DecodeWorkers:
    """Decode workers offered ``concurrency`` sequences each (module doc): each runs at most
    what its memory and batch limit hold (``serving.memory.concurrency_cap``, at least one;
    ``running``), the others wait for a slot, as in ``serving.evaluate``. With speculative
    decoding (MTP, as ``serving.evaluate``): a step verifies 1 + k query tokens per sequence and
    runs k drafts (``step.draft_time``), and yields ``step.tokens_per_step`` tokens."""
    check_decode_length(osl)
    eng = for_gpu(eng, hw)  # (the runtime's limits on hw: specs.gpu_defaults)
    yield_per_step = tokens_per_step(spec_tokens, spec_acceptance)  # checks them
    tp, pp, ep, cp = (np.asarray(v, dtype=np.int64) for v in (tp, pp, ep, cp))
    w, kv, workspace, usable, max_conc = memory_fit(
        model, hw, prec, eng, tp, pp, ep, attention_dp, cp, kv_context(eng, isl, osl), spec_tokens
    )
    no_kv = memory_reason(hw, eng, w, usable, kv, (tp, pp, attention_dp), spec_tokens > 0)
    cap = np.maximum(concurrency_cap(eng, max_conc, tp, attention_dp), 1.0)
    conc = np.minimum(np.asarray(concurrency, dtype=float), cap)

    def step_of(query: float) -> PipelinedStep:
        return pipelined_step(
            model,
            prec,
            hw,
            eng,
            tp=tp,
            pp=pp,
            ep=ep,
            cp=cp,
            attention_dp=attention_dp,
            isl=isl,
            osl=osl,
            decode_seqs=conc,
            decode_query=query,
        )

    step = step_of(1.0 + spec_tokens)
    drafts = 0.0
    if spec_tokens:
        plain = step_of(1.0).total_s
        drafts = draft_time(model, eng, plain, pp, spec_tokens, conc, tp, attention_dp)
    tpot = (step.total_s + drafts) / yield_per_step
    shape = np.shape(tpot)
    return DecodeWorkers(
        tpot_s=tpot,
        rate_req_s=conc / ((osl - 1.0) * tpot),
        gpus=(tp * pp).astype(float),
        max_concurrency=max_conc,
        running=np.broadcast_to(conc, shape),
        memory_per_gpu_bytes=w + running_kv_bytes(kv, conc, tp, attention_dp) + workspace,
        weight_bytes_per_gpu=w,
        kv_bytes_per_gpu=running_kv_bytes(kv, conc, tp, attention_dp),
        by_class={
            c: np.broadcast_to((v + (drafts if c == "other" else 0.0)) / yield_per_step, shape)
            for c, v in step.by_class.items()
        },
        no_kv=no_kv,
    )


def kv_transfer_time(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    gpus_prefill: Array,
    gpus_decode: Array,
    gpus_total: Array,
    isl: int,
    spec_tokens: int = 0,
) -> tuple[Array, Array]:
    """(seconds to move one request's KV cache from its prefill to its decode worker, whether
    the deployment fits in one scale-up domain): the bytes over min(g_p, g_d) parallel links;
    with ``spec_tokens`` drafts, the MTP blocks' cache too (``ops.draft_layers``); DSA layers'
    FP8 latent in the layout of the engine's kernels (``attention_kernels.sparse_latent_bytes``)."""
    one, ctx = np.asarray(1), np.asarray(float(isl))
    drafts = draft_layers(model, spec_tokens)
    lay = sparse_latent_bytes(model, hw, prec, eng)  # (DSA's FP8 cache in its kernels' layout)
    kv_req = float(
        kv_bytes_per_sequence_per_gpu(
            model, prec, ctx, one, one, np.asarray(False), one, drafts=drafts, sparse_latent=lay
        )
    )
    links = np.minimum(gpus_prefill, gpus_decode)
    inside = np.asarray(gpus_total) <= hw.scaleup_domain_size
    group = np.where(inside, 2, hw.scaleup_domain_size + 1)
    n = np.broadcast(links, inside).shape
    return collective_time("p2p", np.full(n, kv_req) / links, group, hw, eng), inside


def balance_pools(
    rate_prefill: Array,
    rate_decode: Array,
    gpus_prefill: Array,
    gpus_decode: Array,
    num_gpus: int,
) -> tuple[Array, Array, Array, Array]:
    """Best integer split into x prefill and y decode workers within ``num_gpus`` GPUs.

    Inputs broadcast: requests/s of one prefill worker (R_p) and of one decode worker (R_d), and
    the GPUs each worker uses (g_p, g_d). For each y in 1..N, x is floor or ceil of the balance
    point y R_d / R_p (clipped to what the budget leaves); the pair maximizing requests/s per
    GPU, min(x R_p, y R_d) / (x g_p + y g_d), wins. Returns (x, y, requests/s, GPUs used);
    zeros where not even one worker of each fits.

    Example (R_p = 10, R_d = 5 req/s, g_p = 1, g_d = 2, 8 GPUs: 1 prefill : 2 decode, 10 req/s
    on 5 GPUs):
        >>> [float(v) for v in balance_pools(10.0, 5.0, 1, 2, 8)]
        [1.0, 2.0, 10.0, 5.0]
    """
    rp, rd, gp, gd = np.broadcast_arrays(
        *(
            np.asarray(v, dtype=float)
            for v in (rate_prefill, rate_decode, gpus_prefill, gpus_decode)
        )
    )
    shape = rp.shape
    y = np.arange(1, int(num_gpus) + 1, dtype=float).reshape((1,) * len(shape) + (-1,))
    rp_, rd_, gp_, gd_ = (v[..., None] for v in (rp, rd, gp, gd))
    x_max = np.floor((num_gpus - y * gd_) / gp_)
    x_star = y * rd_ / np.maximum(rp_, 1e-30)
    fits = x_max >= 1

    x_cap = np.maximum(x_max, 1.0)
    y_rd, y_gd = y * rd_, y * gd_

    def per_gpu(x: Array) -> tuple[Array, Array]:
        x = np.minimum(np.maximum(x, 1.0), x_cap)
        return x, np.where(fits, np.minimum(x * rp_, y_rd) / (x * gp_ + y_gd), -1.0)

    x_lo, per_lo = per_gpu(np.floor(x_star))
    x_hi, per_hi = per_gpu(np.ceil(x_star))
    use_hi = per_hi > per_lo
    per = np.where(use_hi, per_hi, per_lo)
    k = np.argmax(per, axis=-1)[..., None]
    best = np.take_along_axis(per, k, -1)[..., 0]
    bx = np.take_along_axis(np.where(use_hi, x_hi, x_lo), k, -1)[..., 0]
    by = (k[..., 0] + 1).astype(float)
    none = best < 0
    bx, by = np.where(none, 0.0, bx), np.where(none, 0.0, by)
    gpus = bx * gp + by * gd
    return bx, by, np.where(none, 0.0, best * gpus), gpus


def best_split(
    rate_p: Array, g_p: Array, rate_d: Array, g_d: Array, num_gpus: int
) -> tuple[Array, ...]:
    """For each decode configuration, the prefill candidate and x : y split with the most
    requests/s per GPU (chunks of decode rows bound the (rows x candidates x y) arrays)."""
    n = len(rate_d)
    out = [np.zeros(n) for _ in range(4)] + [np.zeros(n, dtype=np.int64)]
    step = max(1, 200_000 // max(len(rate_p) * int(num_gpus), 1))  # cache-sized blocks
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        x, y, req_s, gpus = balance_pools(
            rate_p[None, :], rate_d[lo:hi, None], g_p[None, :], g_d[lo:hi, None], num_gpus
        )
        per = np.where(gpus > 0, req_s / np.maximum(gpus, 1), -1.0)
        k = np.argmax(per, axis=1)
        rows = np.arange(hi - lo)
        for o, v in zip(out, (x, y, req_s, gpus)):
            o[lo:hi] = v[rows, k]
        out[4][lo:hi] = k
    return tuple(out)


def pooled_outcome(
    hw: HardwareSpec,
    reason: Array,
    gpus: Array,
    inside_domain: Array,
    tpot_s: Array,
    requests_per_s: Array,
    isl: int,
    osl: int,
) -> tuple[Array, Array, Array, Array]:
    """(reason, feasible, output tok/s/GPU, total tok/s/GPU) of deployments of both pools:
    ``reason`` gains the network rule for pools spanning scale-up domains and a numeric check;
    per-GPU throughput counts the GPUs of both pools."""
    no_net = crosses_domain_without_network(hw, np.where(inside_domain, 0, gpus))
    reason = np.where((reason == "") & no_net, NO_SCALEOUT_NETWORK, reason)
    reason = np.where((reason == "") & ~np.isfinite(tpot_s), "numeric", reason)
    feasible = reason == ""
    safe_g = np.maximum(gpus, 1.0)
    out = np.where(feasible, requests_per_s * osl / safe_g, 0.0)
    total = np.where(feasible, requests_per_s * (isl + osl) / safe_g, 0.0)
    return reason, feasible, out, total


# the prefill pool's utilization is held below this (the queue's wait diverges at 1; beyond it
# the closed loop stretches the cycle instead)
MAX_PREFILL_UTILIZATION = 0.95
CLOSED_LOOP_ITERATIONS = 60  # bisection halvings: the bracket ends 2^-60 of its width apart


def closed_loop_ttft(
    ttft_alone: Array,
    tpot: Array,
    *,
    clients: Array,
    prefill_capacity: Array,
    decode_capacity: Array,
    batch_service_s: Array,
    osl: int,
) -> tuple[Array, Array]:
    """TTFT and requests/s of ``clients`` closed-loop clients of a disaggregated deployment.

    A client cycles through TTFT and OSL - 1 decode steps, so requests/s X = clients /
    (TTFT + (OSL - 1) TPOT), at most the slower pool's capacity. Below it, prompts wait in the
    prefill pool's queue: utilization rho = X / prefill capacity, mean wait rho / (2 (1 - rho))
    batch services (M/D/1). At capacity the cycle stretches to clients / capacity and the
    surplus waits before the first token. The TTFT this implies, h(TTFT), falls as TTFT rises
    (a longer cycle offers less load), so TTFT = h(TTFT) has one root, bracketed by h's least
    and greatest values and found by bisection (``CLOSED_LOOP_ITERATIONS`` halvings: converged
    whatever the slope, where damped iteration can oscillate).

    Example: 100 clients, 1 s prefill alone, 10 ms TPOT, OSL 101, capacity 10 req/s in both
    pools: the unqueued cycle is 2 s (50 req/s offered), so the loop saturates at 10 req/s and
    TTFT stretches to 100 / 10 - 1 = 9 s.
    """
    decode_s = max(osl - 1, 0) * np.asarray(tpot, dtype=float)
    capacity = np.maximum(np.minimum(prefill_capacity, decode_capacity), 1e-30)
    alone = np.asarray(ttft_alone, dtype=float)
    stretched = clients / capacity - decode_s
    max_wait = MAX_PREFILL_UTILIZATION / (2.0 * (1.0 - MAX_PREFILL_UTILIZATION))

    def implied(ttft: Array) -> Array:
        rate = np.minimum(clients / np.maximum(ttft + decode_s, 1e-30), capacity)
        rho = np.clip(rate / np.maximum(prefill_capacity, 1e-30), 0.0, MAX_PREFILL_UTILIZATION)
        return np.maximum(alone + rho / (2.0 * (1.0 - rho)) * batch_service_s, stretched)

    lo = np.maximum(alone, stretched)  # h(lo) >= lo
    hi = np.maximum(alone + max_wait * batch_service_s, stretched)  # h(hi) <= hi
    lo, hi = np.broadcast_arrays(lo, hi)
    lo, hi = lo.astype(float), hi.astype(float)
    for _ in range(CLOSED_LOOP_ITERATIONS):
        mid = 0.5 * (lo + hi)
        up = implied(mid) >= mid
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    ttft = 0.5 * (lo + hi)
    rate = np.minimum(clients / np.maximum(ttft + decode_s, 1e-30), capacity)
    return ttft, rate


@dataclass
class DisaggregatedResult:
    """Serving metrics of disaggregated deployments (arrays, SI units)."""

    ttft_s: Array
    tpot_s: Array
    tok_s_per_user: Array
    output_tok_s_per_gpu: Array
    total_tok_s_per_gpu: Array
    requests_per_s: Array
    num_gpus: Array
    kv_transfer_s: Array
    memory_per_gpu_bytes: Array
    weight_bytes_per_gpu: Array
    kv_bytes_per_gpu: Array
    max_concurrency: Array
    running_concurrency: Array  # sequences each decode worker runs (the others queue)
    fits_in_memory: Array
    feasible: Array
    reason: Array
    prefill_breakdown: dict[str, Array]
    decode_breakdown: dict[str, Array]


def evaluate_disaggregated(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    *,
    prefill_plan: Mapping[str, Array | int | bool],
    decode_plan: Mapping[str, Array | int | bool],
    prefill_count: Array | int,
    decode_count: Array | int,
    prefill_batch: Array | int,
    concurrency: Array | int,
    isl: int,
    osl: int,
    spec_tokens: int = 0,
    spec_acceptance: float = 0.0,
    prefill_engine: EngineConstants | None = None,
) -> DisaggregatedResult:
    """``prefill_count`` prefill workers (plan ``prefill_plan``: keys tp, pp, ep, cp,
    attention_dp) batching ``prefill_batch`` prompts, feeding ``decode_count`` decode workers
    (``decode_plan``), each offered ``concurrency`` clients and running at most what it holds
    (``running_concurrency``; the other clients queue, their wait inside TTFT). Requests/s is
    the slower pool's rate; TTFT = prefill latency + KV transfer; TPOT the decode step per
    token it yields (``spec_tokens`` MTP drafts, each accepted with ``spec_acceptance``, as in
    ``serving.evaluate``). Throughput per GPU counts both pools. ``prefill_engine`` prices the
    prefill workers where their engine settings differ from ``eng``'s. The frontier's disaggregated
    points are these numbers at the balanced split.

    Example (one TP4 prefill worker feeding one TP4 decode worker of Llama-3.1-70B):
        >>> from llm_codesign.specs import load_hardware, load_model, parse_precision
        >>> from llm_codesign.specs.engine import load_engine
        >>> plan = {"tp": 4, "pp": 1, "ep": 1, "cp": 1, "attention_dp": False}
        >>> r = evaluate_disaggregated(load_model("llama-3.1-70b"), load_hardware("h200-sxm"),
        ...     parse_precision("fp8"), load_engine(), prefill_plan=plan, decode_plan=plan,
        ...     prefill_count=1, decode_count=1, prefill_batch=1, concurrency=64, isl=1024,
        ...     osl=1024)
        >>> int(r.num_gpus), bool(r.feasible)
        (8, True)
    """
    eng = speculating_engine(for_gpu(eng, hw), spec_tokens)  # (the runtime's limits on hw)
    # the prefill pool's own engine where its settings differ (a recipe's MoE dispatch family)
    peng = eng  # the prefill workers' engine: the decode pool's unless given
    if prefill_engine is not None:
        peng = speculating_engine(for_gpu(prefill_engine, hw), spec_tokens)
    keys = ("tp", "pp", "ep", "cp", "attention_dp")
    pplan = {k: np.asarray(prefill_plan[k]) for k in keys}
    dplan = {k: np.asarray(decode_plan[k]) for k in keys}
    x = np.asarray(prefill_count, dtype=float)
    y = np.asarray(decode_count, dtype=float)
    reason = plan_feasibility(
        model, *(pplan[k] for k in ("tp", "pp", "ep", "attention_dp", "cp")), eng.moe_partial_ep
    )
    dreason = plan_feasibility(
        model, *(dplan[k] for k in ("tp", "pp", "ep", "attention_dp", "cp")), eng.moe_partial_ep
    )
    reason = np.where(reason == "", dreason, reason)
    ok = reason == ""
    pplan = {k: np.where(ok, v, 1 if k != "attention_dp" else v) for k, v in pplan.items()}
    dplan = {k: np.where(ok, v, 1 if k != "attention_dp" else v) for k, v in dplan.items()}
    pw = prefill_workers(
        model, hw, prec, peng, **pplan, batch=prefill_batch, isl=isl, spec_tokens=spec_tokens
    )
    dw = decode_workers(
        model, hw, prec, eng, **dplan, concurrency=concurrency, isl=isl, osl=osl,
        spec_tokens=spec_tokens, spec_acceptance=spec_acceptance,
    )  # fmt: skip
    gpus = x * pw.gpus + y * dw.gpus
    transfer, inside = kv_transfer_time(
        model, hw, prec, eng, pw.gpus, dw.gpus, gpus, isl, spec_tokens
    )
    conc = np.asarray(concurrency, dtype=float)
    ttft, req_s = closed_loop_ttft(
        pw.latency_s + transfer,
        dw.tpot_s,
        clients=y * conc,
        prefill_capacity=x * pw.rate_req_s,
        decode_capacity=y * dw.rate_req_s,
        batch_service_s=np.asarray(prefill_batch, dtype=float) / pw.rate_req_s,
        osl=osl,
    )
    # clients beyond a decode worker's running batch wait for a slot (inside TTFT, by the closed
    # loop); only a worker that holds no sequence at all does not fit
    fits = pw.fits & (conc <= dw.max_concurrency)
    reason = np.where(reason == "", pw.no_kv, reason)  # (the weights, the step, the batch)
    reason = np.where(reason == "", dw.no_kv, reason)
    wide = crosses_domain_without_network(hw, np.maximum(pplan["tp"], dplan["tp"]))
    reason = np.where((reason == "") & wide, NO_SCALEOUT_NETWORK, reason)
    reason, feasible, out, total = pooled_outcome(
        hw, reason, gpus, inside, dw.tpot_s, req_s, isl, osl
    )
    return DisaggregatedResult(
        ttft_s=ttft,
        tpot_s=dw.tpot_s,
        tok_s_per_user=1.0 / dw.tpot_s,
        output_tok_s_per_gpu=out,
        total_tok_s_per_gpu=total,
        requests_per_s=req_s,
        num_gpus=gpus,
        kv_transfer_s=transfer,
        memory_per_gpu_bytes=dw.memory_per_gpu_bytes,
        weight_bytes_per_gpu=dw.weight_bytes_per_gpu,
        kv_bytes_per_gpu=dw.kv_bytes_per_gpu,
        max_concurrency=dw.max_concurrency,
        running_concurrency=dw.running,
        fits_in_memory=fits,
        feasible=feasible,
        reason=reason,
        prefill_breakdown=pw.by_class,
        decode_breakdown=dw.by_class,
    )
