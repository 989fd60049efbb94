"""CUDA-graph batch padding (``specs.cuda_graphs``, ``serving.step.graph_padded``): the capture
sizes each runtime's rule gives (closed forms read off its source), the batch a decode-only step
runs at, and the properties of the padded step: never faster than the unpadded one, a step at a
captured size unchanged, prompt steps and the attention's context untouched."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import load_hardware, load_model
from llm_codesign.errors import SpecError
from llm_codesign.ops import step_shape
from llm_codesign.serving.step import graph_padded, step_cost
from llm_codesign.specs.cuda_graphs import graph_batch, graph_sizes
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.precision import parse_precision
from llm_codesign.validate.recipes import recipe_engine

SMALL = [1, 2, 4, *range(8, 129, 8)]  # every rule's sizes to 128 but SGLang's and vLLM's


def sizes(rule: str, max_batch: int, gpu: str = "h200-sxm", tp: int = 8) -> list[int]:
    eng = load_engine("trtllm").with_overrides(cuda_graph_batches=rule, max_batch_size=max_batch)
    return [int(x) for x in graph_sizes(eng, load_hardware(gpu), tp)]


def test_tensorrt_llm_rules():
    # PR #12895 (+64 after 128, then the executor's max_batch_size) and the powers of two before it
    assert sizes("trtllm", 300) == SMALL + [192, 256, 300]
    assert sizes("trtllm", 128) == SMALL
    assert sizes("trtllm-pow2", 1024) == SMALL + [256, 512, 1024]
    assert sizes("trtllm-pow2", 1280) == SMALL + [256, 512, 1024, 1280]
    assert sizes("trtllm", 64) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    # tech blog 20 (Tuning CUDA Graph Batch Sizes): the x2 default's 23 sizes at max batch 2048,
    # and the +64 set's 49
    assert sizes("trtllm-pow2", 2048) == SMALL + [256, 512, 1024, 2048]
    assert len(sizes("trtllm-pow2", 2048)) == 23 and len(sizes("trtllm", 2048)) == 49


def test_vllm_and_sglang_rules():
    # vLLM: 1, 2, 4, 8..248 by 8, 256.. by 16 up to min(2 x max_num_seqs, 512)
    v = sizes("vllm", 1024)
    assert v[:4] == [1, 2, 4, 8] and v[-3:] == [480, 496, 512] and len(v) == 3 + 31 + 17
    assert sizes("vllm", 64)[-1] == 128
    # SGLang: 1, 2, 4, 8, 12, 16..256 by 8, 272..496 by 16, 512.. by 32 to cuda_graph_max_bs
    s = sizes("sglang", 1, "h200-sxm", 8)  # H200, TP 8: 512
    assert s[:6] == [1, 2, 4, 8, 12, 16] and s[-3:] == [480, 496, 512]
    assert sizes("sglang", 1, "h200-sxm", 2)[-1] == 256  # below TP 4: 256
    assert sizes("sglang", 1, "b200", 8)[-1] == 512


def test_stated_list_and_none():
    assert sizes("64,8,16,8", 1) == [8, 16, 64]
    assert sizes("none", 4096) == []


@pytest.mark.parametrize("bad", ["trtlm", "8,x", "0,8", "", "8;16"])
def test_bad_rule_names_the_allowed_values(bad):
    with pytest.raises(SpecError, match="cuda_graph_batches.*allowed: none, trtllm"):
        load_engine("trtllm").with_overrides(cuda_graph_batches=bad)


def test_graph_batch():
    s = np.array([1.0, 2, 4, 8, 16])
    # the smallest size holding the sequences; below one sequence and above the largest: as is
    assert graph_batch(s, [5.0, 8.0, 3.2, 0.5, 20.0]).tolist() == [8.0, 8.0, 4.0, 0.5, 20.0]
    assert graph_batch(np.zeros(0), [5.0]).tolist() == [5.0]


def test_trtllm_bench_recipe_sizes():
    # the published llm_options.yml's sizes up to the run's max_batch_size, which joins them
    # (PR #4843); DeepSeek-R1 on 8 x H200 at 1k/1k ran 384 sequences per rank
    m, hw = load_model("deepseek-r1"), load_hardware("h200-sxm")
    e = recipe_engine("trtllm-bench", load_engine("trtllm"), m, hw, parse_precision("fp8"), 8, 1,
                      1024, 1024)  # fmt: skip
    assert e.max_batch_size == 384
    assert e.cuda_graph_batches == "1,2,4,8,16,32,64,128,256,384"
    # an engine without CUDA graphs keeps none
    e = recipe_engine("trtllm-bench", load_engine("trtllm-trt"), m, hw, parse_precision("fp8"),
                      8, 1, 1024, 1024)  # fmt: skip
    assert e.cuda_graph_batches == "none"


def _step(engine, dec, pre=0.0, model="qwen3-235b-a22b", gpu="h200-sxm", adp=True):
    m, hw, p = load_model(model), load_hardware(gpu), parse_precision("fp8")
    s = step_shape(8, 1, 8, 1, adp, isl=1024, osl=1024, decode_seqs=dec, prefill_tokens=pre)
    return step_cost(m, p, hw, engine, s, detail=True)


x2 = load_engine("trtllm").with_overrides(cuda_graph_batches="1,2,4,8,16,32,64,128,256,384,512")
flat = x2.with_overrides(cuda_graph_batches="none")


@settings(max_examples=25, deadline=None)
@given(per_rank=st.integers(1, 600), adp=st.booleans())
def test_padding_never_speeds_a_step(per_rank, adp):
    dec = float(per_rank * (8 if adp else 1))
    padded, plain = _step(x2, dec, adp=adp), _step(flat, dec, adp=adp)
    assert float(padded.total_s) >= float(plain.total_s) * (1 - 1e-12)
    # the attention's context is the real sequences'
    att = {op.name: float(t) for op, t, _ in padded.ops if op.name == "attention_decode"}
    ref = {op.name: float(t) for op, t, _ in plain.ops if op.name == "attention_decode"}
    assert att == pytest.approx(ref)


def test_captured_sizes_and_prompt_steps_run_as_they_are():
    for per_rank in (64, 256, 384):  # captured: no dummy rows
        assert float(_step(x2, 8.0 * per_rank).total_s) == float(
            _step(flat, 8.0 * per_rank).total_s
        )
    # a step with prompt tokens is not padded
    assert float(_step(x2, 8.0 * 200, pre=2048.0).total_s) == float(
        _step(flat, 8.0 * 200, pre=2048.0).total_s
    )
    # 200 sequences a rank run at 256: 56 dummy rows on every rank
    m = load_model("qwen3-235b-a22b")
    s = step_shape(8, 1, 8, 1, True, isl=1024, osl=1024, decode_seqs=1600.0)
    assert float(graph_padded(s, load_hardware("h200-sxm"), x2).pad_seqs) == 8 * 56
    assert m.moe is not None


def test_estimate_says_when_its_decode_step_pads():
    """An estimate notes the graph its decode step replays where it holds dummy rows, and says
    nothing at a captured size (64 sequences)."""
    from llm_codesign import ParallelPlan, Workload, estimate

    plan = ParallelPlan(tp=8, ep=8, attention_dp=True)

    def notes(clients: int) -> list[str]:
        e = estimate("qwen3-235b-a22b", "h100-sxm", "fp8", plan, Workload(128, 2048, clients),
                     engine="trtllm", explain=False)  # fmt: skip
        return [n for n in e.notes if "CUDA graph" in n]

    said = notes(1500)
    assert said and "192 sequences a rank" in said[0] and "dummy rows" in said[0]
    assert not notes(8 * 64)
