"""Which AIConfigurator campaigns are other runs, and the evidence (validate.campaigns): per
campaign of ``aic_silicon_moe_hopper.csv`` and ``aic_silicon_dense.csv``, its TTFT/TPOT rows and

* how many equal an InferenceX row of ``inferencex_hopper.csv`` (same model, GPU, plan, lengths,
  concurrency, metric; 1e-6 relative), by that InferenceX row's ``spec_method``
  (``inferencex_campaign_evidence``; data/validation/aic_inferencex_campaigns.csv);
* how many equal a row of the same run (model architecture, GPU, plan, lengths, concurrency,
  engine, metric) in an earlier dated campaign (any dated one for the database dump's and the
  gap-analysis harness's campaigns) at the printed precision of the less precise value
  (``aic_copy_evidence``; data/validation/aic_campaign_copies.csv lists the campaigns most of
  whose rows do).

Run: python benchmarks/aic_campaign_evidence.py
"""

from __future__ import annotations

from collections.abc import Callable

from llm_codesign.validate import bundled_data
from llm_codesign.validate.campaigns import (
    aic_campaign_copies,
    aic_copy_evidence,
    aic_inferencex_campaigns,
    inferencex_campaign_evidence,
)
from llm_codesign.validate.mapping import iter_measurements


def _table(
    what: str,
    evidence: dict[str, dict[str, int]],
    listed: dict[str, str],
    match: Callable[[str, int], str],
) -> None:
    """One Markdown table: the campaigns with a match or a listing, their rows and matches."""
    print(f"| campaign | TTFT/TPOT rows | {what} | listed |")
    print("|---|---:|---|---|")
    for campaign, counts in sorted(evidence.items()):
        matched = {k: v for k, v in counts.items() if k != "rows" and v}
        if not matched and campaign not in listed:
            continue
        said = ", ".join(match(k, v) for k, v in sorted(matched.items())) or "none"
        print(f"| {campaign} | {counts['rows']} | {said} | {listed.get(campaign, '-')} |")


def main() -> None:
    aic = [
        r
        for name in ("aic_silicon_moe_hopper.csv", "aic_silicon_dense.csv")
        for r in iter_measurements(bundled_data(name))
    ]
    ix = list(iter_measurements(bundled_data("inferencex_hopper.csv")))
    _table(
        "equal to an InferenceX row (by its spec_method)",
        inferencex_campaign_evidence(aic, ix),
        aic_inferencex_campaigns(),
        lambda k, v: f"{v} ({k})",
    )
    print()
    _table(
        "equal to rows of (an earlier dated campaign: rows; equal: rows equal to any)",
        aic_copy_evidence(aic),
        {c: f"{run} ({harness})" for c, (run, harness) in aic_campaign_copies().items()},
        lambda k, v: f"{k}: {v}",
    )


if __name__ == "__main__":
    main()
