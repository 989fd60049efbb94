"""Fit the start-up wave share of each AIConfigurator benchmark harness and engine
(validate.campaigns ``AIC_HARNESS_SHARE``): the share of a campaign's requests that meet the
closed loop's start-up wave, from that harness's TTFT rows of that engine at a client
concurrency (with the engine's own constants). A campaign that copies an earlier dated
campaign's runs (``aic_campaign_copies``) takes that harness's share and is left out, so those
runs count once; a dated campaign that repeats a few of an earlier one's runs keeps them (the
gpt-oss-120b vLLM campaigns of 2026-04-06 hold 30 of the runs of 2026-03-25's).
The objective is the median |log predicted / measured| over those rows; the grid is 0, 0.05,
..., 1.

Run: python benchmarks/fit_campaign_shares.py [--write]
(--write: store the shares in src/llm_codesign/validate/campaigns.py; figures go to RESULTS.md)
"""

from __future__ import annotations

import csv
import math
import re
import statistics
import sys
import tempfile
from pathlib import Path

from llm_codesign import validate
from llm_codesign.specs.engine import engine_for_framework
from llm_codesign.validate import campaigns

ROOT = Path(__file__).resolve().parents[1]
GT = ROOT.parent / "shared" / "groundtruth"
FILES = ("aic_silicon_moe_hopper.csv", "aic_silicon_dense.csv")
GRID = [round(0.05 * i, 2) for i in range(21)]


def _ttft_rows(harness: str, engine: str) -> tuple[list[str], list[dict[str, str]]]:
    header: list[str] = []
    rows: list[dict[str, str]] = []
    for name in FILES:
        with open(GT / name, newline="") as f:
            r = csv.DictReader(f)
            header = list(r.fieldnames or [])
            for row in r:
                if (
                    row["metric"] == "ttft_ms"
                    and campaigns.aic_harness(row["source_id"], row["notes"]) == harness
                    and engine_for_framework(row["framework"]) == engine
                    and not campaigns.is_inferencex(row)  # InferenceX's client, not a share
                    # a copy of a dated campaign's runs: those runs count once, as the dated rows
                    and campaigns.aic_campaign(row["source_id"], row["notes"])
                    not in campaigns.aic_campaign_copies()
                ):
                    rows.append(row)
    return header, rows


def _error(path: Path) -> tuple[float, int]:
    errs = [
        abs(math.log(r["predicted"] / r["measured"]))
        for r in validate(path).rows
        if r["mode"] == "concurrency" and r["predicted"] > 0
    ]
    return statistics.median(errs), len(errs)


def main() -> None:
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as d:
        # (a harness that collects other campaigns' runs takes theirs: AIC_HARNESS_RUNS)
        for harness in [h for h in campaigns.AIC_HARNESSES if h not in campaigns.AIC_HARNESS_RUNS]:
            for engine in ("trtllm", "vllm", "sglang"):
                header, rows = _ttft_rows(harness, engine)
                if not rows:
                    continue
                path = Path(d) / f"{harness}-{engine}.csv"
                with open(path, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=header)
                    w.writeheader()
                    w.writerows(rows)
                key = (harness, engine)
                saved = campaigns.AIC_HARNESS_SHARE.get(key)
                results = []
                for share in GRID:
                    campaigns.AIC_HARNESS_SHARE[key] = share
                    err, n = _error(path)
                    results.append((err, share))
                if saved is None:
                    del campaigns.AIC_HARNESS_SHARE[key]
                else:
                    campaigns.AIC_HARNESS_SHARE[key] = saved
                err, share = min(results)
                best[key] = share
                curve = ", ".join(f"{s:g}: {e:.3f}" for e, s in results[::2])
                print(
                    f"{harness} {engine}: {n} TTFT rows; best share {share:g} "
                    f"(median |log err| {err:.3f})"
                )
                print(f"  {curve}")
    if "--write" in sys.argv:
        p = ROOT / "src" / "llm_codesign" / "validate" / "campaigns.py"
        text = p.read_text()
        table = ", ".join(f'("{h}", "{e}"): {s:g}' for (h, e), s in best.items())
        text = re.sub(
            r"AIC_HARNESS_SHARE: dict\[tuple\[str, str\], float\] = \{[^}]*\}",
            f"AIC_HARNESS_SHARE: dict[tuple[str, str], float] = {{{table}}}",
            text,
        )
        p.write_text(text)
        print(f"written: AIC_HARNESS_SHARE = {{{table}}}")


if __name__ == "__main__":
    main()
