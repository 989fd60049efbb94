"""Public API: one estimate, with its assumptions and an explanation of what bounds each op."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import attention_kernels as kernels
from .calibrate import calibrated_engine, provenance, resolve_hardware
from .comm import dispatch_family
from .errors import SpecError
from .explore.operating import infeasible_text, queue_note
from .explore.result import to_dataframe
from .mixers import prefill_attention_efficiency
from .moe_kernels import grouped_efficiency, moe_kernel_path
from .ops import step_shape
from .serving import (
    DisaggregatedResult,
    GridResult,
    economics,
    evaluate,
    evaluate_disaggregated,
    pipelined_step,
    step_cost,
)
from .serving.balance import context_hold_note, holds_context
from .serving.memory import engine_kv_bytes, memory_notes, rank_token_budget, scheduling_ranks
from .serving.sim_disagg import simulate_disaggregated
from .serving.simulate import SimulationResult, simulate
from .serving.step import graph_padded, overlap_note, tokens_per_step
from .specs.accuracy import accuracy_for
from .specs.checkpoint import default_precision, preset_weights
from .specs.context import context_note
from .specs.engine import EngineConstants, load_engine
from .specs.hardware import HardwareSpec
from .specs.model import ModelSpec, load_model
from .specs.plan import (
    DisaggregatedPlan,
    ParallelPlan,
    crosses_domain_without_network,
    expert_slots_note,
)
from .specs.precision import Precision, parse_precision
from .specs.traffic import Traffic
from .specs.uncertainty import config_class, shipped_error_bands
from .specs.workload import Workload, check_speculative


@dataclass
class Estimate:
    """A serving prediction for one configuration. ``to_dict`` follows DESIGN.md's contract."""

    model: ModelSpec
    hardware: HardwareSpec
    precision: Precision
    plan: ParallelPlan | DisaggregatedPlan
    workload: Workload
    engine: EngineConstants
    ttft_ms: float
    tpot_ms: float
    tok_s_per_user: float
    output_tok_s_per_gpu: float
    total_tok_s_per_gpu: float
    num_gpus: int
    fits_in_memory: bool
    memory_per_gpu_gb: float
    weights_per_gpu_gb: float
    kv_cache_per_gpu_gb: float
    max_concurrency: int
    feasible: bool
    reason: str
    breakdown: dict[str, dict[str, float]]
    ops: list[dict[str, Any]] = field(default_factory=list)
    mixer_savings: dict[str, Any] | None = None
    accuracy: dict[str, Any] = field(default_factory=dict)  # specs.accuracy.accuracy_for
    economics: dict[str, Any] = field(default_factory=dict)  # serving.economics
    notes: list[str] = field(default_factory=list)  # what a reader must know to read the numbers
    precision_note: str = ""  # where a default precision came from (the checkpoint's config)
    uncertainty: dict[str, Any] = field(default_factory=dict)  # how far to trust it (bands)
    simulation: dict[str, Any] | None = None  # the simulation of ``traffic``, when one ran
    running_concurrency: float | None = None  # running batch (serving.admission); None: disagg

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.id,
            "hardware": self.hardware.id,
            "precision": self.precision.id,
            "precision_note": self.precision_note,
            "engine": self.engine.id,
            "plan": self.plan.to_dict(),
            "mode": "disaggregated" if isinstance(self.plan, DisaggregatedPlan) else "aggregated",
            "isl": self.workload.isl,
            "osl": self.workload.osl,
            "concurrency": self.workload.concurrency,
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "tok_s_per_user": self.tok_s_per_user,
            "output_tok_s_per_gpu": self.output_tok_s_per_gpu,
            "total_tok_s_per_gpu": self.total_tok_s_per_gpu,
            "num_gpus": self.num_gpus,
            "fits_in_memory": self.fits_in_memory,
            "memory_per_gpu_gb": self.memory_per_gpu_gb,
            "weights_per_gpu_gb": self.weights_per_gpu_gb,
            "kv_cache_per_gpu_gb": self.kv_cache_per_gpu_gb,
            "max_concurrency": self.max_concurrency,
            "running_concurrency": self.running_concurrency,
            "feasible": self.feasible,
            "reason": self.reason,
            "breakdown": self.breakdown,
            "ops": self.ops,
            "mixer_savings": self.mixer_savings,
            "accuracy": self.accuracy,
            "economics": self.economics,
            "notes": self.notes,
            "uncertainty": self.uncertainty,
            "units": UNITS,
            "assumptions": self.assumptions(),
        } | ({"simulation": self.simulation} if self.simulation is not None else {})

    def to_pandas(self) -> Any:
        """A one-row pandas DataFrame (``a.b`` columns; ops and assumptions: ``to_dict``)."""
        d = {k: v for k, v in self.to_dict().items() if k not in ("ops", "assumptions")}
        return to_dataframe([d])

    def assumptions(self) -> dict[str, Any]:
        hw = self.hardware
        rate = hw.compute_rate_class(self.precision.compute_class)
        att = kernels.attention_rate_class(hw, self.precision.attention_class)
        # the measured rate capping GQA decode over an FP8 cache (None: no FP8 cache, or none)
        fp8 = kernels.fp8_kv_decode_rate(hw, self.engine) if self.precision.kv_fp8 else None
        pl, experts = getattr(self.plan, "decode", self.plan), self.precision.weights.id
        return {
            "hardware_file": hw.id,
            "peak_flops_per_s": hw.peak_flops(rate),
            "compute_class": rate,
            "gemm_efficiency": asdict(hw.gemm_efficiency_for(rate)),
            "grouped_gemm_efficiency": asdict(grouped_efficiency(hw, self.engine, rate, experts)),
            "hbm_bytes_per_s": hw.hbm_bytes_per_s,
            "hbm_efficiency": asdict(hw.hbm_efficiency),
            "device_memory_bytes": hw.device_memory,
            "device_memory_source": hw.device_memory_source or "hbm_bytes (no driver total)",
            "scaleup_bytes_per_s_per_direction": hw.scaleup_bytes_per_s,
            "scaleup_efficiency": asdict(hw.scaleup_efficiency),
            "attention_decode_efficiency": {"compute_class": att}
            | asdict(kernels.decode_attention_efficiency(hw, att, self.engine)),
            "fp8_kv_decode": asdict(fp8) if fp8 else None,
            "attention_prefill_efficiency": {"compute_class": att}
            | prefill_attention_efficiency(self.model, self.engine.attn_prefill_efficiency),
            # the fused-MoE kernels priced (the engine's moe_kernels for these experts on this GPU)
            "moe_kernel_path": self.model.moe and moe_kernel_path(hw, self.engine, experts),
            # the MoE dispatch/combine kernels priced for (the decode pool's) attention-DP ranks
            "moe_dispatch": dispatch_family(hw, self.engine, pl.tp, pl.ep)
            if self.model.moe
            else None,
            "precision": self.precision.summary(),
            "engine_constants": self.engine.to_dict(),
            "engine_sources": dict(self.engine.sources),
            "serving_model": (
                "aggregated in-flight batching, closed loop (DESIGN.md); TPOT = mixed step time"
            ),
            "calibration": self._calibration(),
        }

    def _calibration(self) -> list[dict[str, Any]]:
        if not self.hardware.profile_source:
            return []
        return provenance(self.hardware, self.engine)


# units of the JSON contract's numbers (field names carry them where they can)
UNITS = {
    "ttft_ms": "milliseconds",
    "tpot_ms": "milliseconds",
    "tok_s_per_user": "output tokens per second per user",
    "output_tok_s_per_gpu": "output tokens per second per GPU",
    "total_tok_s_per_gpu": "input + output tokens per second per GPU",
    "memory_per_gpu_gb": "GB (1e9 bytes)",
    "breakdown": "seconds per step, by op class",
    "ops.time_s": "seconds per step",
    "ops.flops": "FLOPs per step",
    "concurrency": "requests in flight per replica (dp replicas each hold this many)",
    "running_concurrency": "sequences a replica runs at once (the others queue)",
    "uncertainty": (
        "error = (predicted - measured) / measured over the validated rows of the class; "
        "median_abs, p90_abs and bias are fractions"
    ),
}


def _scalar(x: Any) -> float:
    v = float(np.asarray(x).reshape(-1)[0])
    return v if math.isfinite(v) else 0.0


def _graph_note(
    hw: HardwareSpec, eng: EngineConstants, plan: ParallelPlan, wl: Workload, decode_seqs: Any
) -> list[str]:
    """The note where a decode step replays a larger CUDA graph than it runs; [] where none."""
    s = step_shape(plan.tp, plan.pp, plan.ep, plan.cp, plan.attention_dp, isl=wl.isl,
                   osl=wl.osl, decode_seqs=_scalar(decode_seqs))  # fmt: skip
    ranks = _scalar(scheduling_ranks(plan.tp, plan.attention_dp))
    per, pad = _scalar(s.decode_seqs) / ranks, _scalar(graph_padded(s, hw, eng).pad_seqs) / ranks
    if pad < 0.5:
        return []
    return [
        f"decode steps replay the engine's CUDA graph of {per + pad:,.0f} sequences a rank for "
        f"the {per:,.0f} it runs ({eng.cuda_graph_batches} sizes): {pad:,.0f} dummy rows pass "
        "the dense GEMMs and the collectives (specs.cuda_graphs)"
    ]


def estimate(
    model: str | Path | ModelSpec,
    hardware: str | Path | HardwareSpec,
    precision: str | Precision | None = None,
    plan: ParallelPlan | DisaggregatedPlan | None = None,
    workload: Workload | None = None,
    *,
    engine: str | Path | EngineConstants | None = None,
    num_gpus: int | None = None,
    explain: bool = True,
    spec_tokens: int = 0,
    spec_acceptance: float = 0.0,
    power_w: float | None = None,
    usd_per_gpu_hour: float | None = None,
    traffic: Traffic | None = None,
    prefill_engine: str | Path | EngineConstants | None = None,
) -> Estimate:
    """Predict serving metrics for one configuration.

    ``num_gpus`` (optional) is the deployment size: dp is set to fill it with replicas of the
    plan (it must be a multiple of tp x pp).

    ``power_w`` (per GPU; default the GPU's TDP) and ``usd_per_gpu_hour`` give
    ``Estimate.economics``: output tokens/s per MW and $ per million output tokens.
    ``precision`` None is the checkpoint's own precision when its config states one, else BF16;
    a bare preset takes the checkpoint's block-scaled weights (``specs.checkpoint``:
    ``default_precision``, ``preset_weights``); ``Estimate.precision_note`` says which.

    ``traffic`` (optional) also replays that traffic through the engine's scheduler step by
    step (``serving.simulate``) on the same plan: ``Estimate.simulation`` holds the mean,
    p50, p90 and p99 of TTFT, TPOT and E2E, throughput and goodput (``simulation_section``).

    A :class:`DisaggregatedPlan` prices prefill and decode pools with the physics the frontier
    uses (``serving.evaluate_disaggregated``); ``workload.concurrency`` is then the clients
    offered to each decode worker (beyond what one holds, they queue: a note says so), and
    ``prefill_engine`` (optional) the prefill workers' engine where it differs from ``engine``.

    Example:
        >>> e = estimate("llama-3.1-8b", "h200-sxm", "bf16", ParallelPlan(), Workload(1024, 128, 1))
        >>> e.tpot_ms > 0
        True
    """
    check_speculative(spec_tokens, spec_acceptance)
    m, hw = load_model(model), resolve_hardware(hardware)  # (a calibration profile is a GPU)
    given = precision is not None
    precision, note = preset_weights(m, precision) if given else default_precision(m, hw)
    prec = parse_precision(precision)
    eng = load_engine(engine, hw)
    if hw.profile_source:  # a calibration profile also measured attention and latencies
        eng = calibrated_engine(eng, hw)
    plan = plan or ParallelPlan()
    wl = workload or Workload(isl=1024, osl=1024, concurrency=1)
    spec: dict[str, Any] = {"spec_tokens": spec_tokens, "spec_acceptance": spec_acceptance}
    if isinstance(plan, DisaggregatedPlan):
        if num_gpus is not None:
            raise SpecError("a disaggregated plan sets its own GPU count (num_gpus not allowed)")
        if spec_tokens and traffic is not None:
            raise SpecError("the disaggregated request simulator takes no speculative decoding")
        spec["prefill_engine"] = load_engine(prefill_engine, hw) if prefill_engine else None
        e = _estimate_disaggregated(m, hw, prec, eng, plan, wl, explain, spec)
        if traffic is not None:
            sim = simulate_disaggregated(m, hw, prec, eng, traffic, plan)
            e.simulation = simulation_section(sim, traffic)
        return replace(
            e, precision_note=note, economics=_economics(e, hw, power_w, usd_per_gpu_hour)
        )
    if num_gpus is not None:
        if num_gpus < 1 or num_gpus % plan.gpus_per_replica:
            raise SpecError(
                f"num_gpus={num_gpus} is not a multiple of tp x pp = {plan.tp} x {plan.pp} = "
                f"{plan.gpus_per_replica}"
            )
        plan = ParallelPlan(
            plan.tp, plan.pp, plan.ep, num_gpus // plan.gpus_per_replica, plan.attention_dp, plan.cp
        )
    plan.validate_for(m)
    if crosses_domain_without_network(hw, plan.tp):
        raise SpecError(
            f"plan tp={plan.tp} spans more than one scale-up domain of {hw.id} (domain size "
            f"{hw.scaleup_domain_size}) and the hardware file gives no scale-out bandwidth"
        )
    r = _evaluate_one(m, hw, prec, eng, plan, wl, **spec)

    breakdown = {
        "prefill": _phase(r.prefill_breakdown),
        "decode": _phase(r.decode_breakdown),
        "mixed_step": _phase(r.mixed_breakdown),
    }
    running = _scalar(r.running_concurrency)
    ops = explain_ops(m, hw, prec, eng, plan, wl, running) if explain else []
    est = _estimate_of(r, m, hw, prec, eng, plan, wl, breakdown, ops)
    est = replace(
        est,
        precision_note=note,
        economics=_economics(est, hw, power_w, usd_per_gpu_hour),
        notes=_notes(est, plan, running, spec_tokens)
        + _balance_notes(r, (m, prec, hw, eng), plan, wl, est, spec_tokens, spec_acceptance)
        + overlap_note(m, eng, spec_tokens)
        + memory_notes(m, prec, hw, eng, plan, wl)
        + _graph_note(hw, eng, plan, wl, r.step_decode_seqs),
        running_concurrency=running,
    )
    est.mixer_savings = mixer_savings(m, hw, prec, eng, plan, wl, est, running, spec)
    if traffic is not None:
        run = simulate(m, hw, prec, eng, traffic, **plan.to_dict(), **spec)
        est.simulation = simulation_section(run, traffic)
    return est


def simulation_section(r: SimulationResult, traffic: Traffic) -> dict[str, Any]:
    """An estimate's ``simulation``: the traffic, whether it ran, TTFT, TPOT and E2E (mean, p50,
    p90, p99 in ms), throughput, goodput, the run's size (``serving.sim_stats.summarize_run``)."""
    s = r.summary
    keys = ("ttft_ms", "tpot_ms", "e2e_ms", "request_rate_per_s", "output_tok_s_per_gpu",
            "total_tok_s_per_gpu", "mean_in_flight", "goodput", "requests", "counted_requests",
            "warmup_requests", "preemptions", "rejected", "steps", "seed", "kv_transfer_ms_mean",
            "wall_s")  # fmt: skip
    return {
        "traffic": traffic.to_dict(),
        "feasible": r.feasible,
        "reason": r.reason,
        **{k: s.get(k) for k in keys if k in s or k != "kv_transfer_ms_mean"},
        "notes": list(r.notes),
    }


def _notes(e: Estimate, plan: ParallelPlan, running: float, spec_tokens: int = 0) -> list[str]:
    """What numbers that are not a plain steady state mean: queueing, replicas, infeasibility."""
    out = list(e.notes)  # (_estimate_of's: the context window)
    c, cap = e.workload.concurrency, e.max_concurrency
    if e.feasible and cap and c > cap:
        out.append(queue_note(c, cap, "a replica can run"))
    if e.feasible and running < min(c, cap or c) - 1e-6:
        out.append(
            f"a tuned engine runs {running:,.0f} of the {c:,} clients at once (its batch limit: "
            "more would deliver fewer tokens/s, serving.admission); the others queue, and "
            "TTFT includes their wait"
        )
    if plan.dp > 1:
        out.append(
            f"concurrency {c:,} is per replica: {plan.dp} replicas serve {c * plan.dp:,} users"
        )
    if e.workload.osl <= 1:
        out.append(
            "OSL 1: no token follows the first, so there is no decode: TPOT and tok/s/user are "
            "the engine step's time and its inverse, not a per-user decode rate"
        )
    return out + _infeasible_note(e, spec_tokens)


def _infeasible_note(e: Estimate, spec_tokens: int = 0) -> list[str]:
    """The note of an estimate without a prediction: why (``explore.infeasible_text``)."""
    if e.feasible:
        return []
    why = infeasible_text(e.model, e.hardware, e.precision, e.engine, e.plan, e.reason,
                          e.max_concurrency, e.workload, spec_tokens)  # fmt: skip
    return [f"infeasible: {why}; the numbers are not a prediction"]


def _balance_notes(r: GridResult, specs: tuple, plan: ParallelPlan, wl: Workload,
                   e: Estimate, k: int, a: float) -> list[str]:  # fmt: skip
    """``serving.balance.context_hold_note`` of this estimate (``specs``: model, prec, hw, eng)."""
    m, prec, hw, eng = specs
    if not (e.feasible and holds_context(eng, plan.attention_dp)):
        return []
    kw = dict(prefill_tokens=r.step_prefill_tokens, decode_seqs=r.step_decode_seqs)
    rnd = pipelined_step(m, prec, hw, eng, tp=plan.tp, pp=plan.pp, ep=plan.ep, cp=plan.cp,
                         attention_dp=plan.attention_dp, isl=wl.isl, osl=wl.osl,
                         decode_query=1.0 + k, **kw)  # fmt: skip
    step_s = e.tpot_ms / 1e3 * tokens_per_step(k, a)  # drafts (MTP) included
    return context_hold_note(eng, plan.tp if plan.attention_dp else 1, wl.isl, *kw.values(),
                             plan.pp, step_s, rnd.prompt_step_s, 1.0 + k)  # fmt: skip


def _economics(
    e: Estimate, hw: HardwareSpec, power_w: float | None, usd: float | None
) -> dict[str, Any]:
    """``serving.economics`` of one estimate, as plain floats."""
    out = economics(e.output_tok_s_per_gpu, hw.tdp_w, power_w=power_w, usd_per_gpu_hour=usd)
    for k in ("output_tok_s_per_mw", "usd_per_million_output_tokens"):
        if out[k] is not None:
            out[k] = _scalar(out[k]) if np.isfinite(out[k]).all() else None
    return out


def _evaluate_one(
    m: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: ParallelPlan,
    wl: Workload,
    **kw: Any,
) -> GridResult:
    """``serving.evaluate`` of one aggregated plan and workload."""
    axes = plan.to_dict()  # (tp, pp, ep, dp, attention_dp, cp)
    return evaluate(m, hw, prec, eng, **axes, isl=wl.isl, osl=wl.osl, concurrency=wl.concurrency,
                    **kw)  # fmt: skip


def mixer_savings(
    m: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: ParallelPlan,
    wl: Workload,
    est: Estimate,
    running: float,
    spec: dict[str, Any],
) -> dict[str, Any] | None:
    """What a model's sparse or linear token mixers save against the same model with softmax
    attention in every layer (``ModelSpec.with_softmax_attention``), both drafting as ``spec``
    says: KV/state bytes per sequence of ISL + OSL tokens on one GPU in the engine's cache
    (``serving.memory.engine_kv_bytes``), the decode step's attention time (one query a
    sequence) at the estimate's running batch (``running``; the baseline's loop may keep
    another), TPOT and the concurrency that fits. None for a softmax-only model."""
    dense = m.with_softmax_attention()
    if dense is m:
        return None
    r = _evaluate_one(dense, hw, prec, eng, plan, wl, **spec)
    ctx, axes = float(wl.isl + wl.osl), (plan.tp, plan.pp, plan.attention_dp, plan.cp)
    k = spec["spec_tokens"]
    mine, base = (_scalar(engine_kv_bytes(x, hw, prec, eng, ctx, *axes, k)) for x in (m, dense))
    attn = est.breakdown["decode"]["attention"]
    plan_axes = dict(tp=plan.tp, pp=plan.pp, ep=plan.ep, cp=plan.cp, attention_dp=plan.attention_dp)
    base_step = pipelined_step(
        dense, prec, hw, eng, **plan_axes, isl=wl.isl, osl=wl.osl, decode_seqs=running
    )
    base_attn = _scalar(base_step.by_class["attention"])
    return {
        "layers": m.layer_mix(),
        "baseline": f"{dense.id}: {dense.layer_mix()} (softmax attention in every layer)",
        "context_tokens": ctx,
        "kv_state_bytes_per_sequence": mine,
        "baseline_kv_state_bytes_per_sequence": base,
        "decode_attention_s": attn,
        "baseline_decode_attention_s": base_attn,
        "tpot_ms": est.tpot_ms,
        "baseline_tpot_ms": _scalar(r.tpot_s) * 1e3,
        "max_concurrency": est.max_concurrency,
        "baseline_max_concurrency": int(_scalar(r.max_concurrency)),
    }


def _estimate_disaggregated(
    m: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: DisaggregatedPlan,
    wl: Workload,
    explain: bool,
    spec: dict[str, Any],
) -> Estimate:
    plan.validate_for(m)
    r = evaluate_disaggregated(
        m, hw, prec, eng, prefill_plan=plan.axes("prefill"), decode_plan=plan.axes("decode"),
        prefill_count=plan.prefill_workers, decode_count=plan.decode_workers,
        prefill_batch=plan.prefill_batch, concurrency=wl.concurrency, isl=wl.isl, osl=wl.osl,
        **spec,
    )  # fmt: skip
    decode = _phase(r.decode_breakdown)
    breakdown = {
        "prefill": _phase(r.prefill_breakdown),
        "decode": decode,
        "mixed_step": dict(decode),
    }
    running = _scalar(r.running_concurrency)
    ops = explain_ops(m, hw, prec, eng, plan.decode, wl, running) if explain else []
    est = _estimate_of(r, m, hw, prec, eng, plan, wl, breakdown, ops)
    full = est.feasible and running < wl.concurrency - 1e-6
    queue = [queue_note(wl.concurrency, running, "a decode worker holds")] * full
    notes = est.notes + queue + _infeasible_note(est) + overlap_note(m, eng, spec["spec_tokens"])
    return replace(est, notes=notes, running_concurrency=running)


def _phase(d: dict[str, np.ndarray]) -> dict[str, float]:
    """Seconds per op class of one phase, with their total."""
    out = {k: _scalar(v) for k, v in d.items()}
    out["total"] = sum(out.values())
    return out


def _estimate_of(
    r: GridResult | DisaggregatedResult,
    m: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: ParallelPlan | DisaggregatedPlan,
    wl: Workload,
    breakdown: dict[str, dict[str, float]],
    ops: list[dict[str, Any]],
) -> Estimate:
    """An :class:`Estimate` from the one-configuration result of either serving mode."""
    reason = str(np.asarray(r.reason).reshape(-1)[0])
    return Estimate(
        accuracy=accuracy_for(m, prec),
        model=m,
        hardware=hw,
        precision=prec,
        plan=plan,
        workload=wl,
        engine=eng,
        ttft_ms=_scalar(r.ttft_s) * 1e3,
        tpot_ms=_scalar(r.tpot_s) * 1e3,
        tok_s_per_user=_scalar(r.tok_s_per_user),
        output_tok_s_per_gpu=_scalar(r.output_tok_s_per_gpu),
        total_tok_s_per_gpu=_scalar(r.total_tok_s_per_gpu),
        num_gpus=plan.num_gpus,
        fits_in_memory=bool(np.asarray(r.fits_in_memory).reshape(-1)[0]),
        memory_per_gpu_gb=_scalar(r.memory_per_gpu_bytes) / 1e9,
        weights_per_gpu_gb=_scalar(r.weight_bytes_per_gpu) / 1e9,
        kv_cache_per_gpu_gb=_scalar(r.kv_bytes_per_gpu) / 1e9,
        max_concurrency=int(_scalar(r.max_concurrency)),
        feasible=reason == "",
        reason=reason,
        breakdown=breakdown,
        ops=ops,
        notes=context_note(m, wl.isl, wl.osl) + expert_slots_note(m, plan, eng.expert_balancer),
        uncertainty=shipped_error_bands().uncertainty(
            config_class(m, hw, eng.id, wl.concurrency, wl.isl, wl.osl)
        ),
    )


def explain_ops(
    m: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: ParallelPlan,
    wl: Workload,
    running: float | None = None,
) -> list[dict[str, Any]]:
    """Per-op detail of a pure decode step of the ``running`` sequences (default: the
    workload's concurrency) and of one prefill chunk: time, FLOPs, bound."""
    rows: list[dict[str, Any]] = []
    chunk = min(wl.isl, float(rank_token_budget(eng, scheduling_ranks(plan.tp, plan.attention_dp))))
    dec_seqs = wl.concurrency if running is None else running
    for phase, dec, pre in (("decode", dec_seqs, 0), ("prefill", 0, chunk)):
        # a decode step's micro-batch (ops.step_shape's rule); one prefill chunk streams whole
        s = step_shape(
            plan.tp,
            plan.pp,
            plan.ep,
            plan.cp,
            plan.attention_dp,
            isl=wl.isl,
            osl=wl.osl,
            decode_seqs=float(dec),
            prefill_tokens=float(pre),
            prefill_seqs=1.0 if pre else 0.0,
            micro_batches=None if dec else 1.0,
        )
        cost = step_cost(m, prec, hw, eng, s, detail=True)
        merged: dict[str, dict[str, Any]] = {}
        for op, t, bound in cost.ops:
            t_s = _scalar(t)
            if t_s <= 0:
                continue
            row = merged.setdefault(
                op.name,
                {
                    "phase": phase,
                    "op": op.name,
                    "class": op.op_class,
                    "time_s": 0.0,
                    "flops": 0.0,
                    "bound": str(np.asarray(bound).reshape(-1)[0]),
                },
            )
            row["time_s"] += t_s
            row["flops"] += _scalar(op.total_flops()) * _scalar(op.layers)
        rows.extend(sorted(merged.values(), key=lambda r: -r["time_s"]))
    return rows
