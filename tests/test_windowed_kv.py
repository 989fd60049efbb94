"""What a windowed attention layer holds in the KV cache (``EngineConstants.windowed_kv_share``):
vLLM's hybrid KV manager keeps its window only, SGLang's SWA pool 0.8 of the context
(``--swa-full-tokens-ratio``), TensorRT-LLM's equal pools per window size all of it. Capacity
moves; what the windowed layer's attention reads does not (issue 11)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import (
    Workload,
    estimate,
    frontier,
    load_engine,
    load_model,
    parse_precision,
)
from llm_codesign.cli import main
from llm_codesign.errors import SpecError
from llm_codesign.mixers import windowed_share
from llm_codesign.ops import kv_bytes_per_sequence_per_gpu
from llm_codesign.report import launch_settings
from llm_codesign.specs.engine import engine_from_mapping

OSS = load_model("gpt-oss-120b")  # 36 layers alternating sliding (window 128) and full
FP8 = parse_precision("fp8")  # FP8 KV: one byte an element


def _kv(share: float, ctx: float) -> float:
    one = np.array(1)
    return float(
        kv_bytes_per_sequence_per_gpu(
            OSS, FP8, np.array(ctx), one, one, np.array(False), one, window_share=share
        )
    )


def test_engines_state_their_share():
    assert load_engine("vllm").windowed_kv_share == 0.0
    assert load_engine("sglang").windowed_kv_share == pytest.approx(0.8)
    assert load_engine("trtllm").windowed_kv_share == 1.0
    assert "calculateMaxNumBlocks" in load_engine("trtllm").sources["windowed_kv_share"]
    assert "swa-full-tokens-ratio" in load_engine("sglang").sources["windowed_kv_share"]


def test_bytes_per_sequence_by_hand():
    """gpt-oss-120b at TP1, FP8 KV, 2,048 tokens: a layer holds 2 (K, V) x 8 KV heads x 64 dims
    = 1,024 bytes a token. 18 full layers hold 2,048 tokens; the 18 sliding layers hold 128
    (window only), 0.8 x 2,048 = 1,638.4 (SGLang) or 2,048 (TensorRT-LLM)."""
    per_tok, ctx = 2 * 8 * 64 * 1, 2048.0
    full = 18 * per_tok * ctx
    assert _kv(0.0, ctx) == pytest.approx(full + 18 * per_tok * 128)
    assert _kv(0.8, ctx) == pytest.approx(full + 18 * per_tok * 0.8 * ctx)
    assert _kv(1.0, ctx) == pytest.approx(36 * per_tok * ctx)
    # a context inside the window: every share holds the same, the whole context
    assert _kv(0.0, 100.0) == _kv(0.8, 100.0) == _kv(1.0, 100.0) == 36 * per_tok * 100.0


@settings(max_examples=40, deadline=None)
@given(a=st.floats(0, 1), b=st.floats(0, 1), ctx=st.floats(1, 200_000))
def test_held_bytes_grow_with_the_share(a: float, b: float, ctx: float):
    lo, hi = sorted((a, b))
    assert _kv(lo, ctx) <= _kv(hi, ctx) * (1 + 1e-12)
    # bounded by the window-only and the all-full-attention caches
    assert _kv(0.0, ctx) <= _kv(lo, ctx) * (1 + 1e-12)
    assert _kv(hi, ctx) <= _kv(1.0, ctx) * (1 + 1e-12)


def test_capacity_moves_and_attention_time_does_not():
    """Same engine but for the share: the full-context cache admits fewer sequences; at a load
    both admit, TPOT is the same (the sliding layers still read their window only)."""
    eng = load_engine("vllm")
    full = eng.with_overrides(windowed_kv_share=1.0)
    w = Workload(isl=1024, osl=1024, concurrency=8)
    a = estimate(OSS, "h100-sxm", "mxfp4-a16", workload=w, engine=eng)
    b = estimate(OSS, "h100-sxm", "mxfp4-a16", workload=w, engine=full)
    assert b.max_concurrency < a.max_concurrency
    # the batch's KV: 36 full layers over 18 full + 18 windowed, between 1x and 2x
    assert a.kv_cache_per_gpu_gb < b.kv_cache_per_gpu_gb < 2 * a.kv_cache_per_gpu_gb
    assert b.tpot_ms == pytest.approx(a.tpot_ms, rel=1e-9)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "half", True])
def test_share_outside_zero_one_is_refused_naming_the_field(bad):
    with pytest.raises(SpecError, match="windowed_kv_share"):
        engine_from_mapping({"id": "x", "windowed_kv_share": bad}, "test.yaml")


def test_an_estimate_says_what_the_share_costs():
    """TensorRT-LLM reserves the whole context (admission ISL + OSL = 2,048 tokens): 36 x 2,048
    over 18 x 2,048 + 18 x 128 = 1.88x the window-only KV; vLLM's cache says nothing."""
    w = Workload(isl=1024, osl=1024, concurrency=8)
    trt = estimate(OSS, "h200-sxm", "fp8", workload=w, engine="trtllm").notes
    (note,) = [n for n in trt if "windowed_kv_share" in n]
    assert "100% of the context in the 18 windowed attention layers" in note
    assert f"{36 * 2048 / (18 * 2048 + 18 * 128):.2f}x" in note
    vllm = estimate(OSS, "h200-sxm", "fp8", workload=w, engine="vllm").notes
    assert not [n for n in vllm if "windowed_kv_share" in n]


@pytest.mark.parametrize(
    ("line", "share"),
    [
        ("python3 -m sglang.launch_server --model-path openai/gpt-oss-120b --tp 2 "
         "--swa-full-tokens-ratio 0.5", 0.5),
        ("python3 -m sglang.launch_server --model-path openai/gpt-oss-120b --tp 2 "
         "--disable-hybrid-swa-memory", 1.0),
        ("vllm serve openai/gpt-oss-120b -tp 2 --disable-hybrid-kv-cache-manager", 1.0),
    ],
)  # fmt: skip
def test_a_launch_line_sets_the_share(tmp_path, line, share):
    """``estimate --from``: SGLang's ratio is the share; one pool for every layer (SGLang's
    --disable-hybrid-swa-memory, vLLM's --disable-hybrid-kv-cache-manager) is a share of 1."""
    f = tmp_path / "serve.sh"
    f.write_text(line + "\n")
    args = ["estimate", "-g", "h200-sxm", "--isl", "1024", "--osl", "1024", "-c", "64"]
    r = CliRunner().invoke(main, [*args, "--from", str(f), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["assumptions"]["engine_constants"]["windowed_kv_share"] == share
    mapped = " ".join(x["maps_to"] for x in d["deployment"]["mapped"])
    assert f"windowed_kv_share={share:g}" in mapped


def test_a_launch_line_share_that_does_not_apply_is_ignored_with_its_reason(tmp_path):
    """Both SGLang flags: one pool wins and the ratio is ignored; on Llama 4 (chunked, whole
    context on every engine) and on Mistral (windowed layers only) the flags change nothing."""
    cases = [
        ("openai/gpt-oss-120b --disable-hybrid-swa-memory --swa-full-tokens-ratio 0.5",
         "keeps one pool", 1.0),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct --swa-full-tokens-ratio 0.5",
         "chunked attention holds the whole context", 0.8),
        ("mistralai/Mistral-7B-v0.1 --swa-full-tokens-ratio 0.5", "one pool holds the window",
         0.8),
    ]  # fmt: skip
    for i, (rest, reason, share) in enumerate(cases):
        f = tmp_path / f"s{i}.sh"
        f.write_text(f"python3 -m sglang.launch_server --tp 8 --model-path {rest}\n")
        r = CliRunner().invoke(main, ["estimate", "-g", "h200-sxm", "--from", str(f), "--json"])
        assert r.exit_code == 0, r.output
        d = json.loads(r.output)
        assert any(reason in x["reason"] for x in d["deployment"]["ignored"]), (rest, d)
        assert d["assumptions"]["engine_constants"]["windowed_kv_share"] == share


def test_a_launch_line_share_out_of_range_or_without_windows(tmp_path):
    f = tmp_path / "bad.sh"
    f.write_text("python3 -m sglang.launch_server --model-path openai/gpt-oss-120b "
                 "--swa-full-tokens-ratio 1.5\n")  # fmt: skip
    r = CliRunner().invoke(main, ["estimate", "-g", "h200-sxm", "--from", str(f)])
    assert r.exit_code != 0 and "--swa-full-tokens-ratio 1.5" in r.output
    assert "Traceback" not in r.output
    g = tmp_path / "dense.sh"
    g.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --disable-hybrid-kv-cache-manager\n")
    r = CliRunner().invoke(main, ["estimate", "-g", "h200-sxm", "--from", str(g), "--json"])
    assert r.exit_code == 0, r.output
    ignored = json.loads(r.output)["deployment"]["ignored"]
    assert any("no sliding-window" in x["reason"] for x in ignored)


def test_launch_files_say_which_engines_hold_windows_otherwise():
    """A point priced with vLLM's window-only cache: TensorRT-LLM's and SGLang's launch files
    hold more KV a sequence for gpt-oss's sliding layers, and say so; vLLM's say nothing."""
    fr = frontier("gpt-oss-120b", "h200-sxm", num_gpus=2, precision="mxfp4-a16", engine="vllm")
    notes = [n for n in launch_settings(fr, int(fr.pareto[0]))["notes"] if "windowed" in n]
    assert [n.split()[0] for n in notes] == ["trtllm", "sglang"]
    ctx = fr.isl + fr.osl  # by hand, per layer a token: 18 full layers + 18 sliding (128)
    window_only = 18 * ctx + 18 * min(ctx, 128)
    assert f"{36 * ctx / window_only:.2f}x" in notes[0]  # TensorRT-LLM: all 36 at full context
    assert f"{(18 * ctx + 18 * max(128, 0.8 * ctx)) / window_only:.2f}x" in notes[1]  # SGLang
    assert all("fewer sequences fit" in n for n in notes)


def test_launch_files_say_nothing_where_the_engines_hold_alike():
    """Scout at the frontier's lengths: its chunked layers hold the whole context on every
    engine (ops.windowed_share), so no engine's launch file differs."""
    fr = frontier("llama-4-scout", "h200-sxm", num_gpus=2, precision="fp8", engine="vllm")
    assert not [n for n in launch_settings(fr, int(fr.pareto[0]))["notes"] if "windowed" in n]


def test_the_share_applies_beside_full_attention_only():
    """A model of sliding layers only (Mistral 7B v0.1) holds its window on every engine (one
    pool, a cyclic buffer); Llama 4's chunked layers hold the whole context on every engine."""
    mistral, scout = load_model("mistral-7b"), load_model("llama-4-scout")
    assert windowed_share(mistral, 1.0) == windowed_share(mistral, 0.8) == 0.0
    assert windowed_share(scout, 0.0) == windowed_share(scout, 0.8) == 1.0
    assert windowed_share(OSS, 0.8) == 0.8 and windowed_share(load_model("llama-3.1-8b"), 1.0) == 0
    w = Workload(isl=8192, osl=1024, concurrency=8)
    a = estimate(mistral, "h200-sxm", "fp8", workload=w, engine="trtllm")
    b = estimate(mistral, "h200-sxm", "fp8", workload=w, engine="vllm")
    assert a.kv_cache_per_gpu_gb == pytest.approx(b.kv_cache_per_gpu_gb)
    assert not [n for n in a.notes if "windowed attention layers" in n]
