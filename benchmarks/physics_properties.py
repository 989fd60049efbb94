"""Physics properties of ``serving.evaluate`` over a large grid (issue 15): counts of violations.

Properties (each over every model x GPU x precision x engine x plan x workload x concurrency of
the grid):
  * roofline: total tokens/s/GPU x 2 x (matmul params per token) <= the GPU's dense peak for the
    precision (no configuration computes faster than the tensor cores);
  * weight read: TPOT >= weights per GPU / datasheet HBM bandwidth (dense models: a decode step
    reads every weight of its stage at least once);
  * converged: TPOT and throughput within 1e-3 relative of a 10x larger iteration cap;
  * bandwidth: 25% more HBM bandwidth never lowers throughput (TPOT or TTFT rising with it is
    counted apart, for information: a faster engine in a closed loop admits more prompt per
    step);
  * load: throughput never falls when client concurrency rises (clients beyond capacity queue);
  * Little's law: output tokens/s = C / (TTFT + (OSL - 1) TPOT) x OSL / GPUs.

Run: python benchmarks/physics_properties.py [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import time

import numpy as np

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.serving import aggregated, evaluate

MODELS = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "deepseek-r1", "gpt-oss-120b")
GPUS = ("h100-sxm", "h200-sxm", "b200")
PRECISIONS = ("bf16", "fp8")
# engine[:moe_comm]: an engine with another MoE dispatch family (DeepEP's kernels)
ENGINES = ("trtllm", "vllm", "sglang", "sglang:deepep")
PLANS = ((1, 1, 1, False), (2, 1, 1, False), (8, 1, 8, True), (4, 2, 1, False), (8, 1, 1, False))
ISL = (128, 1024, 8192)
OSL = (1, 2, 4, 16, 64, 128, 1024)
# two solves agree to the solver's tolerance: comparisons between them allow 10x that
SLACK = 10 * aggregated.FIXED_POINT_TOLERANCE
CONC = (1, 2, 3, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 257, 384, 512, 768, 1024, 2048, 4096)


def _eval(m, hw, p, eng, plan, iterations=None):
    tp, pp, ep, adp = plan
    isl = np.asarray(ISL, dtype=float)[:, None, None]
    osl = np.asarray(OSL, dtype=float)[None, :, None]
    conc = np.asarray(CONC, dtype=float)[None, None, :]
    old = aggregated.FIXED_POINT_ITERATIONS
    if iterations is not None:
        aggregated.FIXED_POINT_ITERATIONS = iterations
    try:
        return evaluate(
            m, hw, p, eng, tp=tp, pp=pp, ep=ep, attention_dp=adp, isl=isl, osl=osl, concurrency=conc
        )
    finally:
        aggregated.FIXED_POINT_ITERATIONS = old


def scan(models=MODELS, gpus=GPUS, precisions=PRECISIONS, engines=ENGINES) -> dict[str, int]:
    counts = dict.fromkeys(
        (
            "configurations",
            "roofline",
            "weight_read",
            "converged",
            "bandwidth",
            "bandwidth_latency_info",
            "load",
            "little",
        ),
        0,
    )
    worst: dict[str, tuple[float, str]] = {}

    def note(kind: str, bad: np.ndarray, ratio: np.ndarray, where: str) -> None:
        n = int(bad.sum())
        counts[kind] += n
        if n:
            r = float(np.max(np.where(bad, ratio, -np.inf)))
            if r > worst.get(kind, (-np.inf, ""))[0]:
                worst[kind] = (r, where)

    for mid, gid, pid, eid in itertools.product(models, gpus, precisions, engines):
        m, hw, p = load_model(mid), load_hardware(gid), parse_precision(pid)
        name, _, family = eid.partition(":")
        eng = load_engine(name).with_overrides(**({"moe_comm": family} if family else {}))
        if not hw.supports(p.compute_class):
            continue
        fast = dataclasses.replace(hw, hbm_bytes_per_s=hw.hbm_bytes_per_s * 1.25)
        peak = hw.peak_flops(hw.compute_rate_class(p.compute_class))
        for plan in PLANS:
            r = _eval(m, hw, p, eng, plan)
            ok = r.feasible
            counts["configurations"] += int(ok.sum())
            where = f"{mid} {gid} {pid} {eid} tp{plan[0]} pp{plan[1]} ep{plan[2]} adp{plan[3]}"
            flops = r.total_tok_s_per_gpu * 2.0 * m.matmul_params_per_token
            note("roofline", ok & (flops > peak * 1.0001), flops / peak, where)
            if m.moe is None:
                floor = r.weight_bytes_per_gpu / hw.hbm_bytes_per_s
                dec = ok & (np.asarray(OSL)[:, None] > 1)  # decode steps exist
                note("weight_read", dec & (r.tpot_s < floor * 0.9999), floor / r.tpot_s, where)
            long = _eval(m, hw, p, eng, plan, iterations=10 * aggregated.FIXED_POINT_ITERATIONS)
            d = np.abs(long.tpot_s / r.tpot_s - 1.0)
            d = np.maximum(d, np.abs(long.output_tok_s_per_gpu / r.output_tok_s_per_gpu - 1.0))
            note("converged", ok & (d > 1e-3), d, where)
            f = _eval(m, fast, p, eng, plan)
            both = ok & f.feasible
            worse = f.output_tok_s_per_gpu < r.output_tok_s_per_gpu * (1 - SLACK)
            note("bandwidth", both & worse, r.output_tok_s_per_gpu / f.output_tok_s_per_gpu, where)
            # informational: in a closed loop a faster engine admits more prompt per step, so
            # TPOT or TTFT may rise while throughput does not fall
            slower = (f.tpot_s > r.tpot_s * (1 + 1e-9)) | (f.ttft_s > r.ttft_s * (1 + 1e-9))
            note("bandwidth_latency_info", both & slower, f.tpot_s / r.tpot_s, where)
            thr = r.output_tok_s_per_gpu
            fall = ok[..., 1:] & ok[..., :-1] & (thr[..., 1:] < thr[..., :-1] * (1 - SLACK))
            note("load", fall, thr[..., :-1] / thr[..., 1:], where)
            conc = np.broadcast_to(np.asarray(CONC, dtype=float), r.ttft_s.shape)
            osl = np.broadcast_to(np.asarray(OSL, dtype=float)[:, None], r.ttft_s.shape)
            gpus_r = plan[0] * plan[1]
            little = conc / (r.ttft_s + (osl - 1.0) * r.tpot_s) * osl / gpus_r
            err = np.abs(little / r.output_tok_s_per_gpu - 1.0)
            note("little", ok & (err > 1e-6), err, where)
    counts["worst"] = {k: f"{v[0]:.3g} at {v[1]}" for k, v in worst.items()}  # type: ignore
    return counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="two models, one engine")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.quick:
        c = scan(models=MODELS[:2], engines=ENGINES[:1])
    else:
        c = scan()
    c["seconds"] = round(time.perf_counter() - t0, 1)  # type: ignore
    for k, v in c.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
