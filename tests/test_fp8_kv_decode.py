"""GQA decode over an FP8 KV cache: the GPU file's measured FP8-cache read rate of the engine's
GQA decode kernels (``efficiency.fp8_kv_decode``, ``gqa_decode_kernels``) caps the engine's
decode fraction (``cost.attention_time``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml

from llm_codesign import load_hardware, load_model, parse_precision
from llm_codesign.cost import attention_time
from llm_codesign.errors import SpecError
from llm_codesign.ops import step_ops, step_shape
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.hardware import _hardware_dir

H200 = load_hardware("h200-sxm")
FA = load_engine("base").with_overrides(
    id="fa", gqa_decode_kernels="flash_attention", attn_decode_efficiency=0.8
)


def _decode_attention(precision: str, model: str = "llama-3.1-8b"):
    shape = replace(
        step_shape(1, 1, 1, 1, False, isl=4096, osl=1, decode_seqs=64.0),
        decode_ctx=np.array(4096.0),
    )
    ops = step_ops(load_model(model), parse_precision(precision), shape)
    return next(op for op in ops if op.name == "attention_decode")


def test_fp8_cache_reads_at_the_kernels_measured_rate_by_hand():
    # H200's FlashAttention reads an FP8 cache at 0.380 of 4.8 TB/s: below the engine's 0.8,
    # so the read takes bytes / (4.8e12 x 0.380), not bytes / (4.8e12 x 0.8)
    assert H200.fp8_kv_decode["flash_attention"].value == 0.38
    op = _decode_attention("fp8")
    assert op.meta == {"fp8_kv": True}
    _, _, memory = attention_time(op, H200, FA)
    assert float(memory) == pytest.approx(float(op.bytes) / (4.8e12 * 0.38), rel=1e-12)
    # an engine of no measured family: its own fraction
    plain = FA.with_overrides(gqa_decode_kernels="default")
    _, _, memory = attention_time(op, H200, plain)
    assert float(memory) == pytest.approx(float(op.bytes) / (4.8e12 * 0.8), rel=1e-12)
    # an engine fraction under the cap keeps its own value: the cap never speeds a kernel up
    slow = FA.with_overrides(attn_decode_efficiency=0.3)
    _, _, memory = attention_time(op, H200, slow)
    assert float(memory) == pytest.approx(float(op.bytes) / (4.8e12 * 0.3), rel=1e-12)


def test_the_cap_touches_only_gqa_decode_over_an_fp8_cache():
    bf16 = _decode_attention("bf16")  # a BF16 cache: the engine's fraction
    assert "fp8_kv" not in bf16.meta
    _, _, memory = attention_time(bf16, H200, FA)
    assert float(memory) == pytest.approx(float(bf16.bytes) / (4.8e12 * 0.8), rel=1e-12)
    mla = _decode_attention("fp8", "deepseek-r1")  # MLA runs its own measured kernel
    assert "query_heads" in mla.meta and "fp8_kv" not in mla.meta
    # a GPU without a measured family (B200): no cap
    b200 = load_hardware("b200")
    assert not b200.fp8_kv_decode
    op = _decode_attention("fp8")
    _, _, memory = attention_time(op, b200, FA)
    assert float(memory) == pytest.approx(float(op.bytes) / (8e12 * 0.8), rel=1e-12)


def test_only_fp8_caches_are_flagged_not_other_one_byte_formats():
    assert "fp8_kv" not in _decode_attention("bf16+int8-kv").meta  # integer, same width
    assert _decode_attention("bf16+mxfp8-kv").meta == {"fp8_kv": True}  # FP8 with block scales
    for phase_op in step_ops(
        load_model("llama-3.1-8b"),
        parse_precision("fp8"),
        step_shape(1, 1, 1, 1, False, isl=4096, osl=1, decode_seqs=64.0, prefill_tokens=512.0),
    ):
        if phase_op.name != "attention_decode":
            assert "fp8_kv" not in phase_op.meta, phase_op.name  # prefill and the other ops


def test_the_estimate_states_the_cap_it_applied():
    from llm_codesign import api
    from llm_codesign.specs.plan import ParallelPlan
    from llm_codesign.specs.workload import Workload

    def cap(precision, engine):
        e = api.estimate(
            "llama-3.1-8b", "h200-sxm", precision, ParallelPlan(),
            Workload(isl=128, osl=32, concurrency=4), engine=engine, explain=False,
        )  # fmt: skip
        return e.to_dict()["assumptions"]["fp8_kv_decode"]

    assert cap("fp8", "sglang")["value"] == 0.38
    assert cap("fp8", "trtllm") is None and cap("bf16", "sglang") is None


def test_engines_name_their_gqa_family_and_unknown_ones_are_refused():
    assert load_engine("sglang").gqa_decode_kernels == "flash_attention"
    assert load_engine("vllm").gqa_decode_kernels == "flash_attention"
    assert load_engine("trtllm").gqa_decode_kernels == "default"
    with pytest.raises(SpecError, match="gqa_decode_kernels='xqa' is not a known"):
        load_engine("trtllm").with_overrides(gqa_decode_kernels="xqa")


def test_a_hardware_file_refuses_an_unknown_family(tmp_path):
    data = yaml.safe_load((_hardware_dir() / "h200-sxm.yaml").read_text())
    data["id"] = "h200-test"
    data["efficiency"]["fp8_kv_decode"] = {"xqa": {"value": 0.5, "source": "x"}}
    path = tmp_path / "h200-test.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="unknown field.*'xqa'.*allowed: flash_attention"):
        load_hardware(str(path))
