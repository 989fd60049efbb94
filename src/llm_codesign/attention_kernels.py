"""Attention kernels: which kernel an engine runs for attention on a GPU and what it computes
beyond the model's own work. The tensor-core class attention math runs in, the GPU file's
measured decode kernel of the engine's family (MLA: ``efficiency.attention_decode``; GQA over an
FP8 cache: ``efficiency.fp8_kv_decode``), and the query heads DeepSeek Sparse Attention's sparse
core computes on the engine's DSA kernels (``EngineConstants.dsa_kernels``), padded past a rank's
own heads. ``cost.attention_time`` prices attention ops with these; ``mixers`` counts the work.
"""

from __future__ import annotations

import numpy as np

from .errors import UnsupportedError
from .mixers import FP8_SCALES
from .specs.engine import EngineConstants
from .specs.hardware import DecodeKernel, Efficiency, HardwareSpec
from .specs.model import ModelSpec
from .specs.precision import Precision

Array = np.ndarray

# FlashMLA's sparse MLA kernels (deepseek-ai/FlashMLA; the kernels SGLang's and vLLM's DSA
# backends call) compute a fixed number of query heads and take a rank's fewer heads
# zero-padded. The sparse prefill kernel (flash_mla_sparse_fwd, BF16) takes a multiple of 64
# heads on SM90 and of 128 on SM100 (SGLang python/sglang/srt/layers/attention/nsa_backend.py
# _forward_flashmla_sparse, "requires num_heads to be a multiple of 64 (Hopper) or 128
# (Blackwell)"; vLLM vllm/v1/attention/backends/mla/flashmla_sparse.py pads its BF16 prefill the
# same). The sparse decode kernel over the FP8 cache (flash_mla_with_kvcache with top-k indices)
# runs 64 or 128 heads (vLLM flashmla_sparse.py: "FP8 decode kernel only supports h_q = 64 or
# 128", _compute_fp8_decode_padded_heads: 64 where the rank has at most 64, else 128). GLM-5 at
# TP 8 holds 8 heads a rank: its sparse core computes 64 on Hopper, 8x its own work.
SPARSE_PREFILL_HEAD_MULTIPLE = {"hopper": 64, "blackwell": 128, "blackwell-ultra": 128}
SPARSE_FP8_DECODE_HEADS = (64, 128)
FP8_MIXED_BATCH_BELOW_HEADS = 32  # (flashmla: the family comment below)
# Their math is BF16 whatever the cache (the FP8 cache is dequantized in the kernel) and their
# compute-bound rates are published as fractions of the BF16 dense peak (deepseek-ai/FlashMLA
# README @9241ae3, ../shared/reference/architectures.md section 1): sparse prefill 640 TFLOPS on
# H800 SXM5 and 1,450 on B200 (of 989.4 and 2,250: 0.647 and 0.644), sparse decode over the FP8
# cache 410 TFLOPS on H800 (0.414) and "up to 350 TFlops on B200 (which is not really optimized
# yet)" (0.156; its SM100 kernel, which B300's SM103 runs too). The prefill kernel's rate prices
# a BF16 cache's decode through it.
FLASHMLA_SPARSE_PREFILL_EFFICIENCY = 0.645
FLASHMLA_SPARSE_FP8_DECODE_EFFICIENCY = {"hopper": 0.414, "blackwell": 0.156,
                                         "blackwell-ultra": 0.156}  # fmt: skip
# The lightning indexer's decode scoring on vLLM's and SGLang's DSA backends is DeepGEMM's
# fp8_paged_mqa_logits, which streams a sequence's FP8 keys and writes FP32 logits at its own
# share of HBM, not at the engine's GQA decode kernels' (``attn_decode_efficiency``): 0.85,
# fitted on AIConfigurator's DSA decode modules on Hopper (vLLM 0.24, H100 and H200: the module's
# growth per key of context past the top-k, where the sparse core stays at top-k entries, over
# the key's 132 bytes and its logit's 8; benchmarks/dsa_module_report.py --fit). Blackwell
# (B200, B300, GB200, GB300) measures 0.81-0.85 on the same tables. It applies where the engine
# runs those backends on the GPUs they run on (``flashmla_runs``; DeepSeek-V4's CSA indexer
# scores its entries the same way). TensorRT-LLM's own DSA path (its Indexer takes its top-k
# "via DeepGEMM", ai-dynamo/aiconfigurator collector/trtllm/collect_dsa.py) measures 0.64-0.72
# on Blackwell and keeps its engine share (0.684); AMD's and other GPUs keep theirs. MiniMax-M3's
# block scorer (its BF16 keys, vLLM 0.24) measures 0.91-0.94 on Hopper and 0.87-0.91 on
# Blackwell the same way (benchmarks/msa_module_report.py --fit): the same stream, priced alike;
# SGLang's MSA tables have no rows to measure it (assumed the same).
INDEXER_DECODE_HBM = 0.85
# FlashMLA's sparse kernels read an FP8 cache in their own layout, which both engines store
# (deepseek-ai/FlashMLA README, its FP8 format for sparse MLA): per token the kv_lora_rank
# latent values in FP8, one FP32 scale per 128 of them and the RoPE part in BF16 (DeepSeek-V3.2
# and GLM-5: 512 + 4 x 4 + 64 x 2 = 656 bytes, not the 576 of an FP8 latent and RoPE). SGLang's
# DSA pool (mem_cache/memory_pool.py: nsa_kv_cache_store_fp8, kv_cache_dim 656 from
# calculate_mla_kv_cache_dim; ROCm keeps the raw layout, sgl-project/sglang PR #22314) and
# vLLM's fp8_ds_mla (flashmla_sparse.py get_kv_cache_shape: "custom storage format is 656
# bytes"). DeepSeek-V4's rows, and both scale layouts: mixers.FP8_SCALES.
# the engines' DSA kernel families (``EngineConstants.dsa_kernels``):
#   none: the sparse core computes the rank's own heads (TensorRT-LLM on Blackwell: its own
#     sparse MLA kernels, which swap the MMA operands for TP's few heads, SwapsMmaAb, tech blog
#     15 "Optimizing DeepSeek-V3.2 on NVIDIA Blackwell GPUs"; base and generic: no kernel);
#   flashmla: FlashMLA's sparse kernels for every sparse pass, a BF16 cache decoding through the
#     prefill kernel, and an FP8 cache's prompt tokens through the FP8 decode kernel where a rank
#     holds fewer than 32 heads (vLLM's FlashMLASparse backend: its "mixed batch mode" below
#     MIN_HEADS_FOR_BF16_PREFILL = 32: on Blackwell 64 heads instead of the prefill kernel's 128);
#   flashmla_fa3: FlashMLA's for prefill and for decode over an FP8 cache, a BF16 cache
#     decoding on its own heads (SGLang: FlashAttention-3 on Hopper, TensorRT-LLM's kernels on
#     Blackwell, server_args._set_default_nsa_backends); over an FP8 cache its prefill backend
#     flashmla_auto runs Hopper's prompts on the FP8 decode kernel (flashmla_kv) and
#     Blackwell's fresh ones on the prefill kernel (nsa_backend.set_nsa_prefill_impl: flashmla_
#     sparse where the batch's KV tokens are under 512 x its query tokens).
# Other GPUs (AMD's, SM120) run other kernels: their own heads.
# (specs.engine.DSA_KERNELS)


def attention_rate_class(hw: HardwareSpec, compute_class: str) -> str:
    """The tensor-core class attention math runs in: its own where native, else BF16's."""
    cls = compute_class if hw.supports(compute_class) else "bf16"
    return hw.compute_rate_class(cls)


def decode_attention_efficiency(
    hw: HardwareSpec, rate_class: str, eng: EngineConstants
) -> DecodeKernel:
    """Decode attention's kernel at ``rate_class`` (:func:`attention_rate_class`): the GPU file's
    measured decode kernel of the engine's family (``attention_kernels``: ``efficiency.
    attention_decode_<family>``) where it has one, else its default one (``efficiency.
    attention_decode``: MLA decode kernels, whose 128 heads per latent KV make decode
    compute-bound), else ``attn_prefill_efficiency`` as the compute fraction, no kernel terms."""
    family = hw.attention_decode_kernels.get(eng.attention_kernels, {})
    measured = family.get(rate_class) or hw.attention_decode_efficiency.get(rate_class)
    if measured is not None:
        return measured
    src = "engine constant attn_prefill_efficiency (no measured decode kernel for this GPU)"
    return DecodeKernel(eng.attn_prefill_efficiency, src)


def fp8_kv_decode_rate(hw: HardwareSpec, eng: EngineConstants) -> Efficiency | None:
    """The GPU file's measured rate at which the engine's GQA decode kernels read an FP8 KV cache
    (``efficiency.fp8_kv_decode`` of ``gqa_decode_kernels``' family; a fraction of the datasheet
    bandwidth at one byte per element), or None where the file measures none."""
    return hw.fp8_kv_decode.get(eng.gqa_decode_kernels)


# MiniMax Sparse Attention's block-sparse prefill core on the Triton kernels vLLM and SGLang run
# (vLLM's MiniMaxM3SparseTritonImpl off SM100, SGLang's sglang_minimax_prefill_triton_sparse on
# every GPU; on SM100/SM103 vLLM runs fmha_sm100, MiniMaxM3SparseMSAImpl: the kernel sources of
# the tables below) computes at a rate per SM over a BF16 cache / an FP8 cache, far below the
# tensor cores (the kernel gathers each query's blocks: 3-9% of Hopper's BF16 peak), fitted on
# AIConfigurator's MiniMax-M3 prefill modules on H100 and H200 (vLLM 0.24, SGLang 0.5.16;
# prompts of 2,048-32,768 tokens: the module less every other op the model prices, the core's
# FLOPs over the rest and the SMs; medians of 840 rows each; benchmarks/msa_module_report.py
# --fit). Per SM, not per peak: SGLang's same kernel on B200 measures the same FLOP rate as on
# H200 (34-90 TFLOPS on both), 1.5-4% of B200's peak. Blackwell's fmha_sm100 keeps the engine's
# prefill share, as do TensorRT-LLM's own kernels and AMD's GPUs (their Triton kernels' rate per CU
# is not measured). Other NVIDIA GPUs take the Hopper rate per SM (an assumption).
MSA_TRITON_PREFILL_SM_FLOPS = {False: 5.59e11, True: 2.55e11}
MSA_SM100_ARCHITECTURES = ("blackwell", "blackwell-ultra")
# the engines (by their sparse-attention kernel family, ``EngineConstants.dsa_kernels``: flashmla
# is vLLM's, flashmla_fa3 SGLang's) with an SM100 MSA prefill kernel of their own
MSA_SM100_KERNEL_ENGINES = ("flashmla",)


def fmha_sm100_runs(hw: HardwareSpec) -> bool:
    """Whether vLLM's SM100 MiniMax Sparse Attention kernels (fmha_sm100) run on ``hw``: NVIDIA's
    SM100 family (``MSA_SM100_ARCHITECTURES``: B200, GB200, B300, GB300). They run its prefill
    core there (:func:`msa_prefill_rate`) and are the only scorer of FP8 index keys, its
    Triton indexer taking BF16 keys only (vllm models/minimax_m3/common/indexer.py
    ``select_indexer_impl_cls``; :func:`indexer_streams`)."""
    return hw.vendor == "nvidia" and hw.architecture in MSA_SM100_ARCHITECTURES


def msa_prefill_rate(hw: HardwareSpec, eng: EngineConstants, fp8_cache: bool) -> float | None:
    """FLOP/s MiniMax Sparse Attention's prefill core reaches where the engine runs the Triton
    kernels (``MSA_TRITON_PREFILL_SM_FLOPS`` x the GPU's SMs: vLLM's off SM100, SGLang's
    everywhere, on NVIDIA GPUs), else None (the engine's prefill share: vLLM's fmha_sm100,
    TensorRT-LLM's kernels, AMD GPUs). The engines are told apart by their sparse-attention
    kernel family (``EngineConstants.dsa_kernels``: vLLM's ``flashmla``, SGLang's
    ``flashmla_fa3``, none for TensorRT-LLM's own).

    Example: an H200's 132 SMs over an FP8 cache: 33.7 TFLOPS; a B200's 148: 37.7 TFLOPS
    (SGLang's kernel; vLLM's there is fmha_sm100: None)."""
    if eng.dsa_kernels == "none" or hw.vendor != "nvidia":
        return None
    if fmha_sm100_runs(hw) and eng.dsa_kernels in MSA_SM100_KERNEL_ENGINES:
        return None
    return MSA_TRITON_PREFILL_SM_FLOPS[bool(fp8_cache)] * hw.sm_count


def flashmla_runs(hw: HardwareSpec, eng: EngineConstants) -> bool:
    """Whether the engine's DSA kernels are FlashMLA's on ``hw`` (``dsa_kernels`` other than
    ``none``, on the GPUs FlashMLA runs on: NVIDIA's SM90 and SM100 alone)."""
    return eng.dsa_kernels != "none" and hw.architecture in SPARSE_PREFILL_HEAD_MULTIPLE


def sparse_kernel(
    hw: HardwareSpec, eng: EngineConstants, phase: str, fp8_cache: bool, heads: Array
) -> tuple[Array, Array | float | None]:
    """(query heads, compute fraction of the BF16 peak) of the kernel a rank's DSA sparse core
    runs in ``phase`` (``prefill`` or ``decode``) for its ``heads`` (elementwise), over an FP8
    cache or not, on the engine's DSA kernels (``specs.engine.DSA_KERNELS``): FlashMLA's padded
    heads and published rate on the GPUs it runs on (the comments above); else ``heads`` and
    None (the engine's own attention kernel prices it).

    Example: GLM-5 at TP 8 (8 heads a rank) on SGLang's kernels on an H200 computes, over a
    BF16 cache, 64 heads in prefill at 0.645 and 8 in decode (its FlashAttention-3 kernel,
    None); over an FP8 cache 64 in both at 0.414 (the FP8 decode kernel), as on vLLM's (fewer
    than 32 heads a rank). On a B200 that FP8 decode kernel runs at 0.156."""
    h = np.asarray(heads, dtype=float)
    if not flashmla_runs(hw, eng):
        return h, None
    step, fam = SPARSE_PREFILL_HEAD_MULTIPLE[hw.architecture], eng.dsa_kernels
    fp8_rate = FLASHMLA_SPARSE_FP8_DECODE_EFFICIENCY[hw.architecture]
    low, high = SPARSE_FP8_DECODE_HEADS
    fp8_decode = np.where(h <= low, low, np.ceil(h / high) * high)
    if phase == "decode" and fp8_cache:
        return fp8_decode, fp8_rate
    if phase == "decode" and fam == "flashmla_fa3":
        return h, None
    prefill = np.ceil(h / step) * step
    # prompts over an FP8 cache on the FP8 decode kernel: vLLM's below 32 heads a rank, SGLang's
    # on Hopper (the family comments above)
    if fam == "flashmla":
        on_decode = h < FP8_MIXED_BATCH_BELOW_HEADS
    else:
        on_decode = np.full(h.shape, hw.architecture == "hopper")
    if fp8_cache and np.any(on_decode):
        rate = np.where(on_decode, fp8_rate, FLASHMLA_SPARSE_PREFILL_EFFICIENCY)
        return np.where(on_decode, fp8_decode, prefill), rate
    return prefill, FLASHMLA_SPARSE_PREFILL_EFFICIENCY


def sparse_fp8_cache_bytes(
    hw: HardwareSpec,
    eng: EngineConstants,
    kv_lora_rank: int,
    rope_dim: int,
    scales: tuple[int, float] = FP8_SCALES["mla"],
) -> float | None:
    """Bytes per token a DSA (sparse MLA) or DeepSeek-V4 layer's FP8 cache holds on the engine's
    sparse kernels: FlashMLA's layout (the comment above; ``scales``: the latent values a scale
    covers and its bytes, ``mixers.FP8_SCALES``), the row padded to 8 bytes, where they run it,
    else None (the model's latent and RoPE at one byte each: TensorRT-LLM's per-tensor FP8
    cache, other GPUs' kernels).

    Example: DeepSeek-V3.2's (kv_lora_rank 512, RoPE 64) on SGLang's or vLLM's kernels on an
    H200 or a B200: 512 + 4 x 4 + 64 x 2 = 656 bytes; DeepSeek-V4's (448 + 64, a byte per 64):
    448 + 7 + 1 + 128 = 584."""
    if not flashmla_runs(hw, eng):
        return None
    group, scale_bytes = scales
    row = kv_lora_rank * 1.0 + scale_bytes * -(-kv_lora_rank // group) + 2.0 * rope_dim
    return 8.0 * np.ceil(row / 8.0)


def sparse_latent_bytes(
    model: ModelSpec, hw: HardwareSpec, prec: Precision, eng: EngineConstants
) -> float | None:
    """Bytes per token a DSA (sparse MLA) layer's latent cache, or a DeepSeek-V4 layer's shared
    K = V entry, holds on the engine's sparse kernels on ``hw`` where they store an FP8 cache in
    a layout of their own (:func:`sparse_fp8_cache_bytes`: FlashMLA's 656 B for DeepSeek-V3.2
    and GLM-5, 584 B for DeepSeek-V4); None where the model's own (latent + RoPE x the cache's
    element) holds."""
    a = model.attention
    if not prec.kv_fp8:
        return None
    if a.kind == "shared_kv":
        rope = a.qk_rope_head_dim
        return sparse_fp8_cache_bytes(hw, eng, a.head_dim - rope, rope, FP8_SCALES["shared_kv"])
    if a.kind != "mla" or model.indexer is None:
        return None
    return sparse_fp8_cache_bytes(hw, eng, a.kv_lora_rank, a.qk_rope_head_dim)


def indexer_streams(hw: HardwareSpec, eng: EngineConstants, meta: dict) -> bool:
    """Whether an op is an indexer's decode scoring that streams its keys at
    ``INDEXER_DECODE_HBM`` (``meta["indexer"]`` where :func:`flashmla_runs`). An indexer over
    FP8 MiniMax keys (``meta["index_fp8"]``) where they cannot be scored
    (:func:`fmha_sm100_runs`) raises UnsupportedError."""
    if meta.get("index_fp8") and not fmha_sm100_runs(hw):
        raise UnsupportedError(
            f"{hw.id}: FP8 index keys (+fp8-idx) are scored by vLLM's fmha_sm100 only, on "
            f"{', '.join(MSA_SM100_ARCHITECTURES)} GPUs; use the BF16 keys (drop +fp8-idx)"
        )
    return bool(meta.get("indexer")) and flashmla_runs(hw, eng)


def sparse_cache_scale(hw: HardwareSpec, eng: EngineConstants, meta: dict) -> float:
    """A DSA decode op's cache bytes in the engine's FP8 layout over the model's
    (:func:`sparse_fp8_cache_bytes` over latent + RoPE at the cache's bytes per element;
    ``meta``: the op's, ``mixers.dsa_meta``); 1 for other ops and caches. The capacity's side
    of the same rule: :func:`sparse_latent_bytes`. (A prompt the FP8 decode kernel
    runs reads the layout too; its bytes stay the model's: that kernel is compute-bound there.)"""
    dims, scales = meta.get("latent"), meta.get("scales", FP8_SCALES["mla"])
    own = sparse_fp8_cache_bytes(hw, eng, *dims, scales) if dims and meta["fp8_cache"] else None
    return 1.0 if own is None else own / (float(sum(dims)) * meta["kv"])
