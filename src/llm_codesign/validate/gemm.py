"""Kernel level: GEMM measurements (``../shared/groundtruth/gemm.csv`` format) against the cost
model's GEMM time."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..cost import gemm_time
from ..ops import Op
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import hardware_alias_table, load_hardware
from .mapping import has_columns, parse_int, read_measurements
from .summary import ValidationReport, skipped_list, summarize

GEMM_COLUMNS = ("source_id", "gpu", "kernel", "dtype", "m", "n", "k", "batch_or_groups", "tflops")


def is_gemm_table(path: str | Path) -> bool:
    """True when the CSV header has the kernel-table columns."""
    return has_columns(path, GEMM_COLUMNS)


def validate_gemm(
    path: str | Path, engine: str | EngineConstants | None = None
) -> ValidationReport:
    """Predict each GEMM row (TFLOP/s) with the cost model's GEMM time (tile/wave quantization,
    ceiling, memory-bound small M; grouped GEMMs as one launch over groups) plus the engine's
    per-kernel fixed cost (``default``: 3 us), as serving charges it. MAMF rows are the
    inputs of the hardware files' GEMM ceilings: reported separately as ``calibration input``
    (a self-consistency check), not as validation."""
    raw = read_measurements(path, GEMM_COLUMNS)
    eng = load_engine(engine)
    records: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()  # rows not predicted, per reason
    for i, r in enumerate(raw):
        m, n, k = (parse_int(r[c] or "") for c in ("m", "n", "k"))
        try:
            measured = float(r["tflops"])
        except ValueError:
            skipped["no TFLOPS (bandwidth or latency row)"] += 1
            continue
        if m is None or n is None or k is None:
            skipped["no GEMM shape"] += 1
            continue
        name = r["gpu"].strip().lower()
        hid = hardware_alias_table().get(name)  # kernel tables: an id or alias of a hardware file
        if hid is None:
            skipped[f"unknown gpu {r['gpu'].strip()}"] += 1
            continue
        dtype = r["dtype"].lower()
        cls = "fp8" if "fp8" in dtype else ("fp16" if dtype.startswith("fp16") else "bf16")
        hw = load_hardware(hid)
        if not hw.supports(cls):
            skipped[f"{cls} not native on {hid}"] += 1
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
        skipped_list(skipped),
        summarize(records),
    )
