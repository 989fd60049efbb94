"""Kernel level: whole fused-MoE layer timings (``data/validation/moe_layer.csv`` format)
against the cost model's MoE layer: the ops of an MoE layer's routed experts
(``ops.MOE_LAYER_OPS``: routing, permute, the two grouped GEMMs, the activation and the
finalize's bytes), each with the engine's per-kernel fixed cost, as serving charges them."""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ..cost import op_time
from ..ops import MOE_LAYER_OPS, layer_group_ops, step_shape
from ..specs.engine import MOE_KERNELS, EngineConstants, load_engine
from ..specs.hardware import HardwareSpec, load_hardware
from ..specs.model import ModelSpec, MoESpec, bundled_models
from ..specs.precision import parse_precision
from .mapping import has_columns, kernel_row, read_measurements
from .summary import ValidationReport, skipped_list, summarize

MOE_LAYER_COLUMNS = (
    "source_id",
    "gpu",
    "kernel",
    "framework",
    "path",
    "dtype",
    "tokens",
    "experts",
    "experts_local",
    "top_k",
    "hidden",
    "expert_intermediate",
    "time_us",
)
# a row whose notes say this did not time the serving kernel's expert parallelism: its collector
# ran the pairs routed to other GPUs on a local expert (SOURCES.md, moe_layer.csv)
CLAMPED_REMOTE_PAIRS = "remote pairs clamped to local expert 0"
# a row's dtype -> the precision that prices it (fp8_block: DeepSeek-V3's 128x128 block-scaled
# FP8 weights with 1x128 activation blocks; mxfp4: gpt-oss's MXFP4 weights with BF16
# activations, as Hopper runs them; mxfp4_mxfp8: the same weights with MXFP8 activations, as
# Blackwell runs them)
_DTYPES = {
    "bf16": "bf16",
    "fp8": "fp8",
    "fp8_block": "fp8+fp8_block-w",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4-a16",
    "mxfp4_mxfp8": "mxfp4-a8",
}


def is_moe_layer_table(path: str | Path) -> bool:
    """True when the CSV header has the MoE-layer kernel-table columns."""
    return has_columns(path, MOE_LAYER_COLUMNS)


@functools.cache
def _template() -> ModelSpec:
    """A bundled MoE model whose hidden size and experts a row replaces (the layer's other ops
    are not used)."""
    return next(m for _, m in sorted(bundled_models().items()) if m.moe is not None)


def moe_layer_time(
    hw_id: str | HardwareSpec,
    eng: EngineConstants,
    dtype: str,
    tokens: int,
    experts: int,
    experts_local: int,
    top_k: int,
    hidden: int,
    expert_intermediate: int,
) -> tuple[float, dict[str, float]]:
    """(seconds, seconds per op) of one MoE layer's routed experts on one GPU for ``tokens``
    tokens: ``experts_local`` of ``experts`` experts on the GPU, each ``expert_intermediate``
    wide there (gated), as ``ops.layer_group_ops`` builds them; each op that runs adds its
    kernels' fixed cost (``kernel_overhead_s``)."""
    ep = experts // experts_local
    model = dataclasses.replace(
        _template(),
        hidden_size=hidden,
        gated_ffn=True,
        moe=MoESpec(experts, top_k, expert_intermediate),
    )
    group = next(g for g in model.layer_groups if g.moe and g.ffn)
    hw = load_hardware(hw_id)
    # experts sliced over no GPU (moe_tp 1): tp = ep; the GPU sees all the tokens
    s = step_shape(ep, 1, ep, 1, False, isl=tokens, osl=1, prefill_tokens=float(tokens))
    total = 0.0
    parts: dict[str, float] = {}
    for op in layer_group_ops(model, parse_precision(_DTYPES.get(dtype, dtype)), group, s, 1.0):
        if op.name not in MOE_LAYER_OPS:
            continue
        t = float(np.asarray(op_time(op, hw, eng, bound=False)[0]))
        parts[op.name] = t
        total += t + (op.kernels * eng.kernel_overhead_s if t > 0 else 0.0)
    return total, parts


def validate_moe_layer(
    path: str | Path, engine: str | EngineConstants | None = None
) -> ValidationReport:
    """Predict each row's layer time (us). Each row names the engine whose constants price it
    (``framework``: its fixed MoE and per-kernel costs) and the kernel path (``path``,
    ``EngineConstants.moe_kernels``); ``engine`` forces one engine's constants (the row's path
    still applies)."""
    raw = read_measurements(path, MOE_LAYER_COLUMNS)
    forced = load_engine(engine) if engine is not None else None
    records: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()  # rows not predicted, per reason
    for i, r in enumerate(raw):
        got = kernel_row(r, MOE_LAYER_COLUMNS[6:12], "MoE shape")
        if isinstance(got, str):
            skipped[got] += 1
            continue
        measured, (tokens, experts, local, top_k, hidden, inter), hid = got
        if local > experts or experts % local or top_k > experts:
            skipped["experts_local must divide experts, top_k at most experts"] += 1
            continue
        dtype = r["dtype"].strip().lower()
        if dtype not in _DTYPES:
            skipped[f"dtype {dtype} (allowed: {', '.join(_DTYPES)})"] += 1
            continue
        hw = load_hardware(hid)
        if not hw.supports(parse_precision(_DTYPES[dtype]).compute_class):
            skipped[f"{dtype} not native on {hid}"] += 1
            continue
        if CLAMPED_REMOTE_PAIRS in (r.get("notes") or ""):
            skipped["remote pairs clamped to a local expert by the collector (SOURCES.md)"] += 1
            continue
        kernels = r["path"].strip()
        if kernels not in MOE_KERNELS:
            skipped[f"path {kernels} (allowed: {', '.join(MOE_KERNELS)})"] += 1
            continue
        base = forced or load_engine(r["framework"].strip() or None)
        # the tables route tokens evenly over the experts (balanced or random gating): no
        # expert is more popular than another; the row's path is the kernels it timed, weight-only
        # experts included (moe_kernels_weight_only "same")
        eng = base.with_overrides(
            moe_kernels=kernels, moe_kernels_weight_only="same", expert_balancer="uniform"
        )
        t, parts = moe_layer_time(hid, eng, dtype, tokens, experts, local, top_k, hidden, inter)
        predicted = t * 1e6
        gemm = parts.get("experts_up", 0.0) + parts.get("experts_down", 0.0)
        records.append(
            {
                "source_id": r["source_id"],
                "model": r["kernel"],
                "gpu": hid,
                "precision": dtype,
                "engine": eng.id,
                "plan": f"{local} of {experts} experts, top-{top_k}",
                "isl": tokens,
                "osl": inter,
                "mode": "kernel",
                "load": float(tokens),
                "metric": "moe_layer_us",
                "measured": measured,
                "predicted": predicted,
                "error": predicted / measured - 1.0,
                "note": (
                    f"{r.get('config', '').strip() or 'config not stated'}; hidden {hidden}; "
                    f"path {kernels}; grouped GEMMs {gemm / t:.0%} of the layer"
                ),
                "row": i,
            }
        )
    return ValidationReport(
        records,
        skipped_list(skipped),
        summarize(records),
    )
