"""The public quant API: a sorted, pinned __all__, and no torch at import time."""

from __future__ import annotations

import subprocess
import sys

from llm_codesign import quant


def test_all_is_sorted_and_pinned():
    assert quant.__all__ == sorted(quant.__all__)
    assert set(quant.__all__) == {
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
    }
    for name in quant.__all__:
        assert hasattr(quant, name)


def test_import_does_not_pull_torch():
    code = "import sys, llm_codesign.quant, llm_codesign.cli.quant; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
