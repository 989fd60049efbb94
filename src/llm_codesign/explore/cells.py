"""One cell of a sweep: a model x GPU x precision x workload under the sweep's common plan
limits and targets. A cell has a deterministic shard key and is evaluated by the deployment
search itself (:func:`explore.search.frontier`, the core of ``frontier`` too): every evaluated
point is streamed to a sink chunk by chunk (``on_points``), and the cell's frontier points and
one summary row (best configuration, frontier area) come back as numpy columns.

Engine-free: no Parquet and no process pool here (``llm_codesign.sweep`` writes the files and
runs the cells). Each cell's search runs serially (``workers=1``, fixed chunking), so a cell's
rows are the same whichever process or machine evaluates it.

Example:
    >>> from llm_codesign.specs import load_model, load_hardware, parse_precision
    >>> from llm_codesign.specs.engine import load_engine
    >>> cell = Cell(load_model("llama-3.1-8b"), load_hardware("h200-sxm"), parse_precision("fp8"),
    ...             load_engine(None), "chat", 1024, 256, CellSettings(num_gpus=1))
    >>> out = evaluate_cell(cell)
    >>> out.summary["status"], out.summary["frontier_points"] == len(out.frontier["tp"])
    ('ok', True)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..specs.engine import EngineConstants
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision
from .points import COLUMNS, MODES, Points
from .result import Frontier
from .search import frontier

Array = np.ndarray

SHARD_KEY_CHARS = 16  # hex digits of the sha256 naming a shard (64 bits: no collision in 10^9)

# Columns of a point row: every ``Points`` column but the precision index (a cell has one
# precision, named by the partition), with ``mode`` as its name.
POINT_COLUMNS = tuple(c for c in COLUMNS if c != "precision")
FRONTIER_EXTRA_COLUMNS = ("plan_label", "region")
# the best point's fields in the summary row (``best_<name>``; None where a cell has no best)
BEST_FIELDS: dict[str, type] = {
    "tp": int,
    "pp": int,
    "ep": int,
    "dp": int,
    "attention_dp": bool,
    "cp": int,
    "concurrency": int,
    "num_gpus": int,
    "ttft_s": float,
    "tpot_s": float,
    "tok_s_per_user": float,
    "output_tok_s_per_gpu": float,
}


@dataclass(frozen=True)
class CellSettings:
    """Plan limits, grid and targets shared by every cell of a sweep (``frontier``'s options:
    ``num_gpus`` is the GPU budget; ``refine=False`` evaluates the full concurrency grid;
    targets in ms and tok/s/user pick each cell's best configuration)."""

    num_gpus: int = 8
    max_pp: int | None = None
    helix: bool = True
    attention_dp: bool = True
    disagg: bool = False
    points_per_octave: int = 4
    max_batch: int | None = None
    refine: bool = False
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    min_tok_s_per_user: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Cell:
    """One (model, GPU, precision, workload) of a sweep. ``model_name`` is the model's name in
    the results (a variant's id); ``model_info`` describes it (base model, changed knobs)."""

    model: ModelSpec
    hardware: HardwareSpec
    precision: Precision
    engine: EngineConstants
    workload: str
    isl: int
    osl: int
    settings: CellSettings
    model_name: str = ""
    model_info: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        return self.model_name or self.model.id

    @property
    def shard(self) -> str:
        """Deterministic key of the cell: a sha256 over everything its rows depend on (the
        model's, GPU's and engine's full specs, precision, lengths, settings)."""
        ident = {
            "model": self.name,
            "model_spec": repr(self.model),
            "hardware": repr(self.hardware),
            "engine": repr(self.engine),
            "precision": self.precision.id,
            "workload": [self.workload, self.isl, self.osl],
            "settings": self.settings.to_dict(),
        }
        text = json.dumps(ident, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:SHARD_KEY_CHARS]


@dataclass
class CellOutcome:
    """A cell's frontier points (columns: ``POINT_COLUMNS`` + plan label and region), its
    summary row and the number of points the serving model evaluated."""

    frontier: dict[str, Array]
    summary: dict[str, Any]
    evaluated: int


def point_columns(p: Points) -> dict[str, Array]:
    """A chunk of evaluated points as the sweep's row columns (``POINT_COLUMNS``)."""
    out = {c: p[c] for c in POINT_COLUMNS}
    out["mode"] = np.asarray(MODES, dtype=object)[p["mode"]]
    out["reason"] = np.asarray([str(r) for r in p["reason"].tolist()], dtype=object)
    return out


def evaluate_cell(
    cell: Cell, on_points: Callable[[dict[str, Array]], None] | None = None
) -> CellOutcome:
    """Search the cell's deployments; ``on_points`` receives every evaluated chunk as
    columns. A precision the GPU cannot run is a result (status ``unsupported``), not an error.
    Only the running Pareto set is kept in memory, so a cell of any size runs in bounded
    memory."""
    s = cell.settings
    counted = [0]

    def sink(p: Points, _precisions: tuple[Precision, ...]) -> None:
        counted[0] += len(p)
        if on_points is not None:
            on_points(point_columns(p))

    try:
        f = frontier(
            cell.model,
            cell.hardware,
            s.num_gpus,
            cell.isl,
            cell.osl,
            precision=cell.precision,
            engine=cell.engine,
            ttft_ms=s.ttft_ms,
            tpot_ms=s.tpot_ms,
            min_tok_s_per_user=s.min_tok_s_per_user,
            disagg=s.disagg,
            helix=s.helix,
            attention_dp=s.attention_dp,
            max_pp=s.max_pp,
            points_per_octave=s.points_per_octave,
            max_batch=s.max_batch,
            refine=s.refine,
            keep_points="pareto",
            workers=1,
            progress=False,
            on_chunk=sink,
        )
    except UnsupportedError as exc:
        return CellOutcome(
            _frontier_columns(None), _summary(cell, None, 0, "unsupported", str(exc)), 0
        )
    status = "ok" if len(f.pareto) else "no_feasible_point"
    reason = "" if len(f.pareto) else "no plan x concurrency fits and runs"
    return CellOutcome(
        _frontier_columns(f), _summary(cell, f, counted[0], status, reason), counted[0]
    )


def _frontier_columns(f: Frontier | None) -> dict[str, Array]:
    if f is None:
        out = point_columns(Points({}))
        out["plan_label"] = np.zeros(0, dtype=object)
        out["region"] = np.zeros(0, dtype=object)
        return out
    out = point_columns(f.pareto_points())
    out["plan_label"] = np.asarray([f.plan_label(int(i)) for i in f.pareto], dtype=object)
    out["region"] = np.asarray([str(r) for r in f.regions], dtype=object)
    return out


def _summary(
    cell: Cell, f: Frontier | None, evaluated: int, status: str, reason: str
) -> dict[str, Any]:
    """The cell's summary row: identity, model facts, counts, area and the best point
    (under the targets when given, else the most tok/s/GPU); None where there is none."""
    info = cell.model_info
    row: dict[str, Any] = {
        "model": cell.name,
        "hardware": cell.hardware.id,
        "precision": cell.precision.id,
        "workload": cell.workload,
        "isl": cell.isl,
        "osl": cell.osl,
        "shard": cell.shard,
        "base_model": str(info.get("base_model", cell.model.id)),
        "changes": json.dumps(info.get("changes", {}), sort_keys=True),
        "total_params": int(cell.model.total_params),
        "active_params": int(cell.model.active_params),
        "status": status,
        "reason": reason,
        "evaluated": int(evaluated),
        "feasible": int(f.feasible_count) if f is not None else 0,
        "plans": int(f.settings["plans"]) if f is not None else 0,
        "valid_plans": int(f.settings["valid_plans"]) if f is not None else 0,
        "frontier_points": len(f.pareto) if f is not None else 0,
        "area_tok_s_per_gpu": float(f.area) if f is not None and len(f.pareto) else None,
        "best_plan": None,
    }
    best = None if f is None else f.best
    for name in BEST_FIELDS:
        row[f"best_{name}"] = None
    if f is not None and best is not None:
        c = f.points.cols
        row["best_plan"] = f.plan_label(best)
        for name, kind in BEST_FIELDS.items():
            v = c[name][best]
            row[f"best_{name}"] = kind(round(float(v)) if kind is int else v)
    return row
