"""The checkpoint's context window: the longest sequence (prompt + output tokens) an engine
serves it at by default (vLLM's ``max_model_len`` from its config), the one test of lengths
against it (:func:`past_window`), and the notes where lengths exceed it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import SpecError
from .model import ModelSpec
from .workload import MAX_CONTEXT_TOKENS

# vLLM's max_model_len rule (vllm-project/vllm ``_get_and_verify_max_len``, vllm/config): the
# smallest of these config keys that are present, then stretched by the config's rope scaling
# (``rope_scaling``, or ``rope_parameters`` in transformers v5 configs): YaRN sets it to
# ``original_max_position_embeddings`` x ``factor``; other types but ``su``, ``longrope`` and
# ``llama3`` (whose max_position_embeddings already counts it) multiply it by ``factor``; Gemma 3
# is not stretched. SGLang's ``context-length`` and TensorRT-LLM's ``max_seq_len`` derive their
# defaults otherwise; vLLM's is the window a launch of the checkpoint refuses to exceed
CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
UNSTRETCHED_ROPE = ("su", "longrope", "llama3")
# the window a config class gives a config that states no length key (vLLM reads the class's
# attributes): transformers' FalconConfig and Gemma3TextConfig ``max_position_embeddings``
# defaults (configuration_falcon.py 2,048; configuration_gemma3.py v4.51.3 131,072)
CLASS_WINDOWS = {"falcon": 2048, "gemma3_text": 131072}


def _length(value: Any) -> float | None:
    """A positive, finite length a config states (a bool or anything else: None)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def context_window(spec: ModelSpec) -> int | None:
    """The longest sequence (prompt + output tokens) vLLM serves the checkpoint at by default
    (its ``max_model_len``: the rule above ``CONTEXT_KEYS``), from the config's top level or,
    where that states no length, its ``text_config``; a config class's default where a config
    states none (``CLASS_WINDOWS``: Falcon, Gemma 3). None where nothing states one.

    Example:
        >>> from .model import load_model
        >>> context_window(load_model("deepseek-r1")), context_window(load_model("mixtral-8x7b"))
        (163840, 32768)
    """
    cfg = spec.config
    for part in (cfg, cfg.get("text_config")):
        if not isinstance(part, Mapping):
            continue
        stated = [n for n in (_length(part.get(k)) for k in CONTEXT_KEYS) if n is not None]
        default = CLASS_WINDOWS.get(str(part.get("model_type")))
        stated = stated or ([float(default)] if default else [])
        if not stated:
            continue
        window = min(stated)
        rope = part.get("rope_scaling") or part.get("rope_parameters")
        gemma3 = "gemma3" in str(cfg.get("model_type", ""))
        if isinstance(rope, Mapping) and not gemma3:
            kind = str(rope.get("rope_type") or rope.get("type") or "")
            factor = _length(rope.get("factor"))
            if factor is not None and kind not in UNSTRETCHED_ROPE:
                base = _length(rope.get("original_max_position_embeddings"))
                window = (base if kind == "yarn" and base is not None else window) * factor
        return int(min(window, MAX_CONTEXT_TOKENS))
    return None


def past_window(spec: ModelSpec, isl: Any, osl: Any) -> tuple[int | None, Any]:
    """(the checkpoint's context window, whether ISL + OSL exceeds it): the one window test
    (:func:`context_window`) of a request's lengths or of arrays of them (elementwise); (None,
    False) where the config states no window.

    Example (Mixtral-8x7B's 32,768 tokens):
        >>> from .model import load_model
        >>> past_window(load_model("mixtral-8x7b"), 31744, 1024)
        (32768, False)
        >>> past_window(load_model("mixtral-8x7b"), np.array([1024, 32000]), 1024)[1].tolist()
        [False, True]
    """
    window = context_window(spec)
    if window is None:
        return None, False
    past = np.asarray(isl) + np.asarray(osl) > window
    return window, past if np.ndim(past) else bool(past)


def check_window(model: ModelSpec, isl: int, osl: int, what: str) -> None:
    """Refuse lengths past the checkpoint's context window (an engine refuses such requests):
    the error names ``what`` and the largest prompt that fits, or the output tokens that do."""
    window, past = past_window(model, isl, osl)
    if window is None or not past:
        return
    where = f"{model.id}'s {window:,}-token context window"
    hint = "(a config.json with rope_scaling states a longer window)"
    if osl >= window:
        raise SpecError(
            f"{what}: OSL = {osl:,} output tokens leave no room for a prompt in {where}; at "
            f"most {window - 1:,} output tokens {hint}"
        )
    raise SpecError(
        f"{what}: ISL + OSL = {isl:,} + {osl:,} exceeds {where}; the longest prompt with "
        f"{osl:,} output tokens is {window - osl:,} {hint}"
    )


def _refused(spec: ModelSpec, window: int) -> str:
    """The refusal a request past the window meets (:func:`context_note`,
    :func:`context_share_note`)."""
    return (
        f"{spec.id}'s context window of {window:,} (vLLM's max_model_len from its config): an "
        "engine refuses such requests unless the deployment extends the window (rope scaling)"
    )


def context_note(spec: ModelSpec, isl: int, osl: int) -> list[str]:
    """A note where ISL + OSL exceeds the checkpoint's context window (:func:`past_window`):
    vLLM refuses such a request unless the deployment stretches the window (``max_model_len``,
    rope scaling); the numbers price the lengths as asked. Empty where it fits or the config
    states no window."""
    window, past = past_window(spec, isl, osl)
    if window is None or not past:
        return []
    return [
        f"ISL + OSL = {isl + osl:,} tokens exceeds {_refused(spec, window)}; the numbers "
        "price the lengths as asked"
    ]


def context_share_note(spec: ModelSpec, isl: Any, osl: Any) -> list[str]:
    """:func:`context_note` for sampled lengths (the request simulator's length distributions):
    how many requests' ISL + OSL exceed the window, served as sampled. Empty where none does.

    Example (Mixtral-8x7B's 32,768 tokens):
        >>> from .model import load_model
        >>> context_share_note(load_model("mixtral-8x7b"), np.array([1024, 32000]), 1024)[0][:45]
        '1 of 2 simulated requests (50.0%) have ISL + '
    """
    window, past = past_window(spec, isl, osl)
    k = int(np.count_nonzero(past))
    if window is None or not k:
        return []
    n = int(np.size(past))
    return [
        f"{k:,} of {n:,} simulated requests ({k / n:.1%}) have ISL + OSL past "
        f"{_refused(spec, window)}; the simulation serves them as sampled"
    ]
