"""The batch limits a serving runtime chooses by itself from the GPU it starts on, where its
launch leaves them unset: SGLang's chunked-prefill budget and CUDA-graph batch by the GPU's
memory, vLLM's token budget and sequence limit by the GPU's memory and name. An engine whose
``max_num_tokens`` or ``max_batch_size`` is 0 takes them from the rule its ``gpu_defaults``
names (:func:`for_gpu`); ``none``: the engine file's numbers hold on every GPU (TensorRT-LLM's
defaults, 8,192 tokens and 2,048 sequences, do not depend on the GPU).

The memory is what the runtime reads from the driver (``torch.cuda`` total memory, in MiB for
SGLang): ``HardwareSpec.device_memory``."""

from __future__ import annotations

import math
from typing import Any

# none = the engine file's limits on every GPU; sglang, vllm = the runtime's rule below
GPU_DEFAULTS = ("none", "sglang", "vllm")
# whose max_num_tokens an engine states: each attention-DP rank's (TensorRT-LLM, vLLM), or the
# server's, split over its attention-DP ranks (SGLang; serving.memory.rank_token_budget)
TOKEN_BUDGET_SCOPES = ("rank", "server")
# the limits each rule fills where the engine leaves them at 0
RULE_FIELDS = {"sglang": ("max_num_tokens",), "vllm": ("max_num_tokens", "max_batch_size")}

# SGLang (ServerArgs._handle_gpu_memory_settings; python/sglang/srt/server_args.py, the stored
# version of search-index file id 271536807): by the GPU's memory in MiB, the tiers (below MiB,
# chunked_prefill_size, cuda_graph_max_bs below TP 4, cuda_graph_max_bs from TP 4). Its 60-90
# GiB (H100, A100 80 GB) and 90-160 GiB (H20, H200) tiers hold the same values, one row here;
# the last row is every larger GPU ("B200, MI300").
SGLANG_GPU_TIERS = (
    (20 * 1024, 2048, 8, 8),  # T4, RTX 4080
    (35 * 1024, 2048, 24, 80),  # A10, RTX 4090 / 5090
    (60 * 1024, 4096, 32, 160),  # A100 40 GB, L40(S)
    (160 * 1024, 8192, 256, 512),  # H100, A100 80 GB, H20, H200
    (math.inf, 16384, 512, 512),  # B200, B300, MI300X, MI355X
)
# vLLM (EngineArgs.get_batch_defaults, the OpenAI API server's values; vllm/engine/
# arg_utils.py, search-index file id 7464787): GPUs of at least 70 GiB other than A100 ("setting
# large max_num_batched_tokens for A100 reduces throughput", vLLM PR #17885) take 8,192 tokens and
# 1,024 sequences per step, every other GPU 2,048 and 256
VLLM_LARGE_GPU_BYTES = 70 * 2**30
VLLM_SERVER_LIMITS = {True: (8192, 1024), False: (2048, 256)}


def sglang_tier(gpu_bytes: float) -> tuple[int, int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs below TP 4, from TP 4) SGLang sets itself on a
    GPU of ``gpu_bytes`` (``SGLANG_GPU_TIERS``).

    Example: an H200 (143,771 MiB) -> (8192, 256, 512); a B200 (183,359 MiB) -> (16384, 512, 512)
        >>> sglang_tier(183359 * 2**20)
        (16384, 512, 512)
    """
    mib = gpu_bytes / 2**20
    _, chunk, small, large = next(t for t in SGLANG_GPU_TIERS if mib < t[0])
    return chunk, small, large


def vllm_server_limits(gpu_bytes: float, name: str) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM's OpenAI server sets itself on a GPU of
    ``gpu_bytes`` named ``name`` (``VLLM_SERVER_LIMITS``).

        >>> vllm_server_limits(81559 * 2**20, "h100-sxm"), vllm_server_limits(80 * 2**30, "a100")
        ((8192, 1024), (2048, 256))
    """
    large = gpu_bytes >= VLLM_LARGE_GPU_BYTES and "a100" not in name.lower()
    return VLLM_SERVER_LIMITS[large]


def gpu_limits(rule: str, hw: Any) -> dict[str, int]:
    """The limits ``rule`` (``GPU_DEFAULTS``) gives on the GPU ``hw`` (a ``HardwareSpec``):
    {field: value} for the fields of ``RULE_FIELDS``; {} for ``none``."""
    if rule == "sglang":
        return {"max_num_tokens": sglang_tier(hw.device_memory)[0]}
    if rule == "vllm":
        tokens, seqs = vllm_server_limits(hw.device_memory, f"{hw.id} {hw.name}")
        return {"max_num_tokens": tokens, "max_batch_size": seqs}
    return {}


def for_gpu(eng: Any, hw: Any) -> Any:
    """``eng`` (``EngineConstants``) with the limits it leaves at 0 filled for the GPU ``hw`` by
    its ``gpu_defaults`` rule (:func:`gpu_limits`); ``eng`` itself where it leaves none at 0.
    Every place where an engine meets its GPU resolves it so (``specs.engine.load_engine`` with
    a hardware, ``validate``'s groups), and what prices a step reads the limits resolved."""
    unset = {k: v for k, v in gpu_limits(eng.gpu_defaults, hw).items() if getattr(eng, k) == 0}
    return eng.with_overrides(**unset) if unset else eng
