"""HuggingFace ids from the local hub cache (offline) and the checkpoint's own precision."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from llm_codesign import UnknownIdError, estimate, load_model, parse_precision
from llm_codesign.cli import main
from llm_codesign.specs.checkpoint import checkpoint_precision, default_precision
from llm_codesign.specs.hf_cache import hub_cache_dir, parse_hub_id

MODELS = Path(__file__).parents[1] / "src" / "llm_codesign" / "data" / "models"
LLAMA = json.loads((MODELS / "llama-3.1-8b.json").read_text())["config"]
FP8_BLOCK = {
    "activation_scheme": "dynamic",
    "fmt": "e4m3",
    "quant_method": "fp8",
    "weight_block_size": [128, 128],
}


def _cache_repo(cache: Path, repo: str, commit: str, config: dict, ref: str | None = "main"):
    """Write ``models--org--name/snapshots/<commit>/config.json`` (+ ``refs/<ref>``)."""
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    snap = repo_dir / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    if ref:
        (repo_dir / "refs").mkdir(exist_ok=True)
        (repo_dir / "refs" / ref).write_text(commit)
    return snap


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fake hub cache as HF_HUB_CACHE, and no sockets: any connection attempt fails."""
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))

    def no_network(*args, **kwargs):
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    return hub


# ---- cache layout -------------------------------------------------------------------------


def test_cache_dir_order(tmp_path):
    assert hub_cache_dir({"HF_HUB_CACHE": "/a", "HF_HOME": "/b"}) == Path("/a")
    assert hub_cache_dir({"HF_HOME": "/b"}) == Path("/b/hub")
    home = Path(os.path.expanduser("~"))
    assert hub_cache_dir({}) == home / ".cache" / "huggingface" / "hub"


def test_parse_hub_id():
    assert parse_hub_id("Qwen/Qwen2.5-7B-Instruct") == ("Qwen/Qwen2.5-7B-Instruct", None)
    assert parse_hub_id("org/name@v1.0") == ("org/name", "v1.0")
    assert parse_hub_id("llama-3.1-8b") is None
    assert parse_hub_id("dir/config.json") is None
    assert parse_hub_id("/abs/path") is None
    assert parse_hub_id("org/name@../../etc") is None


def test_load_from_cache_by_refs_main(cache):
    snap = _cache_repo(cache, "org/name", "abc123", LLAMA)
    m = load_model("org/name")
    assert m.id == "org/name" and m.name == "org/name"
    assert str(snap / "config.json") in m.source and "HuggingFace cache" in m.source
    assert m.total_params == load_model("llama-3.1-8b").total_params


def test_load_from_cache_via_hf_home(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    _cache_repo(tmp_path / "hf" / "hub", "org/name", "abc123", LLAMA)
    assert load_model("org/name").id == "org/name"


def test_revision_by_ref_and_by_commit(cache):
    _cache_repo(cache, "org/name", "abc123", LLAMA)
    wider = {**LLAMA, "num_hidden_layers": 40}
    _cache_repo(cache, "org/name", "def456", wider, ref="v2")
    assert load_model("org/name").num_layers == 32  # refs/main
    assert load_model("org/name@v2").num_layers == 40  # refs/v2
    m = load_model("org/name@def456")  # a commit hash
    assert m.num_layers == 40 and "@def456" in m.source
    with pytest.raises(UnknownIdError, match=r"revision 'nope'.*refs: main, v2"):
        load_model("org/name@nope")


def test_without_refs_the_only_snapshot(cache):
    _cache_repo(cache, "org/name", "abc123", LLAMA, ref=None)
    assert load_model("org/name").num_layers == 32


def test_missing_id_names_the_cache_and_no_network(cache):
    cache.mkdir()
    with pytest.raises(UnknownIdError) as err:
        load_model("Qwen/Qwen2.5-7B-Instruct")
    msg = str(err.value)
    assert str(cache) in msg and "models--Qwen--Qwen2.5-7B-Instruct" in msg
    assert "no network access is attempted" in msg


def test_bundled_aliases_still_win(cache):
    assert load_model("meta-llama/Llama-3.1-8B").id == "llama-3.1-8b"


def test_hf_quant_config_next_to_config(cache):
    snap = _cache_repo(cache, "nvidia/name-FP4", "abc123", LLAMA)
    modelopt = {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}}
    (snap / "hf_quant_config.json").write_text(json.dumps(modelopt))
    prec, note = default_precision(load_model("nvidia/name-FP4"))
    assert prec == "nvfp4" and note.startswith("checkpoint: hf_quant_config.json NVFP4")


def test_wrapped_config_keeps_top_level_quantization(tmp_path):
    top = {
        "model_type": "llama4",
        "text_config": json.loads((MODELS / "llama-4-scout.json").read_text())["config"][
            "text_config"
        ],
        "quantization_config": FP8_BLOCK,
    }
    (tmp_path / "config.json").write_text(json.dumps(top))
    m = load_model(tmp_path / "config.json")
    assert "num_hidden_layers" in m.config  # the text config, as before
    assert default_precision(m)[0] == "fp8+fp8_block-w+bf16-kv"


# ---- checkpoint precision -----------------------------------------------------------------

CT_INT4 = {
    "quant_method": "compressed-tensors",
    "format": "pack-quantized",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {
                "num_bits": 4,
                "type": "int",
                "group_size": 32,
                "symmetric": True,
                "strategy": "group",
            },
            "input_activations": None,
        }
    },
}
CT_FP8_KV = {
    "quant_method": "compressed-tensors",
    "config_groups": {
        "group_0": {
            "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
            "input_activations": {"num_bits": 8, "type": "float", "strategy": "token"},
        }
    },
    "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"},
}


@pytest.mark.parametrize(
    "quant, precision, reason",
    [
        (FP8_BLOCK, "fp8+fp8_block-w+bf16-kv", "quantization_config fp8 e4m3 block 128x128"),
        ({"quant_method": "fp8", "fmt": "e4m3"}, "fp8+bf16-kv", "fp8 e4m3 per tensor"),
        (
            {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]},
            "mxfp4-a16",
            "quantization_config mxfp4 weights, weight-only",
        ),
        (
            CT_INT4,
            "w4a16+int4_g32_sym-w",
            "compressed-tensors int4 weight-only, group 32, symmetric",
        ),
        (CT_FP8_KV, "fp8+fp8_channel-w", "fp8 weights per channel, fp8 activations; KV cache FP8"),
        (
            {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"},
            "nvfp4",
            "quantization_config modelopt NVFP4; KV cache FP8",
        ),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8+bf16-kv", "modelopt FP8"),
        (
            {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
            "w4a16",
            "awq int4 weight-only, group 128, asymmetric",
        ),
        (
            {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True},
            "w4a16+int4_g128_sym-w",
            "gptq int4 weight-only, group 128, symmetric",
        ),
    ],
)
def test_checkpoint_precision_forms(quant, precision, reason):
    got = checkpoint_precision({"model_type": "x", "quantization_config": quant})
    assert got is not None and got[0] == precision and reason in got[1]
    assert parse_precision(got[0]).id == precision  # a string the parser accepts


def test_checkpoint_precision_formats():
    assert parse_precision("fp8+fp8_block-w+bf16-kv").weights.id == "fp8_block"
    p = parse_precision(checkpoint_precision({"quantization_config": CT_INT4})[0])
    assert (p.weights.id, p.weight_bytes, p.compute_class) == ("int4_g32_sym", 0.5625, "bf16")
    p = parse_precision(checkpoint_precision({"quantization_config": FP8_BLOCK})[0])
    assert (p.activations.id, p.kv_cache.id) == ("fp8", "bf16")


def test_checkpoint_precision_wrapped_and_hf_quant_config():
    # Qwen3.5 / Kimi-K2.5 keep the text fields under text_config, quantization at the top
    top = {"model_type": "kimi_k25", "text_config": {}, "quantization_config": CT_INT4}
    assert checkpoint_precision(top)[0] == "w4a16+int4_g32_sym-w"
    inner = {"text_config": {"quantization_config": FP8_BLOCK}}
    assert checkpoint_precision(inner)[0] == "fp8+fp8_block-w+bf16-kv"
    modelopt = {"hf_quant_config": {"quantization": {"quant_algo": "NVFP4"}}}
    assert checkpoint_precision(modelopt) == (
        "nvfp4+bf16-kv",
        "hf_quant_config.json NVFP4; KV cache BF16 (not quantized by the checkpoint)",
    )


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}},
        {"quantization_config": {"quant_method": "fp8", "weight_block_size": [64, 64]}},
        {"quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}},
        {"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {}}},
        {
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": 4}},
            }
        },
        {"quantization_config": {"quant_method": "fp8", "weight_block_size": 128}},
    ],
)
def test_unknown_or_absent_quantization_is_none(config):
    assert checkpoint_precision(config) is None


def test_default_precision_of_bundled_models():
    assert default_precision(load_model("llama-3.1-8b")) == ("bf16", "")
    assert default_precision(load_model("gpt-oss-120b"))[0] == "mxfp4-a16"
    assert default_precision(load_model("deepseek-r1"))[0] == "fp8+fp8_block-w+bf16-kv"


def test_a_published_checkpoints_name_brings_its_quantization():
    """A bundled model whose config is the unquantized release has published quantized
    checkpoints (data/launch/deploy.yaml rows with a quantization_config): naming one loads the
    model as that checkpoint stores it, so
    its precision is the default and the fp8 preset takes its block-scaled weights (Qwen3's
    -FP8 model card: fine-grained FP8 with block size 128); the release's own name stays BF16."""
    from llm_codesign.specs.checkpoint import named_checkpoints, preset_weights

    for name in ("Qwen/Qwen3-235B-A22B-FP8", "Qwen3-235B-A22B-FP8", "qwen/qwen3-32b-fp8"):
        m = load_model(name)
        assert default_precision(m)[0] == "fp8+fp8_block-w+bf16-kv"
        assert preset_weights(m, "fp8")[0] == "fp8+fp8_block-w"
    base = load_model("qwen3-235b-a22b")
    assert default_precision(base)[0] == "bf16" and preset_weights(base, "fp8")[0] == "fp8"
    assert load_model("Qwen/Qwen3-235B-A22B-FP8").id == base.id
    # a launch serves the checkpoint only for the weights it stores (report.launch_data)
    from llm_codesign import load_hardware
    from llm_codesign.report.launch_data import checkpoint_for

    hw = load_hardware("h200-sxm")
    block = checkpoint_for(base, parse_precision("fp8+fp8_block-w"), {}, hw)
    assert (block["id"], block["how"]) == ("Qwen/Qwen3-235B-A22B-FP8", "table")
    assert checkpoint_for(base, parse_precision("fp8"), {}, hw)["id"] != block["id"]
    named = checkpoint_for(load_model("Qwen3-235B-A22B-FP8"), parse_precision("fp8"), {}, hw)
    assert (named["id"], named["how"]) == ("Qwen/Qwen3-235B-A22B-FP8", "native")
    # every listed checkpoint names its own model and states a precision the reader knows
    for key, (model_id, name, _qc, source) in named_checkpoints().items():
        assert load_model(key).id == model_id and load_model(key).name == name and source
        assert checkpoint_precision(load_model(key).config) is not None


def test_estimate_api_default_and_explicit(tmp_path):
    e = estimate("gpt-oss-20b", "h200-sxm")
    assert e.precision.id == "mxfp4-a16" and e.precision_note.startswith("checkpoint:")
    # on Blackwell the MXFP4 checkpoint is served with MXFP8 activations (TensorRT-LLM's gpt-oss
    # support matrix), as validate maps its rows there (specs.checkpoint.served_mxfp4)
    e = estimate("gpt-oss-20b", "b200")
    assert e.precision.id == "mxfp4-a8" and "MXFP8 activations on b200" in e.precision_note
    assert estimate("gpt-oss-20b", "b200", "mxfp4-a16").precision.id == "mxfp4-a16"
    # on MI355X the FP4 math exists but the engines' MXFP4 MoE takes BF16 activations (vLLM's CK
    # and Triton backends on ROCm): W4A16, and the note says how to ask for W4A8
    e = estimate("gpt-oss-20b", "mi355x")
    assert e.precision.id == "mxfp4-a16" and "BF16 activations on mi355x" in e.precision_note
    assert estimate("gpt-oss-20b", "mi355x", "mxfp4-a8").precision.id == "mxfp4-a8"
    e = estimate("gpt-oss-20b", "h200-sxm", "bf16")
    assert e.precision.id == "bf16" and e.precision_note == ""
    cfg = {**LLAMA, "quantization_config": {"quant_method": "bitsandbytes"}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    e = estimate(tmp_path / "config.json", "h200-sxm")
    assert e.precision.id == "bf16" and "not recognised" in e.precision_note


# ---- CLI ----------------------------------------------------------------------------------


def _cli(*args: str):
    return CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"}).invoke(main, list(args))


def test_cli_default_is_the_checkpoint_precision(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "quantization_config": FP8_BLOCK}))
    r = _cli("estimate", "-m", str(tmp_path / "config.json"), "-g", "h200-sxm")
    assert r.exit_code == 0, r.output
    head = " ".join(r.output.split("serving")[0].split())  # the header line, unwrapped
    assert "fp8+fp8_block-w+bf16-kv (checkpoint: quantization_config fp8 e4m3 block 128x128)" in (
        head
    )
    r = _cli("estimate", "-m", str(tmp_path / "config.json"), "-g", "h200-sxm", "-p", "bf16")
    head = " ".join(r.output.split("serving")[0].split())
    assert r.exit_code == 0 and "checkpoint" not in head and ", bf16, ISL/OSL" in head


def test_cli_hub_id_from_cache(cache):
    _cache_repo(cache, "org/name", "abc123", {**LLAMA, "quantization_config": FP8_BLOCK})
    r = _cli("estimate", "-m", "org/name", "-g", "h200-sxm", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["model"] == "org/name" and d["precision"] == "fp8+fp8_block-w+bf16-kv"
    r = _cli("estimate", "-m", "org/missing", "-g", "h200-sxm")
    assert r.exit_code == 2 and "no network access is attempted" in r.output
    assert "Traceback" not in r.output
