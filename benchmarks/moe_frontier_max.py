"""Frontier maximum throughput of DeepSeek-R1 against the published TensorRT-LLM max-throughput
rows (issue 11): the best aggregated point of the published plan in the frontier search, per
engine, and the frontier's overall maximum.

Published (../shared/groundtruth/serving.csv, source trtllm_perf_devguide, DeepSeek-R1-0528,
trtllm-bench max-throughput offline, ISL/OSL 1024/1024, output tok/s per GPU):
  B200 DEP4 (TP4 EP4 attention-DP, NVFP4 weights, FP8 KV): 6,430
  H200 DEP8 (TP8 EP8 attention-DP, FP8): 1,620. The guide's FP8 model is
  deepseek-ai/DeepSeek-R1-0528, whose weights are 128x128 block-scaled FP8 (its
  quantization_config); the frontier's "fp8" for DeepSeek-R1 is that (fp8+fp8_block-w,
  specs.checkpoint.preset_weights).

Run: python benchmarks/moe_frontier_max.py [--engines default,trtllm,vllm,sglang]
"""

from __future__ import annotations

import argparse

import numpy as np

from llm_codesign import frontier

CASES = (
    # (hardware, precision, tp = ep, published output tok/s/GPU)
    ("b200", "nvfp4", 4, 6430.0),
    ("h200-sxm", "fp8", 8, 1620.0),
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="default,trtllm,vllm,sglang")
    args = ap.parse_args()
    print("| hardware | precision | engine | published plan max | error | frontier max (plan) |")
    print("|---|---|---|---:|---:|---|")
    for hw, prec, tp, published in CASES:
        for engine in args.engines.split(","):
            fr = frontier(
                "deepseek-r1", hw, num_gpus=8, precision=prec, engine=engine, keep_points="all"
            )
            p = fr.points
            thr = np.where(p["feasible"], p["output_tok_s_per_gpu"], -np.inf)
            same = (p["mode"] == 0) & (p["tp"] == tp) & (p["ep"] == tp) & p["attention_dp"]
            same &= p["pp"] == 1
            best = float(np.max(np.where(same, thr, -np.inf)))
            i = int(np.argmax(thr))
            plan = f"tp{p['tp'][i]} ep{p['ep'][i]}" + (" adp" if p["attention_dp"][i] else "")
            print(
                f"| {hw} | {prec} | {engine} | {best:,.0f} | {best / published - 1:+.0%} | "
                f"{thr[i]:,.0f} ({plan}, c={p['concurrency'][i]:.0f}) |"
            )


if __name__ == "__main__":
    main()
