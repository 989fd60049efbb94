"""The FP4 GEMM ceiling of each Blackwell GPU (``efficiency.gemm.nvfp4`` in the hardware files;
``--dtype fp8`` or ``bfloat16`` for those classes) against AIConfigurator's measured GEMM tables
(ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/gemm/<engine>/<version>/gemm_perf.parquet).

Three tables:
1. Each table's NVFP4 GEMM at the reference shape the ceilings are normalized on
   (``cost._REFERENCE_SHAPE``, 8192^3): TFLOP/s and its fraction of the GPU's dense peak.
2. For each GPU and its sibling (B300 against B200, GB300 against GB200), the ratio of the two at
   that shape in the tables of the same engine and version (the median where several tables of
   a release were measured on one GPU), and their median: the fraction the
   GPU's file derives from its sibling's (the sibling's fraction x its peak x the median ratio /
   the GPU's peak), so that both GPUs' ceilings keep the order the same kernels measure.
3. The model's dense GEMM throughput (``advise.gemm.gemm_sweep``, the GEMM explorer: its
   compute and memory terms plus the engine's per-kernel cost) against every row with at least
   ``--min-m`` rows: the median error (predicted / measured - 1) and median |error| per GPU.

The GPU is each row's ``device`` (``validate.match_gpu_name``): a table filed under another
GPU's folder counts for the GPU it was measured on.

Run: python benchmarks/fp4_gemm_report.py FILE_OR_DIR... [--min-m 1024] [--dtype nvfp4]
(parquet files, or folders searched for them; needs pandas and pyarrow)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hbm_fraction_report import COLUMNS, parquet_files  # noqa: E402

from llm_codesign.advise.gemm import gemm_sweep  # noqa: E402
from llm_codesign.cost import _REFERENCE_SHAPE  # noqa: E402
from llm_codesign.specs.hardware import load_hardware  # noqa: E402
from llm_codesign.validate import match_gpu_name  # noqa: E402

# a GPU and the sibling whose measured fraction anchors it (the same die generation, the
# predecessor SKU): the ratio of the same kernels on both carries the sibling's fraction over
SIBLINGS = {"b300": "b200", "gb300": "gb200"}
# a table's gemm_dtype -> the model's dtype (the GEMM explorer's, and the compute class)
DTYPES = {"nvfp4": "nvfp4", "fp8": "fp8", "bfloat16": "bf16"}


def model_tflops(hw_id: str, m: float, n: float, k: float, dtype: str = "nvfp4") -> float:
    """The model's TFLOP/s for one dense GEMM of a table's ``dtype`` (one launch, the default
    engine)."""
    dims = (int(m), int(n), int(k))
    return float(gemm_sweep(hw_id, DTYPES[dtype], *dims, engine="default").tflops[0])


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", help="gemm_perf.parquet files or folders holding them")
    ap.add_argument("--min-m", type=int, default=1024, help="rows of the GEMMs compared (table 3)")
    ap.add_argument(
        "--dtype", default="nvfp4", choices=sorted(DTYPES), help="the tables' gemm_dtype"
    )
    args = ap.parse_args()
    cls = DTYPES[args.dtype]
    ref = tuple(int(x) for x in _REFERENCE_SHAPE)
    # (gpu, engine version) -> TFLOP/s at the shape, one per table measured on that GPU
    at_ref: dict[tuple[str, str], list[float]] = defaultdict(list)
    errors: dict[str, list[float]] = defaultdict(list)
    print(f"| GPU | engine | version | TFLOP/s at {'x'.join(map(str, ref))} | of dense peak |")
    print("|---|---|---|---:|---:|")
    for f in parquet_files(args.paths):
        d = pd.read_parquet(f)
        if not COLUMNS <= set(d.columns) or d.empty:
            continue
        d = d[d["gemm_dtype"] == args.dtype]
        for (device, fw, ver), rows in d.groupby(["device", "framework", "version"]):
            gpu = match_gpu_name(str(device))
            if gpu is None:
                print(f"skipped {f}: no bundled GPU for {device}", file=sys.stderr)
                continue
            peak = load_hardware(gpu).peak_flops(cls)
            hit = rows[(rows.m == ref[0]) & (rows.n == ref[1]) & (rows.k == ref[2])]
            if len(hit):
                tf = 2.0 * ref[0] * ref[1] * ref[2] / (float(hit.latency.median()) * 1e-3) / 1e12
                at_ref[(gpu, f"{fw} {ver}")].append(tf)
                print(f"| {gpu} | {fw} | {ver} | {tf:,.0f} | {tf * 1e12 / peak:.3f} |")
            big = rows[rows.m >= args.min_m].groupby(["m", "n", "k"])["latency"].median()
            for (m, n, k), ms in big.items():
                measured = 2.0 * m * n * k / (ms * 1e-3) / 1e12
                errors[gpu].append(model_tflops(gpu, m, n, k, args.dtype) / measured - 1.0)
    print("\n| GPU | sibling | same-release pairs | ratio median (range) | sibling's fraction | "
          "derived fraction |")  # fmt: skip
    print("|---|---|---:|---|---:|---:|")
    mid = {key: statistics.median(v) for key, v in at_ref.items()}
    for gpu, sib in SIBLINGS.items():
        pairs = [mid[(gpu, r)] / mid[(sib, r)] for g, r in mid if g == gpu and (sib, r) in mid]
        if not pairs:
            continue
        hw, hs = load_hardware(gpu), load_hardware(sib)
        frac = hs.gemm_efficiency_for(cls).value
        derived = frac * hs.peak_flops(cls) / hw.peak_flops(cls) * statistics.median(pairs)
        print(f"| {gpu} | {sib} | {len(pairs)} | {statistics.median(pairs):.3f} "
              f"({min(pairs):.3f}-{max(pairs):.3f}) | {frac:.3f} | {derived:.3f} |")  # fmt: skip
    print(f"\n| GPU | {args.dtype} GEMMs (m >= {args.min_m}) | model's fraction now | "
          "median error | median abs error |")  # fmt: skip
    print("|---|---:|---:|---:|---:|")
    for gpu, e in sorted(errors.items()):
        frac = load_hardware(gpu).gemm_efficiency_for(cls).value
        print(f"| {gpu} | {len(e)} | {frac:.3f} | {statistics.median(e) * 100:+.1f}% | "
              f"{statistics.median(abs(x) for x in e) * 100:.1f}% |")  # fmt: skip


if __name__ == "__main__":
    main()
