"""Kernel level: MLA decode-attention timings (``data/validation/mla_decode.csv`` format) against
the cost model's decode attention op (``attention_decode`` of an MLA layer, as
``ops.layer_group_ops`` builds it for a decode step, plus the engine's per-kernel fixed cost):
one layer, ``batch`` sequences of one query token each at ``context`` cached tokens,
``num_heads`` query heads on the GPU (128 / heads = the tensor-parallel size)."""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ..cost import op_time
from ..ops import layer_group_ops, step_shape
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import load_hardware
from ..specs.model import ModelSpec, bundled_models
from ..specs.precision import parse_precision
from .mapping import has_columns, kernel_row, read_measurements
from .summary import ValidationReport, skipped_list, summarize

MLA_DECODE_COLUMNS = (
    "source_id",
    "gpu",
    "framework",
    "kv_cache_dtype",
    "num_heads",
    "batch",
    "context",
    "time_us",
)
_KV = ("bf16", "fp8")  # KV-cache formats, each the precision preset whose cache it is
# the MLA dimensions the published kernel tables ran (DeepSeek-V3's): latent rank, RoPE width and
# query heads in all; a bundled model with these dimensions supplies the layer
MLA_DIMS = (512, 64, 128)


def is_mla_decode_table(path: str | Path) -> bool:
    """True when the CSV header has the MLA decode kernel-table columns."""
    return has_columns(path, MLA_DECODE_COLUMNS)


@functools.cache
def _model() -> tuple[str, ModelSpec]:
    """(id, spec) of the first bundled model with the tables' MLA dimensions."""
    for mid, m in sorted(bundled_models().items()):
        a = m.attention
        if a.kind == "mla" and (a.kv_lora_rank, a.qk_rope_head_dim, a.num_heads) == MLA_DIMS:
            return mid, m
    raise AssertionError(f"no bundled MLA model with dimensions {MLA_DIMS}")  # pragma: no cover


def mla_decode_time(
    hw_id: str, eng: EngineConstants, kv: str, heads: int, batch: int, context: int
) -> float:
    """Seconds of one MLA layer's decode attention on one GPU (module docstring)."""
    model = _model()[1]
    tp = model.attention.num_heads // heads
    s = step_shape(tp, 1, 1, 1, False, isl=float(context), osl=0.0, decode_seqs=float(batch))
    group = next(g for g in model.layer_groups if g.mixer == "attention")
    ops = layer_group_ops(model, parse_precision(kv), group, s, 1.0)
    op = next(o for o in ops if o.name == "attention_decode")
    t = float(np.asarray(op_time(op, load_hardware(hw_id), eng, bound=False)[0]))
    return t + (op.kernels * eng.kernel_overhead_s if t > 0 else 0.0)


def validate_mla_decode(
    path: str | Path, engine: str | EngineConstants | None = None
) -> ValidationReport:
    """Predict each row's decode attention time (us) with the row's engine (``framework``:
    its per-kernel cost and, where the GPU file has no measured HBM fraction, its
    ``attn_decode_efficiency``); ``engine`` forces one engine's constants."""
    raw = read_measurements(path, MLA_DECODE_COLUMNS)
    forced = load_engine(engine) if engine is not None else None
    model_id, spec = _model()
    heads_all = spec.attention.num_heads
    records: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    for i, r in enumerate(raw):
        got = kernel_row(r, ("num_heads", "batch", "context"), "shape (num_heads, batch, context)")
        if isinstance(got, str):
            skipped[got] += 1
            continue
        measured, (heads, batch, context), hid = got
        if heads_all % heads:
            skipped[f"num_heads must divide {heads_all}"] += 1
            continue
        kv = r["kv_cache_dtype"].strip().lower()
        if kv not in _KV:
            skipped[f"kv_cache_dtype {kv} (allowed: {', '.join(_KV)})"] += 1
            continue
        eng = forced or load_engine(r["framework"].strip() or None)
        predicted = mla_decode_time(hid, eng, kv, heads, batch, context) * 1e6
        records.append(
            {
                "source_id": r["source_id"],
                "model": model_id,
                "gpu": hid,
                "precision": f"kv {kv}",
                "engine": eng.id,
                "plan": f"{heads} heads",
                "isl": context,
                "osl": 0,
                "mode": "kernel",
                "load": float(batch),
                "metric": "mla_decode_us",
                "measured": measured,
                "predicted": predicted,
                "error": predicted / measured - 1.0,
                "note": f"{r.get('kernel', '').strip() or 'kernel not stated'} "
                f"{r.get('version', '').strip()}",
                "row": i,
            }
        )
    return ValidationReport(records, skipped_list(skipped), summarize(records))
