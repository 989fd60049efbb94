"""Architecture search at constant accuracy, and the scaling-law quality estimate."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign import load_model
from llm_codesign.advise.archsearch import (
    SearchSpace,
    apply_changes,
    generate_variants,
    search,
)
from llm_codesign.advise.quality import (
    ASPECT_BAND,
    chinchilla_loss,
    effective_params,
    estimate_quality,
    shape_penalty,
)
from llm_codesign.cli import main
from llm_codesign.errors import SpecError
from llm_codesign.explore import Curve
from llm_codesign.specs.model_config import model_from_config

SMALL = SearchSpace(hidden_scales=(1.0, 1.25), layer_scales=(0.75, 1.0), experts=(1.0,))


def test_chinchilla_closed_form():
    # E + A / N^alpha + B / D^beta, Hoffmann et al. 2022
    n, d = 70e9, 1.4e12
    assert chinchilla_loss(n, d) == pytest.approx(1.69 + 406.4 / n**0.34 + 410.7 / d**0.28)
    assert chinchilla_loss(2 * n, d) < chinchilla_loss(n, d)
    with pytest.raises(SpecError, match="chinchilla_loss: N=0"):
        chinchilla_loss(0, d)


def test_shape_penalty_band_and_moe_params():
    m = load_model("llama-3.1-70b")  # aspect 102: inside the band
    assert shape_penalty(m) == 0.0
    wide = model_from_config({**m.config, "num_hidden_layers": 8}, model_id="wide")  # aspect 1024
    assert wide.hidden_size / wide.num_layers > ASPECT_BAND[1] and shape_penalty(wide) > 0.05
    ds = load_model("deepseek-r1")
    assert ds.active_params < effective_params(ds) < ds.total_params
    q = estimate_quality(wide, base=m)
    assert not q.holds and q.relative_change > 0
    assert estimate_quality(m, base=m).holds


def test_search_ranks_by_the_frontier_area_by_hand():
    """search's area is the one frontier area (log-uniform mean over 10..1000 tok/s/user)."""
    c = Curve(
        np.array([10.0, 20.0, 30.0]), np.array([100.0, 60.0, 20.0]), ["a", "b", "c"], [1, 2, 3]
    )
    # F = 60 on (10, 20], 20 on (20, 30], 0 beyond: (60 ln 2 + 20 ln 1.5) / ln 100
    assert c.area == pytest.approx((60 * np.log(2) + 20 * np.log(1.5)) / np.log(100))
    assert c.throughput_at(18.0) == 60.0 and c.throughput_at(31.0) == 0.0


def test_variants_stay_within_parameter_tolerance():
    for mid in ("llama-3.1-70b", "deepseek-r1", "gpt-oss-120b", "mixtral-8x7b"):
        m = load_model(mid)
        for tol in (0.01, 0.03):
            for c in generate_variants(m, SearchSpace(kv_heads=(0.5, 1.0)), 256, tol):
                assert abs(c.model.total_params / m.total_params - 1) <= tol
                assert abs(c.model.active_params / m.active_params - 1) <= tol
                # the emitted config.json rebuilds the same model
                again = model_from_config(c.config, model_id="again")
                assert again.total_params == c.model.total_params


def test_search_never_outside_tolerance_and_ranks_best_first():
    r = search(
        "llama-3.1-8b",
        "h200-sxm",
        "fp8",
        space=SMALL,
        param_tolerance=0.02,
        concurrency=(1, 16, 256),
    )
    base = load_model("llama-3.1-8b")
    gains = [v.gain for v in r.variants]
    assert gains == sorted(gains, reverse=True)
    for v in r.variants:
        assert abs(v.total_params / base.total_params - 1) <= 0.02
        assert abs(v.active_params / base.active_params - 1) <= 0.02
        assert v.quality.holds


def test_search_returns_the_original_when_nothing_beats_it():
    r = search(
        "llama-3.1-8b",
        "h200-sxm",
        "fp8",
        space=SearchSpace(hidden_scales=(1.0,), layer_scales=(1.0,)),
        concurrency=(1, 64),
    )
    assert len(r.variants) == 1 and r.variants[0].changes == [] and r.variants[0].gain == 1.0
    assert r.variants[0].config == load_model("llama-3.1-8b").config
    # zero tolerance: no reshaped variant keeps the exact parameter count
    r0 = search(
        "llama-3.1-8b", "h200-sxm", "fp8", space=SMALL, param_tolerance=0.0, concurrency=(1, 64)
    )
    assert r0.variants[0].changes == []


def test_throughput_objective_and_errors():
    r = search(
        "llama-3.1-8b",
        "h200-sxm",
        "fp8",
        space=SMALL,
        objective="throughput",
        target_tok_s_per_user=50,
        concurrency=(1, 16, 128),
    )
    assert r.baseline.objective > 0
    with pytest.raises(
        SpecError, match="objective 'throughput' needs a positive target tok/s/user"
    ):
        search("llama-3.1-8b", "h200-sxm", objective="throughput")
    with pytest.raises(SpecError, match=r"hidden_scales=\(\) must be non-empty"):
        SearchSpace(hidden_scales=())


def test_layer_lists_follow_depth():
    m = load_model("gpt-oss-120b")
    cfg = apply_changes(m, {"layers": 24})
    assert len(cfg["layer_types"]) == 24 and cfg["layer_types"][:2] == m.config["layer_types"][:2]
    scout = load_model("llama-4-scout")
    cfg = apply_changes(scout, {"layers": 40})
    v = model_from_config(cfg, model_id="s40")
    assert v.num_layers == 40 and v.num_moe_layers == 40


def test_cli_json_contract(tmp_path):
    res = CliRunner().invoke(
        main,
        [
            "search",
            "--model",
            "llama-3.1-8b",
            "--hardware",
            "h200-sxm",
            "--workload",
            "1024/1024",
            "--hidden-scales",
            "1,1.25",
            "--layer-scales",
            "0.75,1",
            "--json",
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert {"baseline", "variants"} <= set(d)
    v = d["variants"][0]
    assert {
        "config",
        "total_params",
        "active_params",
        "quality_estimate",
        "gain",
        "changes",
    } <= set(v)
    assert v["quality_estimate"]["kind"].startswith("estimate")
    assert (tmp_path / "variant-1.json").exists()
    bad = CliRunner().invoke(
        main, ["search", "-m", "llama-3.1-8b", "-g", "h200-sxm", "--layer-scales", "x"]
    )
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_hybrid_trade_at_constant_parameters_wins_at_long_context():
    """Trading full-attention layers for Gated DeltaNet ones (issue 12): the FFN width is
    re-solved so total parameters stay within tolerance, the trade is listed as unmodelled
    accuracy, and at 32k context (attention-bound) it beats the original."""
    space = SearchSpace(hidden_scales=(1.0,), layer_scales=(1.0,), linear_shares=(0.0, 0.75))
    r = search("llama-3.1-8b", "h200-sxm", isl=32768, osl=1024, space=space)
    best = r.variants[0]
    assert best.gain > 1.2
    assert any(c["field"] == "linear_pct" and c["to"] == 75 for c in best.changes)
    assert abs(best.total_params / load_model("llama-3.1-8b").total_params - 1) <= 0.02
    assert best.model.layer_mix() == "attention 8 + linear 24"
    assert best.config["linear_num_value_heads"] == 32  # 32 heads x 128 = the query width
    with pytest.raises(SpecError, match="linear_shares"):
        SearchSpace(linear_shares=(1.0,))
