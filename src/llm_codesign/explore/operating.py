"""Operating points: the best configuration for a goal (throughput or latency) over the
advisor's plans x concurrency grid, the step it runs, and the throughput-interactivity curve of
that grid. Lint, regimes and search all read their numbers here, from ``serving.evaluate``,
so they agree with ``estimate`` and ``frontier`` on TPOT for the same configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError
from ..ops import OP_CLASSES
from ..pareto import frontier_area, pareto_mask, staircase
from ..serving import GridResult, PipelinedStep, evaluate, pipelined_step
from ..serving.memory import (
    MIN_HINT_STEP_TOKENS,
    RUNTIME_RESERVED_BYTES,
    WEIGHTS_EXCEED_MEMORY,
    WORKSPACE_EXCEEDS_MEMORY,
    fitting_step_tokens,
    kv_context,
    weights_and_workspace,
)
from ..specs.checkpoint import checkpoint_precision, preset_weights, unread_export
from ..specs.checkpoint import default_precision as checkpoint_default
from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import (
    PLAN_REASONS,
    DisaggregatedPlan,
    ParallelPlan,
    explain_reason,
    plan_feasibility,
)
from ..specs.precision import Precision, parse_precision
from ..specs.workload import Workload
from .grid import power_of_two_grid
from .plans import candidate_plans

THROUGHPUT_MIN_TOK_S_USER = 10.0  # a throughput service still streams faster than reading speed
LATENCY_CONCURRENCY = 1  # one request per replica: the interactivity end of the frontier
ADVISOR_CONCURRENCY = power_of_two_grid()  # 1 .. 4096 requests per replica


def evaluate_plans(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plans: list[ParallelPlan],
    isl: int,
    osl: int,
    concurrency: Any,
) -> GridResult:
    """Serving metrics on the grid plans (axis 0) x concurrency (axis 1), one vectorized call."""

    def col(name: str, dtype: Any) -> np.ndarray:
        return np.asarray([getattr(p, name) for p in plans], dtype=dtype)[:, None]

    conc = np.atleast_1d(np.asarray(concurrency, dtype=float))[None, :]
    return evaluate(
        model,
        hw,
        prec,
        eng,
        tp=col("tp", np.int64),
        pp=col("pp", np.int64),
        ep=col("ep", np.int64),
        cp=col("cp", np.int64),
        attention_dp=col("attention_dp", bool),
        isl=isl,
        osl=osl,
        concurrency=conc,
    )


@dataclass
class OperatingPoint:
    """One configuration picked from a grid, with its serving metrics (SI units)."""

    plan: ParallelPlan
    isl: int
    osl: int
    concurrency: int
    tpot_s: float
    ttft_s: float
    tok_s_per_user: float
    output_tok_s_per_gpu: float
    max_concurrency: int
    fractions: dict[str, float]
    mixed_step_s: dict[str, float]
    step_decode_seqs: float = 0.0  # the converged step mix (GridResult.step_*)
    step_prefill_tokens: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "plan_label": self.plan.label(),
            "isl": self.isl,
            "osl": self.osl,
            "concurrency": self.concurrency,
            "tpot_ms": self.tpot_s * 1e3,
            "ttft_ms": self.ttft_s * 1e3,
            "tok_s_per_user": self.tok_s_per_user,
            "output_tok_s_per_gpu": self.output_tok_s_per_gpu,
            "max_concurrency": self.max_concurrency,
        }


def _point(
    grid: GridResult, i: int, j: int, plan: ParallelPlan, isl: int, osl: int, conc: int
) -> OperatingPoint:
    mixed = {c: float(np.asarray(grid.mixed_breakdown[c])[i, j]) for c in OP_CLASSES}
    total = sum(mixed.values())
    return OperatingPoint(
        plan=plan,
        isl=isl,
        osl=osl,
        concurrency=conc,
        tpot_s=float(grid.tpot_s[i, j]),
        ttft_s=float(grid.ttft_s[i, j]),
        tok_s_per_user=float(grid.tok_s_per_user[i, j]),
        output_tok_s_per_gpu=float(grid.output_tok_s_per_gpu[i, j]),
        max_concurrency=int(grid.max_concurrency[i, j]),
        fractions={c: v / total for c, v in mixed.items()},
        mixed_step_s=mixed,
        step_decode_seqs=float(np.asarray(grid.step_decode_seqs)[i, j]),
        step_prefill_tokens=float(np.asarray(grid.step_prefill_tokens)[i, j]),
    )


def operating_point(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    isl: int,
    osl: int,
    goal: str,
    *,
    plans: list[ParallelPlan] | None = None,
    concurrency: int | None = None,
    min_tok_s_per_user: float = THROUGHPUT_MIN_TOK_S_USER,
) -> OperatingPoint:
    """The best point for ``goal`` (``throughput`` or ``latency``) over plans x concurrency.

    ``concurrency`` pins the concurrency (the plan is still chosen). Raises SpecError when no
    plan fits the model in memory at that setting.
    """
    if goal not in ("throughput", "latency"):
        raise SpecError(f"goal {goal!r} must be 'throughput' or 'latency'")
    plans = plans or candidate_plans(model, hw)
    if concurrency is not None:
        concs = [int(concurrency)]
    elif goal == "latency":
        concs = [LATENCY_CONCURRENCY]
    else:
        concs = list(ADVISOR_CONCURRENCY)
    g = evaluate_plans(model, hw, prec, eng, plans, isl, osl, concs)
    ok = np.asarray(g.feasible, dtype=bool)
    if goal == "throughput":
        score = np.where(
            ok & (g.tok_s_per_user >= min_tok_s_per_user), g.output_tok_s_per_gpu, -np.inf
        )
        if not np.isfinite(score).any():  # nothing meets the interactivity floor: best that fits
            score = np.where(ok, g.output_tok_s_per_gpu, -np.inf)
    else:
        score = np.where(ok, g.tok_s_per_user, -np.inf)
    if not np.isfinite(score).any():
        reasons = sorted({str(r) for r in np.asarray(g.reason).reshape(-1) if r})
        hint = smaller_formats_hint(hw, prec) if WEIGHTS_EXCEED_MEMORY in reasons else ""
        if WORKSPACE_EXCEEDS_MEMORY in reasons:
            hint += workspace_hint(model, hw, prec, eng, None, None, several=True)
        raise SpecError(
            f"{model.id} does not fit on {hw.id} with {prec.id} at ISL/OSL {isl}/{osl} with any "
            f"plan up to tp={max(p.tp for p in plans)} ({', '.join(reasons)}){hint}"
        )
    i, j = np.unravel_index(int(np.argmax(score)), score.shape)
    return _point(g, int(i), int(j), plans[int(i)], isl, osl, concs[int(j)])


# presets a refusal for weights that do not fit may suggest, smallest weights last
SMALLER_PRESETS = ("fp8", "nvfp4", "mxfp4", "w4a16")


def smaller_formats(hw: HardwareSpec, prec: Precision) -> list[str]:
    """The presets of ``SMALLER_PRESETS`` whose weights are smaller than ``prec``'s and whose
    math ``hw`` runs natively (a refusal's hint).

    Example: FP8 on an H100 -> ['w4a16'] (it has no FP4 math); BF16 on a B200 -> all four."""
    bits = prec.weights.element_bits
    out = []
    for name in SMALLER_PRESETS:
        p = parse_precision(name)
        if p.weights.element_bits < bits and hw.supports(p.compute_class):
            out.append(name)
    return out


def smaller_formats_hint(hw: HardwareSpec, prec: Precision) -> str:
    """A refusal's hint for weights that do not fit (:func:`smaller_formats`); "" where none."""
    smaller = smaller_formats(hw, prec)
    return f"; smaller weights the GPU runs: -p {' or -p '.join(smaller)}" if smaller else ""


# reasons that are memory: the concurrency that fits says how far off the configuration is
MEMORY_REASONS = ("oom", WEIGHTS_EXCEED_MEMORY, WORKSPACE_EXCEEDS_MEMORY)


def infeasible_text(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: ParallelPlan | DisaggregatedPlan,
    reason: str,
    max_concurrency: int,
    workload: Workload | None = None,
    spec_tokens: int = 0,
) -> str:
    """Why a configuration has no prediction: a plan rule's arithmetic (``specs.plan.
    explain_reason``, naming the engine for the rules an engine sets, and under a disaggregated
    plan the pool that breaks it), a memory reason with the concurrency that fits and the smaller
    weight formats the GPU runs (for weights that fit beside a profiled step that does not, the
    step's size and, given the ``workload``, the ``max_num_tokens`` at which a sequence fits:
    :func:`workspace_hint`), else the reason as stated."""
    if reason in PLAN_REASONS:
        pools = [("", plan)]
        if isinstance(plan, DisaggregatedPlan):
            pools = [("prefill pool: ", plan.prefill), ("decode pool: ", plan.decode)]
        for label, p in pools:
            got = plan_feasibility(model, p.tp, p.pp, p.ep, p.attention_dp, p.cp,
                                   eng.moe_partial_ep)  # fmt: skip
            if str(got) == reason or label == pools[-1][0]:
                return label + explain_reason(reason, model, p, f"engine {eng.id}")
    if reason == WORKSPACE_EXCEEDS_MEMORY:
        pool = plan if isinstance(plan, ParallelPlan) else None  # (a pool of two: either)
        hint = workspace_hint(model, hw, prec, eng, pool, workload, spec_tokens)
        return f"{reason} (max concurrency that fits: {max_concurrency}){hint}"
    if reason in MEMORY_REASONS:
        hint = smaller_formats_hint(hw, prec)
        return f"{reason} (max concurrency that fits: {max_concurrency}){hint}"
    if reason == "prefill_batch_oom" and isinstance(plan, DisaggregatedPlan):
        return (
            f"{reason} (a prefill worker's batch of {plan.prefill_batch} prompts holds more KV "
            "than the worker has room for: a smaller --prefill-batch)"
        )
    return reason


def workspace_hint(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: ParallelPlan | None,
    workload: Workload | None,
    spec_tokens: int = 0,
    several: bool = False,
) -> str:
    """A ``workspace_exceeds_memory`` refusal's hint (``several``: of several plans, some of
    whose weights do not fit): the step the engine profiles before it
    sizes its KV cache (``max_num_tokens``, the activations and MoE runner buffers it holds a
    GPU beyond the runtime reserve: ``serving.weights_and_workspace``) and, given the ``plan``
    and the ``workload``, the largest power-of-two ``max_num_tokens`` at which one sequence fits
    (``serving.fitting_step_tokens``)."""
    eng = for_gpu(eng, hw)
    scope = "a rank" if eng.token_budget_scope == "rank" else "the server"
    lead = "where the weights fit," if several else "the weights fit, but"
    text = (
        f"; {lead} the step engine {eng.id} profiles before it sizes its KV cache "
        f"(max_num_tokens {eng.max_num_tokens:,}, {scope}) leaves no sequence room"
    )
    if plan is None or workload is None:
        return text + ": a smaller max_num_tokens shrinks that step"
    axes = (plan.tp, plan.pp, plan.ep, plan.attention_dp, plan.cp)
    _, held = weights_and_workspace(model, prec, hw, eng, *(np.asarray(a) for a in axes),
                                    spec_tokens)  # fmt: skip
    step_gb = (float(held) - RUNTIME_RESERVED_BYTES) / 1e9
    text += f" ({step_gb:.1f} GB a GPU of activations and MoE runner buffers)"
    ctx = float(kv_context(eng, workload.isl, workload.osl))
    n = fitting_step_tokens(model, hw, prec, eng, axes, ctx, spec_tokens)
    if n is None:
        return text + f"; no max_num_tokens down to {MIN_HINT_STEP_TOKENS} fits a sequence"
    return text + (
        f"; max_num_tokens {n:,} fits (an engine YAML's max_num_tokens, or a deployment's "
        "options read with --from)"
    )


def queue_note(clients: float, held: float, who: str) -> str:
    """The note of clients beyond the sequences ``who`` (a replica, a decode worker) runs."""
    return (
        f"concurrency {clients:,.0f} exceeds the {held:,.0f} sequences {who} (KV cache or "
        f"max_batch_size): {clients - held:,.0f} requests queue, and TTFT includes their wait "
        "(Little's law); throughput is the capacity's"
    )


def default_precision(hw: HardwareSpec) -> str:
    """FP8 where the GPU runs it natively, else BF16 (FP16 on parts without BF16)."""
    if hw.supports("fp8"):
        return "fp8"
    return "bf16" if hw.supports("bf16") else "fp16"


def advisor_precision(
    model: ModelSpec, hw: HardwareSpec, precision: str | Precision | None
) -> tuple[Precision, str]:
    """The precision an advisor (lint, regimes, search) prices, and why (their
    ``assumptions["precision"]``): the one given; else a quantized checkpoint's own weights and
    activations (``specs.checkpoint.default_precision``, as estimate and the frontier price them:
    Kimi-K2.5's INT4, gpt-oss's MXFP4) where the GPU runs their math, else
    :func:`default_precision` (an unquantized checkpoint is served quantized where the GPU has
    FP8). The KV cache is FP8 wherever the GPU has FP8, whatever the checkpoint's config states,
    as for an unquantized checkpoint. A bare preset takes the checkpoint's block-scaled weights
    (DeepSeek's FP8: ``specs.checkpoint.preset_weights``). A name that says an export's format
    with no bundled ``quantization_config`` says so, and what was priced instead
    (``specs.checkpoint.unread_export``).

    Example: Kimi-K2.5 on an H100 -> ``w4a16+int4_g32_sym-w+fp8-kv``; DeepSeek-R1 ->
    ``fp8+fp8_block-w`` (its preset's KV is FP8)."""
    if precision is not None:
        text, note = preset_weights(model, precision)  # (``preset_precision``'s reading)
        return parse_precision(text), "given" + (note and f"; {note}")
    unsupported = ""
    if checkpoint_precision(model.config) is not None:
        text, why = checkpoint_default(model, hw)
        stated = parse_precision(text)
        own = parse_precision("+".join(p for p in text.split("+") if not p.endswith("-kv")))
        if hw.supports(own.compute_class):
            if hw.supports("fp8") and own.kv_cache.id != "fp8":
                own = parse_precision(own.id + "+fp8-kv")
            if own.kv_cache.id != stated.kv_cache.id:
                why += f"; an {own.kv_cache.id} KV cache on {hw.id}"
            return own, why
        unsupported = f"the checkpoint's {own.id} does not run natively on {hw.id}; "
    text, note = preset_weights(model, default_precision(hw))
    prec = parse_precision(text)
    default = f"{prec.id}, the advisors' default on {hw.id} (fp8 where native, else 16-bit)"
    why = unsupported + (unread_export(model, priced=default) or default)
    return prec, why + (note and f"; {note}")


def operating_step(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    point: OperatingPoint,
    detail: bool = True,
) -> PipelinedStep:
    """The steady-state step of ``point`` (its converged decode/prefill mix), priced by the
    same :func:`serving.pipelined_step` as ``estimate``: ``total_s`` equals the point's TPOT."""
    p = point.plan
    return pipelined_step(
        model,
        prec,
        hw,
        eng,
        tp=p.tp,
        pp=p.pp,
        ep=p.ep,
        cp=p.cp,
        attention_dp=p.attention_dp,
        isl=point.isl,
        osl=point.osl,
        decode_seqs=point.step_decode_seqs,
        prefill_tokens=point.step_prefill_tokens,
        detail=detail,
    )


@dataclass
class Curve:
    """Pareto points of a plans x concurrency grid (tok/s/user ascending) with the plan and
    concurrency behind each; ``area`` is :func:`pareto.frontier_area` (the one definition)."""

    tok_s_per_user: np.ndarray
    output_tok_s_per_gpu: np.ndarray
    plans: list[str]
    concurrency: list[int]

    @property
    def area(self) -> float:
        return frontier_area(self.tok_s_per_user, self.output_tok_s_per_gpu)

    def throughput_at(self, tok_s_per_user: float) -> float:
        """Most tok/s/GPU among points offering at least ``tok_s_per_user`` (0 if none)."""
        x = np.asarray([tok_s_per_user], dtype=float)
        return float(staircase(self.tok_s_per_user, self.output_tok_s_per_gpu, x)[0])

    def to_dict(self) -> dict[str, Any]:
        points = [
            {
                "tok_s_per_user": float(u),
                "output_tok_s_per_gpu": float(g),
                "plan": p,
                "concurrency": c,
            }
            for u, g, p, c in zip(
                self.tok_s_per_user, self.output_tok_s_per_gpu, self.plans, self.concurrency
            )
        ]
        return {"points": points, "area": self.area}


def _empty_curve() -> Curve:
    return Curve(np.zeros(0), np.zeros(0), [], [])


def grid_curve(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    isl: int,
    osl: int,
    plans: list[ParallelPlan] | None = None,
    concurrency: tuple[int, ...] = ADVISOR_CONCURRENCY,
) -> Curve:
    """The Pareto curve over the candidate plans x concurrency grid (empty when nothing fits)."""
    try:
        plans = plans or candidate_plans(model, hw)
    except SpecError:
        return _empty_curve()
    concs = list(concurrency)
    grid = evaluate_plans(model, hw, prec, eng, plans, isl, osl, concs)
    u = np.asarray(grid.tok_s_per_user, dtype=float)
    g = np.asarray(grid.output_tok_s_per_gpu, dtype=float)
    ok = np.asarray(grid.feasible, dtype=bool) & np.isfinite(u) & np.isfinite(g)
    ii, jj = np.nonzero(ok)
    if ii.size == 0:
        return _empty_curve()
    keep = pareto_mask(u[ii, jj], g[ii, jj])
    ii, jj = ii[keep], jj[keep]
    order = np.lexsort((jj, ii, u[ii, jj]))
    ii, jj = ii[order], jj[order]
    labels = [plans[i].label() for i in ii]
    return Curve(u[ii, jj], g[ii, jj], labels, [int(concs[j]) for j in jj])
