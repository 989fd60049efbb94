"""Quantization numerics on real weights: the accuracy axis of the co-design.

Bit-exact FP8 (E4M3/E5M2; per tensor, per channel, 128x128 / 1x128 blocks), MXFP8/MXFP6/MXFP4,
NVFP4, INT8 per channel and INT4 group-128 (AWQ/GPTQ layout) in numpy, with element casts from
``ml_dtypes``; packed sizes equal the bytes per element of :data:`llm_codesign.formats.FORMATS`
(the registry the cost model's precision presets use). On top: streaming safetensors
inspection (SQNR, relative and max error, saturation, memory), perplexity of fake-quantized HF
models (optional extra ``eval``), and the published accuracy deltas the frontier and advisor
show next to throughput.

Example:
    >>> import numpy as np
    >>> q = quantize(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32), "nvfp4")
    >>> len(pack(q)) == packed_nbytes((2, 32), "nvfp4")
    True
"""

from .eval import evaluate_formats, evaluate_model_dir, perplexity  # torch imported lazily
from .evidence import PUBLISHED_ACCURACY, accuracy_evidence
from .inspection import error_stats, inspect_checkpoint, layer_of, parse_formats
from .numerics import (
    ALIASES,
    QuantizedTensor,
    dequantize,
    fake_quantize,
    quant_format_ids,
    quantize,
    resolve_format,
)
from .packing import from_awq, pack, packed_nbytes, to_awq, unpack
from .safetensors_io import (
    TensorInfo,
    list_tensors,
    load_tensor,
    read_header,
    read_safetensors,
    write_safetensors,
)

__all__ = [
    "ALIASES",
    "PUBLISHED_ACCURACY",
    "QuantizedTensor",
    "TensorInfo",
    "accuracy_evidence",
    "dequantize",
    "error_stats",
    "evaluate_formats",
    "evaluate_model_dir",
    "fake_quantize",
    "from_awq",
    "inspect_checkpoint",
    "layer_of",
    "list_tensors",
    "load_tensor",
    "pack",
    "packed_nbytes",
    "parse_formats",
    "perplexity",
    "quant_format_ids",
    "quantize",
    "read_header",
    "read_safetensors",
    "resolve_format",
    "to_awq",
    "unpack",
    "write_safetensors",
]
