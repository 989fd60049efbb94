"""The validation report: per-row records, skipped rows with their reasons, and the error
summary per source and metric. Errors are (predicted - measured) / measured."""

from __future__ import annotations

import csv
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np

from ..errors import SpecError
from ..outputs import AtomicWriter
from ..specs.engine import EngineConstants
from .bands import error_bands, write_error_bands
from .mapping import metric_class

# the columns of a validation record (``validate --out`` writes them in this order)
RECORD_FIELDS = (
    "source_id",
    "model",
    "gpu",
    "precision",
    "engine",
    "plan",
    "isl",
    "osl",
    "mode",
    "load",
    "metric",
    "measured",
    "predicted",
    "error",
    "note",
    "row",
)
# numeric columns (array typecodes); every other column holds a few distinct values, kept once
# and referred to by a 4-byte code
_NUMERIC = {
    "isl": "q",
    "osl": "q",
    "row": "q",
    "load": "d",
    "measured": "d",
    "predicted": "d",
    "error": "d",
}


class RecordTable(Sequence[dict[str, Any]]):
    """Validation records in columns: about 100 bytes a row instead of a dict's kilobyte, so a
    million-row table fits; reads back as dicts (``RECORD_FIELDS``, the same values and types
    that were appended)."""

    def __init__(self) -> None:
        self._cols = {f: array(_NUMERIC.get(f, "i")) for f in RECORD_FIELDS}
        self._codes: dict[str, dict[Any, int]] = {f: {} for f in RECORD_FIELDS if f not in _NUMERIC}
        self._values: dict[str, list[Any]] = {f: [] for f in self._codes}

    def append(self, record: dict[str, Any]) -> None:
        for f in RECORD_FIELDS:
            v = record[f]
            codes = self._codes.get(f)
            if codes is not None:
                code = codes.get(v)
                if code is None:
                    code = codes[v] = len(self._values[f])
                    self._values[f].append(v)
                v = code
            self._cols[f].append(v)

    def set_value(self, i: int, name: str, value: Any) -> None:
        """Replace record ``i``'s value of the coded (non-numeric) column ``name``."""
        codes = self._codes[name]
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(self._values[name])
            self._values[name].append(value)
        self._cols[name][i] = code

    def __len__(self) -> int:
        return len(self._cols["row"])

    def _row(self, i: int) -> dict[str, Any]:
        return {
            f: (self._values[f][col[i]] if f in self._values else col[i])
            for f, col in self._cols.items()
        }

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self._row(k) for k in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        return self._row(i % n)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self._row(k) for k in range(len(self)))

    def column(self, name: str) -> np.ndarray:
        """One numeric column as an array (no dicts made)."""
        return np.frombuffer(
            self._cols[name], dtype=np.float64 if _NUMERIC[name] == "d" else np.int64
        )

    def codes(self, name: str) -> tuple[np.ndarray, list[Any]]:
        """One coded (non-numeric) column: each row's code, and the value of each code."""
        return np.frombuffer(self._cols[name], dtype=np.int32), self._values[name]

    def tuples(self, block: int = 65_536) -> Iterator[tuple[Any, ...]]:
        """The records as tuples in ``RECORD_FIELDS`` order, the same values as iterating, made
        ``block`` rows at a time from the columns (faster than dicts; memory of one block)."""
        for a in range(0, len(self), block):
            cols = []
            for f, col in self._cols.items():
                part = col[a : a + block].tolist()
                values = self._values.get(f)
                cols.append(part if values is None else [values[c] for c in part])
            yield from zip(*cols)


def skipped_list(counts: dict[str, int]) -> list[dict[str, Any]]:
    """Rows not predicted, per reason (most frequent first), as a report lists them."""
    return [{"reason": k, "count": v} for k, v in sorted(counts.items(), key=lambda kv: -kv[1])]


@dataclass
class ValidationReport:
    rows: Sequence[dict[str, Any]]
    skipped: list[dict[str, Any]]
    summary: dict[str, Any]
    # the serving tables validated and the constants that replaced bundled engines (error bands)
    tables: list[Path] = field(default_factory=list)
    engines: dict[str, EngineConstants] = field(default_factory=dict)
    # rows kept in the figures whose closed-loop run contradicts its own concurrency sweep
    # (validate.consistency), per reason as ``skipped`` lists them; their notes say it too
    marked: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": list(self.rows), "skipped": self.skipped, "summary": self.summary}

    def worst(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` rows of largest |error| (ties in row order), without sorting every row."""
        if isinstance(self.rows, RecordTable):
            err = np.abs(self.rows.column("error"))
            order = np.argsort(-err, kind="stable")[:n]
            return [self.rows[int(k)] for k in order]
        return sorted(self.rows, key=lambda r: -abs(r["error"]))[:n]

    def error_bands(self) -> dict[str, Any]:
        """The error-bands document of these rows (``validate.bands``, ``specs.uncertainty``)."""
        if not self.tables:
            raise SpecError("error bands come from serving tables; this report validated none")
        return error_bands(self.rows, self.tables, self.engines)

    def write_bands(self, path: str | Path) -> Path:
        """Write ``error_bands`` to ``path`` atomically (the shipped file is
        ``data/validation/error_bands.json``)."""
        return write_error_bands(path, self.error_bands())

    def write_csv(self, path: str | Path) -> Path:
        """The per-row records as CSV (``RECORD_FIELDS``), written atomically and streamed."""
        with AtomicWriter(path) as fh:
            if isinstance(self.rows, RecordTable):
                w = csv.writer(fh)
                w.writerow(RECORD_FIELDS)
                w.writerows(self.rows.tuples())
            else:
                dw = csv.DictWriter(fh, fieldnames=RECORD_FIELDS)
                dw.writeheader()
                dw.writerows(self.rows)
        return Path(path)


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per source_id and metric: count, median |error|, p90 |error|, signed median (bias), in %;
    plus per metric class over rows with a known batch/concurrency."""
    out: dict[str, Any] = {"by_source_metric": {}, "known_load": {}, "all": {}}

    def stats(errs: Sequence[float] | np.ndarray) -> dict[str, float]:
        e = np.asarray(errs) * 100.0
        return {
            "count": int(e.size),
            "median_abs_pct_error": float(np.median(np.abs(e))),
            "p90_abs_pct_error": float(np.percentile(np.abs(e), 90)),
            "signed_median_pct_error": float(np.median(e)),
        }

    groups: dict[str, Any] = {}
    known: dict[str, Any] = {}
    if isinstance(records, RecordTable):
        groups, known = _grouped_errors(records)
    else:
        for r in records:
            groups.setdefault(f"{r['source_id']}|{r['metric']}", []).append(r["error"])
            if r["mode"] in ("concurrency", "static", "disaggregated"):
                cls = metric_class(r["metric"])
                known.setdefault(cls, []).append(r["error"])
    for k, v in sorted(groups.items()):
        src, metric = k.split("|")
        out["by_source_metric"].setdefault(src, {})[metric] = stats(v)
    for k, v in sorted(known.items()):
        out["known_load"][k] = stats(v)
    if records:
        out["all"] = stats(
            records.column("error")
            if isinstance(records, RecordTable)
            else [r["error"] for r in records]
        )
    return out


def _grouped_errors(records: RecordTable) -> tuple[dict[str, Any], dict[str, Any]]:
    """``summarize``'s groups from the columns (no dicts made): the errors, in row order, per
    ``source|metric`` and per metric class over the rows of known load."""
    err = records.column("error")
    src, src_values = records.codes("source_id")
    metric, metric_values = records.codes("metric")
    mode, mode_values = records.codes("mode")
    pair = src.astype(np.int64) * len(metric_values) + metric
    groups = {}
    for code in np.unique(pair).tolist():
        s_code, m_code = divmod(code, len(metric_values))
        groups[f"{src_values[s_code]}|{metric_values[m_code]}"] = err[pair == code]
    known_mode = np.isin(
        mode,
        [k for k, m in enumerate(mode_values) if m in ("concurrency", "static", "disaggregated")],
    )
    classes = sorted({metric_class(m) for m in metric_values})
    cls = np.array([classes.index(metric_class(m)) for m in metric_values], dtype=np.int64)
    row_cls = cls[metric]
    known = {
        classes[c]: err[known_mode & (row_cls == c)]
        for c in np.unique(row_cls[known_mode]).tolist()
    }
    return groups, known
