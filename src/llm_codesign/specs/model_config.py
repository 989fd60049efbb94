"""HuggingFace ``config.json`` -> :class:`ModelSpec`, for each supported ``model_type``.

The loaders in :mod:`.model` call :func:`model_from_config` for bundled and user files.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from functools import partial
from typing import Any

from ..errors import SpecError, UnknownModelTypeWarning
from ._load import Fields
from .model import (
    AttentionSpec,
    CompressorSpec,
    IndexerSpec,
    LayerGroup,
    LinearAttentionSpec,
    ModelSpec,
    MoESpec,
)
from .model_families import FAMILY_PARSERS, deepseek_moe, generic, generic_missing, head_dim_of
from .model_hybrids import deepseek_v4, gated_deltanet_hybrid, minimax, minimax_m3, nemotron_h

# model types this module parses itself; model_families.py parses the others
_OWN_TYPES = (
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "deepseek_v4",
    "falcon",
    "glm_moe_dsa",
    "gpt_oss",
    "gptj",
    "kimi_k2",
    "kimi_k25",
    "llama",
    "llama4",
    "llama4_text",
    "minimax",
    "minimax_m1",
    "minimax_m2",
    "minimax_m3",
    "minimax_m3_vl",
    "minimax_m3_vl_text",
    "minimax_text_01",
    "mistral",
    "mixtral",
    "nemotron_h",
    "qwen2",
    "qwen3",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "qwen3_moe",
    "qwen3_next",
)
# vision-language wrappers whose text model sits under ``text_config`` (architectures.md s8)
TEXT_WRAPPERS = {
    "llama4": "llama4",
    "kimi_k25": "kimi_k2",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "minimax_m3_vl": "minimax_m3",
}
# MiniMax-M3: GQA + MiniMax Sparse Attention + MoE (its text config as AIConfigurator and SGLang
# flatten it, or transformers' text model type)
MINIMAX_M3_TYPES = ("minimax_m3", "minimax_m3_vl_text")
# MLA models read by the DeepSeek-V3 branch; DSA (an indexer) where the config has index_* fields
MLA_TYPES = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "kimi_k2")
# MiniMax: MiniMax-01 / M1 (lightning attention 7 of 8 layers) and M2 (softmax everywhere)
MINIMAX_TYPES = ("minimax", "minimax_m1", "minimax_m2", "minimax_text_01")
# Gated DeltaNet hybrids: Qwen3-Next and Qwen3.5 MoE (architectures.md section 2)
GDN_TYPES = ("qwen3_next", "qwen3_5_moe_text")

SUPPORTED_MODEL_TYPES = tuple(sorted(_OWN_TYPES + tuple(FAMILY_PARSERS)))


# ---------------------------------------------------------------------------------------------
# config.json -> ModelSpec
# ---------------------------------------------------------------------------------------------


def _groups(pattern: list[tuple]) -> tuple[tuple[LayerGroup, ...], tuple[int, ...]]:
    """Per-layer (window, moe[, mixer[, ffn[, compress]]]) -> sorted groups of identical layers
    (cost does not depend on order; grouped by kind so the op list stays short) and each layer's
    group index in model order (pipeline stages do). The mixer defaults to softmax
    ``attention``, the FFN to present, the compression to none."""
    defaults = ("attention", True, 0)
    keys = [(*k, *defaults[len(k) - 2 :])[:5] for k in pattern]
    kinds = sorted(set(keys))
    groups = tuple(LayerGroup(keys.count(k), *k) for k in kinds)
    return groups, tuple(kinds.index(k) for k in keys)


def model_from_config(
    config: dict[str, Any], *, model_id: str, name: str = "", source: str = "", where: str = ""
) -> ModelSpec:
    """Build a :class:`ModelSpec` from a HuggingFace config.json mapping.

    Raises SpecError naming ``where`` and the field for missing or invalid values, and
    UnknownIdError-like SpecError for an unsupported ``model_type``.
    """
    where = where or model_id
    top = Fields(config, where)
    model_type = top.str("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        text = top.mapping("text_config") if top.has("text_config") else top
        missing = generic_missing(text)
        if missing:
            raise SpecError(
                f"{where}: model_type {model_type!r} is not supported and its config cannot be "
                f"read by the common conventions: missing {', '.join(missing)} (supported "
                f"types: {', '.join(SUPPORTED_MODEL_TYPES)})"
            )
        spec = generic(text, partial(_finish, text, model_id, name, source, model_type))
        warnings.warn(
            f"{where}: model_type {model_type!r} is not one llm-codesign knows; read by the "
            f"common conventions (Llama-style GQA, SwiGLU FFN, MoE fields if named): "
            f"{spec.total_params / 1e9:.2f}B parameters ({spec.active_params / 1e9:.2f}B "
            "active) - check them against the model card",
            UnknownModelTypeWarning,
            stacklevel=2,
        )
        return spec
    cfg = config
    if model_type in TEXT_WRAPPERS:
        cfg = top.mapping("text_config").data
        where = f"{where}: text_config"
        if model_type != "llama4":
            model_type = TEXT_WRAPPERS[model_type]
        if "quantization_config" in config and "quantization_config" not in cfg:
            # the checkpoint's precision sits beside text_config (specs.checkpoint reads it)
            cfg = {**cfg, "quantization_config": config["quantization_config"]}
    f = Fields(cfg, where)
    finish = partial(_finish, f, model_id, name, source, model_type)

    if model_type in FAMILY_PARSERS:  # qwen2_moe, gemma2/3, phi3, glm4(_moe)
        return FAMILY_PARSERS[model_type](f, finish)

    if model_type == "gptj":
        d, layers, heads = f.int("n_embd"), f.int("n_layer"), f.int("n_head")
        hd = head_dim_of(f, d, heads, "n_embd", "n_head")
        inter = f.int("n_inner") if f.has("n_inner") else 4 * d
        attn = AttentionSpec("gqa", heads, heads, hd, hd)
        return finish(
            d,
            layers,
            f.int("vocab_size"),
            False,
            attn,
            inter,
            gated=False,
            pattern=[(0, False)] * layers,
            ffn_bias=True,
            norm=2 * d,
        )

    d = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    head_dim = head_dim_of(f, d, heads)
    vocab = f.int("vocab_size")
    tie = f.bool("tie_word_embeddings", False)

    if model_type == "falcon":
        kv = (
            f.int("num_kv_heads", 1)
            if f.bool("new_decoder_architecture", False)
            else (1 if f.bool("multi_query", True) else heads)
        )
        hd = head_dim_of(f, d, heads)
        attn = AttentionSpec(
            "gqa", heads, kv, hd, hd, qkv_bias=f.bool("bias", False), o_bias=f.bool("bias", False)
        )
        inter = f.int("ffn_hidden_size") if f.has("ffn_hidden_size") else 4 * d
        return finish(
            d,
            layers,
            vocab,
            tie,
            attn,
            inter,
            gated=False,
            pattern=[(0, False)] * layers,
            ffn_bias=f.bool("bias", False),
            norm=4 * d,
        )

    kv_heads = f.int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise SpecError(
            f"{where}: num_attention_heads={heads} is not a multiple of "
            f"num_key_value_heads={kv_heads}"
        )

    if model_type in MLA_TYPES:
        # never the config's head_dim: transformers sets it to qk_rope_head_dim for MLA models
        nope, rope = f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim")
        attn = AttentionSpec(
            "mla",
            heads,
            heads,
            nope + rope,
            f.int("v_head_dim"),
            q_lora_rank=f.int("q_lora_rank") if f.has("q_lora_rank") else 0,
            kv_lora_rank=f.int("kv_lora_rank"),
            qk_rope_head_dim=rope,
            qk_nope_head_dim=nope,
        )
        moe = deepseek_moe(f)
        first_dense = f.int("first_k_dense_replace", 0, minimum=0)
        freq = f.int("moe_layer_freq", 1)
        # DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): every layer runs the lightning
        # indexer when the config names one (GLM-5.x ``indexer_types`` "shared" layers reuse a
        # previous layer's selection; priced as full indexers here, an upper bound)
        indexer = None
        if f.has("index_topk"):
            indexer = IndexerSpec(
                f.int("index_n_heads"), f.int("index_head_dim"), f.int("index_topk")
            )
        mixer = "sparse" if indexer else "attention"
        pattern = [(0, i >= first_dense and i % freq == 0, mixer) for i in range(layers)]
        return finish(
            d,
            layers,
            vocab,
            tie,
            attn,
            f.int("intermediate_size"),
            gated=True,
            pattern=pattern,
            moe=moe,
            mtp=f.int("num_nextn_predict_layers", 0, minimum=0),
            norm=2 * d,
            indexer=indexer,
        )
    if model_type == "deepseek_v4":
        return deepseek_v4(f, finish, d, layers, heads, kv_heads, vocab, tie)
    if model_type in GDN_TYPES:
        return gated_deltanet_hybrid(f, finish, d, layers, heads, kv_heads, head_dim, vocab, tie)
    if model_type == "nemotron_h":
        return nemotron_h(f, finish, d, layers, heads, kv_heads, vocab, tie)
    if model_type in MINIMAX_TYPES:
        return minimax(f, finish, model_type, d, layers, heads, kv_heads, head_dim, vocab, tie)
    if model_type in MINIMAX_M3_TYPES:
        return minimax_m3(f, finish, d, layers, heads, kv_heads, head_dim, vocab, tie)

    bias = f.bool("attention_bias", model_type == "qwen2")
    attn = AttentionSpec(
        "gqa",
        heads,
        kv_heads,
        head_dim,
        head_dim,
        qkv_bias=bias,
        o_bias=bias and model_type == "gpt_oss",
        sinks=model_type == "gpt_oss",
    )
    inter = f.int("intermediate_size")
    window = 0
    if model_type in ("mistral", "mixtral") and f.has("sliding_window"):
        window = f.int("sliding_window")
    if model_type in ("qwen2", "qwen3", "qwen3_moe") and f.bool("use_sliding_window", False):
        window = f.int("sliding_window")

    if model_type == "mixtral":
        moe = MoESpec(f.int("num_local_experts"), f.int("num_experts_per_tok"), inter)
        return finish(
            d,
            layers,
            vocab,
            tie,
            attn,
            inter,
            gated=True,
            pattern=[(window, True)] * layers,
            moe=moe,
            norm=2 * d,
        )
    if model_type == "qwen3_moe":
        moe = MoESpec(
            f.int("num_experts"), f.int("num_experts_per_tok"), f.int("moe_intermediate_size")
        )
        step = f.int("decoder_sparse_step", 1)
        dense_only = set(f.int_list("mlp_only_layers", []))
        pattern = [(window, i not in dense_only and (i + 1) % step == 0) for i in range(layers)]
        return finish(
            d,
            layers,
            vocab,
            tie,
            attn,
            inter,
            gated=True,
            pattern=pattern,
            moe=moe,
            norm=2 * d + 2 * head_dim,
        )
    if model_type == "gpt_oss":
        moe = MoESpec(
            f.int("num_local_experts"),
            f.int("num_experts_per_tok")
            if f.has("num_experts_per_tok")
            else f.int("experts_per_token"),
            inter,
            expert_bias=True,
            router_bias=True,
        )
        sw = f.int("sliding_window")
        types = (
            f.list("layer_types")
            if f.has("layer_types")
            else ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
        )
        if len(types) != layers:
            raise SpecError(
                f"{where}: layer_types has {len(types)} entries but num_hidden_layers={layers}"
            )
        pattern = [(sw if t == "sliding_attention" else 0, True) for t in types]
        return finish(
            d,
            layers,
            vocab,
            tie,
            attn,
            inter,
            gated=True,
            pattern=pattern,
            moe=moe,
            norm=2 * d,
        )
    if model_type in ("llama4", "llama4_text"):
        step = f.int("interleave_moe_layer_step", 1)
        moe_layers = (
            f.int_list("moe_layers")
            if f.has("moe_layers")
            else [i for i in range(layers) if (i + 1) % step == 0]
        )
        moe = MoESpec(
            f.int("num_local_experts"),
            f.int("num_experts_per_tok"),
            inter,
            1,
            inter,
        )
        chunk = f.int("attention_chunk_size") if f.has("attention_chunk_size") else 0
        attn = replace(attn, chunked_window=chunk > 0)
        no_rope = (
            f.int_list("no_rope_layers")
            if f.has("no_rope_layers")
            else [0 if (i + 1) % 4 == 0 else 1 for i in range(layers)]
        )
        # Llama 4: RoPE layers (no_rope_layers[i] == 1) use chunked local attention; NoPE layers
        # attend globally (HF modeling_llama4: `use_chunked_attention = no_rope_layers[i]`).
        moe_set = set(moe_layers)
        pattern = [
            (chunk if (no_rope[i] if i < len(no_rope) else 1) else 0, i in moe_set)
            for i in range(layers)
        ]
        dense_inter = f.int("intermediate_size_mlp") if f.has("intermediate_size_mlp") else inter
        return finish(
            d,
            layers,
            vocab,
            tie,
            attn,
            dense_inter,
            gated=True,
            pattern=pattern,
            moe=moe,
            norm=2 * d,
        )
    # llama, mistral, qwen2, qwen3: dense
    norm = 2 * d + (2 * head_dim if model_type == "qwen3" else 0)
    return finish(
        d,
        layers,
        vocab,
        tie,
        attn,
        inter,
        gated=True,
        pattern=[(window, False)] * layers,
        ffn_bias=f.bool("mlp_bias", False),
        norm=norm,
    )


def _finish(
    f: Fields,
    model_id: str,
    name: str,
    source: str,
    model_type: str,
    d: int,
    layers: int,
    vocab: int,
    tie: bool,
    attn: AttentionSpec,
    inter: int,
    *,
    gated: bool,
    pattern: list[tuple[int, bool]],
    moe: MoESpec | None = None,
    mtp: int = 0,
    ffn_bias: bool = False,
    norm: int = 0,
    indexer: IndexerSpec | None = None,
    linear: LinearAttentionSpec | None = None,
    compressor: CompressorSpec | None = None,
    hyper_connections: int = 0,
) -> ModelSpec:
    if moe is not None and moe.top_k > moe.num_experts:
        raise SpecError(
            f"{f.where}: top-k={moe.top_k} exceeds the number of experts={moe.num_experts}"
        )
    groups, order = _groups(pattern)
    return ModelSpec(
        id=model_id,
        name=name or model_id,
        model_type=model_type,
        source=source,
        hidden_size=d,
        num_layers=layers,
        vocab_size=vocab,
        tie_embeddings=tie,
        attention=attn,
        intermediate_size=inter,
        gated_ffn=gated,
        layer_groups=groups,
        layer_order=order,
        moe=moe,
        num_mtp_layers=mtp,
        ffn_bias=ffn_bias,
        norm_params_per_layer=norm,
        indexer=indexer,
        linear_attention=linear,
        compressor=compressor,
        hyper_connections=hyper_connections,
        config=f.data,
    )
