"""HuggingFace ``config.json`` -> :class:`ModelSpec` for the families added after the first set:
Qwen2-MoE, Gemma 2 / Gemma 3, Phi-3 / Phi-4, GLM-4 (dense) and
GLM-4.5 / 4.6 (``glm4_moe``).

:func:`.model_config.model_from_config` checks ``model_type`` and hands the config's
:class:`Fields` and its ``finish`` partial (``model_config._finish`` bound to the model's id,
name, source and type) to the parser in :data:`FAMILY_PARSERS`; every parser returns
``finish(...)`` exactly as the branches in ``model_from_config`` do. This module does not
import ``model_config`` (no import cycle).

Field names and defaults follow HuggingFace transformers' ``configuration_*.py`` for each type
and the facts collected in the project's architecture reference (section 8, "Detect" and
"Reader pitfalls"): transformers ``configuration_qwen2_moe.py``,
``configuration_gemma2.py`` / ``configuration_gemma3.py``, ``configuration_phi3.py``,
``configuration_glm4.py`` / ``configuration_glm4_moe.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ..errors import SpecError
from ._load import Fields
from .model import AttentionSpec, ModelSpec, MoESpec

Parser = Callable[[Fields, Any], ModelSpec]


# ---------------------------------------------------------------------------------------------
# shared readers
# ---------------------------------------------------------------------------------------------


def _dims(f: Fields, head_dim_default: int = 0) -> tuple[int, int, int, int, int]:
    """hidden, layers, query heads, KV heads and head dim, with the same checks as
    ``model_from_config`` (head_dim: explicit, else ``head_dim_default`` when given, else
    hidden / heads)."""
    d = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", heads)
    if heads % kv:
        raise SpecError(
            f"{f.where}: num_attention_heads={heads} is not a multiple of num_key_value_heads={kv}"
        )
    if head_dim_default and not f.has("head_dim"):
        return d, layers, heads, kv, head_dim_default
    return d, layers, heads, kv, head_dim_of(f, d, heads)


def head_dim_of(
    f: Fields,
    d: int,
    heads: int,
    hidden_key: str = "hidden_size",
    heads_key: str = "num_attention_heads",
    head_dim_key: str = "head_dim",
) -> int:
    """The config's ``head_dim``, else hidden / heads when the heads divide the hidden size
    (a head count above the hidden size, head dim 0, or a remainder is an error naming both
    fields, never floored)."""
    if f.has(head_dim_key):
        return f.int(head_dim_key)
    if heads > d:
        raise SpecError(
            f"{f.where}: {heads_key}={heads} exceeds {hidden_key}={d} (head dim 0) and no "
            f"{head_dim_key} is given"
        )
    if d % heads:
        raise SpecError(
            f"{f.where}: {hidden_key}={d} is not divisible by {heads_key}={heads} and no "
            f"{head_dim_key} is given"
        )
    return d // heads


def _windows_from_layer_types(f: Fields, layers: int, window: int) -> list[int] | None:
    """Per-layer window from ``layer_types`` (``sliding_attention`` / ``full_attention``), or
    None when the config has no ``layer_types``."""
    if not f.has("layer_types"):
        return None
    types = f.list("layer_types")
    if len(types) != layers:
        raise SpecError(
            f"{f.where}: layer_types has {len(types)} entries but num_hidden_layers={layers}"
        )
    unknown = sorted({str(t) for t in types} - {"sliding_attention", "full_attention"})
    if unknown:
        raise SpecError(
            f"{f.where}: layer_types holds {', '.join(map(repr, unknown))}; expected "
            "'sliding_attention' or 'full_attention'"
        )
    return [window if t == "sliding_attention" else 0 for t in types]


def _in_text_config(f: Fields, finish: partial) -> tuple[Fields, partial]:
    """A multimodal wrapper's ``text_config`` (Gemma 3): the text fields, and ``finish`` bound to
    them so the spec keeps the text config (as ``llama4`` does in ``model_from_config``)."""
    if not f.has("text_config"):
        return f, finish
    text = f.mapping("text_config")
    return text, partial(finish.func, text, *finish.args[1:], **finish.keywords)


def deepseek_moe(f: Fields) -> MoESpec:
    """DeepSeek's MoE fields (V2, V3, V3.2, V4; Kimi-K2, GLM-5): ``n_routed_experts`` top
    ``num_experts_per_tok`` of ``moe_intermediate_size``, plus ``n_shared_experts`` as wide."""
    width = f.int("moe_intermediate_size")
    shared = f.int("n_shared_experts", 0, minimum=0)
    return MoESpec(f.int("n_routed_experts"), f.int("num_experts_per_tok"), width, shared, width)


def qwen_moe(f: Fields, layers: int, *, shared_required: bool) -> tuple[MoESpec, list[bool]]:
    """Qwen-style MoE fields (Qwen2-MoE, Qwen3-Next, Qwen3.5): ``num_experts`` routed experts
    of ``moe_intermediate_size``, top ``num_experts_per_tok``, one shared expert of
    ``shared_expert_intermediate_size`` (0: none); a layer is MoE when it is not in
    ``mlp_only_layers`` and ``(i + 1) % decoder_sparse_step == 0``."""
    shared = (
        f.int("shared_expert_intermediate_size", minimum=0)
        if shared_required
        else f.int("shared_expert_intermediate_size", 0, minimum=0)
    )
    moe = MoESpec(
        f.int("num_experts"),
        f.int("num_experts_per_tok"),
        f.int("moe_intermediate_size"),
        1 if shared else 0,
        shared,
    )
    step = f.int("decoder_sparse_step", 1)
    dense_only = set(f.int_list("mlp_only_layers", []))
    return moe, [i not in dense_only and (i + 1) % step == 0 for i in range(layers)]


# ---------------------------------------------------------------------------------------------
# Qwen1.5-MoE / Qwen2-MoE (model_type qwen2_moe)
# ---------------------------------------------------------------------------------------------


def qwen2_moe(f: Fields, finish: partial) -> ModelSpec:
    """Qwen-style MoE with one shared expert of ``shared_expert_intermediate_size`` and a
    sigmoid ``shared_expert_gate`` Linear(hidden, 1); QKV bias always on (transformers
    ``Qwen2MoeAttention``). MoE layers: not in ``mlp_only_layers`` and
    ``(i + 1) % decoder_sparse_step == 0`` (dense layers use ``intermediate_size``)."""
    d, layers, heads, kv, head_dim = _dims(f)
    attn = AttentionSpec("gqa", heads, kv, head_dim, head_dim, qkv_bias=f.bool("qkv_bias", True))
    moe, is_moe = qwen_moe(f, layers, shared_required=True)
    shared = moe.shared_intermediate
    inter = (
        f.int("intermediate_size") if not all(is_moe) else f.int("intermediate_size", 0, minimum=0)
    )
    # Sliding window only when use_sliding_window is true (false in released configs), and then
    # from layer max_window_layers on (transformers Qwen2MoeAttention); reference "Detect".
    windows = [0] * layers
    if f.bool("use_sliding_window", False):
        sw = f.int("sliding_window")
        first = f.int("max_window_layers", 0, minimum=0)
        windows = [sw if i >= first else 0 for i in range(layers)]
    return finish(
        d,
        layers,
        f.int("vocab_size"),
        f.bool("tie_word_embeddings", False),
        attn,
        inter,
        gated=True,
        pattern=list(zip(windows, is_moe, strict=True)),
        moe=moe,
        # 2 RMSNorms, plus the shared-expert gate's d weights counted here (ModelSpec has no
        # field for it; also counted on mlp_only layers, where it is absent: < 1e-5 of a layer)
        norm=2 * d + (d if shared else 0),
    )


# ---------------------------------------------------------------------------------------------
# Gemma 2 / Gemma 3 (model_type gemma2, gemma3 with text_config, gemma3_text)
# ---------------------------------------------------------------------------------------------


def _gemma(f: Fields, finish: partial, *, v3: bool) -> ModelSpec:
    """GeGLU FFN (gate/up/down: 3 matrices), tied embeddings by default, explicit head_dim
    (transformers default 256), four RMSNorms per layer (input, post-attention,
    pre-feedforward, post-feedforward: ``norm = 4 * d``) plus Gemma 3's q/k norms of head_dim
    each. The embedding scaling by sqrt(hidden) and the logit soft-capping cost nothing here.

    Sliding layers: ``layer_types`` when present; else ``sliding_window_pattern`` (older Gemma 3
    configs, also ``_sliding_window_pattern``) with the global layer at ``(i + 1) % pattern ==
    0`` -- Gemma 3 default 6 (5 local : 1 global, first layer local), Gemma 2 alternates
    local/global starting with a local layer 0 (pattern 2). Window defaults: Gemma 2 4096,
    Gemma 3 transformers default 4096 (released Gemma 3 configs set 1024).
    """
    d, layers, heads, kv, head_dim = _dims(f, head_dim_default=256)
    bias = f.bool("attention_bias", False)
    attn = AttentionSpec("gqa", heads, kv, head_dim, head_dim, qkv_bias=bias, o_bias=bias)
    window = f.int("sliding_window", 4096)
    windows = _windows_from_layer_types(f, layers, window)
    if windows is None:
        key = next(
            (k for k in ("sliding_window_pattern", "_sliding_window_pattern") if f.has(k)), ""
        )
        period = f.int(key) if key else (6 if v3 else 2)
        windows = [0 if (i + 1) % period == 0 else window for i in range(layers)]
    return finish(
        d,
        layers,
        # Gemma 3 configs omit vocab_size (transformers Gemma3TextConfig default 262208, the
        # embedding rows of the released checkpoints); Gemma 2 configs give it (256000)
        f.int("vocab_size", 262_208) if v3 else f.int("vocab_size"),
        f.bool("tie_word_embeddings", True),
        attn,
        f.int("intermediate_size"),
        gated=True,
        pattern=[(w, False) for w in windows],
        norm=4 * d + (2 * head_dim if v3 else 0),
    )


def gemma2(f: Fields, finish: partial) -> ModelSpec:
    return _gemma(f, finish, v3=False)


def gemma3(f: Fields, finish: partial) -> ModelSpec:
    """Gemma 3: the multimodal ``gemma3`` wraps the text model in ``text_config`` (the vision
    tower, ~0.4B, is not counted: only the text decoder is modelled); ``gemma3_text`` is flat."""
    text, finish = _in_text_config(f, finish)
    return _gemma(text, finish, v3=True)


# ---------------------------------------------------------------------------------------------
# Phi-3 / Phi-3.5-mini / Phi-4 (model_type phi3)
# ---------------------------------------------------------------------------------------------


def phi3(f: Fields, finish: partial) -> ModelSpec:
    """Llama-shaped dense decoder; the fused ``qkv_proj`` and ``gate_up_proj`` hold the same
    parameters as separate projections. ``sliding_window`` is a window on every layer when not
    null (Phi-3-mini 2047; Phi-4 null); ``partial_rotary_factor`` and long-RoPE scaling do not
    change the cost."""
    d, layers, heads, kv, head_dim = _dims(f)
    window = f.int("sliding_window") if f.has("sliding_window") else 0
    return finish(
        d,
        layers,
        f.int("vocab_size"),
        f.bool("tie_word_embeddings", False),
        AttentionSpec("gqa", heads, kv, head_dim, head_dim),
        f.int("intermediate_size"),
        gated=True,
        pattern=[(window, False)] * layers,
        norm=2 * d,
    )


# ---------------------------------------------------------------------------------------------
# GLM-4 dense (glm4) and GLM-4.5 / 4.5-Air / 4.6 MoE (glm4_moe)
# ---------------------------------------------------------------------------------------------


def glm4(f: Fields, finish: partial) -> ModelSpec:
    """GLM-4-0414 dense: QKV bias (transformers ``Glm4Config.attention_bias`` default true; no
    o_proj bias), fused gate_up SwiGLU, and four RMSNorms per layer (input, post-attention,
    post-self-attention, post-MLP)."""
    d, layers, heads, kv, head_dim = _dims(f)
    attn = AttentionSpec(
        "gqa", heads, kv, head_dim, head_dim, qkv_bias=f.bool("attention_bias", True)
    )
    return finish(
        d,
        layers,
        f.int("vocab_size"),
        f.bool("tie_word_embeddings", False),
        attn,
        f.int("intermediate_size"),
        gated=True,
        pattern=[(0, False)] * layers,
        norm=4 * d,
    )


def glm4_moe(f: Fields, finish: partial) -> ModelSpec:
    """GLM-4.5 family: GQA with explicit head_dim, QKV bias when ``attention_bias`` (true in the
    released configs; no o_proj bias), optional QK-norm (``use_qk_norm``: q/k RMSNorm of
    head_dim), partial RoPE (no cost change); DeepSeek-style MoE after ``first_k_dense_replace``
    dense layers, one or more shared experts of ``moe_intermediate_size``. Routed experts are
    ``n_routed_experts`` in the checkpoints' configs, ``num_experts`` in an older transformers
    config (reference, "Reader pitfalls"). ``num_nextn_predict_layers`` MTP layers are kept out
    of the counts, as for DeepSeek-V3."""
    d, layers, heads, kv, head_dim = _dims(f)
    attn = AttentionSpec(
        "gqa", heads, kv, head_dim, head_dim, qkv_bias=f.bool("attention_bias", False)
    )
    if not (f.has("n_routed_experts") or f.has("num_experts")):
        raise SpecError(f"{f.where}: missing required field 'n_routed_experts' (or 'num_experts')")
    experts = f.int("n_routed_experts") if f.has("n_routed_experts") else f.int("num_experts")
    moe = MoESpec(
        experts,
        f.int("num_experts_per_tok"),
        f.int("moe_intermediate_size"),
        f.int("n_shared_experts", minimum=0),
        f.int("moe_intermediate_size"),
    )
    first_dense = f.int("first_k_dense_replace", minimum=0)
    qk_norm = 2 * head_dim if f.bool("use_qk_norm", False) else 0
    return finish(
        d,
        layers,
        f.int("vocab_size"),
        f.bool("tie_word_embeddings", False),
        attn,
        f.int("intermediate_size"),
        gated=True,
        pattern=[(0, i >= first_dense) for i in range(layers)],
        moe=moe,
        mtp=f.int("num_nextn_predict_layers", 0, minimum=0),
        norm=2 * d + qk_norm,
    )


FAMILY_PARSERS: dict[str, Parser] = {
    "gemma2": gemma2,
    "gemma3": gemma3,
    "gemma3_text": gemma3,
    "glm4": glm4,
    "glm4_moe": glm4_moe,
    "phi3": phi3,
    "qwen2_moe": qwen2_moe,
}


# ---------------------------------------------------------------------------------------------
# any other model_type: the common conventions, with a stated warning
# ---------------------------------------------------------------------------------------------

# fields every decoder config names under the common (Llama / transformers) conventions
GENERIC_REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
# where MoE configs keep the routed-expert count (Mixtral/gpt-oss, Qwen, DeepSeek/GLM styles)
EXPERT_COUNT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")


def generic_missing(f: Fields) -> list[str]:
    """The fields the common conventions need that ``f`` lacks (empty: readable)."""
    missing = [k for k in GENERIC_REQUIRED if not f.has(k)]
    experts = next((k for k in EXPERT_COUNT_KEYS if f.has(k)), None)
    if not f.has("intermediate_size") and not (experts and f.has("moe_intermediate_size")):
        missing.append("intermediate_size")
    if experts and not f.has("num_experts_per_tok"):
        missing.append("num_experts_per_tok")
    return missing


def generic(f: Fields, finish: partial) -> ModelSpec:
    """A decoder of an unknown ``model_type`` read by the common conventions: Llama-style GQA
    (``num_key_value_heads``, ``head_dim``, ``attention_bias``), a gated (SwiGLU) FFN of
    ``intermediate_size``, ``sliding_window`` per ``layer_types``, and MoE when an expert count
    is named (``num_local_experts`` / ``num_experts`` / ``n_routed_experts``, top-k
    ``num_experts_per_tok``, width ``moe_intermediate_size`` else ``intermediate_size``, shared
    experts ``n_shared_experts`` or ``shared_expert_intermediate_size``, dense layers
    ``first_k_dense_replace`` / ``mlp_only_layers`` / ``decoder_sparse_step``). The caller
    warns; the parameter count shows whether the reading is right."""
    d, layers, heads, kv, head_dim = _dims(f)
    bias = f.bool("attention_bias", False)
    attn = AttentionSpec("gqa", heads, kv, head_dim, head_dim, qkv_bias=bias)
    window = f.int("sliding_window") if f.has("sliding_window") else 0
    windows = _windows_from_layer_types(f, layers, window)
    if windows is None:
        windows = [window if f.bool("use_sliding_window", False) else 0] * layers
    experts = next((k for k in EXPERT_COUNT_KEYS if f.has(k)), None)
    moe = None
    is_moe = [False] * layers
    inter = f.int("intermediate_size", 0, minimum=0)
    if experts:
        width = f.int("moe_intermediate_size") if f.has("moe_intermediate_size") else inter
        shared_width = f.int("shared_expert_intermediate_size", 0, minimum=0)
        n_shared = 1 if shared_width else f.int("n_shared_experts", 0, minimum=0)
        moe = MoESpec(
            f.int(experts), f.int("num_experts_per_tok"), width, n_shared, shared_width or width
        )
        first = f.int("first_k_dense_replace", 0, minimum=0)
        step = f.int("decoder_sparse_step", 1)
        dense = set(f.int_list("mlp_only_layers", []))
        is_moe = [i >= first and i not in dense and (i + 1) % step == 0 for i in range(layers)]
    return finish(
        d,
        layers,
        f.int("vocab_size"),
        f.bool("tie_word_embeddings", False),
        attn,
        inter,
        gated=True,
        pattern=list(zip(windows, is_moe, strict=True)),
        moe=moe,
        norm=2 * d,
    )
