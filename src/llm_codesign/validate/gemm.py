"""Kernel level: GEMM measurements (``../shared/groundtruth/gemm.csv`` format) against the cost
model's GEMM time."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ..cost import gemm_time
from ..errors import DataFileError
from ..ops import Op
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import hardware_alias_table, load_hardware
from .mapping import parse_int
from .summary import ValidationReport, summarize

GEMM_COLUMNS = ("source_id", "gpu", "kernel", "dtype", "m", "n", "k", "batch_or_groups", "tflops")


def is_gemm_table(path: str | Path) -> bool:
    """True when the CSV header has the kernel-table columns (unreadable files: False, and
    read_measurements reports them)."""
    try:
        with Path(path).open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return all(c in header for c in GEMM_COLUMNS)


def validate_gemm(
    path: str | Path, engine: str | EngineConstants | None = None
) -> ValidationReport:
    """Predict each GEMM row (TFLOP/s) with the cost model's GEMM time (tile/wave quantization,
    ceiling, memory-bound small M; grouped GEMMs as one launch over groups) plus the engine's
    per-kernel fixed cost (``default``: 3 us), as serving charges it. MAMF rows are the
    inputs of the hardware files' GEMM ceilings: reported separately as ``calibration input``
    (a self-consistency check), not as validation."""
    p = Path(path)
    if not p.is_file():
        raise DataFileError(f"{p}: no such file")
    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in GEMM_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataFileError(f"{p}: missing column(s) {', '.join(missing)}")
        raw = list(reader)
    eng = load_engine(engine)
    records: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for i, r in enumerate(raw):
        m, n, k = (parse_int(r[c] or "") for c in ("m", "n", "k"))
        try:
            measured = float(r["tflops"])
        except ValueError:
            skip("no TFLOPS (bandwidth or latency row)")
            continue
        if m is None or n is None or k is None:
            skip("no GEMM shape")
            continue
        name = r["gpu"].strip().lower()
        hid = hardware_alias_table().get(name)  # kernel tables: an id or alias of a hardware file
        if hid is None:
            skip(f"unknown gpu {r['gpu'].strip()}")
            continue
        dtype = r["dtype"].lower()
        cls = "fp8" if "fp8" in dtype else ("fp16" if dtype.startswith("fp16") else "bf16")
        hw = load_hardware(hid)
        if not hw.supports(cls):
            skip(f"{cls} not native on {hid}")
            continue
        groups = float(parse_int(r["batch_or_groups"] or "") or 1)
        op = Op(
            "gemm",
            "ffn",
            "gemm",
            1.0,
            m=float(m),
            n=float(n),
            k=float(k),
            groups=groups,
            touched=groups,
            w_bytes=1.0 if cls == "fp8" else 2.0,
            a_bytes=1.0 if cls == "fp8" else 2.0,
            o_bytes=2.0,
            compute_class=cls,
        )
        t, _, mem = gemm_time(op, hw, eng)
        # one launch: the same fixed per-kernel cost serving adds per kernel
        predicted = 2.0 * m * n * k * groups / (float(t) + eng.kernel_overhead_s) / 1e12
        source = r["source_id"] + (
            " (calibration input)" if r["source_id"] == "mlengineering_mamf" else ""
        )
        records.append(
            {
                "source_id": source,
                "model": r["kernel"],
                "gpu": hid,
                "precision": cls,
                "engine": eng.id,
                "plan": "",
                "isl": m,
                "osl": n,
                "mode": "kernel",
                "load": groups,
                "metric": "tflops",
                "measured": measured,
                "predicted": predicted,
                "error": predicted / measured - 1.0,
                "note": (
                    f"m={m} n={n} k={k} groups={int(groups)}; "
                    f"{'memory' if float(mem) >= float(t) * 0.999 else 'compute'}-bound"
                ),
                "row": i,
            }
        )
    return ValidationReport(
        records,
        [{"reason": k2, "count": v} for k2, v in sorted(skipped.items(), key=lambda kv: -kv[1])],
        summarize(records),
    )
