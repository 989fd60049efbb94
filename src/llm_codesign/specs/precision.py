"""Precision: storage formats for weights, activations, KV cache and communication, separately.

Presets (``bf16``, ``fp8``, ``nvfp4``, ``mxfp4``, ``w4a16`` ...) and ``+FORMAT-ROLE`` overrides,
e.g. ``bf16+fp8-kv`` (BF16 model, FP8 KV cache) or ``nvfp4+bf16-kv``. Bytes per element come from
the shared :mod:`llm_codesign.formats` registry, scale overhead included.

Example:
    >>> p = parse_precision("nvfp4")
    >>> p.weight_bytes, p.compute_class
    (0.5625, 'nvfp4')
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError, UnknownIdError
from ..formats import FORMATS, NumberFormat, get_format, int4_weight_only

ROLES = {
    "w": "weights",
    "a": "activations",
    "kv": "kv_cache",
    "comm": "communication",
    "idx": "index_keys",
}
# the formats a sparse-attention indexer's key cache may take (``Precision.index_keys``): vLLM's
# MiniMax-M3 ``indexer_kv_dtype`` bf16 (its default) or fp8 (E4M3, no scale; SM100 only)
INDEX_KEY_FORMATS = ("bf16", "fp8")


@dataclass(frozen=True)
class Precision:
    """Formats per tensor role. The GEMM compute class is the wider of the weight and activation
    formats (W4A16 computes in BF16 after dequantizing; W4A4 NVFP4 at the FP4 rate)."""

    id: str
    weights: NumberFormat
    activations: NumberFormat
    kv_cache: NumberFormat
    communication: NumberFormat
    # the sparse-attention indexer's key cache (``+FORMAT-idx``); None: the model's own format
    # (``IndexerSpec.key_bytes``); only MiniMax Sparse Attention's keys take another
    # (``mixers.indexer_of``)
    index_keys: NumberFormat | None = None

    @property
    def weight_bytes(self) -> float:
        return self.weights.bytes_per_element

    @property
    def activation_bytes(self) -> float:
        return self.activations.bytes_per_element

    @property
    def kv_bytes(self) -> float:
        return self.kv_cache.bytes_per_element

    @property
    def comm_bytes(self) -> float:
        return self.communication.bytes_per_element

    @property
    def compute_class(self) -> str:
        """Tensor-core rate class of the GEMMs: the operand with more bits decides."""
        w, a = self.weights, self.activations
        wider = w if w.element_bits >= a.element_bits else a
        if int4_weight_only(w):  # weight-only int4: the activations decide
            wider = a
        return wider.compute_class

    @property
    def kv_fp8(self) -> bool:
        """True when the KV cache holds FP8 elements (E4M3/E5M2, with or without block scales):
        not an integer format of the same width."""
        return self.kv_cache.element_bits == 8 and self.kv_cache.element.startswith("e")

    @property
    def attention_class(self) -> str:
        """Attention math runs in FP8 when the KV cache is FP8 (FP8 FMHA), else BF16."""
        return "fp8" if self.kv_fp8 else "bf16"

    def summary(self) -> dict[str, str | float | None]:
        return {
            "id": self.id,
            "weights": self.weights.id,
            "activations": self.activations.id,
            "kv_cache": self.kv_cache.id,
            "communication": self.communication.id,
            "index_keys": None if self.index_keys is None else self.index_keys.id,
            "weight_bytes_per_param": self.weight_bytes,
            "compute_class": self.compute_class,
        }


# weights, activations, kv cache, communication
PRESETS: dict[str, tuple[str, str, str, str]] = {
    "bf16": ("bf16", "bf16", "bf16", "bf16"),
    "fp16": ("fp16", "fp16", "fp16", "fp16"),
    "fp8": ("fp8", "fp8", "fp8", "bf16"),
    "nvfp4": ("nvfp4", "nvfp4", "fp8", "bf16"),
    "mxfp4": ("mxfp4", "mxfp4", "fp8", "bf16"),
    "mxfp4-a8": ("mxfp4", "mxfp8", "fp8", "bf16"),  # gpt-oss W4A8 on Blackwell
    "mxfp4-a16": ("mxfp4", "bf16", "bf16", "bf16"),  # gpt-oss weights-only on Hopper
    "w4a16": ("int4_g128", "bf16", "bf16", "bf16"),
    "int8": ("int8", "int8", "fp8", "bf16"),
}


def parse_precision(text: str | Precision) -> Precision:
    """Parse a preset id with optional ``+FORMAT-ROLE`` overrides (roles: w, a, kv, comm, idx;
    idx: a sparse-attention indexer's key cache, ``INDEX_KEY_FORMATS``)."""
    if isinstance(text, Precision):
        return text
    if not isinstance(text, str) or not text.strip():
        raise SpecError("precision must be a non-empty string such as 'fp8' or 'bf16+fp8-kv'")
    parts = text.strip().lower().split("+")
    base = parts[0]
    if base not in PRESETS:
        raise UnknownIdError(
            f"unknown precision {base!r}; presets: {', '.join(PRESETS)} (overrides: +FORMAT-ROLE, "
            "e.g. bf16+fp8-kv)"
        )
    formats = dict(zip(("w", "a", "kv", "comm"), PRESETS[base]))
    idx: str | None = None  # (the model's own index-key format)
    for part in parts[1:]:
        fmt, _, role = part.rpartition("-")
        if role not in ROLES or not fmt:
            raise SpecError(
                f"precision override {part!r} must be FORMAT-ROLE with ROLE in {', '.join(ROLES)} "
                "(e.g. fp8-kv)"
            )
        if fmt not in FORMATS:
            raise UnknownIdError(
                f"precision override {part!r}: unknown format {fmt!r}; allowed: "
                f"{', '.join(sorted(FORMATS))}"
            )
        if role == "idx":
            if fmt not in INDEX_KEY_FORMATS:
                raise SpecError(
                    f"precision override {part!r}: index keys (idx) take "
                    f"{' or '.join(INDEX_KEY_FORMATS)}"
                )
            idx = fmt
            continue
        formats[role] = fmt
    return Precision(
        id=text.strip().lower(),
        weights=get_format(formats["w"]),
        activations=get_format(formats["a"]),
        kv_cache=get_format(formats["kv"]),
        communication=get_format(formats["comm"]),
        index_keys=None if idx is None else get_format(idx),
    )
