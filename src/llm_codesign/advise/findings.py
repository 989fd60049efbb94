"""Lint findings and the machinery rules share: workloads, the context of one lint run,
the steady-state step rows and op surgery (change an op, re-price the step)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import cost
from ..errors import SpecError
from ..explore import OperatingPoint, operating_point
from ..explore.operating import operating_step
from ..ops import Op, step_shape
from ..serving import step_cost
from ..serving.memory import rank_token_budget, scheduling_ranks
from ..specs.engine import EngineConstants
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import ParallelPlan
from ..specs.precision import Precision
from .regimes import LONG_ISL, LONG_OSL, REGIMES, SHORT_ISL, SHORT_OSL, isl_within, long_isl_for

RULES = (
    "dim-alignment",
    "gemm-shape",
    "depth-vs-width",
    "attention-tp",
    "kv-cache",
    "moe-expert-tp",
    "moe-expert-m",
    "moe-balance",
    "pipeline-balance",
    "quantization",
)
SEVERITIES = ("error", "warn", "info")
MIN_IMPACT = (
    1.01  # findings whose fix buys less than 1% are not reported (except hard misalignment)
)
WARN_IMPACT = 1.10  # impact at or above which an opportunity is a warning rather than info
GEMM_SHAPE_OP_SPEEDUP = 1.15  # a GEMM must run this much faster near-square to be flagged
EXPERT_TP_MIN_WIDTH = 1024  # per-GPU expert width under TP below which EP is considered
PIPELINE_STAGES = (2, 4, 8)
SLIDING_WINDOW = 4096  # window suggested for 3 of 4 layers by the kv-cache rule
DEFAULT_WORKLOADS = (f"{SHORT_ISL}/{SHORT_OSL}", f"{LONG_ISL}/{LONG_OSL}")


# ---------------------------------------------------------------------------------------------

# results
# ---------------------------------------------------------------------------------------------


@dataclass
class Finding:
    """One lint finding. ``impact``: predicted speedup (>= 1) of the fix on
    ``details['metric']``."""

    rule: str
    severity: str
    location: str
    message: str
    impact: float
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "location": self.location,
            "message": self.message,
            "impact": self.impact,
            "details": self.details,
        }


@dataclass(frozen=True)
class WorkloadSpec:
    """ISL/OSL and an optional fixed concurrency (None: the throughput operating point)."""

    isl: int
    osl: int
    concurrency: int | None = None

    @property
    def label(self) -> str:
        return f"{self.isl}/{self.osl}" + (f"/{self.concurrency}" if self.concurrency else "")


def default_workloads(model: ModelSpec) -> list[str]:
    """``DEFAULT_WORKLOADS`` for ``model``: their prompts within its context window
    (``regimes.isl_within``), the two once where a small window makes them one."""
    short = f"{isl_within(model, SHORT_ISL, SHORT_OSL)}/{SHORT_OSL}"
    long = f"{long_isl_for(model, LONG_OSL)}/{LONG_OSL}"
    return [short] + [long] * (long != short)


def parse_workload(text: str | WorkloadSpec, model: ModelSpec | None = None) -> WorkloadSpec:
    """``ISL/OSL[/CONCURRENCY]`` (e.g. ``8192/1024/64``) or a regime name (``long-throughput``;
    with ``model``, its prompt within the model's context window: ``regimes.isl_within``)."""
    if isinstance(text, WorkloadSpec):
        return text
    t = str(text).strip().lower()
    if t in REGIMES:
        isl, osl, _goal = REGIMES[t]  # (its lengths; lint prices each at the throughput goal)
        return WorkloadSpec(isl if model is None else isl_within(model, isl, osl), osl)
    m = re.fullmatch(r"(\d+)[/:x](\d+)(?:[/:x@](\d+))?", t)
    if not m:
        raise SpecError(
            f"workload {text!r} must be ISL/OSL[/CONCURRENCY] (e.g. 8192/1024/64) or one of "
            f"{', '.join(REGIMES)}"
        )
    isl, osl = int(m.group(1)), int(m.group(2))
    conc = int(m.group(3)) if m.group(3) else None
    if isl < 1 or osl < 1 or (conc is not None and conc < 1):
        raise SpecError(f"workload {text!r}: ISL, OSL and concurrency must be >= 1")
    return WorkloadSpec(isl, osl, conc)


@dataclass
class LintReport:
    model: str
    hardware: str
    precision: str
    engine: str
    workloads: list[dict[str, Any]]
    findings: list[Finding]
    assumptions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "model": self.model,
            "hardware": self.hardware,
            "precision": self.precision,
            "engine": self.engine,
            "workloads": self.workloads,
            "assumptions": self.assumptions,
        }


@dataclass
class LintContext:
    model: ModelSpec
    hw: HardwareSpec
    prec: Precision
    eng: EngineConstants
    workloads: list[WorkloadSpec]
    points: list[OperatingPoint]
    align: int

    @property
    def primary(self) -> OperatingPoint:
        return self.points[0]

    @property
    def longest(self) -> OperatingPoint:
        return max(self.points, key=lambda p: p.isl + p.osl)

    def setting(self, p: OperatingPoint | None = None) -> dict[str, Any]:
        p = p or self.primary
        return {
            "hardware": self.hw.id,
            "precision": self.prec.id,
            "plan": p.plan.label(),
            "isl": p.isl,
            "osl": p.osl,
            "concurrency": p.concurrency,
        }


def severity_for(impact: float) -> str:
    return "warn" if impact >= WARN_IMPACT else "info"


# ---------------------------------------------------------------------------------------------
# step-level measurements (op surgery on the cost model's op list)
# ---------------------------------------------------------------------------------------------


def best_throughput(
    ctx: LintContext, model: ModelSpec, isl: int, osl: int, plans: list[ParallelPlan] | None = None
) -> tuple[float, OperatingPoint | None]:
    """Output tok/s/GPU of the best plan at the throughput goal (0 and None when none fits), at
    the concurrency the workload of these lengths pins (an alternative is compared like with
    like: ``-w 1024/1024/1`` against one request, not the best concurrency)."""
    conc = next((w.concurrency for w in ctx.workloads if (w.isl, w.osl) == (isl, osl)), None)
    try:
        pt = operating_point(
            model, ctx.hw, ctx.prec, ctx.eng, isl, osl, "throughput", plans=plans, concurrency=conc
        )
    except SpecError:
        return 0.0, None
    return pt.output_tok_s_per_gpu, pt


def step_rows(
    ctx: LintContext,
    point: OperatingPoint,
    model: ModelSpec | None = None,
    prec: Precision | None = None,
) -> dict[str, tuple[float, list[tuple[Op, float]], float]]:
    """Per-op times of the compute-bound prefill chunk and of the workload's steady-state step
    (the step whose time is the point's TPOT: ``explore.operating_step``). Each entry is
    (step seconds, [(op, seconds in the step)], scale) where scale converts one stage's op time
    into seconds of the step (pp micro-batches); surgery on other models or precisions keeps
    the point's step mix."""
    model = model or ctx.model
    prec = prec or ctx.prec
    p = point.plan
    ranks = scheduling_ranks(p.tp, p.attention_dp)
    chunk = float(min(point.isl, rank_token_budget(ctx.eng, ranks)))  # (a rank's chunk)
    axes = (p.tp, p.pp, p.ep, p.cp, p.attention_dp)
    pre_shape = step_shape(
        *axes, isl=point.isl, osl=point.osl, prefill_tokens=chunk, micro_batches=1.0
    )
    pre = step_cost(model, prec, ctx.hw, ctx.eng, pre_shape, detail=True)
    mixed = operating_step(model, ctx.hw, prec, ctx.eng, point)
    micro = float(p.pp)
    out = {}
    for name, total, stage_ops, scale in (
        ("prefill", pre.total_s, pre.ops, 1.0),
        ("mixed", mixed.total_s, mixed.stage.ops, micro),
    ):
        rows = [(op, float(np.asarray(t).reshape(-1)[0]) * scale) for op, t, _b in stage_ops]
        out[name] = (float(np.asarray(total).reshape(-1)[0]), rows, scale)
    return out


def op_seconds(op: Op, hw: HardwareSpec, eng: EngineConstants) -> float:
    t, _ = cost.op_time(op, hw, eng)
    return float(np.asarray(t).reshape(-1)[0]) * float(np.asarray(op.layers).reshape(-1)[0])


def scalar(x: Any) -> float:
    return float(np.asarray(x, dtype=float).reshape(-1)[0])


def surgery(
    total: float,
    rows: list[tuple[Op, float]],
    fix: Callable[[Op], tuple[Op, float] | None],
    hw: HardwareSpec,
    eng: EngineConstants,
    scale: float = 1.0,
) -> tuple[float, float]:
    """(step time after, time of the touched ops before): ``fix`` maps an op to (new op, work
    ratio new/old) or None; the new op's time is divided by the work ratio (per unit of work)."""
    before = after = 0.0
    for op, t in rows:
        if t <= 0:
            continue
        r = fix(op)
        if r is None:
            continue
        new, work = r
        before += t
        after += op_seconds(new, hw, eng) * scale / work
    return total - before + after, before


# ---------------------------------------------------------------------------------------------
