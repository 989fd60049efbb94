"""Decode-heavy max-throughput rows of TensorRT-LLM (trtllm-bench, PyTorch backend): the step the
measurement implies against the model's decode step at the same running batch, split into GPU
work and host time (issue 11: what the per-sequence host cost, fitted at its bound, stands in for).

For each ``trtllm_perf_v1.0`` / ``trtllm_perf_devguide`` offline row with OSL >= 2 x ISL, the row
is priced as ``validate`` prices it (the trtllm-bench recipe's limits, its request count at once),
and the table shows, per attention-DP rank: the running batch; the measured step
(running / measured tok/s); the model's step (running / predicted tok/s, prompts mixed in); and
the model's pure decode step at that batch by part: attention, GEMMs, communication, other GPU
work, host (the step's ``step_overhead_s`` + ``per_seq_overhead_s`` x sequences terms).

The last column is the gap per sequence: (measured step - model step) / batch per rank, in
microseconds (what the host cost per sequence would have to add where the gap were host time).
``--all-lengths`` takes every ISL/OSL (prompt-heavy rows too, whose steps carry as many prompt
tokens as decoding sequences at 1k/1k): there the gap separates by GPU generation and model kind
(benchmarks/RESULTS.md, stop 58).

Run: python benchmarks/decode_step_gap.py [--moe] [--all-lengths]
"""

from __future__ import annotations

import argparse

import numpy as np

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.ops import step_shape
from llm_codesign.serving import evaluate, step_cost
from llm_codesign.serving.memory import scheduling_ranks
from llm_codesign.validate import bundled_data
from llm_codesign.validate.mapping import map_row, read_measurements
from llm_codesign.validate.recipes import TRTLLM_BENCH, recipe_engine

GEMM_OPS = ("proj", "_up", "_down", "lm_head", "router")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--moe", action="store_true", help="MoE models instead of dense ones")
    ap.add_argument("--all-lengths", action="store_true", help="every ISL/OSL, not OSL >= 2 ISL")
    args = ap.parse_args()
    base = load_engine("trtllm")
    print(
        "| model | GPU | plan | ISL/OSL | batch/rank | measured ms | model ms | attention | GEMMs "
        "| comm | other GPU | host | gap us/seq |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i, raw in enumerate(read_measurements(bundled_data("serving.csv"))):
        r = map_row(i, raw)
        bench = not isinstance(r, str) and r.recipe.partition(":")[0] == TRTLLM_BENCH
        if not bench or r.engine != "trtllm":
            continue
        decode_heavy = r.osl >= 2 * r.isl or args.all_lengths
        if r.mode != "offline" or not r.metric.startswith("output_tok_s") or not decode_heavy:
            continue
        m = load_model(r.model)
        if (m.moe is not None) != args.moe:
            continue
        hw, p = load_hardware(r.hardware), parse_precision(r.precision)
        e = recipe_engine(r.recipe, base, m, hw, p, r.tp, r.pp, r.isl, r.osl)
        ranks = int(scheduling_ranks(r.tp, r.attention_dp))
        clients = r.requests or e.max_batch_size * ranks
        plan = dict(tp=r.tp, pp=r.pp, ep=r.ep, attention_dp=r.attention_dp)
        g = evaluate(
            m, hw, p, e, **plan, isl=r.isl, osl=r.osl, concurrency=clients, benchmark_burst=True
        )
        if not bool(g.feasible):
            continue
        gpus = r.tp * r.pp
        per_replica = r.measured / (r.metric_gpus if r.metric.endswith("total") else 1) * gpus
        run = float(g.running_concurrency)
        s = step_shape(
            r.tp, r.pp, r.ep, 1, r.attention_dp, isl=r.isl, osl=r.osl, decode_seqs=run,
            prefill_tokens=0.0, prefill_seqs=0.0, micro_batches=None,
        )  # fmt: skip
        cost = step_cost(m, p, hw, e, s, detail=True)
        ops: dict[str, float] = {}
        for op, t, _ in cost.ops:
            ops[op.name] = ops.get(op.name, 0.0) + float(np.asarray(t).reshape(-1)[0])
        total = sum(float(np.asarray(v).reshape(-1)[0]) for v in cost.by_class.values())
        # host time: the step's own host terms (serving.step), priced away
        no_host = e.with_overrides(step_overhead_s=0.0, per_seq_overhead_s=0.0)
        gpu_only = step_cost(m, p, hw, no_host, s).total_s
        host = total - float(np.asarray(gpu_only).reshape(-1)[0])
        attn = ops.get("attention_decode", 0.0)
        gemm = sum(v for k, v in ops.items() if k.endswith(GEMM_OPS))
        comm = float(np.asarray(cost.by_class["communication"]).reshape(-1)[0])
        other = total - host - attn - gemm - comm
        row = (run / per_replica, run / (float(g.output_tok_s_per_gpu) * gpus))
        row += (attn, gemm, comm, other, host)
        gap = (row[0] - row[1]) / (run / ranks)
        print(
            f"| {r.model} | {r.hardware} | {r.plan_label} | {r.isl}/{r.osl} | {run / ranks:.0f} | "
            + " | ".join(f"{1e3 * x:.1f}" for x in row)
            + f" | {1e6 * gap:+.0f} |"
        )


if __name__ == "__main__":
    main()
