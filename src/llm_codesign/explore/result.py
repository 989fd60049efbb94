"""The result of a deployment search: evaluated points, the Pareto subset, its area and
readings, and the best configuration under latency targets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SpecError, UnsupportedError
from ..ops import OP_CLASSES
from ..pareto import AREA_RANGE, frontier_area, staircase
from ..serving import economics
from ..specs.engine import EngineConstants
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import ParallelPlan
from ..specs.precision import Precision
from ..specs.uncertainty import (
    METRIC_FIELDS,
    ConfigClass,
    concurrency_bucket,
    config_class,
    shipped_error_bands,
)
from .plans import PlanTable
from .points import MODE_DISAGGREGATED, MODES, PHASES, Points

Array = np.ndarray

READINGS_AT = (20.0, 50.0, 100.0, 200.0)  # tok/s/user at which frontiers are read


@dataclass
class Targets:
    """Latency targets a configuration must meet (None = no target)."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    min_tok_s_per_user: float | None = None

    def __post_init__(self) -> None:
        for name in ("ttft_ms", "tpot_ms", "min_tok_s_per_user"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and 0 < v < 1e9):
                raise SpecError(f"target {name} must be a positive number, got {v!r}")

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.min_tok_s_per_user))

    def met(self, p: Points) -> Array:
        ok = p["feasible"].copy()
        if self.ttft_ms is not None:
            ok &= p["ttft_s"] * 1e3 <= self.ttft_ms
        if self.tpot_ms is not None:
            ok &= p["tpot_s"] * 1e3 <= self.tpot_ms
        if self.min_tok_s_per_user is not None:
            ok &= p["tok_s_per_user"] >= self.min_tok_s_per_user
        return ok

    def to_dict(self) -> dict[str, float | None]:
        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "min_tok_s_per_user": self.min_tok_s_per_user,
        }


# a point whose precision has no estimate attached (a Frontier built by hand)
UNKNOWN_ACCURACY: dict[str, Any] = {"kind": "unknown", "value": None, "source": "unknown"}


@dataclass
class Frontier:
    """Result of :func:`frontier`: evaluated points, the Pareto subset, area, best under targets."""

    model: ModelSpec
    hardware: HardwareSpec
    precisions: tuple[Precision, ...]
    engine: EngineConstants
    num_gpus: int
    isl: int
    osl: int
    points: Points
    pareto: Array  # indices into points, sorted by tok_s_per_user ascending
    evaluated: int
    feasible_count: int
    elapsed_s: float
    targets: Targets
    best: int | None
    regions: Array  # region label per pareto point
    area_range: tuple[float, float] = AREA_RANGE
    readings_at: tuple[float, ...] = READINGS_AT
    all_points_kept: bool = True
    plans: PlanTable | None = None
    label: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    # precision id -> accuracy estimate (specs.accuracy); one decision row per candidate
    accuracy: dict[str, dict[str, Any]] = field(default_factory=dict)
    precision_decisions: list[dict[str, Any]] = field(default_factory=list)
    # power per GPU (None: TDP) and GPU-hour price behind each point's economics
    economics_inputs: dict[str, float | None] = field(default_factory=dict)
    # the targets as a latency percentile (``explore.slo.choose_best``): the statistic, the
    # points simulated and whether each met the targets; None: the targets hold for means
    slo: dict[str, Any] | None = None
    # concurrency bucket -> (the point's ``uncertainty``, its bands by id): every point of a
    # frontier shares model, GPU, engine and lengths, so its class varies with its concurrency
    _trust: dict[str, tuple[dict[str, Any], dict[str, Any]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    # ---- derived numbers ----
    def pareto_points(self) -> Points:
        return self.points.take(self.pareto)

    @property
    def area(self) -> float:
        p = self.pareto_points()
        return frontier_area(p["tok_s_per_user"], p["output_tok_s_per_gpu"], self.area_range)

    def readings(self, at: Iterable[float] | None = None) -> list[dict[str, Any]]:
        """Tokens/s/GPU at X tokens/s/user: the best frontier point offering at least X."""
        p = self.pareto_points()
        xs = np.asarray(list(self.readings_at if at is None else at), dtype=float)
        ys = staircase(p["tok_s_per_user"], p["output_tok_s_per_gpu"], xs)
        out = []
        for x, y in zip(xs.tolist(), ys.tolist()):
            i = None
            if y > 0:
                match = np.flatnonzero(
                    (p["tok_s_per_user"] >= x) & (p["output_tok_s_per_gpu"] == y)
                )
                i = int(self.pareto[match[0]]) if match.size else None
            out.append(
                {
                    "tok_s_per_user": x,
                    "output_tok_s_per_gpu": y if y > 0 else None,
                    "plan": self.plan_label(i) if i is not None else None,
                }
            )
        return out

    def plan_label(self, i: int) -> str:
        """Human label of the point's plan, e.g. ``TP8 EP8 attnDP8`` or ``disagg 2xTP4 : 1xTP8``."""
        c = self.points.cols
        dec = plan_label(
            int(c["tp"][i]),
            int(c["pp"][i]),
            int(c["ep"][i]),
            bool(c["attention_dp"][i]),
            int(c["cp"][i]),
        )
        if int(c["mode"][i]) == MODE_DISAGGREGATED:
            pre = plan_label(
                int(c["p_tp"][i]),
                int(c["p_pp"][i]),
                int(c["p_ep"][i]),
                bool(c["p_attention_dp"][i]),
                int(c["p_cp"][i]),
            )
            return (
                f"disagg {int(c['prefill_workers'][i])}x[{pre}] : "
                f"{int(c['decode_workers'][i])}x[{dec}]"
            )
        return dec

    def point_dict(self, i: int, region: str | None = None) -> dict[str, Any]:
        """One point in DESIGN.md's contract (estimate's fields + plan + precision + extras)."""
        c = self.points.cols
        f = {k: v[i] for k, v in c.items()}
        prec = self.precisions[int(f["precision"])]
        mode = MODES[int(f["mode"])]
        breakdown = {}
        for phase in PHASES:
            d = {cl: float(f[f"bd_{phase}_{cl}"]) for cl in OP_CLASSES}
            d["total"] = sum(d.values())
            breakdown[phase] = d
        plan = {
            "tp": int(f["tp"]),
            "pp": int(f["pp"]),
            "ep": int(f["ep"]),
            "dp": int(f["dp"]),
            "attention_dp": bool(f["attention_dp"]),
            "cp": int(f["cp"]),
        }
        out: dict[str, Any] = {
            "ttft_ms": float(f["ttft_s"]) * 1e3,
            "tpot_ms": float(f["tpot_s"]) * 1e3,
            "tok_s_per_user": float(f["tok_s_per_user"]),
            "output_tok_s_per_gpu": float(f["output_tok_s_per_gpu"]),
            "total_tok_s_per_gpu": float(f["total_tok_s_per_gpu"]),
            "num_gpus": round(float(f["num_gpus"])),
            "fits_in_memory": bool(f["fits_in_memory"]),
            "memory_per_gpu_gb": float(f["memory_per_gpu_bytes"]) / 1e9,
            "breakdown": breakdown,
            "plan": plan,
            "plan_label": self.plan_label(i),
            "precision": prec.id,
            "mode": mode,
            "concurrency": int(f["concurrency"]),
            "concurrency_total": int(f["concurrency"]) * int(f["dp"]),
            "max_concurrency": int(f["max_concurrency"])
            if np.isfinite(f["max_concurrency"])
            else None,
            "running_concurrency": float(f["running_concurrency"]),
            "feasible": bool(f["feasible"]),
            "reason": str(f["reason"]),
            "accuracy": self.accuracy.get(prec.id, UNKNOWN_ACCURACY),
            "economics": self._economics(float(f["output_tok_s_per_gpu"])),
            "uncertainty": dict(self._uncertainty(float(f["concurrency"]))[0]),
        }
        if region is not None:
            out["region"] = region
        if mode == "disaggregated":
            out["disaggregated"] = {
                "prefill_plan": {
                    "tp": int(f["p_tp"]),
                    "pp": int(f["p_pp"]),
                    "ep": int(f["p_ep"]),
                    "attention_dp": bool(f["p_attention_dp"]),
                    "cp": int(f["p_cp"]),
                },
                "prefill_workers": int(f["prefill_workers"]),
                "decode_workers": int(f["decode_workers"]),
                "prefill_batch_requests": int(f["p_batch"]),
                "kv_transfer_ms": float(f["kv_transfer_s"]) * 1e3,
            }
        return out

    def config_class(self, concurrency: float) -> ConfigClass:
        """The class (``specs.uncertainty``) of this frontier's points at ``concurrency``
        requests per replica (per decode worker for a disaggregated point)."""
        return config_class(
            self.model, self.hardware, self.engine.id, concurrency, self.isl, self.osl
        )

    def _uncertainty(self, concurrency: float) -> tuple[dict[str, Any], dict[str, Any]]:
        """A point's ``uncertainty`` (its class id and the id of its band per metric class, or
        None) and those bands by id."""
        bucket = concurrency_bucket(concurrency)
        hit = self._trust.get(bucket)
        if hit is None:
            cls = self.config_class(concurrency)
            bands = {m: shipped_error_bands().band(cls, m) for m in METRIC_FIELDS}
            point: dict[str, Any] = {"class_id": cls.id}
            point.update({m: b["class_id"] if b else None for m, b in bands.items()})
            hit = self._trust[bucket] = (
                point,
                {b["class_id"]: b for b in bands.values() if b is not None},
            )
        return hit

    def uncertainty_bands(self, points: Iterable[dict[str, Any]]) -> dict[str, Any]:
        """The bands the given point dicts name, by id (the document's ``uncertainty``)."""
        out: dict[str, Any] = {}
        for c in sorted({p["concurrency"] for p in points}):
            out.update(self._uncertainty(float(c))[1])
        return dict(sorted(out.items()))

    def _economics(self, tok_s_per_gpu: float) -> dict[str, Any]:
        """``serving.economics`` of one point, as plain floats (None where infinite)."""
        ins = self.economics_inputs
        out = economics(
            tok_s_per_gpu,
            self.hardware.tdp_w,
            power_w=ins.get("power_w"),
            usd_per_gpu_hour=ins.get("usd_per_gpu_hour"),
        )
        for k in ("output_tok_s_per_mw", "usd_per_million_output_tokens"):
            if out[k] is not None:
                v = float(out[k])
                out[k] = v if np.isfinite(v) else None
        return out

    def frontier_dicts(self) -> list[dict[str, Any]]:
        return [self.point_dict(int(i), str(r)) for i, r in zip(self.pareto, self.regions)]

    def best_dict(self) -> dict[str, Any] | None:
        """The best point under the targets (``report.frontier_json`` adds its launch files)."""
        return None if self.best is None else self.point_dict(self.best)

    def to_pandas(self, all_points: bool = False) -> Any:
        """The frontier points (``all_points``: every evaluated point) as a pandas DataFrame,
        one row per point with the JSON contract's fields (nested ones as ``a.b`` columns)."""
        rows = (
            [self.point_dict(i) for i in range(len(self.points))]
            if all_points
            else self.frontier_dicts()
        )
        return to_dataframe(rows)

    def to_dict(self, all_points: bool = False) -> dict[str, Any]:
        points = self.frontier_dicts()
        best = self.best_dict()
        every = [self.point_dict(i) for i in range(len(self.points))] if all_points else []
        named = points + every + ([best] if best is not None else [])
        out: dict[str, Any] = {
            "model": self.model.id,
            "hardware": self.hardware.id,
            "engine": self.engine.id,
            "num_gpus": self.num_gpus,
            "isl": self.isl,
            "osl": self.osl,
            "precisions": [p.id for p in self.precisions],
            "precision_decisions": self.precision_decisions,
            "points": points,
            "area": self.area,
            "area_definition": (
                f"mean output tok/s/GPU of the frontier staircase over tok/s/user log-uniform on "
                f"[{self.area_range[0]:g}, {self.area_range[1]:g}]"
            ),
            "area_range": list(self.area_range),
            "readings": self.readings(),
            "targets": self.targets.to_dict(),
            "slo": self.slo,
            "best": best,
            "evaluated": self.evaluated,
            "feasible": self.feasible_count,
            "elapsed_s": self.elapsed_s,
            "search": self.settings,
            "uncertainty": {
                "bands": self.uncertainty_bands(named),
                "definition": (
                    "each point's uncertainty names its class and, per metric class (ttft, "
                    "tpot, throughput), the id of its band in bands: the validation error of "
                    "that class (error = (predicted - measured) / measured; median_abs, p90_abs, "
                    "bias are fractions; n rows; backoff: dimensions dropped)"
                ),
            },
            "units": {
                "ttft_ms": "milliseconds",
                "tpot_ms": "milliseconds",
                "tok_s_per_user": "output tokens per second per user",
                "output_tok_s_per_gpu": "output tokens per second per GPU",
                "breakdown": "seconds per step, by op class",
                "concurrency": "requests in flight per replica; concurrency_total: all replicas",
                "area": "tokens/s/GPU (mean of the frontier over tokens/s/user, log-uniform)",
                "accuracy.value": "benchmark points (quantized - baseline)",
            },
        }
        if self.label:
            out["label"] = self.label
        if all_points:
            out["all_points"] = every
        return out


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A point or estimate dict with nested mappings flattened to ``a.b`` columns."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        elif not isinstance(v, list):
            out[f"{prefix}{k}"] = v
    return out


def to_dataframe(rows: list[dict[str, Any]]) -> Any:
    """A pandas DataFrame of result dicts, nested fields as ``a.b`` columns (pandas is an
    optional dependency: ``pip install pandas``)."""
    try:
        import pandas as pd
    except ImportError:
        raise UnsupportedError(
            "to_pandas needs pandas, an optional dependency: pip install pandas"
        ) from None
    return pd.DataFrame([_flat(r) for r in rows])


def plan_label(tp: int, pp: int, ep: int, adp: bool, cp: int) -> str:
    """``ParallelPlan.label`` of a plan given by its axes."""
    return ParallelPlan(tp=tp, pp=pp, ep=ep, attention_dp=adp, cp=cp).label()
