"""The busiest EP rank's touched experts (routing.busiest_rank_experts): the weights its grouped
GEMMs stream at a small batch, checked against a Monte Carlo of uniform top-k routing, the
closed form by hand, and the invariants it must keep."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import load_hardware, load_model, parse_precision
from llm_codesign.cost import gemm_time
from llm_codesign.ops import step_ops, step_shape
from llm_codesign.routing import busiest_rank_experts, normal_max_mean
from llm_codesign.specs.engine import load_engine

R1 = load_model("deepseek-r1")


def _monte_carlo(tokens: int, experts: int, top_k: int, ep: int, draws: int = 3000) -> float:
    """E[max over ranks of the distinct local experts touched], by drawing the routing."""
    rng = np.random.default_rng(7)
    local = experts // ep
    best = np.empty(draws)
    for i in range(draws):
        picks = np.array([rng.choice(experts, top_k, replace=False) for _ in range(tokens)])
        touched = np.unique(picks.ravel())
        best[i] = np.bincount(touched // local, minlength=ep).max()
    return float(best.mean())


def test_normal_max_mean_closed_forms():
    # E[max of 1] = 0, of 2 = 1/sqrt(pi) (by hand), of 8 = 1.4236 (tables of normal order
    # statistics, e.g. Harter 1961)
    got = normal_max_mean(np.array([1.0, 2.0, 8.0]))
    assert got[0] == pytest.approx(0.0, abs=1e-9)
    assert got[1] == pytest.approx(1.0 / np.sqrt(np.pi), rel=1e-4)
    assert got[2] == pytest.approx(1.4236, abs=2e-3)


def test_deepseek_ep8_at_four_tokens_by_hand():
    # p = 1 - (1 - 8/256)^4 = 0.1193; mean 32 p = 3.817; busiest 3.817 + 1.4236 x
    # sqrt(32 p (1 - p)) = 3.817 + 1.4236 x 1.833 = 6.427
    p = 1.0 - (1.0 - 8.0 / 256.0) ** 4
    by_hand = 32 * p + 1.4236 * np.sqrt(32 * p * (1 - p))
    assert float(busiest_rank_experts(4.0, 256.0, 8.0, 8.0)) == pytest.approx(by_hand, rel=1e-3)


@pytest.mark.parametrize(
    "tokens,experts,top_k,ep", [(4, 256, 8, 8), (16, 256, 8, 8), (8, 128, 8, 4), (64, 256, 8, 8)]
)
def test_busiest_rank_experts_matches_a_monte_carlo(tokens, experts, top_k, ep):
    sim = _monte_carlo(tokens, experts, top_k, ep)
    assert float(busiest_rank_experts(float(tokens), experts, top_k, ep)) == pytest.approx(
        sim, rel=0.05
    )


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.floats(0.0, 4096.0),
    more=st.floats(0.0, 4096.0),
    ep=st.sampled_from([1, 2, 4, 8, 16, 32]),
)
def test_busiest_rank_experts_bounds_and_monotone(tokens, more, ep):
    got = float(busiest_rank_experts(tokens, 256.0, 8.0, ep))
    mean = 256.0 / ep * (1.0 - (1.0 - 8.0 / 256.0) ** tokens)
    # never below the mean rank, never above the rank's experts; more tokens never touch fewer
    assert mean - 1e-9 <= got <= 256.0 / ep + 1e-9
    assert float(busiest_rank_experts(tokens + more, 256.0, 8.0, ep)) >= got - 1e-9
    if ep == 1:
        assert got == pytest.approx(mean)


def _experts_up(tp: int, ep: int, seqs: float):
    s = step_shape(tp, 1, ep, 1, False, isl=1024, osl=1024, decode_seqs=seqs)
    (up,) = [o for o in step_ops(R1, parse_precision("fp8"), s) if o.name == "experts_up"]
    return gemm_time(up, load_hardware("h200-sxm"), load_engine("base"))


def test_small_batch_expert_parallel_streams_the_busiest_ranks_weights():
    # at 4 tokens the expert weights bound the GEMM: EP 8's busiest rank streams 6.43 whole
    # experts where tensor parallelism (ep 1) streams 1/8 of the 30.5 experts touched, 3.82
    # experts' worth: the ratio of the memory times is 6.43 / 3.82 (same bytes per expert)
    ep8, tp8 = _experts_up(8, 8, 4.0), _experts_up(8, 1, 4.0)
    expected = float(busiest_rank_experts(4.0, 256.0, 8.0, 8.0)) / (
        32 * (1.0 - (1.0 - 8.0 / 256.0) ** 4)
    )
    assert float(ep8[2]) / float(tp8[2]) == pytest.approx(expected, rel=0.02)
    # a batch that touches every expert touches every expert on every rank
    assert float(busiest_rank_experts(2048.0, 256.0, 8.0, 8.0)) == pytest.approx(32.0)
