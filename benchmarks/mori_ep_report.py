"""MoRI-EP's dispatch and combine as the model prices them (``comm.ep_kernel_time``, mode mori)
against MoRI's own published MI355X tables, and the fit of ``comm.MORI`` (issue 11).

Table: ``data/validation/mori_ep.csv`` (ROCm/mori docs/EP8.en.md and docs/EP16.en.md @ac97b1d6):
8 MI355X of one node (xGMI) and 2 nodes of 8 (a 400 Gb/s RoCE NIC a GPU), hidden 7168, top-8,
256 experts, 1 to 524,288 tokens a rank; FP8 and BF16 dispatch, BF16 combine without zero copy.

Fit (``--fit``), repeated to a fixed point:
- the alphas: per node count and direction, the median over the rows of 16 tokens or less of
  the time less its priced transmit;
- xgmi: the median over the one-node rows of 4,096 tokens or more of the xGMI bytes over (time
  less alpha) over the link; rdma: the same over the two-node rows with the network bytes and
  the NIC.

Run: python benchmarks/mori_ep_report.py [--fit]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

from llm_codesign.comm import MORI, deduplicated_bytes, ep_kernel_time
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.hardware import load_hardware
from llm_codesign.validate.tables import bundled_rows

PAYLOAD = {"fp8": 1, "bf16": 2}  # bytes an element


def rows() -> list[dict]:
    """The table's rows: nodes, ep, dispatch (bool), bytes a token copy, tokens, time (s)."""
    return [
        {
            "nodes": int(r["nodes"]),
            "ep": int(r["ep"]),
            "dispatch": r["phase"] == "dispatch",
            "dtype": r["dtype"],
            "payload": int(r["hidden"]) * PAYLOAD[r["dtype"]],
            "top_k": int(r["top_k"]),
            "tokens": int(r["tokens"]),
            "time": float(r["time_us"]) * 1e-6,
        }
        for r in bundled_rows("mori_ep.csv")
    ]


def priced(r: dict, c: dict[str, float]) -> float:
    hw, eng = load_hardware("mi355x"), load_engine("sglang")
    args = (r["dispatch"], r["tokens"], r["top_k"], r["payload"], r["ep"], hw, eng, c)
    return float(ep_kernel_time("mori", *args))


def legs(r: dict) -> tuple[float, float]:
    """(xGMI bytes, network bytes) a rank sends for row ``r``."""
    hw = load_hardware("mi355x")
    s = min(r["ep"], hw.scaleup_domain_size)
    b = r["tokens"] * r["payload"]
    xgmi, net, _ = deduplicated_bytes(b, r["top_k"], float(r["ep"]), float(s))
    return float(xgmi), float(net)


def fit(table: list[dict]) -> dict[str, float]:
    hw, eng = load_hardware("mi355x"), load_engine("sglang")
    c = dict(MORI)
    for _ in range(20):
        before = dict(c)
        for nodes, suffix in ((1, ""), (2, "_internode")):
            for side in ("dispatch", "combine"):
                res = [
                    r["time"] - (priced(r, c) - c[f"alpha_{side}{suffix}"])
                    for r in table
                    if r["nodes"] == nodes and r["dispatch"] == (side == "dispatch")
                    and r["tokens"] <= 16
                ]  # fmt: skip
                c[f"alpha_{side}{suffix}"] = statistics.median(res)
        big = [r for r in table if r["tokens"] >= 4096]

        def alpha(r: dict) -> float:
            side = "dispatch" if r["dispatch"] else "combine"
            return c[f"alpha_{side}{'_internode' if r['nodes'] > 1 else ''}"]

        link = hw.scaleup_bytes_per_s * eng.comm_efficiency
        nic = hw.scaleout_bytes_per_s * eng.comm_efficiency
        c["xgmi"] = statistics.median(
            legs(r)[0] / (r["time"] - alpha(r)) / link for r in big if r["nodes"] == 1
        )
        c["rdma"] = statistics.median(
            legs(r)[1] / (r["time"] - alpha(r)) / nic for r in big if r["nodes"] == 2
        )
        if all(abs(c[k] - before[k]) <= 1e-4 * abs(before[k]) for k in c):
            break
    return c


def report(table: list[dict], c: dict[str, float]) -> None:
    groups: dict[str, list[float]] = defaultdict(list)
    for r in table:
        err = priced(r, c) / r["time"] - 1.0
        size = "<=16" if r["tokens"] <= 16 else "17-768" if r["tokens"] <= 768 else ">=4096"
        side = f"dispatch {r['dtype']}" if r["dispatch"] else "combine bf16"
        groups["all"].append(err)
        groups[f"{r['nodes']} node(s), {side}, {size} tokens"].append(err)
    print("| rows | n | median abs err | median err | worst |")
    print("|---|---:|---:|---:|---:|")
    for key, errs in sorted(groups.items()):
        med = statistics.median(abs(e) for e in errs) * 100
        worst = max(errs, key=abs) * 100
        bias = statistics.median(errs) * 100
        print(f"| {key} | {len(errs)} | {med:.1f}% | {bias:+.1f}% | {worst:+.1f}% |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", action="store_true", help="fit comm.MORI and report with the fit")
    args = ap.parse_args()
    table = rows()
    c = MORI
    if args.fit:
        c = fit(table)
        for k, v in c.items():
            print(f"{k}: {v * 1e6:.1f} us" if k.startswith("alpha") else f"{k}: {v:.3f}")
    report(table, c)


if __name__ == "__main__":
    main()
