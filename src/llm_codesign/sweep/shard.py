"""One shard of a sweep, run where an executor puts it (this process, a forked worker, a Ray
task): the cell's search (``explore.cells.evaluate_cell``) with its points, frontier and summary
encoded as Parquet bytes. Nothing is written here: the driver writes the files
(``sweep.store.Store``), so a shard that is killed leaves nothing behind and a Ray cluster
needs no shared filesystem."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..explore.cells import BEST_FIELDS, POINT_COLUMNS, Cell, evaluate_cell
from ..explore.points import Points
from .store import PartWriter, arrow_table, parquet_bytes, pyarrow_modules

# Columns every row of a cell carries besides the point's own: the workload (the partition
# columns model, hardware and precision are in the path).
WORKLOAD_COLUMNS = ("workload", "isl", "osl")

_SUMMARY_STRINGS = {"model", "hardware", "precision", "workload", "shard", "base_model"}
_SUMMARY_STRINGS |= {"changes", "status", "reason", "best_plan"}
_SUMMARY_FLOATS = {"area_tok_s_per_gpu"}


@dataclass(frozen=True)
class ShardTask:
    cell: Cell
    write_points: bool = True


@dataclass
class ShardOutput:
    """A finished shard: its Parquet files as bytes and its summary row."""

    shard: str
    ids: dict[str, str]
    points: bytes | None
    frontier: bytes
    summary: bytes
    row: dict[str, Any]
    evaluated: int


def _with_workload(cols: dict[str, Any], cell: Cell) -> dict[str, Any]:
    n = len(cols["tp"])
    out: dict[str, Any] = {
        "workload": np.full(n, cell.workload, dtype=object),
        "isl": np.full(n, cell.isl, dtype=np.int64),
        "osl": np.full(n, cell.osl, dtype=np.int64),
    }
    out.update(cols)
    return out


def summary_schema(names: list[str]) -> Any:
    """The summary table's schema, in the row's column order, with fixed types (so cells
    without a best point, whose fields are null, concatenate with cells that have one)."""
    pa, _ = pyarrow_modules()
    kinds = {int: pa.int64(), bool: pa.bool_(), float: pa.float64()}
    best = {f"best_{n}": kinds[k] for n, k in BEST_FIELDS.items()}

    def kind(name: str) -> Any:
        if name in _SUMMARY_STRINGS:
            return pa.string()
        if name in _SUMMARY_FLOATS:
            return pa.float64()
        return best.get(name, pa.int64())

    return pa.schema([(n, kind(n)) for n in names])


def run_shard(task: ShardTask) -> ShardOutput:
    """Evaluate the task's cell and encode its files."""
    cell = task.cell
    points = PartWriter() if task.write_points else None
    sink = (lambda cols: points(_with_workload(cols, cell))) if points is not None else None
    outcome = evaluate_cell(cell, sink)
    empty = _with_workload({c: v[:0] for c, v in _empty_point_columns().items()}, cell)
    pa, _ = pyarrow_modules()
    row = outcome.summary
    schema = summary_schema(list(row))
    summary = pa.Table.from_pylist([row], schema=schema)
    return ShardOutput(
        shard=cell.shard,
        ids={"model": cell.name, "hardware": cell.hardware.id, "precision": cell.precision.id},
        points=points.close(empty) if points is not None else None,
        frontier=parquet_bytes(arrow_table(_with_workload(outcome.frontier, cell))),
        summary=parquet_bytes(summary),
        row=row,
        evaluated=outcome.evaluated,
    )


def _empty_point_columns() -> dict[str, Any]:
    from ..explore.cells import point_columns

    cols = point_columns(Points({}))
    assert tuple(cols) == POINT_COLUMNS
    return cols
