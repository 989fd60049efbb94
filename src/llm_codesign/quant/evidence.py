"""Published accuracy of low-precision formats, and per-format evidence for frontier/advisor.

``PUBLISHED_ACCURACY`` transcribes ``reference/formats.md`` section 5; source tags ``[Fx]``
resolve in that file's section 6. Scores are benchmark points (percent accuracy); a delta is
``quantized - baseline``. Rows without numbers carry the published claim verbatim in
``claim``. Nothing here is estimated.

Example:
    >>> accuracy_evidence("nvfp4")["published"][0]["model"]
    'DeepSeek-R1'
"""

from __future__ import annotations

from typing import Any

from .numerics import resolve_format

_REF = "reference/formats.md s5"


def _scores(baseline: dict[str, float], quantized: dict[str, float]) -> dict[str, Any]:
    deltas = {k: round(quantized[k] - baseline[k], 4) for k in baseline}
    return {"baseline_scores": baseline, "quantized_scores": quantized, "deltas": deltas}


def _row(
    model: str,
    baseline: str,
    fmt: str,
    setting: str,
    source: str,
    *,
    baseline_scores: dict[str, float] | None = None,
    quantized_scores: dict[str, float] | None = None,
    claim: str = "",
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "model": model,
        "baseline": baseline,
        "format": fmt,
        "setting": setting,
        "baseline_scores": {},
        "quantized_scores": {},
        "deltas": {},
        "claim": claim,
        "source": f"{_REF} {source}",
    }
    if baseline_scores is not None and quantized_scores is not None:
        row.update(_scores(baseline_scores, quantized_scores))
    return row


PUBLISHED_ACCURACY: list[dict[str, Any]] = [
    _row(
        "DeepSeek-R1",
        "fp8",
        "nvfp4",
        "PTQ, ModelOpt v0.23.0, TRT-LLM on B200 (nvidia/DeepSeek-R1-FP4)",
        "[F26]",
        baseline_scores={
            "MMLU": 90.8,
            "GSM8K": 96.3,
            "AIME2024": 80.0,
            "GPQA-Diamond": 69.7,
            "MATH-500": 95.4,
        },
        quantized_scores={
            "MMLU": 90.7,
            "GSM8K": 96.1,
            "AIME2024": 80.0,
            "GPQA-Diamond": 69.2,
            "MATH-500": 94.2,
        },
    ),
    _row(
        "DeepSeek-R1",
        "fp8",
        "nvfp4",
        "same model card, earlier revision (removed later)",
        "[F26] commit b39d549",
        baseline_scores={"MMLU": 90.8},
        quantized_scores={"MMLU": 86.9},
    ),
    _row(
        "DeepSeek-R1",
        "fp8",
        "nvfp4",
        "co-design blog Fig. 7, 7 benchmarks",
        "[F25]",
        claim="within about one point on most benchmarks and matching or exceeding FP8 on "
        "SciCode, Math-500, and AIME 2024",
    ),
    _row(
        "DeepSeek-R1, Llama 3 (per summaries)",
        "fp8",
        "nvfp4",
        "NVIDIA blog, June 2025",
        "[F6]",
        claim="less than 1% degradation on key language modeling tasks for some models",
    ),
    _row(
        "12B hybrid Mamba-Transformer",
        "fp8",
        "nvfp4",
        "pretrained 10T tokens in NVFP4 (arXiv 2509.25149), not PTQ",
        "[F12]",
        baseline_scores={"MMLU-Pro 5-shot": 62.62},
        quantized_scores={"MMLU-Pro 5-shot": 62.58},
    ),
    _row(
        "Llama-3.1-8B-Instruct",
        "bf16",
        "nvfp4",
        "W4A4 NVFP4, round-to-nearest (ISTA FP-Quant)",
        "[F27]",
        baseline_scores={
            "MMLU": 72.8,
            "GSM8k": 85.1,
            "HellaSwag": 80.0,
            "Winogrande": 77.9,
            "avg": 78.9,
        },
        quantized_scores={
            "MMLU": 67.0,
            "GSM8k": 77.4,
            "HellaSwag": 77.3,
            "Winogrande": 74.4,
            "avg": 74.0,
        },
    ),
    _row(
        "Llama-3.1-8B-Instruct",
        "bf16",
        "nvfp4",
        "W4A4 NVFP4, QAT (ISTA FP-Quant)",
        "[F27]",
        baseline_scores={
            "MMLU": 72.8,
            "GSM8k": 85.1,
            "HellaSwag": 80.0,
            "Winogrande": 77.9,
            "avg": 78.9,
        },
        quantized_scores={
            "MMLU": 68.9,
            "GSM8k": 81.6,
            "HellaSwag": 79.0,
            "Winogrande": 75.1,
            "avg": 76.1,
        },
    ),
    _row(
        "Nemotron 3 Ultra (550B)",
        "bf16",
        "nvfp4",
        "NVFP4 MoE experts, FP8 elsewhere; 1,121 GB -> 352.3 GB (secondary capture)",
        "[F18]",
        claim="matching BF16 accuracy across nearly every benchmark",
    ),
    _row(
        "DeepSeek-V3",
        "bf16",
        "fp8_block",
        "FP8 training, 128x128 / 1x128 blocks (secondary)",
        "[F29]",
        claim="less than 0.25% accuracy degradation",
    ),
    _row(
        "several LLMs (MR-GPTQ paper, arXiv 2509.23202)",
        "nvfp4",
        "mxfp4",
        "PTQ, RTN and GPTQ",
        "[F30]",
        claim="MXFP4's power-of-two scale quantization severely degrades accuracy due to high "
        "induced error; MR-GPTQ significantly boosts MXFP4, to the point where it nears NVFP4",
    ),
    _row(
        "several LLMs (Huawei PTQ benchmark, arXiv 2601.09555)",
        "bf16",
        "mxfp4",
        "PTQ",
        "[F30]",
        claim="MXFP4 introduces substantial accuracy degradation; the scaling factor of "
        "quantization is a critical error source in MXFP4",
    ),
    _row(
        "several LLMs (Huawei PTQ benchmark, arXiv 2601.09555)",
        "bf16",
        "mxfp8",
        "PTQ",
        "[F30]",
        claim="MXFP8 consistently achieves near-lossless performance",
    ),
    _row(
        "Llama-3.1-8B-Instruct (WUSH, arXiv 2512.00956)",
        "mxfp4 + Hadamard",
        "mxfp4",
        "WUSH transform vs Hadamard baselines",
        "[F30]",
        claim="+2.8 average points with RTN and +0.7 with GPTQ over Hadamard baselines",
    ),
]


def accuracy_evidence(format_id: str, measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """What is known about the accuracy cost of a format, for the frontier and the advisor.

    Args:
        format_id: a format id or alias (``"w4a16"`` -> ``int4_g128``).
        measured: optionally an :func:`~llm_codesign.quant.inspect_checkpoint` result; its
            summary for this format (matched by id or alias) is attached.

    Returns:
        ``{"format", "format_id", "bits_per_element", "bytes_per_element", "published": [rows
        of PUBLISHED_ACCURACY for this format], "measured": summary or None}``. An empty
        ``published`` list means no published result was retrieved, not "lossless".
    """
    fmt = resolve_format(format_id)
    measured_summary = None
    if measured is not None:
        for key, summary in measured.get("summary", {}).items():
            if key == format_id or resolve_format(key).id == fmt.id:
                measured_summary = {
                    k: v for k, v in summary.items() if k not in ("layers", "tensor_details")
                }
                break
    return {
        "format": format_id,
        "format_id": fmt.id,
        "bits_per_element": fmt.bits_per_element,
        "bytes_per_element": fmt.bytes_per_element,
        "published": [dict(r) for r in PUBLISHED_ACCURACY if r["format"] == fmt.id],
        "measured": measured_summary,
    }
