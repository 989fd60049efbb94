"""The MoE kernel path an engine runs on a GPU, and the token tiles its grouped expert GEMMs take
(layer 3, with ``cost``): which fused-MoE code runs the routed experts decides what the kernels
around the grouped GEMMs stream (``cost.moe_permute_time``) and how narrowly an expert's few tokens
are tiled (``cost.gemm_time``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .comm import fed_every_token
from .formats import BLOCK_SCALED_WEIGHTS, int4_weight_only
from .routing import busiest_touch_ratio, moe_rank_imbalance, rank_experts, reach_share
from .specs.engine import EXPERT_POPULARITY_CV, EngineConstants
from .specs.hardware import Efficiency, HardwareSpec

# Routed (grouped) expert GEMMs on the Triton path (vLLM's and SGLang's fused_moe, and the
# Marlin kernels of weight-only formats) tile each expert's tokens as narrowly as 16 or 32 rows
# where few tokens reach an expert, besides the 64/128-row tiles of large batches: fused_moe
# pads each expert's tokens to BLOCK_SIZE_M (moe_align_block_size), 16 in the default config
# where the tokens are at most the experts; Marlin takes the smallest of 8/16/32/48/64 above
# the tokens per expert (vllm-project/vllm, model_executor/layers/fused_moe/fused_moe.py,
# get_default_config). Block-scaled FP8 takes them too: get_default_config gives it 64, but the
# tuned configs both engines ship for its shapes give BLOCK_SIZE_M 16 up to 512 tokens (DeepSeek-
# V3/R1 on H200: vllm-project/vllm fused_moe/configs/E=256,N=256,device_name=NVIDIA_H200,
# dtype=fp8_w8a8,block_shape=[128,128].json; sgl-project/sglang fused_moe_triton/configs/
# triton_3_3_1/E=257,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json,
# the shared expert fused as the 257th; 64 from 1,024 tokens). The weight side of such a tile:
# SWAP_AB_WEIGHT_TILE. The model picks a tile by efficiency, not by the configs'
# thresholds: the narrow tiles win up to ~30-70 rows per expert (H100 to MI300X, a DeepSeek
# expert shape), the wide ones above. Checked against the measured MoE modules
# (data/validation/moe_layer.csv, vLLM and SGLang rows of 128-512 tokens) and the serving rows
# (benchmarks/RESULTS.md, stop 42). AMD GPUs take them too: vLLM and SGLang on ROCm run AITER's
# fused MoE, whose tuner tables state the token tile each shape ran (``block_m``: 16 or 32 in 415
# of the 488 rows of 1-256 tokens, 26 more a one-row kernel; 64 or 128 in 298 of the 331 rows of
# 1,024 tokens or more; data/validation/aiter_moe.csv).
GROUPED_TOKEN_TILES = (16, 32)
# AITER's fused MoE (the routed experts on AMD GPUs, ``runs_aiter``): a fixed time per layer in its
# two grouped stages, beyond the engine's routing chain (``moe_layer_overhead_s``: AITER's tables
# time the stages with sorting and activation quantization outside the timed region). At 1-16
# tokens a layer takes 18.5 us or more however little it streams (MI355X, block-scaled FP8, 512
# experts of 2,048 x 128, one token: 28.1 us, its two GEMMs priced at 3.7). 13.1 us: the median
# over the 269 rows of 1-16 tokens in data/validation/aiter_moe.csv (ROCm/aiter @e4048607
# *tuned_fmoe*.csv; MI300X 23 rows 8.0 us, MI355X 246 rows 13.4 us; by format 11.6-27.7 us) of
# each row's time less its two priced grouped GEMMs and their kernels' fixed cost
# (``benchmarks/aiter_kernel_report.py --fixed``).
AITER_MOE_LAYER_S = 13.1e-6
# The trtllm_gen path: TensorRT-LLM's TRTLLM-Gen fused MoE on Blackwell (SM100/SM103), which
# FlashInfer ships and SGLang (``--moe-runner-backend flashinfer_trtllm``), vLLM (its first NVFP4
# MoE choice, FLASHINFER_TRTLLM: vllm-project/vllm fused_moe/oracle/nvfp4.py
# select_nvfp4_moe_backend) and TensorRT-LLM's ``moe_config.backend: TRTLLM`` run. Its batched
# GEMMs put an expert's tokens on the MMA's N side, so a few tokens per expert take a narrow tile
# (``GROUPED_TOKEN_TILES``), and the routing, the permutation and the finalize run inside its
# own kernels. Measured whole modules (data/validation/moe_layer.csv): TensorRT-LLM tech blog
# 24 ("MoE as Dense GEMM", source trtllm_blog24), one B200, DeepSeek-V3 NVFP4 at TP8: 26.8 us at
# one token, 161.9 at 128, 186.9 at 384, against TensorRT-LLM CUTLASS's 96.8, 335.7 and 368.1;
# FlashInfer PR #4985 (flashinfer_pr4985), one B300, the same MoE with 32 local experts (EP8):
# 26 us at one token, 144 at 128, 164 at 512, against FlashInfer CUTLASS's 48, 164 and 179, and
# 295-309 us at 1,024-4,096 tokens (a tactic the model does not price: -14% to -44% there). Its
# fixed chain per layer (in place of the engine's ``moe_layer_overhead_s``: those kernels are
# this library's, not the engine's), beyond the per-kernel charges: the median over the 27 rows
# of each row's time less the rest of its priced layer under TensorRT-LLM's constants, 11.3 us
# (``benchmarks/moe_kernel_report.py --trtllm-gen-fixed``).
TRTLLM_GEN_LAYER_S = 11.3e-6
# The cutlass path with NVFP4 experts (TensorRT-LLM's CUTLASS MoE runner and FlashInfer's copy,
# cutlass_fused_moe, on Blackwell): its chain quantizes the routed tokens and GEMM1's output to
# FP4 with swizzled block scales around the grouped GEMMs, beyond the BF16 / FP8 chain the
# engine's ``moe_layer_overhead_s`` prices. Its fixed chain per layer (in place of the engine's
# constant: the kernels are the library's): the median over the 8 bundled rows of that path at
# 1-16 tokens (data/validation/moe_layer.csv: FlashInfer PR #4985's CUTLASS column on B300, 5
# rows, 16-30 us; TensorRT-LLM tech blog 24's CUTLASS column on B200, 3 rows, 76-102 us) of each
# row's time less the rest of its priced layer under TensorRT-LLM's constants, 30.2 us
# (``benchmarks/moe_kernel_report.py --cutlass-fp4-fixed``). AIConfigurator's NVFP4 module
# tables (B200, B300, GB200; 1-2 tokens, expert parallel) put it at 15.4-21.7 us beyond the
# per-kernel charges (``--fixed-cost``); their modules at 1,024 tokens and more want the rows'
# value (``tests/test_moe_kernels.py::test_blackwell_fp4_fused_moe_layers``).
CUTLASS_FP4_LAYER_S = 30.2e-6
# Its grouped GEMMs launch the grid the worst routing could need, and the CTAs past the routed
# tiles exit: the host knows no expert counts, so the batch dimension holds min(T k, E) token
# tiles (one pair on each of as many experts as the pairs reach) plus one tile per t pairs left
# over, for T tokens fed, top_k k (every pair of them, whichever GPU holds its expert), E experts
# on this GPU and t tokens a tile; the routing kernel writes how many run (FlashInfer
# include/flashinfer/trtllm/fused_moe/runner.h, Routing::getMaxNumCtasInBatchDim: "We launch
# maximally possible number of CTAs and use ptrNumNonExitingCtas to determine the actual number
# of CTAs to run"; csrc/trtllm_fused_moe_runner.cu passes the GPU's experts, as since its first
# version, bd74e15c, 2025-07; TensorRT-LLM trtllmGenKernels/blockScaleMoe/runner.h alike). Each
# token tile spans the weight side in tiles of TRTLLM_GEN_WEIGHT_TILE rows (the batched GEMMs put
# the weights on the MMA's M side). t is T k / (the model's experts) within TRTLLM_GEN_TOKEN_TILE,
# "8-64 tokens per CTA tile as it's the range supported by the kernel" (FlashInfer's
# calculate_tile_tokens_dim, which rounds it up to a power of two; the model takes it unrounded,
# so that the grid, and the layer's time, never fall as tokens are added; the constants below fit
# alike either way, medians within 6%). Where experts are spread over EP ranks, a GPU fed every
# token runs 1 / EP of its pairs, and the idle CTAs grow with the tokens: in AIConfigurator's
# FlashInfer TRTLLM-Gen modules (SGLang 0.5.9-0.5.14 and vLLM 0.14-0.24 tables; B200, B300,
# GB200, GB300) an EP rank's time less 1 / EP of the all-local module's (the fixed chain taken
# out) is these idle CTAs x weight tiles x a constant per format (TRTLLM_GEN_IDLE_CTA_S,
# benchmarks/trtllm_gen_idle_fit.py), EP 2-256, 16-16,384 tokens.
TRTLLM_GEN_WEIGHT_TILE = 128.0
TRTLLM_GEN_TOKEN_TILE = (8.0, 64.0)
# SM-seconds one idle CTA costs, per weight format: medians over every module from 16 tokens
# (4 GPUs, both engines, every shape; B200, B300, GB200 and GB300 each within 10% of them, the
# fixed chain TRTLLM_GEN_LAYER_S taken out of each rank's time): block-scaled FP8 (the DeepSeek
# FP8 kernels) 0.950 us (16,100 modules, IQR 0.65-1.33; 0.96 from 4,096 tokens, IQR 0.90-1.07);
# MXFP4 weights under 16-bit activations (weight-only, converted in the kernel) 0.541 us (2,691,
# IQR 0.28-0.82; 0.54 from 4,096, IQR 0.51-0.56); every other format 0.275 us (49,973, IQR
# 0.16-0.59; BF16 0.213, per-tensor FP8 0.268, NVFP4 0.332, W4A8 MXFP4 0.356; 0.20 from 4,096
# tokens, IQR 0.13-0.26).
TRTLLM_GEN_IDLE_CTA_S = {"fp8_block": 0.950e-6, "mxfp4-a16": 0.541e-6, "": 0.275e-6}
# Its batched GEMMs' rate: NVFP4 at the dense FP4 rate (the GPU files' grouped share, 0.42, is
# CUTLASS's grouped NVFP4 MoE, which tech blog 24 measures at about twice TRTLLM-Gen's time from
# 128 tokens): without that share AIConfigurator's FlashInfer TRTLLM-Gen NVFP4 modules (SGLang and
# vLLM; B200, B300, GB200, GB300) at 4,096 tokens go from +9% .. +76% to -13% .. +29% (with the
# idle CTAs above; benchmarks/aic_moe_survey.py). Block-scaled FP8 (the DeepSeek FP8 recipe) runs at
# a share of the FP8 rate of its own, as on Hopper (efficiency.grouped_gemm.fp8_block: 0.32, H200):
TRTLLM_GEN_FP8_BLOCK = Efficiency(
    0.26,
    "the share of the dense FP8 rate that prices AIConfigurator's FlashInfer TRTLLM-Gen FP8 "
    "block-scale modules (ai-dynamo/aiconfigurator @095f58a, moe_perf.parquet of SGLang "
    "0.5.9-0.5.14 and vLLM 0.14-0.24 on B200, B300, GB200 and GB300; balanced routing, the "
    "bundled models' shapes but DeepSeek-V3's, all experts local or EP 8, 16-16,384 tokens; 680 "
    "modules) with the smallest median |error|: 11.8% at 0.26 (19.8% at 1.0, 16.4% at 0.2, 12.5% "
    "at 0.24, 12.4% at 0.28); all local at 4,096 / 16,384 tokens -3% / +2%, EP 8 -1% / +5%",
)
# MXFP4 weights under BF16 activations (weight-only: the kernel converts the weights for a BF16
# MMA, as Hopper's W4A16 kernels do; efficiency.grouped_gemm.mxfp4 there: 0.65, H200):
TRTLLM_GEN_W4A16 = Efficiency(
    0.39,
    "the share of the dense BF16 rate that prices AIConfigurator's FlashInfer TRTLLM-Gen W4A16 "
    "MXFP4 modules (w4a16_mxfp4: SGLang 0.5.9-0.5.14 and vLLM 0.14-0.24 on B200, B300, GB200 "
    "and GB300; balanced routing, gpt-oss-120b's and -20b's shapes, all experts local or EP 8, "
    "16-16,384 tokens; 160 modules) with the smallest median |error|: 11.5% at 0.39 (25.5% at "
    "1.0, 11.7% at 0.38 and 0.40, 13.0% at 0.35 and 0.45); all local at 4,096 / 16,384 tokens "
    "-0% / -6%, EP 8 +5% / -2%; at 16-128 tokens, where the weights stream, all-local modules "
    "stay 27-29% fast",
)
# the hardware architectures the TRTLLM-Gen kernels are built for (SM100, SM103)
TRTLLM_GEN_ARCHITECTURES = ("blackwell", "blackwell-ultra")
# The marlin path: the Marlin MoE kernel that vLLM and SGLang run for 4-bit integer weight-only
# experts (GPTQ/AWQ, compressed-tensors pack-quantized INT4: ``EngineConstants.moe_kernels_int4``).
# It converts the INT4 weights to BF16 in registers and multiplies with the warp-level mma.sync
# instructions, not Hopper's wgmma or Blackwell's tcgen05, so its math rate is its own: a rate
# per SM, not a share of the GPU's BF16 peak, on the rows its tiles compute. Marlin picks its
# token tile from 8, 16, 32, 48 and 64 rows by rows per expert (vLLM fused_marlin_moe and SGLang's
# copy: "for block_size_m in [8, 16, 32, 48, 64]: if M * topk / E / block_size_m < 0.9: break"),
# MARLIN_TOKEN_TILES, ``marlin_rows``; its fused gather and separate activation and sum stream what
# the Triton path's do (cost.moe_permute_time). MARLIN_SM_FLOPS is the rate per SM that prices
# AIConfigurator's Marlin MoE modules on Hopper best (moe_dtype int4_wo, kernel_source
# sglang_marlin_moe, vllm_marlin_moe, vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts:
# SGLang 0.5.9, 0.5.10, 0.5.14 and vLLM 0.14, 0.24 on H100 and H200; balanced routing, every
# shape, experts all local, 16-16,384 tokens, 372 modules; ai-dynamo/aiconfigurator @095f58a,
# systems/data/<gpu>/moe/<engine>/<version>/moe_perf.parquet): median |error| 8.9% (bias -0.6%)
# at 2.25e12, 9.5% at 2.2e12, 9.2% at 2.35e12, 10.9% at 2.1e12 (benchmarks/marlin_moe_report.py
# --scan). The same rate per SM prices the Blackwell tables (B200, B300, GB200, GB300, 546
# modules) at 11.4% (bias -6.9%); from 1,024 tokens within -2% to +8% by GPU: their Kimi-K2.5
# modules reach 268-310 TFLOPS at 16,384 tokens against 233-266 on H100/H200, about their SM
# counts' ratio (148 to 132), where their BF16 peaks are 2.3 times Hopper's. Below 256 tokens
# the Blackwell modules stream their weights slower than the model (-19% to -33%), and SGLang's
# modules at EP 2-8 time as its EP 1 ones (as if every pair were local): neither is priced here.
# vLLM 0.18 and 0.19's tables (kernel_source vllm_marlin_int4_moe) time the same shapes 2-6 times
# slower than vLLM 0.14 and 0.24 on the same GPUs, at one token as well, and are not used.
MARLIN_SM_FLOPS = 2.25e12
MARLIN_TOKEN_TILES = (8, 16, 32, 48, 64)
# The deepgemm path: vLLM's DeepGEMM MoE, its default for block-scaled FP8 experts on Hopper and
# SM100 Blackwell in vLLM 0.12 (vllm-project/vllm v0.12.0, commit 4fd9d6a8: VLLM_USE_DEEP_GEMM,
# VLLM_MOE_USE_DEEP_GEMM and VLLM_USE_DEEP_GEMM_E8M0 on by default, envs.py; quantization/fp8.py
# get_fp8_moe_backend, which leaves it off where the MoE's tensor-parallel size is 8 or more, PR
# #29346, and utils/deep_gemm.py is_deep_gemm_supported: compute capability 9.0 or 10.0 exactly,
# not SM103's 10.3 nor SM120), at every batch: with E8M0 on, fused_moe
# skips _valid_deep_gemm's 128-row minimum (PRs #26197, #26322). Its contiguous grouped GEMMs run
# over the worst case of rows, not the routed ones: with no per-expert counts from the prepare
# step, compute_aligned_M (fused_moe/deep_gemm_utils.py) takes round_up(P + E_l (128 - 1), 128)
# rows for P routed pairs and E_l local experts, and deepgemm_moe_permute labels the padding rows
# expert 0, which DeepGEMM's SM90 kernel computes (it skips only rows labelled -1; deepseek-ai/
# DeepGEMM @594953ac, the commit vLLM 0.12 pins). So a decode step pays about E_l x 127 rows of
# both GEMMs, of the activation and of its FP8 quantization, whatever its batch (padded_rows):
# AIConfigurator's vLLM 0.12.0 rows of Qwen3-235B-A22B-FP8 on H200 measure 51-59 ms per output
# token at TP 2 from 4 to 20 clients, where SGLang's Triton kernels measure 15-17 ms at 2-4; on
# MiniMax-M2 at H100, VLLM_MOE_USE_DEEP_GEMM=0 took 32.2 ms to 16.4 (vllm-project/recipes #112).
# Other formats, and an MoE tensor-parallel size of 8 or more, run the Triton path (with expert
# parallelism vLLM's MoE tensor-parallel size is 1: FusedMoEParallelConfig).
DEEPGEMM_BLOCK_M = 128
DEEPGEMM_MAX_TP = 8  # from this MoE tensor-parallel size vLLM 0.12 runs Triton (PR #29346)
DEEPGEMM_ARCHITECTURES = ("hopper", "blackwell")  # SM90, SM100 (is_deep_gemm_supported)


def runs_deepgemm(hw: HardwareSpec) -> bool:
    """Whether vLLM's DeepGEMM MoE runs on this GPU (``DEEPGEMM_ARCHITECTURES``: NVIDIA's
    SM90 and SM100)."""
    return hw.vendor == "nvidia" and hw.architecture in DEEPGEMM_ARCHITECTURES


def runs_trtllm_gen(hw: HardwareSpec) -> bool:
    """Whether the TRTLLM-Gen kernels exist for this GPU (``TRTLLM_GEN_ARCHITECTURES``: NVIDIA's
    datacenter Blackwell, SM100/SM103)."""
    return hw.vendor == "nvidia" and hw.architecture in TRTLLM_GEN_ARCHITECTURES


def grouped_token_tiles(hw: HardwareSpec, eng: EngineConstants, weights: str) -> tuple[int, ...]:
    """The narrow token tiles (``GROUPED_TOKEN_TILES``) the engine's grouped expert GEMMs use on
    this GPU for ``weights``: those of the Triton path (vLLM's and SGLang's fused_moe; for
    block-scaled FP8 weights too, as their tuned configs tile them: module comment); none on the
    CUTLASS path, whose
    token-side tiles at small batches the serving rows do not confirm (RESULTS.md, stop 42). On
    AMD GPUs the Triton path is AITER's fused MoE (``runs_aiter``), whose tuner picks 16- and
    32-row token tiles at small batches (``GROUPED_TOKEN_TILES``' comment)."""
    return _path_tiles(moe_kernel_path(hw, eng, weights))


def _path_tiles(path: str) -> tuple[int, ...]:
    """The narrow token tiles a kernel ``path`` gives its routed GEMMs, in every format and on
    every GPU it runs on: the Triton path's (AITER's on AMD GPUs) and TRTLLM-Gen's
    (``grouped_token_tiles``)."""
    if path == "trtllm_gen":  # its batched GEMMs tile tokens narrowly in every format
        return GROUPED_TOKEN_TILES
    if path == "marlin":
        return MARLIN_TOKEN_TILES
    triton = path in ("triton", "deepgemm")  # (deepgemm: Triton's where its rows are not padded)
    return GROUPED_TOKEN_TILES if triton else ()


def runs_aiter(hw: HardwareSpec, eng: EngineConstants) -> bool:
    """Whether the routed experts run AITER's fused MoE: the Triton path (``moe_kernel_path``) on
    an AMD GPU, where vLLM and SGLang run AITER's kernels (``AITER_MOE_LAYER_S``)."""
    return hw.vendor == "amd" and moe_kernel_path(hw, eng) == "triton"


def moe_layer_fixed_s(hw: HardwareSpec, eng: EngineConstants, weights: str = "") -> float:
    """Fixed time per MoE layer per step of the kernels around the grouped GEMMs (the
    ``moe_routing`` op) for experts in the ``weights`` format: the engine's
    ``moe_layer_overhead_s``; on the trtllm_gen path the fused library's own chain instead
    (``TRTLLM_GEN_LAYER_S``), and on the cutlass path with NVFP4 experts that path's chain
    (``CUTLASS_FP4_LAYER_S``); with AITER's fused MoE (``runs_aiter``) the engine's chain plus
    AITER's stages' fixed time (``AITER_MOE_LAYER_S``).

    Example: vLLM (21.9 us) on MI355X -> 35.0 us; on H200 -> 21.9 us; on B200 -> 11.3 us."""
    path = moe_kernel_path(hw, eng, weights)
    if path == "trtllm_gen":
        return TRTLLM_GEN_LAYER_S
    if path == "cutlass" and weights == "nvfp4":
        return CUTLASS_FP4_LAYER_S
    return eng.moe_layer_overhead_s + (AITER_MOE_LAYER_S if runs_aiter(hw, eng) else 0.0)


def padded_rows(hw: HardwareSpec, eng: EngineConstants, moe: dict[str, Any]) -> Any:
    """The rows each grouped expert GEMM of one MoE layer computes on the deepgemm path
    (vLLM's DeepGEMM MoE: ``DEEPGEMM_BLOCK_M``'s comment), for a routed GEMM's ``moe`` (the
    mean pairs per rank, ep, local experts, moe_tp, attention-DP, weight format): round_up(pairs
    + local experts x 127, 128) for block-scaled FP8 experts whose MoE tensor-parallel size is below
    ``DEEPGEMM_MAX_TP``, 0 elsewhere (elementwise); None where the engine does not run the
    path on this GPU, or not for this format.

    The pairs are those of every token the kernel is fed: all of them where no dispatch picks a
    rank's own (tensor-parallel attention, or attention-DP ranks' tokens all-gathered, vLLM's
    default: ``comm.gathers``), each token's top_k whichever rank holds the expert; behind a
    dispatch (DeepEP) the prepare step counts each expert's tokens and nothing is padded (0).

    Example: Qwen3-235B's 128 experts, 16 tokens (128 pairs) -> 16,384 rows; 20 -> 16,512."""
    weights = moe.get("weights", "")
    if moe_kernel_path(hw, eng, weights) != "deepgemm" or weights not in BLOCK_SCALED_WEIGHTS:
        return None
    m, pairs = DEEPGEMM_BLOCK_M, np.asarray(moe["pairs_per_rank"], dtype=float)
    seen = pairs * moe["ep"]  # every routed pair of the tokens it is fed (all of them)
    rows = np.ceil((seen + moe["experts_local"] * (m - 1)) / m) * m
    fed_all = fed_every_token(hw, eng, moe["adp"], moe["pure_ep"])
    runs = (np.asarray(moe["moe_tp"]) < DEEPGEMM_MAX_TP) & (pairs > 0) & fed_all
    return np.where(runs, rows, 0.0)


def trtllm_gen_idle_ctas(
    tokens: Any, top_k: float, experts: float, experts_local: float, pairs: Any, widths: Any
) -> Any:
    """CTAs the trtllm_gen path's grouped GEMMs of one MoE layer launch that exit without work
    (the comment above ``TRTLLM_GEN_WEIGHT_TILE``), elementwise over ``tokens`` fed to the kernel:
    the batch dimension's launched token tiles less those the GPU's ``pairs`` (routed at random
    over its ``experts_local`` experts) fill, times the weight tiles of GEMM1 and GEMM2
    (``widths``: their weight rows).

    Example: 4,096 tokens, top-8 of 128 experts, 16 on this GPU (EP 8: 4,096 pairs), widths 3,072
    and 4,096: tiles of 64 tokens, 16 + (32,768 - 16) / 64 = 527.75 launched, 16 experts x
    (256 / 64 + 63 / 128) = 71.9 tiles routed, so 455.9 x (24 + 32) = 25,529 idle CTAs."""
    fed = np.maximum(np.asarray(tokens, dtype=float), 0.0)
    fed_pairs = fed * top_k
    lo, hi = TRTLLM_GEN_TOKEN_TILE
    tile = np.clip(fed_pairs / experts, lo, hi)
    first = np.minimum(fed_pairs, experts_local)  # a tile per expert, then one per t pairs left
    # (unrounded, as the tile: a whole count beside the expected routed tiles below would let
    # the idle count, and the layer's time, fall between two launches as tokens are added)
    launched = first + (fed_pairs - first) / tile
    touched = rank_experts(fed, experts, top_k, experts / experts_local)
    rows = np.asarray(pairs, dtype=float) / np.maximum(touched, 1e-30)
    # an expert's routed tiles, E[ceil(X / t) | X > 0] for X ~ Poisson(rows), approximated by
    # rows / t plus the last tile's mean empty share (t - 1) / 2t, at least one
    used = touched * np.maximum(rows / tile + (tile - 1.0) / (2.0 * tile), 1.0)
    weight_tiles = sum(np.ceil(np.asarray(w, dtype=float) / TRTLLM_GEN_WEIGHT_TILE) for w in widths)
    return np.where(fed > 0, np.maximum(launched - used, 0.0) * weight_tiles, 0.0)


def trtllm_gen_idle_time(
    hw: HardwareSpec,
    eng: EngineConstants,
    moe: dict[str, Any],
    tokens: Any,
    act_bytes: float,
    widths: Any,
) -> Any:
    """Seconds the idle CTAs of one MoE layer's grouped GEMMs hold the GPU
    (``trtllm_gen_idle_ctas`` x ``TRTLLM_GEN_IDLE_CTA_S`` of the format / SMs) on the trtllm_gen
    path, 0 on the others. ``tokens``: the layer's tokens, which the kernel is fed where no
    dispatch picks the GPU's own (``comm.fed_every_token``); behind a dispatch only those with a
    pair on this GPU, 1 - (1 - 1 / ep)^top_k of them."""
    if moe_kernel_path(hw, eng, moe.get("weights", "")) != "trtllm_gen":
        return 0.0
    k, ep, local = moe["top_k"], np.asarray(moe["ep"], dtype=float), moe["experts_local"]
    fed = fed_tokens(hw, eng, tokens, moe["adp"], moe["pure_ep"], k, ep)
    pairs = np.asarray(moe["pairs_per_rank"], dtype=float)
    idle = trtllm_gen_idle_ctas(fed, k, local * ep, local, pairs, widths)
    key = _trtllm_gen_format(moe["weights"], act_bytes >= 2.0)
    return idle * TRTLLM_GEN_IDLE_CTA_S.get(key, TRTLLM_GEN_IDLE_CTA_S[""]) / hw.sm_count


def fed_tokens(
    hw: HardwareSpec, eng: EngineConstants, tokens: Any, adp: Any, pure_ep: Any, top_k: Any, ep: Any
) -> Any:
    """The tokens one GPU's MoE kernels are fed of a layer's ``tokens``: all of them where no
    dispatch picks the GPU's own (``comm.fed_every_token``), else those with a pair on this GPU,
    1 - (1 - 1 / ep)^top_k of them (``routing.reach_share``, uniform routing)."""
    fed_all = fed_every_token(hw, eng, adp, pure_ep)
    return np.asarray(tokens, dtype=float) * np.where(fed_all, 1.0, reach_share(top_k, ep))


def _trtllm_gen_format(weights: str, sixteen_bit: bool) -> str:
    """The trtllm_gen path's kernel family for ``weights``: ``mxfp4-a16`` for MXFP4 weights under
    16-bit activations (weight-only), else the weight format."""
    return "mxfp4-a16" if weights == "mxfp4" and sixteen_bit else weights


def fuses_activation(hw: HardwareSpec, eng: EngineConstants, meta: dict[str, Any]) -> bool:
    """Whether the experts' gated activation runs inside GEMM1 (an op's ``meta["moe"]``): on the
    trtllm_gen path in every format but block-scaled FP8, whose cubins have no fused activation
    and run it as a kernel of its own (FlashInfer csrc/trtllm_fused_moe_runner.cu, MoE::Runner::run:
    "We do activation only for DeepSeek FP8, as cubins do not have fused activation")."""
    moe = meta.get("moe")
    gen = moe is not None and moe_kernel_path(hw, eng, moe.get("weights", "")) == "trtllm_gen"
    return gen and moe.get("weights") not in BLOCK_SCALED_WEIGHTS


def grouped_share(
    hw: HardwareSpec, eng: EngineConstants, rate_class: str, weights: str = ""
) -> Efficiency:
    """A routed GEMM's share of the dense ceiling at ``rate_class`` for experts in ``weights``:
    the GPU file's grouped kernel (``efficiency.grouped_gemm``: Blackwell's entry is CUTLASS's
    grouped NVFP4 MoE, 0.42), 1.0 on the trtllm_gen path, whose batched GEMMs run at the dense
    rate (``TRTLLM_GEN_FP8_BLOCK``'s comment), and on the marlin path, whose rate is its own
    (``marlin_flops``)."""
    path = moe_kernel_path(hw, eng, weights)
    if path == "trtllm_gen":
        return Efficiency(1.0, "trtllm_gen: TRTLLM-Gen's batched GEMMs at the dense rate")
    if path == "marlin":
        return Efficiency(1.0, "marlin: Marlin's own rate per SM (moe_kernels.MARLIN_SM_FLOPS)")
    return hw.grouped_gemm_efficiency_for(rate_class)


def marlin_rows(rows: Any) -> Any:
    """The rows Marlin computes for ``rows`` rows of one expert (elementwise): its tile is the
    first of ``MARLIN_TOKEN_TILES`` that ``rows`` fills to under 0.9, else 64 (vLLM's
    fused_marlin_moe: ``M * topk / E / block_size_m < 0.9``), and it computes whole tiles.

    Example: 12 rows -> 16 (tile 16); 85 -> 128 (two of 64); 341 -> 384."""
    r = np.asarray(rows, dtype=float)
    tile = np.full_like(r, MARLIN_TOKEN_TILES[-1])
    for t in reversed(MARLIN_TOKEN_TILES):  # the smallest tile that qualifies wins
        tile = np.where(r / t < 0.9, t, tile)
    return np.ceil(r / tile - 1e-9) * tile


def marlin_flops(hw: HardwareSpec, eng: EngineConstants, weights: str) -> float | None:
    """The math rate (FLOP/s) of a routed GEMM of ``weights`` experts on the marlin path
    (``MARLIN_SM_FLOPS`` x the GPU's SMs), None on every other path (``cost.gemm_time`` takes it
    as the bound of the rows' time, as ``grouped_block_efficiency``'s shares).

    Example: vLLM, Kimi-K2.5's INT4 experts on H200 -> 2.97e14 (132 SMs); on B200 -> 3.33e14."""
    if moe_kernel_path(hw, eng, weights) != "marlin":
        return None
    return MARLIN_SM_FLOPS * hw.sm_count


def marlin_share(
    hw: HardwareSpec, eng: EngineConstants, weights: str, rows: Any, ceiling: float
) -> Any:
    """The share of a ``ceiling`` FLOP/s rate that a routed GEMM of ``weights`` experts with
    ``rows`` rows per expert computes its rows at on the marlin path (``marlin_flops``, on the
    rows its tiles compute, ``marlin_rows``; at most 1, elementwise; 1 where there are no rows:
    no bound; ``rows`` None: the rate alone, as the estimate's assumptions report it), None on the
    other paths (``cost.gemm_time``'s bound of the rows' time).

    Example: 341 rows (384 computed) at Marlin's 2.97e14 on H200 against a 7.9e14 ceiling ->
    2.97e14 / 7.9e14 x 341 / 384 = 0.33."""
    rate = marlin_flops(hw, eng, weights)
    if rate is None:
        return None
    if rows is None:
        return min(1.0, rate / ceiling)
    r = np.asarray(rows, dtype=float)
    share = rate / ceiling * r / np.maximum(marlin_rows(r), 1e-9)
    return np.where(r > 0, np.minimum(1.0, share), 1.0)


def grouped_block_efficiency(
    hw: HardwareSpec, eng: EngineConstants, moe: dict[str, Any], rate_class: str
) -> Efficiency | None:
    """The share of the dense rate a routed GEMM's work off the tensor cores allows
    (``cost.gemm_time``), for its ``moe``'s weight format: the GPU file's
    (``HardwareSpec.block_scaled_efficiency``), else on the trtllm_gen path block-scaled FP8's
    ``TRTLLM_GEN_FP8_BLOCK`` and weight-only MXFP4's (BF16 math) ``TRTLLM_GEN_W4A16``; None
    elsewhere."""
    weights = moe.get("weights", "")
    own = hw.block_scaled_efficiency(weights, rate_class)
    if own is not None or moe_kernel_path(hw, eng, weights) != "trtllm_gen":
        return own
    family = _trtllm_gen_format(weights, rate_class == "bf16")
    return {"fp8_block": TRTLLM_GEN_FP8_BLOCK, "mxfp4-a16": TRTLLM_GEN_W4A16}.get(family)


def grouped_efficiency(
    hw: HardwareSpec, eng: EngineConstants, rate_class: str, weights: str
) -> Efficiency:
    """The share of the dense ceiling routed GEMMs of ``weights`` are priced at, as the estimate's
    assumptions report it: the bound of their work off the tensor cores where one applies
    (``grouped_block_efficiency``), on the marlin path its rate over that ceiling
    (``marlin_flops``, as ``cost.gemm_time`` bounds it), else the class's grouped share
    (``grouped_share``)."""
    if moe_kernel_path(hw, eng, weights) == "marlin":
        from .cost import gemm_ceiling  # (cost imports this module)

        peak, ceiling = gemm_ceiling(hw, rate_class, eng)
        return Efficiency(
            float(marlin_share(hw, eng, weights, None, peak * ceiling)),
            f"marlin: {MARLIN_SM_FLOPS / 1e12:.2f} TFLOP/s per SM x {hw.sm_count} SMs "
            "(moe_kernels.MARLIN_SM_FLOPS)",
        )
    block = grouped_block_efficiency(hw, eng, {"weights": weights}, rate_class)
    return block if block is not None else grouped_share(hw, eng, rate_class, weights)


def weight_only_path(hw: HardwareSpec, eng: EngineConstants, weights: str) -> str | None:
    """The MoE path the engine runs for experts this GPU runs weight-only
    (``EngineConstants.moe_kernels_weight_only``; ``HardwareSpec.runs_weight_only``: MXFP4 on a
    GPU whose tensor cores do not take FP4, Hopper among them), where the MoE is not
    tensor-parallel (``takes_weight_only_path``); None where the engine runs its own
    ``moe_kernel_path`` for them. Read by the cost model (``weight_only_tiles``) and by the
    TensorRT-LLM launch file's MoE backend.

    Example: TensorRT-LLM (``triton``) with MXFP4 experts on H200 -> "triton"; on B200 (native
    FP4) or with FP8 experts -> None; vLLM (``same``) -> None."""
    path = eng.moe_kernels_weight_only
    if path in ("same", moe_kernel_path(hw, eng, weights)) or not hw.runs_weight_only(weights):
        return None
    return path


def takes_weight_only_path(moe_tp: Any) -> Any:
    """Where a weight-only path applies (bool, elementwise over ``moe_tp``): only without MoE
    tensor parallelism, as TensorRT-LLM's TRITON backend takes EP but not TP (its gpt-oss
    README's MoE support matrix); a tensor-parallel MoE keeps the engine's own path.

    Example: moe_tp 1 -> True; moe_tp 2 (tp 2, ep 1) -> False."""
    return np.asarray(moe_tp, dtype=float) <= 1.0


def weight_only_tiles(
    hw: HardwareSpec, eng: EngineConstants, weights: str
) -> tuple[int, ...] | None:
    """The token tiles of ``weight_only_path``, which ``cost.gemm_time`` takes where
    ``takes_weight_only_path`` holds for the op's ``moe_tp``; None where the engine keeps its
    own path. TensorRT-LLM's TRITON backend runs Triton grouped GEMMs (``GROUPED_TOKEN_TILES``:
    narrow token tiles at a few rows per expert) where its CUTLASS runner pads each expert's
    rows to a full tile. Only the grouped GEMMs' tiles follow it: the permute and finalize
    bytes stay those of the engine's ``moe_kernel_path`` (``cost.moe_permute_time``), the
    TRITON backend's own not being measured here."""
    path = weight_only_path(hw, eng, weights)
    return None if path is None else _path_tiles(path)


def moe_kernel_path(hw: HardwareSpec, eng: EngineConstants, weights: str = "") -> str:
    """The MoE kernel path the engine runs on this hardware: ``auto`` is trtllm_gen on NVIDIA's
    datacenter Blackwell GPUs (SM100/SM103: B200, GB200, B300, GB300), where SGLang and vLLM run
    FlashInfer's TRTLLM-Gen fused MoE (``TRTLLM_GEN_LAYER_S``), cutlass on the workstation
    Blackwell (SM120, FlashInfer's cutlass_fused_moe), else triton (their fused_moe);
    trtllm_gen exists on SM100/SM103 only, elsewhere the engine's MoE runner, cutlass, runs.

    deepgemm (vLLM 0.12's DeepGEMM MoE, ``padded_rows``; other formats price as triton) runs on
    SM90 and SM100 (``runs_deepgemm``), elsewhere auto's path.

    Experts in a 4-bit integer weight-only format (``formats.int4_weight_only``) take the engine's
    ``moe_kernels_int4`` on NVIDIA GPUs: ``marlin`` (``MARLIN_SM_FLOPS``), or ``trtllm_gen``
    (TRTLLM-Gen's MxInt4 MoE) where it runs and marlin elsewhere; ``same`` the path above.

    Example: SGLang (auto) on B200 -> "trtllm_gen", on H200 -> "triton"; TensorRT-LLM
    (cutlass) -> "cutlass" everywhere; vLLM with Kimi-K2.5's INT4 experts ("int4_g32_sym") ->
    "marlin" on H200 and B200."""
    gen = runs_trtllm_gen(hw)
    int4 = eng.moe_kernels_int4
    if int4 != "same" and hw.vendor == "nvidia" and int4_weight_only(weights):
        return "trtllm_gen" if int4 == "trtllm_gen" and gen else "marlin"
    if eng.moe_kernels == "deepgemm" and runs_deepgemm(hw):
        return "deepgemm"
    if eng.moe_kernels in ("auto", "deepgemm"):
        if gen:
            return "trtllm_gen"
        blackwell = hw.vendor == "nvidia" and hw.architecture.startswith("blackwell")
        return "cutlass" if blackwell else "triton"
    if eng.moe_kernels == "trtllm_gen" and not gen:
        return "cutlass"
    return eng.moe_kernels


def busiest_rank_rows(
    hw: HardwareSpec, eng: EngineConstants, m: Any, groups: Any, moe: dict[str, Any]
) -> tuple[Any, Any, Any]:
    """The busiest EP rank's side of a routed grouped GEMM of mean ``m`` rows on each of
    ``groups`` experts (``cost.gemm_time``; ``moe``: the op's routing): (its rows per expert it
    touches, the experts it touches, vLLM's DeepGEMM padded rows or None). It carries
    ``routing.moe_rank_imbalance`` times the mean pairs (the draw and the experts' popularity,
    ``specs.engine.EXPERT_POPULARITY_CV`` of the engine's balancer) over the experts it touches
    (``routing.busiest_rank_experts``); on the deepgemm path each expert computes its padded rows
    (:func:`padded_rows`) instead."""
    cv = EXPERT_POPULARITY_CV[eng.expert_balancer]
    pairs, local, k, ep = moe["pairs_per_rank"], moe["experts_local"], moe["top_k"], moe["ep"]
    imb = moe_rank_imbalance(pairs, ep, eng.routing_skew, k, local, cv)
    touch = busiest_touch_ratio(pairs * ep / k, local * ep, k, ep)
    g, rows = groups * touch, m * imb / touch
    pad = padded_rows(hw, eng, moe)
    rows = rows if pad is None else np.where(pad > 0, pad / np.maximum(g, 1e-9), rows)
    return rows, g, pad
