"""MLA decode attention kernels (issue 11): the cost model's decode attention op against published
kernel timings, and the fit that gives the GPU files their ``efficiency.attention_decode`` terms.

Default: prices the shipped table (src/llm_codesign/data/validation/mla_decode.csv: rows copied
from AIConfigurator's MLA generation tables) through ``validate`` and prints the error per GPU,
engine and KV format.

--parquet FILE...: fits, per file and KV format, the four terms of a GPU file's decode kernel to
the full published grid (AIConfigurator's ``generation_mla_perf.parquet``, ai-dynamo/aiconfigurator
@ 095f58a51c4ca8e61b66ec108d86f223f8d559ce, ``aic-core/src/aiconfigurator_core/systems/data/
<gpu>/mla/<framework>/<version>/``; the GPU is read from the path): 16-128 query heads of
DeepSeek-V3's 128 (heads x tp = 128), batch 8-1,024, context 256-32,768 tokens.
  time = max(FLOPs / (peak x value), latent bytes / (HBM x hbm))
         + per_call_s + per_query_head_s x batch x heads
FLOPs = 2 x batch x context x heads x (576 + 512); latent bytes = batch x context x 576 x KV
bytes; peak is the GPU file's FP8 peak for an FP8 cache (FP8 attention), else BF16's. For each
(value, hbm) on a grid (steps 0.005 and 0.01) the two times follow by non-negative least squares
on the relative error; the pair with the least squared relative error is kept.

--table GPU [GPU ...]: the same fit over the shipped table's rows of those GPUs (the AMD
files' terms: AITER's measured MLA decode kernels, ROCm/aiter PRs #2039 and #3072; FP8 Q and
KV, 128 query heads; batch 8 or more, as the AIConfigurator grid). Their rows are compute-bound
(128 query heads per latent KV) and do not measure the HBM fraction: the fit leaves the latent
stream at the datasheet (never binding), and the GPU file leaves ``hbm`` unset (the engine's
decode fraction).

Run: python benchmarks/mla_decode_report.py [--parquet FILE ... | --table GPU ...]
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import defaultdict

import numpy as np

from llm_codesign import load_hardware, validate
from llm_codesign.validate import bundled_data

GPU_DIRS = {
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "gb300": "gb300",
}
KV_LATENT, V_LATENT = 576, 512  # DeepSeek-V3: kv_lora_rank 512 + rope 64; values in the latent


def report_table() -> None:
    rep = validate(bundled_data("mla_decode.csv"))
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rep.rows:
        groups[(r["gpu"], r["engine"], r["precision"])].append(r["error"])
    print("| gpu | engine | KV | rows | median abs err | bias | max abs err |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (gpu, eng, kv), errs in sorted(groups.items()):
        med = statistics.median(abs(e) for e in errs)
        bias = statistics.median(errs)
        worst = max(abs(e) for e in errs)
        print(f"| {gpu} | {eng} | {kv[3:]} | {len(errs)} | {med:.1%} | {bias:+.1%} | {worst:.0%} |")


def fit(
    flops: np.ndarray,
    nbytes: np.ndarray,
    qh: np.ndarray,
    y: np.ndarray,
    peak: float,
    bw: float,
    hbm_grid: np.ndarray | None = None,
):
    """(value, hbm, per_call_s, per_query_head_s, relative errors) of the least-squares fit
    (``hbm_grid``: the HBM fractions tried; default 0.05 .. 1 in steps of 0.01)."""
    best = None
    feats = np.stack([np.ones_like(y), qh], axis=1) / y[:, None]
    grid = np.arange(0.05, 1.0001, 0.01) if hbm_grid is None else hbm_grid
    for value in np.arange(0.05, 1.0001, 0.005):
        compute = flops / (peak * value)
        for hbm in grid:
            base = np.maximum(compute, nbytes / (bw * hbm))
            rest = (y - base) / y
            coef, *_ = np.linalg.lstsq(feats, rest, rcond=None)
            coef = np.maximum(coef, 0.0)
            err = (base + coef[0] + coef[1] * qh) / y - 1.0
            sse = float(np.sum(err * err))
            if best is None or sse < best[0]:
                best = (sse, value, hbm, coef[0], coef[1], err)
    assert best is not None
    return best[1:]


def fit_parquet(path: str) -> None:
    import pandas as pd

    m = re.search(r"data/([^/]+)/mla/([^/]+)/([^/]+)/generation_mla_perf\.parquet$", path)
    if not m or m.group(1) not in GPU_DIRS:
        raise SystemExit(
            f"{path}: expected .../data/<gpu>/mla/<framework>/<version>/"
            f"generation_mla_perf.parquet with <gpu> one of {', '.join(GPU_DIRS)}"
        )
    hw = load_hardware(GPU_DIRS[m.group(1)])
    d = pd.read_parquet(path)
    d = d.assign(ctx=d["isl"] + d["step"])
    keep = (
        (d["num_heads"] * d["tp_size"] == 128)
        & d["num_heads"].isin([16, 32, 64, 128])
        & (d["batch_size"] >= 8)
        & (d["ctx"] >= 256)
        & (d["ctx"] <= 32768)
    )
    for kv, g in d[keep].groupby("kv_cache_dtype"):
        fp8 = kv == "fp8"
        peak = hw.peak_flops("fp8" if fp8 else "bf16")
        b, ctx, h = (g[c].to_numpy(float) for c in ("batch_size", "ctx", "num_heads"))
        flops = 2.0 * b * ctx * h * (KV_LATENT + V_LATENT)
        nbytes = b * ctx * KV_LATENT * (1.0 if fp8 else 2.0)
        value, hbm, call, qhead, err = fit(
            flops, nbytes, b * h, g["latency"].to_numpy(float) * 1e-3, peak, hw.hbm_bytes_per_s
        )
        print(
            f"{hw.id} {m.group(2)} {m.group(3)} KV {kv}: {len(g)} points; value {value:.3f} "
            f"({value * peak / 1e12:.0f} TFLOPS), hbm {hbm:.2f} "
            f"({hbm * hw.hbm_bytes_per_s / 1e12:.2f} TB/s), per_query_head_s {qhead * 1e9:.2f}e-9, "
            f"per_call_s {call * 1e6:.1f}e-6; median |error| {np.median(np.abs(err)):.1%}, "
            f"p90 {np.quantile(np.abs(err), 0.9):.1%}"
        )


def fit_table(gpus: list[str]) -> None:
    import csv

    from llm_codesign.validate import match_gpu_name

    with bundled_data("mla_decode.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for name in gpus:
        hw = load_hardware(name)
        for kv in ("bf16", "fp8"):
            g = [
                r for r in rows
                if match_gpu_name(r["gpu"]) == hw.id and r["kv_cache_dtype"] == kv
                and int(r["batch"]) >= 8
            ]  # fmt: skip
            if not g:
                continue
            fp8 = kv == "fp8"
            peak = hw.peak_flops("fp8" if fp8 else "bf16")
            b, ctx, h = (
                np.array([float(r[c]) for r in g]) for c in ("batch", "context", "num_heads")
            )
            flops = 2.0 * b * ctx * h * (KV_LATENT + V_LATENT)
            nbytes = b * ctx * KV_LATENT * (1.0 if fp8 else 2.0)
            y = np.array([float(r["time_us"]) for r in g]) * 1e-6
            # 128 query heads per latent KV: compute-bound rows, which do not measure the HBM
            # fraction (the fit keeps the latent stream at the datasheet: never binding)
            value, _, call, qhead, err = fit(
                flops, nbytes, b * h, y, peak, hw.hbm_bytes_per_s, np.array([1.0])
            )
            print(
                f"{hw.id} table KV {kv}: {len(g)} points; value {value:.3f} "
                f"({value * peak / 1e12:.0f} TFLOPS), per_query_head_s "
                f"{qhead * 1e9:.2f}e-9, per_call_s {call * 1e6:.1f}e-6; median |error| "
                f"{np.median(np.abs(err)):.1%}, p90 {np.quantile(np.abs(err), 0.9):.1%}"
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parquet", nargs="*", default=None)
    ap.add_argument("--table", nargs="*", default=None, help="fit the shipped rows of GPUs")
    args = ap.parse_args()
    if args.table:
        fit_table(args.table)
    elif args.parquet:
        for p in args.parquet:
            fit_parquet(p)
    else:
        report_table()


if __name__ == "__main__":
    main()
