"""Quantization error of real weights: per tensor, per layer and per format.

SQNR (dB) = ``10 log10(sum x^2 / sum (x - dequant(quant(x)))^2)`` over a tensor (or a layer, or
all quantized tensors of a format), relative error = ``sqrt(sum err^2 / sum x^2)`` (relative
Frobenius error), blocks along the last (input) dimension. A lossless result has
``sqnr_db = None`` in the JSON (infinite). A tensor holding NaN or inf has no defined error: its
rows carry ``nonfinite_values`` > 0 with ``sqnr_db = None``, it is kept out of the format's
totals and listed in the summary's ``nonfinite_tensors``.

Tensors are streamed: headers first, then one memory-mapped tensor at a time, quantized in row
chunks of about 4M elements, so memory stays bounded by a chunk's temporaries plus the pages of
the tensor being read, never the whole model.

Example:
    >>> result = inspect_checkpoint("model.safetensors", ["nvfp4", "w4a16"])  # doctest: +SKIP
    >>> result["summary"]["nvfp4"]["sqnr_db"]  # doctest: +SKIP
    20.7
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import SpecError
from .numerics import (
    _GRANULARITY,
    TILE,
    _abs_max_last,
    _as_2d,
    _finite_amax,
    dequantize,
    quantize,
    resolve_format,
)
from .packing import packed_nbytes
from .safetensors_io import FLOAT_DTYPES, list_tensors, load_tensor

CHUNK_ELEMENTS = 1 << 22
_LAYER_RE = re.compile(r"^(.*?(?:^|\.)(?:layers|layer|h|blocks|block)\.\d+)\.")


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _sqnr_db(signal: float, error: float) -> float:
    if error == 0:
        return math.inf if signal > 0 else math.nan
    if signal == 0:
        return -math.inf
    return 10.0 * math.log10(signal / error)


def _rel_error(signal: float, error: float) -> float:
    if signal == 0:
        return 0.0 if error == 0 else math.inf
    return math.sqrt(error / signal)


def layer_of(name: str) -> str:
    """Layer a tensor belongs to: ``model.layers.3.mlp.up_proj.weight`` -> ``model.layers.3``;
    tensors outside the repeated blocks are their own group (``lm_head``)."""
    match = _LAYER_RE.match(name)
    if match:
        return match.group(1)
    return name.removesuffix(".weight")


def _row_chunks(rows: int, cols: int, kind: str, chunk_elements: int) -> list[tuple[int, int]]:
    step = max(1, chunk_elements // max(cols, 1))
    if kind == "tile":
        step = -(-step // TILE) * TILE  # whole 128-row tiles per chunk
    return [(r, min(r + step, rows)) for r in range(0, rows, step)]


def _chunked_tensor_amax(x2: np.ndarray, chunks: list[tuple[int, int]]) -> float:
    amax = 0.0
    for r0, r1 in chunks:
        part = np.asarray(x2[r0:r1]).reshape(1, -1)
        finite, _ = _finite_amax(part, _abs_max_last(part))
        amax = max(amax, float(finite[0]))
    return amax


def error_stats(
    x: ArrayLike,
    format_id: str,
    *,
    role: str = "weight",
    chunk_elements: int = CHUNK_ELEMENTS,
) -> dict[str, Any]:
    """Quantization error of one tensor in one format.

    Returns a dict with ``format`` (as given), ``format_id`` (canonical), ``shape``, ``numel``,
    ``signal_energy`` and ``error_energy`` (sums of squares, float64), ``sqnr_db``,
    ``rel_error``, ``max_abs_error``, ``saturated_blocks``, ``n_blocks``,
    ``saturated_block_share``, ``bytes_before`` (source dtype) and ``bytes`` (packed).
    Per-tensor scales (``fp8``, ``nvfp4``'s second level) come from the whole tensor even though
    it is processed in row chunks.

    Example:
        >>> s = error_stats(np.ones((4, 32), np.float32), "mxfp4")
        >>> s["sqnr_db"], s["bytes"]
        (inf, 68)
    """
    fmt = resolve_format(format_id)
    kind = _GRANULARITY[fmt.id]
    arr = x if isinstance(x, np.ndarray) else np.asarray(x)
    shape = tuple(int(d) for d in arr.shape)
    if arr.size == 0:
        raise SpecError(f"cannot quantize an empty tensor of shape {shape}")
    x2 = _as_2d(arr)
    rows, cols = x2.shape
    if kind == "tile" and (role == "activation" or arr.ndim < 2):
        kind = "rows"
    chunks = _row_chunks(rows, cols, kind, chunk_elements)
    tensor_amax = None
    if kind in ("tensor", "nvfp4") and len(chunks) > 1:
        tensor_amax = _chunked_tensor_amax(x2, chunks)
    signal = error = 0.0
    max_err = 0.0
    saturated = n_blocks = nonfinite = 0
    for r0, r1 in chunks:
        part = np.asarray(x2[r0:r1])
        q = quantize(part, fmt.id, role=role, tensor_amax=tensor_amax)  # type: ignore[arg-type]
        ref = part.astype(np.float64)
        nonfinite += int(ref.size - np.count_nonzero(np.isfinite(ref)))
        err = ref - dequantize(q).astype(np.float64)
        flat_ref, flat_err = ref.reshape(-1), err.reshape(-1)
        signal += float(np.dot(flat_ref, flat_ref))
        error += float(np.dot(flat_err, flat_err))
        part_max = float(np.max(np.abs(flat_err)))
        max_err = (
            math.nan if math.isnan(part_max) or math.isnan(max_err) else max(max_err, part_max)
        )
        saturated += q.saturated_blocks
        n_blocks += q.n_blocks
    if kind == "tensor":
        saturated, n_blocks = int(saturated > 0), 1
    return {
        "format": format_id,
        "format_id": fmt.id,
        "shape": list(shape),
        "numel": int(arr.size),
        "signal_energy": signal,
        "error_energy": error,
        # NaN/inf in the input: the error is undefined, never "lossless" (inf dB)
        "sqnr_db": math.nan if nonfinite else _sqnr_db(signal, error),
        "rel_error": math.nan if nonfinite else _rel_error(signal, error),
        "max_abs_error": math.nan if nonfinite else max_err,
        "nonfinite_values": nonfinite,
        "saturated_blocks": saturated,
        "n_blocks": n_blocks,
        "saturated_block_share": saturated / n_blocks if n_blocks else 0.0,
        "bytes_before": int(arr.size * arr.dtype.itemsize),
        "bytes": packed_nbytes(shape, fmt.id, role=role),
    }


def parse_formats(formats: str | Sequence[str]) -> list[str]:
    """``"fp8,nvfp4"`` or a list -> validated ids (as given, duplicates dropped)."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out: list[str] = []
    for item in (f.strip() for f in items):
        if not item:
            continue
        resolve_format(item)
        if item not in out:
            out.append(item)
    if not out:
        raise SpecError("no quantization format given")
    return out


class _Aggregate:
    """Running sums for one format over a group of tensors."""

    def __init__(self) -> None:
        self.signal = self.error = 0.0
        self.max_err = 0.0
        self.saturated = self.blocks = 0
        self.bytes_before = self.bytes_after = 0
        self.numel = 0
        self.n_tensors = 0

    def add(self, s: dict[str, Any]) -> None:
        self.signal += s["signal_energy"]
        self.error += s["error_energy"]
        self.max_err = max(self.max_err, s["max_abs_error"])
        if math.isnan(s["max_abs_error"]):
            self.max_err = math.nan
        self.saturated += s["saturated_blocks"]
        self.blocks += s["n_blocks"]
        self.bytes_before += s["bytes_before"]
        self.bytes_after += s["bytes"]
        self.numel += s["numel"]
        self.n_tensors += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_tensors": self.n_tensors,
            "numel": self.numel,
            "sqnr_db": _finite_or_none(_sqnr_db(self.signal, self.error)),
            "rel_error": _finite_or_none(_rel_error(self.signal, self.error)),
            "max_abs_error": _finite_or_none(self.max_err),
            "saturated_block_share": self.saturated / self.blocks if self.blocks else 0.0,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
        }


def inspect_checkpoint(
    path: str | os.PathLike[str],
    formats: str | Sequence[str],
    *,
    include: str | None = None,
    min_ndim: int = 2,
    top_k: int = 5,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Quantization error of every weight of a checkpoint in each format.

    Args:
        path: a ``.safetensors`` file, a sharded folder with its index, or a HF model folder.
        formats: ids or aliases, e.g. ``"fp8,mxfp4,nvfp4,w4a16"``.
        include: optional regex; only matching tensor names are quantized.
        min_ndim: tensors with fewer dims (norms, biases) are left unquantized, as deployments
            do; floating-point tensors only.
        top_k: how many most sensitive layers/tensors to list per format.
        progress: called as ``progress(done, total, name)`` after each tensor.

    Returns:
        ``{"tensors": [{"name", "shape", "format", "sqnr_db", "rel_error", "max_abs_error",
        "bytes"}], "summary": {FORMAT: {...}}}``; each summary holds the format-wide SQNR,
        relative and max error, saturated block share, bytes before/after, bits per parameter,
        per-layer rows, the most sensitive layers and tensors, and per-tensor details.
    """
    fmt_ids = parse_formats(formats)
    try:
        pattern = re.compile(include) if include else None
    except re.error as exc:
        raise SpecError(f"--include {include!r} is not a valid regular expression: {exc}") from None
    infos = list_tensors(path)
    chosen = [
        t
        for t in infos
        if t.dtype in FLOAT_DTYPES
        and len(t.shape) >= min_ndim
        and t.numel > 0
        and (pattern is None or pattern.search(t.name))
    ]
    skipped = len(infos) - len(chosen)
    rows: list[dict[str, Any]] = []
    totals = {f: _Aggregate() for f in fmt_ids}
    layers: dict[str, dict[str, _Aggregate]] = {f: {} for f in fmt_ids}
    details: dict[str, dict[str, dict[str, Any]]] = {f: {} for f in fmt_ids}
    nonfinite: dict[str, list[str]] = {}
    for i, info in enumerate(chosen):
        array = load_tensor(info)
        layer = layer_of(info.name)
        for f in fmt_ids:
            s = error_stats(array, f)
            rows.append(
                {
                    "name": info.name,
                    "shape": list(info.shape),
                    "format": f,
                    "sqnr_db": _finite_or_none(s["sqnr_db"]),
                    "rel_error": _finite_or_none(s["rel_error"]),
                    "max_abs_error": _finite_or_none(s["max_abs_error"]),
                    "bytes": s["bytes"],
                    "nonfinite_values": s["nonfinite_values"],
                }
            )
            if s["nonfinite_values"]:  # flagged per tensor, kept out of the format's totals
                nonfinite.setdefault(f, []).append(info.name)
            else:
                totals[f].add(s)
                layers[f].setdefault(layer, _Aggregate()).add(s)
            details[f][info.name] = {
                "layer": layer,
                "dtype": info.dtype,
                "bytes_before": s["bytes_before"],
                "saturated_block_share": s["saturated_block_share"],
            }
        del array
        if progress is not None:
            progress(i + 1, len(chosen), info.name)
    summary: dict[str, Any] = {}
    for f in fmt_ids:
        summary[f] = _format_summary(f, totals[f], layers[f], details[f], rows, top_k, skipped)
        summary[f]["nonfinite_tensors"] = nonfinite.get(f, [])
    return {"tensors": rows, "summary": summary}


def _sort_key(sqnr: float | None) -> float:
    return math.inf if sqnr is None else sqnr


def _format_summary(
    f: str,
    total: _Aggregate,
    layers: dict[str, _Aggregate],
    details: dict[str, dict[str, Any]],
    rows: list[dict[str, Any]],
    top_k: int,
    skipped: int,
) -> dict[str, Any]:
    out = total.as_dict()
    tensor_rows = [r for r in rows if r["format"] == f and not r["nonfinite_values"]]
    sqnrs = [r["sqnr_db"] for r in tensor_rows if r["sqnr_db"] is not None]
    layer_rows = [{"layer": name, **agg.as_dict()} for name, agg in layers.items()]
    out.update(
        {
            "format_id": resolve_format(f).id,
            "bits_per_param": 8 * total.bytes_after / total.numel if total.numel else None,
            "compression": total.bytes_before / total.bytes_after if total.bytes_after else None,
            "mean_tensor_sqnr_db": float(np.mean(sqnrs)) if sqnrs else None,
            "min_tensor_sqnr_db": min(sqnrs) if sqnrs else None,
            "skipped_tensors": skipped,
            "layers": layer_rows,
            "most_sensitive_layers": [
                r["layer"]
                for r in sorted(layer_rows, key=lambda r: _sort_key(r["sqnr_db"]))[:top_k]
            ],
            "most_sensitive_tensors": [
                r["name"]
                for r in sorted(tensor_rows, key=lambda r: _sort_key(r["sqnr_db"]))[:top_k]
            ],
            "tensor_details": details,
        }
    )
    return out
