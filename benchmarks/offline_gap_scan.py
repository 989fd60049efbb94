"""Which term would close TensorRT-LLM's max-throughput gap on Hopper MoE (issue 11, a lead).

TensorRT-LLM's offline max-throughput rows (trtllm-bench, the PyTorch backend) of MoE models
are over-predicted on Hopper (median +24%, H100 more than H200) and not on Blackwell, while the
dense rows of the same tables sit near 0 on both. For those rows (``calibrate.fit.load_rows``,
mode offline) this prices each group (dense / MoE x GPU generation x GPU) with one engine
constant scaled at a time, the others as the engine file has them:

* ``memory_utilization``: the KV cache's share of free memory (a smaller KV cache: a smaller
  running batch where the rows are KV-limited, as nearly all of them are);
* ``attn_decode_efficiency``: decode attention's fraction of HBM bandwidth;
* ``gemm_scale``: every GEMM's ceiling;
* ``per_seq_overhead_s``: the host's cost per sequence and step.

It prints each group's median error (predicted / measured - 1) per scale: a term that moves the
Hopper MoE groups to 0 while it leaves the dense and Blackwell groups where they are is the
candidate. Nothing is fitted.

Run: python benchmarks/offline_gap_scan.py [--engine trtllm] [--scales 1,0.8,0.6]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from dataclasses import replace

from engine_by_gpu import FILES, GT

from llm_codesign import load_engine, load_hardware, load_model
from llm_codesign.calibrate.fit import load_rows
from llm_codesign.specs.uncertainty import generation
from llm_codesign.validate import predict_rows

# each constant with the direction that makes a step slower or the batch smaller (x scale)
KNOBS = {
    "memory_utilization": "x",
    "attn_decode_efficiency": "x",
    "gemm_scale": "x",
    "per_seq_overhead_s": "/",
}


def group_of(row) -> tuple[str, str, str]:
    family = "moe" if load_model(row.model).moe is not None else "dense"
    return family, generation(load_hardware(row.hardware)), row.hardware


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="trtllm")
    ap.add_argument("--scales", default="1,0.8,0.6")
    args = ap.parse_args()
    scales = [float(s) for s in args.scales.split(",")]
    base = load_engine(args.engine)
    rows = [
        r
        for r in load_rows([GT / f for f in FILES if (GT / f).exists()], args.engine)
        if r.mode == "offline"
    ]
    groups = defaultdict(list)
    for i, r in enumerate(rows):
        groups[group_of(r)].append(i)
    print(f"{args.engine}: {len(rows)} offline rows; median error per group at each scale")
    for knob, how in KNOBS.items():
        print(
            f"\n{knob} ({'x' if how == 'x' else '/'} scale): " + ", ".join(f"{s:g}" for s in scales)
        )
        print("| family | generation | GPU | rows | " + " | ".join(f"{s:g}" for s in scales) + " |")
        print("|---|---|---|---:|" + "---:|" * len(scales))
        cols = []
        for s in scales:
            v = getattr(base, knob) * (s if how == "x" else 1.0 / s)
            preds, _ = predict_rows(rows, engine_override=replace(base, **{knob: v}))
            cols.append(preds)
        for key in sorted(groups):
            idx = groups[key]
            cells = []
            for preds in cols:
                errs = [preds[i] / rows[i].measured - 1.0 for i in idx if preds[i] == preds[i]]
                cells.append(f"{statistics.median(errs) * 100:+.0f}%" if errs else "-")
            print(f"| {' | '.join(key)} | {len(idx)} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
