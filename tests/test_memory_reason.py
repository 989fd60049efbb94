"""Why a plan's KV cache gets no memory: the weights alone, or the step the engine profiles before
it sizes the cache (``serving.memory_reason``), one answer in every place that asks (estimate,
the frontier's search, the request simulator), and the refusal's hint a user can act on."""

from __future__ import annotations

import re

import numpy as np
from click.testing import CliRunner

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
    hw = load_hardware("h100-sxm")
    ctx = float(kv_context(load_engine("trtllm"), WL.isl, WL.osl))
    # an engine whose own step is four times TensorRT-LLM's: the search walks down from it
    eng = load_engine("trtllm").with_overrides(max_num_tokens=32768)
    e = _r1_on_h100(eng)
    assert e.reason == WORKSPACE_EXCEEDS_MEMORY
    n = fitting_step_tokens(e.model, hw, e.precision, eng, (16, 1, 16, True, 1), ctx)
    assert n is not None and 2 * n < eng.max_num_tokens and n & (n - 1) == 0
    fits = _r1_on_h100(eng.with_overrides(max_num_tokens=n))
    assert fits.feasible and fits.max_concurrency >= 1
    over = _r1_on_h100(eng.with_overrides(max_num_tokens=2 * n))
    assert not over.feasible and over.reason == WORKSPACE_EXCEEDS_MEMORY
    # a step too small for any budget: no hint
    tiny = load_engine("trtllm").with_overrides(max_num_tokens=200)
    assert fitting_step_tokens(e.model, hw, e.precision, tiny, (16, 1, 16, True, 1), ctx) is None


def test_estimate_names_the_step_and_a_max_num_tokens_that_fits(tmp_path):
    args = ["estimate", "-m", "deepseek-r1", "-g", "h100-sxm", "-p", "fp8", "--tp", "16",
            "--ep", "16", "--attention-dp", "--engine", "trtllm", "-c", "64"]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert WORKSPACE_EXCEEDS_MEMORY in r.output and "the weights fit" in r.output
    assert "smaller weights the GPU runs" not in r.output  # (the weights are not the problem)
    n = int(re.search(r"max_num_tokens ([\d,]+) fits", r.output).group(1).replace(",", ""))
    # the user's move: the deployment at that max_num_tokens, read with --from
    opts = tmp_path / "opts.yaml"
    opts.write_text(f"enable_attention_dp: true\nmax_num_tokens: {n}\n")
    serve = "trtllm-serve deepseek-ai/DeepSeek-R1 --tp_size 16 --ep_size 16"
    serve += f" --extra_llm_api_options {opts}"
    ok = CliRunner().invoke(main, ["estimate", "--from", serve, "-g", "h100-sxm", "-c", "64"])
    assert ok.exit_code == 0 and "infeasible" not in ok.output, ok.output


def test_weights_that_fit_without_room_for_a_sequence_are_not_the_step():
    # GLM-4.5 in BF16 over 16 L40S (TP8 PP2, vLLM): 44 GB of weights a GPU leave under one
    # sequence's KV even with no profiled step, so no max_num_tokens helps: oom, not the step
    e = estimate("glm-4.5", "l40s", "bf16", ParallelPlan(tp=8, pp=2), WL, engine="vllm",
                 explain=False)  # fmt: skip
    hw, eng = e.hardware, load_engine("vllm", e.hardware)
    plan = (np.asarray(8), np.asarray(2), np.asarray(False))
    w = e.weights_per_gpu_gb * 1e9
    alone = float(kv_budget_bytes(hw, eng, w, RUNTIME_RESERVED_BYTES, plan))
    ctx = np.asarray(float(kv_context(eng, WL.isl, WL.osl)))
    one = float(memory_fit(e.model, hw, e.precision, eng, *plan[:2], 1, False, 1, ctx)[1])
    assert 0 < alone < one  # (the arithmetic the label rests on)
    assert e.reason == "oom"


def test_a_disaggregated_pool_is_refused_for_its_step_too():
    from llm_codesign.specs.plan import DisaggregatedPlan

    plan = DisaggregatedPlan(prefill=DEP16, decode=DEP16, prefill_workers=1, decode_workers=1)
    e = estimate("deepseek-r1", "h100-sxm", "fp8", plan, WL, engine="trtllm", explain=False)
    assert not e.feasible and e.reason == WORKSPACE_EXCEEDS_MEMORY
    r = CliRunner().invoke(main, ["estimate", "-m", "deepseek-r1", "-g", "h100-sxm", "-p", "fp8",
        "--engine", "trtllm", "-c", "64", "--tp", "16", "--ep", "16", "--attention-dp",
        "--prefill-workers", "1", "--prefill-tp", "16", "--prefill-ep", "16",
        "--prefill-attention-dp"])  # fmt: skip
    assert r.exit_code == 1 and WORKSPACE_EXCEEDS_MEMORY in r.output
    assert "smaller max_num_tokens" in r.output and "smaller weights" not in r.output


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


def test_a_prefill_batch_too_large_names_the_batch():
    r = CliRunner().invoke(main, ["estimate", "-m", "llama-3.1-70b", "-g", "h100-sxm", "-p", "fp8",
        "--tp", "4", "--prefill-workers", "1", "--prefill-tp", "4", "--prefill-batch", "5000",
        "--isl", "8192", "-c", "64"])  # fmt: skip
    assert r.exit_code == 1 and "prefill_batch_oom" in r.output
    assert "batch of 5000 prompts" in r.output and "a smaller --prefill-batch" in r.output
