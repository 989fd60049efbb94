"""The error bands (``specs.uncertainty``) from validation records: each record's class, and
per class at every back-off level the count, median and p90 |error| and median error.

``llm-codesign validate --write-bands PATH`` writes them for the data it validated;
``calibrate-fit --bands PATH`` for the shipped tables priced with the fitted engine. The shipped
file (``data/validation/error_bands.json``) is ``validate --write-bands`` on the shipped tables
with the shipped engines; ``tests/test_uncertainty.py`` regenerates it, so it cannot go stale.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..outputs import write_text
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import load_hardware
from ..specs.model import load_model
from ..specs.uncertainty import (
    BANDS_FORMAT,
    CONCURRENCY_BUCKETS,
    DIMENSIONS,
    LENGTH_RATIO,
    MIN_ROWS,
    concurrency_bucket,
    generation,
    length_band,
    model_kind,
)
from .mapping import metric_class

# serving modes whose load is a known concurrency or batch (the others are their own bucket)
KNOWN_LOAD_MODES = ("concurrency", "static", "disaggregated")
# digits kept of each statistic (a fraction): the file stays the same across float noise
DIGITS = 6


def record_class(record: Mapping[str, Any]) -> tuple[str, ...]:
    """A validation record's full class, in ``DIMENSIONS`` order."""
    mode = record["mode"]
    return (
        metric_class(record["metric"]),
        model_kind(load_model(record["model"])),
        generation(load_hardware(record["gpu"])),
        record["engine"],
        concurrency_bucket(record["load"]) if mode in KNOWN_LOAD_MODES else mode,
        length_band(int(record["isl"]), int(record["osl"])),
    )


def band_stats(errors: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """n, median and p90 of |error|, median error (fractions, ``DIGITS`` decimals)."""
    e = np.asarray(errors, dtype=float)
    return {
        "n": int(e.size),
        "median_abs": round(float(np.median(np.abs(e))), DIGITS),
        "p90_abs": round(float(np.percentile(np.abs(e), 90)), DIGITS),
        "bias": round(float(np.median(e)), DIGITS),
    }


def class_errors(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str | None, ...], list[float]]:
    """The errors of every class at every back-off level (a record counts once per level)."""
    out: dict[tuple[str | None, ...], list[float]] = {}
    n = len(DIMENSIONS)
    for r in records:
        full = record_class(r)
        for dropped in range(n):
            keys = full[: n - dropped] + (None,) * dropped
            out.setdefault(keys, []).append(float(r["error"]))
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def error_bands(
    records: Sequence[Mapping[str, Any]],
    tables: Sequence[str | Path],
    engines: Mapping[str, EngineConstants] | None = None,
) -> dict[str, Any]:
    """The error-bands document of validation ``records`` read from ``tables``: definition,
    provenance (SHA-256 of each table and of each engine's constants) and the classes, sorted.
    ``engines`` are the constants the records were priced with where not the bundled ones."""
    classes = [
        {"keys": list(keys), **band_stats(errs)}
        for keys, errs in sorted(
            class_errors(records).items(),
            key=lambda kv: tuple("" if k is None else k for k in kv[0]),
        )
    ]
    used = sorted({r["engine"] for r in records})
    constants = {e: (engines or {}).get(e) or load_engine(e) for e in used}
    return {
        "format": BANDS_FORMAT,
        "generated_by": "llm-codesign validate --write-bands (llm_codesign.validate.bands)",
        "error": "(predicted - measured) / measured of each validated row",
        "statistics": {
            "n": "validated rows in the class",
            "median_abs": "median |error| (fraction)",
            "p90_abs": "90th percentile of |error| (fraction)",
            "bias": "median error (fraction; positive: predicted too high)",
        },
        "dimensions": list(DIMENSIONS),
        "backoff": "a lookup drops dimensions from the last (lengths) to the second (kind) "
        "until a class holds at least min_rows rows; null keys are dropped dimensions",
        "min_rows": MIN_ROWS,
        "concurrency_buckets": [list(b) for b in CONCURRENCY_BUCKETS],
        "length_ratio": LENGTH_RATIO,
        "inputs": {
            "tables": {Path(t).name: _sha256(Path(t).read_bytes()) for t in tables},
            "engines": {
                e: _sha256(json.dumps(c.to_dict(), sort_keys=True, default=str).encode())
                for e, c in constants.items()
            },
        },
        "rows": len(records),
        "classes": classes,
    }


def write_error_bands(path: str | Path, document: Mapping[str, Any]) -> Path:
    """Write an ``error_bands`` document (atomically), one class per line."""
    head = {k: v for k, v in document.items() if k != "classes"}
    body = ",\n".join("    " + json.dumps(c) for c in document["classes"])
    text = json.dumps(head, indent=2)[:-2] + ',\n  "classes": [\n' + body + "\n  ]\n}\n"
    return write_text(path, text)
