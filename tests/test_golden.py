"""Golden outputs: whole CLI renderings compared with files under tests/golden/.

Tier 2 of STYLE.md rule 12: these pin what the code prints today, they do not check it is right
(hand-worked numbers live in the unit tests). A change that moves a prediction or a table
updates its golden in the same commit:

    PYTHONPATH=src python -m pytest tests/test_golden.py --update-goldens

Rendering is deterministic (STYLE.md rule 13): every command renders to a fixed-width rich
console, run here with no colour and no terminal; wall-clock times and tmp paths are masked,
and JSON floats are rounded to 6 significant digits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from llm_codesign.cli import main

DATA = Path(__file__).parent / "data"

# No colour, no terminal, a fixed width: rich renders the same text on every machine.
ENV = {
    "COLUMNS": "120",
    "LINES": "50",
    "NO_COLOR": "1",
    "TERM": "dumb",
    "FORCE_COLOR": None,
    "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None,
}

# Keys whose values are wall-clock measurements or dates, not predictions.
VOLATILE_KEYS = {"elapsed_s", "timestamp", "date", "wall_s"}


def normalize_text(text: str, tmp: Path | None = None) -> str:
    if tmp is not None:
        text = text.replace(str(tmp), "<tmp>")
    text = re.sub(
        r" in \d+(?:\.\d+)? s\b", " in <elapsed> s", text
    )  # frontier: "... feasible) in 0.02 s"
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _round(obj):
    if isinstance(obj, dict):
        return {k: _round(v) for k, v in obj.items() if k not in VOLATILE_KEYS}
    if isinstance(obj, list):
        return [_round(v) for v in obj]
    if isinstance(obj, float):
        return float(f"{obj:.6g}")
    return obj


def normalize_json(text: str) -> str:
    return json.dumps(_round(json.loads(text)), indent=2) + "\n"


def cli(*args: str) -> str:
    r = CliRunner(env=ENV).invoke(main, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


EST_70B = [
    "estimate",
    "-m",
    "llama-3.1-70b",
    "-g",
    "h200-sxm",
    "-p",
    "fp8",
    "--tp",
    "8",
    "-c",
    "64",
]
EST_R1 = [
    "estimate",
    "-m",
    "deepseek-r1",
    "-g",
    "b200",
    "-p",
    "nvfp4",
    "--tp",
    "8",
    "--ep",
    "8",
    "--attention-dp",
    "-c",
    "256",
]

TEXT_CASES = {
    "estimate_llama-3.1-70b_h200_fp8_tp8_c64.txt": EST_70B,
    "estimate_deepseek-r1_b200_nvfp4_tp8_ep8_adp_c256.txt": EST_R1,
    "models.txt": ["models"],
    "hardware.txt": ["hardware"],
    "frontier_llama-3.1-8b_h100_n2_fp8.txt": [
        "frontier",
        "-m",
        "llama-3.1-8b",
        "-g",
        "h100-sxm",
        "--num-gpus",
        "2",
        "--isl",
        "512",
        "--osl",
        "128",
        "-p",
        "fp8",
        "--workers",
        "1",
        "--no-progress",
    ],
    "lint_llama-3.1-8b_h100_bf16.txt": [
        "lint",
        "-m",
        "llama-3.1-8b",
        "-g",
        "h100-sxm",
        "-p",
        "bf16",
    ],
    "regimes_llama-3.1-8b_h200.txt": ["regimes", "-m", "llama-3.1-8b", "-g", "h200-sxm"],
    "gemm_h100_bf16_m-sweep.txt": [
        "gemm",
        "-g",
        "h100-sxm",
        "--dtype",
        "bf16",
        "--m",
        "1,64,4096",
        "--n",
        "8192",
        "--k",
        "8192",
    ],
    "search_llama-3.1-8b_h200.txt": [
        "search",
        "-m",
        "llama-3.1-8b",
        "-g",
        "h200-sxm",
        "-w",
        "1024/1024",
        "--hidden-scales",
        "1,1.25",
        "--layer-scales",
        "0.75,1",
    ],
    "validate_serving_small.txt": ["validate", "--data", str(DATA / "serving_small.csv")],
}

JSON_CASES = {
    "estimate_llama-3.1-70b_h200_fp8_tp8_c64.json": EST_70B + ["--json"],
    "estimate_deepseek-r1_b200_nvfp4_tp8_ep8_adp_c256.json": EST_R1 + ["--json"],
}


@pytest.mark.parametrize("name", sorted(TEXT_CASES))
def test_table_output(name, golden):
    golden(name, normalize_text(cli(*TEXT_CASES[name]), DATA))


@pytest.mark.parametrize("name", sorted(JSON_CASES))
def test_json_output(name, golden):
    golden(name, normalize_json(cli(*JSON_CASES[name])))


@pytest.fixture
def checkpoint(student_t_checkpoint):
    """The shared Student-t checkpoint (tests/conftest.py)."""
    return student_t_checkpoint[0]


def test_quant_inspect_output(checkpoint, golden):
    out = cli("quant", "inspect", str(checkpoint), "--max-rows", "6")
    golden("quant_inspect_student_t.txt", normalize_text(out, checkpoint.parent))


def test_normalizers_mask_only_volatile_parts():
    assert (
        normalize_text("120 points (120 feasible) in 0.02 s  \nx")
        == "120 points (120 feasible) in <elapsed> s\nx\n"
    )
    assert normalize_json('{"a": 0.1234567891, "elapsed_s": 3.2, "b": [1, 2.0e-9]}') == (
        '{\n  "a": 0.123457,\n  "b": [\n    1,\n    2e-09\n  ]\n}\n'
    )
