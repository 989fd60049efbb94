"""The MTP acceptance each measured TPOT implies (issue 11's open SGLang MTP gap): for every TPOT
row of the shared tables that runs MTP (``MappedRow.spec_tokens`` > 0: aggregated at a client
concurrency, and disaggregated), the acceptance per draft a in [0, 1] at which the model's
priced step (verify of 1 + k tokens per sequence, k drafts, the engine's host work) gives the
measured TPOT, found by bisection on a (predicted TPOT falls as a grows: more tokens per
step). A row the model prices slower than measured even at a = 1 is reported as "> 1", one it
prices faster even at a = 0 as "< 0". The acceptance convention the rows are priced with
(validate.conventions MTP_ACCEPTANCE_INFERENCEX) stands beside it.

What it tells: if one engine's rows imply a much lower acceptance than another's on the same
model, prompts and draft method, the gap is the engine's speculative step cost (not modelled),
not acceptance, which is a property of the model and the prompts.

Run: python benchmarks/mtp_implied_acceptance.py [--rows]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
from collections import defaultdict
from pathlib import Path

from llm_codesign.validate import map_row
from llm_codesign.validate.mapping import iter_measurements
from llm_codesign.validate.predict import predict_rows

GT = Path(__file__).resolve().parents[2] / "shared" / "groundtruth"
FILES = ("aic_silicon_moe_hopper.csv", "inferencex_hopper.csv", "serving.csv")
ITERATIONS = 14  # bisection steps: the acceptance to 1/16384


def mtp_tpot_rows() -> list:
    """Mapped TPOT rows with MTP at a client concurrency or disaggregated, one per configuration."""
    rows, seen = [], set()
    for name in FILES:
        path = GT / name
        if not path.exists():
            continue
        for i, raw in enumerate(iter_measurements(path)):
            if raw["metric"] != "tpot_ms":
                continue
            m = map_row(i, raw)
            if isinstance(m, str) or not m.spec_tokens:
                continue
            if m.mode not in ("concurrency", "disaggregated"):
                continue
            key = (m.model, m.hardware, m.engine, m.tp, m.ep, m.attention_dp, m.isl, m.osl,
                   m.load, m.mode, str(m.pools), m.measured)  # fmt: skip
            if key not in seen:
                seen.add(key)
                rows.append(m)
    return rows


def implied(rows: list) -> list[float]:
    """Per row the acceptance at which the predicted TPOT equals the measured one (bisection),
    +inf where even a = 1 prices it slower, -inf where even a = 0 prices it faster."""

    def tpot_at(acc: list[float]) -> list[float]:
        priced = [dataclasses.replace(r, spec_acceptance=a) for r, a in zip(rows, acc)]
        pred, _ = predict_rows(priced)
        return [float(p) for p in pred]

    n = len(rows)
    at_one, at_zero = tpot_at([1.0] * n), tpot_at([0.0] * n)
    lo, hi = [0.0] * n, [1.0] * n
    for _ in range(ITERATIONS):
        mid = [(a + b) / 2.0 for a, b in zip(lo, hi)]
        t = tpot_at(mid)
        for j, r in enumerate(rows):
            if t[j] > r.measured:  # priced slower than measured: more acceptance
                lo[j] = mid[j]
            else:
                hi[j] = mid[j]
    out = []
    for j, r in enumerate(rows):
        if not (math.isfinite(at_one[j]) and math.isfinite(at_zero[j])):
            out.append(math.nan)
        elif at_one[j] > r.measured:
            out.append(math.inf)
        elif at_zero[j] < r.measured:
            out.append(-math.inf)
        else:
            out.append((lo[j] + hi[j]) / 2.0)
    return out


def _fmt(a: float) -> str:
    return "> 1" if a == math.inf else ("< 0" if a == -math.inf else f"{a:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", action="store_true", help="print every row")
    args = ap.parse_args()
    rows = mtp_tpot_rows()
    acc = implied(rows)
    if args.rows:
        head = "engine | GPU | mode | plan (decode) | ISL/OSL | load | k | TPOT ms | priced a"
        print(f"| {head} | implied a |")
        print("|---|---|---|---|---|---:|---:|---:|---:|---:|")
        order = sorted(zip(rows, acc), key=lambda x: (x[0].engine, x[0].hardware, x[0].mode))
        for r, a in order:
            plan = f"tp{r.tp} ep{r.ep}" + (" adp" if r.attention_dp else "")
            cells = (
                *(r.engine, r.hardware, r.mode, plan, f"{r.isl}/{r.osl}", f"{r.load:g}"),
                *(str(r.spec_tokens), f"{r.measured:.1f}", f"{r.spec_acceptance:g}", _fmt(a)),
            )
            print(f"| {' | '.join(cells)} |")
        print()
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r, a in zip(rows, acc):
        if not math.isnan(a):
            groups[(r.engine, r.hardware, r.mode)].append(a)
    print("| engine | GPU | mode | rows | implied acceptance per draft, median (min-max) |")
    print("|---|---|---|---:|---|")
    for (e, g, mode), v in sorted(groups.items()):
        fin = sorted(v)
        print(f"| {e} | {g} | {mode} | {len(v)} | {_fmt(statistics.median(fin))} "
              f"({_fmt(fin[0])}-{_fmt(fin[-1])}) |")  # fmt: skip


if __name__ == "__main__":
    main()
