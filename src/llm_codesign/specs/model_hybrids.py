"""HuggingFace ``config.json`` -> :class:`ModelSpec` for models with linear (recurrent) token
mixers: MiniMax-01 / M1 lightning attention and MiniMax-M2 (``minimax*``), Nemotron-H's Mamba-2
blocks (``nemotron_h``), and the Gated DeltaNet hybrids Qwen3-Next and Qwen3.5
(``qwen3_next``, ``qwen3_5_moe_text``); and DeepSeek-V4's hybrid of windowed, compressed and
sparse attention (``deepseek_v4``). :func:`.model_config.model_from_config` dispatches here
with the common fields it has read; each parser returns ``finish(...)`` like its branches.
"""

from __future__ import annotations

from functools import partial

from ..errors import SpecError
from ..formats import get_format
from ._load import Fields
from .model import (
    AttentionSpec,
    CompressorSpec,
    IndexerSpec,
    LinearAttentionSpec,
    ModelSpec,
    MoESpec,
)
from .model_families import deepseek_moe, head_dim_of, qwen_moe

# format of a recurrent state by the config's ``mamba_ssm_dtype`` ("auto": the model dtype)
STATE_DTYPE_FORMAT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "auto": "bf16"}


def state_bytes(f: Fields) -> float:
    """Bytes per recurrent-state element from ``mamba_ssm_dtype`` (default: the model dtype)."""
    ssm = f.str("mamba_ssm_dtype", "auto")
    if ssm not in STATE_DTYPE_FORMAT:
        raise SpecError(
            f"{f.where}: mamba_ssm_dtype {ssm!r} unknown; allowed: {', '.join(STATE_DTYPE_FORMAT)}"
        )
    return get_format(STATE_DTYPE_FORMAT[ssm]).bytes_per_element


def minimax(
    f: Fields,
    finish: partial,
    model_type: str,
    d: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    vocab: int,
    tie: bool,
) -> ModelSpec:
    """MiniMax: MoE in every layer with the expert width in ``intermediate_size``; each layer
    softmax GQA or lightning attention by ``attn_type_list`` (1 softmax, 0 lightning: MiniMax
    remote code) or ``layer_types`` (full_attention / linear_attention: transformers). M2 is
    softmax everywhere with a per-layer QK norm and a routing bias (architectures.md s3);
    MiniMax-01 / M1 run lightning attention in 7 of 8 layers (arXiv 2501.08313)."""
    if f.has("attn_type_list"):
        softmax = f.int_list("attn_type_list")
        allowed, field = {0, 1}, "attn_type_list"
    elif f.has("layer_types"):
        types = [str(t) for t in f.list("layer_types")]
        bad = sorted(set(types) - {"full_attention", "linear_attention"})
        if bad:
            raise SpecError(
                f"{f.where}: layer_types {bad} unknown; allowed: full_attention, linear_attention"
            )
        softmax, allowed, field = [int(t == "full_attention") for t in types], {0, 1}, "layer_types"
    elif model_type == "minimax_m2":
        softmax, allowed, field = [1] * layers, {1}, "attn_type_list"
    else:
        raise SpecError(f"{f.where}: missing required field 'attn_type_list' (or 'layer_types')")
    if len(softmax) != layers or not set(softmax) <= allowed:
        raise SpecError(
            f"{f.where}: {field} must give each of the {layers} layers 1 (softmax) or 0 "
            f"(lightning); got {len(softmax)} entries"
        )
    m2 = model_type == "minimax_m2"
    attn = AttentionSpec(
        "gqa",
        heads,
        kv_heads,
        head_dim,
        head_dim,
        qk_norm_across_heads=m2
        and f.bool("use_qk_norm", False)
        and f.str("qk_norm_type", "per_layer") == "per_layer",
    )
    lightning = LinearAttentionSpec(
        heads,
        heads,
        head_dim,
        head_dim,
        0,
        state_bytes(f),
        kind="lightning",
        chunk=f.int("block_size", 256),
    )
    modules = f.int("num_mtp_modules", 0, minimum=0)  # (a draft runs one block of one module)
    if modules and f.int("mtp_transformer_layers", 1, minimum=1) != 1:
        raise SpecError(f"{f.where}: mtp_transformer_layers: allowed: 1 (one block an MTP module)")
    moe = MoESpec(
        f.int("num_local_experts"),
        f.int("num_experts_per_tok"),
        f.int("intermediate_size"),
        router_bias=m2,  # M2: e_score_correction_bias per expert
    )
    return finish(
        d,
        layers,
        vocab,
        tie,
        attn,
        f.int("intermediate_size"),
        gated=True,
        pattern=[(0, True, "attention" if x else "linear") for x in softmax],
        moe=moe,
        mtp=modules,
        norm=2 * d + ((heads + kv_heads) * head_dim if m2 else 0),
        linear=lightning if 0 in softmax else None,
    )


# Nemotron-H block letters (``hybrid_override_pattern``): Mamba-2 mixer, attention mixer, dense
# MLP, MoE; each block is one "layer" with either a mixer or an FFN (HF modeling_nemotron_h)
NEMOTRON_BLOCKS = {
    "M": (0, False, "linear", False),
    "*": (0, False, "attention", False),
    "-": (0, False, "none", True),
    "E": (0, True, "none", True),
}


def nemotron_h(
    f: Fields,
    finish: partial,
    d: int,
    layers: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    tie: bool,
) -> ModelSpec:
    """Nemotron-H: a pattern of single-purpose blocks (``NEMOTRON_BLOCKS``), Mamba-2 mixers
    (``mamba_num_heads`` x ``mamba_head_dim``, ``n_groups`` x ``ssm_state_size`` B/C, conv
    ``conv_kernel``), GQA attention of ``attention_head_dim``, squared-ReLU MLPs of two
    matrices, MoE blocks (Nemotron 3) with ``moe_intermediate_size`` experts and a shared
    expert of ``moe_shared_expert_intermediate_size``; one RMSNorm per block."""
    pattern = f.str("hybrid_override_pattern")
    bad = sorted(set(pattern) - set(NEMOTRON_BLOCKS))
    if len(pattern) != layers or bad:
        raise SpecError(
            f"{f.where}: hybrid_override_pattern must hold one of {''.join(NEMOTRON_BLOCKS)} per "
            f"layer ({layers}); got {len(pattern)} characters"
            + (f", unknown {''.join(bad)!r}" if bad else "")
        )
    hd = f.int("attention_head_dim") if f.has("attention_head_dim") else head_dim_of(f, d, heads)
    attn = AttentionSpec("gqa", heads, kv_heads, hd, hd, qkv_bias=f.bool("attention_bias", False))
    mamba = LinearAttentionSpec(
        f.int("n_groups"),
        f.int("mamba_num_heads"),
        f.int("ssm_state_size"),
        f.int("mamba_head_dim"),
        f.int("conv_kernel", 4),
        state_bytes(f),
        kind="mamba2",
        chunk=f.int("chunk_size", 128),
    )
    moe = None
    if "E" in pattern:
        shared = f.int("moe_shared_expert_intermediate_size", 0, minimum=0)
        moe = MoESpec(
            f.int("n_routed_experts"),
            f.int("num_experts_per_tok"),
            f.int("moe_intermediate_size"),
            1 if shared else 0,
            shared,
        )
    return finish(
        d,
        layers,
        vocab,
        tie,
        attn,
        f.int("intermediate_size", 0, minimum=0),
        gated=False,  # squared-ReLU MLP (mlp_hidden_act relu2): up and down only
        pattern=[NEMOTRON_BLOCKS[c] for c in pattern],
        moe=moe,
        norm=d,
        linear=mamba if "M" in pattern else None,
    )


def gated_deltanet_hybrid(
    f: Fields,
    finish: partial,
    d: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    vocab: int,
    tie: bool,
) -> ModelSpec:
    """Qwen3-Next / Qwen3.5 MoE: Gated DeltaNet layers with a gated full-attention layer every
    ``full_attention_interval`` (``layer_types`` when given), MoE FFN with one shared expert
    (architectures.md section 2; HF configuration_qwen3_next / qwen3_5_moe)."""
    if f.has("layer_types"):
        types = [str(t) for t in f.list("layer_types")]
        if len(types) != layers:
            raise SpecError(
                f"{f.where}: layer_types has {len(types)} entries but num_hidden_layers={layers}"
            )
        bad = sorted(set(types) - {"linear_attention", "full_attention"})
        if bad:
            raise SpecError(
                f"{f.where}: layer_types {bad} unknown; allowed: linear_attention, full_attention"
            )
    else:
        every = f.int("full_attention_interval", 4)
        types = [
            "full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(layers)
        ]
    linear = LinearAttentionSpec(
        f.int("linear_num_key_heads"),
        f.int("linear_num_value_heads"),
        f.int("linear_key_head_dim"),
        f.int("linear_value_head_dim"),
        f.int("linear_conv_kernel_dim", 4),
        state_bytes(f),
    )
    attn = AttentionSpec(
        "gqa",
        heads,
        kv_heads,
        head_dim,
        head_dim,
        qkv_bias=f.bool("attention_bias", False),
        output_gate=f.bool("attn_output_gate", True),
    )
    moe, is_moe = qwen_moe(f, layers, shared_required=False)
    shared = moe.shared_intermediate
    pattern = [
        (0, m, "linear" if t == "linear_attention" else "attention")
        for m, t in zip(is_moe, types, strict=True)
    ]
    mtp = f.int("mtp_num_hidden_layers", 0, minimum=0) if f.has("mtp_num_hidden_layers") else 0
    return finish(
        d,
        layers,
        vocab,
        tie,
        attn,
        f.int("intermediate_size", 0, minimum=0),
        gated=True,
        pattern=pattern,
        moe=moe,
        mtp=mtp,
        # two RMSNorms and the shared expert's sigmoid gate (hidden -> 1) per layer
        norm=2 * d + (d if shared else 0),
        linear=linear,
    )


def deepseek_v4(f: Fields, finish: partial, d: int, layers: int, heads: int, kv_heads: int,
                vocab: int, tie: bool) -> ModelSpec:  # fmt: skip
    """DeepSeek-V4 (``deepseek_v4``; V4-Pro and V4-Flash): shared-KV attention (one
    ``head_dim`` KV head that is key and value, q from ``q_lora_rank``, the output through
    ``o_groups`` low-rank groups of ``o_lora_rank``) over the last ``sliding_window`` tokens and
    the entries its compressor pools, one per ``compress_ratios[i]`` tokens (0: the window
    alone, 4: CSA with the ``index_*`` indexer choosing ``index_topk`` entries, 128: HCA over all
    of them; the list's entries past the layers are the MTP layers'); MoE in every layer
    (``n_routed_experts`` top ``num_experts_per_tok`` of ``moe_intermediate_size`` plus
    ``n_shared_experts``; the first ``num_hash_layers`` route by a token-id table, same shapes);
    ``hc_mult`` residual streams (mHC). Reference ``inference/model.py``, vLLM
    ``models/deepseek_v4/``; AIConfigurator's bundled config.json files."""
    if kv_heads != 1:
        raise SpecError(f"{f.where}: num_key_value_heads {kv_heads}; DeepSeek-V4 has 1")
    head_dim = f.int("head_dim")
    groups = f.int("o_groups")
    if heads % groups:
        raise SpecError(f"{f.where}: num_attention_heads {heads} is not a multiple of o_groups")
    attn = AttentionSpec(
        "shared_kv",
        heads,
        1,
        head_dim,
        head_dim,
        q_lora_rank=f.int("q_lora_rank"),
        qk_rope_head_dim=f.int("qk_rope_head_dim"),
        qk_nope_head_dim=head_dim - f.int("qk_rope_head_dim"),
        sinks=True,
        o_groups=groups,
        o_lora_rank=f.int("o_lora_rank"),
    )
    ratios = f.int_list("compress_ratios")
    if len(ratios) < layers:
        raise SpecError(f"{f.where}: compress_ratios has {len(ratios)} entries for {layers} layers")
    bad = sorted(set(ratios) - {0, 4, 128})
    if bad:
        raise SpecError(f"{f.where}: compress_ratios {bad} unknown; allowed: 0, 4, 128")
    window = f.int("sliding_window")
    pattern = [(window, True, "compressed" if r else "attention", True, r) for r in ratios[:layers]]
    moe = deepseek_moe(f)
    index = IndexerSpec(f.int("index_n_heads"), f.int("index_head_dim"), f.int("index_topk"))
    hc = f.int("hc_mult", 1, minimum=1)  # (1: one residual stream, no mHC)
    return finish(d, layers, vocab, tie, attn, moe.expert_intermediate, gated=True,
                  pattern=pattern, moe=moe, mtp=f.int("num_nextn_predict_layers", 0, minimum=0),
                  norm=2 * d, indexer=index, compressor=CompressorSpec(window),
                  hyper_connections=hc if hc > 1 else 0)  # fmt: skip


def _layer_flags(f: Fields, key: str, layers: int) -> list[bool]:
    """A per-layer list of 0/1 (or true/false) flags, one per layer."""
    values = f.list(key)
    if len(values) != layers:
        raise SpecError(
            f"{f.where}: field {key!r} must give each of the {layers} layers 0 or 1; got "
            f"{len(values)} entries"
        )
    for i, v in enumerate(values):
        if type(v) not in (int, bool) or v not in (0, 1):
            raise SpecError(f"{f.where}: field {key!r} entry {i} is {v!r}; allowed: 0, 1")
    return [bool(v) for v in values]


def minimax_m3(f: Fields, finish: partial, d: int, layers: int, heads: int, kv_heads: int,
               head_dim: int, vocab: int, tie: bool) -> ModelSpec:  # fmt: skip
    """MiniMax-M3 (``minimax_m3``; the text model of ``minimax_m3_vl``): GQA with per-head
    QK RMSNorms in every layer; MoE where ``moe_layer_freq`` is 1 (``num_local_experts`` top
    ``num_experts_per_tok`` of ``intermediate_size``, ``n_shared_experts`` of
    ``shared_intermediate_size``, sigmoid routing with a bias), a dense FFN of
    ``dense_intermediate_size`` elsewhere (``first_k_dense_replace`` where the list is absent);
    MiniMax Sparse Attention where ``sparse_attention_config.sparse_attention_freq`` is 1: an
    indexer of ``sparse_num_index_heads`` x ``sparse_index_dim`` (one shared key per token)
    keeps the ``sparse_topk_blocks`` best blocks of ``sparse_block_size`` tokens, the query's
    own (``sparse_local_block``) among them, plus the ``sparse_init_block`` first ones
    (transformers models/minimax_m3_vl ``MiniMaxM3VLIndexer``, vLLM models/minimax_m3;
    docs/MODEL_FACTS.md). No MTP: the released checkpoints hold no MTP tensors
    whatever their ``num_mtp_modules`` (llama.cpp PR #24908; vLLM skips ``mtp.*``), so a draft
    is an EAGLE head of its own (``serving.step.draft_note``)."""
    if f.has("moe_layer_freq") and isinstance(f.data["moe_layer_freq"], list):
        moe_layers = _layer_flags(f, "moe_layer_freq", layers)
    else:  # (DeepSeek's form: the first k dense, then MoE every freq-th layer)
        first_dense = f.int("first_k_dense_replace", 0, minimum=0)
        freq = f.int("moe_layer_freq", 1)
        moe_layers = [i >= first_dense and i % freq == 0 for i in range(layers)]
    sparse_layers = [False] * layers
    index = None
    if f.has("sparse_attention_config"):
        s = f.mapping("sparse_attention_config")
        if s.bool("use_sparse_attention", True):
            sparse_layers = _layer_flags(s, "sparse_attention_freq", layers)
            block = s.int("sparse_block_size")
            kept = s.int("sparse_topk_blocks") + s.int("sparse_init_block", 0, minimum=0)
            index = IndexerSpec(s.int("sparse_num_index_heads"), s.int("sparse_index_dim"),
                                kept * block, kind="msa", block=block, key_bytes=2.0)  # fmt: skip
    if index is None or not any(sparse_layers):
        index, sparse_layers = None, [False] * layers
    attn = AttentionSpec("gqa", heads, kv_heads, head_dim, head_dim)
    expert = f.int("intermediate_size")
    shared = f.int("n_shared_experts", 0, minimum=0)
    moe = MoESpec(
        f.int("num_local_experts"),
        f.int("num_experts_per_tok"),
        expert,
        num_shared=shared,
        shared_intermediate=f.int("shared_intermediate_size", expert) if shared else 0,
        router_bias=f.bool("use_routing_bias", True),
    )
    pattern = [(0, m, "sparse" if s else "attention") for m, s in zip(moe_layers, sparse_layers)]
    # the dense layers' FFN width: required where a layer is dense
    dense = f.int("dense_intermediate_size") if not all(moe_layers) else expert
    return finish(d, layers, vocab, tie, attn, dense,
                  gated=True, pattern=pattern, moe=moe, norm=2 * d + 2 * head_dim,
                  indexer=index)  # fmt: skip
