"""Engine ratios for the same configuration (issue 11): where the calibration sets measure the
same model, GPU, precision, plan, ISL/OSL, concurrency and metric under two frameworks, compare
the measured ratio (engine / TensorRT-LLM) with the predicted one (each row predicted with its
own engine's constants).

Run: python benchmarks/engine_ratios.py [--files a.csv,b.csv] [--as-run]
(--as-run: pair the runs of the same model, GPU, weights, TP, speculative decoding, lengths
and concurrency whatever EP, attention-DP and KV cache each engine's recipe chose: InferenceX's
engine comparison, where TensorRT-LLM's H200 DeepSeek-R1 script runs EP 8 with an FP8 cache and
SGLang's TP 8 with a BF16 one)
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import defaultdict
from pathlib import Path

from llm_codesign import load_model, validate

GT = Path(__file__).resolve().parents[2] / "shared" / "groundtruth"
DEFAULT_FILES = ("aic_silicon_moe_hopper.csv", "aic_silicon_dense.csv", "serving.csv")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default=",".join(DEFAULT_FILES))
    ap.add_argument("--as-run", action="store_true", help="pair runs whatever their EP / ADP")
    args = ap.parse_args()
    rep = validate([str(GT / f) for f in args.files.split(",") if (GT / f).exists()])
    cells: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for r in rep.rows:
        plan, prec = r["plan"], r["precision"]
        if args.as_run:  # tp and speculative decoding; the checkpoint, whatever KV cache it ran
            plan = " ".join(w for w in plan.split() if w.startswith(("tp", "pp", "mtp")))
            prec = re.sub(r"\+[a-z0-9_]+-kv$", "", prec)
        key = (r["model"], r["gpu"], prec, plan, r["isl"], r["osl"], r["load"])
        cells[key + (r["metric"],)][r["engine"]] = r
    out: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for key, by_engine in cells.items():
        ref = by_engine.get("trtllm")
        if ref is None:
            continue
        family = "moe" if load_model(key[0]).moe is not None else "dense"
        for engine in ("sglang", "vllm"):
            r = by_engine.get(engine)
            if r is None:
                continue
            measured = r["measured"] / ref["measured"]
            predicted = r["predicted"] / ref["predicted"]
            out[(family, engine, key[-1])].append((measured, predicted))
    print(
        "| family | engine / trtllm | metric | pairs | measured ratio median (p10-p90) | "
        "predicted ratio median | median predicted / measured |"
    )
    print("|---|---|---|---:|---|---:|---:|")
    for (family, engine, metric), pairs in sorted(out.items()):
        print(f"| {family} | {engine} | {metric} | {ratio_cells(pairs)} |")


def ratio_cells(pairs: list[tuple[float, float]]) -> str:
    """A table row's cells for (measured, predicted) ratio pairs: the count, the measured
    median (p10-p90), the predicted median and the median predicted / measured."""
    meas = sorted(m for m, _ in pairs)
    pred = [p for _, p in pairs]
    rel = [p / m for m, p in pairs]
    lo, hi = meas[len(meas) // 10], meas[(9 * len(meas)) // 10]
    return (
        f"{len(pairs)} | {statistics.median(meas):.2f} ({lo:.2f}-{hi:.2f}) | "
        f"{statistics.median(pred):.2f} | {statistics.median(rel):.2f}"
    )


if __name__ == "__main__":
    main()
