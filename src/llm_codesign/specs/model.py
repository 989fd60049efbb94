"""Model architecture specs, loaded from HuggingFace ``config.json`` (bundled or user files).

Notation (STYLE.md): D hidden, F FFN width, H query heads, L layers, V vocab, E experts, k top-k.
A model is a sequence of *layer groups*: runs of identical layers (same attention window, dense or
MoE FFN), so heterogeneous stacks (DeepSeek's dense-first layers, Llama 4's interleaved MoE,
gpt-oss's alternating sliding-window attention) are costed exactly without a loop per layer.

Example:
    >>> m = load_model("llama-3.1-8b")
    >>> round(m.total_params / 1e9, 2)
    8.03
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import SpecError, UnknownIdError
from ._load import Fields, read_mapping

SUPPORTED_MODEL_TYPES = (
    "deepseek_v3",
    "falcon",
    "gpt_oss",
    "gptj",
    "llama",
    "llama4",
    "llama4_text",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
)


@dataclass(frozen=True)
class AttentionSpec:
    """Attention shape. ``kind`` is ``"gqa"`` (MHA/GQA/MQA) or ``"mla"`` (DeepSeek latent attention).

    For MLA, ``head_dim`` is the query/key head dim (nope + rope) and ``v_head_dim`` the value dim;
    the KV cache holds ``kv_lora_rank + qk_rope_head_dim`` elements per token per layer.
    """

    kind: str
    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    qkv_bias: bool = False
    o_bias: bool = False
    sinks: bool = False

    @property
    def kv_elements_per_token(self) -> int:
        """KV-cache elements per token per layer (K and V, or MLA's latent + rope key)."""
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.num_kv_heads * (self.head_dim + self.v_head_dim)


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts FFN: E routed experts of width ``expert_intermediate``, top-k routing,
    plus ``num_shared`` always-on experts of width ``shared_intermediate``."""

    num_experts: int
    top_k: int
    expert_intermediate: int
    num_shared: int = 0
    shared_intermediate: int = 0
    expert_bias: bool = False
    router_bias: bool = False


@dataclass(frozen=True)
class LayerGroup:
    """``count`` consecutive identical layers. ``window`` > 0 is a sliding/chunked attention window
    in tokens (0 = full causal attention); ``moe`` selects the MoE FFN instead of the dense one."""

    count: int
    window: int
    moe: bool


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer, normalized from its config.json.

    Parameter counts are derived (``total_params``, ``active_params``) and checked against the
    published figures in tests.
    """

    id: str
    name: str
    model_type: str
    source: str
    hidden_size: int
    num_layers: int
    vocab_size: int
    tie_embeddings: bool
    attention: AttentionSpec
    intermediate_size: int
    gated_ffn: bool
    layer_groups: tuple[LayerGroup, ...]
    moe: MoESpec | None = None
    num_mtp_layers: int = 0
    ffn_bias: bool = False
    norm_params_per_layer: int = 0
    published_total_params: float | None = None
    published_active_params: float | None = None
    published_params_source: str = ""
    active_params_convention: str = "all"
    aliases: tuple[str, ...] = field(default=())
    config: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    # ---- parameter counting (closed forms; see tests for published checks) ----
    @property
    def attention_params_per_layer(self) -> int:
        a, d = self.attention, self.hidden_size
        if a.kind == "mla":
            qk = a.qk_nope_head_dim + a.qk_rope_head_dim
            if a.q_lora_rank:
                q = d * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * a.num_heads * qk
            else:
                q = d * a.num_heads * qk
            kv = d * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
            kv += a.kv_lora_rank * a.num_heads * (a.qk_nope_head_dim + a.v_head_dim)
            return q + kv + a.num_heads * a.v_head_dim * d
        q = d * a.num_heads * a.head_dim
        kv = 2 * d * a.num_kv_heads * a.head_dim
        o = a.num_heads * a.v_head_dim * d
        bias = (a.num_heads + 2 * a.num_kv_heads) * a.head_dim if a.qkv_bias else 0
        bias += d if a.o_bias else 0
        return q + kv + o + bias + (a.num_heads if a.sinks else 0)

    def _ffn_params(self, width: int, bias: bool) -> int:
        mats = 3 if self.gated_ffn else 2
        p = mats * self.hidden_size * width
        if bias:
            p += (2 if self.gated_ffn else 1) * width + self.hidden_size
        return p

    @property
    def dense_ffn_params(self) -> int:
        return self._ffn_params(self.intermediate_size, self.ffn_bias)

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert."""
        assert self.moe is not None
        return self._ffn_params(self.moe.expert_intermediate, self.moe.expert_bias)

    @property
    def shared_expert_params(self) -> int:
        assert self.moe is not None
        if not self.moe.num_shared:
            return 0
        return self.moe.num_shared * self._ffn_params(self.moe.shared_intermediate, False)

    @property
    def router_params(self) -> int:
        assert self.moe is not None
        return self.hidden_size * self.moe.num_experts + (
            self.moe.num_experts if self.moe.router_bias else 0
        )

    def _layer_params(self, moe: bool, active: bool) -> int:
        p = self.attention_params_per_layer + self.norm_params_per_layer
        if not moe:
            return p + self.dense_ffn_params
        assert self.moe is not None
        experts = self.moe.top_k if active else self.moe.num_experts
        return p + experts * self.expert_params + self.shared_expert_params + self.router_params

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tie_embeddings else self.vocab_size * self.hidden_size

    @property
    def num_moe_layers(self) -> int:
        return sum(g.count for g in self.layer_groups if g.moe)

    @property
    def total_params(self) -> int:
        """All parameters of the main model (MTP modules excluded, as published counts do)."""
        layers = sum(g.count * self._layer_params(g.moe, active=False) for g in self.layer_groups)
        return layers + self.embedding_params + self.lm_head_params + self.hidden_size

    @property
    def active_params(self) -> int:
        """Parameters touched per token: top-k routed experts only; embeddings per the model's
        published convention (``active_params_convention``: ``all`` or ``no_input_embedding``)."""
        layers = sum(g.count * self._layer_params(g.moe, active=True) for g in self.layer_groups)
        emb = self.embedding_params if self.active_params_convention == "all" else 0
        head = self.lm_head_params if not self.tie_embeddings else self.embedding_params
        if self.active_params_convention == "all" and self.tie_embeddings:
            head = 0
        return layers + emb + head + self.hidden_size

    @property
    def matmul_params_per_token(self) -> int:
        """Weights multiplied per decoded token (routed top-k + shared + dense + LM head), the
        basis of the '2 x active params' FLOPs rule: no input embedding (a lookup), no norms."""
        p = 0
        for g in self.layer_groups:
            p += g.count * (self._layer_params(g.moe, active=True) - self.norm_params_per_layer)
        return p + self.vocab_size * self.hidden_size

    def kv_bytes_per_token(self, kv_bytes_per_element: float) -> float:
        """KV-cache bytes per token over all layers (full-attention layers; windowed layers cap
        at their window, see ``kv_cache_tokens``)."""
        return self.num_layers * self.attention.kv_elements_per_token * kv_bytes_per_element

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model_type": self.model_type,
            "total_params": self.total_params,
            "active_params": self.active_params,
            "source": self.source,
        }


# ---------------------------------------------------------------------------------------------
# config.json -> ModelSpec
# ---------------------------------------------------------------------------------------------


def _groups(pattern: list[tuple[int, bool]]) -> tuple[LayerGroup, ...]:
    """Run-length encode per-layer (window, moe) into sorted groups (layer order is irrelevant
    to cost; kept grouped by kind so the op list stays short)."""
    counts: dict[tuple[int, bool], int] = {}
    for key in pattern:
        counts[key] = counts.get(key, 0) + 1
    return tuple(LayerGroup(c, w, m) for (w, m), c in sorted(counts.items()))


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
        raise SpecError(
            f"{where}: unsupported model_type {model_type!r}; supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    cfg = config
    if model_type == "llama4":
        cfg = top.mapping("text_config").data
        where = f"{where}: text_config"
    f = Fields(cfg, where)

    if model_type == "gptj":
        d, layers, heads = f.int("n_embd"), f.int("n_layer"), f.int("n_head")
        hd = d // heads
        inter = f.int("n_inner") if f.has("n_inner") else 4 * d
        attn = AttentionSpec("gqa", heads, heads, hd, hd)
        return _finish(
            f,
            model_id,
            name,
            source,
            model_type,
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
    if d % heads and not f.has("head_dim"):
        raise SpecError(
            f"{where}: hidden_size={d} is not divisible by num_attention_heads={heads} and no head_dim is given"
        )
    vocab = f.int("vocab_size")
    tie = f.bool("tie_word_embeddings", False)

    if model_type == "falcon":
        kv = (
            f.int("num_kv_heads", 1)
            if f.bool("new_decoder_architecture", False)
            else (1 if f.bool("multi_query", True) else heads)
        )
        hd = d // heads
        attn = AttentionSpec(
            "gqa", heads, kv, hd, hd, qkv_bias=f.bool("bias", False), o_bias=f.bool("bias", False)
        )
        inter = f.int("ffn_hidden_size") if f.has("ffn_hidden_size") else 4 * d
        return _finish(
            f,
            model_id,
            name,
            source,
            model_type,
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
            f"{where}: num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}"
        )
    head_dim = f.int("head_dim") if f.has("head_dim") else d // heads

    if model_type == "deepseek_v3":
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
        moe = MoESpec(
            f.int("n_routed_experts"),
            f.int("num_experts_per_tok"),
            f.int("moe_intermediate_size"),
            f.int("n_shared_experts", 0, minimum=0),
            f.int("moe_intermediate_size"),
        )
        first_dense = f.int("first_k_dense_replace", 0, minimum=0)
        freq = f.int("moe_layer_freq", 1)
        pattern = [(0, i >= first_dense and i % freq == 0) for i in range(layers)]
        return _finish(
            f,
            model_id,
            name,
            source,
            model_type,
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
        )

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
        return _finish(
            f,
            model_id,
            name,
            source,
            model_type,
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
        dense_only = set(f.list("mlp_only_layers", []))
        pattern = [(window, i not in dense_only and (i + 1) % step == 0) for i in range(layers)]
        return _finish(
            f,
            model_id,
            name,
            source,
            model_type,
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
        return _finish(
            f,
            model_id,
            name,
            source,
            model_type,
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
            f.list("moe_layers")
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
        no_rope = (
            f.list("no_rope_layers")
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
        return _finish(
            f,
            model_id,
            name,
            source,
            model_type,
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
    return _finish(
        f,
        model_id,
        name,
        source,
        model_type,
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
) -> ModelSpec:
    if moe is not None and moe.top_k > moe.num_experts:
        raise SpecError(
            f"{f.where}: top-k={moe.top_k} exceeds the number of experts={moe.num_experts}"
        )
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
        layer_groups=_groups(pattern),
        moe=moe,
        num_mtp_layers=mtp,
        ffn_bias=ffn_bias,
        norm_params_per_layer=norm,
        config=f.data,
    )


# ---------------------------------------------------------------------------------------------
# Bundled models and user files
# ---------------------------------------------------------------------------------------------


def _models_dir() -> Path:
    return Path(str(resources.files("llm_codesign") / "data" / "models"))


def _from_bundle_file(path: Path) -> ModelSpec:
    data = read_mapping(path)
    f = Fields(data, str(path.name))
    cfg = f.mapping("config").data
    model_id = f.str("id")
    spec = model_from_config(
        cfg,
        model_id=model_id,
        name=f.str("name", model_id),
        source=f.str("source"),
        where=path.name,
    )
    pub = f.mapping("published_params", required=False)
    import dataclasses

    return dataclasses.replace(
        spec,
        published_total_params=pub.float("total") if pub.has("total") else None,
        published_active_params=pub.float("active") if pub.has("active") else None,
        published_params_source=pub.str("source", ""),
        active_params_convention=pub.str("active_convention", "all"),
        aliases=tuple(str(a) for a in f.list("aliases", [])),
    )


@cache
def bundled_models() -> dict[str, ModelSpec]:
    """All bundled models by id (data files are immutable package data, so caching is safe)."""
    out: dict[str, ModelSpec] = {}
    for path in sorted(_models_dir().glob("*.json")):
        spec = _from_bundle_file(path)
        out[spec.id] = spec
    return out


def model_alias_table() -> dict[str, str]:
    """Lower-cased alias -> model id, for mapping names in measurement tables."""
    table: dict[str, str] = {}
    for spec in bundled_models().values():
        table[spec.id.lower()] = spec.id
        for alias in spec.aliases:
            table[alias.lower()] = spec.id
    return table


def load_model(model: str | Path | ModelSpec) -> ModelSpec:
    """Resolve a model: a :class:`ModelSpec`, a bundled id or alias, or a path to a config.json
    (HF format) or to a bundled-style JSON with ``config``."""
    if isinstance(model, ModelSpec):
        return model
    text = str(model)
    models = bundled_models()
    if text in models:
        return models[text]
    alias = model_alias_table().get(text.lower())
    if alias:
        return models[alias]
    path = Path(text)
    if path.is_dir() and (path / "config.json").is_file():
        path = path / "config.json"
    if path.is_file():
        data = read_mapping(path)
        if "config" in data and isinstance(data["config"], dict) and "id" in data:
            return _from_bundle_file(path)
        return model_from_config(
            data,
            model_id=path.parent.name if path.name == "config.json" else path.stem,
            source=str(path),
            where=str(path),
        )
    raise UnknownIdError(
        f"unknown model {text!r}: not a bundled id and not a readable config.json path; "
        f"bundled: {', '.join(sorted(models))}"
    )


def model_to_json(spec: ModelSpec) -> str:
    return json.dumps(spec.config, indent=2)
