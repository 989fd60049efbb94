"""Error of MoE/MLA predictions by class (issue 11): attention-DP, EP, TP-only; engine (alone and
with the load); model; concurrency bucket; GPU generation (alone and with the load); metric.
Reads the shared calibration sets through `validate`. The metric classes, model kinds and
concurrency buckets are the error bands' (`specs.uncertainty`).

Run: python benchmarks/moe_report.py [--engine ENGINE] [--files a.csv,b.csv] [--dense]
                                     [--without-marked]
(--dense: the same table for the dense rows, which must keep their error; --without-marked:
without the rows of closed-loop runs that contradict their own concurrency sweep, which
`validate` keeps as measured and marks in their note: `validate.consistency`)
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from llm_codesign import load_hardware, load_model, validate
from llm_codesign.specs.uncertainty import concurrency_bucket, model_kind
from llm_codesign.validate import metric_class

GT = Path(__file__).resolve().parents[2] / "shared" / "groundtruth"
DEFAULT_FILES = ("aic_silicon_moe_hopper.csv", "serving.csv", "inferencex_hopper.csv")
MARK = "contradicts its own concurrency sweep"  # (validate.consistency's note)


def _layout(plan: str) -> str:
    if "adp" in plan:
        return "attention-DP+EP"
    ep = int(plan.split("ep")[1].split()[0]) if "ep" in plan else 1
    return "EP" if ep > 1 else "TP-only"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default=None)
    ap.add_argument("--files", default=",".join(DEFAULT_FILES + ("aic_silicon_dense.csv",)))
    ap.add_argument("--dense", action="store_true", help="report the dense rows instead")
    ap.add_argument("--without-marked", action="store_true", help="leave out marked runs")
    args = ap.parse_args()
    files = [GT / f for f in args.files.split(",")]
    rep = validate([str(f) for f in files if f.exists()], engine=args.engine)
    groups: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for r in rep.rows:
        if (load_model(r["model"]).moe is None) != args.dense:
            continue
        if args.without_marked and MARK in r["note"]:
            continue
        cls = metric_class(r["metric"])
        keys = {
            "all": "all",
            "layout": _layout(r["plan"]),
            "engine": r["engine"],
            "model": r["model"],
            "kind": model_kind(load_model(r["model"])),
            "load": concurrency_bucket(r["load"]) if r["mode"] == "concurrency" else r["mode"],
        }
        # the GPU's generation, alone and with the load (Hopper-fit physics must hold on Blackwell)
        keys["generation"] = load_hardware(r["gpu"]).architecture
        keys["generation+load"] = f"{keys['generation']} {keys['load']}"
        # each engine's error against the load (TTFT's slope with clients is an engine's)
        keys["engine+load"] = f"{r['engine']} {keys['load']}"
        for kind, value in keys.items():
            groups[(cls, kind, value)].append(r["error"])
    print_error_table(("metric", "by", "class"), groups)


def print_error_table(columns: tuple[str, ...], groups: dict[tuple[str, ...], list[float]]) -> None:
    """A markdown table of relative errors per group: rows, median |error| and median error
    (the bias), groups sorted by key (also used by engine_by_gpu.py)."""
    print(f"| {' | '.join(columns)} | rows | median abs err | bias |")
    print("|" + "---|" * len(columns) + "---:|---:|---:|")
    for key, errs in sorted(groups.items()):
        med = statistics.median(abs(e) for e in errs) * 100
        bias = statistics.median(errs) * 100
        print(f"| {' | '.join(key)} | {len(errs)} | {med:.1f}% | {bias:+.1f}% |")


if __name__ == "__main__":
    main()
