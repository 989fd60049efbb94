"""Every evaluated point of a sweep as CSV, written atomically (``outputs.AtomicWriter``: an
interrupted run leaves no file) and streamed chunk by chunk for sweeps too large to keep in
memory."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import numpy as np

from ..ops import OP_CLASSES
from ..outputs import AtomicWriter
from ..specs.precision import Precision
from .points import MODES, PHASES, Points
from .result import Frontier

Array = np.ndarray


CSV_FIELDS = (
    "precision",
    "mode",
    "tp",
    "pp",
    "ep",
    "dp",
    "attention_dp",
    "cp",
    "concurrency",
    "ttft_ms",
    "tpot_ms",
    "tok_s_per_user",
    "output_tok_s_per_gpu",
    "total_tok_s_per_gpu",
    "num_gpus",
    "fits_in_memory",
    "memory_per_gpu_gb",
    "max_concurrency",
    "running_concurrency",
    "feasible",
    "reason",
    "pareto",
    "prefill_tp",
    "prefill_pp",
    "prefill_ep",
    "prefill_attention_dp",
    "prefill_cp",
    "prefill_batch",
    "prefill_workers",
    "decode_workers",
    "kv_transfer_ms",
) + tuple(f"{p}_{c}_s" for p in PHASES for c in OP_CLASSES)


def csv_rows(
    p: Points, precisions: Sequence[Precision], pareto: Array | None = None
) -> Iterator[list[Any]]:
    """Rows (lists in ``CSV_FIELDS`` order) for a Points table; ``pareto`` marks frontier rows."""
    c = p.cols
    flag = np.zeros(len(p), dtype=bool)
    if pareto is not None:
        flag[pareto] = True
    names = np.array([q.id for q in precisions], dtype=object)

    def fmt(a: Array) -> list[Any]:
        return ["" if not np.isfinite(v) else f"{v:.6g}" for v in a.tolist()]

    cols = [
        names[c["precision"]].tolist(),
        np.array(MODES, dtype=object)[c["mode"]].tolist(),
        c["tp"].tolist(),
        c["pp"].tolist(),
        c["ep"].tolist(),
        c["dp"].tolist(),
        c["attention_dp"].astype(int).tolist(),
        c["cp"].tolist(),
        fmt(c["concurrency"]),
        fmt(c["ttft_s"] * 1e3),
        fmt(c["tpot_s"] * 1e3),
        fmt(c["tok_s_per_user"]),
        fmt(c["output_tok_s_per_gpu"]),
        fmt(c["total_tok_s_per_gpu"]),
        fmt(c["num_gpus"]),
        c["fits_in_memory"].astype(int).tolist(),
        fmt(c["memory_per_gpu_bytes"] / 1e9),
        fmt(c["max_concurrency"]),
        fmt(c["running_concurrency"]),
        c["feasible"].astype(int).tolist(),
        [str(r) for r in c["reason"].tolist()],
        (flag.astype(int).tolist() if pareto is not None else [""] * len(p)),
        c["p_tp"].tolist(),
        c["p_pp"].tolist(),
        c["p_ep"].tolist(),
        c["p_attention_dp"].astype(int).tolist(),
        c["p_cp"].tolist(),
        c["p_batch"].tolist(),
        c["prefill_workers"].tolist(),
        c["decode_workers"].tolist(),
        fmt(c["kv_transfer_s"] * 1e3),
    ] + [fmt(c[f"bd_{ph}_{cl}"]) for ph in PHASES for cl in OP_CLASSES]
    return (list(r) for r in zip(*cols))


def write_csv(result: Frontier | Sequence[Frontier], path: str | Path) -> Path:
    """Every kept point (all evaluated points unless the sweep streamed) with a ``pareto`` flag;
    several frontiers (``compare``) add a leading ``design`` column."""
    frs = [result] if isinstance(result, Frontier) else list(result)
    multi = len(frs) > 1
    with AtomicWriter(path) as fh:
        w = csv.writer(fh)
        w.writerow((("design",) if multi else ()) + CSV_FIELDS)
        for f in frs:
            rows = csv_rows(f.points, f.precisions, f.pareto)
            w.writerows(([f.label] + r for r in rows) if multi else rows)
    return Path(path)


class StreamingCSV:
    """An ``on_chunk`` sink writing every evaluated point as it arrives (``pareto`` left blank),
    renamed into place by ``commit()``; ``abort()`` (or an exception in ``with``) removes it."""

    def __init__(self, path: str | Path):
        self._atomic = AtomicWriter(path)
        self._fh = self._atomic.__enter__()
        self._w = csv.writer(self._fh)
        self._w.writerow(CSV_FIELDS)

    def __call__(self, p: Points, precisions: tuple[Precision, ...]) -> None:
        self._w.writerows(csv_rows(p, precisions))

    def commit(self) -> None:
        self._atomic.__exit__(None, None, None)

    def abort(self) -> None:
        self._atomic.__exit__(KeyboardInterrupt, None, None)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
