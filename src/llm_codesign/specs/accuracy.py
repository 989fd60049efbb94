"""Accuracy of a (model, precision): what is known, with its provenance, never an invented number.

The estimate comes from the first of:

1. ``native``: the precision is the checkpoint's own (its ``quantization_config``, read by
   :mod:`.checkpoint`; no config: BF16), or wider than it (upcasting loses nothing): delta 0;
2. ``published``: a published evaluation of that model in that format
   (``data/accuracy/published.json``): the mean of the benchmark deltas, in points, with the
   source and the checkpoint that provides the precision;
3. ``measured``: the weights' quantization error measured by ``quant inspect`` on the user's
   checkpoint (SQNR in dB; not in benchmark points, so it informs but does not pass an accuracy
   limit);
4. ``unknown``, said plainly (format-level claims about other models are listed, not used).

Precisions are compared by their *accuracy key* (:func:`accuracy_key`): the weight format family
and whether activations are quantized with it (W4A4 NVFP4 is not W4A16).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import DataFileError
from .checkpoint import checkpoint_precision
from .model import ModelSpec, model_alias_table
from .precision import Precision, parse_precision


def accuracy_key(prec: Precision) -> str:
    """The family a precision's accuracy is known by: weight element and whether activations
    are quantized to a low-precision format too.

    ``bf16`` (16-bit weights), ``fp8`` (E4M3 weights, per-tensor or block scales), ``mxfp8``,
    ``int8`` (W8A8), ``w4a16`` (INT4 weights, 16-bit activations), ``mxfp4-w`` (MXFP4 weights,
    8- or 16-bit activations: gpt-oss's own), ``nvfp4`` and ``mxfp4`` (W4A4)."""
    w, a = prec.weights, prec.activations
    if w.element_bits >= 16:
        return "bf16"
    if w.id.startswith("int4"):
        return "w4a16"
    if w.id == "int8":
        return "int8"
    if w.id == "mxfp8":
        return "mxfp8"
    if w.element == "e4m3":
        return "fp8"
    if w.id == "nvfp4":
        return "nvfp4"
    if w.id == "mxfp4":
        return "mxfp4" if a.element_bits <= 4 else "mxfp4-w"
    return w.id


def _lossless(key: str, native: str) -> bool:
    """Whether serving at ``key`` keeps a ``native`` checkpoint's accuracy: its own precision,
    or BF16 weights and activations (an upcast of any checkpoint). A narrower activation format
    than the checkpoint's (FP8 W8A8 for an MXFP4 weight-only model) is a change that needs
    evidence."""
    return key in (native, "bf16")


@cache
def published_rows() -> tuple[dict[str, Any], ...]:
    """The rows of ``data/accuracy/published.json`` (with their deltas computed)."""
    path = Path(str(resources.files("llm_codesign") / "data" / "accuracy" / "published.json"))
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{path.name}: cannot read the accuracy evidence: {exc}") from None
    rows = []
    for r in data["rows"]:
        base, quant = r["baseline_scores"], r["quantized_scores"]
        deltas = {k: round(quant[k] - base[k], 4) for k in base if k in quant}
        rows.append({**r, "deltas": deltas})
    return tuple(rows)


def native_key(model: ModelSpec) -> tuple[str, str]:
    """The checkpoint's own accuracy key and why (its quantization config, else BF16)."""
    found = checkpoint_precision(model.config)
    if found is None:
        return "bf16", "no quantization_config: BF16 checkpoint"
    text, reason = found
    return accuracy_key(parse_precision(text)), reason


def _rows_for(model: ModelSpec, key: str) -> list[dict[str, Any]]:
    aliases = model_alias_table()
    out = []
    for r in published_rows():
        ids = set(r.get("model_ids") or [])
        ids |= {aliases[r["model"].lower()]} if r["model"].lower() in aliases else set()
        if model.id in ids and r["precision"] == key:
            out.append(r)
    return out


def accuracy_for(
    model: ModelSpec, prec: Precision | str, measured: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What is known of the accuracy cost of serving ``model`` at ``prec`` (module doc).

    ``measured``: a ``quant inspect`` result (``{"summary": {FORMAT: {"sqnr_db": ...}}}``) of
    the user's weights. Returns ``{"kind", "value", "metric", "baseline", "source",
    "checkpoint", "deltas", "note"}``: ``value`` is the mean benchmark delta in points
    (quantized - baseline; None when unknown or measured only)."""
    prec = parse_precision(prec)
    key = accuracy_key(prec)
    native, why = native_key(model)
    out: dict[str, Any] = {
        "precision": prec.id,
        "key": key,
        "kind": "unknown",
        "value": None,
        "metric": "mean benchmark delta (points)",
        "baseline": native,
        "source": "unknown: no published evaluation of this model in this format",
        "checkpoint": "",
        "deltas": {},
        "note": "",
    }
    if _lossless(key, native):
        same = key == native
        out.update(
            kind="native",
            value=0.0,
            source=f"the checkpoint's own precision ({why})"
            if same
            else f"BF16 serving of the checkpoint's {native} weights ({why}): an upcast loses "
            "nothing",
        )
        return out
    rows = _rows_for(model, key)
    numbered = [r for r in rows if r["deltas"] and r["baseline"] in (native, "bf16")]
    if numbered:
        r = next((x for x in numbered if x.get("checkpoint")), numbered[0])
        deltas = r["deltas"]
        out.update(
            kind="published",
            value=round(sum(deltas.values()) / len(deltas), 3),
            baseline=r["baseline"],
            source=r["source"],
            checkpoint=r.get("checkpoint", ""),
            deltas=dict(deltas),
            note=r["setting"],
        )
        return out
    if rows:
        out["note"] = "published claim without numbers: " + "; ".join(r["claim"] for r in rows)
        out["checkpoint"] = next((r["checkpoint"] for r in rows if r.get("checkpoint")), "")
    summary = (measured or {}).get("summary", {})
    hit = next((s for f, s in summary.items() if f in (prec.weights.id, key)), None)
    if hit is not None and "sqnr_db" in hit:
        out.update(
            kind="measured",
            metric="weight SQNR dB (quant inspect; not benchmark points)",
            value=None,
            source="measured on the given weights by quant inspect",
            note=f"SQNR {float(hit['sqnr_db']):.1f} dB over the quantized weights",
        )
        out["sqnr_db"] = float(hit["sqnr_db"])
    return out


def passes(acc: dict[str, Any], max_drop: float | None, allow_unknown: bool) -> tuple[bool, str]:
    """Whether an accuracy estimate passes a limit of ``max_drop`` points, and why not."""
    if max_drop is None:
        return True, ""
    if acc["value"] is None:
        if allow_unknown:
            return True, ""
        what = "measured error only (SQNR, not points)" if acc["kind"] == "measured" else "none"
        return False, f"no published accuracy in points ({what}); --allow-unknown-accuracy keeps it"
    if -acc["value"] > max_drop:
        return False, f"accuracy drop {-acc['value']:.2f} points exceeds {max_drop:g}"
    return True, ""
