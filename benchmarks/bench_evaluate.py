"""Evaluations per second of ``serving.evaluate`` over a million configurations (issue 16).

The grid: 8 plans (TP 1/2/4/8 x PP 1/2) x 10 ISL x 10 OSL x 1,250 concurrencies (1 ... 4,096,
geometric) = 1,000,000 configurations per model, evaluated in chunks of one plan
(125,000 configurations a call: bounded memory), one process. Reports configurations per
second per core and the peak resident memory.

Run: python benchmarks/bench_evaluate.py [--model M ...] [--hardware H] [--scale 0.1]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.serving import evaluate

PLANS = [(tp, pp) for tp in (1, 2, 4, 8) for pp in (1, 2)]
ISL = np.geomspace(128, 16384, 10).round()
OSL = np.geomspace(16, 4096, 10).round()


def grid(scale: float) -> tuple[list, np.ndarray]:
    conc = np.unique(np.geomspace(1, 4096, max(int(1250 * scale), 4)))
    return PLANS, conc


def run(model_id: str, hw_id: str, prec: str, engine: str, scale: float) -> dict:
    m, hw, p, eng = (
        load_model(model_id),
        load_hardware(hw_id),
        parse_precision(prec),
        load_engine(engine),
    )
    plans, conc = grid(scale)
    ep_of = (lambda tp: tp) if m.moe is not None else (lambda tp: 1)
    t0, cpu0 = time.perf_counter(), time.process_time()
    n = feasible = 0
    checksum = 0.0
    for tp, pp in plans:
        r = evaluate(
            m, hw, p, eng, tp=tp, pp=pp, ep=ep_of(tp), isl=ISL[:, None, None],
            osl=OSL[None, :, None], concurrency=conc[None, None, :],
        )  # fmt: skip
        n += r.tpot_s.size
        ok = r.feasible
        feasible += int(ok.sum())
        checksum += float(np.sum(np.where(ok, r.output_tok_s_per_gpu, 0.0)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {
        "model": model_id,
        "hardware": hw_id,
        "precision": prec,
        "engine": engine,
        "configurations": n,
        "feasible": feasible,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "configs_per_cpu_s": round(n / cpu),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "checksum": checksum,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", nargs="*", default=["llama-3.1-70b", "deepseek-r1"])
    ap.add_argument("--hardware", default="h200-sxm")
    ap.add_argument("--precision", default="fp8")
    ap.add_argument("--engine", default="trtllm")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the concurrency axis")
    args = ap.parse_args()
    for mid in args.model:
        print(json.dumps(run(mid, args.hardware, args.precision, args.engine, args.scale)))


if __name__ == "__main__":
    main()
