"""NCCL's all-gather and reduce-scatter inside an NVLink domain against AIConfigurator's
nccl-tests tables, and the fit of ``comm.NCCL_GATHER`` (issue 11: the attention-DP MoE gather).

Each FILE is an AIConfigurator ``nccl_perf.parquet`` (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/comm/nccl/<version>/; its collector,
collector/network/collect_nccl.py, runs nccl-tests' all_gather_perf / reduce_scatter_perf and
keeps the out-of-place time; columns op_name, nccl_dtype half or int8, num_gpus, message_size in
elements of the whole gathered buffer, latency in ms). Extract them with
``git show HEAD:<path> > FILE`` from a fetched snapshot; a FILE's GPU is read from its name
(an AIConfigurator GPU folder: ``mla_decode_report.GPU_DIRS``). Needs pandas and pyarrow.

It prints:
- per link generation (the hardware file's scale-up technology), the least-squares fit of
  time = base + (n - 1) hop + (n - 1) / n S / (fraction x the per-direction link) on the relative
  error, over messages of 64 KiB to 64 MiB (S bytes, n GPUs): the constants of NCCL_GATHER;
- the model's error (``comm.collective_time`` with the shipped constants) by GPU and group size.

Run: python benchmarks/nccl_gather_report.py FILE...
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict

import numpy as np
from mla_decode_report import GPU_DIRS  # (AIConfigurator's GPU folders -> hardware ids)

from llm_codesign import load_engine, load_hardware
from llm_codesign.comm import collective_time

OPS = {"all_gather": "allgather", "reduce_scatter": "reducescatter"}
SIZES = (64 * 2**10, 64 * 2**20)  # the messages fitted and reported, bytes


def _points(files: list[str]) -> list[tuple[str, str, str, int, float, float]]:
    """(GPU id, link generation, op, GPUs, bytes, seconds) of every table row in ``SIZES``."""
    import pandas as pd

    out = []
    for path in files:
        gpu = next((g for g in GPU_DIRS if re.search(g, path)), None)
        if gpu is None:
            raise SystemExit(f"{path}: no GPU of {sorted(GPU_DIRS)} in the path")
        hw = load_hardware(GPU_DIRS[gpu])
        d = pd.read_parquet(path)
        for (op, n, dtype), x in d.groupby(["op_name", "num_gpus", "nccl_dtype"]):
            if op not in OPS or not 2 <= n <= hw.scaleup_domain_size:
                continue
            x = x.groupby("message_size").latency.min()  # the fastest of repeated rows
            size = x.index.to_numpy(float) * (2.0 if dtype == "half" else 1.0)
            for s, t in zip(size, x.to_numpy() * 1e-3, strict=True):
                if SIZES[0] <= s <= SIZES[1]:
                    out.append((hw.id, hw.scaleup_technology, OPS[op], int(n), float(s), float(t)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    pts = _points(args.files)
    print("| link | points | base (us) | hop (us) | fraction of the link | median abs err |")
    print("|---|---:|---:|---:|---:|---:|")
    for tech in sorted({p[1] for p in pts}):
        sel = [p for p in pts if p[1] == tech]
        n = np.array([p[3] for p in sel], dtype=float)
        s = np.array([p[4] for p in sel])
        t = np.array([p[5] for p in sel])
        link = np.array([load_hardware(p[0]).scaleup_bytes_per_s for p in sel])
        a = np.vstack([np.ones_like(n), n - 1.0, (n - 1.0) / n * s / link]).T
        coef, *_ = np.linalg.lstsq(a / t[:, None], np.ones_like(t), rcond=None)
        err = a @ coef / t - 1.0
        print(
            f"| {tech} | {len(t)} | {coef[0] * 1e6:.2f} | {coef[1] * 1e6:.2f} | "
            f"{1.0 / coef[2]:.3f} | {np.median(np.abs(err)) * 100:.1f}% |"
        )
    eng = load_engine("trtllm")
    errs: dict[tuple[str, int], list[float]] = defaultdict(list)
    for gpu, _, op, n, s, t in pts:
        hw = load_hardware(gpu)
        errs[(gpu, n)].append(float(collective_time(op, s, float(n), hw, eng)) / t - 1.0)
    print("\n| GPU | GPUs | points | model median abs err | bias |")
    print("|---|---:|---:|---:|---:|")
    for (gpu, n), e in sorted(errs.items()):
        print(
            f"| {gpu} | {n} | {len(e)} | {np.median(np.abs(e)) * 100:.1f}% | "
            f"{np.median(e) * 100:+.1f}% |"
        )


if __name__ == "__main__":
    main()
