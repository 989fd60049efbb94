"""Token mixers: the FLOPs, bytes and cache of one layer's attention kernel by kind (softmax
attention, DeepSeek Sparse Attention, Gated DeltaNet), counting only. ``ops`` turns these counts
into ops; ``cost`` times them, prefill attention at the head-dim share of the engine's efficiency
that this module states (``prefill_head_dim_share``, the published ratios beside it).

Closed forms (``../shared/reference/architectures.md`` section 9; FlashMLA deep dive for the
attention form FLOPs = 2 x heads x queries x keys x (d_k + d_v)):

  * softmax attention (GQA/MHA/MQA, window W): decode 2 H min(L, W) (d_k + d_v) FLOPs per token,
    reads min(L, W) cached K/V; MLA decodes in the absorbed (MQA) form over the 576-element
    latent (d_k = kv_lora + rope, d_v = kv_lora);
  * sparse (DSA): the lightning indexer scores every cached token, 2 H_I d_I L FLOPs per query
    in FP8, reading its d_I-byte key (+ scale) per token; the MLA core then attends
    min(L, top-k) tokens in the absorbed form (prefill below top-k runs dense, MHA form);
  * linear (Gated DeltaNet, lightning): decode reads and writes the per-sequence state (heads x
    d_k x d_v) and the convolution window, ~7 H_v d_k d_v FLOPs per token for Gated DeltaNet
    (decay, S k, rank-1 update, S q), ~5 for lightning (decay, K^T V update, q S); prefill in
    the chunkwise form (``LinearAttentionSpec.chunk``: 64 in flash-linear-attention's
    chunk_gated_delta_rule, 256 in MiniMax's lightning blocks): per token the state terms
    4 H_v d_k d_v plus the intra-chunk attention 2 H_v C (2 d_k + d_v). Cost and state do not
    depend on context.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .errors import SpecError
from .specs.model import LayerGroup, ModelSpec
from .specs.model_parts import IndexerSpec
from .specs.precision import Precision

Array = np.ndarray


def windowed(ctx: Array, window: int) -> Array:
    """Tokens a decode query attends: the context, capped at the window (0 = none)."""
    return np.minimum(ctx, window) if window > 0 else ctx


def causal_mean_ctx(ctx: Array, window: int) -> Array:
    """Mean attended length for causal prefill whose mean position is ``ctx``; a window (or a
    top-k selection) caps it."""
    if window <= 0:
        return ctx
    # positions uniform on [0, 2 ctx]: mean of min(p, w)
    full = 2.0 * ctx
    return np.where(full <= window, ctx, window - window * window / (2.0 * np.maximum(full, 1.0)))


def _chunk_integral(x: Array, chunk: int) -> Array:
    """The integral of (p mod chunk) dp over [0, x]: whole chunks give chunk^2 / 2 each."""
    whole = np.floor(x / chunk)
    rest = x - whole * chunk
    return whole * chunk * chunk / 2.0 + rest * rest / 2.0


def chunk_mean_keys(lo: Array, hi: Array, chunk: int) -> Array:
    """Mean keys a query attends under chunked attention (``AttentionSpec.chunked_window``: a
    query at position p attends the p mod chunk tokens before it in its aligned chunk, and
    itself, counted in the continuum as p mod chunk) for positions uniform on [lo, hi]; the
    point's own value where lo = hi.

    Example: decode positions uniform on [8192, 9216] with 8,192-token chunks attend 512 keys
    on average (a sliding window of 8,192 attends 8,192); prompt positions on [0, 16384], 4,096.
    """
    lo_a, hi_a = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    width = np.maximum(hi_a - lo_a, 0.0)
    start = lo_a - np.floor(lo_a / chunk) * chunk  # the span shifted into its first chunk
    end = start + width
    area = _chunk_integral(end, chunk) - _chunk_integral(start, chunk)
    spread = area / np.maximum(width, 1e-300)
    # within one chunk the keys grow linearly: their mean is the span's midpoint (exact, and
    # free of the cancellation of the two integrals over a narrow span)
    return np.where(end <= chunk, (start + end) / 2.0, np.where(width > 0, spread, start))


def softmax_counts(
    model: ModelSpec,
    prec: Precision,
    g: LayerGroup,
    seqs: Array,
    q: Array,
    ctx_d: Array,
    t_pre: Array,
    ctx_p: Array,
    heads: Array,
    kv_local: Array,
    cp: Array,
    span: Array | float = 0.0,
) -> tuple[Array, Array, Array, Array]:
    """(decode FLOPs, decode bytes, prefill FLOPs, prefill bytes) of one softmax-attention or
    sparse-core layer on one GPU: ``seqs`` decoding sequences of ``q`` query tokens at context
    ``ctx_d`` (positions spread uniformly over ``span`` around it), ``t_pre`` prompt tokens at
    mean causal context ``ctx_p``, ``heads``/``kv_local`` query/KV heads on this GPU; the
    attended keys (after the window, the chunk or top-k) are sharded over the KV-parallel
    (Helix) group ``cp``."""
    a = model.attention
    if g.mixer == "compressed":
        dec_keys, pre_keys = compressed_keys(model, g, ctx_d, ctx_p)
        dec_keys, pre_keys, dense_prefill = dec_keys / cp, pre_keys / cp, False
    elif g.mixer == "sparse":
        assert model.indexer is not None
        k = model.indexer.topk
        dec_keys = np.minimum(ctx_d, k) / cp
        pre_keys = causal_mean_ctx(ctx_p, k) / cp
        dense_prefill = ~sparse_prefill(model, ctx_p)
    elif g.window > 0 and a.chunked_window:  # aligned chunks: keys restart at each boundary
        half = np.asarray(span, dtype=float) / 2.0
        dec_keys = chunk_mean_keys(ctx_d - half, ctx_d + half, g.window) / cp
        pre_keys = chunk_mean_keys(0.0, 2.0 * np.asarray(ctx_p, dtype=float), g.window) / cp
        dense_prefill = True
    else:
        dec_keys = windowed(ctx_d, g.window) / cp
        pre_keys = causal_mean_ctx(ctx_p, g.window) / cp
        dense_prefill = True
    if a.kind == "mla":
        kv_el = a.kv_lora_rank + a.qk_rope_head_dim
        dec_flops = 2.0 * seqs * q * dec_keys * heads * (kv_el + a.kv_lora_rank)
        dec_bytes = seqs * dec_keys * kv_el * prec.kv_bytes
        mha = 2.0 * t_pre * pre_keys * heads * (a.head_dim + a.v_head_dim)
        mqa = 2.0 * t_pre * pre_keys * heads * (kv_el + a.kv_lora_rank)
        pre_flops = np.where(dense_prefill, mha, mqa)
        pre_bytes = t_pre * (kv_el * prec.kv_bytes + heads * (a.head_dim + a.v_head_dim) * 2.0 * 2)
        return dec_flops, dec_bytes, pre_flops, pre_bytes
    if a.kind == "shared_kv":  # one cached vector is key and value: MQA over head_dim
        entry = a.head_dim * prec.kv_bytes
        dec_flops = 2.0 * seqs * q * dec_keys * heads * 2 * a.head_dim
        dec_bytes = seqs * dec_keys * entry
        pre_flops = 2.0 * t_pre * pre_keys * heads * 2 * a.head_dim
        pre_bytes = t_pre * (entry + heads * 2 * a.head_dim * 2.0)
        return dec_flops, dec_bytes, pre_flops, pre_bytes
    dec_flops = 2.0 * seqs * q * dec_keys * heads * (a.head_dim + a.v_head_dim)
    dec_bytes = seqs * dec_keys * kv_local * (a.head_dim + a.v_head_dim) * prec.kv_bytes
    pre_flops = 2.0 * t_pre * pre_keys * heads * (a.head_dim + a.v_head_dim)
    pre_bytes = t_pre * (
        kv_local * (a.head_dim + a.v_head_dim) * prec.kv_bytes
        + heads * (a.head_dim + a.v_head_dim) * 2.0 * 2
    )
    return dec_flops, dec_bytes, pre_flops, pre_bytes


def compressed_keys(model: ModelSpec, g: LayerGroup, ctx_d: Array, ctx_p: Array) -> tuple:
    """(decode, mean prefill) keys a query of a DeepSeek-V4 compressed layer attends at context
    ``ctx_d`` / mean causal context ``ctx_p``: the window's raw tokens and the entries, one per
    ``g.compress`` tokens, all of them (HCA) or at most the indexer's top-k (CSA).

    Example: DeepSeek-V4-Pro's CSA layer at 8,192 tokens: 128 + min(2,048, 1,024) = 1,152 keys;
    its HCA layer 128 + 64 = 192.
    """
    c = model.compressor
    assert c is not None and g.compress > 0
    cap = model.indexer.topk if c.indexed(g.compress) and model.indexer else 0
    r = float(g.compress)
    dec = windowed(ctx_d, g.window) + windowed(np.asarray(ctx_d, dtype=float) / r, cap)
    pre = causal_mean_ctx(ctx_p, g.window) + causal_mean_ctx(np.asarray(ctx_p) / r, cap)
    return dec, pre


def sparse_prefill(model: ModelSpec, ctx_p: Array) -> Array:
    """Whether a DSA layer's prompt tokens at mean causal context ``ctx_p`` run the sparse core
    (elementwise): prompts past top-k (2 x the mean context); within it the dense (masked MHA)
    kernels run, as the engines do (SGLang set_nsa_prefill_impl: MHA while the longest KV is
    within index_topk)."""
    assert model.indexer is not None
    return 2.0 * np.asarray(ctx_p, dtype=float) > model.indexer.topk


def dsa_meta(
    model: ModelSpec, prec: Precision, g: LayerGroup, heads: Array, ctx_p: Array
) -> tuple[dict, dict]:
    """(decode, prefill) op meta of a layer's attention kernel that ``cost.attention_time`` pads
    (``attention_kernels.sparse_kernel``): for a DSA layer the rank's query heads, whether
    the cache is FP8, the (latent, RoPE) dims a cached token holds and the cache's bytes per
    element (its bytes in the engine's layout: ``attention_kernels.sparse_cache_scale``) and, in
    prefill, whether the sparse core runs (:func:`sparse_prefill`); a sparse GQA layer's
    (MiniMax Sparse Attention) prefill meta names its block-sparse kernel and whether the cache is
    FP8 (``attention_kernels.msa_prefill_rate``); empty for other layers."""
    a = model.attention
    if a.kind == "shared_kv":  # DeepSeek-V4: FlashMLA's sparse kernels in every layer; its
        # fixed time is the module's chain (``compressed_chain``), not the kernel's per call
        latent = (a.head_dim - a.qk_rope_head_dim, a.qk_rope_head_dim)
        dec = {"sparse_heads": heads, "fp8_cache": prec.kv_fp8, "latent": latent, "per_call": False,
               "kv": prec.kv_bytes, "scales": FP8_SCALES["shared_kv"]}  # fmt: skip
        return dec, {**dec, "sparse_path": True}
    if g.mixer == "sparse" and a.kind == "gqa":  # MiniMax Sparse Attention: its prefill core
        return {}, {"msa": True, "fp8_cache": prec.kv_fp8}  # (attention_kernels.msa_prefill_rate)
    if g.mixer != "sparse" or a.kind != "mla":  # (FlashMLA's kernels: MLA)
        return {}, {}
    latent = (a.kv_lora_rank, a.qk_rope_head_dim)
    dec = {"sparse_heads": heads, "fp8_cache": prec.kv_fp8, "latent": latent, "kv": prec.kv_bytes}
    return dec, {**dec, "sparse_path": sparse_prefill(model, ctx_p)}


# FlashMLA's FP8 cache rows by attention kind: (latent values a scale covers, bytes of a scale).
# DSA (MLA): one FP32 scale per 128 (deepseek-ai/FlashMLA README, attention_kernels); DeepSeek-V4
# (fp8_ds_mla): one UE8M0 byte per 64 of the 448 non-RoPE values, the row padded to 8 bytes: 448
# + 7 + 1 + 64 x 2 = 584 (vLLM v1/attention/backends/mla/sparse_swa.py, SGLang
# deepseek_v4_memory_pool.py asserting 448 + 128 + 8)
FP8_SCALES = {"mla": (128, 4.0), "shared_kv": (64, 1.0)}


# Prefill attention's share of the engine's attn_prefill_efficiency (set at head dim 128) by head
# dim: a 64-wide head reaches less of the tensor cores (less work per loaded tile, the softmax a
# larger part). FlashAttention-3 BF16 forward on H100 SXM5, non-causal, 64 / 128 (arXiv
# 2407.08608 Fig. 5): 392/565 = 0.69 (1k), 460/625 = 0.74 (2k), 476/638 = 0.75 (4k), 496/646 =
# 0.77 (8k), 497/648 = 0.77 (16k); on B200, FA4 at 8k: causal 1,079/1,418 = 0.76, non-causal
# 1,193/1,535 = 0.78 (Dao-AILab/flash-attention PR #2605's 64-wide rows over PR #2280's 128-wide),
# cuDNN at 1k, non-causal: 980/1,428 = 0.69 (PR #2605). Between 64 and 128 the share
# runs linearly in log2(head dim); below 64, 64's. Above 128 it stays 1: the generations disagree
# (FA3 on H100 at 256: 746/646 = 1.15 at 8k; FA4 on B200: 1,059/1,418 = 0.75, causal, PR #2432's
# first 256-wide kernel). MLA's prefill (192/128 and 576/512 heads) keeps 1: no published ratio.
HEAD_DIM_64_PREFILL_SHARE = 0.75


def prefill_head_dim_share(head_dim: int | None) -> float:
    """Prefill attention's share of ``attn_prefill_efficiency`` at this head dim (the comment
    above): 0.75 at 64 and below, 1 at 128 and above, linear in log2 between; 1 for None (no
    share: MLA, ``AttentionSpec.prefill_head_dim``, and the kernels other than attention).

    Example:
        >>> prefill_head_dim_share(64), prefill_head_dim_share(128), prefill_head_dim_share(None)
        (0.75, 1.0, 1.0)
    """
    if head_dim is None:
        return 1.0
    x = min(max(np.log2(max(head_dim, 1)) - 6.0, 0.0), 1.0)
    return float(HEAD_DIM_64_PREFILL_SHARE + (1.0 - HEAD_DIM_64_PREFILL_SHARE) * x)


def prefill_attention_efficiency(model: ModelSpec, engine_value: float) -> dict[str, float | str]:
    """What prefill attention reaches for this model (``estimate``'s assumptions): the engine's
    ``attn_prefill_efficiency`` (``engine_value``) x the head-dim share of its softmax layers
    (:func:`prefill_head_dim_share`; 1 for MLA, whose prefill keeps the engine's value)."""
    d = model.attention.prefill_head_dim
    share = prefill_head_dim_share(d)
    why = "MLA: none measured" if d is None else f"head dim {d}"
    return {
        "value": engine_value * share,
        "head_dim_share": share,
        "source": f"engine attn_prefill_efficiency x head-dim share {share:.3f} ({why}; "
        "FlashAttention-3 / FA4 64- over 128-wide rates: mixers.prefill_head_dim_share)",
    }


# one FP32 logit written per (query token, key) and read back by the top-k selection
INDEXER_LOGIT_BYTES = 8.0


def indexer_of(model: ModelSpec, prec: Precision) -> IndexerSpec | None:
    """The model's indexer with its key cache in the precision's index-key format
    (``Precision.index_keys``, ``+FORMAT-idx``), or as the model holds it where the precision
    names none. Only MiniMax Sparse Attention's keys take another format (vLLM's
    ``indexer_kv_dtype``: bf16, its default, or fp8, E4M3 keys of 1 byte with no scale, 128 B a
    token and layer; vllm models/minimax_m3/common/indexer.py ``MiniMaxM3IndexerCache``);
    DeepSeek Sparse Attention's keys are FP8 with a scale in every engine (SpecError).

    Example: MiniMax-M3's index keys under ``fp8+fp8-idx``: 128 x 1 B = 128 B a token."""
    idx = model.indexer
    if idx is None or prec.index_keys is None:
        return idx
    if idx.kind != "msa":
        raise SpecError(
            f"precision {prec.id!r}: an index-key format (+FORMAT-idx) applies to MiniMax Sparse "
            f"Attention's indexer only; {model.id}'s indexer is {idx.kind} (FP8 keys with a scale)"
        )
    return dataclasses.replace(idx, key_bytes=prec.index_keys.bytes_per_element)


def indexer_kernel(
    model: ModelSpec,
    prec: Precision,
    seqs: Array,
    q: Array,
    ctx_d: Array,
    t_pre: Array,
    ctx_p: Array,
    cp: Array,
) -> tuple[tuple[Array, Array, Array, Array], str, dict[str, bool]]:
    """The indexer's scoring on one GPU as ``ops`` prices it, its keys in the deployment's format
    (``indexer_of``): (decode FLOPs, decode bytes, prefill FLOPs, prefill bytes), its math class
    (``IndexerSpec.math_class``: DSA's FP8, MSA's BF16 keys or FP8 ones) and its decode meta
    (``index_fp8``: MSA's FP8 keys, which only SM100 scores, ``attention_kernels.fmha_sm100_runs``).

    Every query scores every cached key (its heads are not split: one shared key per token);
    causal prefill scores the mean causal context, its queries in the keys' format; keys are
    sharded over the KV-parallel group ``cp``. A decode step reads a sequence's keys once for
    its ``q`` query tokens and writes each query's FP32 logits, which the top-k reads back
    (``INDEXER_LOGIT_BYTES``: DeepGEMM's fp8_paged_mqa_logits returns FP32 logits, the
    engines' top-k kernels take them)."""
    idx = indexer_of(model, prec)
    assert idx is not None
    ctx_d, ctx_p = ctx_d / cp, ctx_p / cp
    per_key = 2.0 * idx.num_heads * idx.head_dim
    dec_flops = seqs * q * ctx_d * per_key
    dec_bytes = seqs * ctx_d * (idx.cache_bytes_per_token + q * INDEXER_LOGIT_BYTES)
    pre_flops = t_pre * ctx_p * per_key
    pre_bytes = t_pre * (idx.cache_bytes_per_token + idx.num_heads * idx.head_dim * idx.key_bytes)
    counts = (dec_flops, dec_bytes, pre_flops, pre_bytes)
    fp8 = idx.kind == "msa" and idx.key_bytes == 1.0
    return counts, idx.math_class, {"indexer": True, "index_fp8": fp8}


def linear_counts(
    model: ModelSpec, seqs: Array, q: Array, t_pre: Array, atp: Array
) -> tuple[Array, Array, Array, Array]:
    """(decode FLOPs, decode bytes, prefill FLOPs, prefill bytes) of one Gated DeltaNet layer
    on one GPU (heads split over the attention tp ``atp``). Decode reads and writes each
    sequence's state once per step (``q`` draft tokens update it in turn: the state stays in
    registers across them); prefill streams q, k, v, gate in and the output out."""
    lin = model.linear_attention
    assert lin is not None
    hv = lin.num_v_heads / atp
    dkv = lin.head_k_dim * lin.head_v_dim
    conv_dim = lin.conv_dim / atp
    # per decoded token: Gated DeltaNet ~7 H d_k d_v (decay, S k, rank-1 update, S q); lightning
    # ~5 H d_k d_v (decay, K^T V update, q S)
    per_tok = 7.0 if lin.kind == "gated_deltanet" else 5.0  # mamba2: dA h + dt B x, C h
    conv = 2.0 * lin.conv_kernel * conv_dim
    dec_flops = seqs * q * (per_tok * hv * dkv + conv)
    conv_state = max(lin.conv_kernel - 1, 0) * conv_dim * 2.0
    dec_bytes = seqs * 2.0 * (hv * dkv * lin.state_bytes + conv_state)
    # chunkwise prefill: state terms 4 H d_k d_v + intra-chunk attention 2 H C (2 d_k + d_v)
    intra = 2.0 * hv * lin.chunk * (2 * lin.head_k_dim + lin.head_v_dim)
    pre_flops = t_pre * (4.0 * hv * dkv + intra + conv)
    io = (2.0 * lin.key_dim + 2.0 * lin.value_dim) / atp  # q, k, v in and the output out
    pre_bytes = t_pre * io * 2.0 * 2
    return dec_flops, dec_bytes, pre_flops, pre_bytes


def windowed_layers(model: ModelSpec) -> int:
    """Softmax-attention layers of the model with a sliding or chunked window."""
    return sum(g.count for g in model.layer_groups if g.window > 0 and g.mixer == "attention")


def windowed_share(model: ModelSpec, engine_share: float) -> float:
    """The share of the context a windowed attention layer holds in the KV cache beside its
    window (``mixers.cache_bytes_per_layer``), given the engine's ``windowed_kv_share``:

    * chunked attention (``AttentionSpec.chunked_window``, Llama 4): the whole context on every
      engine's default, 1. vLLM turns its hybrid KV manager off for chunked local attention
      unless ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE`` is set (vllm/config/vllm.py,
      "latency regression" warning); SGLang keeps uniform pools unless ``--hybrid-kvcache-ratio``;
      TensorRT-LLM passes the chunk to its attention op, not to its KV cache manager;
    * sliding windows beside full-attention layers (gpt-oss, Gemma 3): the engine's share;
    * every attention layer windowed (Mistral 7B v0.1): 0, one pool whose cyclic buffer holds
      the window, whatever the engine (the share divides memory between pools).
    """
    if not windowed_layers(model):
        return 0.0
    if model.attention.chunked_window:
        return 1.0
    full = any(g.window == 0 and g.mixer in ("attention", "sparse") for g in model.layer_groups)
    return float(engine_share) if full else 0.0


def cache_bytes_per_layer(
    model: ModelSpec,
    prec: Precision,
    g: LayerGroup,
    context: Array,
    atp: Array,
    window_share: float = 0.0,
    sparse_latent: float | None = None,
) -> Array:
    """Bytes one sequence of ``context`` tokens holds in one layer of group ``g`` on one GPU:
    cached K/V (capped at the window, or ``window_share`` x the context where that is more: the
    share an engine's cache reserves for windowed layers, ``EngineConstants.windowed_kv_share``),
    MLA latent (+ the indexer key for sparse layers; ``sparse_latent``: a sparse layer's latent
    bytes per token in the engine's layout, ``attention_kernels.sparse_fp8_cache_bytes``), or the
    fixed recurrent state and convolution window of a linear layer."""
    if g.mixer == "none":
        return 0.0 * np.asarray(context, dtype=float) + 0.0 * atp
    if g.mixer == "linear":
        lin = model.linear_attention
        assert lin is not None
        # independent of context (broadcast over it)
        return lin.state_bytes_per_sequence() / atp + 0.0 * np.asarray(context, dtype=float)
    a = model.attention
    full = np.asarray(context, dtype=float)
    if a.kind == "shared_kv":  # DeepSeek-V4 (replicated over TP: one KV head)
        entry = a.head_dim * prec.kv_bytes if sparse_latent is None else sparse_latent
        return compressed_cache_bytes(model, g, full, entry) + 0.0 * atp
    ctx = np.maximum(windowed(full, g.window), window_share * full) if g.window > 0 else full
    if a.kind == "mla":
        per_tok = a.kv_elements_per_token * prec.kv_bytes + 0.0 * atp  # latent replicated over TP
    else:
        per_tok = (
            np.maximum(a.num_kv_heads / atp, 1.0) * (a.head_dim + a.v_head_dim) * prec.kv_bytes
        )
    if g.mixer == "sparse" and (idx := indexer_of(model, prec)) is not None:
        if a.kind == "mla" and sparse_latent is not None:
            per_tok = sparse_latent + 0.0 * atp
        per_tok = per_tok + idx.cache_bytes_per_token
    return ctx * per_tok


def compressed_cache_bytes(model: ModelSpec, g: LayerGroup, context: Array, entry: float) -> Array:
    """Bytes one sequence of ``context`` tokens holds in a DeepSeek-V4 layer of group ``g``, whose
    cached rows (raw tokens and pooled entries alike) are ``entry`` bytes: the window's raw
    tokens; in a compressed layer also one entry per ``g.compress`` tokens, the compressor's
    decode state and, in a CSA layer, the indexer's key per entry and its own compressor's state
    (vLLM ``models/deepseek_v4/compressor.py`` ``CompressorStateCache``, FP32).

    Example: DeepSeek-V4-Pro's CSA layer at 8,192 tokens, 584-byte rows and the indexer's
    132-byte FP8 keys: 128 x 584 + 2,048 x (584 + 132) + 65,536 + 16,384 = 1,623,040 bytes.
    """
    ctx = np.asarray(context, dtype=float)
    out = windowed(ctx, g.window) * entry
    c = model.compressor
    if g.mixer != "compressed" or c is None:
        return out
    entries = np.floor(ctx / g.compress)
    out = out + entries * entry + c.state_bytes(g.compress, model.attention.head_dim)
    if c.indexed(g.compress) and model.indexer is not None:
        idx = model.indexer
        out = out + entries * idx.cache_bytes_per_token + c.state_bytes(g.compress, idx.head_dim)
    return out
