"""Hostile inputs (issue 15): a generated corpus of configs, hardware, engine and profile files,
safetensors headers, CLI argument strings and paths, run through the CLI. Every case must end in
exit code 2 with a one-line error (``error: ...``, or click's ``Error: ...`` for a usage error)
or be accepted (exit 0), never a traceback, and within ``CASE_TIMEOUT_S``.

``python tests/test_hostile_inputs.py`` prints the outcome counts and the RESULTS.md section.
"""

from __future__ import annotations

import collections
import copy
import json
import math
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from llm_codesign.cli import main
from llm_codesign.quant import write_safetensors

CASE_TIMEOUT_S = 10.0
DATA = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data"
HUGE_INT = "9" * 4400  # past Python's 4,300-digit int/str conversion limit
LONG = "a" * 5000


@dataclass(frozen=True)
class Case:
    kind: str  # corpus family
    name: str
    argv: tuple[str, ...]
    expect: str  # "error" or "ok"


# ---------------------------------------------------------------------------------------------
# the corpus
# ---------------------------------------------------------------------------------------------

ALIAS_BOMB = "".join(
    f"{k}: &{k} [{', '.join([f'*{p}'] * 9 if p else ['xxxxxxxx'] * 9)}]\n"
    for k, p in zip("abcdefgh", ["", *"abcdefg"])
)
BAD_VALUES = {
    "zero": "0",
    "negative": "-1",
    "1e12": "1000000000000",
    "1e15": "1e15",
    "nan": "NaN",
    "inf": "Infinity",
    "huge_digits": HUGE_INT,
    "string": '"x"',
    "list": "[1]",
    "nested_list": "[[1]]",
    "mapping": '{"a": 1}',
    "bool": "true",
    "fraction": "1.5",
}


def _json_with(cfg: dict, key: str, raw: str) -> str:
    """``cfg`` as JSON text with ``key`` set to the raw JSON token ``raw`` (NaN, 4400 digits)."""
    marker = "__HOSTILE__"
    out = dict(cfg)
    out[key] = marker
    return json.dumps(out).replace(f'"{marker}"', raw)


def _model_cases(tmp: Path) -> list[Case]:
    base = json.loads((DATA / "models" / "llama-3.1-8b.json").read_text())["config"]
    est = ("-g", "h100-sxm", "--isl", "128", "--osl", "16")
    cases = []

    def add(name: str, text: str | bytes, expect: str = "error", suffix: str = ".json") -> None:
        path = tmp / f"model-{len(cases)}{suffix}"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        cases.append(Case("model config", name, ("estimate", "-m", str(path), *est), expect))

    add("valid", json.dumps(base), "ok")
    add("valid with a UTF-8 BOM", "\ufeff" + json.dumps(base), "ok")
    for key in (
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "vocab_size",
        "intermediate_size",
        "head_dim",
        "model_type",
    ):
        for label, raw in BAD_VALUES.items():
            # an unknown model_type is read by the common conventions, with a warning
            expect = "ok" if (key, label) == ("model_type", "string") else "error"
            add(f"{key}={label}", _json_with(base, key, raw), expect)
    add(
        "heads exceed hidden",
        json.dumps({**base, "num_attention_heads": 8192, "hidden_size": 4096}),
    )
    add("heads do not divide hidden", json.dumps({**base, "num_attention_heads": 30}))
    gptj = {"model_type": "gptj", "n_embd": 64, "n_layer": 2, "n_head": 128, "vocab_size": 100}
    add("gptj heads exceed n_embd", json.dumps(gptj))
    falcon = {**base, "model_type": "falcon", "num_attention_heads": 8192}
    add("falcon heads exceed hidden", json.dumps(falcon))
    add("duplicate key", json.dumps(base)[:-1] + ', "hidden_size": 8192}')
    add("nested 100 deep", json.dumps({**base, "x": json.loads("[" * 100 + "]" * 100)}))
    add("nested 100000 deep", "[" * 100000 + "]" * 100000)
    add("top-level list", "[1, 2]")
    add("empty file", "")
    add("truncated", json.dumps(base)[:40])
    add("not UTF-8", b"\xff\xfe{")
    scout = json.loads((DATA / "models" / "llama-4-scout.json").read_text())["config"]
    scout_text = dict(scout["text_config"])
    scout_text["moe_layers"] = [[1]]
    add("llama4 moe_layers [[1]]", json.dumps({**scout, "text_config": scout_text}))
    qwen = json.loads((DATA / "models" / "qwen3-30b-a3b.json").read_text())["config"]
    add("qwen3_moe mlp_only_layers [[1]]", json.dumps({**qwen, "mlp_only_layers": [[1]]}))
    add("qwen3_moe mlp_only_layers [1e12]", json.dumps({**qwen, "mlp_only_layers": [1e12]}))
    mm = json.loads((DATA / "models" / "minimax-m2.5.json").read_text())["config"]
    add("minimax attn_type_list [[1]]", json.dumps({**mm, "attn_type_list": [[1]] * 62}))
    add("YAML alias bomb as a config", ALIAS_BOMB, suffix=".yaml")
    return cases


def _yaml_cases(tmp: Path, kind: str, base_file: Path, flag: tuple[str, ...]) -> list[Case]:
    text = base_file.read_text()
    base = yaml.safe_load(text)
    cases = []

    def add(name: str, body: str, expect: str = "error") -> None:
        path = tmp / f"{kind.split()[0]}-{len(cases)}.yaml"
        path.write_text(body, encoding="utf-8")
        cases.append(Case(kind, name, (*flag[:-1], flag[-1].format(path=path)), expect))

    add("valid", text, "ok")
    add(
        "alias bomb appended",
        text + "notes_bomb:\n" + "".join("  " + x for x in ALIAS_BOMB.splitlines(keepends=True)),
    )
    add("alias bomb alone", ALIAS_BOMB)
    add("anchor and alias under sources", text + "x_a: &a {k: 1}\nx_b: *a\n")
    first_key = next(iter(base))
    add("duplicate top-level key", text + f"{first_key}: {base[first_key]!r}\n")
    add("nested 50 deep", text + "deep: " + "[" * 50 + "]" * 50 + "\n")
    add("invalid YAML", text + "\n  - : :\n\t[")
    add("top-level list", "- 1\n- 2\n")
    add("huge integer", text + f"huge: {HUGE_INT}\n")
    numeric = [
        k for k, v in base.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    for key in numeric[:6]:
        for label, raw in (
            ("nan", ".nan"),
            ("inf", ".inf"),
            ("1e300", "1.0e+300"),
            ("negative", "-1"),
            ("string", "x"),
            ("list", "[1]"),
            ("mapping", "{a: 1}"),
            ("huge_digits", HUGE_INT),
        ):
            data = copy.deepcopy(base)
            data[key] = "__HOSTILE__"
            add(f"{key}={label}", yaml.safe_dump(data).replace("__HOSTILE__", raw))
    for key in ("sources", "aliases", "notes"):
        if key in base:
            for label, raw in (("scalar", "7"), ("list of lists", "[[1]]")):
                data = copy.deepcopy(base)
                data[key] = "__HOSTILE__"
                expect = "ok" if key == "notes" else "error"  # notes: free text, kept as str
                body = yaml.safe_dump(data).replace("'__HOSTILE__'", "__HOSTILE__")
                add(f"{key}={label}", body.replace("__HOSTILE__", raw), expect)
    return cases


def _profile_cases(tmp: Path) -> list[Case]:
    cases = []
    est = ("estimate", "-m", "llama-3.1-8b", "-g", "h200-sxm", "--isl", "128", "--osl", "16")

    def add(name: str, body: str, suffix: str = ".yaml") -> None:
        path = tmp / f"profile-{len(cases)}{suffix}"
        path.write_text(body, encoding="utf-8")
        cases.append(Case("calibration profile", name, (*est, "--profile", str(path)), "error"))

    add("alias bomb", "profile_version: 1\n" + ALIAS_BOMB)
    add("duplicate key", "profile_version: 1\nprofile_version: 2\n")
    add("no version", "device: {name: x}\n")
    add("version 1e12", "profile_version: 1000000000000\n")
    add("version huge digits", f"profile_version: {HUGE_INT}\n")
    add("version nan", "profile_version: .nan\n")
    add("measurements a list", "profile_version: 1\ndevice: {name: x}\nmeasurements: [1]\n")
    add("empty measurements", "profile_version: 1\ndevice: {name: x}\nmeasurements: {}\n")
    add("json duplicate", '{"profile_version": 1, "profile_version": 1}', ".json")
    add("not a mapping", "[]", ".json")
    return cases


def _safetensors_file(path: Path, header: dict | bytes, data: bytes = b"", length=None) -> Path:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(raw) if length is None else length
    path.write_bytes(n.to_bytes(8, "little") + raw + data)
    return path


def _safetensors_cases(tmp: Path) -> list[Case]:
    cases = []

    def add(name: str, path: Path, expect: str = "error", *extra: str) -> None:
        cases.append(
            Case(
                "safetensors",
                name,
                ("quant", "inspect", str(path), "--formats", "fp8", *extra),
                expect,
            )
        )

    def hdr(name: str, **entry) -> Path:
        body = {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16], **entry}
        return _safetensors_file(tmp / f"st-{len(cases)}.safetensors", {"w": body}, bytes(16))

    ok = write_safetensors(tmp / "ok.safetensors", {"w": np.ones((4, 32), np.float32)})
    add("valid", ok, "ok")
    x = np.ones((4, 32), np.float32)
    x[1, 3] = np.nan
    add("tensor with NaN", write_safetensors(tmp / "nan.safetensors", {"w": x}), "ok")
    x[1, 3] = np.inf
    add("tensor with inf", write_safetensors(tmp / "inf.safetensors", {"w": x}), "ok")
    add("shape [0, 1e30] float", hdr("w", shape=[0, 1e30], data_offsets=[0, 0]))
    add("shape [0, 10**30] int", hdr("w", shape=[0, 10**30], data_offsets=[0, 0]))
    add("70 dimensions", hdr("w", shape=[1] * 70, data_offsets=[0, 4]))
    add("70 dimensions with a zero", hdr("w", shape=[0] * 70, data_offsets=[0, 0]))
    add("negative dim", hdr("w", shape=[-1, 2]))
    add("unknown dtype", hdr("w", dtype="F128"))
    add("offsets past the buffer", hdr("w", data_offsets=[0, 10**20]))
    add("offsets reversed", hdr("w", data_offsets=[16, 0]))
    add("shape is a string", hdr("w", shape="2x2"))
    p = _safetensors_file(tmp / "huge-len.safetensors", b"{}", length=2**63)
    add("header length 2**63", p)
    p = _safetensors_file(tmp / "long-len.safetensors", b"{}", length=99_000_000)
    add("header length past the file", p)
    add("not JSON", _safetensors_file(tmp / "notjson.safetensors", b"{not json"))
    add("duplicate tensor", _safetensors_file(tmp / "dup.safetensors", b'{"a": 1, "a": 2}'))
    add("nested 100000 deep", _safetensors_file(tmp / "deep.safetensors", b"[" * 100000))
    (tmp / "three.safetensors").write_bytes(b"abc")
    add("3-byte file", tmp / "three.safetensors")
    add("include '['", ok, "error", "--include", "[")
    add("include '(?P<'", ok, "error", "--include", "(?P<")
    add("unknown format", ok, "error", "--formats", "fp3")
    return cases


def _argument_cases(tmp: Path) -> list[Case]:
    cases = []

    def add(kind: str, name: str, argv: tuple[str, ...], expect: str = "error") -> None:
        cases.append(Case(kind, name, argv, expect))

    gemm = ("gemm", "-g", "h100-sxm")
    for value in (
        "1e400",
        "99999999999999999999",
        HUGE_INT,
        "-1",
        "0",
        "",
        "nan",
        "1:1e12",
        "1:10:0",
        "1:100000000000",
        "1,,x",
        "2147483648",
    ):
        add("cli argument", f"gemm --m {value[:24]}", (*gemm, "--m", value))
    add(
        "cli argument",
        "gemm --m 1024 (valid)",
        (*gemm, "--m", "1024", "--n", "1024", "--k", "1024"),
        "ok",
    )
    add("cli argument", "gemm --tile 0x0", (*gemm, "--tile", "0x0"))
    est = ("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm")
    for args in (
        ("--isl", "0"),
        ("--isl", "1e400"),
        ("--isl", HUGE_INT),
        ("-c", "-1"),
        ("-p", "bf16+nonsense"),
        ("-p", LONG),
        ("--engine", "nope"),
        ("--tp", "3"),
        ("--spec-tokens", "-1"),
    ):
        add("cli argument", f"estimate {args[0]} {args[1][:24]}", (*est, *args))
    fr = ("frontier", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-n", "1")
    for value in ("10,inf", "nan,10", "0,10", "10,1", "a,b", "10", "-inf,10", "1e400,1e401"):
        add("cli argument", f"frontier --area-range {value}", (*fr, "--area-range", value))
    se = ("search", "-m", "llama-3.1-8b", "-g", "h100-sxm")
    for args in (
        ("--tolerance", "nan"),
        ("--tolerance", "inf"),
        ("--quality-tolerance", "nan"),
        ("--quality-tolerance", "inf"),
        ("--quality-tolerance", "-1"),
        ("--objective", "throughput", "--target-tok-s-user", "nan"),
        ("--objective", "throughput", "--target-tok-s-user", "inf"),
        ("--hidden-scales", "nan"),
        ("--layer-scales", "1e400"),
        ("--linear-shares", "inf"),
    ):
        add("cli argument", f"search {' '.join(args)}", (*se, *args))
    zero = tmp / "zero-rows.csv"
    header = (DATA / "validation" / "serving.csv").read_text().splitlines()[0]
    zero.write_text(header + "\n")
    out = tmp / "fitted.yaml"
    add(
        "cli argument",
        "calibrate-fit on zero rows",
        ("calibrate-fit", "--data", str(zero), "--engine", "vllm", "--out", str(out)),
    )
    # paths
    for flag, base in (
        ("-m", est[:1] + ("-g", "h100-sxm")),
        ("-g", ("estimate", "-m", "llama-3.1-8b")),
    ):
        for label, value in (
            ("5,000 characters", LONG),
            ("5,000 characters under a folder", f"{tmp}/{LONG}"),
            ("hub id of 5,000 characters", f"org/{LONG}"),
            ("NUL byte", f"{tmp}/a\x00b.json"),
            ("missing file", str(tmp / "missing.json")),
            ("a folder", str(tmp)),
            ("/dev/null", "/dev/null"),
            ("empty string", ""),
        ):
            add("path", f"{flag} {label}", (*base, flag, value))
    for label, value in (
        ("5,000 characters", LONG),
        ("NUL byte", "a\x00b"),
        ("a folder", str(tmp)),
    ):
        add("path", f"--engine {label}", (*est, "--engine", value))
        if label != "NUL byte":  # click.Path's own os.stat raises on NUL (no shell passes one)
            add("path", f"--profile {label}", (*est, "--profile", value))
        add("path", f"quant inspect {label}", ("quant", "inspect", value))
    return cases


def build_corpus(tmp: Path) -> list[Case]:
    engines = DATA / "engines"
    return [
        *_model_cases(tmp),
        *_yaml_cases(
            tmp,
            "hardware YAML",
            DATA / "hardware" / "h100-sxm.yaml",
            ("estimate", "-m", "llama-3.1-8b", "--isl", "128", "--osl", "16", "-g", "{path}"),
        ),
        *_yaml_cases(
            tmp,
            "engine YAML",
            engines / "vllm.yaml",
            (
                "estimate",
                "-m",
                "llama-3.1-8b",
                "-g",
                "h100-sxm",
                "--isl",
                "128",
                "--osl",
                "16",
                "--engine",
                "{path}",
            ),
        ),
        *_profile_cases(tmp),
        *_safetensors_cases(tmp),
        *_argument_cases(tmp),
    ]


# ---------------------------------------------------------------------------------------------
# running and classifying
# ---------------------------------------------------------------------------------------------


def run_case(case: Case) -> tuple[str, str]:
    """``(outcome, detail)``: outcome is ``clean error``, ``accepted``, ``traceback``, ``hang``
    or ``unclean error`` (exit 2 without one error line, or another exit code)."""
    box: dict = {}

    def target() -> None:
        box["result"] = CliRunner().invoke(main, list(case.argv))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(CASE_TIMEOUT_S)
    if thread.is_alive():
        return "hang", f"still running after {CASE_TIMEOUT_S:.0f} s"
    result = box["result"]
    text = result.output
    if (result.exception is not None and not isinstance(result.exception, SystemExit)) or (
        "Traceback" in text
    ):
        exc = result.exception
        return "traceback", f"{type(exc).__name__}: {str(exc)[:200]}" if exc else text[-300:]
    if result.exit_code == 0:
        return "accepted", ""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("error: ", "Error: "))]
    stray = [
        line
        for line in lines
        if not line.startswith(("error: ", "Error: ", "warning: ", "Usage: ", "Try "))
    ]
    if result.exit_code == 2 and len(errors) == 1 and not stray:
        return "clean error", errors[0][:300]
    return "unclean error", f"exit {result.exit_code}: {result.stderr[-300:]!r}"


def run_corpus(tmp: Path) -> tuple[collections.Counter, list[tuple[Case, str, str]]]:
    counts: collections.Counter = collections.Counter()
    rows = []
    for case in build_corpus(tmp):
        outcome, detail = run_case(case)
        counts[outcome] += 1
        rows.append((case, outcome, detail))
    return counts, rows


def test_hostile_corpus(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    counts, rows = run_corpus(tmp_path)
    with capsys.disabled():
        print(
            f"\nhostile inputs: {len(rows)} cases, "
            + ", ".join(
                f"{k} {counts[k]}"
                for k in ("clean error", "traceback", "hang", "accepted", "unclean error")
            )
        )
    wrong = [
        f"[{c.kind}] {c.name}: {outcome} (expected {c.expect}) {detail}"
        for c, outcome, detail in rows
        if outcome != {"error": "clean error", "ok": "accepted"}[c.expect]
    ]
    assert not wrong, "\n".join(wrong)
    assert len(rows) >= 250


# ---------------------------------------------------------------------------------------------
# the examples, one by one
# ---------------------------------------------------------------------------------------------


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


def _one_line_error(result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    line = result.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line, line
    for needle in needles:
        assert needle in line, line
    return line


def test_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    from llm_codesign.errors import SpecError
    from llm_codesign.specs._load import read_mapping

    hw = (DATA / "hardware" / "h100-sxm.yaml").read_text()
    for i, body in enumerate([ALIAS_BOMB, hw + "notes: &n x\nalso: *n\n"]):
        path = tmp_path / f"bomb{i}.yaml"
        path.write_text(body)
        with pytest.raises(SpecError, match="YAML (anchor|alias)"):
            read_mapping(path)
    path = tmp_path / "bomb.yaml"
    path.write_text(
        hw.replace("id: h100-sxm", "id: h100-sxm\n")
        + "sources_x:\n"
        + "".join("  " + line for line in ALIAS_BOMB.splitlines(keepends=True))
    )
    _one_line_error(_cli("estimate", "-m", "llama-3.1-8b", "-g", str(path)), "anchor")


def test_duplicate_keys_name_the_key_and_file(tmp_path: Path) -> None:
    engine = tmp_path / "dup-engine.yaml"
    engine.write_text("id: x\nstep_overhead_s: 1.0e-4\nstep_overhead_s: 5.0e-3\n")
    line = _one_line_error(
        _cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", str(engine)),
        "duplicate key 'step_overhead_s'",
        "dup-engine.yaml",
    )
    assert "line 3" in line
    cfg = json.loads((DATA / "models" / "llama-3.1-8b.json").read_text())["config"]
    model = tmp_path / "dup-config.json"
    model.write_text(json.dumps(cfg)[:-1] + ', "num_hidden_layers": 64}')
    _one_line_error(
        _cli("estimate", "-m", str(model), "-g", "h100-sxm"),
        "duplicate key 'num_hidden_layers'",
        "dup-config.json",
    )


def test_nesting_and_digits_are_bounded(tmp_path: Path) -> None:
    from llm_codesign.errors import SpecError
    from llm_codesign.specs._load import read_mapping

    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 40 + "]" * 40 + "\n")
    with pytest.raises(SpecError, match="nested deeper than 32"):
        read_mapping(deep)
    digits = tmp_path / "digits.json"
    digits.write_text('{"hidden_size": ' + HUGE_INT + "}")
    with pytest.raises(SpecError, match="digits.json: a value JSON cannot hold as a number"):
        read_mapping(digits)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        (
            "num_hidden_layers",
            10**12,
            "'num_hidden_layers' = 1000000000000 is out of range (1 to 10,000)",
        ),
        ("vocab_size", 10**15, "'vocab_size' = 1000000000000000 is out of range (1 to 16,777,216)"),
        ("vocab_size", 1e15, "'vocab_size' = 1e+15 is out of range"),
        ("hidden_size", float("nan"), "'hidden_size' must be an integer, got nan"),
        ("mlp_only_layers", [[1]], "'mlp_only_layers' entry 0 must be an integer"),
    ],
)
def test_config_integers_are_bounded(tmp_path: Path, field, value, needle) -> None:
    cfg = json.loads((DATA / "models" / "qwen3-30b-a3b.json").read_text())["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, field: value}))
    _one_line_error(_cli("estimate", "-m", str(path), "-g", "h100-sxm"), needle)


def test_heads_must_fit_the_hidden_size(tmp_path: Path) -> None:
    from llm_codesign.errors import SpecError
    from llm_codesign.specs.model_config import model_from_config

    gptj = {"model_type": "gptj", "n_embd": 64, "n_layer": 2, "n_head": 128, "vocab_size": 100}
    with pytest.raises(SpecError, match="n_head=128 exceeds n_embd=64"):
        model_from_config(gptj, model_id="x")
    with pytest.raises(SpecError, match="n_embd=64 is not divisible by n_head=5"):
        model_from_config({**gptj, "n_head": 5}, model_id="x")
    cfg = json.loads((DATA / "models" / "llama-3.1-8b.json").read_text())["config"]
    with pytest.raises(SpecError, match="num_attention_heads=8192 exceeds hidden_size=4096"):
        model_from_config({**cfg, "num_attention_heads": 8192}, model_id="x")
    falcon = {**cfg, "model_type": "falcon", "num_attention_heads": 48}
    with pytest.raises(SpecError, match="hidden_size=4096 is not divisible by num_attention"):
        model_from_config(falcon, model_id="x")
    scout = json.loads((DATA / "models" / "llama-4-scout.json").read_text())["config"]
    bad = {**scout, "text_config": {**scout["text_config"], "moe_layers": [[1]]}}
    with pytest.raises(SpecError, match="'moe_layers' entry 0 must be an integer"):
        model_from_config(bad, model_id="x")


def test_engine_sources_must_be_a_mapping(tmp_path: Path) -> None:
    engine = tmp_path / "e.yaml"
    engine.write_text("id: x\nsources: [1]\n")
    _one_line_error(
        _cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", str(engine)),
        "field 'sources' must be a mapping",
    )


@pytest.mark.parametrize("flag", ["-m", "-g", "--engine", "--profile"])
def test_long_paths_are_one_line_errors(flag: str) -> None:
    args = {"-m": "llama-3.1-8b", "-g": "h100-sxm", flag: LONG}
    argv = ["estimate"] + [x for kv in args.items() for x in kv]
    line = _one_line_error(_cli(*argv), "file name too long" if flag != "--profile" else "")
    assert len(line) < 400


def test_gemm_dimensions_are_bounded() -> None:
    _one_line_error(_cli("gemm", "-g", "h100-sxm", "--m", "1e400"), "expected an integer")
    _one_line_error(
        _cli("gemm", "-g", "h100-sxm", "--m", "99999999999999999999"),
        "dimensions must be integers from 1 to 2,147,483,647",
    )
    line = _one_line_error(_cli("gemm", "-g", "h100-sxm", "--m", HUGE_INT))
    assert len(line) < 400


@pytest.mark.parametrize("value", ["10,inf", "nan,10", "-inf,10"])
def test_area_range_must_be_finite(value: str) -> None:
    _one_line_error(
        _cli("frontier", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--area-range", value),
        "finite positive numbers",
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--quality-tolerance", "nan"),
        ("--quality-tolerance", "inf"),
        ("--tolerance", "nan"),
        ("--objective", "throughput", "--target-tok-s-user", "nan"),
    ],
)
def test_search_tolerances_must_be_finite(args: tuple[str, ...]) -> None:
    _one_line_error(_cli("search", "-m", "llama-3.1-8b", "-g", "h100-sxm", *args))


def test_request_rate_reads_the_whole_number_and_unit() -> None:
    from llm_codesign.validate import map_row

    rows = list(
        __import__("csv").DictReader((DATA / "validation" / "serving.csv").open(encoding="utf-8"))
    )
    base = next(r for r in rows if not isinstance(map_row(0, r), str))

    def load(text: str):
        m = map_row(0, {**base, "concurrency_or_batch": text, "notes": ""})
        return m if isinstance(m, str) else (m.mode, m.load)

    assert load("request rate 1e3 qps") == ("rate", 1000.0)
    assert load("request rate 2.5 qps") == ("rate", 2.5)
    assert load("request rate 12 requests per second") == ("rate", 12.0)
    assert isinstance(load("request rate 1.2.3 qps"), str)
    assert isinstance(load("request rate 0 qps"), str)


def test_calibrate_fit_on_zero_rows_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "zero.csv"
    data.write_text((DATA / "validation" / "serving.csv").read_text().splitlines()[0] + "\n")
    out = tmp_path / "fitted.yaml"
    _one_line_error(
        _cli("calibrate-fit", "--data", str(data), "--engine", "vllm", "--out", str(out)),
        "no row maps to engine 'vllm'",
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ({"shape": [0, 10**30], "data_offsets": [0, 0]}, "not a list of ints from 0 to 2**48"),
        ({"shape": [1] * 70, "data_offsets": [0, 4]}, "has 70 dimensions (at most 16)"),
        ({"shape": [0] * 70, "data_offsets": [0, 0]}, "has 70 dimensions"),
    ],
)
def test_safetensors_shapes_are_bounded(tmp_path: Path, entry: dict, needle: str) -> None:
    path = _safetensors_file(tmp_path / "x.safetensors", {"w": {"dtype": "F32", **entry}}, bytes(4))
    _one_line_error(_cli("quant", "inspect", str(path), "--formats", "fp8"), needle)


def test_quant_include_must_be_a_regex(tmp_path: Path) -> None:
    path = write_safetensors(tmp_path / "w.safetensors", {"w": np.ones((4, 32), np.float32)})
    _one_line_error(
        _cli("quant", "inspect", str(path), "--include", "["), "not a valid regular expression"
    )


def test_nan_tensor_is_not_lossless(tmp_path: Path) -> None:
    from llm_codesign.quant import inspect_checkpoint

    x = np.ones((4, 32), np.float32)
    y = np.linspace(-1, 1, 128, dtype=np.float32).reshape(4, 32)
    x[2, 5] = np.nan
    path = write_safetensors(tmp_path / "w.safetensors", {"bad": x, "good": y})
    r = inspect_checkpoint(path, "fp8,nvfp4")
    bad = [t for t in r["tensors"] if t["name"] == "bad"]
    assert all(t["nonfinite_values"] == 1 and t["sqnr_db"] is None for t in bad)
    for s in r["summary"].values():
        assert s["nonfinite_tensors"] == ["bad"]
        assert s["n_tensors"] == 1 and s["sqnr_db"] is not None and math.isfinite(s["sqnr_db"])
        assert s["most_sensitive_tensors"] == ["good"]
    out = _cli("quant", "inspect", str(path), "--formats", "fp8")
    assert out.exit_code == 0, out.output
    assert "non-finite input" in out.output
    row = next(line for line in out.output.splitlines() if line.startswith("│ bad"))
    assert "inf" not in row.replace("non-finite input", "")


def test_listing_50k_tensor_headers_is_fast(tmp_path: Path) -> None:
    import time

    from llm_codesign.quant.safetensors_io import list_tensors

    n, shards = 50_000, 50
    weight_map = {}
    for s in range(shards):
        header = {
            f"t{s}.{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
            for i in range(n // shards)
        }
        _safetensors_file(tmp_path / f"s{s}.safetensors", header, bytes(4 * (n // shards)))
        weight_map.update({k: f"s{s}.safetensors" for k in header})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    t = time.perf_counter()
    infos = list_tensors(tmp_path)
    assert len(infos) == n
    assert time.perf_counter() - t < 5.0


# ---------------------------------------------------------------------------------------------
# RESULTS.md
# ---------------------------------------------------------------------------------------------


def results_section(counts: collections.Counter, rows: list) -> str:
    by_kind: dict[str, collections.Counter] = {}
    for case, outcome, _ in rows:
        by_kind.setdefault(case.kind, collections.Counter())[outcome] += 1
    cols = ("clean error", "traceback", "hang", "accepted", "unclean error")
    lines = [
        "## Hostile inputs (issue 15)",
        "",
        f"`tests/test_hostile_inputs.py` generates {len(rows)} hostile cases (model configs, "
        "hardware, engine and profile files, safetensors headers, CLI argument strings, paths) "
        "and runs each through the CLI (click's `CliRunner`, a thread with a "
        f"{CASE_TIMEOUT_S:.0f} s limit per case). A clean error is exit code 2 with one "
        "`error: ...` line (or click's one `Error: ...` usage line); accepted is exit 0 for the "
        "valid controls and NaN/inf tensors (flagged `non-finite input`).",
        "",
        "| kind | cases | " + " | ".join(cols) + " |",
        "|---|---:|" + "---:|" * len(cols),
    ]
    for kind, c in by_kind.items():
        lines.append(
            f"| {kind} | {sum(c.values())} | " + " | ".join(str(c[k]) for k in cols) + " |"
        )
    lines.append(
        f"| **all** | **{len(rows)}** | " + " | ".join(f"**{counts[k]}**" for k in cols) + " |"
    )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - prints the counts and the RESULTS.md section
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        counts, rows = run_corpus(Path(d))
    for case, outcome, detail in rows:
        if outcome not in ("clean error", "accepted") or "-v" in sys.argv:
            print(f"[{case.kind}] {case.name}: {outcome} {detail}")
    print(results_section(counts, rows))


def test_measurement_csv_reading_is_robust(tmp_path):
    """A BOM, short and long rows, non-finite, huge and oversized cells: read, or skipped with a
    reason each; never a traceback (issue 15)."""
    import csv as _csv
    import io

    from llm_codesign.validate.mapping import iter_measurements, map_row

    src = Path(__file__).parents[1] / "src/llm_codesign/data/validation/serving.csv"
    header, first = src.read_text(encoding="utf-8").splitlines()[:2]
    cols = header.split(",")

    def edited(**cells: str) -> str:
        row = next(_csv.reader(io.StringIO(first)))
        for k, v in cells.items():
            row[cols.index(k)] = v
        out = io.StringIO()
        _csv.writer(out).writerow(row)
        return out.getvalue().strip()

    def reasons(text: str, encoding: str = "utf-8") -> list:
        f = tmp_path / "m.csv"
        f.write_text(text, encoding=encoding)
        return [map_row(i, r) for i, r in enumerate(iter_measurements(f))]

    good = reasons(f"{header}\n{first}\n")
    assert not isinstance(good[0], str)
    # a byte-order mark is not part of the first column's name
    assert not isinstance(reasons(f"{header}\n{first}\n", "utf-8-sig")[0], str)
    assert reasons(f"{header}\n{cols[0]},x\n") == ["short row (2 of the required columns)"]
    assert reasons(f"{header}\n{first},extra,cells\n")[0].startswith("long row")
    assert reasons(f"{header}\n{edited(value='inf')}\n") == ["value not a finite number"]
    assert reasons(f"{header}\n{edited(value='nan')}\n") == ["value not a finite number"]
    assert reasons(f"{header}\n{edited(value='1e30')}\n")[0].startswith("value beyond")
    assert reasons(f"{header}\n{edited(isl='1e30')}\n")[0].startswith("isl/osl not a number")
    # a notes cell beyond the csv module's 128 KiB default is read
    assert not isinstance(reasons(f"{header}\n{edited(notes='x' * 200_000)}\n")[0], str)
