"""Context (prefill) attention kernels (issue 11): the cost model's prefill attention rate against
AIConfigurator's measured TensorRT-LLM context-attention tables, by GPU, kernel (MLA, GQA), KV
format and prompt length. Nothing is fitted: stop 65 priced the calibration rows with these
curves and did not keep them (benchmarks/RESULTS.md, "Stop 65"); this prints the gap.

FILEs: ``context_mla_perf.parquet`` and ``context_attention_perf.parquet`` of ai-dynamo/
aiconfigurator (``aic-core/src/aiconfigurator_core/systems/data/<gpu>/{mla,attention}/trtllm/
<version>/``; the GPU, the kernel and the version are read from the path).

Measured rate: causal FLOPs over the timed op (``latency``, ms), MLA b h L^2 (192 + 128) (DeepSeek-
V3's query-key 192 and value 128 dimensions, the heads expanded), GQA 2 b h L^2 d (head dim d 128,
no window); the median over the rows of each length with at least 16 query heads (MLA) or 8
(GQA) and at least 4,096 tokens in the batch. GQA rows of one format only (attention and cache
both FP8, or both BF16).

The model's rate: the compute term of ``cost.attention_time`` for a prefill op of the attention's
class (FP8 with an FP8 cache, else BF16): the engine's ``attn_prefill_efficiency`` x that rate
class's peak, whatever the length.

Run: python benchmarks/context_attention_report.py FILE... [--engine trtllm]
"""

from __future__ import annotations

import argparse
import re
from dataclasses import replace

from mla_decode_report import GPU_DIRS  # (AIConfigurator's GPU folders -> hardware ids)

from llm_codesign import load_engine, load_hardware
from llm_codesign.cost import attention_time
from llm_codesign.ops import Op

LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
MLA_QK, MLA_V = 192, 128  # DeepSeek-V3's expanded query-key and value head dimensions
GQA_HEAD = 128
MIN_BATCH_TOKENS = 4096
PATH = re.compile(
    r"data/([^/]+)/(mla|attention)/([^/]+)/([^/]+)/context_(?:mla|attention)_perf\.parquet$"
)


def measured_rates(path: str) -> tuple[str, str, str, dict[str, dict[int, float]]]:
    """(GPU id, kernel, version, {KV format: {length: FLOP/s}}) of one table."""
    import pandas as pd

    m = PATH.search(path)
    if not m or m.group(1) not in GPU_DIRS:
        raise SystemExit(
            f"{path}: expected .../data/<gpu>/{{mla,attention}}/<framework>/<version>/"
            f"context_{{mla,attention}}_perf.parquet with <gpu> one of {', '.join(GPU_DIRS)}"
        )
    d = pd.read_parquet(path)
    mla = m.group(2) == "mla"
    b, h, n = (d[c].astype(float) for c in ("batch_size", "num_heads", "isl"))
    if mla:
        d = d.assign(flops=b * h * n * n * (MLA_QK + MLA_V), fmt=d["kv_cache_dtype"])
        keep = d["num_heads"] >= 16
    else:
        d = d.assign(flops=2.0 * b * h * n * n * GQA_HEAD, fmt=d["kv_cache_dtype"])
        keep = (
            (d["head_dim"] == GQA_HEAD)
            & (d["window_size"] == 0)
            & (d["num_heads"] >= 8)
            & (d["attn_dtype"] == d["kv_cache_dtype"])
        )
    d = d[keep & (d["batch_size"] * d["isl"] >= MIN_BATCH_TOKENS)]
    d = d.assign(rate=d["flops"] / (d["latency"] * 1e-3))
    out = {
        str(fmt): {int(k): float(v) for k, v in g.groupby("isl")["rate"].median().items()}
        for fmt, g in d.groupby("fmt")
    }
    return GPU_DIRS[m.group(1)], "MLA" if mla else "GQA", m.group(4), out


def model_rate(hw, eng, compute_class: str) -> float:
    """The model's prefill attention rate (FLOP/s): ``cost.attention_time``'s compute term for a
    compute-bound prefill op of that class (the same for any FLOPs)."""
    flops = 1e15
    op = Op("attention_prefill", "attention", "attention", 1.0, 1.0, flops=flops, bytes=0.0)
    op = replace(op, phase="prefill", compute_class=compute_class)
    return flops / float(attention_time(op, hw, eng)[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--engine", default="trtllm")
    args = ap.parse_args()
    eng = load_engine(args.engine)
    head = " | ".join(f"{n // 1024}k" if n >= 1024 else str(n) for n in LENGTHS)
    print(f"| GPU | kernel | version | KV | {head} | model | model / measured, 1k .. 8k |")
    print("|---|---|---|---|" + "---:|" * (len(LENGTHS) + 1) + "---|")
    for path in args.files:
        gpu, kernel, version, rates = measured_rates(path)
        hw = load_hardware(gpu)
        for fmt, by_len in sorted(rates.items()):
            model = model_rate(hw, eng, "fp8" if fmt == "fp8" else "bf16")
            cells = " | ".join(f"{by_len[n] / 1e12:,.0f}" if n in by_len else "" for n in LENGTHS)
            ratios = [model / by_len[n] for n in (1024, 8192) if n in by_len]
            span = " .. ".join(f"{r:.2f}" for r in ratios)
            kv = "FP8" if fmt == "fp8" else "BF16"
            print(
                f"| {gpu} | {kernel} | {version} | {kv} | {cells} | {model / 1e12:,.0f} | {span} |"
            )
    print()
    print(
        f"TFLOPS (causal). The model: {args.engine}'s attn_prefill_efficiency "
        f"{eng.attn_prefill_efficiency} x the rate class's peak, flat in the length."
    )


if __name__ == "__main__":
    main()
