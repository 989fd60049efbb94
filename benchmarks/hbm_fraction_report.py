"""The HBM bandwidth streaming kernels achieve on each GPU (``efficiency.hbm`` in the hardware
files), fitted from AIConfigurator's measured GEMM tables (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/gemm/<engine>/<version>/gemm_perf.parquet).

Each table's BF16 GEMMs with at most 4 rows and at least 32 MiB of weights are weight streams:
``calibrate.streaming.streaming_fit`` fits t = t0 + bytes / B over them (bytes: weights,
activations in and out; kernels faster than the datasheet are measurement errors and are left
out). The table prints each table's B / datasheet and t0, and per GPU the median over its tables
(the value the hardware file takes) with their range. The GPU is read from the table's ``device``
column, so a table filed under another GPU's folder counts for the GPU it was measured on.

Run: python benchmarks/hbm_fraction_report.py FILE_OR_DIR... (parquet files, or folders
searched for GEMM tables; needs pandas and pyarrow)
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from llm_codesign.calibrate.streaming import streaming_fit
from llm_codesign.specs.hardware import load_hardware

# AIConfigurator's device names -> bundled GPU ids
DEVICES = {
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA B200": "b200",
    "NVIDIA B300 SXM6 AC": "b300",
    "NVIDIA GB200": "gb200",
    "NVIDIA GB300": "gb300",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA L40S": "l40s",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
}
MAX_ROWS = 4  # GEMMs with at most this many rows stream their weights
MIN_WEIGHT_BYTES = 32 * 2**20  # large enough that the fixed latency is a minor part


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.parquet")) if p.is_dir() else [p])
    return out


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser()
    ap.add_argument(
        "paths",
        nargs="+",
        help="gemm_perf.parquet files or folders holding them (other tables are skipped)",
    )
    args = ap.parse_args()
    per_gpu: dict[str, list[float]] = defaultdict(list)
    print("| GPU | engine | version | kernels (dropped) | B / datasheet | t0 us |")
    print("|---|---|---|---:|---:|---:|")
    for f in _files(args.paths):
        d = pd.read_parquet(f)
        if not {"gemm_dtype", "m", "n", "k", "latency", "device"} <= set(d.columns):
            continue  # not a GEMM table
        device = str(d.device.iloc[0])
        if device not in DEVICES:
            print(f"(skipped {f}: device {device!r} is not a bundled GPU)")
            continue
        gpu = DEVICES[device]
        x = d[(d.gemm_dtype == "bfloat16") & (d.m <= MAX_ROWS)]
        weights = x.n * x.k * 2.0
        x = x[weights >= MIN_WEIGHT_BYTES]
        nbytes = (x.n * x.k + x.m * x.k + x.m * x.n) * 2.0
        fit = streaming_fit(
            nbytes.to_numpy(), x.latency.to_numpy() * 1e-3, load_hardware(gpu).hbm_bytes_per_s
        )
        per_gpu[gpu].append(fit.fraction)
        fw, ver = str(d.framework.iloc[0]).lower(), str(d.version.iloc[0])
        print(
            f"| {gpu} | {fw} | {ver} | {fit.kernels} ({fit.dropped}) | {fit.fraction:.3f} | "
            f"{fit.fixed_s * 1e6:.1f} |"
        )
    print()
    print("| GPU | tables | median B / datasheet | range |")
    print("|---|---:|---:|---|")
    for gpu, fr in sorted(per_gpu.items()):
        print(f"| {gpu} | {len(fr)} | {statistics.median(fr):.3f} | {min(fr):.3f}-{max(fr):.3f} |")


if __name__ == "__main__":
    main()
