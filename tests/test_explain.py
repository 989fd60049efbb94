"""Outputs that explain themselves (issue 14): infeasible results exit 1 with the reason,
queueing beyond capacity and replicas are called out, speculative decoding needs its acceptance,
the frontier says why nothing is feasible and what comes nearest to the targets, units are
stated, and hardware files are documented and checked all at once."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from llm_codesign import estimate, hardware_template
from llm_codesign.cli import main
from llm_codesign.errors import SpecError
from llm_codesign.specs.hardware import HARDWARE_SCHEMA, hardware_from_mapping
from llm_codesign.specs.plan import ParallelPlan
from llm_codesign.specs.workload import Workload

DOCS = Path(__file__).resolve().parents[1] / "docs" / "HARDWARE.md"


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_infeasible_estimate_exits_1_with_the_reason():
    r = run("estimate", "-m", "llama-3.1-405b", "-g", "h100-sxm", "-p", "bf16")
    assert r.exit_code == 1 and "weights_exceed_memory" in r.output
    r = run("estimate", "-m", "llama-3.1-405b", "-g", "h100-sxm", "-p", "bf16", "--json")
    assert r.exit_code == 1 and json.loads(r.output.split("\ninfeasible")[0])["feasible"] is False


def test_queueing_beyond_capacity_and_replicas_are_called_out():
    wl = Workload(1024, 1024, 4096)
    e = estimate("llama-3.1-70b", "h200-sxm", "fp8", ParallelPlan(tp=1), wl, explain=False)
    assert e.max_concurrency < 4096
    (note,) = [n for n in e.notes if "requests queue" in n]
    assert f"{4096 - e.max_concurrency:,} requests queue" in note
    e = estimate("llama-3.1-8b", "h100-sxm", "fp8", ParallelPlan(dp=4), Workload(512, 128, 8))
    assert any("4 replicas serve 32 users" in n for n in e.notes)
    assert e.to_dict()["units"]["ttft_ms"] == "milliseconds"
    r = run("estimate", "-m", "llama-3.1-70b", "-g", "h200-sxm", "-p", "fp8", "-c", "4096")
    assert r.exit_code == 0 and "requests queue" in r.output


def test_spec_tokens_need_an_acceptance_rate():
    r = run("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--spec-tokens", "3")
    assert r.exit_code == 2 and "needs spec_acceptance" in r.output
    r = run("frontier", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-n", "1", "--spec-tokens", "3")
    assert r.exit_code == 2 and "needs spec_acceptance" in r.output


def test_frontier_says_why_nothing_is_feasible_and_what_comes_nearest():
    r = run("frontier", "-m", "llama-3.1-405b", "-g", "h100-sxm", "-n", "1", "-p", "bf16")
    assert "no feasible configuration" in r.output and "weights_exceed_memory" in r.output
    r = run(
        "frontier", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-n", "1", "-p", "fp8",
        "--tpot-ms", "0.5",
    )  # fmt: skip
    assert "no configuration meets the targets" in r.output and "nearest:" in r.output
    r = run("frontier", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-n", "2", "-p", "fp8")
    assert "conc/replica" in r.output and "users total" in r.output


def test_hardware_template_is_valid_and_documented_and_errors_come_all_at_once():
    data = yaml.safe_load(hardware_template())
    assert hardware_from_mapping(data, "t.yaml").id == "h100-sxm"
    r = run("hardware", "--template")
    assert r.exit_code == 0 and yaml.safe_load(r.output)["sm_count"] == 132
    broken = {k: v for k, v in data.items() if k not in ("tdp_w", "sm_count")} | {"vendor": 3}
    try:
        hardware_from_mapping(broken, "mine.yaml")
        raise AssertionError("no error")
    except SpecError as exc:
        msg = str(exc)
    assert "3 problem(s)" in msg
    for field in ("tdp_w: missing", "sm_count: missing", "vendor: expected str"):
        assert field in msg
    text = DOCS.read_text()
    assert all(f"`{path}`" in text for path, *_ in HARDWARE_SCHEMA)
    r = run("hardware")
    assert "HBM GiB" in r.output and "80" in r.output


def test_frontier_and_estimate_as_dataframes():
    import pytest

    pd = pytest.importorskip("pandas")
    from llm_codesign import frontier

    f = frontier("llama-3.1-8b", "h100-sxm", num_gpus=1, isl=512, osl=128, precision="fp8")
    df = f.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == len(f.pareto)
    assert {"tok_s_per_user", "output_tok_s_per_gpu", "accuracy.kind", "plan.tp"} <= set(df)
    assert len(f.to_pandas(all_points=True)) == len(f.points)
    e = estimate("llama-3.1-8b", "h100-sxm", "fp8", explain=False)
    row = e.to_pandas()
    assert len(row) == 1 and row["tpot_ms"][0] == e.tpot_ms


def test_power_and_cost_closed_forms():
    import pytest

    from llm_codesign.serving import economics

    # 1,000 tok/s/GPU at 700 W: 1,000 / 700e-6 tok/s per MW; at $2/GPU-hour a GPU makes 3.6M
    # tokens an hour: $0.5556 per million
    e = economics(1000.0, 700.0, usd_per_gpu_hour=2.0)
    assert float(e["output_tok_s_per_mw"]) == pytest.approx(1000.0 / 700e-6)
    assert float(e["usd_per_million_output_tokens"]) == pytest.approx(2.0 / 3.6)
    assert economics(1000.0, 700.0, power_w=1400.0)["power_source"] == "given per GPU"
    r = run("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--usd-per-gpu-hour", "2", "--json")
    ec = json.loads(r.output)["economics"]
    assert ec["power_w_per_gpu"] == 700 and ec["usd_per_million_output_tokens"] > 0
    r = run("frontier", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-n", "1", "-p", "fp8", "--json")
    doc = json.loads(r.output)
    assert doc["points"][0]["economics"]["output_tok_s_per_mw"] > 0 and "units" in doc


def test_osl_one_says_there_is_no_decode():
    """OSL 1 has no decode phase: the estimate says what its TPOT is (issue 15)."""
    from llm_codesign import ParallelPlan, Workload, estimate

    e = estimate("llama-3.1-8b", "h100-sxm", "bf16", ParallelPlan(), Workload(128, 1, 128))
    assert any(n.startswith("OSL 1: no token follows the first") for n in e.notes)
    e2 = estimate("llama-3.1-8b", "h100-sxm", "bf16", ParallelPlan(), Workload(128, 2, 128))
    assert not any(n.startswith("OSL 1") for n in e2.notes)
