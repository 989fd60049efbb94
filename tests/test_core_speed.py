"""The faster core (issue 16) gives today's numbers: the per-shape efficiency tables of unrouted
GEMMs (``cost._unrouted_efficiency``) against pricing every tile shape directly
(``cost.gemm_shape_efficiency``), and ``serving.evaluate`` end to end with and without them,
to 1e-9 relative."""

from __future__ import annotations

import numpy as np
import pytest

from llm_codesign import cost, load_engine, load_hardware, load_model, parse_precision, routing
from llm_codesign.serving import evaluate


@pytest.mark.parametrize("gpu", ["h100-sxm", "b200", "gb200", "mi300x"])
def test_tables_equal_direct_pricing_near_every_tile_edge(gpu):
    hw = load_hardware(gpu)
    rng = np.random.default_rng(7)
    edges = np.arange(1, 260) * 8.0  # every multiple of 8 up to 2,080 rows
    offsets = np.array([-1e-6, -1e-9, 0.0, 1e-10, 1e-8, 1e-7, 2e-6, 0.5, 3.0])
    m = np.concatenate([(edges[:, None] + offsets).ravel(), rng.uniform(0, 9000, 4000), [0.0]])
    for n, k, groups in ((1280, 8192, 1), (28672, 8192, 1), (7168, 2048, 1), (4096, 7168, 4)):
        for speed, elem in ((1.0, 2.0), (2.0, 1.0)):
            direct = cost.gemm_shape_efficiency(hw, m, n, k, groups, speed, elem)
            tabled = cost._unrouted_efficiency(hw, m, n, k, groups, speed, elem)
            np.testing.assert_allclose(tabled, direct, rtol=1e-12, atol=0)
    # shapes that vary across the configurations (plans of a frontier chunk)
    n = rng.choice([1280.0, 2560.0, 5120.0, 10240.0], m.size)
    k = rng.choice([8192.0, 1024.0, 4096.0], m.size)
    direct = cost.gemm_shape_efficiency(hw, m, n, k, 1.0, 1.0, 2.0)
    tabled = cost._unrouted_efficiency(hw, m, n, k, 1.0, 1.0, 2.0)
    np.testing.assert_allclose(tabled, direct, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "model, gpu, prec, tp, ep, adp",
    [
        ("llama-3.1-70b", "h200-sxm", "fp8", np.array([1, 2, 4, 8])[:, None, None, None], 1, False),
        ("qwen3-30b-a3b", "h100-sxm", "bf16", 2, 2, False),
        ("deepseek-r1", "b200", "nvfp4", 8, 8, True),
    ],
)
def test_evaluate_is_unchanged_by_the_tables(monkeypatch, model, gpu, prec, tp, ep, adp):
    m, hw, p, eng = (
        load_model(model),
        load_hardware(gpu),
        parse_precision(prec),
        load_engine("trtllm"),
    )
    kw = dict(
        tp=tp, ep=ep, attention_dp=adp, isl=np.array([128, 1024, 8192])[:, None, None],
        osl=np.array([1, 16, 1024])[:, None], concurrency=np.array([1, 7, 64, 257, 1000, 4096]),
    )  # fmt: skip
    fast = evaluate(m, hw, p, eng, **kw)

    def direct(hw_, m_, n, k, groups, speed, elem):
        return cost.gemm_shape_efficiency(hw_, m_, n, k, groups, speed, elem)

    monkeypatch.setattr(cost, "_unrouted_efficiency", direct)
    slow = evaluate(m, hw, p, eng, **kw)
    assert np.array_equal(fast.feasible, slow.feasible)
    ok = slow.feasible
    for name in ("ttft_s", "tpot_s", "output_tok_s_per_gpu", "running_concurrency"):
        np.testing.assert_allclose(getattr(fast, name)[ok], getattr(slow, name)[ok], rtol=1e-9)


def test_row_tiles_stop_only_where_terms_cannot_change_the_sum():
    """``routing.expected_row_tiles`` stops each row count's series at z = 6.5; the full series
    (every term up to the array's widest spread, the definition) gives the same floats."""

    def full_series(rows, tile):
        mu = np.maximum(np.asarray(rows, dtype=float), 0.0)
        sigma = np.sqrt(np.maximum(mu, 1e-9))
        full = np.maximum(np.floor((mu - 8.0 * sigma) / tile), 0.0)
        width = int(min(np.ceil(16.0 * float(np.max(sigma, initial=0.0)) / tile) + 2, 400))
        total = 1.0 + full
        for w in range(1, width + 1):
            edge = (full + w) * tile + 0.5
            total = total + 0.5 * routing._erfc((edge - mu) / (sigma * np.sqrt(2.0)))
        return total

    rng = np.random.default_rng(3)
    rows = np.concatenate([[0.0, 1e-12, 0.5, 1.0, 63.5, 64.0, 64.5], rng.uniform(0, 5000, 3000)])
    for tile in (64.0, 128.0, 256.0):
        assert np.array_equal(routing.expected_row_tiles(rows, tile), full_series(rows, tile))
        grid = rows[:2000].reshape(40, 50)
        assert np.array_equal(routing.expected_row_tiles(grid, tile), full_series(grid, tile))


@pytest.mark.parametrize("spec_tokens", [0, 2])
def test_mixed_breakdown_is_the_converged_mix_priced(spec_tokens):
    """The loop keeps the breakdown of the step it priced last; pricing the reported mix
    (``step_decode_seqs``, ``step_prefill_tokens``) again gives it, and TPOT is that step plus
    its drafts per token."""
    from llm_codesign.serving.step import draft_time, pipelined_step, tokens_per_step

    m, hw, p, eng = (load_model("qwen3-30b-a3b"), load_hardware("h100-sxm"),
                     parse_precision("bf16"), load_engine("sglang"))  # fmt: skip
    a = 0.7
    kw = dict(tp=np.array([2, 4])[:, None, None, None], ep=2, pp=np.array([1, 2])[:, None, None],
              isl=np.array([128, 2048])[:, None], osl=1024)  # fmt: skip
    r = evaluate(m, hw, p, eng, **kw, concurrency=np.array([1, 9, 200, 3000]),
                 spec_tokens=spec_tokens, spec_acceptance=a)  # fmt: skip
    axes = {k: np.broadcast_to(kw[k], r.tpot_s.shape) for k in ("tp", "ep", "pp")}
    step = pipelined_step(
        m, p, hw, eng, **axes, cp=1, attention_dp=False, isl=kw["isl"], osl=1024,
        decode_seqs=r.step_decode_seqs, prefill_tokens=r.step_prefill_tokens,
        decode_query=1.0 + spec_tokens,
    )  # fmt: skip
    plain = pipelined_step(
        m, p, hw, eng, **axes, cp=1, attention_dp=False, isl=kw["isl"], osl=1024,
        decode_seqs=r.step_decode_seqs,
    ).total_s  # fmt: skip
    # SGLang's draft passes carry its host work for the step's sequences (one scheduling rank)
    drafts = draft_time(m, eng, plain, axes["pp"], spec_tokens, r.step_decode_seqs)
    k = tokens_per_step(spec_tokens, a)
    ok = r.feasible
    assert ok.sum() > 8
    for c, v in step.by_class.items():
        extra = drafts if c == "other" else 0.0
        np.testing.assert_allclose(r.mixed_breakdown[c][ok], ((v + extra) / k)[ok], rtol=1e-9)
    np.testing.assert_allclose(r.tpot_s[ok], ((step.total_s + drafts) / k)[ok], rtol=1e-9)


def test_a_grid_gives_each_configuration_its_own_numbers():
    """Steps priced once per group of configurations (those differing only in concurrency) and
    plan axes passed as one value: every point of a grid equals the same configuration
    evaluated alone."""
    m, hw, p, eng = (load_model("deepseek-r1"), load_hardware("h200-sxm"),
                     parse_precision("fp8"), load_engine("trtllm"))  # fmt: skip
    tp = np.array([8, 8])[:, None, None, None]
    adp = np.array([False, True])[:, None, None, None]
    isl = np.array([128, 4096])[:, None, None]
    osl = np.array([1, 256])[:, None]
    conc = np.array([1, 16, 700])
    grid = evaluate(m, hw, p, eng, tp=tp, ep=8, attention_dp=adp, isl=isl, osl=osl,
                    concurrency=conc, spec_tokens=1, spec_acceptance=0.8)  # fmt: skip
    for i, j, k, c in np.ndindex(grid.tpot_s.shape):
        one = evaluate(m, hw, p, eng, tp=8, ep=8, attention_dp=bool(adp[i, 0, 0, 0]),
                       isl=int(isl[j, 0, 0]), osl=int(osl[k, 0]), concurrency=int(conc[c]),
                       spec_tokens=1, spec_acceptance=0.8)  # fmt: skip
        assert bool(one.feasible) == bool(grid.feasible[i, j, k, c])
        for name in ("ttft_s", "tpot_s", "output_tok_s_per_gpu", "running_concurrency"):
            got, alone = getattr(grid, name)[i, j, k, c], getattr(one, name)
            np.testing.assert_allclose(got, alone, rtol=1e-9, err_msg=name)
        for c_name, v in one.mixed_breakdown.items():
            np.testing.assert_allclose(grid.mixed_breakdown[c_name][i, j, k, c], v, rtol=1e-9)


def test_routed_fraction_of_a_tile_with_k_varying_where_rows_do_not():
    """Under one tile of a grouped GEMM the fractional work is priced where it occurs; a K with an
    axis the rows lack (tp as an array, one decode count) still broadcasts (the review's case:
    it raised ValueError)."""
    hw = load_hardware("b200")
    k = np.array([2048.0, 1024.0])
    eff = cost.gemm_shape_efficiency(hw, np.asarray(3.0), 64.0, k, np.asarray(0.5), 1.0, 1.0,
                                     routed=True)  # fmt: skip
    one = [cost.gemm_shape_efficiency(hw, 3.0, 64.0, x, 0.5, 1.0, 1.0, routed=True) for x in k]
    np.testing.assert_array_equal(eff, np.array(one, dtype=float))
    from llm_codesign.serving.step import pipelined_step

    m, p, eng = load_model("qwen3-30b-a3b"), parse_precision("fp8"), load_engine("trtllm")
    kw = dict(pp=1, ep=4, cp=1, attention_dp=False, isl=1024, osl=1024, decode_seqs=0.05)
    both = pipelined_step(m, p, hw, eng, tp=np.array([4, 8]), **kw).total_s
    for i, tp in enumerate((4, 8)):
        alone = pipelined_step(m, p, hw, eng, tp=tp, **kw).total_s
        np.testing.assert_allclose(both[i], alone, rtol=1e-12)


@pytest.mark.parametrize(
    "model, gpu, prec, engine",
    [("deepseek-r1", "h200-sxm", "fp8", "trtllm"), ("qwen3-30b-a3b", "h100-sxm", "bf16", "vllm")],
)
def test_routed_gemms_sharing_their_rows_give_the_same_floats(
    monkeypatch, model, gpu, prec, engine
):
    """experts_up and experts_down of a layer share the busiest rank's rows and their expected
    row tiles (``cost.gemm_time``'s memo): the same floats as computing them for each GEMM."""
    m, hw, p, eng = (
        load_model(model),
        load_hardware(gpu),
        parse_precision(prec),
        load_engine(engine),
    )
    kw = dict(
        tp=8, ep=np.array([1, 2, 8])[:, None, None], isl=np.array([128, 4096])[:, None],
        osl=256, concurrency=np.array([1, 9, 64, 300, 2048]),
    )  # fmt: skip
    shared = evaluate(m, hw, p, eng, **kw)
    calls = []
    real = routing.expected_row_tiles

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(cost, "expected_row_tiles", counted)
    real_time = cost.gemm_time
    # each routed GEMM on its own: no memo shared between experts_up and experts_down
    monkeypatch.setattr(
        cost, "gemm_time", lambda op, hw_, eng_, memo=None: real_time(op, hw_, eng_)
    )
    alone = evaluate(m, hw, p, eng, **kw)
    assert calls  # the routed series ran
    assert np.array_equal(shared.feasible, alone.feasible)
    for name in ("ttft_s", "tpot_s", "output_tok_s_per_gpu", "running_concurrency"):
        np.testing.assert_array_equal(getattr(shared, name), getattr(alone, name))
