"""One engine's calibration rows by (dense or MoE, metric class, GPU): median |error| and bias,
and the fit objective, under the engine file's constants or overrides of them (issue 11: whether
a constant fitted on one GPU generation holds on another).

Run: python benchmarks/engine_by_gpu.py trtllm [name=value,name=value ...]
(each argument after the engine is one set of overrides, reported after the file's own values)
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
from moe_report import print_error_table

from llm_codesign import load_model
from llm_codesign.calibrate.fit import load_rows, objective
from llm_codesign.specs.engine import load_engine
from llm_codesign.validate import metric_class, predict_rows

GT = Path(__file__).resolve().parents[2] / "shared" / "groundtruth"
FILES = (
    "serving.csv",
    "aic_silicon_dense.csv",
    "aic_silicon_moe_hopper.csv",
    "inferencex_hopper.csv",
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("engine")
    ap.add_argument("overrides", nargs="*", help="name=value[,name=value...] per variant")
    args = ap.parse_args()
    rows = load_rows([GT / f for f in FILES if (GT / f).exists()], args.engine)
    base = load_engine(args.engine)
    for spec in ["", *args.overrides]:
        over = {k: float(v) for k, v in (kv.split("=") for kv in spec.split(",") if kv)}
        eng = base.with_overrides(**over) if over else base
        preds, _ = predict_rows(rows, engine_override=eng)
        groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        for r, p in zip(rows, preds):
            if np.isfinite(p) and p > 0:
                kind = "dense" if load_model(r.model).moe is None else "moe"
                groups[(kind, metric_class(r.metric), r.gpu)].append(p / r.measured - 1.0)
        print(f"== {spec or 'engine file'}: objective {objective(rows, eng):.4f}")
        print_error_table(("rows", "class", "GPU"), groups)


if __name__ == "__main__":
    main()
