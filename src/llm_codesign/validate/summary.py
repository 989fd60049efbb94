"""The validation report: per-row records, skipped rows with their reasons, and the error
summary per source and metric. Errors are (predicted - measured) / measured."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .mapping import metric_class


@dataclass
class ValidationReport:
    rows: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    summary: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "skipped": self.skipped, "summary": self.summary}


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per source_id and metric: count, median |error|, p90 |error|, signed median (bias), in %;
    plus per metric class over rows with a known batch/concurrency."""
    out: dict[str, Any] = {"by_source_metric": {}, "known_load": {}, "all": {}}

    def stats(errs: list[float]) -> dict[str, float]:
        e = np.asarray(errs) * 100.0
        return {
            "count": int(e.size),
            "median_abs_pct_error": float(np.median(np.abs(e))),
            "p90_abs_pct_error": float(np.percentile(np.abs(e), 90)),
            "signed_median_pct_error": float(np.median(e)),
        }

    groups: dict[str, list[float]] = {}
    known: dict[str, list[float]] = {}
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
        out["all"] = stats([r["error"] for r in records])
    return out
