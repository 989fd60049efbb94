"""Which precisions a frontier searches, and why: the GPU's native formats, the checkpoint's own
precision, and an optional accuracy limit (``specs.accuracy``). One home for the precision
choice of ``frontier`` (and ``compare``, which calls it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import SpecError, UnsupportedError
from ..specs.accuracy import accuracy_for, accuracy_key, passes
from ..specs.checkpoint import checkpoint_precision, default_precision, preset_precision
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision, parse_precision

# Presets searched by default: one per native tensor-core format (fp16 costs as bf16; int8 as
# fp8; w4a16 and mixed presets are opt-in with --precision), plus the checkpoint's own precision;
# a bare preset whose weights the checkpoint stores block-scaled takes the checkpoint's format
# (specs.checkpoint.preset_weights), given or default.
DEFAULT_PRECISIONS = ("bf16", "fp8", "nvfp4", "mxfp4")


def _requested(
    model: ModelSpec, hw: HardwareSpec, precision: str | Precision | Sequence[str | Precision]
) -> list:
    items: list[str | Precision]
    if isinstance(precision, (str, Precision)):
        items = (
            [s.strip() for s in precision.split(",")] if isinstance(precision, str) else [precision]
        )
    else:
        items = list(precision)
    precs: list[Precision] = []
    for item in items:
        if isinstance(item, str) and not item:
            raise SpecError("precision list has an empty entry (e.g. 'fp8,,nvfp4')")
        p = preset_precision(model, item)
        hw.compute_rate_class(p.compute_class)  # raises UnsupportedError naming the format
        if p.id not in {q.id for q in precs}:
            precs.append(p)
    return precs


def choose_precisions(
    model: ModelSpec,
    hw: HardwareSpec,
    precision: str | Precision | Sequence[str | Precision] | None,
    *,
    max_accuracy_drop: float | None = None,
    allow_unknown_accuracy: bool = False,
    measured: dict[str, Any] | None = None,
) -> tuple[tuple[Precision, ...], dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The precisions to search, the accuracy estimate of each (``specs.accuracy.accuracy_for``)
    and a decision row per candidate: ``{"precision", "searched", "reason", "accuracy"}``.

    Without ``precision``: every default preset the GPU runs natively, plus the checkpoint's
    own precision when no default shares its accuracy key (gpt-oss's MXFP4 weight-only on
    Hopper). ``max_accuracy_drop`` (benchmark points) removes precisions whose published drop
    exceeds it, and those without a published number unless ``allow_unknown_accuracy``."""
    if max_accuracy_drop is not None and not max_accuracy_drop >= 0:
        raise SpecError(f"max_accuracy_drop must be >= 0 points, got {max_accuracy_drop!r}")
    decisions: list[dict[str, Any]] = []
    if precision is None:
        candidates: list[Precision] = []
        own = checkpoint_precision(model.config)
        for name in DEFAULT_PRECISIONS:
            p = preset_precision(model, name)
            if hw.supports(p.compute_class):
                candidates.append(p)
            else:
                decisions.append(
                    {
                        "precision": p.id,
                        "searched": False,
                        "reason": f"not native on {hw.id} (--emulate runs it at the nearest "
                        "native rate)",
                        "accuracy": accuracy_for(model, p, measured),
                    }
                )
        if own is not None:  # as it is served on this GPU (gpt-oss: W4A8 on Blackwell)
            p = parse_precision(default_precision(model, hw)[0])
            keys = {accuracy_key(q) for q in candidates}
            if accuracy_key(p) not in keys and hw.supports(p.compute_class):
                candidates.append(p)
        if not candidates:
            raise UnsupportedError(
                f"{hw.id} runs none of the default precisions {', '.join(DEFAULT_PRECISIONS)} "
                "natively; pass --precision"
            )
    else:
        candidates = _requested(model, hw, precision)
    accuracy: dict[str, dict[str, Any]] = {}
    chosen: list[Precision] = []
    for p in candidates:
        acc = accuracy_for(model, p, measured)
        ok, why = passes(acc, max_accuracy_drop, allow_unknown_accuracy)
        decisions.append({"precision": p.id, "searched": ok, "reason": why, "accuracy": acc})
        if ok:
            chosen.append(p)
            accuracy[p.id] = acc
    if not chosen:
        raise SpecError(
            "no precision passes the accuracy limit: "
            + "; ".join(f"{d['precision']}: {d['reason']}" for d in decisions)
        )
    return tuple(chosen), accuracy, decisions
