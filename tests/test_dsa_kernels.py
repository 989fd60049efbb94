"""DeepSeek Sparse Attention's sparse core on the engines' kernels: FlashMLA pads a rank's query
heads (prefill to a multiple of 64 on Hopper and 128 on Blackwell, decode over an FP8 cache to
64 or 128) and runs BF16 math at its published rates (``attention_kernels.sparse_kernel``, read
by ``cost.attention_time``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from llm_codesign import load_hardware, load_model, parse_precision
from llm_codesign.attention_kernels import sparse_kernel
from llm_codesign.cost import attention_time
from llm_codesign.errors import SpecError
from llm_codesign.ops import step_ops, step_shape
from llm_codesign.specs.engine import load_engine

H200, B200 = load_hardware("h200-sxm"), load_hardware("b200")
SGLANG, VLLM, TRTLLM = load_engine("sglang"), load_engine("vllm"), load_engine("trtllm")


def test_flashmla_heads_and_rates_by_hand():
    eight = np.array(8.0)  # GLM-5's 64 heads at TP 8
    # SGLang on Hopper: sparse prefill takes 64 heads; FP8-cache decode 64; a BF16 cache
    # decodes on FlashAttention-3, its own 8 heads at the engine's kernel (None)
    assert sparse_kernel(H200, SGLANG, "prefill", False, eight) == (64.0, 0.645)
    assert sparse_kernel(H200, SGLANG, "decode", True, eight) == (64.0, 0.414)
    assert sparse_kernel(H200, SGLANG, "decode", False, eight) == (8.0, None)
    # vLLM decodes a BF16 cache through the prefill kernel: padded too
    assert sparse_kernel(H200, VLLM, "decode", False, eight) == (64.0, 0.645)
    # Blackwell's sparse prefill takes a multiple of 128; FP8 decode 64 or 128
    assert sparse_kernel(B200, SGLANG, "prefill", False, eight)[0] == 128.0
    heads = np.array([16.0, 64.0, 65.0, 128.0])
    decode, _ = sparse_kernel(B200, SGLANG, "decode", True, heads)
    assert list(decode) == [64.0, 64.0, 128.0, 128.0]
    prefill, _ = sparse_kernel(H200, SGLANG, "prefill", True, heads)
    assert list(prefill) == [64.0, 64.0, 128.0, 128.0]
    # TensorRT-LLM (its own kernels on Blackwell) and AMD GPUs: the rank's own heads
    assert sparse_kernel(B200, TRTLLM, "prefill", False, eight) == (8.0, None)
    assert sparse_kernel(load_hardware("mi355x"), SGLANG, "prefill", False, eight) == (8.0, None)


def _attention(phase: str, isl: float, precision: str = "fp8"):
    kw = {"decode_seqs": 16.0} if phase == "decode" else {"prefill_tokens": isl}
    shape = step_shape(8, 1, 1, 1, False, isl=isl, osl=1, **kw)
    if phase == "decode":
        shape = replace(shape, decode_ctx=np.array(isl))
    ops = step_ops(load_model("glm-5"), parse_precision(precision), shape)
    return next(op for op in ops if op.name == f"attention_{phase}")


def test_padded_prefill_is_eight_times_the_work_at_flashmla_rate():
    op = _attention("prefill", 8192.0)  # an 8k prompt: past top-k, the sparse core runs
    assert op.meta["sparse_heads"] == 8.0 and bool(op.meta["sparse_path"])
    _, compute, _ = attention_time(op, H200, SGLANG)
    by_hand = 8.0 * float(op.flops) / (H200.peak_flops("bf16") * 0.645)
    assert float(compute) == pytest.approx(by_hand, rel=1e-12)
    none = SGLANG.with_overrides(dsa_kernels="none")
    assert float(attention_time(op, H200, none)[0]) < float(attention_time(op, H200, SGLANG)[0])


def test_short_prompts_run_the_dense_kernels_unpadded():
    op = _attention("prefill", 1024.0)  # within top-k (2,048): masked MHA, no padding
    assert not bool(op.meta["sparse_path"])
    none = SGLANG.with_overrides(dsa_kernels="none")
    assert float(attention_time(op, H200, SGLANG)[0]) == float(attention_time(op, H200, none)[0])


def test_padding_never_makes_the_sparse_core_faster():
    for phase, isl, prec in (("decode", 8192.0, "fp8"), ("decode", 8192.0, "fp8+bf16-kv")):
        op = _attention(phase, isl, prec)
        for eng in (SGLANG, VLLM):
            none = eng.with_overrides(dsa_kernels="none")
            t, _, _ = attention_time(op, H200, eng)
            assert float(t) >= float(attention_time(op, H200, none)[0])


def test_an_unknown_family_is_refused_by_name():
    with pytest.raises(SpecError, match="dsa_kernels"):
        SGLANG.with_overrides(dsa_kernels="flashinfer")
