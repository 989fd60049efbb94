"""DeepEP's dispatch and combine as the model prices them (``comm.ep_kernel_time``) against
AIConfigurator's DeepEP tables measured through SGLang, and the fit of ``comm.EP_KERNELS``'
DeepEP entries (issue 11).

Tables: ``aic-core/src/aiconfigurator_core/systems/data/<gpu>/comm/sglang/<version>/
wideep_deepep_{normal,ll}_perf.parquet`` (ai-dynamo/aiconfigurator @095f58a):
- 0.5.6.post2, H100: 1, 2, 4 and 8 nodes of 8 GPUs (EP 8-64); the H200 files of that version
  are the H100 rows again (same numbers, read once);
- 0.5.12: one node of H100, H200, B200, B300, GB200 and GB300 (EP 8; AIConfigurator's own
  adapter reads ``ep = node_num x 8``).
Rows read: hidden 7168, top-8, 256 experts (DeepSeek-R1's shape), FP8 dispatch and BF16
combine; the normal kernels at 20 SMs (DeepEP's ``Buffer.num_sms`` default). A normal row's
time is its transmit plus its notify column, as AIConfigurator itself adds them; a
low-latency row's is its average.

Fit (``--fit``) on Hopper only; Blackwell is the check:
- normal: the two alphas (median residual at 16 tokens or less, one node); the notify phase
  a + b x nodes (least squares on the per-node medians of the notify column, 2-8 nodes, 4,096
  tokens or less); f_rdma on remote bytes (least squares on log time, 2 and 4 nodes, 1,024
  tokens or more);
- low_latency, one node: the NVLink alphas and f_nvlink (least squares on log time). Its
  internode alphas and f_rdma stay fitted on DeepEP's H800 table (benchmarks/moe_comm_report.py);
  this report shows how they price AIConfigurator's 2-8 node rows.

Run: python benchmarks/deepep_aic_report.py AIC_GIT_DIR [--fit]
(needs pandas and pyarrow; AIC_GIT_DIR: a clone of ai-dynamo/aiconfigurator or the ``fetch``
mirror's git directory).
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from llm_codesign.comm import EP_KERNELS, ep_kernel_time
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.hardware import load_hardware

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aic_git import GPUS, read_table, table_paths  # noqa: E402

HOPPER = ("h100-sxm", "h200-sxm")
HIDDEN, TOP_K, EXPERTS, SMS = 7168, 8, 256, 20
MODES = {"normal": "deepep_normal", "ll": "deepep_low_latency"}


def rows(repo: str) -> list[dict]:
    """Every DeepSeek-shaped row: gpu, version, mode, dispatch, nodes, tokens, time (s) and the
    notify time (s, normal rows)."""
    out = []
    for path in table_paths(repo):
        parts = path.split("/")
        if not parts[-1].startswith("wideep_deepep_") or parts[-3] != "sglang":
            continue
        gpu, version, kind = GPUS.get(parts[-5]), parts[-2], parts[-1].split("_")[2]
        if gpu is None or (gpu == "h200-sxm" and version == "0.5.6.post2"):
            continue  # the H100 rows again
        d = read_table(repo, path)
        d = d[(d.hidden_size == HIDDEN) & (d.num_topk == TOP_K) & (d.num_experts == EXPERTS)]
        if kind == "normal":
            d = d[d.dispatch_sms == SMS]
        for r in d.itertuples():
            for side in ("dispatch", "combine"):
                if kind == "normal":
                    notify = getattr(r, f"{side}_notify_us") * 1e-6
                    t = getattr(r, f"{side}_transmit_us") * 1e-6 + notify
                else:
                    notify, t = 0.0, getattr(r, f"{side}_avg_t_us") * 1e-6
                out.append({"gpu": gpu, "version": version, "mode": MODES[kind],
                            "dispatch": side == "dispatch", "nodes": int(r.node_num),
                            "tokens": float(r.num_token), "t": t, "notify": notify})  # fmt: skip
    return out


def priced(r: dict, constants: dict | None = None) -> float:
    hw, eng = load_hardware(r["gpu"]), load_engine("sglang")  # (both bundled and cached)
    payload = HIDDEN * (1.0 if r["dispatch"] else 2.0)
    t = ep_kernel_time(r["mode"], r["dispatch"], np.array(r["tokens"]), TOP_K, payload,
                    np.array(8.0 * r["nodes"]), hw, eng, constants)  # fmt: skip
    return float(t)


def _sse(sub: list[dict], c: dict) -> float:
    return sum(math.log(priced(r, c) / r["t"]) ** 2 for r in sub)


def fit(all_rows: list[dict]) -> dict[str, dict[str, float]]:
    hop = [r for r in all_rows if r["gpu"] in HOPPER]
    nm = [r for r in hop if r["mode"] == "deepep_normal"]
    c = dict(EP_KERNELS["deepep_normal"])
    for side, dispatch in (("dispatch", True), ("combine", False)):
        sub = [r for r in nm if r["nodes"] == 1 and r["dispatch"] == dispatch and r["tokens"] <= 16]
        wire = [priced(r, {**c, f"alpha_{side}": 0.0}) for r in sub]
        c[f"alpha_{side}"] = statistics.median(r["t"] - w for r, w in zip(sub, wire))
    by_nodes = defaultdict(list)
    for r in nm:
        if r["nodes"] > 1 and r["tokens"] <= 4096:
            by_nodes[r["nodes"]].append(r["notify"])
    x = np.array(sorted(by_nodes), dtype=float)
    y = np.array([statistics.median(by_nodes[n]) for n in sorted(by_nodes)])
    slope, intercept = np.polyfit(x, y, 1)
    c["notify_s"], c["notify_node_s"] = float(intercept), float(slope)
    sub = [r for r in nm if r["nodes"] in (2, 4) and r["tokens"] >= 1024]
    grid = np.arange(0.30, 1.51, 0.01)
    c["rdma"] = float(grid[int(np.argmin([_sse(sub, {**c, "rdma": f}) for f in grid]))])
    ll = dict(EP_KERNELS["deepep_low_latency"])
    one = [r for r in hop if r["mode"] == "deepep_low_latency" and r["nodes"] == 1]
    best = (math.inf, ll)
    for f in np.arange(0.30, 1.01, 0.01):
        trial = {**ll, "nvlink": float(f)}
        sse = 0.0
        for side, dispatch in (("dispatch", True), ("combine", False)):
            sub = [r for r in one if r["dispatch"] == dispatch]
            wire = [priced(r, {**trial, f"alpha_{side}_nvlink": 0.0}) for r in sub]
            a0 = statistics.median(r["t"] - w for r, w in zip(sub, wire))
            alphas = [max(a0 + d * 0.1e-6, 0.0) for d in range(-100, 101)]
            errs = [sum(math.log((w + a) / r["t"]) ** 2 for r, w in zip(sub, wire))
                    for a in alphas]  # fmt: skip
            i = int(np.argmin(errs))
            trial[f"alpha_{side}_nvlink"] = alphas[i]
            sse += errs[i]
        if sse < best[0]:
            best = (sse, trial)
    return {"deepep_normal": c, "deepep_low_latency": best[1]}


def _bucket(tokens: float) -> str:
    return "<=64" if tokens <= 64 else "65-1024" if tokens <= 1024 else ">1024"


def report(all_rows: list[dict], constants: dict | None = None) -> None:
    groups = defaultdict(list)
    for r in all_rows:
        side = "dispatch" if r["dispatch"] else "combine"
        mode = r["mode"].removeprefix("deepep_")
        key = (r["gpu"], r["version"], mode, side, r["nodes"], _bucket(r["tokens"]))
        c = None if constants is None else constants[r["mode"]]
        groups[key].append(priced(r, c) / r["t"])
    print(
        "| GPU | SGLang | mode | op | nodes | tokens | rows | priced / measured | median abs err |"
    )
    print("|---|---|---|---|---:|---|---:|---:|---:|")
    for k in sorted(groups):
        v = groups[k]
        err = statistics.median(abs(x - 1) for x in v)
        print(f"| {' | '.join(map(str, k))} | {len(v)} | {statistics.median(v):.2f} | "
              f"{100 * err:.1f}% |")  # fmt: skip
    for name, sel in (("Hopper", HOPPER), ("Blackwell", ("b200", "b300", "gb200", "gb300"))):
        for mode in MODES.values():
            v = [abs(priced(r, None if constants is None else constants[mode]) / r["t"] - 1)
                 for r in all_rows if r["gpu"] in sel and r["mode"] == mode]  # fmt: skip
            if v:
                med = 100 * statistics.median(v)
                print(f"{name} {mode}: {len(v)} rows, median |error| {med:.1f}%")


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    all_rows = rows(sys.argv[1])
    if "--fit" in sys.argv[2:]:
        c = fit(all_rows)
        for mode, v in c.items():
            shown = {k: f"{x / 1e9:.1f} GB/s" if k.endswith("per_s")
                     else f"{x * 1e6:.3f} us" if k.endswith("_s") or k.startswith("alpha")
                     else round(x, 3) for k, x in v.items()}  # fmt: skip
            print(mode, shown)
        report(all_rows, c)
    else:
        report(all_rows)


if __name__ == "__main__":
    main()
