"""Why a plan's KV cache gets no memory: the weights alone, or the step the engine profiles before
it sizes the cache (``serving.memory_reason``), one answer in every place that asks (estimate,
the frontier's search, the request simulator), and the refusal's hint a user can act on."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from click.testing import CliRunner

import llm_codesign
from llm_codesign import (
    Traffic,
    Workload,
    estimate,
    load_engine,
    load_hardware,
    load_model,
    parse_length_dist,
    simulate,
)
from llm_codesign.cli import main
from llm_codesign.explore import enumerate_plans
from llm_codesign.explore.grid import memory_limit
from llm_codesign.serving import evaluate
from llm_codesign.serving.memory import (
    RUNTIME_RESERVED_BYTES,
    WEIGHTS_EXCEED_MEMORY,
    WORKSPACE_EXCEEDS_MEMORY,
    fitting_step_tokens,
    kv_budget_bytes,
    kv_context,
    memory_fit,
)
from llm_codesign.specs.plan import ParallelPlan

# DeepSeek-R1 FP8 on two nodes of 8 H100s, DEP16 (InferenceX's H100 disaggregated decode pools)
DEP16 = ParallelPlan(tp=16, ep=16, attention_dp=True)
WL = Workload(isl=1024, osl=1024, concurrency=64)
DATA = Path(llm_codesign.__file__).parent / "data"


def _r1_on_h100(eng):
    return estimate("deepseek-r1", "h100-sxm", "fp8", DEP16, WL, engine=eng, explain=False)


def test_dep16_on_h100_is_refused_for_its_profiled_step_not_its_weights():
    eng = load_engine("trtllm")
    e = _r1_on_h100(eng)
    assert not e.feasible and e.reason == WORKSPACE_EXCEEDS_MEMORY
    # the weights alone fit: 671B parameters over 16 GPUs' experts plus the replicated attention
    # are ~60 GB of 80; the reserve and the budget's fraction leave room for them
    hw = load_hardware("h100-sxm")
    assert e.weights_per_gpu_gb * 1e9 < hw.hbm_bytes
    w = e.weights_per_gpu_gb * 1e9
    plan = (np.asarray(16), np.asarray(1), np.asarray(True))
    runtime = load_engine("trtllm", hw)
    assert float(kv_budget_bytes(hw, runtime, w, RUNTIME_RESERVED_BYTES, plan)) > 0
    # TP1 holds all 671B parameters: the weights themselves do not fit
    one = estimate("deepseek-r1", "h100-sxm", "fp8", ParallelPlan(), WL, engine=eng, explain=False)
    assert one.reason == WEIGHTS_EXCEED_MEMORY


def test_the_hinted_max_num_tokens_is_the_largest_power_of_two_that_fits():
    eng = load_engine("trtllm")
    e = _r1_on_h100(eng)
    hw = load_hardware("h100-sxm")
    ctx = float(kv_context(eng, WL.isl, WL.osl))
    n = fitting_step_tokens(e.model, hw, e.precision, eng, (16, 1, 16, True, 1), ctx)
    assert n is not None and n < eng.max_num_tokens and n & (n - 1) == 0
    fits = _r1_on_h100(eng.with_overrides(max_num_tokens=n))
    assert fits.feasible and fits.max_concurrency >= 1
    over = _r1_on_h100(eng.with_overrides(max_num_tokens=2 * n))
    assert not over.feasible and over.reason == WORKSPACE_EXCEEDS_MEMORY


def test_estimate_names_the_step_and_a_max_num_tokens_that_fits(tmp_path):
    args = ["estimate", "-m", "deepseek-r1", "-g", "h100-sxm", "-p", "fp8", "--tp", "16",
            "--ep", "16", "--attention-dp", "--engine", "trtllm", "-c", "64"]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert WORKSPACE_EXCEEDS_MEMORY in r.output and "max_num_tokens 8,192" in r.output
    assert "smaller weights the GPU runs" not in r.output  # (the weights are not the problem)
    n = int(re.search(r"max_num_tokens ([\d,]+) fits", r.output).group(1).replace(",", ""))
    # the user's move: the same engine at that max_num_tokens, as a YAML of its own
    # (the bundled file's constants without its sources block, max_num_tokens changed)
    text = (DATA / "engines" / "trtllm.yaml").read_text().split("\nsources:")[0]
    yaml = tmp_path / "trtllm_small_step.yaml"
    yaml.write_text(re.sub(r"max_num_tokens: \d+", f"max_num_tokens: {n}", text) + "\n")
    ok = CliRunner().invoke(main, [*args[:-4], "--engine", str(yaml), "-c", "64"])
    assert ok.exit_code == 0, ok.output


def test_search_and_evaluate_give_one_reason_for_every_plan():
    m, hw = load_model("deepseek-r1"), load_hardware("h100-sxm")
    eng = load_engine("trtllm", hw)
    e = _r1_on_h100(eng)  # (the checkpoint's precision as estimate resolves it)
    plans = enumerate_plans(m, hw, 16)
    v = plans.take(np.flatnonzero(plans.valid))
    ctx = float(kv_context(eng, WL.isl, WL.osl))
    lim, usable, no_kv = memory_limit(m, hw, e.precision, eng, v, ctx)
    assert set(no_kv[usable <= 0]) <= {WEIGHTS_EXCEED_MEMORY, WORKSPACE_EXCEEDS_MEMORY}
    assert WORKSPACE_EXCEEDS_MEMORY in set(no_kv) and WEIGHTS_EXCEED_MEMORY in set(no_kv)
    g = evaluate(m, hw, e.precision, eng, tp=v.tp, pp=v.pp, ep=v.ep, cp=v.cp,
                 attention_dp=v.attention_dp, isl=WL.isl, osl=WL.osl, concurrency=1)  # fmt: skip
    memory = np.isin(g.reason, [WEIGHTS_EXCEED_MEMORY, WORKSPACE_EXCEEDS_MEMORY])
    assert np.array_equal(np.asarray(g.reason)[memory], no_kv[memory])
    assert np.array_equal(memory, usable <= 0)
    # memory_fit's own arithmetic: no KV budget exactly where a reason is given
    w, _, _, use, _ = memory_fit(m, hw, e.precision, eng, v.tp, v.pp, v.ep, v.attention_dp, v.cp,
                                 np.asarray(ctx))  # fmt: skip
    assert np.array_equal(use <= 0, no_kv != "")


def test_the_simulator_refuses_for_the_same_reason():
    e = _r1_on_h100(load_engine("trtllm"))
    one = parse_length_dist("fixed:1024", "isl-dist")
    tr = Traffic(clients=4, num_requests=8, isl=one, osl=one)
    r = simulate(e.model, e.hardware, e.precision, load_engine("trtllm"), tr, **DEP16.to_dict())
    assert not r.feasible and r.reason == WORKSPACE_EXCEEDS_MEMORY
