"""DeepSeek-R1 at TensorRT-LLM's published best-practice max-throughput configurations (issue 11):
the closed loop priced with each run's own engine limits against the run's output tok/s/GPU.

Published (NVIDIA/TensorRT-LLM
docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md
at 01c4ece, results reproduced at TensorRT-LLM commit b626186; trtllm-bench throughput, ISL/OSL
1k/2k (the BF16-KV and H200 datasets synthetic with zero length spread; the FP8-KV run's dataset
is the user's), TP8 EP8 attention-DP, CUDA graphs):
  B200, NVFP4 with FP8 KV, max_batch_size 896, max_num_tokens 2048, concurrency 7168: 5,393.3
  B200, NVFP4 with BF16 KV, max_batch_size 384, max_num_tokens 1536, concurrency 3072: 4,548.0
  H200, FP8, max_batch_size 128, max_num_tokens 1151, concurrency 1024: 1,436.2
(``Per GPU Output Throughput``; both limits apply per attention-DP rank.)

The three runs are of one TensorRT-LLM commit, so they also check the GPU generation (issue 11:
Hopper-fitted physics must predict Blackwell) with the software held fixed: each B200 run over
the H200 run, measured and predicted (``generation_ratios.py`` does the same over the
calibration tables, whose Hopper and Blackwell rows may be of different releases).

Run: python benchmarks/moe_best_practice.py [--engines trtllm,default]
"""

from __future__ import annotations

import argparse

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.serving import evaluate

RUNS = (
    # (hardware, precision, max_batch_size, max_num_tokens, clients, published tok/s/GPU)
    ("b200", "nvfp4+fp8-kv", 896, 2048, 7168, 5393.3),
    ("b200", "nvfp4+bf16-kv", 384, 1536, 3072, 4548.0),
    ("h200-sxm", "fp8+fp8_block-w", 128, 1151, 1024, 1436.2),  # DeepSeek's block FP8
)
HOPPER = "h200-sxm"  # the run the Blackwell runs are compared with


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="trtllm,default")
    args = ap.parse_args()
    model = load_model("deepseek-r1")
    print(
        "| hardware | precision | batch per rank | engine | published | predicted | error "
        "| TPOT ms |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|")
    results: dict[tuple[str, str, str], tuple[float, float]] = {}  # (engine, hw, prec) -> pair
    for hw, prec, mbs, mnt, clients, published in RUNS:
        for name in args.engines.split(","):
            eng = load_engine(name).with_overrides(max_batch_size=mbs, max_num_tokens=mnt)
            r = evaluate(
                model,
                load_hardware(hw),
                parse_precision(prec),
                eng,
                tp=8,
                ep=8,
                attention_dp=True,
                isl=1024,
                osl=2048,
                concurrency=float(clients),
                benchmark_burst=True,
            )
            pred = float(r.output_tok_s_per_gpu)
            results[(name, hw, prec)] = (published, pred)
            print(
                f"| {hw} | {prec} | {mbs} | {name} | {published:,.0f} | {pred:,.0f} | "
                f"{pred / published - 1:+.0%} | {float(r.tpot_s) * 1e3:.1f} |"
            )

    print()
    print("| engine | B200 run | measured B200 / H200 | predicted | predicted / measured |")
    print("|---|---|---:|---:|---:|")
    old = next(run for run in RUNS if run[0] == HOPPER)
    for (name, hw, prec), (published, pred) in results.items():
        if hw == HOPPER:
            continue
        base_pub, base_pred = results[(name, HOPPER, old[1])]
        measured, predicted = published / base_pub, pred / base_pred
        print(
            f"| {name} | {prec} | {measured:.2f} | {predicted:.2f} | {predicted / measured:.2f} |"
        )


if __name__ == "__main__":
    main()
