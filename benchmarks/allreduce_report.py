"""The all-reduce cost (``comm.collective_time``) against AIConfigurator's measured all-reduce
tables, and the fit of ``comm.ALLREDUCE_LARGE_LATENCY_S`` (issue 11).

Each FILE is an AIConfigurator ``custom_allreduce_perf.parquet`` (ai-dynamo/aiconfigurator
@095f58a, aic-core/src/aiconfigurator_core/systems/data/<gpu>/comm/<framework>/<version>/; columns
num_gpus, message_size in BF16 elements, latency in ms). Extract them with
``git show HEAD:<path> > FILE`` from a fetched snapshot. Needs pandas and pyarrow.

For each table and group size it prints:
- the latency of the bandwidth-optimal algorithm implied over 2-32 MB messages (the time less the
  wire bytes at the hardware file's all-reduce bandwidth), whose median over every table and
  group is the constant;
- the median signed error of the model by message-size band, with the engine named on the
  command line (its ``allreduce_latency_s`` prices the one-shot kernel).

Run: python benchmarks/allreduce_report.py --engine trtllm FILE... (a FILE's GPU is read from its
path: h100_sxm, h200_sxm, b200_sxm, ...)
"""

from __future__ import annotations

import argparse
import re

import numpy as np

from llm_codesign import load_engine, load_hardware
from llm_codesign.comm import collective_time, scaleup_bytes_per_s

GPUS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200", "b300_sxm": "b300"}
BANDS = ((0, 256 * 2**10), (256 * 2**10, 2 * 2**20), (2 * 2**20, 32 * 2**20), (32 * 2**20, 2**40))


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--engine", default="trtllm")
    args = ap.parse_args()
    eng = load_engine(args.engine)
    implied: list[float] = []
    for path in args.files:
        gpu = next((g for g in GPUS if re.search(g, path)), None)
        if gpu is None:
            raise SystemExit(f"{path}: no GPU of {sorted(GPUS)} in the path")
        hw = load_hardware(GPUS[gpu])
        bw = scaleup_bytes_per_s(hw, eng)
        d = pd.read_parquet(path)
        for n in sorted(d.num_gpus.unique()):
            # the fastest implementation measured at each size (tables may list two)
            x = d[d.num_gpus == n].groupby("message_size").latency.min()
            size = x.index.to_numpy(float) * 2.0
            t = x.to_numpy() * 1e-3
            mid = (size >= 2 * 2**20) & (size <= 32 * 2**20)
            wire = 2.0 * (n - 1) / n * size
            a = t[mid] - wire[mid] / bw
            if n > 2 and a.size:
                implied.append(float(np.median(a)))
            pred = collective_time("allreduce", size, np.full(size.shape, float(n)), hw, eng)
            err = pred / t - 1.0
            bands = " ".join(
                f"{lo / 2**20:g}-{hi / 2**20:g}MB {np.median(err[(size >= lo) & (size < hi)]):+.0%}"
                for lo, hi in BANDS
                if np.any((size >= lo) & (size < hi))
            )
            lat = f"{np.median(a) * 1e6:.1f} us" if n > 2 and a.size else "-"
            table = "/".join(path.split("/")[-3:-1])
            print(f"{table} n={n}: large-message latency {lat}; error {bands}")
    if implied:
        print(f"median over {len(implied)} tables x groups: {np.median(implied) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
