"""Model architecture specs, loaded from HuggingFace ``config.json`` (bundled or user files).

Notation (STYLE.md): D hidden, F FFN width, H query heads, L layers, V vocab, E experts, k top-k.
A model is a sequence of *layer groups*: runs of identical layers (same token mixer, attention
window, dense or MoE FFN), so heterogeneous stacks (DeepSeek's dense-first layers, Llama 4's
interleaved MoE, gpt-oss's alternating sliding-window attention, Qwen3.5's three Gated DeltaNet
layers per full-attention layer) are costed exactly without a loop per layer.

Token mixers (``LayerGroup.mixer``), each one kind with its own parameters, FLOPs, bytes and
cache (``../shared/reference/architectures.md`` sections 1, 2 and 9):
  * ``attention``: softmax attention of ``ModelSpec.attention`` (GQA/MHA/MQA or MLA), full or
    windowed; KV grows with context (capped at the window);
  * ``sparse``: DeepSeek Sparse Attention, MLA whose core attends the ``index_topk`` tokens a
    lightning indexer (``ModelSpec.indexer``) selects over the whole context; the cache holds
    the MLA latent and the indexer's FP8 key per token;
  * ``compressed``: DeepSeek-V4's attention (``ModelSpec.compressor``): each query attends the
    last ``window`` tokens and the entries a compressor pools, one per ``LayerGroup.compress``
    tokens, all of them (HCA, ratio 128) or the ``index_topk`` an indexer over the entries
    selects (CSA, ratio 4); the cache holds the window, the entries, the indexer's keys and the
    compressor's FP32 state;
  * ``linear``: a recurrent layer with a fixed-size state per sequence
    (``ModelSpec.linear_attention``: Gated DeltaNet), cost linear in length, no KV cache.

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
from ._load import Fields, existing_file, read_mapping, shown
from .model_parts import CompressorSpec, IndexerSpec, LinearAttentionSpec, MoESpec

__all__ = [
    "AttentionSpec",
    "CompressorSpec",
    "IndexerSpec",
    "LayerGroup",
    "LinearAttentionSpec",
    "ModelSpec",
    "MoESpec",
]


@dataclass(frozen=True)
class AttentionSpec:
    """Attention shape. ``kind`` is ``"gqa"`` (MHA/GQA/MQA), ``"mla"`` (DeepSeek latent
    attention) or ``"shared_kv"`` (DeepSeek-V4: one KV head whose cached ``head_dim`` vector is
    both key and value, queries from a ``q_lora_rank`` latent, the output through ``o_groups``
    grouped low-rank projections of width ``o_lora_rank`` and then to the hidden size, one
    attention sink per head; reference ``inference/model.py`` ``Attention``, vLLM
    ``models/deepseek_v4/attention.py``).

    For MLA, ``head_dim`` is the query/key head dim (nope + rope) and ``v_head_dim`` the value dim;
    the KV cache holds ``kv_lora_rank + qk_rope_head_dim`` elements per token per layer.
    ``output_gate``: the query projection also emits a sigmoid gate per output element (Qwen3-Next
    and Qwen3.5 gated attention: q_proj width 2 x heads x head_dim). ``qk_norm_across_heads``:
    RMSNorm over all query (and key) heads of a token (MiniMax-M2 ``qk_norm_type: per_layer``),
    so tensor-parallel ranks all-reduce the variance each layer (vLLM, SGLang and TensorRT-LLM
    ``MiniMaxText01RMSNormTP``). ``chunked_window``: the windowed layers attend within aligned
    chunks of ``window`` tokens, not a sliding window (Llama 4's local chunked attention,
    ``attention_chunk_size``: a query at position p attends the p mod window + 1 tokens of its
    own chunk; ``mixers.chunk_mean_keys``).
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
    output_gate: bool = False
    qk_norm_across_heads: bool = False
    chunked_window: bool = False
    o_groups: int = 0
    o_lora_rank: int = 0

    @property
    def kv_elements_per_token(self) -> int:
        """KV-cache elements per token per layer (K and V, MLA's latent + rope key, or the one
        shared K = V vector)."""
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        if self.kind == "shared_kv":
            return self.head_dim
        return self.num_kv_heads * (self.head_dim + self.v_head_dim)

    @property
    def prefill_head_dim(self) -> int | None:
        """Head width prefill kernels tile (``mixers.prefill_head_dim_share``); None for MLA and
        shared KV (DeepSeek-V4 runs FlashMLA's sparse kernels)."""
        return self.head_dim if self.kind == "gqa" else None


MIXERS = ("attention", "sparse", "compressed", "linear", "none")


def gdn_like(attention: AttentionSpec) -> LinearAttentionSpec:
    """A Gated DeltaNet shaped as Qwen3-Next pairs it with its attention (architectures.md s2):
    value width = the query width in 128-dim heads, half as many key heads, convolution 4."""
    v_heads = max(attention.num_heads * attention.head_dim // 128, 2)
    return LinearAttentionSpec(v_heads // 2, v_heads, 128, 128, 4)


# DeepSeek-V3.2's lightning indexer: 64 heads x 128, top-2048 (architectures.md s1)
DSA_INDEXER = IndexerSpec(64, 128, 2048)


@dataclass(frozen=True)
class LayerGroup:
    """``count`` consecutive identical layers. ``window`` > 0 is a sliding/chunked attention window
    in tokens (0 = full causal attention); ``moe`` selects the MoE FFN instead of the dense one;
    ``mixer`` is the token mixer (``MIXERS``: attention, sparse, compressed, linear, or none for
    an FFN-only block); ``ffn`` False is a mixer-only block (Nemotron-H's Mamba and attention
    blocks); ``compress`` the tokens a ``compressed`` layer pools into one cached entry
    (DeepSeek-V4's ``compress_ratios``: 4, CSA, or 128, HCA; ``model_parts.CompressorSpec``)."""

    count: int
    window: int
    moe: bool
    mixer: str = "attention"
    ffn: bool = True
    compress: int = 0


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
    indexer: IndexerSpec | None = None
    linear_attention: LinearAttentionSpec | None = None
    compressor: CompressorSpec | None = None
    hyper_connections: int = 0  # residual streams (DeepSeek-V4 mHC ``hc_mult``; 0: one)
    # index into layer_groups of each layer in model order (the config's layer pattern)
    layer_order: tuple[int, ...] = field(default=(), compare=False, repr=False)
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
        if a.kind == "shared_kv":  # wq_a, q_norm, wq_b; wkv, kv_norm; wo_a, wo_b; sinks
            q = d * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * a.num_heads * a.head_dim
            kv = d * a.head_dim + a.head_dim
            o = a.num_heads * a.head_dim * a.o_lora_rank + a.o_groups * a.o_lora_rank * d
            return q + kv + o + a.num_heads
        q = d * a.num_heads * a.head_dim * (2 if a.output_gate else 1)
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

    def mixer_params(self, mixer: str, compress: int = 0) -> int:
        """Parameters of one layer's token mixer (attention, sparse, compressed with its
        ``compress`` ratio, or linear; module doc)."""
        if mixer == "none":
            return 0
        if mixer == "linear":
            assert self.linear_attention is not None
            return self.linear_attention.params(self.hidden_size)
        p = self.attention_params_per_layer
        if mixer == "sparse":
            assert self.indexer is not None
            p += self.indexer.params(self.hidden_size, self.attention.q_lora_rank)
        if mixer == "compressed":
            c = self.compressor
            assert c is not None
            p += c.params(self.hidden_size, compress, self.attention.head_dim)
            if c.indexed(compress):
                assert self.indexer is not None
                p += c.indexer_params(self.hidden_size, self.attention.q_lora_rank, self.indexer)
        return p + self.hyper_connection_params

    def mixer_param_split(self, mixer: str, compress: int = 0) -> tuple[int, int, int, int]:
        """One layer's token-mixer parameters by how a GPU holds them: (split over attention
        TP, replicated, replicated in BF16, replicated in FP32). DeepSeek-V4 replicates wq_a and
        wkv (fused), its compressors (BF16) and its indexer (vLLM ``disable_tp``, FP8 queries)
        and its mHC maps (FP32); every other mixer is split whole.

        Example:
            >>> m = load_model("deepseek-v4-pro")
            >>> [round(x / 1e6, 2) for x in m.mixer_param_split("compressed", 128)]
            [285.21, 14.68, 7.41, 1.38]
        """
        p, a, d = self.mixer_params(mixer, compress), self.attention, self.hidden_size
        if a.kind != "shared_kv":
            return p, 0, 0, 0
        rep = d * a.q_lora_rank + a.q_lora_rank + d * a.head_dim + a.head_dim
        b16, f32, c = 0, self.hyper_connection_params, self.compressor
        if mixer == "compressed" and c is not None:
            b16 = c.params(d, compress, a.head_dim)
            if c.indexed(compress) and self.indexer is not None:
                own = c.params(d, compress, self.indexer.head_dim)  # (its ratio-4 compressor)
                b16 += own
                rep += c.indexer_params(d, a.q_lora_rank, self.indexer) - own
        return p - rep - b16 - f32, rep, b16, f32

    @property
    def hyper_connection_params(self) -> int:
        """mHC parameters of one layer (0 without): per sublayer (attention, FFN) a map of the
        ``hyper_connections`` x hidden stream to its (2 + n) x n mixes, their biases and three
        scales (reference ``Block.hc_attn_fn`` / ``hc_ffn_fn``)."""
        n = self.hyper_connections
        return 2 * ((2 + n) * n * (n * self.hidden_size + 1) + 3) if n else 0

    def _layer_params(self, g: LayerGroup, active: bool) -> int:
        p = self.mixer_params(g.mixer, g.compress) + self.norm_params_per_layer
        if not g.ffn:
            return p
        if not g.moe:
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
        layers = sum(g.count * self._layer_params(g, active=False) for g in self.layer_groups)
        return layers + self.embedding_params + self.lm_head_params + self.hidden_size

    @property
    def active_params(self) -> int:
        """Parameters touched per token: top-k routed experts only; embeddings per the model's
        published convention (``active_params_convention``: ``all``, ``no_input_embedding``, or
        ``no_embeddings``: neither the input embedding nor the LM head, as the MiniMax-01 and
        GLM-4.5 reports count)."""
        layers = sum(g.count * self._layer_params(g, active=True) for g in self.layer_groups)
        conv = self.active_params_convention
        emb = self.embedding_params if conv == "all" else 0
        head = self.lm_head_params if not self.tie_embeddings else self.embedding_params
        if (conv == "all" and self.tie_embeddings) or conv == "no_embeddings":
            head = 0
        return layers + emb + head + self.hidden_size

    @property
    def matmul_params_per_token(self) -> int:
        """Weights multiplied per decoded token (routed top-k + shared + dense + LM head), the
        basis of the '2 x active params' FLOPs rule: no input embedding (a lookup), no norms."""
        p = 0
        for g in self.layer_groups:
            p += g.count * (self._layer_params(g, active=True) - self.norm_params_per_layer)
        return p + self.vocab_size * self.hidden_size

    def kv_bytes_per_token(self, kv_bytes_per_element: float) -> float:
        """KV-cache bytes per token over the layers that cache tokens (attention and sparse
        layers; windowed layers cap at their window, linear layers hold a fixed state instead:
        ``ops.kv_bytes_per_sequence_per_gpu`` has both)."""
        per = self.attention.kv_elements_per_token * kv_bytes_per_element
        total = 0.0
        for g in self.layer_groups:
            if g.mixer in ("linear", "none"):
                continue
            extra = (
                self.indexer.cache_bytes_per_token if g.mixer == "sparse" and self.indexer else 0
            )
            if g.mixer == "compressed" and self.compressor is not None:  # one entry a ratio
                idx = self.indexer if self.compressor.indexed(g.compress) else None
                extra = idx.cache_bytes_per_token / g.compress if idx else 0.0
                total += g.count * (per / g.compress + extra)
                continue
            total += g.count * (per + extra)
        return total

    @property
    def mixers(self) -> tuple[str, ...]:
        """The token-mixer kinds this model's layers use, in ``MIXERS`` order."""
        have = {g.mixer for g in self.layer_groups}
        return tuple(m for m in MIXERS if m in have)

    @property
    def has_recurrent_state(self) -> bool:
        """Some layer keeps a fixed recurrent state per sequence (a ``linear`` token mixer:
        linear attention, Gated DeltaNet, SSMs)."""
        return any(g.mixer == "linear" for g in self.layer_groups)

    def layer_kinds(self) -> list[LayerGroup]:
        """Each layer's group in model order (the config's pattern); grouped by kind when the
        order is unknown or no longer matches the groups (a variant that regrouped layers)."""
        order = self.layer_order
        ok = len(order) == self.num_layers and all(
            order.count(i) == g.count for i, g in enumerate(self.layer_groups)
        )
        if ok:
            return [self.layer_groups[i] for i in order]
        return [g for g in self.layer_groups for _ in range(g.count)]

    def layer_mix(self) -> str:
        """The layers by token mixer, e.g. ``"linear 45 + attention 15"``."""
        counts = {m: 0 for m in MIXERS}
        for g in self.layer_groups:
            counts[g.mixer] += g.count
        names = {"none": "ffn-only"}  # blocks without a token mixer
        return " + ".join(f"{names.get(m, m)} {counts[m]}" for m in MIXERS if counts[m])

    def with_softmax_attention(self) -> ModelSpec:
        """The same model with softmax attention (``self.attention``) in every layer, the
        baseline a sparse or linear mixer is measured against: DSA layers keep their MLA without
        the indexer, linear layers become full-attention layers of the model's attention shape
        (their parameters change accordingly). A model without such layers returns itself."""
        if not any(g.mixer != "attention" for g in self.layer_groups):
            return self
        kinds = [  # (a compressed layer's baseline: full attention, not its window)
            (
                0 if g.compress else g.window,
                g.moe,
                "attention" if g.mixer != "none" else "none",
                g.ffn,
            )
            for g in self.layer_kinds()
        ]
        unique = sorted(set(kinds))
        import dataclasses

        return dataclasses.replace(
            self,
            id=f"{self.id}-softmax-attention",
            layer_groups=tuple(LayerGroup(kinds.count(k), *k) for k in unique),
            layer_order=tuple(unique.index(k) for k in kinds),
            indexer=None,
            linear_attention=None,
            compressor=None,
        )

    def with_mixer(
        self,
        mixer: str,
        share: float,
        suffix: str,
        *,
        indexer: IndexerSpec | None = None,
        linear_attention: LinearAttentionSpec | None = None,
    ) -> ModelSpec:
        """This model with ``mixer`` (sparse or linear) on ``share`` of each group's full
        softmax layers, and that mixer's spec. The parameters change with the mixer (a Gated
        DeltaNet layer is not an attention layer's size); the layer order becomes grouped."""
        if mixer not in ("sparse", "linear") or not 0.0 <= share <= 1.0:
            raise ValueError(f"with_mixer: mixer {mixer!r} share {share}")
        import dataclasses

        groups: list[LayerGroup] = []
        for g in self.layer_groups:  # (the rest keeps its kind: window, compression)
            moved = round(g.count * share) if g.mixer == "attention" and g.window == 0 else 0
            groups.append(LayerGroup(moved, 0, g.moe, mixer, g.ffn))
            groups.append(dataclasses.replace(g, count=g.count - moved))

        return dataclasses.replace(
            self,
            id=f"{self.id}-{suffix}",
            layer_groups=tuple(x for x in groups if x.count),
            layer_order=(),
            indexer=indexer or self.indexer,
            linear_attention=linear_attention or self.linear_attention,
        )

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model_type": self.model_type,
            "total_params": self.total_params,
            "active_params": self.active_params,
            "layers": self.layer_mix(),
            "source": self.source,
        }


# ---------------------------------------------------------------------------------------------
# Bundled models and user files
# ---------------------------------------------------------------------------------------------


def _models_dir() -> Path:
    return Path(str(resources.files("llm_codesign") / "data" / "models"))


def _from_bundle_file(path: Path) -> ModelSpec:
    # the parser builds this module's ModelSpec, so it is imported when a file is read
    from .model_config import model_from_config

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
        active_params_convention=_convention(pub.str("active_convention", "all"), path.name),
        aliases=tuple(f.str_list("aliases", [])),
    )


ACTIVE_CONVENTIONS = ("all", "no_input_embedding", "no_embeddings")


def _convention(value: str, where: str) -> str:
    if value not in ACTIVE_CONVENTIONS:
        raise SpecError(
            f"{where}: published_params.active_convention {value!r} unknown; allowed: "
            f"{', '.join(ACTIVE_CONVENTIONS)}"
        )
    return value


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
    """Resolve a model: a :class:`ModelSpec`, a bundled id or alias, a path to a config.json
    (HF format) or to a bundled-style JSON with ``config``, or a HuggingFace id
    ``<org>/<name>[@<revision>]`` from the local hub cache (offline; :mod:`.hf_cache`)."""
    if isinstance(model, ModelSpec):
        return model
    from .model_config import model_from_config  # imports this module (ModelSpec)

    text = str(model)
    models = bundled_models()
    if text in models:
        return models[text]
    alias = model_alias_table().get(text.lower())
    if alias:  # a published quantized checkpoint's name brings its quantization_config
        from .checkpoint import named_checkpoint  # imports this module (ModelSpec)

        return named_checkpoint(models[alias], text)
    path = existing_file(text)
    if path is not None:
        data = read_mapping(path)
        if "config" in data and isinstance(data["config"], dict) and "id" in data:
            return _from_bundle_file(path)
        spec = model_from_config(
            data,
            model_id=path.parent.name if path.name == "config.json" else path.stem,
            source=str(path),
            where=str(path),
        )
        from .checkpoint import with_checkpoint_files  # quantization outside the text config

        return with_checkpoint_files(spec, data, path)
    from .hf_cache import load_hub_model, parse_hub_id  # imports this module (ModelSpec)

    if parse_hub_id(text):  # <org>/<name>[@<revision>] from the local HuggingFace cache
        return load_hub_model(text)
    raise UnknownIdError(
        f"unknown model {shown(text)!r}: not a bundled id and not a readable config.json path; "
        f"bundled: {', '.join(sorted(models))}"
    )


def model_to_json(spec: ModelSpec) -> str:
    return json.dumps(spec.config, indent=2)
