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

from ..calibrate import resolve_hardware
from ..errors import SpecError
from ..explore import (
    ADVISOR_CONCURRENCY,
    THROUGHPUT_MIN_TOK_S_USER,
    OperatingPoint,
    advisor_precision,
    candidate_plans,
    operating_point,
)
from ..explore.operating import LATENCY_CONCURRENCY, operating_step
from ..serving import RESOURCES, bound_split
from ..specs.context import check_window, past_window
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec, load_model
from ..specs.plan import ParallelPlan
from ..specs.precision import Precision

# ---- documented defaults (every one overridable through the API / CLI) ----
SHORT_ISL, SHORT_OSL = 1024, 1024  # chat-style prompt and answer
LONG_ISL, LONG_OSL = 32768, 1024  # long-document / agentic context

REGIMES: dict[str, tuple[int, int, str]] = {
    "short-throughput": (SHORT_ISL, SHORT_OSL, "throughput"),
    "short-latency": (SHORT_ISL, SHORT_OSL, "latency"),
    "long-throughput": (LONG_ISL, LONG_OSL, "throughput"),
    "long-latency": (LONG_ISL, LONG_OSL, "latency"),
}


def isl_within(model: ModelSpec, isl: int, osl: int) -> int:
    """``isl``, or the longest prompt that fits the checkpoint's context window
    (``specs.context.past_window``) with ``osl`` output tokens where that is less (at
    least 1: :func:`check_window` refuses an ``osl`` that fills the window).

    Example (Mixtral-8x7B's 32,768 tokens; DeepSeek-R1's 163,840):
        >>> isl_within(load_model("mixtral-8x7b"), LONG_ISL, 1024)
        31744
        >>> isl_within(load_model("deepseek-r1"), LONG_ISL, 1024)
        32768
    """
    window, past = past_window(model, isl, osl)
    return max(window - osl, 1) if window is not None and past else isl


def long_isl_for(model: ModelSpec, osl: int = LONG_OSL) -> int:
    """The long regimes' prompt for ``model``: ``LONG_ISL`` within its window (:func:`isl_within`;
    a small window makes it as short as the short regimes', which then coincide)."""
    return isl_within(model, LONG_ISL, osl)


def amdahl_speedup(fraction: float, factor: float) -> float:
    """Whole-run speedup when a part taking ``fraction`` of the time runs ``factor`` x faster.

    Example: ``amdahl_speedup(0.77, 2)`` = 1 / (0.23 + 0.385) = 1.626.
    """
    if not 0.0 <= fraction <= 1.0 or factor <= 0:
        raise SpecError(
            f"amdahl: fraction={fraction} must lie in [0, 1] and factor={factor} be positive"
        )
    return 1.0 / (1.0 - fraction + fraction / factor)


def amdahl_table(fractions: dict[str, float], factor: float = 2.0) -> dict[str, dict[str, float]]:
    """Per op class: fraction, speedup and gain (%) of the whole at ``factor`` x, and the
    ceiling."""
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


def bound_resource(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants, point: OperatingPoint
) -> tuple[str, dict[str, float]]:
    """What bounds the point's step (the same step as its TPOT): time by each op's bound
    (compute, memory, network incl. pipeline hops) plus fixed overheads, as fractions; the
    largest names the regime."""
    step = operating_step(model, hw, prec, eng, point)
    split = bound_split(model, prec, hw, eng, step)
    total = float(np.asarray(step.total_s).reshape(-1)[0])
    fr = {k: float(np.asarray(v).reshape(-1)[0]) / total for k, v in split.items()}
    return max(RESOURCES, key=lambda k: fr[k]), fr


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
            f"{self.name}: {name} is {a['fraction']:.0%} of the step; speeding it up by "
            f"{a['factor']:g}x gains at most {a['gain_pct']:.0f}% (ceiling {a['max_speedup']:.2f}x)"
            for name, a in rows
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "goal": self.goal,
            "isl": self.point.isl,
            "osl": self.point.osl,
            "concurrency": self.point.concurrency,
            "plan": self.point.plan.to_dict(),
            "plan_label": self.point.plan.label(),
            "fractions": dict(self.fractions),
            "step_time_s": dict(self.point.mixed_step_s),
            "bound": self.bound,
            "resources": dict(self.resources),
            "amdahl": self.amdahl,
            "tpot_ms": self.point.tpot_s * 1e3,
            "ttft_ms": self.point.ttft_s * 1e3,
            "tok_s_per_user": self.point.tok_s_per_user,
            "output_tok_s_per_gpu": self.point.output_tok_s_per_gpu,
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
            "model": self.model,
            "hardware": self.hardware,
            "precision": self.precision,
            "engine": self.engine,
            "regimes": [r.to_dict() for r in self.regimes],
            "assumptions": self.assumptions,
        }


def regimes(
    model: str | Path | ModelSpec,
    hardware: str | Path | HardwareSpec,
    precision: str | Precision | None = None,
    *,
    engine: str | Path | EngineConstants | None = None,
    short_isl: int | None = None,
    long_isl: int | None = None,
    osl: int = SHORT_OSL,
    throughput_concurrency: int | None = None,
    latency_concurrency: int = LATENCY_CONCURRENCY,
    min_tok_s_per_user: float = THROUGHPUT_MIN_TOK_S_USER,
    factor: float = 2.0,
    plans: list[ParallelPlan] | None = None,
) -> RegimeReport:
    """The four deployment quadrants of ``model`` on ``hardware``: time split by op class, the
    bound resource and Amdahl's ceilings per class. ``short_isl`` / ``long_isl`` None:
    ``SHORT_ISL`` / ``LONG_ISL`` within the checkpoint's context window (:func:`isl_within`);
    lengths past the window are refused (:func:`check_window`).

    Example:
        >>> r = regimes("llama-3.1-8b", "h200-sxm", "fp8")
        >>> [x.name for x in r.regimes][:2]
        ['short-throughput', 'short-latency']
    """
    m = load_model(model)
    hw = resolve_hardware(hardware)  # a bundled id, a YAML/JSON spec or a calibration profile
    prec, prec_note = advisor_precision(m, hw, precision)
    eng = load_engine(engine, hw)
    short_isl = isl_within(m, SHORT_ISL, osl) if short_isl is None else short_isl
    long_isl = long_isl_for(m, osl) if long_isl is None else long_isl
    for name, v in (
        ("short_isl", short_isl),
        ("long_isl", long_isl),
        ("osl", osl),
        ("latency_concurrency", latency_concurrency),
    ):
        if int(v) < 1:
            raise SpecError(f"regimes: {name}={v} must be >= 1")
    for name, v in (("short_isl", short_isl), ("long_isl", long_isl)):
        check_window(m, int(v), int(osl), f"regimes ({name})")
    plans = plans or candidate_plans(m, hw)
    out: list[Regime] = []
    for name, (_isl, _osl, goal) in REGIMES.items():
        isl = short_isl if name.startswith("short") else long_isl
        conc = throughput_concurrency if goal == "throughput" else latency_concurrency
        pt = operating_point(
            m,
            hw,
            prec,
            eng,
            isl,
            osl,
            goal,
            plans=plans,
            concurrency=conc,
            min_tok_s_per_user=min_tok_s_per_user,
        )
        bound, res = bound_resource(m, hw, prec, eng, pt)
        out.append(Regime(name, goal, pt, bound, res, amdahl_table(pt.fractions, factor)))
    return RegimeReport(
        model=m.id,
        hardware=hw.id,
        precision=prec.id,
        engine=eng.id,
        regimes=out,
        assumptions={
            "precision": prec_note,
            "short_context": {"isl": short_isl, "osl": osl},
            "long_context": {"isl": long_isl, "osl": osl},
            "throughput_goal": (
                "max output tok/s/GPU over plans x concurrency "
                f"{ADVISOR_CONCURRENCY[0]}..{ADVISOR_CONCURRENCY[-1]} with >= "
                f"{min_tok_s_per_user:g} tok/s/user"
            )
            if throughput_concurrency is None
            else f"concurrency {throughput_concurrency}, plan with max output tok/s/GPU",
            "latency_goal": (
                f"concurrency {latency_concurrency} per replica, plan with max tok/s/user"
            ),
            "plans": [p.label() for p in plans],
            "time_split": (
                "steady-state mixed step (decode + chunked prefill) per op class; 'other' holds "
                "norms, embeddings, LM head and per-kernel/per-step overheads"
            ),
            "amdahl": "speedup = 1 / (1 - f + f / factor); ceiling 1 / (1 - f)",
        },
    )
