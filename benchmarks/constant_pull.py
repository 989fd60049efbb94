"""Which rows pull a fitted constant where it sits (issue 11: "no fitted constant at its bound";
a constant at a bound means physics the model lacks, and this says which rows want it there).

For one engine's rows of the calibration sets (``calibrate.fit.load_rows``) and a few values of
one of its constants (the others as the engine file has them), it prints the fit's objective
(``calibrate.fit.objective_of``: the mean over metric class x dense/MoE of the median |log
predicted / measured|) and the same median for each group of metric class, model family and
load mode (offline max-throughput, client concurrency, disaggregated pools, static batch). A
group whose median falls as the value moves past the bound is a group that wants the
constant there; groups that pull in opposite directions mark a constant that stands for two
things.

Run: python benchmarks/constant_pull.py --engine trtllm --constant per_seq_overhead_s \
        --values 1.2e-5,1.769e-5,2.5e-5,3.5e-5 [--files serving.csv,...]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict
from dataclasses import fields, replace

from engine_by_gpu import FILES as DEFAULT_FILES  # the four calibration sets the fit reads
from engine_by_gpu import GT

from llm_codesign import load_engine, load_model
from llm_codesign.calibrate.fit import load_rows, objective_of
from llm_codesign.validate import metric_class, predict_rows


def group_errors(rows: list, preds: list[float]) -> dict[tuple[str, str, str], list[float]]:
    """(metric class, dense | moe, load mode) -> |log predicted / measured| of its rows."""
    out: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r, p in zip(rows, preds):
        if math.isfinite(p) and p > 0:
            family = "moe" if load_model(r.model).moe is not None else "dense"
            out[(metric_class(r.metric), family, r.mode)].append(abs(math.log(p / r.measured)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True, help="an engine id (trtllm, vllm, sglang, ...)")
    ap.add_argument("--constant", required=True, help="a numeric field of the engine's constants")
    ap.add_argument("--values", required=True, help="comma-separated values to price the rows at")
    ap.add_argument("--files", default=",".join(DEFAULT_FILES))
    args = ap.parse_args()
    base = load_engine(args.engine)
    numeric = {f.name for f in fields(base) if isinstance(getattr(base, f.name), float)}
    if args.constant not in numeric:
        ap.error(f"--constant {args.constant!r}: one of {', '.join(sorted(numeric))}")
    try:
        values = [float(v) for v in args.values.split(",")]
    except ValueError:
        ap.error(f"--values {args.values!r}: comma-separated numbers")
    rows = load_rows([GT / f for f in args.files.split(",")], args.engine)
    table: dict[tuple[str, str, str], list[float]] = {}
    counts: dict[tuple[str, str, str], int] = {}
    objectives = []
    for i, v in enumerate(values):
        eng = replace(base, **{args.constant: v})
        preds, _ = predict_rows(rows, engine_override=eng)
        objectives.append(objective_of(rows, preds))
        for key, errs in group_errors(rows, preds).items():
            table.setdefault(key, [float("nan")] * len(values))[i] = statistics.median(errs)
            counts[key] = max(counts.get(key, 0), len(errs))
    now = getattr(base, args.constant)
    print(f"{args.engine}: {len(rows)} rows; {args.constant} {now:.4g} in its file")
    print(f"| metric | family | load | rows | {' | '.join(f'{v:.4g}' for v in values)} |")
    print("|---|---|---|---:|" + "---:|" * len(values))
    print(f"| objective | | | {len(rows)} | {' | '.join(f'{o:.4f}' for o in objectives)} |")
    for key in sorted(table):
        cells = " | ".join(f"{m:.4f}" for m in table[key])
        print(f"| {' | '.join(key)} | {counts.get(key, 0)} | {cells} |")


if __name__ == "__main__":
    main()
