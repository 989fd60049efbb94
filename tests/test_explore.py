"""Deployment search and Pareto frontier (llm_codesign.explore): exact unit tests, hand-worked
plan counts and balance arithmetic, property tests of Pareto extraction, and frontier
monotonicity on small real searches."""

from __future__ import annotations

import dataclasses
import itertools
import math
import os

import numpy as np
import pytest
from contract import POINT_KEYS
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import explore
from llm_codesign.errors import SpecError, UnsupportedError
from llm_codesign.explore import (
    axis_values,
    concurrency_grid,
    enumerate_plans,
    frontier,
    frontier_area,
    memory_limit,
    pareto_mask,
    staircase,
)
from llm_codesign.report import frontier_json, launch_settings
from llm_codesign.serving import REGIONS, balance_pools, evaluate
from llm_codesign.serving.memory import kv_context
from llm_codesign.specs import load_hardware, load_model, parse_precision
from llm_codesign.specs.engine import load_engine

# ---------------------------------------------------------------------------------------------
# Pareto extraction
# ---------------------------------------------------------------------------------------------


def _dominated_brute(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    ge = (x[None, :] >= x[:, None]) & (y[None, :] >= y[:, None])
    gt = (x[None, :] > x[:, None]) | (y[None, :] > y[:, None])
    return np.any(ge & gt, axis=1)


coords = st.lists(
    st.tuples(st.integers(0, 30).map(float), st.integers(0, 30).map(float)),
    min_size=0,
    max_size=60,
)


@given(coords)
@settings(max_examples=300, deadline=None)
def test_pareto_mask_matches_definition(pts):
    x = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] for p in pts], dtype=float)
    mask = pareto_mask(x, y)
    dominated = _dominated_brute(x, y) if len(x) else np.zeros(0, dtype=bool)
    # no returned point is dominated, and every dominated point is excluded
    assert not np.any(mask & dominated)
    assert np.all(mask == ~dominated)


@given(st.lists(st.tuples(st.floats(0.1, 1e4), st.floats(0.1, 1e5)), min_size=1, max_size=80))
@settings(max_examples=200, deadline=None)
def test_pareto_front_is_monotone_and_staircase_covers_points(pts):
    x = np.array([p[0] for p in pts])
    y = np.array([p[1] for p in pts])
    m = pareto_mask(x, y)
    fx, fy = x[m], y[m]
    ux, uy = np.unique(np.stack([fx, fy], axis=1), axis=0).T  # exact duplicates are both kept
    # along the frontier, more interactivity means strictly less throughput
    assert np.all(np.diff(ux) > 0) and np.all(np.diff(uy) < 0)
    # F(x_i) >= y_i for every point: the staircase lies on or above every configuration
    assert np.all(staircase(fx, fy, x) >= y)


def test_pareto_mask_ignores_nonfinite():
    x = np.array([1.0, np.nan, 3.0, np.inf])
    y = np.array([5.0, 100.0, 1.0, 1.0])
    assert pareto_mask(x, y).tolist() == [True, False, True, False]


# ---------------------------------------------------------------------------------------------
# Frontier area and readings
# ---------------------------------------------------------------------------------------------


def test_frontier_area_closed_form():
    # F = 900 on [1, 10], 200 on (10, 50], 0 beyond; log-uniform mean over [1, 100]
    area = frontier_area(np.array([10.0, 50.0]), np.array([900.0, 200.0]), (1.0, 100.0))
    assert area == pytest.approx((900 * math.log(10) + 200 * math.log(5)) / math.log(100))
    assert frontier_area(np.array([]), np.array([]), (1.0, 10.0)) == 0.0
    # a frontier reaching beyond the range is capped at its ends
    assert frontier_area(np.array([1e6]), np.array([7.0]), (10.0, 1000.0)) == pytest.approx(7.0)
    with pytest.raises(SpecError, match=r"area range must satisfy 0 < lo < hi, got \(10.0, 5.0\)"):
        frontier_area(np.array([1.0]), np.array([1.0]), (10.0, 5.0))


def test_staircase_is_nonincreasing():
    fx, fy = np.array([5.0, 20.0, 80.0]), np.array([1000.0, 400.0, 50.0])
    xs = np.geomspace(1, 200, 50)
    v = staircase(fx, fy, xs)
    assert np.all(np.diff(v) <= 0)
    assert v[0] == 1000.0 and v[-1] == 0.0


# ---------------------------------------------------------------------------------------------
# Plan enumeration (counts worked by hand)
# ---------------------------------------------------------------------------------------------


def test_axis_values():
    assert axis_values(8) == [1, 2, 4, 8]
    assert axis_values(72) == [1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32, 36, 64, 72]
    with pytest.raises(SpecError, match="num_gpus must be >= 1, got 0"):
        axis_values(0)


def test_enumerate_dense_counts():
    m, hw = load_model("llama-3.1-8b"), load_hardware("h100-sxm")
    # (tp, pp) with tp x pp <= 4 from {1, 2, 4}: (1,1) (1,2) (1,4) (2,1) (2,2) (4,1)
    p4 = enumerate_plans(m, hw, 4)
    assert len(p4) == 6 and p4.valid.all()
    assert sorted(zip(p4.tp.tolist(), p4.pp.tolist())) == [
        (1, 1),
        (1, 2),
        (1, 4),
        (2, 1),
        (2, 2),
        (4, 1),
    ]
    assert p4.dp.tolist() == [4 // (t * q) for t, q in zip(p4.tp, p4.pp)]
    # 8 GPUs: tp=1 pp in {1,2,4,8}; tp=2 pp in {1,2,4}; tp=4 pp in {1,2}; tp=8 pp=1 -> 10
    # (tp=8 does not exceed 8 KV heads: no Helix; dense: no EP, no attention DP)
    p8 = enumerate_plans(m, hw, 8)
    assert len(p8) == 10 and (p8.ep == 1).all() and not p8.attention_dp.any() and (p8.cp == 1).all()


def test_enumerate_moe_counts():
    m, hw = (
        load_model("qwen3-30b-a3b"),
        load_hardware("h100-sxm"),
    )  # 32 heads, 4 KV heads, 128 experts
    p = enumerate_plans(m, hw, 4)
    # tp=1: pp 1,2,4 (3); tp=2: pp 1,2 x ep 1,2 x {TP, attention-DP} (8); tp=4: ep 1,2,4 x 2 (6)
    assert len(p) == 17 and p.valid.all()
    assert int(p.attention_dp.sum()) == 2 * 2 + 3


def test_enumerate_invalid_plans_carry_reasons():
    m, hw = load_model("deepseek-r1"), load_hardware("b200")
    p = enumerate_plans(m, hw, 3)
    # tp=1: pp 1,2,3 (3); tp=2: ep 1,2 x {TP, attention-DP, Helix cp=2} (6); tp=3 likewise (6)
    assert len(p) == 15
    bad = {
        (int(t), int(e), int(c), bool(a)): r
        for t, e, c, a, r in zip(p.tp, p.ep, p.cp, p.attention_dp, p.reason)
        if r
    }
    assert bad == {
        (3, 1, 1, False): "tp_not_dividing_heads",  # 128 heads % 3
        (3, 3, 1, False): "tp_not_dividing_heads",
        (
            3,
            1,
            3,
            False,
        ): "moe_tp_not_dividing_expert_width",  # Helix: attention tp 1, moe_tp 3 vs 2048
        (3, 1, 1, True): "moe_tp_not_dividing_expert_width",
    }
    # ep 3 does not divide the 256 experts: the group holds 258 slots, 2 of them redundant copies
    # (specs.plan.expert_slots), so those plans run
    ok = {
        (t, e, c, a) for t, e, c, a, r in zip(p.tp, p.ep, p.cp, p.attention_dp, p.reason) if not r
    }
    assert {(3, 3, 3, False), (3, 3, 1, True)} <= ok
    assert p.dp[(p.tp == 1) & (p.pp == 1)].tolist() == [3]


def test_enumerate_options_and_limits():
    m, hw = load_model("deepseek-r1"), load_hardware("gb200")
    full = enumerate_plans(m, hw, 16)
    assert (full.cp[full.cp > 1] <= full.tp[full.cp > 1]).all() and (
        full.pp[full.cp > 1] == 1
    ).all()
    assert not enumerate_plans(m, hw, 16, helix=False).cp.max() > 1
    assert not enumerate_plans(m, hw, 16, attention_dp=False).attention_dp.any()
    assert enumerate_plans(m, hw, 16, max_pp=2).pp.max() == 2
    # no scale-out network: otherwise valid plans whose tp spans domains carry a reason
    lone = dataclasses.replace(hw, scaleup_domain_size=4, scaleout_bytes_per_s=0.0)
    p = enumerate_plans(m, lone, 16)
    assert (p.reason[(p.tp > 4) & full.valid] == "no_scaleout_network").all()
    assert (p.reason[p.tp <= 4] == full.reason[full.tp <= 4]).all()


# ---------------------------------------------------------------------------------------------
# Memory limit and concurrency grid
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model,hw_id,prec,n",
    [("deepseek-r1", "b200", "fp8", 8), ("llama-3.1-70b", "h200-sxm", "bf16", 8)],
)
def test_memory_limit_matches_evaluate(model, hw_id, prec, n):
    m, hw, p, eng = load_model(model), load_hardware(hw_id), parse_precision(prec), load_engine()
    plans = enumerate_plans(m, hw, n)
    v = plans.take(np.flatnonzero(plans.valid))
    lim, _, _ = memory_limit(m, hw, p, eng, v, float(kv_context(eng, 1024, 1024)))
    r = evaluate(
        m,
        hw,
        p,
        eng,
        tp=v.tp,
        pp=v.pp,
        ep=v.ep,
        attention_dp=v.attention_dp,
        cp=v.cp,
        isl=1024,
        osl=1024,
        concurrency=1,
    )
    np.testing.assert_array_equal(lim, r.max_concurrency)


def test_concurrency_grid():
    # limit 1: [1]; limit 0: nothing; limit 10 at 2 per octave: round(2^(j/2)) = 1 1 2 3 4 6 8, + 10
    row, c = concurrency_grid(np.array([1, 0, 10]), 2)
    assert row.tolist() == [0] + [2] * 7
    assert c.tolist() == [1, 1, 2, 3, 4, 6, 8, 10]
    _, c2 = concurrency_grid(np.array([4096.0]), 4)
    assert c2[0] == 1 and c2[-1] == 4096 and np.all(np.diff(c2) > 0)
    assert np.all(c2[1:] / c2[:-1] <= 2.0)  # fine enough to trace the curve
    _, half = concurrency_grid(np.array([100.0]), 0.5)
    assert half.tolist() == [1, 4, 16, 64, 100]


# ---------------------------------------------------------------------------------------------
# Disaggregated balance arithmetic
# ---------------------------------------------------------------------------------------------


def test_balance_pools_hand_worked():
    # R_p = 10 req/s on 1 GPU, R_d = 5 req/s on 2 GPUs, 8 GPUs:
    # y=1: x=1 -> 5 req/s / 3 GPUs = 1.67; y=2: x=1 -> 10 / 5 = 2.0; y=3: x=2 -> 15 / 8 = 1.875
    x, y, rate, gpus = balance_pools(10.0, 5.0, 1, 2, 8)
    assert (float(x), float(y), float(rate), float(gpus)) == (1.0, 2.0, 10.0, 5.0)
    # R_p = 3, g_p = 2; R_d = 4, g_d = 1; 6 GPUs: balance x/y = 4/3
    # y=1: x in {1 (3 req/s, 3 GPUs: 1.0), 2 (4 req/s, 5 GPUs: 0.8)};
    # y=2: x=2 -> 6/6 = 1.0 (ties: first wins)
    x, y, rate, gpus = balance_pools(3.0, 4.0, 2, 1, 6)
    assert float(rate) / float(gpus) == pytest.approx(1.0)
    assert float(x) * 2 + float(y) <= 6


def test_balance_pools_vectorized_and_budget():
    x, y, rate, gpus = balance_pools(np.array([10.0, 10.0]), np.array([[5.0], [1.0]]), 1, 2, 8)
    assert x.shape == (2, 2)
    # budget too small for one worker of each: zeros
    x, y, rate, gpus = balance_pools(1.0, 1.0, 4, 8, 8)
    assert float(x) == float(y) == float(rate) == float(gpus) == 0.0


@given(
    st.floats(0.1, 100),
    st.floats(0.1, 100),
    st.integers(1, 8),
    st.integers(1, 8),
    st.integers(2, 40),
)
@settings(max_examples=150, deadline=None)
def test_balance_pools_is_optimal_over_brute_force(rp, rd, gp, gd, n):
    x, y, rate, gpus = (float(v) for v in balance_pools(rp, rd, gp, gd, n))
    best = 0.0
    for yy in range(1, n + 1):
        for xx in range(1, n + 1):
            if xx * gp + yy * gd <= n:
                best = max(best, min(xx * rp, yy * rd) / (xx * gp + yy * gd))
    if best == 0.0:
        assert gpus == 0.0
    else:
        assert rate / gpus == pytest.approx(best, rel=1e-9)
        assert rate == pytest.approx(min(x * rp, y * rd)) and x * gp + y * gd <= n


# ---------------------------------------------------------------------------------------------
# Frontier searches
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ds_fp8():
    return frontier("deepseek-r1", "b200", 8, 1024, 1024, precision="fp8", workers=1)


def test_frontier_points_are_pareto_and_monotone(ds_fp8):
    p = ds_fp8.pareto_points()
    x, y = p["tok_s_per_user"], p["output_tok_s_per_gpu"]
    assert len(x) > 10
    assert np.all(np.diff(x) > 0) and np.all(np.diff(y) < 0)
    assert p["feasible"].all()
    # no evaluated feasible point lies above the frontier
    allp = ds_fp8.points
    f = allp["feasible"]
    assert np.all(
        staircase(x, y, allp["tok_s_per_user"][f]) >= allp["output_tok_s_per_gpu"][f] * (1 - 1e-12)
    )
    # wide EP with attention DP wins throughput; readings fall with interactivity
    best = ds_fp8.point_dict(int(ds_fp8.pareto[0]))
    assert best["plan"]["attention_dp"]
    r = [v["output_tok_s_per_gpu"] or 0.0 for v in ds_fp8.readings([10, 30, 60, 120, 500])]
    assert all(a >= b for a, b in itertools.pairwise(r)) and r[-1] == 0.0


def test_frontier_keeps_every_point_with_reasons(ds_fp8):
    pts = ds_fp8.points
    reasons = set(pts["reason"][~pts["feasible"]])
    assert "weights_exceed_memory" in reasons  # TP1 cannot hold 671B FP8 weights
    assert len(pts) == ds_fp8.evaluated
    assert ds_fp8.feasible_count == int(pts["feasible"].sum())


def test_frontier_json_contract(ds_fp8):
    d = frontier_json(ds_fp8)
    pts = d["points"]
    assert POINT_KEYS <= set(pts[0])
    assert set(pts[0]["breakdown"]) == {"prefill", "decode", "mixed_step"}
    bd = pts[0]["breakdown"]["decode"]
    assert bd["total"] == pytest.approx(sum(v for k, v in bd.items() if k != "total"))
    assert [p["tok_s_per_user"] for p in pts] == sorted(p["tok_s_per_user"] for p in pts)
    x = np.array([p["tok_s_per_user"] for p in pts])
    y = np.array([p["output_tok_s_per_gpu"] for p in pts])
    assert pareto_mask(x, y).all()
    assert d["area"] == pytest.approx(frontier_area(x, y, ds_fp8.area_range), rel=1e-12)
    assert "max_batch_size" in d["best"]["launch"]["trtllm"]["config_yaml"]
    assert {r["region"] for r in pts} <= set(REGIONS)


def test_more_gpus_never_shrink_the_frontier():
    small = frontier("llama-3.1-8b", "h100-sxm", 1, 1024, 256, precision="fp8", workers=1)
    big = frontier("llama-3.1-8b", "h100-sxm", 2, 1024, 256, precision="fp8", workers=1)
    assert big.area >= small.area * (1 - 1e-12)
    xs = np.geomspace(5, 500, 60)
    ps, pb = small.pareto_points(), big.pareto_points()
    fs = staircase(ps["tok_s_per_user"], ps["output_tok_s_per_gpu"], xs)
    fb = staircase(pb["tok_s_per_user"], pb["output_tok_s_per_gpu"], xs)
    assert np.all(fb >= fs * (1 - 1e-12))


def test_faster_memory_moves_the_frontier_out():
    hw = load_hardware("h100-sxm")
    base = frontier("llama-3.1-8b", hw, 1, 1024, 256, precision="fp8", workers=1)
    fast = frontier(
        "llama-3.1-8b",
        hw.with_overrides(hbm_bytes_per_s=hw.hbm_bytes_per_s * 2),
        1,
        1024,
        256,
        precision="fp8",
        workers=1,
    )
    assert fast.area > base.area


def test_adaptive_refinement_matches_exhaustive(monkeypatch):
    monkeypatch.setattr(explore.search, "REFINE_MIN_POINTS", 0)
    ref = frontier("deepseek-r1", "b200", 8, precision="fp8", workers=1)
    exh = frontier("deepseek-r1", "b200", 8, precision="fp8", workers=1, refine=False)
    assert ref.settings["refine"] and not exh.settings["refine"]
    assert ref.evaluated < exh.evaluated
    xs = np.geomspace(5, 300, 200)
    pr, pe = ref.pareto_points(), exh.pareto_points()
    fr = staircase(pr["tok_s_per_user"], pr["output_tok_s_per_gpu"], xs)
    fe = staircase(pe["tok_s_per_user"], pe["output_tok_s_per_gpu"], xs)
    assert np.all(fr >= fe * 0.99)


def test_pareto_only_mode_and_parallel_workers_agree(ds_fp8):
    lean = frontier("deepseek-r1", "b200", 8, precision="fp8", keep_points="pareto", workers=2)
    assert not lean.all_points_kept and len(lean.points) < len(ds_fp8.points)
    a = lean.pareto_points()
    b = ds_fp8.pareto_points()
    np.testing.assert_allclose(a["tok_s_per_user"], b["tok_s_per_user"])
    np.testing.assert_allclose(a["output_tok_s_per_gpu"], b["output_tok_s_per_gpu"])
    assert lean.evaluated == ds_fp8.evaluated


def test_targets_pick_the_best_configuration(ds_fp8):
    f = frontier("deepseek-r1", "b200", 8, precision="fp8", ttft_ms=500, tpot_ms=20, workers=1)
    assert f.best is not None
    pts = f.points
    ok = pts["feasible"] & (pts["ttft_s"] <= 0.5) & (pts["tpot_s"] <= 0.02)
    assert pts["output_tok_s_per_gpu"][f.best] == pytest.approx(
        pts["output_tok_s_per_gpu"][ok].max()
    )
    best = frontier_json(f)["best"]
    assert best["tpot_ms"] <= 20 and best["ttft_ms"] <= 500
    launch = best["launch"]
    assert (
        f"tensor_parallel_size: {best['plan']['tp'] // best['plan']['cp']}"
        in launch["trtllm"]["config_yaml"]
    )
    assert (
        "vllm serve deepseek-ai/DeepSeek-R1" in launch["vllm"]
        and "--max-num-seqs" in launch["vllm"]
    )
    assert (
        "sglang.launch_server" in launch["sglang"]
        and "--chunked-prefill-size 8192" in launch["sglang"]
    )
    # an impossible target is a result, not a crash
    none = frontier("deepseek-r1", "b200", 8, precision="fp8", min_tok_s_per_user=1e6, workers=1)
    assert none.best is None and none.to_dict()["best"] is None
    # targets pick a point; they do not move the frontier (same search as ds_fp8, no targets)
    for key in ("tok_s_per_user", "output_tok_s_per_gpu"):
        np.testing.assert_array_equal(
            none.points[key][none.pareto], ds_fp8.points[key][ds_fp8.pareto]
        )


def test_launch_settings_vocabulary():
    f = frontier("deepseek-r1", "b200", 8, precision="nvfp4", workers=1)
    adp = next(int(i) for i in f.pareto if f.points["attention_dp"][i])
    s = launch_settings(f, adp)
    tp = int(f.points["tp"][adp])
    assert "enable_attention_dp: true" in s["trtllm"]["config_yaml"]
    assert f"--data-parallel-size {tp}" in s["vllm"]
    # the NVFP4 checkpoint states its quantization: vLLM reads it, no --quantization needed
    assert "nvidia/DeepSeek-R1-FP4" in s["vllm"] and "--quantization" not in s["vllm"]
    assert f"--dp {tp} --enable-dp-attention" in s["sglang"]
    # the engine's limit is the batch the point runs (here the KV cap), not the clients
    conc, running = int(f.points["concurrency"][adp]), f.points["running_concurrency"][adp]
    assert running <= conc
    assert s["max_batch_per_rank"] == math.ceil(min(conc, math.ceil(running)) / tp)


def test_helix_points_are_searched_for_long_context():
    f = frontier("llama-3.1-70b", "gb200", 16, 131072, 1024, precision="nvfp4", workers=1)
    helix = f.points["cp"] > 1
    assert helix.any() and f.points["feasible"][helix].any()


def test_disaggregated_points_balance_their_pools():
    f = frontier("llama-3.1-8b", "h100-sxm", 4, 4096, 256, precision="fp8", disagg=True, workers=1)
    p = f.points
    d = np.flatnonzero((p["mode"] == explore.MODE_DISAGGREGATED) & p["feasible"])
    assert d.size > 0
    g_p = p["p_tp"][d] * p["p_pp"][d]
    g_d = p["tp"][d] * p["pp"][d]
    x, y = p["prefill_workers"][d], p["decode_workers"][d]
    assert np.all(x >= 1) and np.all(y >= 1)
    np.testing.assert_allclose(p["num_gpus"][d], x * g_p + y * g_d)
    assert np.all(p["num_gpus"][d] <= 4)
    # requests/s = min(prefill, decode capacity): never above the decode pool's capacity
    req = p["output_tok_s_per_gpu"][d] * p["num_gpus"][d] / 256
    decode_cap = y * p["concurrency"][d] / (255 * p["tpot_s"][d])
    assert np.all(req <= decode_cap * (1 + 1e-9))
    # TTFT includes the KV transfer; breakdown phases are present
    assert np.all(p["kv_transfer_s"][d] > 0) and np.all(p["ttft_s"][d] > p["kv_transfer_s"][d])
    doc = f.point_dict(int(d[0]))
    assert doc["mode"] == "disaggregated" and doc["disaggregated"]["prefill_workers"] >= 1
    with pytest.raises(SpecError, match="osl >= 2"):
        frontier("llama-3.1-8b", "h100-sxm", 4, 4096, 1, precision="fp8", disagg=True, workers=1)


def test_compare_and_json_of_several_designs():
    fs = explore.compare(
        [{"precision": "fp8"}, {"precision": "bf16"}],
        model="llama-3.1-8b",
        hardware="h100-sxm",
        num_gpus=1,
        isl=512,
        osl=128,
        workers=1,
    )
    assert [f.label for f in fs] == ["fp8", "bf16"] and fs[0].area > fs[1].area
    doc = frontier_json(fs)
    assert {p["design"] for p in doc["points"]} == {"fp8", "bf16"}
    assert doc["comparison"][1]["area_vs_first"] < 1
    assert explore.parse_compare("model=a,b") == ("model", ["a", "b"])
    for bad in ("speed=a", "hardware=", "hardware", "hardware=a,,b"):
        with pytest.raises(SpecError, match=f"--compare '{bad}': expected AXIS=ID"):
            explore.parse_compare(bad)


def test_precision_resolution():
    f = frontier("llama-3.1-8b", "h100-sxm", 1, 256, 64, workers=1)
    assert [p.id for p in f.precisions] == ["bf16", "fp8"]  # Hopper: no native FP4
    with pytest.raises(UnsupportedError, match="h100-sxm has no native nvfp4"):
        frontier("llama-3.1-8b", "h100-sxm", 1, 256, 64, precision="fp8,nvfp4", workers=1)
    with pytest.raises(SpecError, match="precision list has an empty entry"):
        frontier("llama-3.1-8b", "h100-sxm", 1, 256, 64, precision="fp8,,bf16", workers=1)
    for kw in ({"num_gpus": 0}, {"isl": 0}, {"points_per_octave": 0}, {"keep_points": "some"}):
        with pytest.raises(SpecError, match=f"^{next(iter(kw))} must be"):
            frontier("llama-3.1-8b", "h100-sxm", **{"num_gpus": 1, **kw})


def test_empty_frontier_is_a_result():
    f = frontier("llama-3.1-405b", "l40s", 1, 1024, 1024, precision="fp8", workers=1)
    assert len(f.pareto) == 0 and f.area == 0.0 and f.best is None
    assert set(f.points["reason"]) == {"weights_exceed_memory"}
    assert f.to_dict()["points"] == []


# ---------------------------------------------------------------------------------------------
# CSV: atomic and streamed
# ---------------------------------------------------------------------------------------------


def test_csv_written_atomically(tmp_path, ds_fp8, monkeypatch):
    out = tmp_path / "pts.csv"
    explore.write_csv(ds_fp8, out)
    lines = out.read_text().splitlines()
    assert lines[0].split(",")[:3] == ["precision", "mode", "tp"]
    assert len(lines) == len(ds_fp8.points) + 1
    assert sum(
        line.split(",")[explore.CSV_FIELDS.index("pareto")] == "1" for line in lines[1:]
    ) == len(ds_fp8.pareto)

    def boom(*a, **k):
        yield ["x"]
        raise KeyboardInterrupt

    monkeypatch.setattr(explore.export, "csv_rows", boom)
    with pytest.raises(KeyboardInterrupt):
        explore.write_csv(ds_fp8, tmp_path / "never.csv")
    assert sorted(os.listdir(tmp_path)) == ["pts.csv"]


def test_interrupted_streaming_sweep_leaves_no_file(tmp_path):
    calls = []

    def interrupt(points, precs):
        calls.append(len(points))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        frontier(
            "llama-3.1-8b",
            "h100-sxm",
            2,
            precision="fp8",
            keep_points="pareto",
            workers=1,
            csv_path=tmp_path / "sweep.csv",
            on_chunk=interrupt,
        )
    assert calls and os.listdir(tmp_path) == []
    f = frontier(
        "llama-3.1-8b",
        "h100-sxm",
        2,
        precision="fp8",
        keep_points="pareto",
        workers=1,
        csv_path=tmp_path / "sweep.csv",
    )
    rows = (tmp_path / "sweep.csv").read_text().splitlines()
    assert len(rows) - 1 == f.evaluated and os.listdir(tmp_path) == ["sweep.csv"]
