"""Fit the per-engine constants on ../shared/groundtruth and report error before/after.

Run: python benchmarks/fit_calibration.py [--sweeps 3] [--engines a,b] [--params x,y --from-current]
(--from-current --params: a refit of a few constants after a change of physics)
     python benchmarks/fit_calibration.py --check [--engines a,b]
(--check: fits nothing, writes nothing; lists each engine file's fitted constants that sit on a
bound of the range its rows allow (``calibrate.fit.at_bound`` with ``fit_bounds``: FIT_SPACE's
plausibility bounds and the host-cost ceiling the fastest measured row sets), issue 11's "no
fitted constant at its bound")
Writes src/llm_codesign/data/engines/{trtllm,trtllm-trt,vllm,sglang,generic}.yaml (the procedure is
llm_codesign.calibrate.fit: coordinate descent on a robust log error, bounded physical constants).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from llm_codesign import load_engine
from llm_codesign.calibrate.fit import (
    FIT_SPACE,
    at_bound,
    fit_bounds,
    fit_engine,
    load_rows,
    write_engine_yaml,
)

ROOT = Path(__file__).resolve().parents[1]
GT = ROOT.parent / "shared" / "groundtruth"
OUT = ROOT / "src" / "llm_codesign" / "data" / "engines"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--engines", default="trtllm,trtllm-trt,vllm,sglang,generic")
    ap.add_argument("--params", default=None, help="comma-separated FIT_SPACE names (all)")
    ap.add_argument(
        "--from-current", action="store_true", help="descend from the engine files' values only"
    )
    ap.add_argument(
        "--check", action="store_true", help="list the engine files' constants on a bound"
    )
    ap.add_argument("--workers", type=int, default=None, help="processes (the same fit on any)")
    args = ap.parse_args()
    files = [
        GT / "serving.csv",
        GT / "aic_silicon_dense.csv",
        GT / "aic_silicon_moe_hopper.csv",
        GT / "inferencex_hopper.csv",
    ]
    if args.check:
        check(files, args.engines.split(","))
        return
    for engine in args.engines.split(","):
        t0 = time.time()
        res = fit_engine(
            files,
            engine,
            sweeps=args.sweeps,
            params=args.params.split(",") if args.params else None,
            progress=print,
            from_current=args.from_current,
            workers=args.workers or 0,
        )
        write_engine_yaml(res, OUT / f"{engine}.yaml", [f.name for f in files])
        print(
            f"== {engine}: {res.rows} rows, objective {res.before:.4f} -> {res.after:.4f} in "
            f"{time.time() - t0:.0f} s"
        )
        for name, value, bound in res.at_bounds:
            print(f"   at its bound: {name} = {value:.4g} (bound {bound:.4g})")


def check(files: list[Path], engines: list[str]) -> None:
    """Each engine file's FIT_SPACE constants on a bound of the range its rows allow."""
    print("| engine | rows | constant | value | bound | range |")
    print("|---|---:|---|---:|---:|---|")
    for engine in engines:
        rows = load_rows(files, engine)
        bounds = fit_bounds(rows)
        hits = at_bound(load_engine(engine), list(FIT_SPACE), bounds)
        for name, value, bound in hits:
            lo, hi = bounds[name]
            row_set = (lo, hi) != FIT_SPACE[name][:2]
            why = "the rows' ceiling" if row_set and bound == hi else "FIT_SPACE"
            print(f"| {engine} | {len(rows)} | {name} | {value:.4g} | {bound:.4g} | {why} |")
        if not hits:
            print(f"| {engine} | {len(rows)} | (none) | | | |")


if __name__ == "__main__":
    main()
