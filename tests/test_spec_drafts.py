"""Speculative steps whose drafts run as passes of their own (``EngineConstants
.spec_separate_drafts``, SGLang's EAGLE worker): each of the k draft passes adds the host work
of a step for the sequences of a scheduling rank, none of it hidden; drafts inside the target's
forward (TensorRT-LLM's one-model MTP) add none (issue 11). A speculative step never shortens
the wait for the step that carries a prompt."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.errors import SpecError
from llm_codesign.serving import evaluate
from llm_codesign.serving.disaggregated import decode_workers
from llm_codesign.serving.step import draft_time, tokens_per_step
from llm_codesign.specs.engine import engine_from_mapping

R1 = load_model("deepseek-r1")
H200 = load_hardware("h200-sxm")
FP8 = parse_precision("fp8")


def test_engines_say_how_they_run_their_drafts():
    assert load_engine("sglang").spec_separate_drafts
    for name in ("trtllm", "vllm", "base", "generic", "trtllm-trt"):
        assert not load_engine(name).spec_separate_drafts, name
    assert "eagle_worker" in load_engine("sglang").sources["spec_separate_drafts"]


def test_each_separate_pass_adds_a_steps_host_work():
    """By hand, SGLang's step host work 2 ms and 37.72 us a sequence: two draft passes over 16
    sequences add 2 x (2 + 16 x 0.03772) ms = 5.207 ms to the drafts' GPU share."""
    sg = load_engine("sglang")
    fused = sg.with_overrides(spec_separate_drafts=False)
    plain, pp = np.array(0.012), np.array(1.0)
    extra = draft_time(R1, sg, plain, pp, 2, 16.0) - draft_time(R1, fused, plain, pp, 2, 16.0)
    want = 2 * (sg.step_overhead_s + 16 * sg.per_seq_overhead_s)
    assert float(extra) == pytest.approx(want, rel=1e-12)
    assert float(extra) == pytest.approx(2 * (0.002 + 16 * 3.772e-05), rel=1e-3)
    # no drafts, no passes
    assert float(draft_time(R1, sg, plain, pp, 0, 16.0)) == 0.0


def test_a_decode_worker_pays_it_per_sequence_of_its_rank():
    """Attention-DP: each of the 8 ranks schedules 64 / 8 sequences, so a worker's TPOT grows by
    k passes x (step + 8 x per sequence) / tokens a step, exactly."""
    sg = load_engine("sglang")
    fused = sg.with_overrides(spec_separate_drafts=False)
    hw, prec = load_hardware("h200-sxm"), parse_precision("fp8")
    plan = dict(tp=np.array(8), pp=np.array(1), ep=np.array(8), cp=np.array(1))
    common = dict(**plan, attention_dp=np.array(True), concurrency=64.0, isl=1024, osl=1024)
    k, a = 2, 0.65
    sep = decode_workers(R1, hw, prec, sg, **common, spec_tokens=k, spec_acceptance=a)
    one = decode_workers(R1, hw, prec, fused, **common, spec_tokens=k, spec_acceptance=a)
    want = k * (sg.step_overhead_s + 8 * sg.per_seq_overhead_s) / tokens_per_step(k, a)
    assert float(sep.tpot_s - one.tpot_s) == pytest.approx(want, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(conc=st.integers(1, 256), k=st.integers(1, 4))
def test_separate_passes_never_make_a_step_faster(conc: int, k: int):
    sg = load_engine("sglang")
    fused = sg.with_overrides(spec_separate_drafts=False)
    hw, prec = load_hardware("h200-sxm"), parse_precision("fp8")
    kw = dict(tp=np.array(8), pp=np.array(1), ep=np.array(1), cp=np.array(1))
    kw.update(attention_dp=np.array(False), concurrency=float(conc), isl=1024, osl=512)
    sep = decode_workers(R1, hw, prec, sg, **kw, spec_tokens=k, spec_acceptance=0.7)
    one = decode_workers(R1, hw, prec, fused, **kw, spec_tokens=k, spec_acceptance=0.7)
    assert float(sep.tpot_s) > float(one.tpot_s)


def test_the_flag_must_be_a_boolean():
    with pytest.raises(SpecError, match="spec_separate_drafts"):
        engine_from_mapping(
            {"id": "x", "spec_separate_drafts": "sometimes"}, "engine.yaml",
            base=load_engine("base"),
        )  # fmt: skip


def test_the_estimate_says_so():
    from llm_codesign import ParallelPlan, Workload, estimate

    kw = dict(spec_tokens=2, spec_acceptance=0.65, explain=False)
    args = ("deepseek-r1", "h200-sxm", "fp8", ParallelPlan(tp=8), Workload(1024, 1024, 16))
    sg = estimate(*args, engine="sglang", **kw).to_dict()["notes"]
    trt = estimate(*args, engine="trtllm", **kw).to_dict()["notes"]
    assert any("2 drafts a step as a pass of its own" in n for n in sg)
    assert not any("as a pass of its own" in n for n in trt)


@settings(max_examples=12, deadline=None)
@example(plan=(8, 1, False), conc=128, isl=1024, spec=(1, 0.65))
@given(
    plan=st.sampled_from([(8, 8, False), (8, 1, False), (8, 8, True)]),
    conc=st.sampled_from([2, 8, 32, 128]),
    isl=st.sampled_from([1024, 8192]),
    spec=st.sampled_from([(1, 0.65), (3, 0.8)]),
)
def test_speculative_steps_never_shorten_the_wait_for_a_prompt(plan, conc, isl, spec):
    # the drafts lengthen each step and finish requests sooner (more prompts per step): at the
    # same clients a request waits at least as long for the step that carries its prompt
    tp, ep, adp = plan
    trt = load_engine("trtllm")
    kw = dict(tp=tp, ep=ep, attention_dp=adp, isl=isl, osl=1024, concurrency=conc)
    plain = evaluate(R1, H200, FP8, trt, **kw)
    mtp = evaluate(R1, H200, FP8, trt, spec_tokens=spec[0], spec_acceptance=spec[1], **kw)
    assert float(mtp.ttft_s) >= 0.999 * float(plain.ttft_s)
