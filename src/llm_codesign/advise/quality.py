"""Scaling-law quality estimate: whether an architecture variant should keep the accuracy of the
model it came from. An *estimate with stated assumptions*, never a measured accuracy.

Loss model (Chinchilla, Hoffmann et al. 2022, arXiv 2203.15556; constants as reproduced in
``reference/codesign.md`` [C10]):

    L(N, D) = E + A / N^alpha + B / D^beta,
    E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28

* N: parameters. Dense: non-embedding parameters are the better predictor (Kaplan et al. 2020),
  but Chinchilla's fit used total parameters; we use total. MoE: no single fitted law is used
  here; N is taken as the geometric mean of total and active parameters (an assumption: it lies
  between the dense model of the same active size and the one of the same total size).
* D: training tokens, the same for a variant as for its base (same data budget); default
  ``TOKENS_PER_PARAM`` x N of the base (the compute-optimal reading of Chinchilla).
* Shape: Kaplan et al. report that "within reasonable limits, performance depends very weakly on
  ... depth vs. width" (``reference/codesign.md`` [C11]). We treat the aspect ratio
  d_model / n_layers inside ``ASPECT_BAND`` as free and charge a relative loss penalty of
  ``ASPECT_PENALTY`` x (log2 of the distance outside the band)^2 beyond it. The band and the
  penalty are assumptions (Kaplan's aspect-ratio figure was not re-retrieved: UNVERIFIED); the
  published large models sit inside it (Llama-3.1-70B: 102, DeepSeek-V3: 118, GPT-3: 128).
* A minimum depth ``MIN_LAYERS`` (shallower stacks are outside the data the laws were fitted on).
* Not modelled: attention variants (GQA/MQA/MLA ranks, windows), expert granularity and top-k,
  tokenizer, data quality. Variants changing them are reported with those changes listed as
  ``unmodelled``.

Example:
    >>> round(chinchilla_loss(70e9, 1.4e12), 3)
    1.937
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import SpecError
from ..specs.model import ModelSpec

CHINCHILLA = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
CHINCHILLA_SOURCE = "Hoffmann et al. 2022 (arXiv 2203.15556) via reference/codesign.md [C10]"
TOKENS_PER_PARAM = 20.0
ASPECT_BAND = (32.0, 256.0)  # d_model / n_layers treated as shape-insensitive (assumption)
ASPECT_PENALTY = 0.02  # relative loss per (octave outside the band)^2 (assumption)
MIN_LAYERS = 8
DEFAULT_LOSS_TOLERANCE = 0.005  # a variant "holds" if its loss is within 0.5% of the base's


def chinchilla_loss(n_params: float, n_tokens: float) -> float:
    """Chinchilla's parametric loss in nats/token for N parameters and D training tokens."""
    if n_params <= 0 or n_tokens <= 0:
        raise SpecError(f"chinchilla_loss: N={n_params} and D={n_tokens} must be positive")
    c = CHINCHILLA
    return c["E"] + c["A"] / n_params ** c["alpha"] + c["B"] / n_tokens ** c["beta"]


def effective_params(model: ModelSpec) -> float:
    """N entering the law: total for dense, sqrt(total x active) for MoE (assumption)."""
    if model.moe is None:
        return float(model.total_params)
    return math.sqrt(float(model.total_params) * float(model.active_params))


def aspect_ratio(model: ModelSpec) -> float:
    return model.hidden_size / model.num_layers


def shape_penalty(model: ModelSpec) -> float:
    """Relative loss increase for an aspect ratio outside ``ASPECT_BAND`` or too few layers."""
    lo, hi = ASPECT_BAND
    ar = aspect_ratio(model)
    octaves = math.log2(lo / ar) if ar < lo else (math.log2(ar / hi) if ar > hi else 0.0)
    depth = math.log2(MIN_LAYERS / model.num_layers) if model.num_layers < MIN_LAYERS else 0.0
    return ASPECT_PENALTY * (octaves**2 + depth**2)


@dataclass(frozen=True)
class QualityEstimate:
    """Estimated loss of a model and, against a base, whether it holds."""

    loss: float
    chinchilla_loss: float
    shape_penalty: float
    effective_params: float
    train_tokens: float
    aspect_ratio: float
    base_loss: float | None = None
    tolerance: float = DEFAULT_LOSS_TOLERANCE
    unmodelled: tuple[str, ...] = ()
    assumptions: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def relative_change(self) -> float:
        """(loss - base) / base; 0 when there is no base."""
        return 0.0 if not self.base_loss else (self.loss - self.base_loss) / self.base_loss

    @property
    def holds(self) -> bool:
        return self.base_loss is None or self.relative_change <= self.tolerance

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "estimate (scaling law), not a measured accuracy",
            "loss": self.loss,
            "base_loss": self.base_loss,
            "relative_change": self.relative_change,
            "holds": self.holds,
            "tolerance": self.tolerance,
            "chinchilla_loss": self.chinchilla_loss,
            "shape_penalty": self.shape_penalty,
            "effective_params": self.effective_params,
            "train_tokens": self.train_tokens,
            "aspect_ratio": self.aspect_ratio,
            "unmodelled": list(self.unmodelled),
        }


# how far a reshaped variant's accuracy estimate can be trusted (lint and search print it)
CONFIDENCE = (
    "low: an analytic scaling-law estimate with an assumed aspect-ratio band; no variant was "
    "trained or evaluated, and attention/MoE/mixer changes are not modelled at all"
)


def assumptions() -> dict[str, Any]:
    return {
        "confidence": CONFIDENCE,
        "law": "L(N, D) = E + A/N^alpha + B/D^beta",
        "constants": dict(CHINCHILLA),
        "source": CHINCHILLA_SOURCE,
        "N": "total params (dense); sqrt(total x active) (MoE, assumption)",
        "D": f"same training tokens as the base (default {TOKENS_PER_PARAM:g} x N of the base)",
        "shape": (
            f"aspect ratio d_model/n_layers in {ASPECT_BAND} free; {ASPECT_PENALTY} x octaves^2 "
            f"relative penalty outside; fewer than {MIN_LAYERS} layers penalized likewise "
            "(assumptions; Kaplan et al. 2020)"
        ),
        "not_modelled": (
            "attention variant (KV heads, MLA ranks, windows, linear/sparse mixers), expert "
            "granularity/top-k, data"
        ),
    }


def estimate_quality(
    model: ModelSpec,
    *,
    base: ModelSpec | None = None,
    train_tokens: float | None = None,
    tolerance: float = DEFAULT_LOSS_TOLERANCE,
    unmodelled: tuple[str, ...] = (),
) -> QualityEstimate:
    """Estimated loss of ``model``; with ``base``, also whether it stays within ``tolerance``.

    ``train_tokens`` defaults to ``TOKENS_PER_PARAM`` x the effective params of ``base`` (or of
    ``model`` without a base), so a variant is judged on the same data budget as its base.
    """
    if not 0 <= tolerance < math.inf:  # NaN fails too
        raise SpecError(f"quality tolerance={tolerance} must be a finite number >= 0")
    ref = base or model
    d = (
        float(train_tokens)
        if train_tokens is not None
        else TOKENS_PER_PARAM * effective_params(ref)
    )
    n = effective_params(model)
    raw = chinchilla_loss(n, d)
    pen = shape_penalty(model)
    loss = raw * (1.0 + pen)
    base_loss = None
    if base is not None:
        base_loss = chinchilla_loss(effective_params(base), d) * (1.0 + shape_penalty(base))
    return QualityEstimate(
        loss=loss,
        chinchilla_loss=raw,
        shape_penalty=pen,
        effective_params=n,
        train_tokens=d,
        aspect_ratio=aspect_ratio(model),
        base_loss=base_loss,
        tolerance=tolerance,
        unmodelled=unmodelled,
        assumptions=assumptions(),
    )
