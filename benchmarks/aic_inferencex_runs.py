"""Which AIConfigurator campaigns are InferenceX runs (validate.recipes
``aic_inferencex_campaigns``, data/validation/aic_inferencex_campaigns.csv): per campaign of
``aic_silicon_moe_hopper.csv`` and ``aic_silicon_dense.csv``, its TTFT/TPOT rows and how many
equal an InferenceX row of ``inferencex_hopper.csv`` (same model, GPU, plan, lengths,
concurrency, metric; 1e-6 relative), by that InferenceX row's ``spec_method``.

Run: python benchmarks/aic_inferencex_runs.py
"""

from __future__ import annotations

from llm_codesign.validate import bundled_data
from llm_codesign.validate.campaigns import aic_inferencex_campaigns, inferencex_campaign_evidence
from llm_codesign.validate.mapping import iter_measurements


def main() -> None:
    aic = [
        r
        for name in ("aic_silicon_moe_hopper.csv", "aic_silicon_dense.csv")
        for r in iter_measurements(bundled_data(name))
    ]
    ix = list(iter_measurements(bundled_data("inferencex_hopper.csv")))
    print("| campaign | TTFT/TPOT rows | equal to an InferenceX row (by its spec_method) | table |")
    print("|---|---:|---|---|")
    for campaign, counts in sorted(inferencex_campaign_evidence(aic, ix).items()):
        matched = {k: v for k, v in counts.items() if k != "rows"}
        if not matched and campaign not in aic_inferencex_campaigns():
            continue
        said = ", ".join(f"{v} ({k})" for k, v in sorted(matched.items())) or "none"
        table = aic_inferencex_campaigns().get(campaign, "-")
        print(f"| {campaign} | {counts['rows']} | {said} | {table} |")


if __name__ == "__main__":
    main()
