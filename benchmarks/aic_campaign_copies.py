"""Which AIConfigurator campaigns copy a dated campaign's runs (validate.campaigns
``aic_campaign_copies``, data/validation/aic_campaign_copies.csv): per campaign of the database
dump and the gap-analysis harness in ``aic_silicon_moe_hopper.csv`` and ``aic_silicon_dense.csv``,
its TTFT/TPOT rows and how many equal a row of each dated campaign of the same run (model
architecture, GPU, plan, lengths, concurrency, engine, metric) at the printed precision of the
less precise value (``aic_copy_evidence``).

Run: python benchmarks/aic_campaign_copies.py
"""

from __future__ import annotations

from llm_codesign.validate import bundled_data
from llm_codesign.validate.campaigns import aic_campaign_copies, aic_copy_evidence
from llm_codesign.validate.mapping import iter_measurements


def main() -> None:
    aic = [
        r
        for name in ("aic_silicon_moe_hopper.csv", "aic_silicon_dense.csv")
        for r in iter_measurements(bundled_data(name))
    ]
    print("| campaign | TTFT/TPOT rows | equal to rows of (dated campaign: rows) | table |")
    print("|---|---:|---|---|")
    for campaign, counts in sorted(aic_copy_evidence(aic).items()):
        matched = {k: v for k, v in counts.items() if k != "rows"}
        if not matched and campaign not in aic_campaign_copies():
            continue
        said = ", ".join(f"{k}: {v}" for k, v in sorted(matched.items())) or "none"
        table = aic_campaign_copies().get(campaign, "-")
        print(f"| {campaign} | {counts['rows']} | {said} | {table} |")


if __name__ == "__main__":
    main()
