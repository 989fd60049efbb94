"""Error tables before (engine `default`, physics defaults) and after calibration (per-engine
fitted constants) on ../shared/groundtruth, as Markdown for benchmarks/RESULTS.md.

Run: python benchmarks/validation_report.py
"""

from __future__ import annotations

import time
from pathlib import Path

from llm_codesign.validate import validate

GT = Path(__file__).resolve().parents[2] / "shared" / "groundtruth"


def table(before, after) -> None:
    print("| source | metric | rows | median abs err before | after | p90 after | bias after |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for src, metrics in after.summary["by_source_metric"].items():
        for metric, s in metrics.items():
            b = before.summary["by_source_metric"].get(src, {}).get(metric, {})
            print(
                f"| {src} | {metric} | {s['count']} | "
                f"{b.get('median_abs_pct_error', float('nan')):.1f}% | "
                f"{s['median_abs_pct_error']:.1f}% | {s['p90_abs_pct_error']:.1f}% | "
                f"{s['signed_median_pct_error']:+.1f}% |"
            )
    print()
    print("Rows with a known batch or concurrency:")
    print()
    print("| metric class | rows | median abs err before | after | p90 after | bias after |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, s in after.summary["known_load"].items():
        b = before.summary["known_load"].get(k, {})
        print(
            f"| {k} | {s['count']} | {b.get('median_abs_pct_error', float('nan')):.1f}% | "
            f"{s['median_abs_pct_error']:.1f}% | {s['p90_abs_pct_error']:.1f}% | "
            f"{s['signed_median_pct_error']:+.1f}% |"
        )
    print()


def main() -> None:
    for name in ("serving.csv", "aic_silicon_dense.csv"):
        t0 = time.time()
        after = validate(GT / name)
        dt = time.time() - t0
        before = validate(GT / name, engine="base")
        print(f"### {name} ({len(after.rows)} rows predicted, validate took {dt:.1f} s)\n")
        table(before, after)
        print(
            "Skipped:", ", ".join(f"{s['reason']} ({s['count']})" for s in after.skipped) or "none"
        )
        print()
        print("Five worst rows after calibration:\n")
        print(
            "| source | model | gpu | precision | plan | ISL/OSL | mode | load | metric | "
            "measured | predicted | error |"
        )
        print("|---|---|---|---|---|---|---|---:|---|---:|---:|---:|")
        for r in sorted(after.rows, key=lambda r: -abs(r["error"]))[:5]:
            print(
                f"| {r['source_id']} | {r['model']} | {r['gpu']} | {r['precision']} | {r['plan']} "
                f"| {r['isl']}/{r['osl']} | {r['mode']} | {r['load']:g} | {r['metric']} | "
                f"{r['measured']:.4g} | {r['predicted']:.4g} | {r['error'] * 100:+.0f}% |"
            )
        print()
    g = validate(GT / "gemm.csv")
    print("### gemm.csv (kernel level)\n")
    print("| source | rows | median abs err | p90 | bias |")
    print("|---|---:|---:|---:|---:|")
    for src, metrics in g.summary["by_source_metric"].items():
        s = metrics["tflops"]
        print(
            f"| {src} | {s['count']} | {s['median_abs_pct_error']:.1f}% | "
            f"{s['p90_abs_pct_error']:.1f}% | {s['signed_median_pct_error']:+.1f}% |"
        )


if __name__ == "__main__":
    main()
