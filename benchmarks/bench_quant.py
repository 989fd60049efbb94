"""Quantization speed on one core: an 8192 x 8192 BF16 weight to NVFP4, MXFP4, FP8 and INT4.

Usage:
    .venv/bin/python benchmarks/bench_quant.py [--size 8192] [--repeat 3] [--write-results]

Thread pools are limited to one thread through the environment before numpy is imported, and
the process is pinned to one CPU where the OS allows. Each format is timed cold (first call,
page faults of fresh buffers included) and warm (best of ``--repeat``). ``--write-results``
replaces the "Quantization (issue 6)" section of benchmarks/RESULTS.md, keeping the others.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

# numpy sizes its thread pools when first imported: these imports follow the setting above
import ml_dtypes  # noqa: E402 - after the thread-count environment is set
import numpy as np  # noqa: E402 - after the thread-count environment is set

from llm_codesign.quant import pack, quantize  # noqa: E402 - imports numpy

FORMATS = ["nvfp4", "mxfp4", "fp8", "int4_g128", "int4_g128_sym", "fp8_block", "mxfp8", "int8"]
HEADING = "## Quantization (issue 6)"


def bench(size: int, repeat: int) -> list[dict[str, float | str]]:
    rng = np.random.default_rng(0)
    x = (rng.standard_t(5.0, size=(size, size)).astype(np.float32) * 0.02).astype(
        ml_dtypes.bfloat16
    )
    rows = []
    for fid in FORMATS:
        t = time.perf_counter()
        q = quantize(x, fid)
        cold = time.perf_counter() - t
        warm = []
        for _ in range(repeat):
            t = time.perf_counter()
            q = quantize(x, fid)
            warm.append(time.perf_counter() - t)
        t = time.perf_counter()
        blob = pack(q)
        pack_s = time.perf_counter() - t
        rows.append(
            {
                "format": fid,
                "cold_s": cold,
                "warm_s": min(warm),
                "pack_s": pack_s,
                "bytes": len(blob),
            }
        )
        del q, blob
    return rows


def table(rows: list[dict[str, float | str]]) -> str:
    lines = [
        "| format | quantize, cold (s) | quantize, warm best (s) | pack (s) | packed MB |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['format']} | {r['cold_s']:.3f} | {r['warm_s']:.3f} | {r['pack_s']:.3f} | "
            f"{float(r['bytes']) / 1e6:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        pinned = "pinned to one CPU"
    except (AttributeError, OSError):
        pinned = "not pinned"
    rows = bench(args.size, args.repeat)
    body = table(rows)
    print(body)
    if args.write_results:
        nvfp4 = next(r for r in rows if r["format"] == "nvfp4")
        today = datetime.date.today().isoformat()
        section = (
            f"{HEADING}\n\n"
            f"Command: `.venv/bin/python benchmarks/bench_quant.py --write-results` "
            f"({today}; {platform.processor() or platform.machine()}, numpy {np.__version__}, "
            f"ml_dtypes {ml_dtypes.__version__}, 1 thread, {pinned}).\n"
            f"Input: {args.size} x {args.size} BF16 Student-t (nu = 5) weights. Cold = first "
            f"call (fresh buffers page-fault), warm = best of {args.repeat}. Pack = "
            f"`pack(q)` to the registry-sized byte layout.\n\n{body}\n\n"
            f'Goal "NVFP4 of an 8192 x 8192 BF16 matrix well under a second on one core": '
            f"{nvfp4['warm_s']:.2f} s warm, {nvfp4['cold_s']:.2f} s cold.\n"
        )
        path = Path(__file__).with_name("RESULTS.md")
        text = path.read_text() if path.exists() else "# Benchmark results\n"
        pattern = re.compile(rf"^{re.escape(HEADING)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
        if pattern.search(text):
            text = pattern.sub(lambda _: section + "\n", text)
        else:
            text = text.rstrip("\n") + "\n\n" + section
        path.write_text(text)


if __name__ == "__main__":
    main()
