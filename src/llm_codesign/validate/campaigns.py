"""Which run a calibration row is: an InferenceX row's run date and its GPU and precision as
InferenceX names them, the AIConfigurator harness and campaign of a row (and each harness's
start-up share), and the AIConfigurator campaigns whose rows are InferenceX runs: their
speculative decoding, run date and model, with the evidence that proves each
(``inferencex_campaign_evidence``). ``validate.mapping`` maps such rows as the runs they are;
``validate.recipes`` prices a run with the launch script of its date."""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from decimal import Decimal, InvalidOperation

from ..specs.engine import engine_for_framework
from ..specs.model import load_model
from .conventions import attention_dp_field
from .tables import bundled_rows

# AIConfigurator's silicon campaigns (aic_silicon_*.csv; AIConfigurator @095f58a
# systems/silicon_sample.csv names each row id's ``silicon_data_source``): three benchmark
# harnesses whose row ids have their own form. Their clients' start-up is not documented, and
# one harness ran each framework with its own client settings (its SGLang rows meet a start-up
# wave in nearly every request, its TensorRT-LLM rows in a fifth): the share of requests in the
# start-up wave is one fitted constant per harness and engine (benchmarks/fit_campaign_shares.py),
# not one per engine for every source. Two harnesses have shares of their own; the database dump
# collects other campaigns' runs (``AIC_HARNESS_RUNS``), and a campaign that copies a dated
# campaign's runs takes that campaign's share (``AIC_CAMPAIGN_COPIES_FILE``, ``run_harness``)
AIC_HARNESSES = {
    # the CI database dump: ids end in the config number
    "aic-db-dump": r"_cfg\d+$",
    # dated campaign files: ids start with the date
    "aic-dated": r"^20\d\d_\d\d_\d\d_",
    # the gap-analysis harness: every other AIConfigurator id
    "aic-gap-analysis": r".",
}
# the CI database dump collects other campaigns' runs: each of its campaigns in the bundled
# tables copies a dated campaign's runs (aic_campaign_copies.csv; two of them are InferenceX runs
# too), so its rows take the dated harness's share (its own shares were fitted before those
# campaigns were mapped as the runs they are; the last rows they priced were the MiniMax copy's)
AIC_HARNESS_RUNS = {"aic-db-dump": "aic-dated"}
AIC_HARNESS_SHARE: dict[tuple[str, str], float] = {
    ("aic-dated", "trtllm"): 0.1,
    ("aic-dated", "vllm"): 0.2,
    ("aic-dated", "sglang"): 0.25,
    ("aic-gap-analysis", "trtllm"): 0.15,
    ("aic-gap-analysis", "vllm"): 0.2,
    ("aic-gap-analysis", "sglang"): 0.9,
}
# AIConfigurator's dated campaigns that are InferenceX runs and the speculative decoding those
# runs used: data/validation/aic_inferencex_campaigns.csv (a campaign is a row id less its
# ``_<isl>x<osl>_c<conc>_...`` tail), each with its evidence: values of the campaign equal
# values of ``inferencex_hopper.csv`` (same model, GPU, plan, lengths, concurrency and metric)
# to 1e-6 relative (for the MTP campaign, the TPOT and the TTFT of one run), and every matched
# InferenceX row states that ``spec_method`` (``benchmarks/aic_campaign_evidence.py`` prints the
# matches; ``tests/test_validate_conventions.py`` checks them on the bundled tables). Their rows are
# mapped as InferenceX rows: its client, its recipes, and that spec method.
AIC_INFERENCEX_CAMPAIGNS_FILE = "aic_inferencex_campaigns.csv"
# AIConfigurator campaigns most of whose rows are an earlier dated campaign's runs (the
# gap-analysis harness prints them to two decimals, the database dump and later dated campaigns
# as they were): data/validation/aic_campaign_copies.csv, each with its evidence
# (``aic_copy_evidence``, ``benchmarks/aic_campaign_evidence.py``; the test suite checks it on the
# bundled tables). A copy's rows take the start-up share of the harness whose runs they are
# (``run_harness``): one run, one share.
AIC_CAMPAIGN_COPIES_FILE = "aic_campaign_copies.csv"


def run_date(row: dict[str, str]) -> str:
    """The ``run date YYYY-MM-DD`` an InferenceX row's notes state, else the date of the
    InferenceX runs its AIConfigurator campaign's rows equal (``aic_campaign_run_dates``); ""
    where neither says one."""
    m = re.search(r"run date (\d{4}-\d\d-\d\d)", row.get("notes", ""))
    if m:
        return m.group(1)
    return aic_campaign_run_dates().get(aic_campaign(row["source_id"], row.get("notes", "")), "")


def run_gpu_precision(row: dict[str, str]) -> tuple[str, str]:
    """(GPU, precision) of an InferenceX row as its master config and scripts name them: the
    ``gpu`` field's first word (an AIConfigurator copy of the run says "H200 SXM") and the
    precision field's first part, lower case ("h100", "fp8")."""
    gpu = (row.get("gpu", "").strip().lower().split() or [""])[0]
    return gpu, row.get("precision", "").split("/")[0].strip().lower()


def aic_harness(source_id: str, notes: str) -> str:
    """The AIConfigurator harness of a row (``AIC_HARNESSES``), "" for other sources."""
    row_id = _aic_row_id(source_id, notes)
    if not row_id:
        return ""
    return next((h for h, pattern in AIC_HARNESSES.items() if re.search(pattern, row_id)), "")


def _aic_row_id(source_id: str, notes: str) -> str:
    """The ``id=`` of an AIConfigurator row's notes, "" for other sources or without one."""
    if not source_id.lower().startswith("aic_silicon"):
        return ""
    m = re.search(r"(?:^|[;\s])id=\s*([^;\s]+)", notes or "")
    return m.group(1) if m else ""


def aic_campaign(source_id: str, notes: str) -> str:
    """The AIConfigurator campaign of a row (its id less the ``_<isl>x<osl>_c<conc>_...``
    tail), "" for other sources."""
    return re.sub(r"_\d+x\d+_c\d*(?:_.*)?$", "", _aic_row_id(source_id, notes))


@functools.cache
def aic_inferencex_campaigns() -> dict[str, str]:
    """Campaign -> spec method of the AIConfigurator campaigns that are InferenceX runs
    (``AIC_INFERENCEX_CAMPAIGNS_FILE``)."""
    return {r["campaign"]: r["spec_method"] for r in bundled_rows(AIC_INFERENCEX_CAMPAIGNS_FILE)}


@functools.cache
def aic_campaign_run_dates() -> dict[str, str]:
    """Campaign -> the run date of the InferenceX runs its rows equal
    (``AIC_INFERENCEX_CAMPAIGNS_FILE``'s ``run_date``), for the campaigns that state one."""
    rows = bundled_rows(AIC_INFERENCEX_CAMPAIGNS_FILE)
    return {r["campaign"]: r["run_date"] for r in rows if r.get("run_date", "").strip()}


def campaign_model(row: dict[str, str], model_id: str) -> tuple[str, str]:
    """(the bundled model a row prices, the mapping's note): for a row of an AIConfigurator
    campaign of InferenceX runs, the model of those runs (``AIC_INFERENCEX_CAMPAIGNS_FILE``'s
    ``model``) where it is the architecture the row names under another name; else the row's
    own ("" note)."""
    campaign = aic_campaign(row["source_id"], row.get("notes", ""))
    runs = {r["campaign"]: r.get("model", "") for r in bundled_rows(AIC_INFERENCEX_CAMPAIGNS_FILE)}
    other = runs.get(campaign, "").strip()
    if not other or other == model_id or _architecture(other) != _architecture(model_id):
        return model_id, ""
    return other, f"model {other}: its campaign's InferenceX runs, {model_id}'s architecture"


def is_inferencex(row: dict[str, str]) -> bool:
    """Whether a row is an InferenceX result: its source id, a run link in its notes, or an
    AIConfigurator campaign of InferenceX runs (``aic_inferencex_campaigns``)."""
    notes = row.get("notes", "")
    return (
        row["source_id"].lower().startswith("inferencex")
        or "SemiAnalysisAI/InferenceX" in notes
        or aic_campaign(row["source_id"], notes) in aic_inferencex_campaigns()
    )


def stated_notes(row: dict[str, str]) -> tuple[str, str]:
    """(the row's notes with what its campaign states appended where the notes do not say it,
    the mapping's note of that: "" where nothing was added). A campaign of InferenceX runs
    (``aic_inferencex_campaigns``) states the ``spec_method`` of its runs."""
    notes = row.get("notes", "")
    method = aic_inferencex_campaigns().get(aic_campaign(row["source_id"], notes))
    if method is None or re.search(r"spec_method\s*=", notes, re.I):
        return notes, ""
    said = f"spec_method={method} (an InferenceX campaign: validate.campaigns)"
    return f"{notes}; {said}", said


@functools.cache
def aic_campaign_copies() -> dict[str, tuple[str, str]]:
    """Campaign -> (the dated campaign whose runs it copies, that campaign's harness)
    (``AIC_CAMPAIGN_COPIES_FILE``)."""
    rows = bundled_rows(AIC_CAMPAIGN_COPIES_FILE)
    return {r["campaign"]: (r["run_campaign"], r["run_harness"]) for r in rows}


def run_harness(source_id: str, notes: str) -> tuple[str, str]:
    """(the harness of the run an AIConfigurator row is, the mapping's note): its own harness
    (``aic_harness``), or for a campaign that copies a dated campaign's runs
    (``aic_campaign_copies``) or a harness that collects them (``AIC_HARNESS_RUNS``) the harness
    of those runs; ("", "") for other sources."""
    harness = aic_harness(source_id, notes)
    copied = aic_campaign_copies().get(aic_campaign(source_id, notes))
    if copied is not None and copied[1] != harness:
        return copied[1], f"the runs of {copied[0]} (aic_campaign_copies.csv)"
    if harness in AIC_HARNESS_RUNS:
        return AIC_HARNESS_RUNS[harness], f"{harness} collects {AIC_HARNESS_RUNS[harness]} runs"
    return harness, ""


def campaign_share(row: dict[str, str], engine: str, closed_loop: bool) -> tuple[float, str]:
    """(start-up wave share, the mapping's note) of an AIConfigurator row of a client
    concurrency (``closed_loop``) from the harness of its run (``run_harness``) and its engine
    (``AIC_HARNESS_SHARE``); (-1, "") where none applies (the engine's ``ttft_burst`` then)."""
    harness, copied = run_harness(row["source_id"], row.get("notes", ""))
    if not closed_loop or (harness, engine) not in AIC_HARNESS_SHARE:
        return -1.0, ""
    share = AIC_HARNESS_SHARE[(harness, engine)]
    said = f"{harness} harness: start-up wave share {share:g} (validate.campaigns)"
    return share, f"{copied}; {said}" if copied else said


@functools.cache
def _architecture(model_id: str | None) -> str | None:
    """A bundled model's architecture, the same for checkpoints of one architecture under two
    names (DeepSeek-V3 and DeepSeek-R1: AIConfigurator's database labels InferenceX's R1 runs
    V3): its spec less the names and sources."""
    if model_id is None:
        return None
    spec = load_model(model_id)
    blank = {"id": "", "name": "", "source": "", "published_params_source": "", "aliases": ()}
    return repr(replace(spec, **blank))


def inferencex_campaign_evidence(
    aic_rows: list[dict[str, str]], inferencex_rows: list[dict[str, str]], rel: float = 1e-6
) -> dict[str, dict[str, int]]:
    """Per AIConfigurator campaign (``aic_campaign``): how many of its TTFT/TPOT rows equal an
    InferenceX row of the same run (``_run_key``) to ``rel``, counted by that InferenceX row's
    ``spec_method`` (the evidence of ``aic_inferencex_campaigns``) and by its run date (keys
    ``run YYYY-MM-DD``, the evidence of ``aic_campaign_run_dates``), plus ``rows``: the
    campaign's rows of those metrics."""
    index: dict[tuple[str | None, ...], list[tuple[float, str, str]]] = {}
    for row in inferencex_rows:
        if row["metric"] in RUN_METRICS:
            m = re.search(r"spec_method\s*=\s*([\w.-]+)", row.get("notes", ""), re.I)
            method = m.group(1).lower() if m else "none"
            index.setdefault(_run_key(row), []).append((float(row["value"]), method, run_date(row)))
    out: dict[str, dict[str, int]] = {}
    for row in aic_rows:
        campaign = aic_campaign(row["source_id"], row.get("notes", ""))
        if not campaign or row["metric"] not in RUN_METRICS:
            continue
        counts = out.setdefault(campaign, {"rows": 0})
        counts["rows"] += 1
        value = float(row["value"])
        for other, method, date in index.get(_run_key(row), []):
            if abs(other - value) <= rel * abs(value):
                counts[method] = counts.get(method, 0) + 1
                run = f"run {date}"
                counts[run] = counts.get(run, 0) + 1
    return out


# the metrics whose values identify a run in the evidence above and below
RUN_METRICS = ("tpot_ms", "ttft_ms")


def _run_key(row: dict[str, str]) -> tuple[str | None, ...]:
    """What a TTFT/TPOT row measured, less its value: the model's architecture (the row's model
    name where it is no bundled model), the GPU, the plan (TP, EP, attention-DP), the lengths,
    the concurrency, the engine and the metric."""
    from .mapping import match_gpu_name, match_model_name  # (mapping imports this module)

    bundled = match_model_name(row["model"])
    model = _architecture(bundled) if bundled else row["model"].strip().lower()
    gpu = match_gpu_name(row["gpu"])
    read = attention_dp_field(row["dp"])
    dp = "adp" if not isinstance(read, str) and read[0] else ""
    plan = (row["tp"], row["ep"] or "1", dp)
    run = (row["isl"], row["osl"], row["concurrency_or_batch"])
    return (model, gpu, *plan, *run, engine_for_framework(row["framework"]), row["metric"])


def _printed(text: str) -> tuple[float, int] | None:
    """(value, decimal places it is printed to: "629.1" 1, "308" 0, "1.5e3" -2), or None for
    a value that is no number."""
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        return None
    if not d.is_finite():
        return None
    return float(d), -int(d.as_tuple().exponent)


def aic_copy_evidence(aic_rows: list[dict[str, str]]) -> dict[str, dict[str, int]]:
    """Per AIConfigurator campaign: ``rows``, its TTFT/TPOT rows; ``equal``, how many of them
    equal a row of the same run (``_run_key``) in an earlier dated campaign (every dated one for
    the database dump's and the gap-analysis harness's campaigns) at the printed precision of
    the less precise of the two (1224.47 for 1224.4687461316062); and per such dated campaign,
    how many equal one of its rows. The evidence of ``AIC_CAMPAIGN_COPIES_FILE``."""
    dated: dict[tuple[str | None, ...], list[tuple[str, float, int]]] = {}
    rows: list[tuple[str, bool, tuple[str | None, ...], float, int]] = []
    for row in aic_rows:
        harness = aic_harness(row["source_id"], row.get("notes", ""))
        printed = _printed(row["value"])
        if row["metric"] not in RUN_METRICS or not harness or printed is None:
            continue
        campaign, key = aic_campaign(row["source_id"], row.get("notes", "")), _run_key(row)
        is_dated = harness == "aic-dated"
        rows.append((campaign, is_dated, key, *printed))
        if is_dated:
            dated.setdefault(key, []).append((campaign, *printed))
    out: dict[str, dict[str, int]] = {}
    for campaign, is_dated, key, value, places in rows:
        counts = out.setdefault(campaign, {"rows": 0, "equal": 0})
        counts["rows"] += 1
        matched = False
        for run, other, other_places in dated.get(key, []):
            if is_dated and run[:10] >= campaign[:10]:  # (an earlier dated campaign's runs)
                continue
            tol = 0.5 * 10.0 ** -min(places, other_places) + 1e-9 * abs(value)
            if abs(other - value) <= tol:
                counts[run] = counts.get(run, 0) + 1
                matched = True
        counts["equal"] += matched
    return out
