"""The faster core (issue 16) gives today's numbers: the per-shape efficiency tables of unrouted
GEMMs (``cost._unrouted_efficiency``) against pricing every tile shape directly
(``cost.gemm_shape_efficiency``), and ``serving.evaluate`` end to end with and without them,
to 1e-9 relative."""

from __future__ import annotations

import numpy as np
import pytest

from llm_codesign import cost, load_engine, load_hardware, load_model, parse_precision
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
