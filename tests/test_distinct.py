"""The distinct points of a grid (``distinct``) and the routed GEMMs priced on them
(``cost.gemm_time``): the same numbers as the whole grid."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import llm_codesign.distinct as distinct_mod
from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.distinct import distinct
from llm_codesign.serving.sim_table import step_table


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=4),
    st.lists(st.integers(0, 3), min_size=1, max_size=4),
    st.integers(64, 200),
)
def test_expanding_the_distinct_points_gives_back_the_grid(a, b, reps):
    rows = np.tile(np.array(a, dtype=float), (reps, 1))  # at least 64 x 1 points
    groups = np.array(b, dtype=float)[: rows.shape[1]].reshape(1, -1) if len(b) >= len(a) else 2.0
    d = distinct(rows, groups)
    if rows.size < distinct_mod.MIN_POINTS:
        assert d is None
        return
    assert d is not None  # few distinct values in a large grid
    got = [d.expand(c) for c in d.columns]
    want = np.broadcast_arrays(rows, groups)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # each distinct point once
    assert len({(x, y) for x, y in zip(*d.columns)}) == len(d.columns[0])


def test_mostly_distinct_grids_are_priced_whole():
    assert distinct(np.arange(1000.0), 8.0) is None
    assert distinct(np.ones(10), 8.0) is None  # under MIN_POINTS


def test_step_table_on_distinct_points_equals_the_whole_grid(monkeypatch):
    # DeepSeek-V3's step table (MoE layers: routed GEMMs on a 4-D grid whose rows repeat over
    # the two context axes), priced with the reduction and without it
    m, hw = load_model("deepseek-v3"), load_hardware("h200-sxm")
    prec, eng = parse_precision("fp8+fp8_block-w+fp8-kv"), load_engine("trtllm")
    axes = {"tp": 8, "pp": 1, "ep": 8, "cp": 1, "attention_dp": True}
    kw = dict(max_rows=256.0, max_prompt=8192.0, max_context=9216.0, spec_tokens=1)
    reduced = step_table(m, prec, hw, eng, axes, **kw)
    monkeypatch.setattr(distinct_mod, "MAX_SHARE", 0.0)  # every grid priced whole
    whole = step_table(m, prec, hw, eng, axes, **kw)
    assert reduced.points == whole.points > distinct_mod.MIN_POINTS
    np.testing.assert_allclose(reduced.t_mix, whole.t_mix, rtol=1e-12, atol=0.0)
    np.testing.assert_allclose(reduced.t_dec, whole.t_dec, rtol=1e-12, atol=0.0)
