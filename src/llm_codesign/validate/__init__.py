"""Validation: predict every row of a published-measurement CSV and report the error.

``mapping`` reads the tables and maps each row (or counts the reason it is skipped),
``predict`` prices the mapped rows, ``summary`` holds the report and its error statistics,
``gemm`` validates kernel-level GEMM tables, ``moe_layer`` whole fused-MoE layer timings and
``mla_decode`` MLA decode-attention kernel timings.
Errors are (predicted - measured) / measured.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..calibrate import apply_profile, load_profile, match_hardware_id
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import load_hardware
from .bands import error_bands, record_class, write_error_bands
from .consistency import TPOT_METRIC, contradicting_runs, sweep_key
from .conventions import MTP_ACCEPTANCE, MTP_DRAFT_TOKENS, parse_pools, pools_label, speculative
from .gemm import GEMM_COLUMNS, is_gemm_table, validate_gemm
from .mapping import (
    METRICS,
    REQUIRED_COLUMNS,
    THROUGHPUT_METRICS,
    MappedRow,
    RowMapper,
    iter_measurements,
    map_precision,
    map_row,
    match_gpu_name,
    match_model_name,
    matched_names,
    metric_class,
    read_measurements,
)
from .mla_decode import MLA_DECODE_COLUMNS, is_mla_decode_table, validate_mla_decode
from .moe_layer import MOE_LAYER_COLUMNS, is_moe_layer_table, validate_moe_layer
from .predict import (
    CONCURRENCY_GRID,
    OFFLINE_MAX_BATCH,
    disaggregated_inputs,
    predict_rows,
    price_key,
)
from .summary import RECORD_FIELDS, RecordTable, ValidationReport, skipped_list, summarize

__all__ = [
    "BUNDLED_GEMM_TABLE",
    "BUNDLED_MOE_LAYER_TABLE",
    "BUNDLED_SERVING_TABLES",
    "bundled_data",
    "CONCURRENCY_GRID",
    "MTP_ACCEPTANCE",
    "MTP_DRAFT_TOKENS",
    "disaggregated_inputs",
    "error_bands",
    "record_class",
    "write_error_bands",
    "parse_pools",
    "pools_label",
    "speculative",
    "GEMM_COLUMNS",
    "MLA_DECODE_COLUMNS",
    "MOE_LAYER_COLUMNS",
    "METRICS",
    "OFFLINE_MAX_BATCH",
    "REQUIRED_COLUMNS",
    "RowMapper",
    "THROUGHPUT_METRICS",
    "MappedRow",
    "RECORD_FIELDS",
    "RecordTable",
    "ValidationReport",
    "is_gemm_table",
    "is_mla_decode_table",
    "is_moe_layer_table",
    "map_precision",
    "map_row",
    "match_gpu_name",
    "match_model_name",
    "metric_class",
    "predict_rows",
    "price_key",
    "iter_measurements",
    "read_measurements",
    "summarize",
    "validate",
    "validate_gemm",
    "validate_mla_decode",
    "validate_moe_layer",
]


# the published measurements this project calibrates on, shipped with the package
# (data/validation/SOURCES.md explains each file): the serving tables validate reads by default
BUNDLED_SERVING_TABLES = (
    "serving.csv",
    "aic_silicon_dense.csv",
    "aic_silicon_moe_hopper.csv",
    "inferencex_hopper.csv",
)
BUNDLED_GEMM_TABLE = "gemm.csv"
BUNDLED_MOE_LAYER_TABLE = "moe_layer.csv"
BUNDLED_MLA_DECODE_TABLE = "mla_decode.csv"
# rows read, mapped and priced at a time (memory is bounded by one chunk, not the table)
CHUNK_ROWS = 4096
# distinct priced inputs remembered across chunks (then forgotten together: memory stays bounded)
PRICED_ENTRIES = 65_536


def bundled_data(name: str) -> Path:
    """Path of a shipped measurement table (``BUNDLED_SERVING_TABLES``, ``BUNDLED_GEMM_TABLE``,
    ``BUNDLED_MOE_LAYER_TABLE``, ``SOURCES.md``)."""
    return Path(str(resources.files("llm_codesign") / "data" / "validation" / name))


def validate(
    data: str | Path | list[str | Path] | None = None,
    *,
    engine: str | Path | EngineConstants | None = None,
    profile: str | Path | None = None,
    engines: Mapping[str, EngineConstants] | None = None,
) -> ValidationReport:
    """Predict every mappable row of one or more measurement CSVs and summarize the error.

    ``data`` None validates the shipped serving tables (``BUNDLED_SERVING_TABLES``). ``engine``
    forces one engine's constants for all rows; by default each row's framework picks
    ``trtllm``, ``vllm`` or ``sglang``; ``engines`` (engine id -> constants) replaces some of
    those, e.g. with a fitted engine. ``ValidationReport.write_bands`` turns the result into
    error bands (``specs.uncertainty``).
    """
    if data is None:
        data = [bundled_data(n) for n in BUNDLED_SERVING_TABLES]
    paths = data if isinstance(data, list) else [data]
    if len(paths) == 1 and Path(paths[0]).is_file() and is_gemm_table(paths[0]):
        return validate_gemm(paths[0], engine)
    if len(paths) == 1 and Path(paths[0]).is_file() and is_moe_layer_table(paths[0]):
        return validate_moe_layer(paths[0], engine)
    if len(paths) == 1 and Path(paths[0]).is_file() and is_mla_decode_table(paths[0]):
        return validate_mla_decode(paths[0], engine)
    matched_names.cache_clear()
    override = load_engine(engine) if engine is not None else None
    replaced = dict(engines or {}) if override is None else {override.id: override}
    prof = load_profile(profile) if profile is not None else None
    target = (prof.device.hardware_id or match_hardware_id(prof.device.name)) if prof else None
    hw_over: dict[str, Any] = {}
    records = RecordTable()
    # each record's closed-loop run (validate.consistency): an id into run_ids' keys (sweep key,
    # concurrency), -1 for a row of another mode (a code a record, as the records keep theirs)
    run_ids: dict[tuple[Any, float], int] = {}
    runs = array("i")
    map_skips: dict[str, int] = {}
    predict_skips: dict[str, int] = {}
    mapper = RowMapper()
    # a record's shared part (everything but its source, value, error and row), or the reason
    # it is not predicted, per distinct (price_key, mapping note): each distinct
    # input is priced once per run (at most PRICED_ENTRIES remembered at a time)
    priced: dict[tuple[Any, ...], dict[str, Any] | str] = {}
    # every table's columns are checked before the first row is priced
    rows = itertools.chain.from_iterable([iter_measurements(p) for p in paths])
    # rows are read, mapped and priced CHUNK_ROWS at a time: memory holds one chunk and the
    # compact records, whatever the size of the tables (every row is priced on its own, so
    # the chunking changes no number)
    for start, chunk in _chunks(rows, CHUNK_ROWS):
        mapped: list[tuple[int, str, float, tuple[Any, ...]]] = []
        new: dict[tuple[Any, ...], MappedRow] = {}
        if len(priced) >= PRICED_ENTRIES:
            priced.clear()
        for i, row in enumerate(chunk, start):
            m = mapper.shared(i, row)
            if isinstance(m, str):
                map_skips[m] = map_skips.get(m, 0) + 1
                continue
            first, measured = m
            key = (price_key(first), first.note)
            if key not in priced and key not in new:
                new[key] = first
            sweep = sweep_key(row["source_id"], first)
            run = -1 if sweep is None else run_ids.setdefault((sweep, first.load), len(run_ids))
            mapped.append((i, row["source_id"], measured, key, run))
        del chunk
        fresh = list(new.values())
        if prof is not None and target not in hw_over and any(r.hardware == target for r in fresh):
            # the profile overlays its own GPU's rows; other GPUs keep their datasheet specs
            hw_over[target] = apply_profile(load_hardware(target), prof)
        preds, notes = predict_rows(
            fresh, engines=replaced, engine_override=override, hw_override=hw_over or None
        )
        for key, r, p, note in zip(new, fresh, preds, notes):
            priced[key] = (
                f"predicted infeasible: {note}"
                if not np.isfinite(p)
                else {
                    "model": r.model,
                    "gpu": r.hardware,
                    "precision": r.precision,
                    "engine": r.engine if override is None else override.id,
                    "plan": r.plan_label,
                    "isl": r.isl,
                    "osl": r.osl,
                    "mode": r.mode,
                    "load": r.load,
                    "metric": r.metric,
                    "predicted": float(p),
                    "note": "; ".join(n for n in (r.note, note) if n),
                }
            )
        for i, source_id, measured, key, run in mapped:
            shared = priced[key]
            if isinstance(shared, str):
                predict_skips[shared] = predict_skips.get(shared, 0) + 1
                continue
            runs.append(run)
            records.append(
                shared
                | {
                    "source_id": source_id,
                    "measured": measured,
                    "error": float(shared["predicted"] / measured - 1.0),
                    "row": i,
                }
            )
    marked = _mark_contradicting_runs(records, runs, list(run_ids))
    skipped = {**map_skips}
    for k, v in predict_skips.items():
        skipped[k] = skipped.get(k, 0) + v
    return ValidationReport(
        records,
        skipped_list(skipped),
        summarize(records),
        [Path(p) for p in paths],
        replaced,
        skipped_list(marked),
    )


def _mark_contradicting_runs(
    records: RecordTable, runs: array, run_keys: list[tuple[Any, float]]
) -> dict[str, int]:
    """End the note of every record of a closed-loop run that contradicts its own sweep
    (``validate.consistency``; ``runs``: each record's index into ``run_keys``, -1 for none)
    with the reason: such rows stay in the error figures as measured, marked. Returns the
    marked records counted by run (its source and configuration, and the reason)."""
    metrics, names = records.codes("metric")
    measured = records.column("measured")
    tpot = names.index(TPOT_METRIC) if TPOT_METRIC in names else -1
    points = [
        (*run_keys[run], float(measured[k]))
        for k, run in enumerate(runs)
        if run >= 0 and metrics[k] == tpot
    ]
    flagged = contradicting_runs(points)
    marked: dict[str, int] = {}
    if not flagged:
        return marked
    for k, run in enumerate(runs):
        reason = flagged.get(run_keys[run]) if run >= 0 else None
        if reason is not None:
            rec = records[k]
            records.set_value(k, "note", "; ".join(n for n in (rec["note"], reason) if n))
            what = (
                f"{rec['source_id']}: {rec['model']} on {rec['gpu']}, {rec['engine']} "
                f"{rec['plan']}, {rec['isl']}/{rec['osl']}: {reason}"
            )
            marked[what] = marked.get(what, 0) + 1
    return marked


def _chunks(
    rows: Iterator[dict[str, str]], size: int
) -> Iterator[tuple[int, list[dict[str, str]]]]:
    """(index of the first row, up to ``size`` rows) until the rows run out."""
    start = 0
    while chunk := list(itertools.islice(rows, size)):
        yield start, chunk
        start += len(chunk)
