"""The MoE kernel path an engine runs on a GPU, and the token tiles its grouped expert GEMMs take
(layer 3, with ``cost``): which fused-MoE code runs the routed experts decides what the kernels
around the grouped GEMMs stream (``cost.moe_permute_time``) and how narrowly an expert's few tokens
are tiled (``cost.gemm_time``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .formats import BLOCK_SCALED_WEIGHTS
from .specs.engine import EngineConstants
from .specs.hardware import HardwareSpec

# Routed (grouped) expert GEMMs on the Triton path (vLLM's and SGLang's fused_moe, and the
# Marlin kernels of weight-only formats) tile each expert's tokens as narrowly as 16 or 32 rows
# where few tokens reach an expert, besides the 64/128-row tiles of large batches: fused_moe
# pads each expert's tokens to BLOCK_SIZE_M (moe_align_block_size), 16 in the default config
# where the tokens are at most the experts; Marlin takes the smallest of 8/16/32/48/64 above
# the tokens per expert (vllm-project/vllm, model_executor/layers/fused_moe/fused_moe.py,
# get_default_config). Block-scaled FP8 keeps 64 (``grouped_token_tiles``). The weight side of
# such a tile: SWAP_AB_WEIGHT_TILE. The model picks a tile by efficiency, not by the configs'
# thresholds: the narrow tiles win up to ~30-70 rows per expert (H100 to MI300X, a DeepSeek
# expert shape), the wide ones above. Checked against the measured MoE modules
# (data/validation/moe_layer.csv, vLLM and SGLang rows of 128-512 tokens) and the serving rows
# (benchmarks/RESULTS.md, stop 42).
GROUPED_TOKEN_TILES = (16, 32)


def grouped_token_tiles(hw: HardwareSpec, eng: EngineConstants, weights: str) -> tuple[int, ...]:
    """The narrow token tiles (``GROUPED_TOKEN_TILES``) the engine's grouped expert GEMMs use on
    this GPU for ``weights``: those of the Triton path (vLLM's and SGLang's fused_moe), except
    for block-scaled FP8 weights, where fused_moe defaults to 64-row tiles (BLOCK_SIZE_M 64, or
    DeepGEMM's alignment: fused_moe.py get_default_config); none on the CUTLASS path, whose
    token-side tiles at small batches the serving rows do not confirm (RESULTS.md, stop 42),
    nor on AMD GPUs, where vLLM and SGLang run AITER's MoE kernels, whose tiles no source here
    states."""
    return _path_tiles(hw, moe_kernel_path(hw, eng), weights)


def _path_tiles(hw: HardwareSpec, path: str, weights: str) -> tuple[int, ...]:
    """The narrow token tiles a kernel ``path`` gives ``weights`` on this GPU: the Triton path's
    on NVIDIA GPUs, for every format but the block-scaled ones (``grouped_token_tiles``)."""
    triton = hw.vendor == "nvidia" and path == "triton"
    return GROUPED_TOKEN_TILES if triton and weights not in BLOCK_SCALED_WEIGHTS else ()


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
    if path in ("same", moe_kernel_path(hw, eng)) or not hw.runs_weight_only(weights):
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
    return None if path is None else _path_tiles(hw, path, weights)


def moe_kernel_path(hw: HardwareSpec, eng: EngineConstants) -> str:
    """The MoE kernel path the engine runs on this hardware (``auto``: cutlass on Blackwell
    GPUs, where vLLM and SGLang run FlashInfer's CUTLASS/TRTLLM-gen fused MoE, else triton)."""
    if eng.moe_kernels != "auto":
        return eng.moe_kernels
    return "cutlass" if hw.architecture.startswith("blackwell") else "triton"
