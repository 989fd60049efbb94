"""`llm-codesign validate` at scale (issue 15): time and peak memory on a million-row table.

Usage:
    PYTHONPATH=src python benchmarks/bench_validate.py [--rows 1000000] [--keep DIR]

The table is copies of real rows: every 40th row of the shipped
``data/validation/serving.csv`` (static, concurrency, offline and request-rate rows of several
engines, models and GPUs), repeated to ``--rows`` rows and split over files of at most
``--rows-per-file`` rows (each file stays under the reader's size cap; ``validate`` takes
several). The command runs in a fresh process (``llm-codesign validate --data F1 --data F2 ...
--out predictions.csv``), so the figures are its own: wall time and peak RSS
(``os.wait4``'s ``ru_maxrss``), plus this machine and the package's git commit.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "llm_codesign" / "data" / "validation" / "serving.csv"


def make_tables(directory: Path, rows: int, per_file: int) -> list[Path]:
    with SOURCE.open(newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    pick = table[::40]
    paths, written = [], 0
    while written < rows:
        path = directory / f"rows_{len(paths):02d}.csv"
        n = min(per_file, rows - written)
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(table[0]))
            w.writeheader()
            for i in range(written, written + n):
                w.writerow(pick[i % len(pick)])
        paths.append(path)
        written += n
    return paths


def run(paths: list[Path], out: Path) -> tuple[float, int, str]:
    cmd = [sys.executable, "-m", "llm_codesign", "validate", "--worst", "5", "--out", str(out)]
    for p in paths:
        cmd += ["--data", str(p)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    stdout = p.stdout.read().decode() if p.stdout else ""
    stderr = p.stderr.read().decode() if p.stderr else ""
    _, status, usage = os.wait4(p.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"validate failed:\n{stderr}")
    return elapsed, usage.ru_maxrss * 1024, stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rows-per-file", type=int, default=350_000)
    ap.add_argument("--keep", type=Path, default=None, help="write the tables here and keep them")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        paths = make_tables(d, args.rows, args.rows_per_file)
        size = sum(p.stat().st_size for p in paths)
        made = time.perf_counter() - t0
        elapsed, rss, stdout = run(paths, d / "predictions.csv")
        out_rows = sum(1 for _ in (d / "predictions.csv").open()) - 1
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"commit: {commit}")
    print(
        f"table: {args.rows:,} rows in {len(paths)} file(s), {size / 1e6:.0f} MB "
        f"(made in {made:.1f} s)"
    )
    print(f"validate --out: {elapsed:.1f} s wall, peak RSS {rss / 2**20:.0f} MiB")
    print(f"  {args.rows / elapsed:,.0f} rows/s; {out_rows:,} predicted rows written")
    print(f"  peak RSS per input row: {rss / args.rows:.0f} B (imports included)")
    tail = [ln for ln in stdout.splitlines() if "throughput" in ln][:1]
    if tail:
        print(f"  {tail[0].strip()}")


if __name__ == "__main__":
    main()
