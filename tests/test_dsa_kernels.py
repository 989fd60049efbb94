"""DeepSeek Sparse Attention's sparse core on the engines' kernels: FlashMLA pads a rank's query
heads (prefill to a multiple of 64 on Hopper and 128 on Blackwell, decode over an FP8 cache to
64 or 128) and runs BF16 math at its published rates (``attention_kernels.sparse_kernel``, read
by ``cost.attention_time``), which kernel runs a prompt over an FP8 cache, and the FP8 cache in
FlashMLA's layout (656 bytes a token: ``attention_kernels.sparse_fp8_cache_bytes``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from llm_codesign import (
    ParallelPlan,
    Workload,
    estimate,
    frontier,
    load_hardware,
    load_model,
    parse_precision,
)
from llm_codesign.attention_kernels import sparse_fp8_cache_bytes, sparse_kernel
from llm_codesign.cost import attention_time
from llm_codesign.errors import SpecError
from llm_codesign.ops import step_ops, step_shape
from llm_codesign.report import launch_settings
from llm_codesign.serving.memory import engine_kv_bytes
from llm_codesign.specs.engine import load_engine

H200, B200 = load_hardware("h200-sxm"), load_hardware("b200")
SGLANG, VLLM, TRTLLM = load_engine("sglang"), load_engine("vllm"), load_engine("trtllm")


def test_flashmla_heads_and_rates_by_hand():
    eight = np.array(8.0)  # GLM-5's 64 heads at TP 8
    # SGLang on Hopper: sparse prefill takes 64 heads; FP8-cache decode 64; a BF16 cache
    # decodes on FlashAttention-3, its own 8 heads at the engine's kernel (None)
    assert sparse_kernel(H200, SGLANG, "prefill", False, eight) == (64.0, 0.645)
    assert sparse_kernel(H200, SGLANG, "decode", True, eight) == (64.0, 0.414)
    assert sparse_kernel(H200, SGLANG, "decode", False, eight) == (8.0, None)
    # vLLM decodes a BF16 cache through the prefill kernel: padded too
    assert sparse_kernel(H200, VLLM, "decode", False, eight) == (64.0, 0.645)
    # Blackwell's sparse prefill takes a multiple of 128; FP8 decode 64 or 128
    assert sparse_kernel(B200, SGLANG, "prefill", False, eight)[0] == 128.0
    heads = np.array([16.0, 64.0, 65.0, 128.0])
    decode, _ = sparse_kernel(B200, SGLANG, "decode", True, heads)
    assert list(decode) == [64.0, 64.0, 128.0, 128.0]
    prefill, _ = sparse_kernel(H200, SGLANG, "prefill", True, heads)
    assert list(prefill) == [64.0, 64.0, 128.0, 128.0]
    # TensorRT-LLM (its own kernels on Blackwell) and AMD GPUs: the rank's own heads
    assert sparse_kernel(B200, TRTLLM, "prefill", False, eight) == (8.0, None)
    assert sparse_kernel(load_hardware("mi355x"), SGLANG, "prefill", False, eight) == (8.0, None)


def test_fp8_sparse_decode_runs_at_flashmla_published_rate_by_architecture():
    """FlashMLA's README (@9241ae3): its FP8 sparse decode kernel reaches 410 TFLOPS on H800 SXM5
    and "up to 350 TFlops on B200"; as fractions of the BF16 dense peak (989.4 and 2,250
    TFLOPS): 0.414 and 0.156, so 0.156 x 2,250 = 351 TFLOPS on B200 (GB200's higher clock
    scales it to 390)."""
    eight = np.array(8.0)
    for eng in (SGLANG, VLLM):
        heads, rate = sparse_kernel(B200, eng, "decode", True, eight)
        assert float(heads) == 64.0 and rate == 0.156
        assert rate * B200.peak_flops_per_s["bf16"] / 1e12 == pytest.approx(350.0, rel=0.01)
        assert sparse_kernel(H200, eng, "decode", True, eight)[1] == 0.414


def test_fp8_cache_prompts_run_the_engines_kernels():
    """vLLM's FlashMLASparse backend over an FP8 cache: below 32 heads a rank its prompt tokens
    join the decode batch (FP8 decode kernel, 64 or 128 heads, 0.414); from 32 up the BF16
    prefill kernel (64 a multiple on Hopper, 128 on Blackwell, 0.645). SGLang's flashmla_auto
    runs an FP8 cache's prompts on the decode kernel on Hopper and on the prefill kernel on
    Blackwell; a BF16 cache keeps the prefill kernel on both engines."""
    heads = np.array([8.0, 16.0, 31.0, 32.0, 64.0])
    hopper, rate = sparse_kernel(H200, VLLM, "prefill", True, heads)
    assert list(hopper) == [64.0, 64.0, 64.0, 64.0, 64.0]
    assert list(rate) == [0.414, 0.414, 0.414, 0.645, 0.645]
    blackwell, _ = sparse_kernel(B200, VLLM, "prefill", True, heads)
    assert list(blackwell) == [64.0, 64.0, 64.0, 128.0, 128.0]
    sglang_hopper, rate = sparse_kernel(H200, SGLANG, "prefill", True, heads)
    assert list(sglang_hopper) == [64.0, 64.0, 64.0, 64.0, 64.0] and set(rate) == {0.414}
    assert sparse_kernel(B200, SGLANG, "prefill", True, np.array(8.0)) == (128.0, 0.645)
    for eng in (SGLANG, VLLM):
        assert sparse_kernel(B200, eng, "prefill", False, np.array(8.0)) == (128.0, 0.645)
        assert sparse_kernel(H200, eng, "prefill", False, np.array(8.0)) == (64.0, 0.645)


def _attention(phase: str, isl: float, precision: str = "fp8"):
    kw = {"decode_seqs": 16.0} if phase == "decode" else {"prefill_tokens": isl}
    shape = step_shape(8, 1, 1, 1, False, isl=isl, osl=1, **kw)
    if phase == "decode":
        shape = replace(shape, decode_ctx=np.array(isl))
    ops = step_ops(load_model("glm-5"), parse_precision(precision), shape)
    return next(op for op in ops if op.name == f"attention_{phase}")


def test_padded_prefill_is_eight_times_the_work_at_flashmla_rate():
    # an 8k prompt over a BF16 cache (SGLang's on Hopper): past top-k, the sparse core runs on
    # the prefill kernel
    op = _attention("prefill", 8192.0, "fp8+bf16-kv")
    assert op.meta["sparse_heads"] == 8.0 and bool(op.meta["sparse_path"])
    _, compute, _ = attention_time(op, H200, SGLANG)
    by_hand = 8.0 * float(op.flops) / (H200.peak_flops("bf16") * 0.645)
    assert float(compute) == pytest.approx(by_hand, rel=1e-12)
    none = SGLANG.with_overrides(dsa_kernels="none")
    assert float(attention_time(op, H200, none)[0]) < float(attention_time(op, H200, SGLANG)[0])


def test_short_prompts_run_the_dense_kernels_unpadded():
    op = _attention("prefill", 1024.0)  # within top-k (2,048): masked MHA, no padding
    assert not bool(op.meta["sparse_path"])
    none = SGLANG.with_overrides(dsa_kernels="none")
    assert float(attention_time(op, H200, SGLANG)[0]) == float(attention_time(op, H200, none)[0])


def test_padding_never_makes_the_sparse_core_faster():
    for phase, isl, prec in (("decode", 8192.0, "fp8"), ("decode", 8192.0, "fp8+bf16-kv")):
        op = _attention(phase, isl, prec)
        for eng in (SGLANG, VLLM):
            none = eng.with_overrides(dsa_kernels="none")
            t, _, _ = attention_time(op, H200, eng)
            assert float(t) >= float(attention_time(op, H200, none)[0])


def test_an_unknown_family_is_refused_by_name():
    with pytest.raises(SpecError, match="dsa_kernels"):
        SGLANG.with_overrides(dsa_kernels="flashinfer")


# FlashMLA's FP8 cache layout (deepseek-ai/FlashMLA README; SGLang's DSA pool and vLLM's
# fp8_ds_mla): 512 FP8 latent values, 4 FP32 scales (one per 128), 64 BF16 RoPE values
FLASHMLA_FP8_TOKEN = 512 * 1 + 4 * 4 + 64 * 2  # 656
MODEL_FP8_TOKEN = 512 + 64  # the model's latent and RoPE at one byte each
INDEXER_TOKEN = 128 + 4  # the indexer key: 128 FP8 values and one FP32 scale


def test_flashmla_fp8_layout_by_hand():
    assert sparse_fp8_cache_bytes(H200, SGLANG, 512, 64) == FLASHMLA_FP8_TOKEN == 656
    assert sparse_fp8_cache_bytes(B200, VLLM, 512, 64) == 656
    # TensorRT-LLM's per-tensor FP8 cache and other GPUs' kernels: the model's own
    assert sparse_fp8_cache_bytes(H200, TRTLLM, 512, 64) is None
    assert sparse_fp8_cache_bytes(load_hardware("mi355x"), SGLANG, 512, 64) is None


@pytest.mark.parametrize("model_id", ["glm-5", "deepseek-v3.2"])
def test_a_sequence_holds_flashmla_layout_over_fp8_cache_only(model_id):
    m, ctx, one = load_model(model_id), np.array(9216.0), np.array(1)
    plan = (np.array(8), one, np.array(False), one)  # TP 8: the latent is replicated

    def held(eng, prec):
        return float(engine_kv_bytes(m, H200, parse_precision(prec), eng, ctx, *plan))

    layers = m.num_layers  # every layer of both is a DSA layer
    assert held(TRTLLM, "fp8") == pytest.approx(layers * 9216 * (MODEL_FP8_TOKEN + INDEXER_TOKEN))
    for eng in (SGLANG, VLLM):
        assert held(eng, "fp8") == pytest.approx(
            layers * 9216 * (FLASHMLA_FP8_TOKEN + INDEXER_TOKEN)
        )
        # a BF16 cache is the model's latent and RoPE at two bytes on every engine
        assert held(eng, "fp8+bf16-kv") == pytest.approx(held(TRTLLM, "fp8+bf16-kv"))


def test_the_fp8_decode_reads_the_layout():
    op = _attention("decode", 8192.0)  # top-k keys a sequence, over the FP8 cache
    none = SGLANG.with_overrides(dsa_kernels="none")
    for eng in (SGLANG, VLLM):
        flashmla = float(attention_time(op, H200, eng)[2])
        assert flashmla == pytest.approx(
            float(attention_time(op, H200, none)[2]) * FLASHMLA_FP8_TOKEN / MODEL_FP8_TOKEN
        )
    bf16 = _attention("decode", 8192.0, "fp8+bf16-kv")  # a BF16 cache: the model's bytes
    assert float(attention_time(bf16, H200, SGLANG)[2]) == float(
        attention_time(bf16, H200, none)[2]
    )


def test_fewer_sequences_fit_and_the_launch_files_say_why():
    """GLM-5 on 8 x H200 with an FP8 cache: SGLang's layout holds more a sequence than the
    model's own, so fewer fit; a point priced on TensorRT-LLM says so in SGLang's and vLLM's
    launch files, naming the cause."""
    plan, wl = ParallelPlan(tp=8), Workload(isl=8192, osl=1024, concurrency=8)
    none = SGLANG.with_overrides(dsa_kernels="none")
    flashmla, own = (
        estimate("glm-5", "h200-sxm", "fp8", plan, wl, engine=e) for e in (SGLANG, none)
    )
    ratio = (FLASHMLA_FP8_TOKEN + INDEXER_TOKEN) / (MODEL_FP8_TOKEN + INDEXER_TOKEN)
    assert flashmla.kv_cache_per_gpu_gb == pytest.approx(own.kv_cache_per_gpu_gb * ratio)
    assert flashmla.max_concurrency < own.max_concurrency
    fr = frontier("glm-5", "h200-sxm", num_gpus=8, precision="fp8", engine="trtllm", helix=False)
    notes = [n for n in launch_settings(fr, int(fr.pareto[0]))["notes"] if "dsa_kernels" in n]
    assert sorted(n.split()[0] for n in notes) == ["sglang", "vllm"]
    assert all(f"{ratio:.2f}x" in n and "fewer sequences fit" in n for n in notes)
    assert all("656 bytes a token against 576" in n for n in notes)
    assert not any("windowed" in n for n in notes)


def test_fp8_prompts_priced_per_kernel_through_the_cost_model():
    """An 8k prompt over an FP8 cache at 8 and 32 heads a rank on vLLM on an H200: the 8-head
    rank runs the FP8 decode kernel (64 heads at 0.414), the 32-head one the prefill kernel (64
    heads at 0.645): compute = padded FLOPs over the BF16 peak x that rate, by hand."""
    op = _attention("prefill", 8192.0)
    flops = float(op.flops)
    heads = np.array([8.0, 32.0])
    both = replace(op, meta={**op.meta, "sparse_heads": heads})
    _, compute, _ = attention_time(both, H200, VLLM)
    peak = H200.peak_flops("bf16")
    assert compute[0] == pytest.approx(flops * 64 / 8 / (peak * 0.414), rel=1e-12)
    assert compute[1] == pytest.approx(flops * 64 / 32 / (peak * 0.645), rel=1e-12)


def test_the_decode_read_scales_by_bytes_per_element():
    """An MXFP8 cache (1.03125 bytes an element, FP8 too) stores FlashMLA's 656-byte layout on
    SGLang's kernels: the decode read is 656 bytes a token, not 656 x 1.03125."""
    op = _attention("decode", 8192.0, "fp8+mxfp8-kv")
    none = SGLANG.with_overrides(dsa_kernels="none")
    own = float(attention_time(op, H200, none)[2])  # the model's 576 x 1.03125 bytes a token
    flashmla = float(attention_time(op, H200, SGLANG)[2])
    assert flashmla == pytest.approx(own * 656 / (576 * 1.03125))


def test_the_indexer_streams_keys_and_logits_at_its_own_kernel_share():
    """DeepSeek-V3.2's lightning indexer, one layer, decode of 1,024 sequences at 32,768 tokens of
    history on an H200 (TP 8): by hand, each sequence reads 32,768 keys of 128 FP8 values and a
    4-byte scale and writes and reads back one FP32 logit a key: 1,024 x 32,768 x (132 + 8) B =
    4.698 GB at 0.85 x 4.8 TB/s = 1.1514 ms; its math, 1,024 x 32,768 x 2 x 64 x 128 FP8 FLOPs =
    0.55 TFLOP, takes less. The same on vLLM and SGLang (DeepGEMM's kernel), whatever their GQA
    decode share (0.4275, 0.8122); TensorRT-LLM's own path keeps its share (0.684), as does a
    GPU the kernel does not run on (MI355X)."""
    m = load_model("deepseek-v3.2")
    s = step_shape(8, 1, 1, 1, False, isl=32768.0, osl=1e-9, decode_seqs=1024.0)
    op = next(o for o in step_ops(m, parse_precision("fp8"), s) if o.name == "indexer_decode")
    assert float(np.asarray(op.bytes)) == pytest.approx(1024 * 32768 * 140.0)
    want = 1024 * 32768 * 140.0 / (0.85 * 4.8e12)
    for eng in (VLLM, SGLANG):
        t, compute, memory = attention_time(op, H200, eng)
        assert float(np.asarray(t)) == pytest.approx(want, rel=1e-9)
        assert float(np.asarray(compute)) < float(np.asarray(memory))
    memory = attention_time(op, H200, TRTLLM)[2]
    assert float(np.asarray(memory)) == pytest.approx(1024 * 32768 * 140.0 / (0.684 * 4.8e12))
    mi355x = load_hardware("mi355x")
    memory = attention_time(op, mi355x, VLLM)[2]
    assert float(np.asarray(memory)) == pytest.approx(
        1024 * 32768 * 140.0 / (VLLM.attn_decode_efficiency * mi355x.hbm_bytes_per_s)
    )


def test_every_flashmla_architecture_has_its_fp8_decode_rate():
    from llm_codesign.attention_kernels import (
        FLASHMLA_SPARSE_FP8_DECODE_EFFICIENCY,
        SPARSE_PREFILL_HEAD_MULTIPLE,
    )

    assert set(FLASHMLA_SPARSE_FP8_DECODE_EFFICIENCY) == set(SPARSE_PREFILL_HEAD_MULTIPLE)
