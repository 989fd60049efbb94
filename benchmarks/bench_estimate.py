"""Benchmark: one scalar estimate, and a vectorized batch of 10^5 configurations.

Run: python benchmarks/bench_estimate.py   (figures go to benchmarks/RESULTS.md by hand)
"""

from __future__ import annotations

import time

import numpy as np

from llm_codesign import (
    ParallelPlan,
    Workload,
    estimate,
    load_hardware,
    load_model,
    parse_precision,
)
from llm_codesign.serving import evaluate
from llm_codesign.specs.engine import load_engine


def main() -> None:
    estimate(
        "llama-3.1-70b", "h200-sxm", "fp8", ParallelPlan(tp=8), Workload(1024, 1024, 64)
    )  # warm caches
    n = 50
    t0 = time.perf_counter()
    for _ in range(n):
        estimate(
            "llama-3.1-70b",
            "h200-sxm",
            "fp8",
            ParallelPlan(tp=8),
            Workload(1024, 1024, 64),
            explain=False,
        )
    single = (time.perf_counter() - t0) / n
    print(f"scalar estimate (llama-3.1-70b, 8 x h200-sxm, fp8): {single * 1e3:.2f} ms")

    m, hw, p, eng = (
        load_model("llama-3.1-70b"),
        load_hardware("h200-sxm"),
        parse_precision("fp8"),
        load_engine(),
    )
    rng = np.random.default_rng(0)
    size = 100_000
    tp = rng.choice([1, 2, 4, 8], size)
    pp = rng.choice([1, 2], size)
    conc = np.round(np.exp(rng.uniform(0, np.log(2048), size)))
    isl = rng.choice([128, 1024, 4096, 16384], size)
    osl = rng.choice([128, 1024, 4096], size)
    evaluate(
        m,
        hw,
        p,
        eng,
        tp=tp[:100],
        pp=pp[:100],
        isl=isl[:100],
        osl=osl[:100],
        concurrency=conc[:100],
    )
    t0 = time.perf_counter()
    r = evaluate(m, hw, p, eng, tp=tp, pp=pp, isl=isl, osl=osl, concurrency=conc)
    dt = time.perf_counter() - t0
    print(
        f"vectorized batch of {size:,} configurations: {dt:.3f} s = {dt / size * 1e6:.2f} us per "
        f"configuration ({size / dt:,.0f} configs/s); feasible {int(r.feasible.sum()):,}"
    )

    ds, b200 = load_model("deepseek-r1"), load_hardware("b200")
    t0 = time.perf_counter()
    evaluate(
        ds,
        b200,
        parse_precision("nvfp4"),
        eng,
        tp=8,
        ep=8,
        attention_dp=True,
        isl=isl,
        osl=osl,
        concurrency=conc,
    )
    dt = time.perf_counter() - t0
    print(
        f"deepseek-r1 (MLA + MoE) batch of {size:,}: {dt:.3f} s = {dt / size * 1e6:.2f} us per "
        "configuration"
    )


if __name__ == "__main__":
    main()
