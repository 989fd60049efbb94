"""One concept, one answer: the scalar and vectorized plan rules agree, and estimate, frontier,
lint and regimes report the same TPOT for the same configuration."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import (
    ParallelPlan,
    SpecError,
    Workload,
    estimate,
    frontier,
    load_engine,
    load_hardware,
    load_model,
    parse_precision,
    regimes,
)
from llm_codesign.advise.findings import LintContext, step_rows
from llm_codesign.explore import operating_point
from llm_codesign.explore.operating import operating_step
from llm_codesign.specs.model_config import model_from_config
from llm_codesign.specs.plan import plan_feasibility


def _deepseek_variant():
    """DeepSeek-R1 with intermediate_size=18000 (its 3 dense layers): tp=32 cannot split them."""
    cfg = dict(load_model("deepseek-r1").config)
    cfg["intermediate_size"] = 18000
    return model_from_config(cfg, model_id="deepseek-variant")


MODELS = {
    "llama-3.1-8b": load_model("llama-3.1-8b"),
    "deepseek-r1": load_model("deepseek-r1"),
    "qwen3-30b-a3b": load_model("qwen3-30b-a3b"),
    "gpt-oss-120b": load_model("gpt-oss-120b"),
    "deepseek-variant": _deepseek_variant(),
}
AXIS = st.sampled_from([1, 2, 3, 4, 6, 8, 16, 32, 64])


def test_issue_example_deepseek_variant_tp32_is_rejected_by_both():
    m = MODELS["deepseek-variant"]
    with pytest.raises(SpecError, match="tp=32 does not divide intermediate_size=18000"):
        ParallelPlan(tp=32, ep=32).validate_for(m)
    assert plan_feasibility(m, 32, 1, 32, False, 1).item() == "tp_not_dividing_ffn"
    # attention-DP replicates the dense FFN: nothing to split
    assert plan_feasibility(m, 32, 1, 32, True, 1).item() == ""


@settings(max_examples=400, deadline=None)
@given(
    model=st.sampled_from(sorted(MODELS)),
    tp=AXIS,
    pp=st.sampled_from([1, 2, 3, 4, 8, 64, 128]),
    ep=AXIS,
    cp=st.sampled_from([1, 2, 4, 8]),
    adp=st.booleans(),
)
def test_scalar_and_vectorized_plan_rules_agree(model, tp, pp, ep, cp, adp):
    m = MODELS[model]
    vec = str(plan_feasibility(m, np.array([tp]), pp, ep, adp, cp)[0])
    try:
        ParallelPlan(tp=tp, pp=pp, ep=ep, attention_dp=adp, cp=cp).validate_for(m)
        scalar_ok = True
    except SpecError:
        scalar_ok = False
    assert scalar_ok == (vec == "")


# (model, hardware, precision, plan, isl, osl, concurrency): pp > 1, attention-DP + EP, Helix
CONFIGS = [
    ("llama-3.1-70b", "h200-sxm", "fp8", ParallelPlan(tp=2, pp=2), 1024, 1024, 16),
    ("llama-3.1-8b", "h100-sxm", "fp8", ParallelPlan(tp=1, pp=4), 2048, 256, 8),
    (
        "qwen3-30b-a3b",
        "h100-sxm",
        "fp8",
        ParallelPlan(tp=4, ep=4, attention_dp=True),
        1024,
        1024,
        64,
    ),
    ("qwen3-30b-a3b", "h100-sxm", "fp8", ParallelPlan(tp=4, ep=2), 1024, 512, 32),
    ("llama-3.1-70b", "b200", "fp8", ParallelPlan(tp=16, cp=2), 8192, 1024, 4),
]


@pytest.mark.parametrize("model, hw, prec, plan, isl, osl, conc", CONFIGS)
def test_estimate_frontier_lint_regimes_agree_on_tpot(model, hw, prec, plan, isl, osl, conc):
    e = estimate(model, hw, prec, plan, Workload(isl, osl, conc), explain=False)
    assert e.feasible, e.reason
    m, h, p, eng = load_model(model), load_hardware(hw), parse_precision(prec), load_engine()

    # frontier: the same plan and concurrency among every evaluated point
    f = frontier(
        model,
        hw,
        num_gpus=plan.num_gpus,
        isl=isl,
        osl=osl,
        precision=prec,
        workers=1,
        keep_points="all",
        refine=False,
        max_batch=max(conc, 1),
    )
    c = f.points.cols
    row = np.flatnonzero(
        (c["tp"] == plan.tp)
        & (c["pp"] == plan.pp)
        & (c["ep"] == plan.ep)
        & (c["cp"] == plan.cp)
        & (c["attention_dp"] == plan.attention_dp)
        & (c["concurrency"] == conc)
        & (c["mode"] == 0)
    )
    assert len(row) == 1
    assert c["tpot_s"][row[0]] * 1e3 == pytest.approx(e.tpot_ms, rel=1e-12)

    # the advisor's operating point, and the step lint operates on
    pt = operating_point(m, h, p, eng, isl, osl, "throughput", plans=[plan], concurrency=conc)
    assert pt.tpot_s * 1e3 == pytest.approx(e.tpot_ms, rel=1e-12)
    assert float(operating_step(m, h, p, eng, pt).total_s) * 1e3 == pytest.approx(
        e.tpot_ms, rel=1e-9
    )
    ctx = LintContext(m, h, p, eng, [], [pt], 128)
    total, rows, scale = step_rows(ctx, pt)["mixed"]
    assert total * 1e3 == pytest.approx(e.tpot_ms, rel=1e-9)
    assert scale == plan.pp

    # regimes at the same plan and concurrency
    r = regimes(
        model,
        hw,
        prec,
        short_isl=isl,
        long_isl=isl,
        osl=osl,
        plans=[plan],
        throughput_concurrency=conc,
    )
    assert r.regimes[0].point.tpot_s * 1e3 == pytest.approx(e.tpot_ms, rel=1e-12)
    # its bound split covers the same step
    assert sum(r.regimes[0].resources.values()) == pytest.approx(1.0, rel=1e-9)


def test_issue_example_lint_step_matches_estimate_under_pp():
    """llama-3.1-70b TP2 PP2: lint priced a 12.1 ms step (no pp split) against estimate's 21.6."""
    plan = ParallelPlan(tp=2, pp=2)
    e = estimate("llama-3.1-70b", "h200-sxm", "fp8", plan, Workload(1024, 1024, 64), explain=False)
    m, h, p, eng = (
        load_model("llama-3.1-70b"),
        load_hardware("h200-sxm"),
        parse_precision("fp8"),
        load_engine(),
    )
    pt = operating_point(m, h, p, eng, 1024, 1024, "throughput", plans=[plan], concurrency=64)
    ctx = LintContext(m, h, p, eng, [], [pt], 128)
    total, _rows, _scale = step_rows(ctx, pt)["mixed"]
    assert total * 1e3 == pytest.approx(e.tpot_ms, rel=1e-9)


def test_estimate_of_a_disaggregated_frontier_point_reproduces_it():
    """frontier's disaggregated points and evaluate_disaggregated share the physics."""
    from llm_codesign import evaluate_disaggregated

    f = frontier(
        "llama-3.1-70b",
        "h200-sxm",
        num_gpus=8,
        isl=2048,
        osl=256,
        precision="fp8",
        disagg=True,
        workers=1,
        keep_points="all",
        refine=False,
    )
    c = f.points.cols
    rows = np.flatnonzero((c["mode"] == 1) & c["feasible"])
    assert len(rows) > 0
    m, h, p, eng = (
        load_model("llama-3.1-70b"),
        load_hardware("h200-sxm"),
        parse_precision("fp8"),
        load_engine(),
    )
    for i in rows[:: max(1, len(rows) // 5)]:
        r = evaluate_disaggregated(
            m,
            h,
            p,
            eng,
            prefill_plan={k: int(c[f"p_{k}"][i]) for k in ("tp", "pp", "ep", "cp")}
            | {"attention_dp": bool(c["p_attention_dp"][i])},
            decode_plan={k: int(c[k][i]) for k in ("tp", "pp", "ep", "cp")}
            | {"attention_dp": bool(c["attention_dp"][i])},
            prefill_count=int(c["prefill_workers"][i]),
            decode_count=int(c["decode_workers"][i]),
            prefill_batch=int(c["p_batch"][i]),
            concurrency=c["concurrency"][i],
            isl=2048,
            osl=256,
        )
        assert bool(r.feasible)
        for name in ("ttft_s", "tpot_s", "output_tok_s_per_gpu", "num_gpus"):
            assert float(getattr(r, name)) == pytest.approx(float(c[name][i]), rel=1e-9), name


def test_plan_dataclass_and_vector_rules_share_structural_codes():
    with pytest.raises(SpecError, match="ep=3 must divide tp=4"):
        ParallelPlan(tp=4, ep=3)
    assert plan_feasibility(MODELS["deepseek-r1"], 4, 1, 3, False, 1).item() == "ep_not_dividing_tp"
    assert dataclasses.replace(ParallelPlan(tp=8), cp=2).cp == 2


def test_estimate_prices_a_disaggregated_plan_like_the_frontier():
    from llm_codesign import DisaggregatedPlan

    plan = DisaggregatedPlan(
        ParallelPlan(tp=2), ParallelPlan(tp=4), prefill_workers=2, decode_workers=1, prefill_batch=1
    )
    e = estimate("llama-3.1-70b", "h200-sxm", "fp8", plan, Workload(2048, 256, 64), explain=False)
    assert e.num_gpus == 2 * 2 + 1 * 4 and e.to_dict()["mode"] == "disaggregated"
    # the decode pool's TPOT is the decode-only pipelined step of its plan
    m, h, p, eng = (
        load_model("llama-3.1-70b"),
        load_hardware("h200-sxm"),
        parse_precision("fp8"),
        load_engine(),
    )
    from llm_codesign.serving import pipelined_step

    step = pipelined_step(
        m,
        p,
        h,
        eng,
        tp=4,
        pp=1,
        ep=1,
        cp=1,
        attention_dp=False,
        isl=2048,
        osl=256,
        decode_seqs=64.0,
    )
    assert e.tpot_ms == pytest.approx(float(step.total_s) * 1e3, rel=1e-12)
    with pytest.raises(
        SpecError, match="prefill plan: attention tp=3 does not divide num_attention_heads=64"
    ):
        DisaggregatedPlan(ParallelPlan(tp=3), ParallelPlan(tp=4)).validate_for(m)


def test_a_disaggregated_estimate_with_mtp_speculates_in_the_decode_pool():
    """MTP in a disaggregated deployment (DeepSeek-R1, 1 TP8 prefill worker, 2 TP8 decode
    workers): the decode pool's TPOT is (its step verifying 1 + k tokens + k drafts) / the
    tokens a step yields, by hand from ``pipelined_step`` and ``draft_time``; the prefill pool
    is untouched; with traffic (the request simulator) speculative decoding is refused."""
    from llm_codesign import DisaggregatedPlan
    from llm_codesign.serving import pipelined_step
    from llm_codesign.serving.step import draft_time
    from llm_codesign.specs.traffic import Traffic

    plan = DisaggregatedPlan(ParallelPlan(tp=8, ep=8), ParallelPlan(tp=8, ep=8), 1, 2, 4)
    wl = Workload(1024, 1024, 32)
    args = ("deepseek-r1", "h200-sxm", "fp8", plan, wl)
    plain = estimate(*args, explain=False)
    mtp = estimate(*args, explain=False, spec_tokens=2, spec_acceptance=0.8)
    m, h, p, eng = (
        load_model("deepseek-r1"),
        load_hardware("h200-sxm"),
        parse_precision("fp8+fp8_block-w"),  # the checkpoint's FP8 (estimate's precision note)
        load_engine(),
    )

    def step(query):
        return pipelined_step(
            m, p, h, eng, tp=8, pp=1, ep=8, cp=1, attention_dp=False, isl=1024, osl=1024,
            decode_seqs=32.0, decode_query=query,
        ).total_s  # fmt: skip

    by_hand = (step(3.0) + draft_time(m, eng, step(1.0), 1, 2)) / (1 + 0.8 + 0.8**2)
    assert mtp.tpot_ms == pytest.approx(float(by_hand) * 1e3, rel=1e-12)
    assert mtp.tpot_ms < plain.tpot_ms
    assert mtp.to_dict()["breakdown"]["prefill"] == plain.to_dict()["breakdown"]["prefill"]
    with pytest.raises(SpecError, match="disaggregated request simulator takes no speculative"):
        estimate(*args, spec_tokens=2, spec_acceptance=0.8, traffic=Traffic(clients=4))


def test_an_engine_without_partial_expert_parallelism_never_gets_such_a_plan():
    """vLLM runs MoE experts either all expert-parallel or all tensor-parallel over the tp ranks
    (engine constant ``moe_partial_ep`` false): evaluate marks ep=4 x moe_tp=2 infeasible with
    the rule's code, the plan enumeration drops it, TensorRT-LLM keeps it."""
    from llm_codesign import load_engine
    from llm_codesign.explore import enumerate_plans
    from llm_codesign.serving import evaluate

    m, hw, p = load_model("qwen3-30b-a3b"), load_hardware("h200-sxm"), parse_precision("fp8")
    vllm, trt = load_engine("vllm"), load_engine("trtllm")
    assert not vllm.moe_partial_ep and trt.moe_partial_ep
    ep = np.array([1, 2, 4, 8])
    r = evaluate(m, hw, p, vllm, tp=8, ep=ep, isl=1024, osl=1024, concurrency=8)
    assert r.reason.tolist() == ["", "engine_moe_ep_all_or_none", "engine_moe_ep_all_or_none", ""]
    assert bool(
        np.all(evaluate(m, hw, p, trt, tp=8, ep=ep, isl=1024, osl=1024, concurrency=8).feasible)
    )
    for eng, allowed in ((vllm, False), (trt, True)):
        t = enumerate_plans(m, hw, 8, partial_ep=eng.moe_partial_ep)
        partial = (t.ep > 1) & (t.ep < t.tp)
        assert bool(np.any(partial & t.valid)) is allowed


def test_clients_beyond_a_decode_pools_capacity_queue():
    """A disaggregated deployment offered more clients than its decode workers hold runs each
    worker at its capacity (serving.memory.concurrency_cap) and the others wait for a slot: it
    stays feasible, at least as fast as at the capacity and, its cycle saturated, at the slower
    pool's rate; the wait lands in TTFT (it used to be declared out of memory)."""
    from llm_codesign.serving import evaluate_disaggregated
    from llm_codesign.serving.disaggregated import decode_workers

    m, h, p, eng = (
        load_model("llama-3.1-70b"),
        load_hardware("h100-sxm"),
        parse_precision("fp8"),
        load_engine(),
    )
    plan = {"tp": 2, "pp": 1, "ep": 1, "cp": 1, "attention_dp": False}
    dw = decode_workers(m, h, p, eng, **plan, concurrency=1e6, isl=4096, osl=1024)
    cap = float(dw.running)
    assert cap < 1e6 and cap <= float(dw.max_concurrency)

    def run(clients):
        return evaluate_disaggregated(
            m, h, p, eng, prefill_plan=plan, decode_plan=plan, prefill_count=2, decode_count=1,
            prefill_batch=1, concurrency=clients, isl=4096, osl=1024,
        )  # fmt: skip

    at, beyond = run(cap), run(2 * cap)
    assert bool(beyond.feasible) and str(beyond.reason) == ""
    assert float(beyond.output_tok_s_per_gpu) >= float(at.output_tok_s_per_gpu)
    assert float(beyond.tpot_s) == pytest.approx(float(at.tpot_s), rel=1e-12)
    assert float(beyond.ttft_s) > float(at.ttft_s)
    assert float(beyond.running_concurrency) == cap
    # an estimate of that deployment says the clients queue and explains the step it runs
    from llm_codesign import DisaggregatedPlan

    dplan = DisaggregatedPlan(ParallelPlan(tp=2), ParallelPlan(tp=2), 2, 1, 1)
    e = estimate("llama-3.1-70b", "h100-sxm", "fp8", dplan, Workload(4096, 1024, int(2 * cap)))
    assert e.running_concurrency == cap and any("queue" in n for n in e.notes)
    from llm_codesign.serving.disaggregated import prefill_workers

    pw = prefill_workers(m, h, p, eng, **plan, batch=1, isl=4096)
    slower = min(2 * float(pw.rate_req_s), float(dw.rate_req_s))
    assert float(beyond.requests_per_s) == pytest.approx(slower, rel=1e-9)
