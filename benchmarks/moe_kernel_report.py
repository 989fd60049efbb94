"""Error of the model's MoE layer against the published fused-MoE layer timings of
``data/validation/moe_layer.csv`` (issue 11), by class: engine and kernel path, GPU generation,
expert parallelism, config (tuned / default / superseded default heuristics).

Run: python benchmarks/moe_kernel_report.py [--without-permute]
(--without-permute: the same layer without the permute/finalize bytes, the physics before stop 31)
"""

from __future__ import annotations

import argparse
import csv
import importlib
import statistics
from collections import defaultdict

import numpy as np

from llm_codesign.validate import bundled_data, validate


def _class(x: dict[str, str]) -> list[str]:
    ep = "EP" if x["experts"] != x["experts_local"] else "no EP"
    aic = x["source_id"].startswith("aiconfigurator")
    origin = "AIConfigurator" if aic else "PR threads"
    return [
        "all",
        f"{x['framework']} / {x['path']} / {ep}",
        f"{x['framework']} / {x['gpu']} / {ep}",
        f"{origin} / {x['path']} / {x['config']}",
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--without-permute", action="store_true")
    args = ap.parse_args()
    if args.without_permute:
        layer = importlib.import_module("llm_codesign.validate.moe_layer")
        layer.MOE_LAYER_OPS = tuple(o for o in layer.MOE_LAYER_OPS if o != "moe_permute")
    path = bundled_data("moe_layer.csv")
    raw = list(csv.DictReader(path.open(encoding="utf-8")))
    rep = validate(path)
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rep.rows:
        for c in _class(raw[r["row"]]):
            groups[c].append(r["error"])
    print("| class | rows | median abs err | bias | p90 abs err | max abs err |")
    print("|---|---:|---:|---:|---:|---:|")
    for c, errs in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        a = [abs(e) for e in errs]
        print(
            f"| {c} | {len(errs)} | {statistics.median(a):.1%} | {statistics.median(errs):+.1%} "
            f"| {float(np.quantile(a, 0.9)):.1%} | {max(a):.1%} |"
        )


if __name__ == "__main__":
    main()
