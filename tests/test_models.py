"""Model specs: parameter counts against published figures, and loader errors."""

import json

import pytest

from llm_codesign import load_model
from llm_codesign.errors import SpecError, UnknownIdError
from llm_codesign.specs.model import bundled_models

# Published (total, active, unit of the last published digit, source). A count passes when it
# is within 1% of the published figure, or closer than one unit of its last published digit
# (model cards round or truncate: Qwen3-30B-A3B's closed form is 3.353B, published "3.3B").
PUBLISHED = {
    "llama-3.1-8b": (8.03e9, 8.03e9, 0.01e9, "meta-llama/Llama-3.1-8B model card: 8.03B"),
    "llama-3.1-70b": (70.6e9, 70.6e9, 0.1e9, "model card: 70.6B"),
    "llama-3.1-405b": (405e9, 405e9, 1e9, "model card: 405B"),
    "llama-3.3-70b": (70.6e9, 70.6e9, 0.1e9, "model card: 70.6B"),
    "mixtral-8x7b": (46.7e9, 12.9e9, 0.1e9, "Mistral AI Mixtral paper: 46.7B total, 12.9B active"),
    "qwen3-32b": (32.8e9, 32.8e9, 0.1e9, "Qwen3-32B model card: 32.8B"),
    "qwen3-30b-a3b": (30.5e9, 3.3e9, 0.1e9, "Qwen3-30B-A3B card: 30.5B total, 3.3B activated"),
    "qwen3-235b-a22b": (235e9, 22e9, 1e9, "Qwen3-235B-A22B card: 235B total, 22B activated"),
    "deepseek-v3": (
        671e9,
        37e9,
        1e9,
        "DeepSeek-V3 report: 671B total, 37B activated (MTP excluded)",
    ),
    "deepseek-r1": (671e9, 37e9, 1e9, "DeepSeek-R1 card: 671B total, 37B activated"),
    "gpt-oss-20b": (20.9e9, 3.6e9, 0.1e9, "gpt-oss model card: 20.9B total, 3.6B active"),
    "gpt-oss-120b": (116.8e9, 5.1e9, 0.1e9, "gpt-oss model card: 116.8B total, 5.1B active"),
    "llama-4-maverick": (400e9, 17e9, 1e9, "Llama 4 card: 400B total, 17B active"),
    # issue 12: current sparse, linear and hybrid models (architectures.md)
    "deepseek-v3.2": (671e9, 37e9, 1e9, "DeepSeek-V3 shape (671B / 37B) + 0.85B indexer"),
    "deepseek-v4-pro": (1.6e12, 49e9, 0.1e12, "HF blog deepseekv4: 1.6T total, 49B active"),
    "deepseek-v4-flash": (284e9, 13e9, 1e9, "HF blog deepseekv4: 284B total, 13B active"),
    "glm-5": (744e9, 40e9, 1e9, "GLM-5 README / report: 744B total, 40B active"),
    "kimi-k2.5": (1.0e12, 32e9, 0.05e12, "Kimi K2 README: 1T total (rounded), 32B activated"),
    "minimax-m2.5": (230e9, 10e9, 1e9, "MiniMax-M2 card: 230B total, 10B active"),
    "minimax-text-01": (456e9, 45.9e9, 0.1e9, "MiniMax-01 report: 456B total, 45.9B activated"),
    "minimax-m3": (
        428e9,
        23e9,
        1e9,
        "MiniMax-M3 release as quoted by sglang-jax #1375: 428B total, ~23B active (no embeddings)",
    ),
    "nemotron-h-8b": (8e9, 8e9, 1e9, "Nemotron-H report (arXiv 2504.03624): 8B (rounded)"),
    "qwen3-next-80b-a3b": (80e9, 3e9, 1e9, "Qwen3-Next card: 80B total, 3B activated"),
    "qwen3.5-397b-a17b": (397e9, 17e9, 1e9, "Qwen3.5-397B-A17B card: 397B total, 17B activated"),
    "deepseek-v2-lite": (
        15.7e9,
        2.4e9,
        0.1e9,
        "DeepSeek-V2-Lite card / DeepSeek-V2 paper: 15.7B total, 2.4B activated",
    ),
    "deepseek-v2": (236e9, 21e9, 1e9, "DeepSeek-V2 paper (arXiv 2405.04434): 236B, 21B activated"),
    "qwen1.5-moe-a2.7b": (14.3e9, 2.7e9, 0.1e9, "Qwen1.5-MoE-A2.7B: 14.3B total, 2.7B activated"),
    "qwen2-57b-a14b": (57.4e9, 14e9, 1e9, "Qwen2-57B-A14B card: 57B (57.4B), 14B activated"),
    "gemma-3-27b": (
        27.016e9,
        27.016e9,
        0.001e9,
        "Gemma 3 report Table 1, 27B text only: 1,416M embedding + 25,600M non-embedding",
    ),
    "phi-4": (14.7e9, 14.7e9, 0.1e9, "microsoft/phi-4 on Hugging Face: 14.7B"),
    "phi-3-mini-4k": (3.82e9, 3.82e9, 0.01e9, "Phi-3 report / card: phi-3-mini 3.8B (3.82B)"),
    "glm-4.5": (355e9, 32e9, 1e9, "GLM-4.5 report Table 1: 355B total, 32B activated"),
    "glm-4.6": (355e9, 32e9, 1e9, "architectures.md s5: GLM-4.5 shape (report Table 1: 355B, 32B)"),
    "glm-4.5-air": (106e9, 12e9, 1e9, "GLM-4.5 report Table 1: Air 106B total, 12B activated"),
}


@pytest.mark.parametrize("model_id", sorted(PUBLISHED))
def test_parameter_counts_match_published(model_id):
    total, active, unit, _source = PUBLISHED[model_id]
    m = load_model(model_id)
    for got, want in ((m.total_params, total), (m.active_params, active)):
        assert abs(got - want) <= max(0.01 * want, 0.999 * unit), (model_id, got, want)


def test_llama_8b_closed_form():
    # Hand count: embed + head 2 x 128256 x 4096; per layer q/o 2 x 4096^2, k/v 2 x 4096 x 1024,
    # MLP 3 x 4096 x 14336, 2 norms of 4096; 32 layers; final norm.
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    expected = 2 * 128256 * 4096 + 32 * per_layer + 4096
    assert load_model("llama-3.1-8b").total_params == expected == 8_030_261_248


def test_every_bundled_model_loads_and_cites_a_source():
    models = bundled_models()
    assert len(models) >= 13
    for m in models.values():
        assert m.source
        # a dense model uses every parameter per token; an MoE model only its routed top-k
        assert (
            (m.active_params == m.total_params)
            if m.moe is None
            else (m.active_params < m.total_params)
        )


def test_layer_patterns():
    ds = load_model("deepseek-r1")
    assert sum(g.count for g in ds.layer_groups if not g.moe) == 3  # first_k_dense_replace
    assert ds.num_mtp_layers == 1
    assert ds.attention.kind == "mla" and ds.attention.kv_elements_per_token == 512 + 64
    oss = load_model("gpt-oss-120b")
    assert {g.window for g in oss.layer_groups} == {0, 128}  # alternating sliding window
    mav = load_model("llama-4-maverick")
    assert mav.num_moe_layers == 24  # interleaved MoE every other layer


def test_alias_lookup():
    assert load_model("DeepSeek-R1-0528").id == "deepseek-r1"
    assert load_model("Llama-3.1-8B-Instruct").id == "llama-3.1-8b"


def _write(tmp_path, cfg):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return p


LLAMA = {
    "model_type": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 4096,
    "vocab_size": 32000,
}


def test_user_config_json_loads(tmp_path):
    m = load_model(str(_write(tmp_path, LLAMA)))
    assert m.hidden_size == 1024 and m.attention.head_dim == 128


def test_unknown_model_type_names_file_and_field(tmp_path):
    # read by the common conventions with a warning naming the file and the type (issue 12)
    from llm_codesign.errors import UnknownModelTypeWarning

    p = _write(tmp_path, {**LLAMA, "model_type": "newfangled"})
    with pytest.warns(UnknownModelTypeWarning, match=r"config.json.*model_type 'newfangled'"):
        load_model(str(p))
    # and refused, naming the file and every missing field, when they are not there
    p = _write(tmp_path, {"model_type": "bert", "hidden_size": 768, "vocab_size": 30522})
    with pytest.raises(SpecError, match=r"config.json.*'bert'.*num_hidden_layers"):
        load_model(str(p))


def test_missing_field_names_it(tmp_path):
    cfg = dict(LLAMA)
    del cfg["intermediate_size"]
    with pytest.raises(SpecError, match="intermediate_size"):
        load_model(str(_write(tmp_path, cfg)))


@pytest.mark.parametrize(
    "bad",
    [
        {"hidden_size": -5},
        {"hidden_size": "big"},
        {"num_hidden_layers": 0},
        {"num_attention_heads": 7},
        {"vocab_size": 1e30},
        {"hidden_size": True},
    ],
)
def test_malformed_values_are_errors(tmp_path, bad):
    with pytest.raises(SpecError, match=next(iter(bad))):  # the message names the bad field
        load_model(str(_write(tmp_path, {**LLAMA, **bad})))


def test_hostile_files(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("[1, 2, 3]")
    with pytest.raises(SpecError, match="mapping"):
        load_model(str(p))
    p.write_text("{not json")
    with pytest.raises(SpecError, match="JSON"):
        load_model(str(p))
    p.write_text(" " * 5_000_000)
    with pytest.raises(SpecError, match="too large"):
        load_model(str(p))


def test_unknown_id():
    with pytest.raises(UnknownIdError, match="bundled"):
        load_model("llama-9")


def test_deeply_nested_config_is_a_clear_error(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(SpecError, match="nested too deeply"):
        load_model(str(p))
