"""Serving model: invariants (hypothesis), memory fit, breakdown sums, vectorized == scalar."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import (
    ParallelPlan,
    Workload,
    estimate,
    load_hardware,
    load_model,
    parse_precision,
)
from llm_codesign.errors import SpecError
from llm_codesign.serving import aggregated, evaluate
from llm_codesign.specs.engine import load_engine

ENG = load_engine("base")
CASES = [
    ("llama-3.1-8b", "h200-sxm", "bf16", 1),
    ("llama-3.1-70b", "h100-sxm", "fp8", 4),
    ("mixtral-8x7b", "h200-sxm", "fp8", 2),
    ("qwen3-30b-a3b", "b200", "nvfp4", 1),
    ("deepseek-r1", "b200", "fp8", 8),
    ("gpt-oss-120b", "gb200", "mxfp4", 2),
]


@settings(max_examples=40, deadline=None)
@given(
    case=st.sampled_from(CASES),
    conc=st.integers(1, 256),
    isl=st.integers(16, 8192),
    osl=st.integers(2, 4096),
    factor=st.floats(1.1, 4.0),
)
def test_more_bandwidth_never_lowers_throughput(case, conc, isl, osl, factor):
    mid, hid, pid, tp = case
    m, hw, p = load_model(mid), load_hardware(hid), parse_precision(pid)
    kw = dict(tp=tp, ep=tp if m.moe else 1, isl=isl, osl=osl, concurrency=conc)
    a = evaluate(m, hw, p, ENG, **kw)
    b = evaluate(m, hw.with_overrides(hbm_bytes_per_s=hw.hbm_bytes_per_s * factor), p, ENG, **kw)
    # the engine's own steps never slow down: a lone prompt's prefill, and the decode step with
    # no prompt where both run the same batch (a tuned engine may keep another batch limit
    # on faster memory, serving.admission)
    phases = ["prefill_breakdown"]
    if float(a.running_concurrency) == float(b.running_concurrency):
        phases.append("decode_breakdown")
    for phase in phases:
        slow, fast = getattr(a, phase), getattr(b, phase)
        assert float(sum(fast.values())) <= float(sum(slow.values())) * (1 + 1e-9)
    # throughput never falls; TPOT and TTFT are not asserted: in a closed loop a faster engine
    # turns requests over faster and so carries more prompt tokens in each decode step
    # (two solves agree to the solver's tolerance, not to the last digit)
    slack = 10 * aggregated.FIXED_POINT_TOLERANCE
    assert float(b.output_tok_s_per_gpu) >= float(a.output_tok_s_per_gpu) * (1 - slack)


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(CASES), conc=st.integers(1, 32), osl=st.integers(256, 4096))
def test_more_concurrency_never_fewer_tokens_while_memory_bound(case, conc, osl):
    mid, hid, pid, tp = case
    m, hw, p = load_model(mid), load_hardware(hid), parse_precision(pid)
    # short prompts, long outputs, small batches: the decode step is bound by the weight read
    r = evaluate(
        m,
        hw,
        p,
        ENG,
        tp=tp,
        ep=tp if m.moe else 1,
        isl=64,
        osl=osl,
        concurrency=np.array([conc, 2 * conc]),
    )
    slack = 10 * aggregated.FIXED_POINT_TOLERANCE
    assert r.output_tok_s_per_gpu[1] >= r.output_tok_s_per_gpu[0] * (1 - slack)


@pytest.mark.parametrize("case", CASES)
def test_breakdown_terms_sum_to_step_times(case):
    mid, hid, pid, tp = case
    e = estimate(
        mid,
        hid,
        pid,
        ParallelPlan(tp=tp, ep=tp if load_model(mid).moe else 1),
        Workload(2048, 512, 32),
    )
    for phase in e.breakdown.values():
        parts = sum(v for k, v in phase.items() if k != "total")
        assert parts == pytest.approx(phase["total"], rel=1e-9)
    assert e.breakdown["mixed_step"]["total"] * 1e3 == pytest.approx(e.tpot_ms, rel=1e-9)
    assert e.tok_s_per_user == pytest.approx(1e3 / e.tpot_ms, rel=1e-9)


def test_pipeline_breakdown_includes_stage_transfers():
    e = estimate(
        "llama-3.1-70b", "h100-sxm", "fp8", ParallelPlan(tp=2, pp=2), Workload(1024, 256, 16)
    )
    assert e.breakdown["mixed_step"]["total"] * 1e3 == pytest.approx(e.tpot_ms, rel=1e-9)


def test_vectorized_equals_scalar():
    m, hw, p = load_model("llama-3.1-70b"), load_hardware("h200-sxm"), parse_precision("fp8")
    conc = np.array([1, 8, 64, 256])
    tp = np.array([2, 4, 8, 8])
    grid = evaluate(m, hw, p, ENG, tp=tp, isl=1024, osl=1024, concurrency=conc)
    for i in range(4):
        one = evaluate(m, hw, p, ENG, tp=int(tp[i]), isl=1024, osl=1024, concurrency=int(conc[i]))
        assert float(one.tpot_s) == pytest.approx(float(grid.tpot_s[i]), rel=1e-12)
        assert float(one.ttft_s) == pytest.approx(float(grid.ttft_s[i]), rel=1e-12)


def test_memory_fit_and_max_concurrency():
    m, hw, p = load_model("llama-3.1-70b"), load_hardware("h100-sxm"), parse_precision("bf16")
    one = evaluate(m, hw, p, ENG, tp=1, isl=1024, osl=1024, concurrency=1)
    assert (
        not bool(one.fits_in_memory) and one.reason[()] == "weights_exceed_memory"
    )  # 141 GB > 80 GB
    r = evaluate(m, hw, p, ENG, tp=8, isl=np.array([1024, 8192, 65536]), osl=1024, concurrency=1)
    assert np.all(np.diff(r.max_concurrency) < 0)  # longer contexts fit fewer sequences
    # weights per GPU x tp ~ total weight bytes (BF16) when sharded 8 ways (+ replicated norms)
    assert float(r.weight_bytes_per_gpu[0]) * 8 == pytest.approx(2 * m.total_params, rel=0.01)
    # KV bytes per token: 80 layers x 8 KV heads x 128 x 2 (K,V) x 2 bytes = 327,680 B
    # (sharded by 8), held for the mean live context of one sequence, ISL + OSL/2
    np.testing.assert_allclose(
        r.kv_bytes_per_gpu, 327_680 / 8 * (np.array([1024, 8192, 65536]) + 1024 / 2), rtol=1e-12
    )
    # clients beyond the KV capacity queue in the engine: same step, TTFT grows by the wait
    cap = int(evaluate(m, hw, p, ENG, tp=8, isl=1024, osl=1024, concurrency=1).max_concurrency)
    at, over = (
        evaluate(m, hw, p, ENG, tp=8, isl=1024, osl=1024, concurrency=c) for c in (cap, 2 * cap)
    )
    # (the engine runs at most `cap`, or a lower limit it keeps where that delivers more:
    # serving.admission)
    run = float(at.running_concurrency)
    assert not bool(over.fits_in_memory) and float(over.running_concurrency) == run <= cap
    assert float(over.tpot_s) == pytest.approx(float(at.tpot_s))
    assert float(over.output_tok_s_per_gpu) == pytest.approx(float(at.output_tok_s_per_gpu))
    # Little's law: `cap` more clients wait cap / rate longer (rate in requests/s per replica)
    rate = float(at.output_tok_s_per_gpu) * 8 / 1024
    assert float(over.ttft_s) - float(at.ttft_s) == pytest.approx(cap / rate, rel=1e-6)


def test_infeasible_plans_carry_reasons_not_nans():
    m, hw, p = load_model("llama-3.1-70b"), load_hardware("h200-sxm"), parse_precision("fp8")
    r = evaluate(
        m, hw, p, ENG, tp=np.array([3, 8]), ep=np.array([1, 2]), isl=128, osl=128, concurrency=4
    )
    assert list(r.reason) == ["tp_not_dividing_heads", "ep_on_dense_model"]
    assert np.all(np.isfinite(r.tpot_s))


def test_attention_dp_and_wide_ep_for_deepseek():
    plan, wl = ParallelPlan(tp=8, ep=8, attention_dp=True), Workload(1024, 1024, 512)
    e = estimate("deepseek-r1", "b200", "fp8", plan, wl)
    assert e.feasible and e.breakdown["decode"]["communication"] > 0
    # the MLA latent cache: (512 + 64) x 61 layers x 1 byte (FP8) per token, not split by
    # attention DP; attention DP spreads the 512 sequences over 8 ranks, each holding what the
    # default engine (TensorRT-LLM, GUARANTEED_NO_EVICT) reserves: ISL + OSL; an engine that
    # allocates blocks as tokens arrive (vLLM) holds the mean live context ISL + OSL/2
    for engine, context in ((None, 1024 + 1024), ("vllm", 1024 + 1024 / 2)):
        e = estimate("deepseek-r1", "b200", "fp8", plan, wl, engine=engine)
        assert e.kv_cache_per_gpu_gb * 1e9 == pytest.approx(
            512 / 8 * context * (512 + 64) * 61, rel=1e-9
        )


def test_speculative_decoding_arithmetic():
    m, hw, p = load_model("deepseek-r1"), load_hardware("b200"), parse_precision("fp8")
    # tiny prompts, long outputs: the step is decode only, so the token yield shows directly
    kw = dict(tp=8, ep=8, attention_dp=True, isl=16, osl=8192, concurrency=8)
    base = evaluate(m, hw, p, ENG, **kw)
    # acceptance 0: every step still yields exactly one token but pays the verify + draft work
    zero = evaluate(m, hw, p, ENG, spec_tokens=1, spec_acceptance=0.0, **kw)
    assert float(zero.tpot_s) > float(base.tpot_s)
    # MTP-1 at 85% acceptance: 1.85 tokens per step (DeepSeek-V3 report: ~1.8x at 80-90%)
    mtp = evaluate(m, hw, p, ENG, spec_tokens=1, spec_acceptance=0.85, **kw)
    assert float(zero.tpot_s) / float(mtp.tpot_s) == pytest.approx(1.85, rel=0.05)
    assert 1.3 < float(base.tpot_s) / float(mtp.tpot_s) < 1.85
    e = estimate(
        m,
        hw,
        p,
        ParallelPlan(tp=8, ep=8, attention_dp=True),
        Workload(1024, 1024, 8),
        spec_tokens=1,
        spec_acceptance=0.85,
    )
    assert e.breakdown["mixed_step"]["total"] * 1e3 == pytest.approx(e.tpot_ms, rel=1e-9)
    from llm_codesign import SpecError

    with pytest.raises(SpecError, match=r"spec_acceptance must lie in \[0, 1\], got 1.5"):
        evaluate(m, hw, p, ENG, spec_tokens=1, spec_acceptance=1.5, **kw)


def test_pipeline_stages_never_speed_up_a_lone_request():
    """At concurrency 1 a request crosses every stage in turn: TPOT never falls as pp grows at
    fixed tp (a micro-batch holds whole sequences; MoE experts are touched by whole tokens)."""
    from llm_codesign import bundled_models, evaluate, load_engine, load_hardware, parse_precision
    from llm_codesign.specs.plan import plan_feasibility

    hw, prec, eng = load_hardware("b200"), parse_precision("fp8"), load_engine()
    for m in bundled_models().values():
        for tp in (1, 8):
            pps = np.array([p for p in (1, 2, 4, 8) if p <= m.num_layers])
            ok = plan_feasibility(m, tp, pps, 1, False, 1) == ""
            if ok.sum() < 2:
                continue
            r = evaluate(m, hw, prec, eng, tp=tp, pp=pps[ok], isl=1024, osl=256, concurrency=1)
            assert np.all(np.diff(r.tpot_s) >= 0), (m.id, tp, pps[ok], r.tpot_s)


def test_lone_long_prompt_under_pipeline_parallelism_follows_the_engine():
    """A 32k prompt in 8k chunks (4 chunks) at concurrency 1: an engine that runs one prompt's
    chunks one after the other (TensorRT-LLM, vLLM) gains nothing from pp (4 x pp half-size
    stage passes = 4 full passes), one that overlaps them (SGLang's chunked PP) takes
    4 + pp - 1 stage passes; the request simulator (which serializes) agrees with the first."""
    from llm_codesign import (
        Traffic,
        evaluate,
        load_engine,
        load_hardware,
        load_model,
        parse_precision,
        simulate,
    )
    from llm_codesign.specs.traffic import fixed

    m, hw, p = load_model("llama-3.1-70b"), load_hardware("h200-sxm"), parse_precision("fp8")
    kw = dict(tp=2, isl=32768, osl=64, concurrency=1)
    for name in ("trtllm", "vllm"):
        eng = load_engine(name)
        assert not eng.pp_prefill_overlap
        one, two = (float(evaluate(m, hw, p, eng, pp=pp, **kw).ttft_s) for pp in (1, 2))
        assert two == pytest.approx(one, rel=0.02)
        traffic = Traffic(clients=1, num_requests=4, isl=fixed(32768), osl=fixed(64), warmup=0)
        sim = simulate(m, hw, p, eng, traffic, tp=2, pp=2)
        assert float(np.mean(sim.ttft_s)) == pytest.approx(two, rel=0.02)
    sg = load_engine("sglang")
    assert sg.pp_prefill_overlap
    one, two, four = (float(evaluate(m, hw, p, sg, pp=pp, **kw).ttft_s) for pp in (1, 2, 4))
    over = sg.request_overhead_s
    # stage passes: pp 1: 4 full passes; pp 2: 5 half passes; pp 4: 7 quarter passes
    assert (two - over) / (one - over) == pytest.approx(5 / 8, rel=0.03)
    assert (four - over) / (one - over) == pytest.approx(7 / 16, rel=0.05)


def test_static_batch_smaller_than_pp_crosses_every_stage():
    """A static batch of one prompt on pp=4 takes the whole model's prefill (no 4-way split)."""
    from llm_codesign import load_engine, load_hardware, load_model, parse_precision
    from llm_codesign.serving import evaluate_static

    args = (load_model("llama-3.1-8b"), load_hardware("h100-sxm"), parse_precision("fp8"))
    eng = load_engine()
    one = evaluate_static(*args, eng, pp=1, isl=2048, osl=2, batch=1)
    four = evaluate_static(*args, eng, pp=4, isl=2048, osl=2, batch=1)
    assert float(four["ttft_s"]) >= float(one["ttft_s"])


def test_disaggregated_closed_loop_queueing():
    """Closed loop of a disaggregated deployment (serving.disaggregated.closed_loop_ttft):
    1 s prefill alone, 10 req/s in both pools, 0.1 s per prefill batch, a 1 s decode phase."""
    from llm_codesign.serving.disaggregated import closed_loop_ttft

    def run(clients):
        ttft, rate = closed_loop_ttft(
            np.array(1.0),
            np.array(0.01),
            clients=np.array(clients),
            prefill_capacity=np.array(10.0),
            decode_capacity=np.array(10.0),
            batch_service_s=np.array(0.1),
            osl=101,
        )
        return float(ttft), float(rate)

    # saturated: 100 clients: cycle = 100 / 10 = 10 s, of which 9 s wait for the first token
    ttft, rate = run(100.0)
    assert ttft == pytest.approx(9.0, rel=1e-6) and rate == pytest.approx(10.0)
    # light load: the M/D/1 wait rho / (2 (1 - rho)) x service on top of the prefill alone
    ttft, rate = run(2.0)
    rho = rate / 10.0
    assert ttft == pytest.approx(1.0 + rho / (2 * (1 - rho)) * 0.1, rel=1e-6)
    assert rate == pytest.approx(2.0 / (ttft + 1.0), rel=1e-6)


def test_a_prefill_worker_under_attention_dp_keeps_each_prompt_on_one_rank():
    """Attention-DP prefill workers: a prompt lives on one rank with its own max_num_tokens
    budget. One 8k prompt runs on one rank (slower than tensor-parallel attention over eight);
    eight prompts run one per rank in parallel (several times the requests/s of one); without
    attention-DP, eight prompts share one budget and queue behind each other."""
    from llm_codesign.serving import prefill_workers

    m, hw, p = load_model("deepseek-r1"), load_hardware("b200"), parse_precision("nvfp4")

    def worker(adp, b):
        one = np.array(1)
        return prefill_workers(
            m, hw, p, ENG, tp=np.array(8), pp=one, ep=np.array(8), cp=one,
            attention_dp=np.array(adp), batch=b, isl=8192,
        )  # fmt: skip

    adp1, adp8, tp1, tp8 = worker(True, 1), worker(True, 8), worker(False, 1), worker(False, 8)
    assert float(adp1.latency_s) > float(tp1.latency_s)  # attention on one GPU, not eight
    # eight ranks in parallel: several times the requests/s (below 8x: each rank's MoE runs on
    # the experts' share of all eight prompts' tokens, 8x one prompt's, and the NCCL all-gather
    # and reduce-scatter move all eight prompts' tokens at NCCL's measured share of the link;
    # Blackwell's grouped FP4 GEMMs at 0.42 of the dense ceiling make that share larger)
    assert float(adp8.rate_req_s) > 2.5 * float(adp1.rate_req_s)
    assert float(adp8.latency_s) < float(tp8.latency_s)  # no queue behind one budget
    # without attention-DP the budget (8,192 tokens) takes one prompt per step either way
    assert float(tp8.rate_req_s) == pytest.approx(float(tp1.rate_req_s), rel=1e-9)


def test_kv_budget_follows_each_engines_memory_fraction_convention():
    """What the memory fraction is a fraction of, by hand (u = 0.9, HBM = 100 GB, weights
    60 GB, activations and runtime 5 GB of which 2 GB the runtime reserve):
    TensorRT-LLM (free): 0.9 x (100 - 60 - 5) = 31.5 GB; vLLM (total): 0.9 x 100 - 60 - 5 =
    25 GB; SGLang (static): 0.9 x 100 - 60 - 2 = 28 GB."""
    from llm_codesign.serving.memory import RUNTIME_RESERVED_BYTES, kv_budget_bytes

    hw = load_hardware("h100-sxm").with_overrides(hbm_bytes=100e9, device_memory_bytes=None)
    assert RUNTIME_RESERVED_BYTES == 2e9
    got = {
        budget: float(kv_budget_bytes(hw, ENG.with_overrides(memory_budget=budget), 60e9, 5e9))
        for budget in ("free", "total", "static")
    }
    assert got == pytest.approx({"free": 31.5e9, "total": 25e9, "static": 28e9}, rel=1e-12)
    with pytest.raises(Exception, match="memory_budget='half'.*allowed: free, total, static"):
        ENG.with_overrides(memory_budget="half")


def test_kv_budget_is_a_share_of_the_memory_the_driver_exposes():
    """The engines budget the total that cudaMemGetInfo / NVML report, which nvidia-smi shows:
    143,771 MiB on an H200 against its 141 GiB (144,384 MiB) of DRAM. Every engine's KV cache
    is therefore smaller by the 613 MiB the driver keeps: 0.9 x 613 MiB under TensorRT-LLM's
    share of the free memory and vLLM's and SGLang's share of the total alike."""
    from llm_codesign.serving.memory import kv_budget_bytes

    hw = load_hardware("h200-sxm")
    assert hw.device_memory == 143771 * 2**20 and hw.hbm_bytes == 141 * 2**30
    assert hw.summary()["device_memory_gib"] == pytest.approx(143771 / 1024)
    raw = hw.with_overrides(device_memory_bytes=None)
    assert raw.device_memory == raw.hbm_bytes
    # a what-if capacity keeps the driver's share: twice the DRAM exposes twice the memory
    assert hw.with_overrides(hbm_bytes=2 * hw.hbm_bytes).device_memory == 2 * hw.device_memory
    for budget in ("free", "total", "static"):
        eng = ENG.with_overrides(memory_budget=budget)
        lost = float(kv_budget_bytes(raw, eng, 100e9, 4e9) - kv_budget_bytes(hw, eng, 100e9, 4e9))
        assert lost == pytest.approx(0.9 * 613 * 2**20, rel=1e-9)


def test_a_hardware_file_cannot_expose_more_memory_than_it_has(tmp_path):
    from llm_codesign.specs.hardware import load_hardware as load_spec

    text = (Path(__file__).parents[1] / "src/llm_codesign/data/hardware/h200-sxm.yaml").read_text()
    bad = tmp_path / "gpu.yaml"
    bad.write_text(text.replace("device_memory_bytes: 150754820096", "device_memory_bytes: 2e11"))
    with pytest.raises(
        SpecError, match="'device_memory_bytes' = 2e\\+11 is out of range \\(0 to 1.51"
    ):
        load_spec(str(bad))


def test_vllm_gives_its_kv_cache_less_than_a_free_memory_fraction():
    """vLLM's gpu_memory_utilization is a share of the whole GPU: Qwen3-235B-A22B-FP8 on 4 x
    H100 TP4 logged 8.11 GiB of KV cache (vllm-project/vllm issue #21348, 2025-07, default
    0.9), where 0.9 of the memory free after weights would leave over twice that; the model's
    vLLM budget sits between, and below TensorRT-LLM's for the same engine and plan."""
    from llm_codesign.serving.memory import memory_fit

    m, hw = load_model("qwen3-235b-a22b"), load_hardware("h100-sxm")
    p = parse_precision("fp8+fp8_block-w")
    vllm = load_engine("vllm")
    args = (np.asarray(4), np.asarray(1), np.asarray(1), np.asarray(False), np.asarray(1))
    usable = {
        b: float(memory_fit(m, hw, p, vllm.with_overrides(memory_budget=b), *args, 2048.0)[3])
        for b in ("free", "total")
    }
    gib = 2.0**30
    assert 8.11 * gib < usable["total"] < usable["free"]
    assert usable["free"] > 2 * 8.11 * gib
    assert usable["total"] < 16 * gib


@settings(max_examples=60, deadline=None)
@given(
    budget=st.sampled_from(["free", "total", "static"]),
    u=st.floats(0.5, 1.0),
    weights=st.floats(1e9, 70e9),
    other=st.floats(2e9, 10e9),
    more=st.floats(1.0, 2.0),
)
def test_kv_budget_grows_with_memory_and_shrinks_with_weights(budget, u, weights, other, more):
    """More HBM never gives the KV cache less; more weights never give it more."""
    from llm_codesign.serving.memory import kv_budget_bytes

    hw = load_hardware("h100-sxm")
    eng = ENG.with_overrides(memory_budget=budget, memory_utilization=u)
    base = float(kv_budget_bytes(hw, eng, weights, other))
    bigger = hw.with_overrides(hbm_bytes=hw.hbm_bytes * more)
    assert float(kv_budget_bytes(bigger, eng, weights, other)) >= base
    assert float(kv_budget_bytes(hw, eng, weights * more, other)) <= base


@pytest.mark.parametrize(
    ("model", "gpu", "prec", "plan"),
    [
        ("deepseek-r1", "h200-sxm", "fp8", (8, 1, 8, True, 1)),
        ("llama-3.1-70b", "h100-sxm", "fp8", (4, 1, 1, False, 1)),
        ("qwen3-235b-a22b", "h100-sxm", "fp8", (8, 1, 8, False, 1)),
    ],
)
def test_launch_memory_fractions_give_each_engine_the_predicted_kv(model, gpu, prec, plan):
    """A launch file for another engine states that engine's fraction: the one that gives its
    KV cache, under its own convention, what the prediction gave (at most 0.001 of the GPU
    less, never more)."""
    from llm_codesign.serving.memory import (
        kv_budget_bytes,
        memory_fraction_for,
        weights_and_workspace,
    )

    m, hw, p = load_model(model), load_hardware(gpu), parse_precision(prec)
    eng = load_engine("trtllm")
    tp, pp, ep, adp, cp = (np.asarray(v) for v in plan)
    w, other = weights_and_workspace(m, p, hw, eng, tp, pp, ep, adp, cp)
    want = float(kv_budget_bytes(hw, eng, w, other))
    assert memory_fraction_for(m, hw, p, eng, plan, "free") == eng.memory_utilization
    u = {}
    for budget in ("total", "static"):
        u[budget] = memory_fraction_for(m, hw, p, eng, plan, budget)
        other_engine = eng.with_overrides(memory_budget=budget, memory_utilization=u[budget])
        got = float(kv_budget_bytes(hw, other_engine, w, other))
        assert want - 0.001 * hw.hbm_bytes <= got <= want, (budget, u)
    # a share of the whole GPU holds the weights and activations too: 0.9 of the free memory is
    # more of the total (0.9 + 0.1 x (weights + activations) / total); SGLang's leaves the
    # activations outside, so less again (below 0.9 where an MoE runner's buffers are large)
    assert eng.memory_utilization < u["total"] < 1.0
    assert u["static"] <= u["total"]
