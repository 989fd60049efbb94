"""Closed-loop runs that contradict their own campaign (issue 11, the c257+ class).

A closed-loop benchmark at concurrency c keeps c requests in flight; each spends TTFT waiting
for its first token and D = (OSL - 1) x TPOT decoding, so by Little's law the engine decodes
B = c x D / (TTFT + D) sequences a step on average. A decode step never gets faster with more
sequences in it, so the run's TPOT cannot be far below the TPOT the same campaign measured at a
concurrency of B or less (same model, GPU, engine, plan, ISL/OSL: the ``id=`` of the row's
notes less its ``_c<N>`` and its serial number). This lists the rows whose TPOT is below
``--tolerance`` x the slowest such sibling: runs whose engine did not hold the stated
concurrency, which no model monotone in load can meet. It changes nothing in ``validate``; it
is evidence for the closing note.

Run: python benchmarks/run_family_consistency.py [--tolerance 0.8]
"""

from __future__ import annotations

import argparse
import csv
import re
from collections import defaultdict
from pathlib import Path

GT = Path(__file__).resolve().parents[2] / "shared" / "groundtruth"
FILES = ("aic_silicon_moe_hopper.csv", "aic_silicon_dense.csv")
RUN_ID = re.compile(r"id=(\S+?)_c(\d+)_(\S+?)(?:;|$)")


def _runs() -> dict[str, dict[tuple[int, str], dict[str, float]]]:
    """family -> (concurrency, serial number) -> metric -> value, with the run's OSL under
    'osl' (a run's TTFT and TPOT pair within its own serial number)."""
    fams: dict[str, dict[tuple[int, str], dict[str, float]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for name in FILES:
        path = GT / name
        if not path.exists():
            continue
        with path.open(newline="") as fh:
            for row in csv.DictReader(fh):
                m = RUN_ID.search(row.get("notes", ""))
                if not m or row["metric"] not in ("tpot_ms", "ttft_ms"):
                    continue
                plan = re.sub(r"_\d+$", "", m.group(3))  # less the run's serial number
                family = f"{name}:{m.group(1)}_{plan}"
                run = fams[family][(int(m.group(2)), m.group(3)[len(plan) :])]
                run[row["metric"]] = float(row["value"])
                run["osl"] = float(row["osl"])
    return fams


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tolerance", type=float, default=0.8)
    args = ap.parse_args()
    flagged, checked = [], 0
    for family, runs in sorted(_runs().items()):
        for (c, _), run in sorted(runs.items()):
            if "tpot_ms" not in run or "ttft_ms" not in run:
                continue
            checked += 1
            decode = (run["osl"] - 1) * run["tpot_ms"]
            in_flight = c * decode / (run["ttft_ms"] + decode)
            below = [r["tpot_ms"] for (c2, _), r in runs.items() if c2 < c and c2 <= in_flight
                     and "tpot_ms" in r]  # fmt: skip
            if below and run["tpot_ms"] < args.tolerance * max(below):
                flagged.append((family, c, in_flight, run["tpot_ms"], max(below)))
    print(f"runs checked (TPOT and TTFT): {checked}; contradicting their campaign: {len(flagged)}")
    print("| campaign run family | c | in flight (Little) | TPOT ms | slowest sibling <= it |")
    print("|---|---:|---:|---:|---:|")
    for family, c, b, tpot, sib in flagged:
        print(f"| {family.split(':', 1)[1][-58:]} | {c} | {b:.0f} | {tpot:.2f} | {sib:.2f} |")


if __name__ == "__main__":
    main()
