"""Benchmark: the request simulator's speed (requests simulated per second on one core, the
step table's build time apart), and its validation figures on the shipped request-rate rows
against the analytic model.

Run: python benchmarks/bench_simulate.py   (figures go to benchmarks/RESULTS.md by hand)
     python benchmarks/bench_simulate.py --validation   (also the request-rate rows, through
     the simulator and, with the same constants, through the analytic model)
     python benchmarks/bench_simulate.py --validation --seeds 8   (and the simulator's spread
     over the arrival draws: seeds 0..7 of the Poisson arrivals)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from llm_codesign import (
    Traffic,
    load_engine,
    load_hardware,
    load_model,
    parse_length_dist,
    parse_precision,
    simulate,
    validate,
)
from llm_codesign.serving.simulate import engine_for
from llm_codesign.specs.traffic import fixed
from llm_codesign.validate import bundled_data

CASES = [
    # (label, model, gpu, precision, plan, traffic)
    (
        "llama-3.1-8b H200 TP1, closed loop 64 clients, 1024/1024",
        "llama-3.1-8b",
        "h200-sxm",
        "bf16",
        {},
        Traffic(clients=64, num_requests=20_000, isl=fixed(1024), osl=fixed(1024)),
    ),
    (
        "llama-3.1-8b H200 TP1, closed loop 256 clients, 1024/1024",
        "llama-3.1-8b",
        "h200-sxm",
        "bf16",
        {},
        Traffic(clients=256, num_requests=20_000, isl=fixed(1024), osl=fixed(1024)),
    ),
    (
        "llama-3.1-70b H200 TP4 FP8, Poisson 4 req/s, ISL uniform:500:8000, OSL normal:300:100",
        "llama-3.1-70b",
        "h200-sxm",
        "fp8",
        {"tp": 4},
        Traffic(
            arrival="poisson",
            rate_per_s=4.0,
            num_requests=20_000,
            isl=parse_length_dist("uniform:500:8000", "isl"),
            osl=parse_length_dist("normal:300:100", "osl"),
        ),
    ),
    (
        "deepseek-v3 H200 TP8 EP8 attention-DP FP8 MTP3 (a=0.7), closed loop 256, 1024/1024",
        "deepseek-v3",
        "h200-sxm",
        "fp8",
        {"tp": 8, "ep": 8, "attention_dp": True, "spec_tokens": 3, "spec_acceptance": 0.7},
        Traffic(clients=256, num_requests=20_000, isl=fixed(1024), osl=fixed(1024)),
    ),
    (
        "deepseek-r1 H200 TP8 EP8 attention-DP FP8 under the attention-DP balance (timeout 60), "
        "closed loop 256 starting together, InferenceX lengths 8k/1k",
        "deepseek-r1",
        "h200-sxm",
        "fp8",
        {"tp": 8, "ep": 8, "attention_dp": True, "engine": {"adp_balance_timeout_iters": 60}},
        Traffic(
            clients=256,
            num_requests=20_000,
            isl=parse_length_dist("uniform:6553:8192", "isl"),
            osl=parse_length_dist("uniform:819:1024", "osl"),
            clients_start="together",
        ),
    ),
]


def speed() -> None:
    for label, mid, gid, pid, plan, traffic in CASES:
        m, hw, p, e = (
            load_model(mid),
            load_hardware(gid),
            parse_precision(pid),
            load_engine("trtllm").with_overrides(**plan.get("engine", {})),
        )
        plan = {k: v for k, v in plan.items() if k != "engine"}
        axes = {k: plan.get(k, d) for k, d in (("tp", 1), ("pp", 1), ("ep", 1), ("cp", 1))}
        axes["attention_dp"] = plan.get("attention_dp", False)
        t0 = time.perf_counter()
        engine_for(
            m, hw, p, e, axes, traffic.requests(), plan.get("spec_tokens", 0), 0.7, traffic.count
        )
        table_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = simulate(m, hw, p, e, traffic, **plan)
        total = time.perf_counter() - t0
        s = r.summary
        loop = total - table_s
        print(
            f"{label}: {s['requests']:,} requests, {s['steps']:,} steps, {s['events']:,} events; "
            f"table {table_s:.2f} s ({s['table_points']:,} points), loop {loop:.2f} s = "
            f"{s['requests'] / loop:,.0f} requests/s ({s['requests'] / total:,.0f} with the "
            f"table); p99 TTFT {s['ttft_ms']['p99']:.0f} ms, p99 TPOT {s['tpot_ms']['p99']:.1f} ms"
        )


def _rate_rows_report(seed: int | None = None, simulator: bool = True) -> list[dict]:
    """serving.csv's request-rate rows through ``validate``: with the simulator (its Poisson
    arrivals drawn with ``seed``; None: validate's own, seed 0) or, ``simulator=False``, through
    the analytic model with the same constants."""
    import functools
    import importlib

    predict = importlib.import_module("llm_codesign.validate.predict")
    simulated = importlib.import_module("llm_codesign.validate.simulated")
    saved = (predict.simulated, simulated.Traffic)
    if not simulator:
        predict.simulated = lambda row, eng=None: False
    if seed is not None:
        simulated.Traffic = functools.partial(Traffic, seed=seed)
    try:
        text = bundled_data("serving.csv").read_text().splitlines()
        rows = [ln for ln in text[1:] if "request rate" in ln]
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "rate.csv"
            path.write_text("\n".join([text[0], *rows]) + "\n")
            return validate(path).to_dict()["rows"]
    finally:
        predict.simulated, simulated.Traffic = saved


def _median_abs(recs: list[dict], mode: str, metric: str) -> tuple[int, float, float]:
    e = np.array([r["error"] for r in recs if r["mode"] == mode and r["metric"] == metric])
    return len(e), float(np.median(np.abs(e))), float(np.median(e))


def validation(seeds: int = 0) -> None:
    t0 = time.perf_counter()
    recs = _rate_rows_report()
    wall = time.perf_counter() - t0
    analytic = _rate_rows_report(simulator=False)
    print(f"request-rate rows of serving.csv: {len(recs)} priced in {wall:.1f} s")
    for kind, mode in (("QPS", "rate"), ("INF", "concurrency")):
        for metric in ("ttft_ms", "itl_ms", "output_tok_s_total"):
            n, med, bias = _median_abs(recs, mode, metric)
            _, a_med, a_bias = _median_abs(analytic, mode, metric)
            print(
                f"  {kind} {metric}: {n} rows, simulator median |error| {med:.1%} (bias "
                f"{bias:+.1%}); analytic, same constants, {a_med:.1%} ({a_bias:+.1%})"
            )
    if seeds:
        for metric in ("ttft_ms", "itl_ms"):
            meds = [_median_abs(_rate_rows_report(seed=k), "rate", metric)[1] for k in range(seeds)]
            print(
                f"  QPS {metric} over seeds 0-{seeds - 1}: "
                + ", ".join(f"{m:.2%}" for m in meds)
                + f"; median {np.median(meds):.2%}"
            )


if __name__ == "__main__":
    speed()
    if "--validation" in sys.argv:
        k = sys.argv.index("--seeds") + 1 if "--seeds" in sys.argv else 0
        validation(int(sys.argv[k]) if k else 0)
