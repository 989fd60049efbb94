"""The batch sizes a serving runtime captures its decode step at as CUDA graphs, and the batch
a decode-only step therefore runs: the engine replays the graph of the smallest captured size
that holds the step's sequences, the rows beyond them dummy requests (``enable_padding``). A
step above the largest captured size runs without a graph, unpadded. Steps that carry prompt
tokens run without a graph in TensorRT-LLM (its graphs are generation-only) and are not padded
here for any engine. Under attention-DP every rank replays the same size, the busiest rank's.
The dummy rows are one persistent dummy generation request repeated (TensorRT-LLM's
``CUDAGraphRunner``, ``padding_dummy_request``): they run the dense GEMMs, the collectives and the
LM head like tokens, with no context to attend to, and being alike they route to the same few
experts rather than spreading over them, so the routed experts are priced on the real tokens
(``serving.step.graph_padded``, ``ops.StepShape.pad_seqs``).

``EngineConstants.cuda_graph_batches`` names the rule, or lists the sizes:

* ``trtllm``: TensorRT-LLM's sizes with padding on, since NVIDIA/TensorRT-LLM PR #12895
  (merged 2026-04-09, "Use +64 batch sizes for padding-enabled CUDA graphs";
  ``CudaGraphConfig._generate_cuda_graph_batch_sizes``): 1, 2, 4, then 8 to 128 by 8, then +64
  while at most ``max_batch_size``, and ``max_batch_size`` itself. The PR measured the padding
  the coarser set wastes: +64 sizes gave up to 1.3x the output throughput aggregated and 1.5x
  disaggregated at high concurrency (DeepSeek-R1, V3.2, Kimi K2, Qwen3; tech blog 20: 4 x GB200,
  TP 4, 500/2000); the dummy rows as priced here give at most 1.05x on its DeepSeek-R1
  deployment (benchmarks/cuda_graph_report.py: the engine's cost more, not traced);
* ``trtllm-pow2``: the same before that PR: 1, 2, 4, 8 to 128 by 8, the powers of two from 256
  below ``max_batch_size``, and ``max_batch_size``;
* ``vllm``: vLLM's default capture sizes (``_set_cudagraph_sizes``; reference/moe-comm.md 4):
  1, 2, 4, 8 to 248 by 8, then 256 by 16 up to min(2 x ``max_batch_size``, 512);
* ``sglang``: SGLang's (``ServerArgs._generate_cuda_graph_batch_sizes``, the stored version of
  search-index file id 271536807): 1, 2, 4, 8, 12, 16 to 256 by 8, 272 to 496 by 16, then 512 by
  32 up to its ``cuda_graph_max_bs`` for the GPU and TP (``gpu_defaults.sglang_tier``); its finer
  set under speculative decoding is not distinguished;
* ``none``: no padding (an engine run without CUDA graphs, or an analysis of the batch as is);
* a comma-separated list of sizes, as a launch's ``cuda_graph_config.batch_sizes`` states them.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import SpecError
from .gpu_defaults import sglang_tier

GRAPH_RULES = ("none", "trtllm", "trtllm-pow2", "vllm", "sglang")
VLLM_MAX_CAPTURE = 512  # vLLM's cap on its largest capture size (reference/moe-comm.md 4)
_LIST = re.compile(r"^\s*\d+(\s*,\s*\d+)*\s*$")


def check_graph_batches(text: str, where: str) -> None:
    """Raise a ``SpecError`` naming the allowed values unless ``text`` is a rule of
    ``GRAPH_RULES`` or a comma-separated list of positive batch sizes."""
    if text in GRAPH_RULES:
        return
    if not _LIST.match(text) or min(int(x) for x in text.split(",")) < 1:
        raise SpecError(
            f"{where}: cuda_graph_batches={text!r} is not a known CUDA-graph batch rule; "
            f"allowed: {', '.join(GRAPH_RULES)}, or a comma-separated list of positive sizes "
            "(e.g. '1,2,4,8,16,32,64,128,256')"
        )


def graph_sizes(eng: Any, hw: Any, tp: int, top: int | None = None) -> np.ndarray:
    """The sorted batch sizes ``eng`` (``EngineConstants``, its limits filled for the GPU)
    captures on ``hw`` (``HardwareSpec``) at tensor parallelism ``tp``; empty for ``none``.
    ``top``: the largest size a launch states (TensorRT-LLM's ``cuda_graph_config.max_batch_size``,
    SGLang's ``--cuda-graph-max-bs``) in place of the rule's own.

    Examples (TensorRT-LLM, ``max_batch_size`` 300):
        >>> from llm_codesign import load_engine
        >>> e = load_engine("trtllm").with_overrides(max_batch_size=300)
        >>> graph_sizes(e, None, 8)[-4:].tolist()
        [128.0, 192.0, 256.0, 300.0]
        >>> graph_sizes(e.with_overrides(cuda_graph_batches="trtllm-pow2"), None, 8)[-3:].tolist()
        [128.0, 256.0, 300.0]
    """
    rule, stated = eng.cuda_graph_batches, top
    top = int(eng.max_batch_size) if stated is None else int(stated)
    small = [1, 2, 4] + list(range(8, 129, 8))
    if rule == "none":
        return np.zeros(0)
    if rule == "trtllm":
        sizes = small + list(range(192, top + 1, 64))
    elif rule == "trtllm-pow2":
        sizes = small + [2**i for i in range(8, int(np.ceil(np.log2(max(top, 2)))))]
    elif rule == "vllm":
        top = min(2 * top, VLLM_MAX_CAPTURE) if stated is None else top
        sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, top + 1, 16))
    elif rule == "sglang":
        _, below_tp4, from_tp4 = sglang_tier(hw.device_memory)
        top = (below_tp4 if tp < 4 else from_tp4) if stated is None else top
        sizes = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 512, 16))
        sizes += list(range(512, top + 1, 32))
    else:  # a stated list
        return np.unique(np.array([float(x) for x in rule.split(",")]))
    sizes = [s for s in sizes if s <= top]
    if rule.startswith("trtllm") and top not in sizes:  # (its max_batch_size joins the list)
        sizes.append(top)
    return np.unique(np.array(sizes, dtype=float))


def executor_sizes(sizes: Any, max_batch: int) -> str:
    """A listed set of capture sizes as TensorRT-LLM's executor runs it, comma-joined: those at
    most its ``max_batch_size``, and ``max_batch_size`` itself (NVIDIA/TensorRT-LLM PR #4843).

    Example:
        >>> executor_sizes(["1", "4", "64", "256"], 128)
        '1,4,64,128'
    """
    return ",".join(map(str, sorted({int(s) for s in sizes if int(s) <= max_batch} | {max_batch})))


def graph_batch(sizes: np.ndarray, per_rank: Any) -> np.ndarray:
    """The batch a rank's decode-only step of ``per_rank`` sequences (a mean: whole sequences
    above it) runs at: the smallest of ``sizes`` holding them; ``per_rank`` itself below one
    sequence, above the largest size, or without sizes (elementwise).

    Example: sizes 1, 2, 4, 8, 16 -> 5 sequences run at 8, 3.2 at 4, 20 unpadded.
        >>> graph_batch(np.array([1.0, 2, 4, 8, 16]), [5.0, 3.2, 20.0]).tolist()
        [8.0, 4.0, 20.0]
    """
    b = np.asarray(per_rank, dtype=float)
    if sizes.size == 0:
        return b
    need = np.ceil(b - 1e-9)
    i = np.searchsorted(sizes, need)
    padded = sizes[np.minimum(i, sizes.size - 1)]
    return np.where((b >= 1.0) & (i < sizes.size), padded, b)
