"""How far to trust a prediction (issue 17): the shipped error bands are validate's own
statistics per class, regenerate from the bundled data, back off as documented, and every
estimate and frontier point carries them."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign import (
    ParallelPlan,
    Workload,
    estimate,
    frontier,
    load_engine,
    load_hardware,
    load_model,
    validate,
)
from llm_codesign.cli import main
from llm_codesign.report import SCHEMA_VERSION, frontier_json
from llm_codesign.specs.uncertainty import (
    DIMENSIONS,
    MIN_ROWS,
    ConfigClass,
    ErrorBands,
    bands_path,
    read_error_bands,
    shipped_error_bands,
)
from llm_codesign.validate import bundled_data

# the metrics validation reports, by the class of prediction each checks (written out here,
# not taken from the package)
METRICS_OF = {
    "ttft": {"ttft_ms"},
    "tpot": {"tpot_ms", "itl_ms", "tok_s_per_user"},
    "throughput": {
        "output_tok_s_total",
        "output_tok_s_per_gpu",
        "total_tok_s",
        "total_tok_s_per_gpu",
    },
}


@pytest.fixture(scope="module")
def report():
    """validate on every bundled serving table (about 8 s: once per module)."""
    return validate()


def _kind(model_id: str) -> str:
    m = load_model(model_id)
    if any(g.mixer != "attention" for g in m.layer_groups):
        return "hybrid"
    if m.attention.kind == "mla":
        return "mla"
    return "dense" if m.moe is None else "moe"


def _in_bucket(row: dict, bucket: str) -> bool:
    if row["mode"] not in ("concurrency", "static", "disaggregated"):
        return bucket == row["mode"]
    lo, _, hi = bucket[1:].rstrip("+").partition("-")
    return int(lo) <= max(row["load"], 1) and (not hi or row["load"] <= int(hi))


def _lengths(row: dict) -> str:
    isl, osl = row["isl"], row["osl"]
    return "prefill-heavy" if isl >= 4 * osl else "decode-heavy" if osl >= 4 * isl else "balanced"


def _rows_of(report, keys: dict[str, str]) -> list[dict]:
    """The validated rows of a class, filtered here by each key's meaning."""
    tests = {
        "metric": lambda r, v: r["metric"] in METRICS_OF[v],
        "kind": lambda r, v: _kind(r["model"]) == v,
        "generation": lambda r, v: load_hardware(r["gpu"]).architecture == v,
        "engine": lambda r, v: r["engine"] == v,
        "concurrency": _in_bucket,
        "lengths": lambda r, v: _lengths(r) == v,
    }
    return [r for r in report.rows if all(tests[k](r, v) for k, v in keys.items())]


def _assert_band_is_statistics_of(band: dict, rows: list[dict]) -> None:
    errors = np.array([r["error"] for r in rows])
    assert band["n"] == len(rows) >= MIN_ROWS
    assert band["median_abs"] == pytest.approx(np.median(np.abs(errors)), abs=1e-6)
    assert band["p90_abs"] == pytest.approx(np.percentile(np.abs(errors), 90), abs=1e-6)
    assert band["bias"] == pytest.approx(np.median(errors), abs=1e-6)


def test_shipped_bands_regenerate_from_the_bundled_data(report):
    """The shipped file is validate --write-bands on the bundled tables: it cannot go stale."""
    fresh = report.error_bands()
    shipped = json.loads(bands_path().read_text())
    assert {k: v for k, v in fresh.items() if k != "classes"} == {
        k: v for k, v in shipped.items() if k != "classes"
    }
    assert [c["keys"] for c in fresh["classes"]] == [c["keys"] for c in shipped["classes"]]
    for a, b in zip(fresh["classes"], shipped["classes"]):
        assert a["n"] == b["n"], a["keys"]
        for s in ("median_abs", "p90_abs", "bias"):
            assert a[s] == pytest.approx(b[s], abs=2e-6), (a["keys"], s)
    assert set(shipped["inputs"]["tables"]) == {
        "serving.csv",
        "aic_silicon_dense.csv",
        "aic_silicon_moe_hopper.csv",
        "inferencex_hopper.csv",
    }


def test_every_backoff_level_partitions_the_rows(report):
    """At each back-off level every validated row falls in exactly one class."""
    classes = shipped_error_bands().classes
    for dropped in range(len(DIMENSIONS)):
        level = [s["n"] for k, s in classes.items() if k.count(None) == dropped]
        assert sum(level) == len(report.rows)


def test_estimate_band_is_the_validation_statistics_of_its_class(report):
    """A measured class: estimate's band equals median/p90 |error| and bias of its rows."""
    e = estimate("llama-3.1-70b", "h200-sxm", "fp8", ParallelPlan(tp=8), Workload(1024, 1024, 64))
    u = e.uncertainty
    assert u["class"] == {
        "kind": "dense",
        "generation": "hopper",
        "engine": "trtllm",
        "concurrency": "c33-256",
        "lengths": "balanced",
    }
    for metric in ("ttft", "tpot", "throughput"):
        band = u["metrics"][metric]
        assert band is not None and band["extrapolated"] is False
        rows = _rows_of(report, band["keys"])
        _assert_band_is_statistics_of(band, rows)
        # the band is the first class of the back-off order with MIN_ROWS rows
        assert band["backoff"] == len(DIMENSIONS) - len(band["keys"])
        for k in range(len(band["keys"]) + 1, len(DIMENSIONS) + 1):
            full = {d: v for d, v in zip(DIMENSIONS, [metric, *u["class"].values()][:k])}
            assert len(_rows_of(report, full)) < MIN_ROWS


def test_unmeasured_generation_is_extrapolated(report):
    """A GPU generation with no measured row: the band is the model kind's, marked."""
    assert not [r for r in report.rows if load_hardware(r["gpu"]).architecture == "cdna3"]
    e = estimate("llama-3.1-8b", "mi300x", "bf16", ParallelPlan(), Workload(1024, 1024, 8))
    for metric in ("ttft", "tpot", "throughput"):
        band = e.uncertainty["metrics"][metric]
        assert band["extrapolated"] is True
        assert band["keys"] == {"metric": metric, "kind": "dense"}
        _assert_band_is_statistics_of(band, _rows_of(report, band["keys"]))


def test_extrapolated_is_per_metric(report):
    """DeepSeek-R1 (MLA) on B200: extrapolated exactly for the metrics with no MLA row on
    Blackwell."""
    e = estimate(
        "deepseek-r1",
        "b200",
        "nvfp4",
        ParallelPlan(tp=8, ep=8, attention_dp=True),
        Workload(1024, 1024, 256),
    )
    for metric, band in e.uncertainty["metrics"].items():
        measured = _rows_of(report, {"metric": metric, "kind": "mla", "generation": "blackwell"})
        assert band["extrapolated"] is (not measured), metric
        _assert_band_is_statistics_of(band, _rows_of(report, band["keys"]))


def test_backoff_rule_on_a_hand_made_table():
    """Back-off drops lengths, then concurrency, ...: the first class with MIN_ROWS rows."""
    cls = ConfigClass("moe", "hopper", "vllm", "c5-32", "balanced")

    def stats(n):
        return {"n": n, "median_abs": 0.1, "p90_abs": 0.2, "bias": 0.0}

    full = cls.keys("tpot")
    table = {
        full: stats(MIN_ROWS - 1),  # too few
        full[:5] + (None,): stats(MIN_ROWS - 1),  # still too few
        full[:4] + (None, None): stats(MIN_ROWS),
        full[:3] + (None,) * 3: stats(3 * MIN_ROWS),
    }
    band = ErrorBands(table, {}).band(cls, "tpot")
    assert band["backoff"] == 2 and band["n"] == MIN_ROWS
    assert band["class_id"] == "tpot|moe|hopper|vllm|*|*"
    assert band["extrapolated"] is False
    # no (metric, kind, generation) class: whatever backs it, the band is extrapolated
    coarse = {full[:2] + (None,) * 4: stats(MIN_ROWS)}
    band = ErrorBands(coarse, {}).band(cls, "tpot")
    assert band["extrapolated"] is True and band["backoff"] == 4
    assert ErrorBands({}, {}).band(cls, "tpot") is None


def test_frontier_points_and_best_name_their_bands():
    f = frontier("llama-3.1-8b", "h100-sxm", 1, 512, 128, precision="fp8", workers=1)
    doc = frontier_json(f)
    bands = doc["uncertainty"]["bands"]
    assert doc["points"] and doc["best"] is not None
    for p in [*doc["points"], doc["best"]]:
        cls = f.config_class(p["concurrency"])
        assert p["uncertainty"]["class_id"] == cls.id
        for metric in ("ttft", "tpot", "throughput"):
            band = shipped_error_bands().band(cls, metric)
            assert p["uncertainty"][metric] == band["class_id"]
            assert bands[band["class_id"]] == band
    # the table holds only the bands its points name
    named = {p["uncertainty"][m] for p in [*doc["points"], doc["best"]] for m in ("ttft", "tpot")}
    named |= {p["uncertainty"]["throughput"] for p in [*doc["points"], doc["best"]]}
    assert set(bands) == named


def test_cli_json_schema_and_text(tmp_path):
    r = CliRunner().invoke(
        main,
        ["estimate", "-m", "qwen3-30b-a3b", "-g", "h200-sxm", "-c", "16", "--json"],
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["schema_version"] == SCHEMA_VERSION == 39
    assert d["assumptions"]["engine_constants"]["moe_kernels_weight_only"] == "triton"  # (18)
    assert d["assumptions"]["engine_constants"]["spec_separate_drafts"] is False  # (21)
    assert d["assumptions"]["engine_constants"]["windowed_kv_share"] == 1.0  # (22), trtllm
    assert set(d["uncertainty"]["metrics"]) == {"ttft", "tpot", "throughput"}
    text = CliRunner().invoke(main, ["estimate", "-m", "qwen3-30b-a3b", "-g", "h200-sxm"])
    assert text.exit_code == 0, text.output
    for label in ("TTFT", "TPOT", "throughput"):
        assert f"trust: {label} ±" in text.output


def test_validate_write_bands_round_trips(tmp_path):
    """validate --write-bands on one table writes a file the lookup reads; its classes count
    that table's validated rows at every level."""
    out = tmp_path / "bands.json"
    table = bundled_data("inferencex_hopper.csv")
    r = CliRunner().invoke(
        main, ["validate", "--data", str(table), "--write-bands", str(out), "--worst", "0"]
    )
    assert r.exit_code == 0, r.output
    bands = read_error_bands(out)
    rows = len(validate(table).rows)
    metric_only = [s["n"] for k, s in bands.classes.items() if k[1] is None]
    assert sum(metric_only) == rows
    assert bands.meta["rows"] == rows
    assert list(bands.meta["inputs"]["tables"]) == ["inferencex_hopper.csv"]


def test_replaced_engine_prices_only_its_rows():
    """``validate(engines=...)`` (what calibrate-fit --bands runs with the fitted constants)
    changes the rows of that engine only, and the bands name the constants they used."""
    table = bundled_data("inferencex_hopper.csv")
    base = validate(table)
    engines = {r["engine"] for r in base.rows}
    assert len(engines) > 1
    eid = sorted(engines)[0]
    slower = load_engine(eid).with_overrides(step_overhead_s=load_engine(eid).step_overhead_s * 3)
    refit = validate(table, engines={eid: slower})
    assert [r["row"] for r in refit.rows] == [r["row"] for r in base.rows]
    for a, b in zip(base.rows, refit.rows):
        assert (a["predicted"] != b["predicted"]) is (a["engine"] == eid)
    shipped = base.error_bands()["inputs"]["engines"]
    fitted = refit.error_bands()["inputs"]["engines"]
    assert {e for e in engines if shipped[e] != fitted[e]} == {eid}
