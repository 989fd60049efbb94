"""Regimes and Amdahl: the arithmetic, the four quadrants and the blog's 77%-attention example."""

import json
import math

import pytest
from click.testing import CliRunner

from llm_codesign import load_hardware, load_model
from llm_codesign.advise.regimes import amdahl_speedup, amdahl_table, candidate_plans, regimes
from llm_codesign.cli import main
from llm_codesign.errors import SpecError


def test_amdahl_arithmetic():
    assert amdahl_speedup(0.77, 2.0) == pytest.approx(1 / (0.23 + 0.385))
    assert amdahl_speedup(0.0, 2.0) == 1.0
    assert amdahl_speedup(1.0, 2.0) == 2.0
    assert amdahl_speedup(0.5, 1e12) == pytest.approx(2.0)
    t = amdahl_table({"attention": 0.77, "ffn": 0.15})
    assert t["ffn"]["gain_pct"] == pytest.approx((1 / (1 - 0.075) - 1) * 100)
    assert t["attention"]["max_speedup"] == pytest.approx(1 / 0.23)
    assert math.isinf(amdahl_table({"x": 1.0})["x"]["max_speedup"])
    for bad in ((1.2, 2.0), (-0.1, 2.0), (0.5, 0.0)):
        with pytest.raises(
            SpecError, match=f"amdahl: fraction={bad[0]} must lie in \\[0, 1\\] and factor={bad[1]}"
        ):
            amdahl_speedup(*bad)


def test_candidate_plans_respect_domain_and_heads():
    plans = candidate_plans(load_model("deepseek-r1"), load_hardware("h200-sxm"))
    assert max(p.tp for p in plans) == 8
    assert any(p.attention_dp and p.ep == 8 for p in plans)
    gb = candidate_plans(load_model("llama-3.1-70b"), load_hardware("gb200"))
    assert any(p.cp > 1 for p in gb) and all(p.attention_tp <= 64 for p in gb)


def test_four_quadrants_split_sums_to_one_and_follow_the_blog_framing():
    r = regimes("llama-3.1-70b", "h200-sxm", "fp8")
    names = [g.name for g in r.regimes]
    assert names == ["short-throughput", "short-latency", "long-throughput", "long-latency"]
    by = {g.name: g for g in r.regimes}
    for g in r.regimes:
        assert sum(g.fractions.values()) == pytest.approx(1.0)
        assert sum(g.resources.values()) == pytest.approx(1.0)
        assert g.bound in ("compute", "memory", "network", "overhead")
    # long-context throughput serving spends more of its time in attention than short-context
    assert (
        by["long-throughput"].fractions["attention"] > by["short-throughput"].fractions["attention"]
    )
    # latency serving: more parallelism, higher share of communication and fixed overheads
    for ctx in ("short", "long"):
        lat, thr = by[f"{ctx}-latency"], by[f"{ctx}-throughput"]
        assert lat.point.tok_s_per_user > thr.point.tok_s_per_user
        assert lat.point.plan.tp >= thr.point.plan.tp
        assert (lat.fractions["communication"] + lat.fractions["other"]) > (
            thr.fractions["communication"] + thr.fractions["other"]
        )


def test_blog_77_percent_attention_long_context_throughput():
    """Stated setting: Llama-3.1-8B, H200, FP8, ISL 65536 / OSL 1024, throughput goal."""
    r = regimes("llama-3.1-8b", "h200-sxm", "fp8", long_isl=65536, engine="base")
    g = next(x for x in r.regimes if x.name == "long-throughput")
    assert g.fractions["attention"] == pytest.approx(0.77, abs=0.04)
    # "tuning the feed-forward layers yields only marginal gains": 2x FFN gains < 12%
    assert g.amdahl["ffn"]["gain_pct"] < 12
    assert g.amdahl["attention"]["gain_pct"] > 55


def test_pinned_concurrency_and_errors():
    r = regimes("llama-3.1-8b", "h200-sxm", "bf16", throughput_concurrency=16)
    assert r.regimes[0].point.concurrency == 16
    with pytest.raises(SpecError, match="osl=0 must be >= 1"):
        regimes("llama-3.1-8b", "h200-sxm", osl=0)


def test_cli_json_contract():
    res = CliRunner().invoke(
        main, ["regimes", "--model", "llama-3.1-8b", "--hardware", "h200-sxm", "--json"]
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert len(d["regimes"]) == 4
    g = d["regimes"][0]
    assert {"name", "isl", "osl", "concurrency", "fractions", "bound", "amdahl"} <= set(g)
    assert set(g["fractions"]) == {"attention", "ffn", "communication", "other"}
    assert set(g["amdahl"]["attention"]) >= {"fraction", "speedup", "gain_pct", "max_speedup"}
