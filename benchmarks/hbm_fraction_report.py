"""The HBM bandwidth streaming kernels achieve on each GPU (``efficiency.hbm`` in the hardware
files), fitted from AIConfigurator's measured GEMM tables (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/gemm/<engine>/<version>/gemm_perf.parquet).

Each table's BF16 GEMMs with at most 4 rows and at least 32 MiB of weights are weight streams:
``calibrate.streaming.streaming_fit`` fits t = t0 + bytes / B over them (bytes: weights,
activations in and out; kernels faster than the datasheet are measurement errors and are left
out). The table prints each table's B / datasheet and t0, and per GPU the median over its tables
(the value the hardware file takes) with their range. The GPU is each row's ``device``
(``validate.match_gpu_name``), so a table filed under another GPU's folder counts for the GPU it
was measured on; tables or rows of GPUs without a bundled file, or without the columns a GEMM
table has, are named and skipped.

Run: python benchmarks/hbm_fraction_report.py FILE_OR_DIR... (parquet files, or folders
searched for GEMM tables; needs pandas and pyarrow)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from llm_codesign.calibrate.streaming import streaming_fit
from llm_codesign.errors import SpecError
from llm_codesign.specs.hardware import load_hardware
from llm_codesign.validate import match_gpu_name

MAX_ROWS = 4  # GEMMs with at most this many rows stream their weights
MIN_WEIGHT_BYTES = 32 * 2**20  # large enough that the fixed latency is a minor part
COLUMNS = {"framework", "version", "device", "gemm_dtype", "m", "n", "k", "latency"}


def parquet_files(paths: list[str]) -> list[Path]:
    """The parquet files named, and those under the folders named."""
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.parquet")) if p.is_dir() else [p])
    return out


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", help="gemm_perf.parquet files or folders holding them")
    args = ap.parse_args()
    per_gpu: dict[str, list[float]] = defaultdict(list)
    print("| GPU | engine | version | kernels (dropped) | B / datasheet | t0 us |")
    print("|---|---|---|---:|---:|---:|")
    for f in parquet_files(args.paths):
        d = pd.read_parquet(f)
        if not COLUMNS <= set(d.columns) or d.empty:
            missing = ", ".join(sorted(COLUMNS - set(d.columns))) or "no rows"
            print(f"skipped {f}: not a GEMM table ({missing})", file=sys.stderr)
            continue
        for device, rows in d.groupby("device"):
            gpu = match_gpu_name(str(device))
            if gpu is None:
                print(f"skipped {f}: device {device!r} is not a bundled GPU", file=sys.stderr)
                continue
            x = rows[(rows.gemm_dtype == "bfloat16") & (rows.m <= MAX_ROWS)]
            x = x[x.n * x.k * 2.0 >= MIN_WEIGHT_BYTES]
            nbytes = (x.n * x.k + x.m * x.k + x.m * x.n) * 2.0
            peak = load_hardware(gpu).hbm_bytes_per_s
            try:
                fit = streaming_fit(nbytes.to_numpy(), x.latency.to_numpy() * 1e-3, peak)
            except SpecError as e:
                print(f"skipped {f}, {device}: {e}", file=sys.stderr)
                continue
            per_gpu[gpu].append(fit.fraction)
            fw, ver = str(rows.framework.iloc[0]).lower(), str(rows.version.iloc[0])
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
