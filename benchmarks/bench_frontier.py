"""Benchmark the frontier search (issue 4): wall time of the two default searches, configurations
per second, and peak memory of a streamed sweep of ~10^7 points.

Usage:
    .venv/bin/python benchmarks/bench_frontier.py          # default searches (seconds)
    .venv/bin/python benchmarks/bench_frontier.py --sweep  # + the ~10^7-point sweep (minutes)

Each default search runs once to warm up, then ``--repeat`` times; the median wall time is
reported, with the CPU time of a serial run (workers=1), which the load of other processes on a
shared machine does not inflate. Peak memory is the maximum resident set size of this process
and, separately, of the largest worker process (``resource.getrusage``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time

from llm_codesign.explore import frontier
from llm_codesign.explore.runner import default_workers

DEFAULT_SEARCHES = (
    ("deepseek-r1", "gb200", 72),
    ("llama-3.1-70b", "h200-sxm", 8),
)


def _rss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0  # Linux: KiB


def bench_default(repeat: int) -> list[dict]:
    out = []
    for model, hw, n in DEFAULT_SEARCHES:
        frontier(model, hw, n)  # warm-up: imports, bundled-file caches
        walls = []
        for _ in range(repeat):
            t = time.perf_counter()
            f = frontier(model, hw, n)
            walls.append(time.perf_counter() - t)
        t_cpu = time.process_time()
        t_wall = time.perf_counter()
        serial = frontier(model, hw, n, workers=1)
        cpu = time.process_time() - t_cpu
        serial_wall = time.perf_counter() - t_wall
        wall = statistics.median(walls)
        out.append(
            {
                "search": (
                    f"{model} on {n} x {hw}, ISL/OSL 1024/1024, precisions "
                    f"{','.join(p.id for p in f.precisions)}"
                ),
                "plans": f.settings["plans"],
                "valid_plans": f.settings["valid_plans"],
                "points": f.evaluated,
                "pareto_points": len(f.pareto),
                "area": round(f.area, 1),
                "wall_s_median": round(wall, 3),
                "wall_s_all": [round(w, 3) for w in walls],
                "workers": default_workers(),
                "serial_cpu_s": round(cpu, 3),
                "serial_wall_s": round(serial_wall, 3),
                "configs_per_s": round(f.evaluated / wall),
                "configs_per_cpu_s": round(serial.evaluated / cpu),
            }
        )
    return out


def bench_sweep() -> dict:
    """DeepSeek-R1 on 72 x GB200, 4 precisions, every integer concurrency up to 8192 per replica:
    ~10^7 configurations, streamed (only the running Pareto set is kept)."""
    t = time.perf_counter()
    f = frontier(
        "deepseek-r1",
        "gb200",
        72,
        points_per_octave=4096,
        max_batch=8192,
        refine=False,
        keep_points="pareto",
        progress=sys.stderr.isatty(),
    )
    wall = time.perf_counter() - t
    return {
        "sweep": (
            "deepseek-r1 on 72 x gb200, all plans x 4 precisions x every concurrency 1..8192 "
            "(exhaustive)"
        ),
        "points": f.evaluated,
        "wall_s": round(wall, 1),
        "configs_per_s": round(f.evaluated / wall),
        "pareto_points": len(f.pareto),
        "kept_points": len(f.points),
        "peak_rss_mb_main": round(_rss_mb(resource.RUSAGE_SELF), 1),
        "peak_rss_mb_largest_worker": round(_rss_mb(resource.RUSAGE_CHILDREN), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sweep", action="store_true", help="also run the ~10^7-point streamed sweep")
    args = ap.parse_args()
    report = {
        "machine": (
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
            f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} at start"
        ),
        "default_searches": bench_default(args.repeat),
    }
    if args.sweep:
        report["streamed_sweep"] = bench_sweep()
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
