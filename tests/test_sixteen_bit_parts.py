"""The linear layers a quantized checkpoint keeps in 16 bits (specs.checkpoint.sixteen_bit_parts):
the exclusion patterns of the three config forms, the bundled checkpoints, and what ops prices
for them (BF16 GEMMs and weight bytes) by hand."""

import numpy as np
import pytest

from llm_codesign import load_model
from llm_codesign.ops import layer_group_ops, step_shape, weight_bytes_per_gpu
from llm_codesign.specs.checkpoint import _excluded, sixteen_bit_parts
from llm_codesign.specs.precision import parse_precision


@pytest.mark.parametrize(
    "name, pattern, hit",
    [
        ("model.layers.0.self_attn.q_proj", "model.layers.*.self_attn", True),  # glob prefix
        ("model.layers.0.self_attn.q_proj", "re:.*self_attn.*", True),  # regex, whole name
        ("model.layers.1.mlp.shared_experts.gate_proj", "re:.*shared_experts.*", True),
        ("model.layers.0.mlp.gate_proj", r"re:.*mlp\.(gate|up|gate_up|down)_proj.*", True),
        # an expert's projection is not the dense FFN's
        ("model.layers.1.mlp.experts.0.gate_proj", r"re:.*mlp\.(gate|up|down)_proj.*", False),
        ("model.layers.0.mlp.gate_proj", "gate", False),  # a bare word: a whole component
        ("model.layers.0.block_sparse_moe.gate", "gate", True),
        ("model.layers.0.self_attn.o_proj", "lm_head", False),
    ],
)
def test_exclusion_patterns(name, pattern, hit):
    assert _excluded(name, pattern) is hit


def test_bundled_checkpoints():
    gpt_oss, kimi = load_model("gpt-oss-120b"), load_model("kimi-k2.5")
    # gpt-oss: only the experts are MXFP4 (modules_to_not_convert: self_attn, router, embed, head)
    for p in ("mxfp4-a16", "mxfp4-a8"):
        assert sixteen_bit_parts(gpt_oss, parse_precision(p)) == {"attention"}
    # another weight format is a quantization of every linear layer
    assert sixteen_bit_parts(gpt_oss, parse_precision("nvfp4")) == frozenset()
    # Kimi-K2.5's INT4 (compressed-tensors ignore: self_attn, shared experts, dense MLPs), in any
    # group size
    for p in ("w4a16", "w4a16+int4_g32_sym-w"):
        assert sixteen_bit_parts(kimi, parse_precision(p)) == {"attention", "shared", "dense"}
    # checkpoints that quantize every linear layer, and unquantized configs
    for m, p in (("deepseek-r1", "fp8+fp8_block-w"), ("minimax-m2.5", "fp8+fp8_block-w"),
                 ("llama-3.1-8b", "fp8"), ("llama-3.1-8b", "bf16")):  # fmt: skip
        assert sixteen_bit_parts(load_model(m), parse_precision(p)) == frozenset()


def test_ops_price_the_kept_parts_in_bf16():
    model = load_model("gpt-oss-120b")
    s = step_shape(1, 1, 1, 1, False, isl=1024, osl=1024, decode_seqs=8.0)
    for p in ("mxfp4-a8", "nvfp4"):
        prec = parse_precision(p)
        ops = {op.name: op for op in layer_group_ops(model, prec, model.layer_groups[0], s, 1)}
        kept = p == "mxfp4-a8"
        for name in ("qkv_proj", "o_proj"):
            assert ops[name].w_bytes == (2.0 if kept else prec.weight_bytes)
            assert ops[name].compute_class == ("bf16" if kept else prec.compute_class)
        assert ops["experts_up"].w_bytes == prec.weight_bytes  # the experts keep the format


def test_weight_bytes_count_the_kept_parts_at_two_bytes():
    # gpt-oss at TP1, MXFP4 (attention kept in BF16) against NVFP4 (every linear layer FP4):
    # the difference is the experts' E x (b_mxfp4 - b_nvfp4) plus the attention's
    # A x (2 - b_nvfp4); norms, router and embeddings are 16-bit in both
    model = load_model("gpt-oss-120b")
    mx, nv = parse_precision("mxfp4-a16"), parse_precision("nvfp4")
    one, no = np.asarray(1), np.asarray(False)
    got_mx = float(weight_bytes_per_gpu(model, mx, one, one, one, no, one))
    got_nv = float(weight_bytes_per_gpu(model, nv, one, one, one, no, one))
    moe = model.moe
    assert moe is not None and model.shared_expert_params == 0
    experts = sum(g.count * moe.num_experts * model.expert_params for g in model.layer_groups)
    attn = sum(g.count * model.mixer_params(g.mixer) for g in model.layer_groups)
    expected = experts * (mx.weight_bytes - nv.weight_bytes) + attn * (2.0 - nv.weight_bytes)
    assert got_mx - got_nv == pytest.approx(expected, rel=1e-9)
