"""Deployment regimes and Amdahl's law: where the time goes in each of the four quadrants
(short/long context x throughput/latency goal) and what speeding up one part can buy.

The frame is NVIDIA's co-design blog (``reference/codesign.md`` A1): "long-context,
throughput-oriented serving spends most of its time in attention, while latency-oriented
serving adds model parallelism ... at the cost of communication and fixed overheads";
"If attention is 77% of runtime, tuning the feed-forward layers yields only marginal gains".

Each regime is an operating point found with the serving model (``serving.evaluate``, vectorized
over a plan grid x a concurrency grid):

* throughput goal: the plan and concurrency with the most output tokens/s per GPU among points
  that fit in memory and keep at least ``THROUGHPUT_MIN_TOK_S_USER`` tokens/s per user;
* latency goal: ``LATENCY_CONCURRENCY`` requests per replica on the plan with the most
  tokens/s per user (more tensor parallelism, Helix when TP passes the KV heads).

The time split is the steady-state mixed step (decode plus chunked prefill, DESIGN.md) by op
class: attention (projections + kernels), ffn (dense FFN, router, experts), communication
(collectives, pipeline hops) and other (norms, embeddings, LM head, per-kernel and per-step
overheads). Amdahl: if a class takes fraction f, making it s times faster speeds the whole
by 1 / (1 - f + f / s), at most 1 / (1 - f).

Example:
    >>> amdahl_speedup(0.77, 2.0) > 1.6
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import SpecError
from .ops import OP_CLASSES, StepShape
from .serving import GridResult, evaluate, step_cost
from .specs.engine import EngineConstants, load_engine
from .specs.hardware import HardwareSpec, load_hardware
from .specs.model import ModelSpec, load_model
from .specs.plan import ParallelPlan
from .specs.precision import Precision, parse_precision

# ---- documented defaults (every one overridable through the API / CLI) ----
SHORT_ISL, SHORT_OSL = 1024, 1024  # chat-style prompt and answer
LONG_ISL, LONG_OSL = 32768, 1024  # long-document / agentic context
THROUGHPUT_MIN_TOK_S_USER = 10.0  # a throughput service still streams faster than reading speed
LATENCY_CONCURRENCY = 1  # one request per replica: the interactivity end of the frontier
CONCURRENCY_GRID = tuple(2**i for i in range(13))  # 1 .. 4096 requests per replica
MAX_PLAN_TP = 32  # largest tensor/expert-parallel group considered (inside the NVLink domain)

REGIMES: dict[str, tuple[int, int, str]] = {
    "short-throughput": (SHORT_ISL, SHORT_OSL, "throughput"),
    "short-latency": (SHORT_ISL, SHORT_OSL, "latency"),
    "long-throughput": (LONG_ISL, LONG_OSL, "throughput"),
    "long-latency": (LONG_ISL, LONG_OSL, "latency"),
}
RESOURCES = ("compute", "memory", "network", "overhead")


def amdahl_speedup(fraction: float, factor: float) -> float:
    """Whole-run speedup when a part taking ``fraction`` of the time runs ``factor`` x faster.

    Example: ``amdahl_speedup(0.77, 2)`` = 1 / (0.23 + 0.385) = 1.626.
    """
    if not 0.0 <= fraction <= 1.0 or factor <= 0:
        raise SpecError(f"amdahl: fraction={fraction} must lie in [0, 1] and factor={factor} be positive")
    return 1.0 / (1.0 - fraction + fraction / factor)


def amdahl_table(fractions: dict[str, float], factor: float = 2.0) -> dict[str, dict[str, float]]:
    """Per op class: fraction, speedup and gain (%) of the whole at ``factor`` x, and the ceiling."""
    out: dict[str, dict[str, float]] = {}
    for name, f in fractions.items():
        s = amdahl_speedup(f, factor)
        out[name] = {
            "fraction": f,
            "factor": factor,
            "speedup": s,
            "gain_pct": (s - 1.0) * 100.0,
            "max_speedup": float("inf") if f >= 1.0 else 1.0 / (1.0 - f),
        }
    return out


# ---------------------------------------------------------------------------------------------
# plan grid and operating points (shared by advise and archsearch)
# ---------------------------------------------------------------------------------------------


def candidate_plans(model: ModelSpec, hw: HardwareSpec, max_tp: int | None = None) -> list[ParallelPlan]:
    """Single-replica plans worth comparing: TP in powers of two inside the NVLink domain; MoE
    adds EP = TP with and without attention-DP (wide EP); GQA adds Helix KV-parallel attention
    once TP exceeds the KV heads. Plans the model cannot run are kept out here; memory fit is
    decided per point by the serving model."""
    limit = min(hw.scaleup_domain_size, max_tp or MAX_PLAN_TP)
    plans: list[ParallelPlan] = []
    tp = 1
    while tp <= limit:
        options = [ParallelPlan(tp=tp)]
        if model.moe is not None and tp > 1:
            options += [ParallelPlan(tp=tp, ep=tp), ParallelPlan(tp=tp, ep=tp, attention_dp=True)]
        a = model.attention
        if a.kind == "gqa" and tp > a.num_kv_heads and tp % a.num_kv_heads == 0:
            options.append(ParallelPlan(tp=tp, cp=tp // a.num_kv_heads, ep=tp if model.moe else 1))
        for p in options:
            try:
                p.validate_for(model)
            except SpecError:
                continue
            plans.append(p)
        tp *= 2
    if not plans:
        raise SpecError(f"{model.id}: no tensor-parallel plan up to tp={limit} divides its heads and widths")
    return plans


def evaluate_plans(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, plans: list[ParallelPlan],
    isl: int, osl: int, concurrency: Any,
) -> GridResult:
    """Serving metrics on the grid plans (axis 0) x concurrency (axis 1), one vectorized call."""
    col = lambda name, dtype: np.asarray([getattr(p, name) for p in plans], dtype=dtype)[:, None]
    conc = np.atleast_1d(np.asarray(concurrency, dtype=float))[None, :]
    return evaluate(
        model, hw, prec, eng, tp=col("tp", np.int64), pp=col("pp", np.int64), ep=col("ep", np.int64),
        cp=col("cp", np.int64), attention_dp=col("attention_dp", bool), isl=isl, osl=osl, concurrency=conc,
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(), "plan_label": self.plan.label(), "isl": self.isl, "osl": self.osl,
            "concurrency": self.concurrency, "tpot_ms": self.tpot_s * 1e3, "ttft_ms": self.ttft_s * 1e3,
            "tok_s_per_user": self.tok_s_per_user, "output_tok_s_per_gpu": self.output_tok_s_per_gpu,
            "max_concurrency": self.max_concurrency,
        }


def _point(grid: GridResult, i: int, j: int, plan: ParallelPlan, isl: int, osl: int, conc: int) -> OperatingPoint:
    mixed = {c: float(np.asarray(grid.mixed_breakdown[c])[i, j]) for c in OP_CLASSES}
    total = sum(mixed.values())
    return OperatingPoint(
        plan=plan, isl=isl, osl=osl, concurrency=conc, tpot_s=float(grid.tpot_s[i, j]),
        ttft_s=float(grid.ttft_s[i, j]), tok_s_per_user=float(grid.tok_s_per_user[i, j]),
        output_tok_s_per_gpu=float(grid.output_tok_s_per_gpu[i, j]),
        max_concurrency=int(grid.max_concurrency[i, j]),
        fractions={c: v / total for c, v in mixed.items()}, mixed_step_s=mixed,
    )


def operating_point(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, isl: int, osl: int,
    goal: str, *, plans: list[ParallelPlan] | None = None, concurrency: int | None = None,
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
        concs = list(CONCURRENCY_GRID)
    g = evaluate_plans(model, hw, prec, eng, plans, isl, osl, concs)
    ok = np.asarray(g.feasible, dtype=bool)
    if goal == "throughput":
        score = np.where(ok & (g.tok_s_per_user >= min_tok_s_per_user), g.output_tok_s_per_gpu, -np.inf)
        if not np.isfinite(score).any():  # nothing meets the interactivity floor: best that fits
            score = np.where(ok, g.output_tok_s_per_gpu, -np.inf)
    else:
        score = np.where(ok, g.tok_s_per_user, -np.inf)
    if not np.isfinite(score).any():
        reasons = sorted({str(r) for r in np.asarray(g.reason).reshape(-1) if r})
        raise SpecError(
            f"{model.id} does not fit on {hw.id} with {prec.id} at ISL/OSL {isl}/{osl} with any plan up to "
            f"tp={max(p.tp for p in plans)} ({', '.join(reasons)})"
        )
    i, j = np.unravel_index(int(np.argmax(score)), score.shape)
    return _point(g, int(i), int(j), plans[int(i)], isl, osl, concs[int(j)])


def bound_resource(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, point: OperatingPoint,
) -> tuple[str, dict[str, float]]:
    """What bounds the step: op time grouped by each op's bound (compute, memory, network) plus
    fixed overheads (per-kernel and per-step), as fractions; the largest names the regime."""
    p = point.plan
    conc = float(point.concurrency)
    pre = conc * point.isl / point.osl
    s = StepShape(
        decode_seqs=np.array(conc), decode_ctx=np.array(point.isl + point.osl / 2.0),
        prefill_tokens=np.array(pre), prefill_seqs=np.array(pre / point.isl), prefill_ctx=np.array(point.isl / 2.0),
        tp=np.array(p.tp), ep=np.array(p.ep), pp=np.array(p.pp), cp=np.array(p.cp), attention_dp=np.array(p.attention_dp),
    )
    c = step_cost(model, prec, hw, eng, s, detail=True)
    by = dict.fromkeys(RESOURCES, 0.0)
    for _op, t, bound in c.ops:
        by[str(np.asarray(bound).reshape(-1)[0])] += float(np.asarray(t).reshape(-1)[0])
    total = float(np.asarray(c.total_s).reshape(-1)[0])
    by["overhead"] = max(total - sum(by.values()), 0.0)
    fr = {k: v / total for k, v in by.items()}
    return max(fr, key=lambda k: fr[k]), fr


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------


@dataclass
class Regime:
    name: str
    goal: str
    point: OperatingPoint
    bound: str
    resources: dict[str, float]
    amdahl: dict[str, dict[str, float]]

    @property
    def fractions(self) -> dict[str, float]:
        return self.point.fractions

    def sentences(self) -> list[str]:
        """'speeding up X by 2x gains at most Y%' for each class, largest first."""
        rows = sorted(self.amdahl.items(), key=lambda kv: -kv[1]["fraction"])
        return [
            f"{self.name}: {name} is {a['fraction']:.0%} of the step; speeding it up by {a['factor']:g}x gains at most "
            f"{a['gain_pct']:.0f}% (ceiling {a['max_speedup']:.2f}x)" for name, a in rows
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "goal": self.goal, "isl": self.point.isl, "osl": self.point.osl,
            "concurrency": self.point.concurrency, "plan": self.point.plan.to_dict(),
            "plan_label": self.point.plan.label(), "fractions": dict(self.fractions),
            "step_time_s": dict(self.point.mixed_step_s), "bound": self.bound, "resources": dict(self.resources),
            "amdahl": self.amdahl, "tpot_ms": self.point.tpot_s * 1e3, "ttft_ms": self.point.ttft_s * 1e3,
            "tok_s_per_user": self.point.tok_s_per_user, "output_tok_s_per_gpu": self.point.output_tok_s_per_gpu,
            "summary": self.sentences(),
        }


@dataclass
class RegimeReport:
    model: str
    hardware: str
    precision: str
    engine: str
    regimes: list[Regime]
    assumptions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "hardware": self.hardware, "precision": self.precision, "engine": self.engine,
            "regimes": [r.to_dict() for r in self.regimes], "assumptions": self.assumptions,
        }


def default_precision(hw: HardwareSpec) -> str:
    """FP8 where the GPU runs it natively, else BF16 (FP16 on parts without BF16)."""
    if hw.supports("fp8"):
        return "fp8"
    return "bf16" if hw.supports("bf16") else "fp16"


def regimes(
    model: str | Path | ModelSpec,
    hardware: str | Path | HardwareSpec,
    precision: str | Precision | None = None,
    *,
    engine: str | Path | EngineConstants | None = None,
    short_isl: int = SHORT_ISL,
    long_isl: int = LONG_ISL,
    osl: int = SHORT_OSL,
    throughput_concurrency: int | None = None,
    latency_concurrency: int = LATENCY_CONCURRENCY,
    min_tok_s_per_user: float = THROUGHPUT_MIN_TOK_S_USER,
    factor: float = 2.0,
    plans: list[ParallelPlan] | None = None,
) -> RegimeReport:
    """The four deployment quadrants of ``model`` on ``hardware``: time split by op class, the
    bound resource and Amdahl's ceilings per class.

    Example:
        >>> r = regimes("llama-3.1-8b", "h200-sxm", "fp8")
        >>> [x.name for x in r.regimes][:2]
        ['short-throughput', 'short-latency']
    """
    m = load_model(model)
    hw = load_hardware(hardware)
    prec = parse_precision(precision or default_precision(hw))
    eng = load_engine(engine)
    for name, v in (("short_isl", short_isl), ("long_isl", long_isl), ("osl", osl), ("latency_concurrency", latency_concurrency)):
        if int(v) < 1:
            raise SpecError(f"regimes: {name}={v} must be >= 1")
    plans = plans or candidate_plans(m, hw)
    out: list[Regime] = []
    for name, (_isl, _osl, goal) in REGIMES.items():
        isl = short_isl if name.startswith("short") else long_isl
        conc = throughput_concurrency if goal == "throughput" else latency_concurrency
        pt = operating_point(m, hw, prec, eng, isl, osl, goal, plans=plans, concurrency=conc, min_tok_s_per_user=min_tok_s_per_user)
        bound, res = bound_resource(m, hw, prec, eng, pt)
        out.append(Regime(name, goal, pt, bound, res, amdahl_table(pt.fractions, factor)))
    return RegimeReport(
        model=m.id, hardware=hw.id, precision=prec.id, engine=eng.id, regimes=out,
        assumptions={
            "short_context": {"isl": short_isl, "osl": osl}, "long_context": {"isl": long_isl, "osl": osl},
            "throughput_goal": f"max output tok/s/GPU over plans x concurrency {CONCURRENCY_GRID[0]}..{CONCURRENCY_GRID[-1]} "
                               f"with >= {min_tok_s_per_user:g} tok/s/user" if throughput_concurrency is None
                               else f"concurrency {throughput_concurrency}, plan with max output tok/s/GPU",
            "latency_goal": f"concurrency {latency_concurrency} per replica, plan with max tok/s/user",
            "plans": [p.label() for p in plans],
            "time_split": "steady-state mixed step (decode + chunked prefill) per op class; 'other' holds norms, "
                          "embeddings, LM head and per-kernel/per-step overheads",
            "amdahl": "speedup = 1 / (1 - f + f / factor); ceiling 1 / (1 - f)",
        },
    )
