"""Benchmark sweeps (issue 16): a ~10^7-evaluation sweep on this machine (wall time,
evaluations/s, peak memory, output size), and the Ray executor on a local Ray instance against
the local process pool on the same smaller sweep (throughput, equal results).

Usage:
    python benchmarks/bench_sweep.py                 # the 10^7 sweep (benchmarks/sweep_1e7.yaml)
    python benchmarks/bench_sweep.py --ray           # + local vs Ray on benchmarks/sweep_ray.yaml
    python benchmarks/bench_sweep.py --skip-large --ray

Evaluations per CPU-second (local executor) do not depend on the load other jobs put on a shared
machine; wall-clock figures do (the load average is recorded). Peak memory is the maximum
resident set size of this process (the driver: it writes the files) and of the largest worker
process (``resource.getrusage``; Ray's workers are not children of the driver, so only the
pool's are measured). Results go to a temporary directory, removed afterwards unless
``--keep DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from llm_codesign.sweep import run_sweep

HERE = Path(__file__).resolve().parent


def _rss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0  # Linux: KiB


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (the local pool's workers)."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run(spec: Path, out: Path, executor: str, workers: int) -> dict:
    t = time.perf_counter()
    cpu = _cpu_s()
    r = run_sweep(spec, out, executor=executor, workers=workers, progress=None)
    wall = time.perf_counter() - t
    cpu = _cpu_s() - cpu
    return {
        "spec": str(spec.relative_to(HERE.parent)),
        "executor": executor,
        "workers": workers,
        "cells": r.cells,
        "evaluations": r.evaluated,
        "wall_s": round(wall, 1),
        "evaluations_per_s": round(r.evaluated / wall),
        "output_mb": round(_size_mb(out), 1),
        # load-independent (local executor only: Ray's workers are not this process's children)
        "evaluations_per_cpu_s": round(r.evaluated / cpu) if executor == "local" else None,
    }


def same_results(a: Path, b: Path) -> bool:
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    for what in ("points", "frontier"):
        ta = ds.dataset(a / what, format="parquet", partitioning="hive").to_table()
        tb = ds.dataset(b / what, format="parquet", partitioning="hive").to_table()
        keys = [(k, "ascending") for k in ("model", "hardware", "precision", "workload")]
        keys += [(k, "ascending") for k in ("plan_id", "concurrency", "mode", "tok_s_per_user")]
        if not ta.sort_by(keys).equals(tb.sort_by(keys)):
            return False
    return pq.read_table(a / "summary.parquet").equals(pq.read_table(b / "summary.parquet"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=HERE / "sweep_1e7.yaml")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--ray", action="store_true", help="local vs Ray on sweep_ray.yaml")
    ap.add_argument("--repeat", type=int, default=2, help="local/Ray runs each (alternating)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the outputs in this folder")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    report: dict = {
        "machine": (
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
            f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} at start"
        )
    }
    try:
        if not args.skip_large:
            r = run(args.spec.resolve(), root / "large", "local", args.workers)
            r["peak_rss_mb_driver"] = round(_rss_mb(resource.RUSAGE_SELF), 1)
            r["peak_rss_mb_largest_worker"] = round(_rss_mb(resource.RUSAGE_CHILDREN), 1)
            report["large"] = r
            if args.keep is None:
                shutil.rmtree(root / "large")
        if args.ray:
            # alternate the order (local, ray), (ray, local), ...: load from other jobs on a
            # shared machine drifts, and each executor should see the same drift
            small = HERE / "sweep_ray.yaml"
            runs: dict[str, list[dict]] = {"local": [], "ray": []}
            identical = True
            for i in range(args.repeat):
                order = ("local", "ray") if i % 2 == 0 else ("ray", "local")
                for kind in order:
                    runs[kind].append(run(small, root / kind, kind, args.workers))
                identical &= same_results(root / "local", root / "ray")
                for kind in order:
                    shutil.rmtree(root / kind)
            rates = {
                k: statistics.median(r["evaluations_per_s"] for r in v) for k, v in runs.items()
            }
            report["local_vs_ray"] = {
                "runs": runs,
                "median_evaluations_per_s": rates,
                "ray_over_local": round(rates["ray"] / rates["local"], 3),
                "identical_results": identical,
            }
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
