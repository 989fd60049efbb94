"""validate in bounded memory (issue 15): rows are read, mapped and priced a chunk at a time and
kept as compact records, so memory does not grow with the table (it used to hold ~5 KB a row);
the chunking changes no number."""

from __future__ import annotations

import csv
import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_codesign import validate
from llm_codesign.validate import bundled_data

ROOT = Path(__file__).resolve().parents[1]
# the package (``llm_codesign.validate`` the attribute is the function)
V = importlib.import_module("llm_codesign.validate")


def _table(path: Path, n: int) -> Path:
    """``n`` rows: copies of every 40th row of the shipped serving table (every mode)."""
    with bundled_data("serving.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    pick = rows[::40]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for i in range(n):
            w.writerow(pick[i % len(pick)])
    return path


def _peak_rss_bytes(csv_path: Path) -> int:
    """Peak RSS of ``llm-codesign validate`` on one table, in its own process."""
    p = subprocess.Popen(
        [sys.executable, "-m", "llm_codesign", "validate", "--data", str(csv_path)]
        + ["--worst", "3"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0, p.stderr.read().decode() if p.stderr else ""
    return usage.ru_maxrss * 1024  # Linux: kilobytes


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="per-process peak RSS")
def test_validate_memory_does_not_grow_with_the_table(tmp_path):
    """20,000 rows against 5,000: the extra 15,000 rows may cost their compact records
    (~100 B each), far below the ~2.5-5 KB a row that holding every row as dicts cost."""
    small = _peak_rss_bytes(_table(tmp_path / "small.csv", 5_000))
    large = _peak_rss_bytes(_table(tmp_path / "large.csv", 20_000))
    assert large - small < 15_000 * 600, (small, large)


def test_chunking_changes_no_number(monkeypatch):
    """The shipped serving table priced 97 rows at a time and all at once: identical reports
    (rows, skipped reasons and their order, summary)."""
    whole = validate(bundled_data("serving.csv")).to_dict()
    monkeypatch.setattr(V, "CHUNK_ROWS", 97)
    chunked = validate(bundled_data("serving.csv")).to_dict()
    assert chunked == whole
    assert len(whole["rows"]) > 500


def test_record_table_reads_back_what_was_appended():
    t = V.RecordTable()
    recs = [
        {f: (i if f in ("isl", "osl", "row") else f"{f}{i % 3}") for f in V.RECORD_FIELDS}
        | {"load": 1.0 * i, "measured": 2.0, "predicted": 3.0, "error": 0.5 - i}
        for i in range(5)
    ]
    for r in recs:
        t.append(r)
    assert len(t) == 5 and list(t) == recs and t[-1] == recs[-1] and t[1:3] == recs[1:3]
    assert all(type(a[f]) is type(b[f]) for a, b in zip(t, recs) for f in V.RECORD_FIELDS)
    with pytest.raises(IndexError):
        t[5]
    # a coded column's value replaced in one record: a new value and one another record holds
    t.set_value(2, "note", "marked")
    t.set_value(4, "note", "note0")
    assert t[2] == recs[2] | {"note": "marked"} and t[4] == recs[4] | {"note": "note0"}
    assert [r["note"] for r in t] == ["note0", "note1", "marked", "note0", "note0"]


def test_duplicated_rows_are_priced_as_if_each_stood_alone(tmp_path, monkeypatch):
    """A table whose rows repeat (the same configuration with another value, another metric,
    again far later, across chunk boundaries): every row's record (prediction, error, note) and
    every skip reason equal those of the row mapped and priced on its own (``predict_rows`` of
    that one row), though validate prices each distinct input once."""
    picked = []
    for name, step in (
        ("serving.csv", 52),  # static, concurrency, offline, request-rate rows
        ("inferencex_hopper.csv", 12),  # disaggregated, MTP and skipped rows
        ("aic_silicon_dense.csv", 400),
    ):
        with bundled_data(name).open(newline="", encoding="utf-8") as fh:
            picked += list(csv.DictReader(fh))[::step]
    block = []
    for k, r in enumerate(picked):
        other = V.METRICS[k % len(V.METRICS)]
        block += [r, r | {"value": str(3.0 * float(r["value"]))}, r | {"metric": other}]
    table = block + block[::-1]
    fields = list(dict.fromkeys(f for r in table for f in r))
    path = tmp_path / "repeated.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, restval="")
        w.writeheader()
        w.writerows(table)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    # each row on its own: its record's fields, or the reason it is skipped
    alone: dict[int, tuple[Any, ...]] = {}
    reasons: dict[str, int] = {}
    for i, row in enumerate(rows):
        m = V.map_row(i, row)
        if isinstance(m, str):
            reasons[m] = reasons.get(m, 0) + 1
            continue
        (p,), (note,) = V.predict_rows([m])
        if not np.isfinite(p):
            reason = f"predicted infeasible: {note}"
            reasons[reason] = reasons.get(reason, 0) + 1
            continue
        alone[i] = (
            m.model,
            m.metric,
            m.measured,
            float(p),
            float(p / m.measured - 1.0),
            "; ".join(n for n in (m.note, note) if n),
        )
    assert len(alone) > 150
    # one chunk (distinct inputs priced together), and chunks of 7 rows (remembered across)
    for chunk_rows in (V.CHUNK_ROWS, 7):
        monkeypatch.setattr(V, "CHUNK_ROWS", chunk_rows)
        report = validate(path)
        fields = ("model", "metric", "measured", "predicted", "error", "note")
        assert {r["row"]: tuple(r[f] for f in fields) for r in report.rows} == alone
        assert {s["reason"]: s["count"] for s in report.skipped} == reasons
        assert {r["mode"] for r in report.rows} >= {
            "static",
            "concurrency",
            "offline",
            "rate",
            "disaggregated",
        }
