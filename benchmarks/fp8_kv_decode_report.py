"""How fast GQA decode attention reads an FP8 KV cache on each GPU, by engine and kernel, from
AIConfigurator's measured decode attention tables (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/attention/<engine>/<version>/generation_attention_perf.parquet).
An analysis the model does not use yet (benchmarks/RESULTS.md, stop 39).

Each table times decode shapes (batch, context, heads, KV heads, head dim) with a BF16 and an
FP8 KV cache. Per kernel of a table, over the GQA shapes (more query heads than KV heads) of head
dim 128 timed with both caches and reading at least 128 Mi cache elements (K and V): the BF16
bytes / time / datasheet, the FP8 elements / time, and the FP8 / BF16 time ratio of the same
shape (medians). On Hopper the FlashAttention kernels read an FP8 cache at about 2e12
elements/s on both H100 and H200, although H200 streams 1.43x the bytes: they are bound by
turning FP8 into the math format, not by HBM. Kernels that move more bytes than the datasheet
allows are left out (measurement errors); tables this cannot read are named on stderr.

Run: python benchmarks/fp8_kv_decode_report.py FILE_OR_DIR... (parquet files, or folders
searched for decode attention tables; needs pandas and pyarrow)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hbm_fraction_report import parquet_files  # noqa: E402

from llm_codesign.specs.hardware import load_hardware  # noqa: E402
from llm_codesign.validate import match_gpu_name  # noqa: E402

MIN_ELEMENTS = 128 * 2**20  # cache elements read per call: large enough to stream
Rates = dict[tuple[str, str, str], list[float]]


def _kernel(gpu: str, fw: str, ver: str, kernel: str, d: Any, rates: Rates) -> None:
    """Print one kernel of one table and record its FP8 rate under (GPU, engine, kernel)."""
    peak = load_hardware(gpu).hbm_bytes_per_s
    d = d.assign(ctx=d.isl + (d.step if "step" in d.columns else 0))
    d = d[(d.head_dim == 128) & (d.num_heads > d.num_key_value_heads)]
    d = d.assign(elements=d.batch_size * d.ctx * d.num_key_value_heads * d.head_dim * 2.0)
    d = d[d.elements >= MIN_ELEMENTS]
    shape = ["batch_size", "ctx", "num_heads", "num_key_value_heads", "elements"]
    dtype = d.kv_cache_dtype.astype(str)
    bf16 = d[dtype == "bfloat16"].groupby(shape).latency.median().rename("bf16")
    fp8 = d[dtype.str.contains("fp8")].groupby(shape).latency.median().rename("fp8")
    pairs = bf16.to_frame().join(fp8, how="inner").reset_index()
    if len(pairs) < 10:
        return
    bf16_frac = float((pairs.elements * 2.0 / (pairs.bf16 * 1e-3)).median() / peak)
    rate = float((pairs.elements / (pairs.fp8 * 1e-3)).median())
    ratio = float((pairs.fp8 / pairs.bf16).median())
    ok = bf16_frac <= 1.0 and rate <= peak
    if ok:
        rates[(gpu, fw, kernel)].append(rate)
    print(
        f"| {gpu} | {fw} | {ver} | {kernel} | {len(pairs)} | {bf16_frac:.3f} | "
        f"{rate / 1e12:.2f}e12{'' if ok else ' (left out: above the datasheet)'} | {ratio:.2f} |"
    )


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", help="generation_attention_perf.parquet files or folders")
    args = ap.parse_args()
    files = parquet_files(args.paths)
    rates: Rates = defaultdict(list)
    print(
        "| GPU | engine | version | kernel | shapes | BF16 fraction | FP8 elements/s "
        "| FP8 / BF16 time |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|")
    need = {"kv_cache_dtype", "batch_size", "isl", "num_key_value_heads", "head_dim", "latency"}
    need |= {"device", "framework", "version", "kernel_source"}
    for f in files:
        d = pd.read_parquet(f)
        if not need <= set(d.columns) or d.empty:
            missing = ", ".join(sorted(need - set(d.columns))) or "no rows"
            print(f"skipped {f}: not a decode attention table ({missing})", file=sys.stderr)
            continue
        for device in d.device.unique():
            if match_gpu_name(str(device)) is None:
                print(f"skipped {f}: device {device!r} is not a bundled GPU", file=sys.stderr)
        for (device, kernel), k in d.groupby(["device", "kernel_source"]):
            gpu = match_gpu_name(str(device))
            if gpu is None:
                continue
            fw, ver = str(k.framework.iloc[0]).lower(), str(k.version.iloc[0])
            _kernel(gpu, fw, ver, str(kernel), k, rates)
    print()
    print("| GPU | engine | kernel | tables | median FP8 elements/s | of datasheet bytes/s |")
    print("|---|---|---|---:|---:|---:|")
    for (gpu, fw, kernel), r in sorted(rates.items()):
        med = statistics.median(r)
        frac = med / load_hardware(gpu).hbm_bytes_per_s
        print(f"| {gpu} | {fw} | {kernel} | {len(r)} | {med / 1e12:.2f}e12 | {frac:.3f} |")


if __name__ == "__main__":
    main()
