"""CLI: JSON contracts, bad input exits 2 with one line and no traceback."""

import json

import pytest
from click.testing import CliRunner
from contract import CONTRACT_KEYS

from llm_codesign.cli import main


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_estimate_json_contract():
    r = run(
        "estimate",
        "--model",
        "llama-3.1-70b",
        "--hardware",
        "h200-sxm",
        "--precision",
        "fp8",
        "--tp",
        "8",
        "--isl",
        "1024",
        "--osl",
        "1024",
        "--concurrency",
        "64",
        "--json",
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert CONTRACT_KEYS <= set(d)
    assert d["num_gpus"] == 8 and d["fits_in_memory"] is True
    assert set(d["breakdown"]) >= {"prefill", "decode"}
    assert "NaN" not in r.output and "Infinity" not in r.output


def test_estimate_num_gpus_fills_with_replicas():
    r = run(
        "estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--tp", "2", "--num-gpus", "8", "--json"
    )
    assert r.exit_code == 0 and json.loads(r.output)["num_gpus"] == 8


@pytest.mark.parametrize(
    "args,needle",
    [
        (["-m", "nope", "-g", "h200-sxm"], "unknown model"),
        (["-m", "llama-3.1-8b", "-g", "nope"], "unknown hardware"),
        (["-m", "llama-3.1-8b", "-g", "h100-sxm", "-p", "nvfp4"], "no native nvfp4"),
        (["-m", "llama-3.1-70b", "-g", "h200-sxm", "--tp", "3"], "tp=3 does not divide"),
        (
            ["-m", "llama-3.1-70b", "-g", "h200-sxm", "--isl", "1000000000"],
            "exceeds the supported maximum",
        ),
        (
            ["-m", "llama-3.1-70b", "-g", "h200-sxm", "--tp", "8", "--num-gpus", "12"],
            "not a multiple",
        ),
        (["-m", "llama-3.1-8b", "-g", "h200-sxm", "--tp", "0"], "0"),
        (["-m", "llama-3.1-8b", "-g", "h200-sxm", "-p", "fp9"], "unknown precision"),
    ],
)
def test_bad_input_exit_2_one_line(args, needle):
    r = run("estimate", *args)
    assert r.exit_code == 2, r.output
    assert needle in r.output
    assert "Traceback" not in r.output


def test_malformed_config_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama", "hidden_size": "x"}')
    r = run("estimate", "-m", str(p), "-g", "h200-sxm")
    assert r.exit_code == 2 and "hidden_size" in r.output and "Traceback" not in r.output


def test_models_and_hardware_lists():
    d = json.loads(run("models", "--json").output)
    ids = {m["id"] for m in d["models"]}
    assert {"llama-3.1-70b", "deepseek-r1", "gpt-oss-120b", "llama-4-maverick"} <= ids
    assert all(
        {"id", "model_type", "total_params", "active_params", "source"} <= set(m)
        for m in d["models"]
    )
    h = json.loads(run("hardware", "--json").output)
    assert {"id", "name"} <= set(h["hardware"][0])


def test_public_api_is_pinned():
    import llm_codesign

    assert llm_codesign.__all__ == sorted(llm_codesign.__all__)
    for name in (
        "estimate",
        "load_model",
        "load_hardware",
        "parse_precision",
        "ParallelPlan",
        "Workload",
        "CodesignError",
    ):
        assert name in llm_codesign.__all__


def test_every_command_is_registered():
    names = set(main.commands)
    assert {
        "estimate",
        "models",
        "hardware",
        "frontier",
        "report",
        "validate",
        "calibrate-fit",
        "gemm",
        "lint",
        "regimes",
        "search",
        "quant",
        "calibrate",
    } <= names
