"""Llama 4's local chunked attention (``AttentionSpec.chunked_window``): a query attends the
tokens of its own aligned chunk, so the keys restart at every chunk boundary, where a sliding
window keeps the last ``window`` (issue 11; HF modeling_llama4: chunked attention on the RoPE
layers, ``attention_chunk_size``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import Workload, estimate, load_model
from llm_codesign.mixers import causal_mean_ctx, chunk_mean_keys
from llm_codesign.ops import step_shape

SCOUT = load_model("llama-4-scout")


def test_keys_by_hand():
    """8,192-token chunks: decode positions on [8192, 9216] attend 0..1,024 keys, 512 on
    average; prompt positions on [0, 16384] 4,096 (each chunk's 0..8,192, halved); a span
    inside the first chunk attends as full causal attention; a point its offset in the chunk."""
    assert float(chunk_mean_keys(8192.0, 9216.0, 8192)) == pytest.approx(512.0)
    assert float(chunk_mean_keys(0.0, 16384.0, 8192)) == pytest.approx(4096.0)
    assert float(chunk_mean_keys(0.0, 4096.0, 8192)) == pytest.approx(2048.0)
    assert float(chunk_mean_keys(0.0, 4096.0, 8192)) == pytest.approx(
        float(causal_mean_ctx(np.array(2048.0), 8192))
    )
    assert float(chunk_mean_keys(20000.0, 20000.0, 8192)) == pytest.approx(20000 - 2 * 8192)


@settings(max_examples=60, deadline=None)
@given(lo=st.floats(0, 1e6), width=st.floats(0, 1e6), chunk=st.integers(1, 1 << 16))
def test_never_more_keys_than_a_sliding_window(lo: float, width: float, chunk: int):
    """p mod c <= min(p, c) at every position, so the mean over any span is at most the sliding
    window's there (its mean of min(p, c) is at most c, and at most the span's top)."""
    got = float(chunk_mean_keys(lo, lo + width, chunk))
    assert -1e-6 <= got <= chunk * (1 + 1e-9)
    assert got <= lo + width + 1e-6


def test_scout_reads_its_chunk_not_a_window():
    """Scout at ISL/OSL 8192/1024: its chunked layers read 512 keys a decode step on average, a
    sliding window would read 8,192, so decode attention falls; at 1024/1024 (inside one chunk)
    the two are the same."""
    sliding = replace(SCOUT, attention=replace(SCOUT.attention, chunked_window=False))
    long_ = Workload(isl=8192, osl=1024, concurrency=16)
    short = Workload(isl=1024, osl=1024, concurrency=16)

    def attn(model, wl):
        e = estimate(model, "h200-sxm", "fp8", workload=wl, engine="vllm")
        return sum(o["time_s"] for o in e.ops if o["op"] == "attention_decode")

    assert attn(SCOUT, long_) < 0.5 * attn(sliding, long_)
    assert attn(SCOUT, short) == pytest.approx(attn(sliding, short), rel=1e-12)


def test_the_steady_state_spreads_decode_positions_over_the_output():
    s = step_shape(1, 1, 1, 1, False, isl=8192, osl=1024, decode_seqs=4.0)
    assert float(s.decode_ctx) == 8704.0 and float(s.decode_span) == 1024.0


def test_only_llama4_chunks():
    assert SCOUT.attention.chunked_window
    assert load_model("llama-4-maverick").attention.chunked_window
    for m in ("gpt-oss-120b", "gemma-3-27b", "llama-3.1-8b"):
        assert not load_model(m).attention.chunked_window, m
