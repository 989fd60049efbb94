"""GPU-generation ratios for the same run (issue 11: Hopper-fitted physics must predict
Blackwell): where a calibration table measures the same model, engine, ISL/OSL, load and metric
on a Hopper GPU and on a Blackwell GPU (each as its recipe ran it: the plan, weights and KV
cache may differ, as the published tables choose them per GPU), compare the measured ratio
(Blackwell / Hopper) with the predicted one (each row predicted by ``validate``). A median
predicted / measured ratio below 1 means the model gains less from Blackwell than the runs did:
its Blackwell rows are low against its Hopper rows, whatever their common bias.

Run: python benchmarks/generation_ratios.py [--files serving.csv,...] [--by model|family]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from engine_ratios import ratio_cells

from llm_codesign import load_hardware, load_model, validate
from llm_codesign.validate import metric_class

GT = Path(__file__).resolve().parents[2] / "shared" / "groundtruth"
DEFAULT_FILES = ("serving.csv", "aic_silicon_dense.csv", "aic_silicon_moe_hopper.csv")
GENERATIONS = ("hopper", "blackwell")  # architectures compared: the second over the first


def generation(gpu: str) -> str:
    """The GPU's architecture as its hardware file names it ("hopper", "blackwell" for the
    datacenter B200 / GB200; "blackwell-rtx", "blackwell-ultra" ... are others)."""
    return load_hardware(gpu).architecture


def pairs(rows: list[dict], by: str = "model") -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(model or family, metric class) -> [(measured, predicted) Blackwell / Hopper ratio] over
    ``validate`` rows: every Hopper row with every Blackwell row of the same cell."""
    cells: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        gen = generation(r["gpu"])
        if gen in GENERATIONS:
            key = (r["source_id"], r["model"], r["engine"], r["isl"], r["osl"], r["mode"])
            cells[key + (r["load"], r["metric"])][gen].append(r)
    out: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    old, new = GENERATIONS
    for key, by_gen in cells.items():
        model = key[1]
        moe = load_model(model).moe is not None
        group = model if by == "model" else ("moe" if moe else "dense")
        for a in by_gen.get(old, []):
            for b in by_gen.get(new, []):
                if not (a["predicted"] > 0 and b["predicted"] > 0):  # (NaN: not predicted)
                    continue
                ratio = (b["measured"] / a["measured"], b["predicted"] / a["predicted"])
                out[(group, metric_class(key[-1]))].append(ratio)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default=",".join(DEFAULT_FILES))
    ap.add_argument("--by", choices=("model", "family"), default="model")
    args = ap.parse_args()
    rep = validate([str(GT / f) for f in args.files.split(",") if (GT / f).exists()])
    old, new = GENERATIONS
    print(
        f"| {args.by} | metric | pairs | measured {new} / {old} median (p10-p90) | "
        "predicted median | median predicted / measured |"
    )
    print("|---|---|---:|---|---:|---:|")
    for (group, metric), ps in sorted(pairs(rep.rows, args.by).items()):
        print(f"| {group} | {metric} | {ratio_cells(ps)} |")


if __name__ == "__main__":
    main()
