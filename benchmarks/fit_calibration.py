"""Fit the per-engine constants on ../shared/groundtruth and report error before/after.

Run: python benchmarks/fit_calibration.py [--sweeps 3] [--engines a,b] [--params x,y --from-current]
(--from-current --params: a refit of a few constants after a change of physics)
Writes src/llm_codesign/data/engines/{trtllm,trtllm-trt,vllm,sglang,generic}.yaml (the procedure is
llm_codesign.calibrate.fit: coordinate descent on a robust log error, bounded physical constants).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from llm_codesign.calibrate.fit import fit_engine, write_engine_yaml

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
    args = ap.parse_args()
    files = [
        GT / "serving.csv",
        GT / "aic_silicon_dense.csv",
        GT / "aic_silicon_moe_hopper.csv",
        GT / "inferencex_hopper.csv",
    ]
    for engine in args.engines.split(","):
        t0 = time.time()
        res = fit_engine(
            files,
            engine,
            sweeps=args.sweeps,
            params=args.params.split(",") if args.params else None,
            progress=print,
            from_current=args.from_current,
        )
        write_engine_yaml(res, OUT / f"{engine}.yaml", [f.name for f in files])
        print(
            f"== {engine}: {res.rows} rows, objective {res.before:.4f} -> {res.after:.4f} in "
            f"{time.time() - t0:.0f} s"
        )
        for name, value, bound in res.at_bounds:
            print(f"   at its bound: {name} = {value:.4g} (bound {bound:.4g})")


if __name__ == "__main__":
    main()
