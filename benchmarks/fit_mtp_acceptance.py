"""Fit MTP's acceptance per draft token on InferenceX's random-token prompts
(validate.conventions ``MTP_ACCEPTANCE_INFERENCEX``): every TPOT row at a client concurrency of
the shared tables that maps to InferenceX's client with MTP (its own rows and the
AIConfigurator campaigns of its runs), each predicted at acceptance a on a grid of 0.05; the
objective is the median |log predicted / measured|; the median error per engine shows how far
one acceptance serves both engines' speculative steps.

Run: python benchmarks/fit_mtp_acceptance.py
"""

from __future__ import annotations

import dataclasses
import math
import statistics

from llm_codesign.validate import bundled_data, map_row
from llm_codesign.validate.campaigns import is_inferencex
from llm_codesign.validate.conventions import MTP_ACCEPTANCE, MTP_ACCEPTANCE_INFERENCEX
from llm_codesign.validate.mapping import iter_measurements
from llm_codesign.validate.predict import predict_rows

GRID = [round(0.05 * i, 2) for i in range(8, 19)]  # 0.40 .. 0.90


def main() -> None:
    rows = []
    for name in ("aic_silicon_moe_hopper.csv", "inferencex_hopper.csv"):
        for i, raw in enumerate(iter_measurements(bundled_data(name))):
            if raw["metric"] != "tpot_ms" or not is_inferencex(raw):
                continue
            m = map_row(i, raw)
            if not isinstance(m, str) and m.spec_tokens and m.mode == "concurrency":
                rows.append(m)
    engines = sorted({r.engine for r in rows})
    counts = ", ".join(f"{e} {sum(r.engine == e for r in rows)}" for e in engines)
    print(f"{len(rows)} InferenceX MTP TPOT rows ({counts})")
    head = " | ".join(f"median error, {e}" for e in engines)
    print(f"| acceptance per draft | median abs log error | median error | {head} |")
    print("|---:|---:|---:|" + "---:|" * len(engines))
    for a in sorted(set(GRID) | {MTP_ACCEPTANCE, MTP_ACCEPTANCE_INFERENCEX}):
        pred, _ = predict_rows([dataclasses.replace(r, spec_acceptance=a) for r in rows])
        if not all(math.isfinite(p) for p in pred):
            raise SystemExit(f"acceptance {a:g}: a row is not predicted (infeasible)")
        log_err = [abs(math.log(p / r.measured)) for p, r in zip(pred, rows)]
        signed = [p / r.measured - 1.0 for p, r in zip(pred, rows)]
        by = " | ".join(
            f"{statistics.median(e for e, r in zip(signed, rows) if r.engine == g):+.1%}"
            for g in engines
        )
        print(
            f"| {a:g} | {statistics.median(log_err):.3f} | {statistics.median(signed):+.1%} "
            f"| {by} |"
        )


if __name__ == "__main__":
    main()
