"""SGLang runs models with recurrent-state token mixers (Gated DeltaNet, SSMs) without its
overlap scheduler (``EngineConstants.recurrent_state_overlap``): their host work adds to the
step in full, except in steps that verify speculative drafts (issue 11)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.errors import SpecError
from llm_codesign.ops import step_shape
from llm_codesign.report import read_deployment
from llm_codesign.serving import evaluate
from llm_codesign.serving.step import (
    draft_time,
    host_overlap_share,
    runs_without_overlap,
    speculating_engine,
    step_cost,
)
from llm_codesign.specs.engine import engine_from_mapping


def test_the_share_is_zero_only_for_recurrent_models_on_an_engine_that_drops_the_overlap():
    sg = load_engine("sglang")
    hybrid, plain = load_model("qwen3.5-397b-a17b"), load_model("deepseek-r1")
    assert not sg.recurrent_state_overlap and "linear" in hybrid.mixers
    assert hybrid.has_recurrent_state and not plain.has_recurrent_state
    assert runs_without_overlap(hybrid, sg) and not runs_without_overlap(plain, sg)
    assert host_overlap_share(hybrid, sg) == 0.0
    assert host_overlap_share(plain, sg) == sg.host_overlap
    for name in ("trtllm", "vllm", "trtllm-trt", "generic"):
        eng = load_engine(name)
        assert eng.recurrent_state_overlap
        assert host_overlap_share(hybrid, eng) == eng.host_overlap


def test_a_configuration_that_speculates_keeps_the_overlap():
    """SGLang drops its radix cache, not its overlap, when it speculates: with drafts the
    hybrid prices as with the overlap kept; without, the two differ."""
    sg = load_engine("sglang")
    assert speculating_engine(sg, 0) is sg
    assert speculating_engine(sg, 2).recurrent_state_overlap
    trt = load_engine("trtllm")
    assert speculating_engine(trt, 3) is trt
    m, hw, p = load_model("qwen3.5-397b-a17b"), load_hardware("h200-sxm"), parse_precision("fp8")
    kept = sg.with_overrides(recurrent_state_overlap=True)
    kw = dict(tp=8, ep=8, isl=1024, osl=1024, concurrency=4)
    for k, a in ((0, 0.0), (2, 0.7)):
        off = evaluate(m, hw, p, sg, spec_tokens=k, spec_acceptance=a, **kw)
        on = evaluate(m, hw, p, kept, spec_tokens=k, spec_acceptance=a, **kw)
        if k:
            assert float(off.tpot_s) == float(on.tpot_s) and float(off.ttft_s) == float(on.ttft_s)
        else:
            assert float(off.tpot_s) > float(on.tpot_s) and float(off.ttft_s) > float(on.ttft_s)


def test_a_launch_without_the_radix_cache_keeps_the_overlap():
    """--disable-radix-cache keeps SGLang's overlap scheduler for a recurrent-state model (and
    is listed as not priced for any other)."""
    hw = load_hardware("h200-sxm")
    cmd = "python -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B-FP8 --tp 8"
    base = read_deployment([cmd], hw)
    off = read_deployment([cmd + " --disable-radix-cache"], hw)
    assert base.engine_constants.recurrent_state_overlap is False
    assert off.engine_constants.recurrent_state_overlap is True
    assert any(x["setting"] == "--disable-radix-cache" for x in off.mapped)
    dense = read_deployment(
        ["python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 "
         "--disable-radix-cache"], hw,
    )  # fmt: skip
    assert dense.engine_constants.recurrent_state_overlap is False
    assert any(x["setting"] == "--disable-radix-cache" for x in dense.ignored)


def test_a_hybrid_step_on_sglang_carries_its_host_work_in_full():
    """Same step, overlap dropped or kept: the difference is host_overlap x min(gpu, host)."""
    m, hw, p = load_model("qwen3.5-397b-a17b"), load_hardware("h200-sxm"), parse_precision("fp8")
    off = load_engine("sglang")
    on = dataclasses.replace(off, recurrent_state_overlap=True)
    s = step_shape(8, 1, 8, 1, False, isl=1024.0, osl=1024.0, decode_seqs=16.0)
    t_off, t_on = step_cost(m, p, hw, off, s), step_cost(m, p, hw, on, s)
    seqs = 16.0  # one scheduling rank (tensor-parallel attention), one stage
    host = off.step_overhead_s + off.per_seq_overhead_s * seqs
    gpu = float(t_on.total_s) - host + off.host_overlap * min(float(t_on.total_s), host)
    # t_on = gpu + host - ov x min(gpu, host); t_off = gpu + host
    assert float(t_off.total_s) == pytest.approx(gpu + host, rel=1e-9)
    hidden = off.host_overlap * min(gpu, host)
    assert float(t_off.total_s) - float(t_on.total_s) == pytest.approx(hidden, rel=1e-9)


def test_drafts_exclude_only_the_step_overhead_the_step_shows():
    """A draft token is one layer-equivalent of the one-token step less the fixed step overhead
    that step carries: the share the overlap scheduler leaves in it."""
    m = load_model("deepseek-r1")
    # the drafts' GPU share alone: no host work of separate draft passes (test_spec_drafts.py)
    sg = load_engine("sglang").with_overrides(spec_separate_drafts=False)
    plain = 0.010
    shown = sg.step_overhead_s * (1.0 - sg.host_overlap)
    want = 2 * max(m.num_mtp_layers, 1) * (plain - shown) / m.num_layers
    assert float(draft_time(m, sg, np.array(plain), np.array(1.0), 2)) == pytest.approx(want)
    # a hybrid model on SGLang shows all of it in a one-token step
    h = load_model("qwen3.5-397b-a17b")
    want_h = 1 * max(h.num_mtp_layers, 1) * (plain - sg.step_overhead_s) / h.num_layers
    assert float(draft_time(h, sg, np.array(plain), np.array(1.0), 1)) == pytest.approx(want_h)


def test_the_flag_must_be_a_boolean():
    data = {"id": "x", "recurrent_state_overlap": "sometimes"}
    with pytest.raises(SpecError, match="recurrent_state_overlap"):
        engine_from_mapping(data, "engine.yaml", base=load_engine("base"))


def test_the_estimate_says_when_the_overlap_is_off():
    from llm_codesign import ParallelPlan, estimate

    plan = ParallelPlan(tp=8, ep=8)
    kw = dict(explain=False)
    notes = estimate("qwen3.5-397b-a17b", "h200-sxm", "fp8", plan, engine="sglang", **kw).notes
    assert any("without its overlap scheduler" in n and "--disable-radix-cache" in n for n in notes)
    spec = estimate("qwen3.5-397b-a17b", "h200-sxm", "fp8", plan, engine="sglang",
                    spec_tokens=2, spec_acceptance=0.7, **kw).notes  # fmt: skip
    trt = estimate("qwen3.5-397b-a17b", "h200-sxm", "fp8", plan, engine="trtllm", **kw).notes
    dense = estimate("deepseek-r1", "h200-sxm", "fp8", ParallelPlan(tp=8), engine="sglang", **kw)
    for other in (spec, trt, dense.notes):
        assert not any("overlap scheduler" in n for n in other)


def test_launch_files_run_sglang_as_priced():
    """An SGLang launch of a recurrent-state model adds --disable-radix-cache where the pricing
    kept the overlap scheduler, and says what the radix cache costs where it did not."""
    from llm_codesign import frontier
    from llm_codesign.report import launch_settings

    hw = load_hardware("h200-sxm")
    kw = dict(num_gpus=8, isl=1024, osl=256, precision=["fp8"], points_per_octave=1,
              refine=False, workers=1, progress=False)  # fmt: skip
    for engine, flag in (("sglang", 0), ("trtllm", 1)):
        f = frontier("qwen3.5-397b-a17b", hw, engine=engine, **kw)
        text = str(launch_settings(f, int(f.best)))
        assert "python -m sglang.launch_server" in text
        assert ("'--disable-radix-cache'" in text) == bool(flag)  # an argument, not the note
        assert ("radix cache is on" in text) == (not flag)
