"""DeepEP's dispatch and combine as the model prices them (``comm.ep_kernel_time``) against DeepEP's
published H800 tables (issue 11), and the fit of the constants these tables decide: the
low-latency kernels across nodes (alphas, f_rdma), the normal kernels' f_nvlink and their SM rate.
The rest of ``comm.EP_KERNELS``' DeepEP entries (the low-latency NVLink alphas and f_nvlink;
the normal alphas, notify phase and f_rdma) is fitted on AIConfigurator's SGLang tables
(benchmarks/deepep_aic_report.py), so the EP 8 low-latency rows and the internode normal rows
here are a check.

Rows: ``data/validation/gemm.csv`` source ``deepep_v1_legacy`` (deepseek-ai/DeepEP
``docs/legacy.md``): the low-latency table (128 tokens per rank, hidden 7168, top-8, FP8 dispatch
and BF16 combine, EP 8-256: latency in us) and the normal table (4096 tokens, bottleneck
bandwidth in GB/s, EP 8 over NVLink and 16-64 over RDMA). The H800: NVLink 400 GB/s
bidirectional = 200 GB/s per direction, 8 GPUs per NVLink domain, one CX7 400 Gb/s NIC (50
GB/s) per GPU. Payload per token copy: hidden x the format's bytes (FP8 1, BF16 2); DeepEP's
own byte counts add the FP8 scales and a 16-byte header (7,408 bytes a copy), which the fitted
link fractions absorb.

The normal rows are bandwidths; their time is DeepEP's own bytes over that bandwidth: NVLink
(intranode) a token once per destination rank, the network (internode) once per destination
node, its own counted (DeepEP's convention; the model sends the other nodes' copies alone);
routing over the test's 256 experts with top-8 taken as uniform.

The normal kernels' SM bound (``comm.DEEPEP_NORMAL``: a token copy takes one SM c + its bytes at
r): DeepEP's rows in NVIDIA's Hybrid-EP tables (gemm.csv ``deepep_hybrid_ep_readme``; B200 EP 8
at 16-48 SMs, GB200 EP 8/16/24 at 16-32 SMs, 4096 tokens, uniform routing over 8 local experts a
rank), fit on the B200 rows of at most 32 SMs.

Run: python benchmarks/moe_comm_report.py          (the bundled constants against the tables)
     python benchmarks/moe_comm_report.py --fit    (refit the constants above)
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from pathlib import Path

import numpy as np

from llm_codesign.comm import EP_KERNELS, ep_kernel_time
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.hardware import load_hardware

GEMM_CSV = Path(__file__).resolve().parents[1] / "src/llm_codesign/data/validation/gemm.csv"
HIDDEN, TOP_K = 7168, 8
# H800 SXM: NVLink 400 GB/s bidirectional (DeepEP's legacy.md: "~160 GB/s NVLink maximum
# bandwidth" achieved), CX7 InfiniBand 400 Gb/s
H800 = {"scaleup_bytes_per_s": 200e9, "scaleout_bytes_per_s": 50e9, "scaleup_domain_size": 8}


def h800():
    return load_hardware("h100-sxm").with_overrides(**H800)


def published() -> list[dict]:
    """The DeepEP V1 rows of gemm.csv: mode, direction, EP, tokens and the published time (s)."""
    rows = []
    with open(GEMM_CSV, newline="") as f:
        for r in csv.DictReader(f):
            if r["source_id"] != "deepep_v1_legacy":
                continue
            kern = r["kernel"]
            ep = int(r["batch_or_groups"].removeprefix("EP"))
            dispatch = "dispatch" in kern
            elem = 1.0 if dispatch else 2.0
            if "low-latency" in kern:
                rows.append(dict(mode="deepep_low_latency", dispatch=dispatch, ep=ep,
                                 tokens=128, elem=elem, t=float(r["time_us"]) * 1e-6))  # fmt: skip
                continue
            # normal: DeepEP's bytes over its bandwidth (the convention in the docstring)
            nodes = max(ep // 8, 1)
            dest = nodes if ep > 8 else ep
            copies = dest * (1.0 - (1.0 - 1.0 / dest) ** TOP_K)
            nbytes = 4096 * copies * HIDDEN * elem
            rows.append(dict(mode="deepep_normal", dispatch=dispatch, ep=ep, tokens=4096,
                             elem=elem, t=nbytes / (float(r["bandwidth_gb_s"]) * 1e9)))  # fmt: skip
    return rows


def priced(r: dict, hw, eng, constants=None) -> float:
    tokens, ep = np.array(r["tokens"]), np.array(r["ep"])
    payload = HIDDEN * r["elem"]
    return float(
        ep_kernel_time(r["mode"], r["dispatch"], tokens, TOP_K, payload, ep, hw, eng, constants)
    )


def fit(rows: list[dict], hw, eng) -> dict[str, float]:
    """Least squares on log time over the internode low-latency rows (EP 16-256): alpha
    (dispatch, combine) on a 0.2 us grid, f_rdma on a 0.01 grid. The NVLink alphas and f_nvlink
    are fitted on AIConfigurator's one-node tables (benchmarks/deepep_aic_report.py); the EP 8
    rows are their check."""
    ll = [r for r in rows if r["mode"] == "deepep_low_latency" and r["ep"] > 8]
    base = EP_KERNELS["deepep_low_latency"]
    best = (math.inf, {})
    for fr in np.arange(0.60, 1.01, 0.01):
        c = {**base, "rdma": float(fr), "alpha_dispatch": 0.0, "alpha_combine": 0.0}
        sse = 0.0
        for name, dispatch in (("alpha_dispatch", True), ("alpha_combine", False)):
            sub = [r for r in ll if r["dispatch"] == dispatch]
            wire = [priced(r, hw, eng, c) for r in sub]  # the time less alpha
            a0 = statistics.median(r["t"] - w for r, w in zip(sub, wire))
            trials = [max(a0 + d * 0.2e-6, 0.0) for d in range(-50, 51)]
            errs = [sum(math.log((w + a) / r["t"]) ** 2 for r, w in zip(sub, wire))
                    for a in trials]  # fmt: skip
            i = int(np.argmin(errs))
            c[name] = trials[i]
            sse += errs[i]
        if sse < best[0]:
            best = (sse, c)
    return best[1]


def fit_normal(rows: list[dict], hw, eng) -> dict[str, float]:
    """The normal kernels' f_nvlink on a 0.01 grid by least squares on log time over the EP 8
    rows (H800's NVLink binds there, not the SMs); alpha, the notify phase and f_rdma are
    AIConfigurator's (benchmarks/deepep_aic_report.py), so the internode rows are a check."""
    sub = [r for r in rows if r["mode"] == "deepep_normal" and r["ep"] <= 8]
    c = dict(EP_KERNELS["deepep_normal"])
    grid = np.arange(0.50, 1.51, 0.01)
    sse = [sum(math.log(priced(r, hw, eng, {**c, "nvlink": float(f)}) / r["t"]) ** 2 for r in sub)
           for f in grid]  # fmt: skip
    c["nvlink"] = float(grid[int(np.argmin(sse))])
    return c


def sm_rows() -> list[dict]:
    """DeepEP's normal kernels by SM count (gemm.csv source deepep_hybrid_ep_readme): GPU, EP,
    SMs, direction, payload bytes a token copy in the model's convention (hidden x the
    format's bytes) and the published seconds a copy takes one SM, SMs x (time - alpha) /
    copies, the time being DeepEP's algorithm bytes (with FP8's scales) over the bandwidth."""
    out = []
    with open(GEMM_CSV, newline="") as f:
        for r in csv.DictReader(f):
            if r["source_id"] != "deepep_hybrid_ep_readme":
                continue
            ep = int(r["batch_or_groups"].removeprefix("EP"))
            sms = int(r["kernel"].split(", ")[1].split()[0])
            fp8 = r["dtype"] == "fp8"
            copies = 4096 * ep * (1.0 - (1.0 - 1.0 / ep) ** TOP_K)
            algo = HIDDEN * (1.0 + 4.0 / 128.0) if fp8 else HIDDEN * 2.0
            t = copies * algo / (float(r["bandwidth_gb_s"]) * 1e9)
            side = "dispatch" if "dispatch" in r["kernel"] else "combine"
            alpha = EP_KERNELS["deepep_normal"][f"alpha_{side}"]
            out.append(dict(gpu=r["gpu"], ep=ep, sms=sms, dispatch="dispatch" in r["kernel"],
                            payload=HIDDEN * (1.0 if fp8 else 2.0), t=t,
                            tau=sms * max(t - alpha, 0.0) / copies))  # fmt: skip
    return out


def fit_sm(rows: list[dict]) -> dict[str, float]:
    """Seconds a token copy takes one SM = c (dispatch or combine) + payload / r, least squares
    over the B200 rows of at most 32 SMs (past that the NVLink leg binds: BF16 dispatch stays
    at 629-646 GB/s from 36 to 48 SMs)."""
    fit = [r for r in rows if r["gpu"] == "B200" and r["sms"] <= 32]
    a = np.array([[float(r["dispatch"]), float(not r["dispatch"]), r["payload"]] for r in fit])
    c_d, c_c, inv_r = np.linalg.lstsq(a, np.array([r["tau"] for r in fit]), rcond=None)[0]
    return {"sm_dispatch_s": float(c_d), "sm_combine_s": float(c_c), "sm_bytes_per_s": 1 / inv_r}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", action="store_true", help="refit the constants these tables fit")
    args = ap.parse_args()
    hw, eng = h800(), load_engine("base").with_overrides(comm_efficiency=1.0)
    rows = published()
    constants = dict(EP_KERNELS)
    if args.fit:
        c = fit(rows, hw, eng)
        constants["deepep_low_latency"] = c
        print(
            f"fit, low latency across nodes: alpha dispatch {c['alpha_dispatch'] * 1e6:.1f} "
            f"us, combine {c['alpha_combine'] * 1e6:.1f} us, f_rdma {c['rdma']:.2f}"
        )
        n = fit_normal(rows, hw, eng)
        constants["deepep_normal"] = n
        print(f"fit, normal: f_nvlink {n['nvlink']:.2f}")
    print("| mode | op | EP | tokens/rank | published us | priced us | error |")
    print("|---|---|---:|---:|---:|---:|---:|")
    errs: dict[str, list[float]] = {}
    for r in rows:
        p = priced(r, hw, eng, constants[r["mode"]])
        e = p / r["t"] - 1.0
        errs.setdefault(r["mode"], []).append(e)
        op = "dispatch" if r["dispatch"] else "combine"
        print(f"| {r['mode']} | {op} | {r['ep']} | {r['tokens']} | {r['t'] * 1e6:.1f} | "
              f"{p * 1e6:.1f} | {e:+.1%} |")  # fmt: skip
    normal = constants["deepep_normal"]
    if args.fit:
        normal = {**normal, **fit_sm(sm_rows())}
        print(f"fit, normal kernels' SMs: a copy {normal['sm_dispatch_s'] * 1e6:.3f} us "
              f"(dispatch), {normal['sm_combine_s'] * 1e6:.3f} us (combine) + bytes at "
              f"{normal['sm_bytes_per_s'] / 1e9:.1f} GB/s a SM")  # fmt: skip
    print("\n| GPU | op | EP | SMs | published us | priced us | error |")
    print("|---|---|---:|---:|---:|---:|---:|")
    gpus = {"B200": load_hardware("b200"), "GB200 (NVL72)": load_hardware("gb200")}
    for r in sm_rows():
        c = {**normal, "sms": r["sms"]}
        p = float(ep_kernel_time("deepep_normal", r["dispatch"], np.array(4096.0), TOP_K,
                              r["payload"], np.array(r["ep"]), gpus[r["gpu"]], eng, c))  # fmt: skip
        e = p / r["t"] - 1.0
        key = f"deepep_normal SMs, {r['gpu']}" + (
            ", fit" if r["gpu"] == "B200" and r["sms"] <= 32 else ""
        )
        errs.setdefault(key, []).append(e)
        op = ("dispatch" if r["dispatch"] else "combine") + f" {r['payload'] / HIDDEN:g}B"
        print(f"| {r['gpu']} | {op} | {r['ep']} | {r['sms']} | {r['t'] * 1e6:.0f} | "
              f"{p * 1e6:.0f} | {e:+.1%} |")  # fmt: skip
    for mode, es in errs.items():
        print(f"{mode}: {len(es)} rows, median |error| {statistics.median(map(abs, es)):.1%}, "
              f"worst {max(es, key=abs):+.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
