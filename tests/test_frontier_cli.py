"""``llm-codesign frontier``: the DESIGN.md JSON contract, CSV, plots, compare, and user errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from contract import POINT_KEYS

from llm_codesign.cli import main
from llm_codesign.explore import pareto_mask

SMALL = [
    "frontier",
    "--model",
    "llama-3.1-8b",
    "--hardware",
    "h100-sxm",
    "--num-gpus",
    "2",
    "--isl",
    "512",
    "--osl",
    "128",
]


def run(args: list[str]):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_json_contract():
    import math

    r = run(SMALL + ["--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    pts = doc["points"]
    assert pts, "a frontier"
    for p in pts:
        assert POINT_KEYS <= set(p)
        assert set(p["plan"]) >= {"tp", "pp", "ep", "dp", "attention_dp", "cp"}
        assert p["num_gpus"] <= 2
    x = [p["tok_s_per_user"] for p in pts]
    assert x == sorted(x)
    assert pareto_mask(np.array(x), np.array([p["output_tok_s_per_gpu"] for p in pts])).all()
    # the area is the log-uniform mean over [lo, hi] of the staircase F(u) = max{y_i : x_i >= u}:
    # sum of y_i * ln(x_i / x_(i-1)) over the steps, clipped to the range, / ln(hi / lo)
    lo, hi = doc["area_range"]
    y = [p["output_tok_s_per_gpu"] for p in pts]
    steps = zip([lo] + x[:-1], x, y)
    area = sum(
        yi * math.log(min(b, hi) / max(a, lo)) for a, b, yi in steps if min(b, hi) > max(a, lo)
    )
    assert doc["area"] == pytest.approx(area / math.log(hi / lo), rel=1e-9)
    # each reading is that staircase at its tok/s/user
    assert {"tok_s_per_user", "output_tok_s_per_gpu", "plan"} <= set(doc["readings"][0])
    for r in doc["readings"]:
        above = [yi for xi, yi in zip(x, y) if xi >= r["tok_s_per_user"]]
        assert r["output_tok_s_per_gpu"] == (pytest.approx(max(above), rel=1e-9) if above else None)
    assert sorted(doc["precisions"]) == ["bf16", "fp8"]


def test_targets_and_launch_settings_in_json():
    r = run(SMALL + ["--precision", "fp8", "--tpot-ms", "10", "--ttft-ms", "200", "--json"])
    assert r.exit_code == 0, r.output
    best = json.loads(r.output)["best"]
    assert best["tpot_ms"] <= 10 and best["ttft_ms"] <= 200
    # the FP8 point loads the published FP8 checkpoint its accuracy estimate comes from
    assert best["accuracy"]["kind"] == "published" and best["accuracy"]["checkpoint"]
    assert best["launch"]["vllm"].startswith(f"vllm serve {best['accuracy']['checkpoint']}")
    assert "max_batch_size" in best["launch"]["trtllm"]["config_yaml"]


def test_table_run_writes_csv_and_plots(tmp_path):
    csv_path, plot = tmp_path / "pts.csv", tmp_path / "frontier"
    r = run(
        SMALL
        + [
            "--precision",
            "fp8",
            "--csv",
            str(csv_path),
            "--plot",
            str(plot),
            "--min-tok-s-per-user",
            "50",
        ]
    )
    assert r.exit_code == 0, r.output
    assert csv_path.read_text().startswith("precision,mode,tp,")
    assert (tmp_path / "frontier.png").stat().st_size > 1000
    assert (tmp_path / "frontier.svg").read_text().lstrip().startswith("<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frontier.png", "frontier.svg", "pts.csv"]


def test_compare_hardware(tmp_path):
    r = run(
        [
            "frontier",
            "-m",
            "llama-3.1-8b",
            "-n",
            "1",
            "--isl",
            "512",
            "--osl",
            "128",
            "-p",
            "fp8",
            "-g",
            "h100-sxm",
            "--compare",
            "hardware=h100-sxm,h200-sxm",
            "--json",
            "--plot",
            str(tmp_path / "cmp.svg"),
        ]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [d["design"] for d in doc["comparison"]] == ["h100-sxm", "h200-sxm"]
    assert doc["comparison"][1]["area_vs_first"] > 1.0  # more HBM bandwidth: frontier further out
    assert {p["design"] for p in doc["points"]} == {"h100-sxm", "h200-sxm"}
    assert (tmp_path / "cmp.svg").exists()


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--precision", "nvfp4"], "nvfp4"),
        (["--precision", "fp9"], "fp9"),
        (["--compare", "speed=1,2"], "--compare"),
        (["--area-range", "100,10"], "--area-range"),
        (["--at", "fast"], "--at"),
        (["--plot", "out.pdf"], ".png or .svg"),
    ],
)
def test_user_errors_exit_2_with_one_line(extra, needle):
    r = CliRunner().invoke(main, SMALL + extra)
    assert r.exit_code == 2
    assert needle in r.output and "Traceback" not in r.output


def test_unknown_model_is_a_user_error():
    r = CliRunner().invoke(main, ["frontier", "-m", "no-such-model", "-g", "h100-sxm"])
    assert r.exit_code == 2 and "no-such-model" in r.output
