"""The families parsed in specs/model_families.py: closed-form parameter counts of small
synthetic configs (counted by hand), sliding-window layer patterns, and missing-field errors."""

import copy

import pytest

from llm_codesign import load_model
from llm_codesign.errors import SpecError
from llm_codesign.specs.model_config import SUPPORTED_MODEL_TYPES, model_from_config

D, V = 64, 100
EMB_UNTIED = 2 * V * D  # embedding + LM head
EMB_TIED = V * D
FINAL_NORM = D


def spec(cfg):
    return model_from_config(copy.deepcopy(cfg), model_id="synthetic")


def windows(m):
    """{window: number of layers} of a spec."""
    out: dict[int, int] = {}
    for g in m.layer_groups:
        out[g.window] = out.get(g.window, 0) + g.count
    return out


# ---- DeepSeek-V2 ---------------------------------------------------------------------------

DSV2 = {
    "model_type": "deepseek_v2",
    "hidden_size": D,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "head_dim": 8,  # transformers sets head_dim = qk_rope_head_dim: must be ignored for MLA
    "q_lora_rank": None,
    "kv_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 16,
    "n_routed_experts": 4,
    "n_shared_experts": 2,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "intermediate_size": 128,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "vocab_size": V,
    "tie_word_embeddings": False,
}


def test_deepseek_v2_closed_form_without_q_lora():
    q = D * 4 * (16 + 8)  # q_proj (q_lora_rank null)
    kv = D * (32 + 8) + 32 + 32 * 4 * (16 + 16)  # kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj
    o = 4 * 16 * D
    attn = q + kv + o
    assert attn == 16928
    norm = 2 * D
    dense = attn + norm + 3 * D * 128
    moe = attn + norm + 4 * 3 * D * 32 + 2 * 3 * D * 32 + D * 4  # routed, shared, router
    m = spec(DSV2)
    assert m.attention.kind == "mla" and m.attention.q_lora_rank == 0
    assert m.attention.head_dim == 24  # nope + rope, not the config's head_dim
    assert m.attention.kv_elements_per_token == 32 + 8
    assert [(g.count, g.moe) for g in m.layer_groups] == [(1, False), (2, True)]
    assert m.total_params == dense + 2 * moe + EMB_UNTIED + FINAL_NORM == 162_848


def test_deepseek_v2_with_q_lora():
    m = spec({**DSV2, "q_lora_rank": 16})
    q = D * 16 + 16 + 16 * 4 * 24  # q_a_proj, q_a_layernorm, q_b_proj
    no_lora = spec(DSV2)
    assert m.total_params - no_lora.total_params == 3 * (q - D * 4 * 24)


# ---- Qwen2-MoE -----------------------------------------------------------------------------

QWEN2_MOE = {
    "model_type": "qwen2_moe",
    "hidden_size": D,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 48,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "decoder_sparse_step": 2,  # MoE where (i + 1) % 2 == 0: layers 1 and 3 ...
    "mlp_only_layers": [3],  # ... but layer 3 is dense
    "vocab_size": V,
    "use_sliding_window": False,
    "sliding_window": 32,
}


def test_qwen2_moe_closed_form():
    # q and o are D x D; k and v D x 32 each (2 KV heads of 16); QKV bias
    attn = D * 64 + 2 * D * 32 + 64 * D + (4 + 2 + 2) * 16
    assert attn == 12416
    norm = 2 * D + D  # two RMSNorms + shared_expert_gate Linear(D, 1)
    dense = attn + norm + 3 * D * 96
    moe = attn + norm + 4 * 3 * D * 32 + 3 * D * 48 + D * 4  # routed, shared, router
    m = spec(QWEN2_MOE)
    assert m.attention.qkv_bias and not m.attention.o_bias
    assert m.num_moe_layers == 1
    assert m.moe is not None and (m.moe.num_shared, m.moe.shared_intermediate) == (1, 48)
    assert m.total_params == 3 * dense + moe + EMB_UNTIED + FINAL_NORM == 152_640
    assert windows(m) == {0: 4}  # use_sliding_window false: no window


def test_qwen2_moe_sliding_window_from_max_window_layers():
    m = spec({**QWEN2_MOE, "use_sliding_window": True, "max_window_layers": 2})
    assert windows(m) == {0: 2, 32: 2}


def test_qwen2_moe_without_shared_expert():
    m = spec({**QWEN2_MOE, "shared_expert_intermediate_size": 0})
    assert m.moe is not None and m.moe.num_shared == 0
    assert spec(QWEN2_MOE).total_params - m.total_params == 4 * D + 3 * D * 48


# ---- Gemma 2 / Gemma 3 ---------------------------------------------------------------------

GEMMA2 = {
    "model_type": "gemma2",
    "hidden_size": D,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,  # explicit, != hidden / heads
    "intermediate_size": 128,
    "vocab_size": V,
    "sliding_window": 16,
}
GEMMA_ATTN = D * 4 * 32 + 2 * D * 2 * 32 + 4 * 32 * D
GEMMA_FFN = 3 * D * 128  # GeGLU: gate, up, down


def test_gemma2_closed_form_and_alternating_windows():
    layer = GEMMA_ATTN + 4 * D + GEMMA_FFN  # four RMSNorms per layer
    m = spec(GEMMA2)
    assert m.tie_embeddings and m.attention.head_dim == 32
    assert m.total_params == 4 * layer + EMB_TIED + FINAL_NORM == 204_096
    assert windows(m) == {16: 2, 0: 2}  # layers 0 and 2 local, 1 and 3 global


def test_gemma2_layer_types_win():
    types = ["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"]
    assert windows(spec({**GEMMA2, "layer_types": types})) == {0: 1, 16: 3}


GEMMA3_TEXT = {**GEMMA2, "model_type": "gemma3_text", "num_hidden_layers": 7}
GEMMA3 = {
    "model_type": "gemma3",
    "text_config": GEMMA3_TEXT,
    "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27},
}


@pytest.mark.parametrize("cfg", [GEMMA3, GEMMA3_TEXT], ids=["gemma3", "gemma3_text"])
def test_gemma3_closed_form_and_five_to_one_windows(cfg):
    layer = GEMMA_ATTN + 4 * D + 2 * 32 + GEMMA_FFN  # + q_norm and k_norm of head_dim
    m = spec(cfg)
    assert m.total_params == 7 * layer + EMB_TIED + FINAL_NORM == 352_768  # no vision tower
    assert windows(m) == {16: 6, 0: 1}  # global only at i % 6 == 5
    assert m.config == GEMMA3_TEXT  # the text config is the spec's config


def test_gemma3_pattern_fields_and_defaults():
    for key in ("sliding_window_pattern", "_sliding_window_pattern"):
        m = spec({**GEMMA3_TEXT, key: 2})
        assert windows(m) == {16: 4, 0: 3}
    text = {k: v for k, v in GEMMA3_TEXT.items() if k not in ("vocab_size", "head_dim")}
    m = spec({**GEMMA3, "text_config": text})
    assert m.vocab_size == 262_208 and m.attention.head_dim == 256  # transformers defaults
    types = ["sliding_attention"] * 5 + ["full_attention"] * 2
    assert windows(spec({**GEMMA3_TEXT, "layer_types": types})) == {16: 5, 0: 2}


def test_gemma_bad_layer_types():
    with pytest.raises(SpecError, match="layer_types has 3 entries"):
        spec({**GEMMA2, "layer_types": ["full_attention"] * 3})
    with pytest.raises(SpecError, match="'linear_attention'"):
        spec({**GEMMA2, "layer_types": ["linear_attention"] * 4})


# ---- Phi-3 / Phi-4 -------------------------------------------------------------------------

PHI3 = {
    "model_type": "phi3",
    "hidden_size": D,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": V,
    "sliding_window": 32,
    "tie_word_embeddings": False,
}


def test_phi3_closed_form_and_window():
    layer = D * D + 2 * D * 32 + D * D + 2 * D + 3 * D * 128  # fused qkv / gate_up: same count
    m = spec(PHI3)
    assert m.total_params == 2 * layer + EMB_UNTIED + FINAL_NORM == 86_848
    assert windows(m) == {32: 2}
    assert windows(spec({**PHI3, "sliding_window": None})) == {0: 2}  # Phi-4: null


# ---- GLM-4 / GLM-4.5 -----------------------------------------------------------------------

GLM4 = {
    "model_type": "glm4",
    "hidden_size": D,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 128,
    "vocab_size": V,
}


def test_glm4_dense_closed_form():
    attn = D * 64 + 2 * D * 32 + 64 * D + (4 + 2 + 2) * 16  # QKV bias on by default
    layer = attn + 4 * D + 3 * D * 128  # four RMSNorms per layer
    m = spec(GLM4)
    assert m.total_params == 2 * layer + EMB_UNTIED + FINAL_NORM == 87_360


GLM4_MOE = {
    "model_type": "glm4_moe",
    "hidden_size": D,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "attention_bias": True,
    "use_qk_norm": True,
    "partial_rotary_factor": 0.5,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "intermediate_size": 128,
    "first_k_dense_replace": 1,
    "num_nextn_predict_layers": 1,
    "vocab_size": V,
}


def test_glm4_moe_closed_form():
    attn = D * 128 + 2 * D * 64 + 128 * D + (4 + 2 + 2) * 32  # GQA 4 / 2 x 32 + QKV bias
    norm = 2 * D + 2 * 32  # + QK-norm
    dense = attn + norm + 3 * D * 128
    moe = attn + norm + 4 * 3 * D * 32 + 3 * D * 32 + D * 4  # routed, shared, router
    m = spec(GLM4_MOE)
    assert m.num_mtp_layers == 1  # MTP layer kept out of the counts
    assert [(g.count, g.moe) for g in m.layer_groups] == [(1, False), (2, True)]
    assert m.total_params == dense + 2 * moe + EMB_UNTIED + FINAL_NORM == 174_464
    legacy = {k: v for k, v in GLM4_MOE.items() if k != "n_routed_experts"}
    assert spec({**legacy, "num_experts": 4}).total_params == m.total_params
    no_qk_norm = spec({**GLM4_MOE, "use_qk_norm": False})
    assert m.total_params - no_qk_norm.total_params == 3 * 2 * 32


# ---- errors --------------------------------------------------------------------------------


def _without(cfg, key, inner=None):
    cfg = copy.deepcopy(cfg)
    del (cfg[inner] if inner else cfg)[key]
    return cfg


@pytest.mark.parametrize(
    "cfg, key, inner",
    [
        (DSV2, "kv_lora_rank", None),
        (DSV2, "n_routed_experts", None),
        (QWEN2_MOE, "shared_expert_intermediate_size", None),
        (QWEN2_MOE, "num_experts", None),
        (QWEN2_MOE, "intermediate_size", None),  # needed: the config has dense layers
        (GEMMA2, "vocab_size", None),
        (GEMMA2, "intermediate_size", None),
        (GEMMA3, "hidden_size", "text_config"),
        (PHI3, "intermediate_size", None),
        (GLM4, "hidden_size", None),
        (GLM4_MOE, "n_shared_experts", None),
        (GLM4_MOE, "first_k_dense_replace", None),
        (GLM4_MOE, "moe_intermediate_size", None),
    ],
)
def test_missing_field_is_named(cfg, key, inner):
    where = r"synthetic: text_config" if inner else "synthetic"
    with pytest.raises(SpecError, match=rf"{where}: missing required field '{key}'"):
        spec(_without(cfg, key, inner))


def test_glm4_moe_without_expert_count_names_both_spellings():
    with pytest.raises(SpecError, match=r"'n_routed_experts' \(or 'num_experts'\)"):
        spec(_without(GLM4_MOE, "n_routed_experts"))


def test_family_shape_checks():
    with pytest.raises(SpecError, match="num_key_value_heads=3"):
        spec({**PHI3, "num_key_value_heads": 3})
    with pytest.raises(SpecError, match="top-k=8 exceeds"):
        spec({**GLM4_MOE, "num_experts_per_tok": 8})
    with pytest.raises(SpecError, match="'text_config' must be a mapping"):
        spec({**GEMMA3, "text_config": [1]})


def test_family_types_are_supported():
    for t in ("deepseek_v2", "qwen2_moe", "gemma2", "gemma3", "gemma3_text", "phi3"):
        assert t in SUPPORTED_MODEL_TYPES
    assert {"glm4", "glm4_moe", "deepseek_v3", "llama"} <= set(SUPPORTED_MODEL_TYPES)
    assert list(SUPPORTED_MODEL_TYPES) == sorted(SUPPORTED_MODEL_TYPES)


# ---- any other model_type: read by the common conventions, with a warning ----


def test_unknown_model_type_is_read_with_a_warning():
    import warnings as w

    from llm_codesign.errors import UnknownModelTypeWarning

    cfg = load_model("llama-3.1-8b").config | {"model_type": "my_llama_fork"}
    with w.catch_warnings(record=True) as caught:
        w.simplefilter("always")
        m = model_from_config(cfg, model_id="fork")
    assert m.total_params == load_model("llama-3.1-8b").total_params
    (warning,) = [c for c in caught if issubclass(c.category, UnknownModelTypeWarning)]
    assert "my_llama_fork" in str(warning.message) and "8.03B" in str(warning.message)


def test_unknown_moe_model_type_reads_expert_fields():
    import warnings as w

    cfg = load_model("qwen3-30b-a3b").config | {"model_type": "some_moe"}
    with w.catch_warnings():
        w.simplefilter("ignore")
        m = model_from_config(cfg, model_id="moe")
    ref = load_model("qwen3-30b-a3b")
    assert m.moe.num_experts == 128 and m.moe.top_k == 8
    # Qwen3's per-head QK norms are not a common convention: within 0.01%
    assert abs(m.total_params / ref.total_params - 1) < 1e-4


def test_unknown_model_type_error_names_every_missing_field():
    cfg = {"model_type": "mystery", "hidden_size": 1024, "num_experts": 8}
    with pytest.raises(SpecError) as e:
        model_from_config(cfg, model_id="x")
    msg = str(e.value)
    for field in ("num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size"):
        assert field in msg
    assert "num_experts_per_tok" in msg and "mystery" in msg
