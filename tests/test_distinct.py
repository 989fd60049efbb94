"""The distinct points of a grid (``distinct``) and the routed GEMMs priced on them
(``cost.gemm_time``): the same numbers as the whole grid."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llm_codesign.cost as cost
import llm_codesign.distinct as distinct_mod
from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.distinct import distinct
from llm_codesign.serving.sim_table import step_table

VALUES = st.sampled_from([0.0, -0.0, 1.0, 2.5, 8.0, float("nan")])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(VALUES, min_size=1, max_size=40),
    st.lists(VALUES, min_size=1, max_size=40),
)
def test_expanding_the_distinct_points_gives_back_the_grid(a, b):
    # a column against a row: the grid broadcasts both ways
    rows, groups = np.array(a).reshape(-1, 1), np.array(b).reshape(1, -1)
    d = distinct(rows, groups)
    size = len(a) * len(b)
    if d is None:  # small, or mostly distinct
        return
    assert size >= distinct_mod.MIN_POINTS
    assert len(d.columns[0]) <= distinct_mod.MAX_SHARE * size
    for got, want in zip((d.expand(c) for c in d.columns), np.broadcast_arrays(rows, groups)):
        np.testing.assert_array_equal(got, want)  # NaN == NaN, -0.0 == 0.0
    pairs = {(float(x), float(y)) for x, y in zip(*d.columns) if x == x and y == y}
    nan_rows = sum(1 for x, y in zip(*d.columns) if x != x or y != y)
    assert len(pairs) + nan_rows == len(d.columns[0])  # each (non-NaN) point once


def test_a_repeating_grid_is_reduced_and_a_distinct_one_is_not():
    d = distinct(np.tile([1.0, 2.0], (300, 1)), 8.0)
    assert d is not None and d.shape == (300, 2) and len(d.columns[0]) == 2
    assert distinct(np.arange(1000.0), 8.0) is None  # every point distinct
    assert distinct(np.ones(10), 8.0) is None  # under MIN_POINTS


CASES = {
    # (model, GPU, precision, engine, engine overrides): the routed GEMM paths priced on the
    # distinct points: CUTLASS, the Triton path's narrow token tiles, vLLM's DeepGEMM padded
    # rows, TensorRT-LLM's weight-only path for MXFP4 experts
    "cutlass": ("deepseek-v3", "h200-sxm", "fp8+fp8_block-w+fp8-kv", "trtllm", {}),
    "triton tiles": ("deepseek-v3", "h200-sxm", "fp8+fp8_block-w+fp8-kv", "sglang", {}),
    "deepgemm": (
        "deepseek-v3",
        "h200-sxm",
        "fp8+fp8_block-w+fp8-kv",
        "vllm",
        {"moe_kernels": "deepgemm"},
    ),
    "weight-only": ("gpt-oss-120b", "h200-sxm", "mxfp4-a16", "trtllm", {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_step_table_on_distinct_points_equals_the_whole_grid(case, monkeypatch):
    model, gpu, prec, engine, over = CASES[case]
    m, hw, p = load_model(model), load_hardware(gpu), parse_precision(prec)
    eng = dataclasses.replace(load_engine(engine), **over)
    axes = {"tp": 8, "pp": 1, "ep": 8, "cp": 1, "attention_dp": True}
    kw = dict(max_rows=256.0, max_prompt=8192.0, max_context=9216.0, spec_tokens=1)
    reduced_calls = []

    def spy(*arrays):
        d = distinct_mod.distinct(*arrays)
        reduced_calls.append(d is not None)
        return d

    monkeypatch.setattr(cost, "distinct", spy)
    reduced = step_table(m, p, hw, eng, axes, **kw)
    assert any(reduced_calls), "no grid was reduced: the comparison would be empty"
    monkeypatch.setattr(distinct_mod, "MAX_SHARE", 0.0)  # every grid priced whole
    whole = step_table(m, p, hw, eng, axes, **kw)
    assert reduced.points == whole.points
    np.testing.assert_array_equal(reduced.t_mix, whole.t_mix)
    np.testing.assert_array_equal(reduced.t_dec, whole.t_dec)
