"""Cost model: hand-worked roofline cases, tile/wave quantization, collectives, FLOP counts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import load_hardware, load_model, parse_precision, routing
from llm_codesign.comm import ALLREDUCE_LARGE_LATENCY_S, collective_time
from llm_codesign.cost import (
    MISALIGNED_FACTOR,
    attention_time,
    gemm_overlap_time,
    gemm_shape_efficiency,
    gemm_time,
    hbm_bytes_per_s_achieved,
)
from llm_codesign.ops import Op, StepShape, step_ops
from llm_codesign.serving import step_cost
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.hardware import Efficiency
from llm_codesign.specs.model import bundled_models

ENG = load_engine("base").with_overrides(id="test")


def shape(decode=1.0, prefill=0.0, ctx=16.0, tp=1, ep=1, pp=1, cp=1, adp=False):
    a = lambda x: np.asarray(x, dtype=float)  # noqa: E731
    return StepShape(
        a(decode),
        a(ctx),
        a(prefill),
        a(1.0 if prefill else 0.0),
        a(ctx),
        np.asarray(tp),
        np.asarray(ep),
        np.asarray(pp),
        np.asarray(cp),
        np.asarray(adp),
    )


@pytest.mark.parametrize("model_id", sorted(bundled_models()))
def test_decode_flops_per_token_is_two_x_matmul_params(model_id):
    m = load_model(model_id)
    ops = step_ops(m, parse_precision("bf16"), shape(decode=1.0, ctx=1.0))
    gemm_flops = sum(float(np.sum(o.gemm_flops() * o.layers)) for o in ops if o.kind == "gemm")
    # 2 FLOPs per weight multiplied: active params minus the input-embedding gather and norms
    assert gemm_flops == pytest.approx(2 * m.matmul_params_per_token, rel=0.005)
    if m.attention.kind == "mla" or m.model_type == "gpt_oss":
        # MLA's latent projections and gpt-oss's published "active" count do not map one to one
        # onto the matmuls of a step; only the loose bound is checked for them
        assert gemm_flops == pytest.approx(2 * m.active_params, rel=0.12)
    else:
        # independent of the op list: every active weight is multiplied once per token but the
        # input embedding (a row gather); norms are < 0.01% of the parameters. The gather is in
        # the active count only for untied embeddings under the "all" convention (tied: the one
        # matrix counted is the LM head's; "no_input_embedding" leaves it out already)
        untied_all = m.active_params_convention == "all" and not m.tie_embeddings
        gather = m.vocab_size * m.hidden_size if untied_all else 0
        # the "no_embeddings" convention leaves the LM head (a real matmul) out as well
        head = m.vocab_size * m.hidden_size if m.active_params_convention == "no_embeddings" else 0
        assert gemm_flops == pytest.approx(2 * (m.active_params - gather + head), rel=1e-3)


def test_llama8b_bf16_decode_batch1_on_h200_is_weight_read_bound():
    m, hw = load_model("llama-3.1-8b"), load_hardware("h200-sxm")
    cost = step_cost(
        m, parse_precision("bf16"), hw, ENG, shape(decode=1.0, ctx=1024.0), detail=True
    )
    gemm_time_s = sum(float(t) for op, t, _ in cost.ops if op.kind == "gemm")
    weight_bytes = 2.0 * m.matmul_params_per_token  # BF16, input embedding not read
    by_hand = weight_bytes / (
        4.8e12 * hw.hbm_efficiency.value * ENG.hbm_efficiency_scale
    )  # ~4.06 ms
    # the activations of one token add ~0.03% to the bytes moved, and the padded math
    # (8 rows a swap-AB tile) that overlaps the streaming adds (compute / memory)^3 / 3 ~ 0.2%
    # (cost.gemm_overlap_time)
    assert by_hand * (1 - 1e-3) <= gemm_time_s <= by_hand * 1.005
    assert all(str(b) == "memory" for op, _, b in cost.ops if op.kind == "gemm")


def test_hardware_hbm_efficiency_drives_memory_bound_gemm_time():
    # decode GEMM of llama-3.1-8b's FFN up/gate (M=1): time = bytes / (bw x hbm_eff x scale),
    # H200: 4.8 TB/s x the measured weight-stream fraction 0.835 (benchmarks/hbm_fraction_report.py)
    hw = load_hardware("h200-sxm")
    op = Op("up", "ffn", "gemm", 1.0, m=1.0, n=2 * 14336.0, k=4096.0, compute_class="bf16")
    moved = 2.0 * (1 * 4096 + 1 * 2 * 14336) + 2.0 * 2 * 14336 * 4096
    t, compute, memory = gemm_time(op, hw, ENG)
    assert float(memory) > float(compute)
    assert float(memory) == pytest.approx(
        moved / (4.8e12 * 0.835 * ENG.hbm_efficiency_scale), rel=1e-12
    )
    # the time is the memory time plus what the overlap with the math leaves exposed
    r = float(compute) / float(memory)
    assert float(t) == pytest.approx(float(memory) * (1.0 + r**3) ** (1.0 / 3.0), rel=1e-12)
    half = hw.with_overrides(hbm_efficiency=Efficiency(hw.hbm_efficiency.value / 2, "what-if"))
    assert float(gemm_time(op, half, ENG)[2]) == pytest.approx(2.0 * float(memory), rel=1e-12)
    assert hbm_bytes_per_s_achieved(half, ENG) == pytest.approx(
        4.8e12 * (0.835 / 2) * ENG.hbm_efficiency_scale
    )


def test_large_gemm_is_compute_bound_at_the_measured_ceiling():
    hw = load_hardware("h100-sxm")
    op = Op("g", "ffn", "gemm", 1.0, m=8192.0, n=8192.0, k=8192.0, compute_class="bf16")
    t, compute, memory = gemm_time(op, hw, ENG)
    achieved = 2 * 8192.0**3 / float(t)
    # the ceiling is normalized so a well-shaped 8192^3 GEMM reaches the measured MAMF fraction
    assert achieved == pytest.approx(hw.gemm_efficiency["bf16"].value * 989.4e12, rel=0.01)
    assert float(compute) > float(memory)


def test_tile_quantization_partial_tiles_cost_full_tiles():
    hw = load_hardware("h100-sxm")  # smallest tile has 64 rows
    rows, n, k = np.array([64.0, 65.0]), np.array(8192.0), np.array(8192.0)
    # grouped (expert) GEMMs pad each group to 64-row blocks: 65 rows need a second block (or a
    # 128-row one), ~2x the issued work for 1.6% more rows; the 64-row tile itself reuses
    # operands less (0.79 of a 128x256 tile), hence < 0.65
    g = gemm_shape_efficiency(hw, rows, n, k, 4.0, 1.0)
    assert g[1] < 0.65 * g[0]
    # a dense GEMM swaps A and B: the tokens pad to a multiple of 8 (72 rows), so the work
    # issued grows by 72/64 at most and the efficiency by no more than that falls
    e = gemm_shape_efficiency(hw, rows, n, k, 1.0, 1.0)
    assert 65.0 / 72.0 * 0.95 * e[0] <= e[1] <= e[0] * 1.0001


def test_wave_quantization_one_extra_tile_costs_a_wave():
    hw = load_hardware("h100-sxm").with_overrides(tile_m=128, tile_n=128, tile_cluster_sms=1)
    # 132 SMs. 12 x 11 = 132 tiles of 128x128 fill exactly one wave; 12 x 12 = 144 need two.
    k = np.array(8192.0)
    t_one = (
        2
        * 1536
        * 1408
        * 8192
        / float(gemm_shape_efficiency(hw, np.array(1536.0), np.array(1408.0), k, 1.0, 1.0))
    )
    t_two = (
        2
        * 1536
        * 1536
        * 8192
        / float(gemm_shape_efficiency(hw, np.array(1536.0), np.array(1536.0), k, 1.0, 1.0))
    )
    # 9% more work but at best (smaller tiles) ~ 1.09x time, at worst 2 waves = 2x: never < 1.09x
    assert t_two / t_one >= 1536 / 1408 - 1e-9
    hw1 = hw.with_overrides(tile_m=128, tile_n=128)
    e = gemm_shape_efficiency(
        hw1, np.array([1536.0, 1536.0]), np.array([1408.0, 1536.0]), k, 1.0, 1.0
    )
    assert e[1] < e[0]


def test_misaligned_reduction_dim_penalty_reproduces_swiglu_measurement():
    hw = load_hardware("h100-sxm")
    e = gemm_shape_efficiency(
        hw,
        np.array([4096.0, 4096.0]),
        np.array([4096.0, 4096.0]),
        np.array([10922.0, 10944.0]),
        4.0,
        1.0,
    )
    # mlengineering_swiglu_h100: 272.73 vs ~398 TFLOPS (ratio ~0.69)
    assert e[0] / e[1] == pytest.approx(MISALIGNED_FACTOR, rel=0.03)


def test_block_scaled_activations_align_by_their_elements():
    """16-byte alignment counts a GEMM's elements, not their amortized block scales (a separate
    tensor in a block-scaled GEMM): gpt-oss's W4A8 expert GEMMs on B200 (MXFP8 activations, 8 +
    8/32 bits an element; its attention is BF16, specs.checkpoint.sixteen_bit_parts) are as
    aligned as FP8 ones at K = 2880, N = 5760 (multiples of 16 one-byte elements), so the same
    shape prices the same compute; only a K off 16 elements (2,872) pays ``MISALIGNED_FACTOR``."""
    hw, eng = load_hardware("b200"), load_engine("trtllm")

    def compute(prec: str, k: float) -> float:
        ops = [o for o in step_ops(load_model("gpt-oss-120b"), parse_precision(prec), shape(64.0))
               if o.name == "experts_up"]  # fmt: skip
        op = ops[0]
        assert op.a_elem_bytes == 1.0 and op.a_bytes >= 1.0
        op = Op(op.name, op.op_class, "gemm", 1.0, m=1024.0, n=5760.0, k=k, w_bytes=op.w_bytes,
                a_bytes=op.a_bytes, compute_class="fp8", a_elem_bytes=op.a_elem_bytes)  # fmt: skip
        return float(gemm_time(op, hw, eng)[1])

    assert parse_precision("mxfp4-a8").activation_bytes == pytest.approx(1.03125)
    aligned_w4a8, aligned_fp8 = compute("mxfp4-a8", 2880.0), compute("fp8", 2880.0)
    assert aligned_w4a8 == pytest.approx(aligned_fp8, rel=1e-9)
    off = compute("mxfp4-a8", 2872.0) / compute("mxfp4-a8", 2880.0) * 2880.0 / 2872.0
    assert off == pytest.approx(1.0 / MISALIGNED_FACTOR, rel=0.05)


def test_allreduce_cost_by_hand():
    """Inside the NVLink domain the faster of a one-shot kernel (the engine's latency, every
    peer's whole buffer read: (n - 1) S bytes) and the bandwidth-optimal algorithm
    (``ALLREDUCE_LARGE_LATENCY_S`` 21.6 us, 2 (n - 1) / n S bytes); H200: 450 GB/s x 0.817."""
    hw = load_hardware("h200-sxm")
    bw = 450e9 * hw.scaleup_efficiency.value
    lat = ENG.allreduce_latency_s
    assert ALLREDUCE_LARGE_LATENCY_S == 21.6e-6
    s = 16.0e6  # large: the bandwidth-optimal algorithm
    t = float(collective_time("allreduce", np.array(s), np.array(8), hw, ENG))
    assert t == pytest.approx(21.6e-6 + 2 * 7 / 8 * s / bw, rel=1e-9)
    small = 64e3  # small: one-shot, 7 x 64 kB at the engine's latency
    t_small = float(collective_time("allreduce", np.array(small), np.array(8), hw, ENG))
    assert t_small == pytest.approx(min(lat + 7 * small / bw, 21.6e-6 + 1.75 * small / bw))
    assert t_small == pytest.approx(lat + 7 * small / bw)
    # two GPUs: one-shot moves the same bytes as the ring, at the smaller latency
    t2 = float(collective_time("allreduce", np.array(s), np.array(2), hw, ENG))
    assert t2 == pytest.approx(lat + s / bw, rel=1e-9)
    # an engine latency above the constant's holds for both algorithms (not capped at 21.6 us)
    slow = ENG.with_overrides(allreduce_latency_s=60e-6)
    t_slow = float(collective_time("allreduce", np.array(small), np.array(8), hw, slow))
    assert t_slow == pytest.approx(60e-6 + 1.75 * small / bw)
    # the time never falls as the message grows (the two branches meet continuously)
    sizes = np.geomspace(1e3, 1e9, 200)
    ts = collective_time("allreduce", sizes, np.full(sizes.shape, 8.0), hw, ENG)
    assert np.all(np.diff(ts) >= 0)
    assert float(collective_time("allreduce", np.array(s), np.array(1), hw, ENG)) == 0.0
    # beyond the NVLink domain the NIC bandwidth applies and the network latency is added
    t16 = float(collective_time("allreduce", np.array(s), np.array(16), hw, ENG))
    assert t16 > 5 * t


def test_nccl_gather_cost_by_hand():
    """All-gather and reduce-scatter on NVLink take NCCL's measured latency and link share, not
    the engine's one-shot all-reduce latency: on H200 (NVLink 4) 8 GPUs, 6.65 us + 7 x 0.85 us
    = 12.6 us, then 7/8 S at 0.509 x 450 GB/s; on B200 (NVLink 5) 9.49 + 7 x 1.22 = 18.0 us at
    0.422 x 900 GB/s; whatever the engine's all-reduce latency. AIConfigurator's nccl-tests
    tables measure 10.5-13.3 us for 64 KiB at 8 H200s and 33-45 us for 8 MiB (0.5 of the link)."""
    hw, b200 = load_hardware("h200-sxm"), load_hardware("b200")
    s = 8 * 2**20
    for coll in ("allgather", "reducescatter"):
        t = float(collective_time(coll, np.array(float(s)), np.array(8), hw, ENG))
        assert t == pytest.approx(12.6e-6 + 7 / 8 * s / (0.509 * 450e9), rel=1e-9)
        fast = ENG.with_overrides(allreduce_latency_s=1e-6)
        assert float(collective_time(coll, np.array(float(s)), np.array(8), hw, fast)) == t
        tb = float(collective_time(coll, np.array(float(s)), np.array(8), b200, ENG))
        assert tb == pytest.approx(9.49e-6 + 7 * 1.22e-6 + 7 / 8 * s / (0.422 * 900e9), rel=1e-9)
    assert 10.5e-6 < float(collective_time("allgather", np.array(65536.0), np.array(8), hw, ENG))
    assert float(collective_time("allgather", np.array(65536.0), np.array(8), hw, ENG)) < 13.3e-6
    # a fabric without NCCL tables keeps the engine's all-reduce latency and efficiency
    mi = load_hardware("mi300x")
    bw = mi.scaleup_bytes_per_s * mi.scaleup_efficiency.value
    t_mi = float(collective_time("allgather", np.array(float(s)), np.array(8), mi, ENG))
    assert t_mi == pytest.approx(ENG.allreduce_latency_s + 7 / 8 * s / bw, rel=1e-9)


def test_moe_decode_reads_only_touched_experts():
    m, hw = load_model("mixtral-8x7b"), load_hardware("h200-sxm")
    prec = parse_precision("bf16")
    up1 = next(o for o in step_ops(m, prec, shape(decode=1.0)) if o.name == "experts_up")
    # one token, top-2 of 8: exactly 2 experts touched (E x (1 - (1 - k/E)^B) = 8 x 2/8)
    assert float(up1.touched) == pytest.approx(2.0)
    up64 = next(o for o in step_ops(m, prec, shape(decode=64.0)) if o.name == "experts_up")
    assert float(up64.touched) == pytest.approx(8 * (1 - (1 - 2 / 8) ** 64))
    t1 = step_cost(m, prec, hw, ENG, shape(decode=1.0)).by_class["ffn"]
    t64 = step_cost(m, prec, hw, ENG, shape(decode=64.0)).by_class["ffn"]
    assert float(t64) > 2.5 * float(t1)  # reads ~4x the expert weights


def test_host_overlap_hides_host_work_behind_gpu_work():
    m, hw, p = load_model("llama-3.1-8b"), load_hardware("h200-sxm"), parse_precision("bf16")
    s = shape(decode=64.0, ctx=1024.0)
    base = ENG.with_overrides(step_overhead_s=1e-3, per_seq_overhead_s=10e-6)
    serial = step_cost(m, p, hw, base, s)
    hidden = step_cost(m, p, hw, base.with_overrides(host_overlap=1.0), s)
    host = 1e-3 + 64 * 10e-6
    gpu = float(serial.total_s) - host
    # fully overlapped: the step is max(gpu, host); the hidden part leaves "other"
    assert float(hidden.total_s) == pytest.approx(max(gpu, host), rel=1e-9)
    half = step_cost(m, p, hw, base.with_overrides(host_overlap=0.5), s)
    assert float(half.total_s) == pytest.approx(gpu + host - 0.5 * min(gpu, host), rel=1e-9)


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm", "b200", "mi300x"])
def test_narrow_token_tiles_help_routed_gemms_only_where_few_tokens_reach_an_expert(
    gpu, monkeypatch
):
    """Routed expert GEMMs may tile each expert's tokens 16 or 32 rows wide
    (moe_kernels.GROUPED_TOKEN_TILES, where ``grouped_token_tiles`` grants them): the best over more
    tile shapes is never worse; at ~1 token per expert (decode) the work issued falls (a 64-row
    tile for one row wastes 63); from ~100 rows per expert the wide tiles win and nothing
    changes; without them (the default) and for dense (unrouted) GEMMs nothing changes."""
    from llm_codesign import cost, moe_kernels

    hw = load_hardware(gpu)
    rows = np.array([0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 40.0, 100.0, 512.0, 1024.0, 4096.0])
    args = (rows, 4096.0, 7168.0, 32.0, 2.0, 1.0, True)
    narrow = cost.gemm_shape_efficiency(hw, *args, moe_kernels.GROUPED_TOKEN_TILES)
    wide = cost.gemm_shape_efficiency(hw, *args)
    assert np.all(narrow >= wide * (1 - 1e-12))
    assert narrow[1] > 1.5 * wide[1]  # one row per expert: a 16-row tile against a 64-row one
    big = rows >= 100
    np.testing.assert_allclose(narrow[big], wide[big], rtol=1e-12)
    dense = cost.gemm_shape_efficiency(hw, rows, 4096.0, 7168.0, 1.0, 2.0, 1.0)
    monkeypatch.setattr(moe_kernels, "GROUPED_TOKEN_TILES", ())
    np.testing.assert_array_equal(
        cost.gemm_shape_efficiency(hw, rows, 4096.0, 7168.0, 1.0, 2.0, 1.0), dense
    )


@pytest.mark.parametrize("gpu", ["h100-sxm", "b200", "l40s", "mi300x"])
def test_narrow_token_tiles_priced_only_where_they_can_win_give_the_same_numbers(gpu):
    """gemm_shape_efficiency prices a narrow token tile only where the wide shapes stay under
    its operand-reuse bound; pricing it everywhere (the definition) gives the same floats."""
    from llm_codesign import cost, moe_kernels

    hw = load_hardware(gpu)
    rng = np.random.default_rng(3)
    m = np.concatenate([rng.uniform(0, 300, 3000), np.geomspace(0.01, 8192, 400), [0.0]])
    for n, k, groups in ((4096.0, 7168.0, 32.0), (1536.0, 2048.0, 8.0), (5760.0, 2880.0, 4.0)):
        args = (m, n, k, groups, 1.5, 2.0, True)
        got = cost.gemm_shape_efficiency(hw, *args, moe_kernels.GROUPED_TOKEN_TILES)
        wide = cost.gemm_shape_efficiency(hw, *args)
        cands = cost._tile_candidates(hw)
        best_reuse = max(cost.tile_reuse(tm, tn) for tm, tn, _ in cands)
        k0 = cost.TILE_OVERHEAD_BF16_K * 1.5
        ref = wide / np.where((k % 8 == 0) & (n % 8 == 0), 1.0, cost.MISALIGNED_FACTOR)
        for tm in moe_kernels.GROUPED_TOKEN_TILES:
            eff = cost._tile_efficiency(
                hw, k0, best_reuse, True, m, n, k, groups, float(tm),
                cost.SWAP_AB_WEIGHT_TILE, 1, routing.expected_row_tiles(m, tm),
            )  # fmt: skip
            ref = np.maximum(ref, eff)
        np.testing.assert_array_equal(got, ref)
        # one configuration as a scalar, as the MoE layer validation prices it
        one = cost.gemm_shape_efficiency(hw, 3.0, n, k, groups, 1.5, 2.0, True, (16, 32))
        two = cost.gemm_shape_efficiency(hw, [3.0, 900.0], n, k, groups, 1.5, 2.0, True, (16, 32))
        assert one == two[0] > cost.gemm_shape_efficiency(hw, 3.0, n, k, groups, 1.5, 2.0, True)


def test_narrow_token_tiles_follow_the_engines_moe_kernel_path():
    """fused_moe (the Triton path of vLLM and SGLang on Hopper) tiles few tokens per expert 16
    or 32 rows wide, block-scaled FP8 weights too (the tuned configs both engines ship for
    DeepSeek-V3/R1 on H200: BLOCK_SIZE_M 16 up to 512 tokens); TRTLLM-Gen (vLLM and SGLang on
    B200, B300) in every format; the CUTLASS path keeps its 64/128-row tiles (TensorRT-LLM,
    and FlashInfer's CUTLASS MoE on the workstation Blackwell). On AMD GPUs the Triton path is
    AITER's fused MoE, whose tuner tables give 16 or 32 rows to small batches (aiter_moe.csv's
    block_m)."""
    from llm_codesign.moe_kernels import GROUPED_TOKEN_TILES, grouped_token_tiles

    h100, b200 = load_hardware("h100-sxm"), load_hardware("b200")
    vllm, trt = load_engine("vllm"), load_engine("trtllm")
    assert grouped_token_tiles(h100, vllm, "fp8") == GROUPED_TOKEN_TILES == (16, 32)
    assert grouped_token_tiles(h100, vllm, "mxfp4") == GROUPED_TOKEN_TILES
    assert grouped_token_tiles(h100, vllm, "fp8_block") == GROUPED_TOKEN_TILES
    assert grouped_token_tiles(h100, trt, "fp8") == ()
    assert grouped_token_tiles(b200, vllm, "nvfp4") == GROUPED_TOKEN_TILES  # TRTLLM-Gen
    assert grouped_token_tiles(b200, vllm, "fp8_block") == GROUPED_TOKEN_TILES
    assert grouped_token_tiles(b200, trt, "nvfp4") == ()
    assert grouped_token_tiles(load_hardware("rtx-pro-6000"), vllm, "nvfp4") == ()
    assert grouped_token_tiles(load_hardware("mi300x"), vllm, "fp8") == GROUPED_TOKEN_TILES


def test_aiter_block_m_and_fixed_time_agree_with_its_tuner_tables():
    """AITER's fused-MoE tuner tables (data/validation/aiter_moe.csv, ROCm/aiter @e4048607) pick
    16- or 32-row token tiles at small batches, which ``GROUPED_TOKEN_TILES`` prices; and a layer
    of a few tokens never takes less than 18.5 us, however little it streams: the fixed time
    (``AITER_MOE_LAYER_S``) sits under the fastest small-batch layer measured and is added per
    MoE layer only where AITER's kernels run (vLLM / SGLang on AMD, not NVIDIA or TensorRT-LLM)."""
    from llm_codesign.moe_kernels import AITER_MOE_LAYER_S, GROUPED_TOKEN_TILES, moe_layer_fixed_s
    from llm_codesign.specs.engine import load_engine as eng_of
    from llm_codesign.validate.tables import bundled_rows

    rows = bundled_rows("aiter_moe.csv")
    small = [r for r in rows if int(r["tokens"]) <= 256]
    narrow = sum(int(r["block_m"]) in GROUPED_TOKEN_TILES for r in small if r["block_m"] != "1")
    assert narrow >= 0.85 * sum(r["block_m"] != "1" for r in small)  # 415 of 462
    fastest = min(float(r["time_us"]) for r in rows if int(r["tokens"]) <= 16)
    assert 0 < AITER_MOE_LAYER_S < fastest * 1e-6
    vllm = eng_of("vllm")
    amd, nv = load_hardware("mi355x"), load_hardware("h200-sxm")
    assert moe_layer_fixed_s(amd, vllm) == vllm.moe_layer_overhead_s + AITER_MOE_LAYER_S
    assert moe_layer_fixed_s(nv, vllm) == vllm.moe_layer_overhead_s


def test_expected_row_tiles_is_the_poisson_expectation():
    """E[ceil(X / 64) | X > 0] for X ~ Poisson(mu), summed exactly, against the smooth form the
    grouped GEMMs of routed experts use; a mean of 64 rows is ~1.47 tiles, not 1."""
    from math import ceil, exp, lgamma, log

    from llm_codesign.cost import expected_row_tiles

    def exact(mu: float) -> float:
        n = int(mu + 20 * mu**0.5 + 50)
        pmf = [exp(-mu + j * log(mu) - lgamma(j + 1)) for j in range(n)]
        return sum(ceil(j / 64) * pmf[j] for j in range(1, n)) / (1.0 - pmf[0])

    for mu in (0.5, 10.0, 63.0, 64.0, 65.0, 128.0, 500.0, 2048.0):
        assert float(expected_row_tiles(np.array(mu), 64.0)) == pytest.approx(exact(mu), abs=0.02)
    # smooth across a tile boundary, where ceil of the mean jumps from 1 to 2
    t = expected_row_tiles(np.array([63.9, 64.0, 64.1]), 64.0)
    assert np.all(np.diff(t) > 0) and np.all(np.diff(t) < 0.01)


@settings(max_examples=200, deadline=None)
@given(  # op times: 0 or 1 ps .. 1000 s (the cubes of times under ~1e-100 s would underflow)
    c=st.just(0.0) | st.floats(min_value=1e-12, max_value=1e3),
    m=st.just(0.0) | st.floats(min_value=1e-12, max_value=1e3),
    dc=st.floats(min_value=0.0, max_value=10.0),
)
def test_gemm_overlap_time_lies_between_the_max_and_the_sum(c, m, dc):
    t = float(gemm_overlap_time(np.array(c), np.array(m)))
    assert max(c, m) * (1 - 1e-12) <= t <= (c + m) * (1 + 1e-12)
    assert t == float(gemm_overlap_time(np.array(m), np.array(c)))  # symmetric
    assert float(gemm_overlap_time(np.array(c + dc), np.array(m))) >= t * (1 - 1e-12)  # monotone


def test_gemm_overlap_time_by_hand():
    # exponent 3: at the ridge 2^(1/3) x the max; one side zero: the other
    t = gemm_overlap_time(np.array([1.0, 1.0, 2.0, 0.0]), np.array([1.0, 0.5, 0.0, 0.0]))
    assert t == pytest.approx([2 ** (1 / 3), 1.125 ** (1 / 3), 2.0, 0.0], rel=1e-12)


def test_b200_fp4_gemm_reaches_the_measured_cublaslt_rate():
    # deepseek-ai/DeepGEMM PR #348 (2026-06-01): cuBLASLt (cublasTest 13.3) MXFP4 x MXFP4
    # 8192^3 on B200 at 5,239 TFLOPS of 9,000 dense FP4 (DeepGEMM's own kernel 5,702); before,
    # FP4 borrowed FP8's MAMF fraction (0.763: 6,867 TFLOPS)
    hw = load_hardware("b200")
    op = Op(
        "g", "ffn", "gemm", 1.0, m=8192.0, n=8192.0, k=8192.0,
        w_bytes=0.5625, a_bytes=0.5625, compute_class="nvfp4",
    )  # fmt: skip
    t = float(gemm_time(op, hw, ENG)[0])
    assert 2 * 8192.0**3 / t == pytest.approx(5239e12, rel=0.01)


def test_gemm_overlap_tracks_deepgemm_kernel_measurements():
    # the 28 DeepGEMM FP8 rows of the shipped gemm.csv (H800; dense M = 64..4096 and grouped
    # layouts, DeepGEMM README 2025-03): median |error| 7.4%, p90 15.9% with the overlap;
    # 8.8% / 24.2% with max(compute, memory) (cost.gemm_overlap_time)
    from llm_codesign.validate import bundled_data, validate

    rep = validate(bundled_data("gemm.csv"))
    err = np.array(
        [abs(r["error"]) for r in rep.to_dict()["rows"] if r["source_id"].startswith("deepgemm")]
    )
    assert len(err) == 28
    assert np.median(err) <= 0.08 and np.percentile(err, 90) <= 0.17


def test_decode_attention_compute_reproduces_the_measured_mla_kernels():
    # a compute-bound MLA decode (128 heads per latent KV): the GPU files' measured kernels
    # (TensorRT-LLM's MLA generation as AIConfigurator measured it, fitted by
    # benchmarks/mla_decode_report.py: 653 TFLOPS in BF16 on H100/H800, FlashMLA's README gives
    # 660 on H800; 1,260 on B200), whatever the engine's prefill attention efficiency
    flops = 2.0 * 256 * 128 * 4096 * (576 + 512)
    kv_bytes = 256 * 4096 * 576 * 2.0
    for gpu, tflops in (("h800-sxm", 653.0), ("b200", 1260.0)):
        op = Op(
            "attention_decode", "attention", "attention", 1.0, flops=flops, bytes=kv_bytes,
            phase="decode", compute_class="bf16",
        )  # fmt: skip
        for eng in (ENG, ENG.with_overrides(attn_prefill_efficiency=0.9)):
            _, compute, _ = attention_time(op, load_hardware(gpu), eng)
            assert flops / float(compute) == pytest.approx(tflops * 1e12, rel=0.01)
    # a GPU without a measurement keeps the engine's constant
    hw = load_hardware("h20")
    _, compute, _ = attention_time(op, hw, ENG)
    assert float(compute) == pytest.approx(
        flops / (hw.peak_flops("bf16") * ENG.attn_prefill_efficiency), rel=1e-12
    )


@pytest.mark.parametrize("field", ["attention_decode", "grouped_gemm"])
def test_per_class_efficiencies_must_name_a_class_of_the_gpu(field):
    """efficiency.attention_decode and efficiency.grouped_gemm: a class the GPU has no peak for
    is refused with the allowed classes named, a value above 1 as not a fraction."""
    from importlib import resources

    import yaml

    from llm_codesign.errors import SpecError
    from llm_codesign.specs.hardware import hardware_from_mapping

    path = resources.files("llm_codesign") / "data" / "hardware" / "h100-sxm.yaml"
    data = yaml.safe_load(path.read_text())
    data["efficiency"][field] = {"nvfp4": {"value": 0.5, "source": "x"}}
    with pytest.raises(SpecError, match="'nvfp4' is not a compute class of this GPU.*; allowed"):
        hardware_from_mapping(data, "test.yaml")
    data["efficiency"][field] = {"bf16": {"value": 1.5, "source": "x"}}
    with pytest.raises(SpecError, match="fraction"):
        hardware_from_mapping(data, "test.yaml")


def test_grouped_gemm_may_key_a_block_scaled_weight_format():
    """efficiency.grouped_gemm also takes a block-scaled weight format (fp8_block) of a class the
    GPU has; a format the list does not name, or one of a class the GPU lacks, is refused with the
    allowed keys named."""
    from importlib import resources

    import yaml

    from llm_codesign.errors import SpecError
    from llm_codesign.specs.hardware import hardware_from_mapping

    root = resources.files("llm_codesign") / "data" / "hardware"
    data = yaml.safe_load((root / "h100-sxm.yaml").read_text())
    data["efficiency"]["grouped_gemm"] = {"fp8_block": {"value": 0.5, "source": "x"}}
    hw = hardware_from_mapping(data, "test.yaml")
    assert hw.grouped_gemm_efficiency_for("fp8", "fp8_block").value == 0.5
    assert hw.grouped_gemm_efficiency_for("fp8", "fp8").value == 1.0
    data["efficiency"]["grouped_gemm"] = {"fp8_channel": {"value": 0.5, "source": "x"}}
    with pytest.raises(SpecError, match="grouped-GEMM rate of its own; allowed: .*fp8_block"):
        hardware_from_mapping(data, "test.yaml")
    a100 = yaml.safe_load((root / "a100-sxm-80gb.yaml").read_text())
    a100["efficiency"]["grouped_gemm"] = {"fp8_block": {"value": 0.5, "source": "x"}}
    with pytest.raises(SpecError, match="'fp8_block' is not a compute class of this GPU"):
        hardware_from_mapping(a100, "test.yaml")


def test_estimate_states_the_decode_attention_fraction_it_used():
    from llm_codesign import api
    from llm_codesign.specs.plan import ParallelPlan
    from llm_codesign.specs.workload import Workload

    wl = Workload(isl=1024, osl=128, concurrency=8)
    e = api.estimate("deepseek-r1", "h200-sxm", "fp8", ParallelPlan(tp=8), wl, explain=False)
    a = e.assumptions()["attention_decode_efficiency"]
    assert a["compute_class"] == "fp8" and a["value"] == pytest.approx(0.400)
    assert "TensorRT-LLM" in a["source"] and "generation_mla_perf" in a["source"]
    # the measured kernel's terms (schema 12): latent-cache fraction, per query head, per call
    assert (a["hbm"], a["per_query_head_s"], a["per_call_s"]) == pytest.approx(
        (0.60, 2.2e-9, 32.2e-6)
    )
    e = api.estimate("deepseek-r1", "h20", "fp8", ParallelPlan(tp=8), wl, explain=False)
    a = e.assumptions()["attention_decode_efficiency"]
    assert a["value"] == e.engine.attn_prefill_efficiency and "engine constant" in a["source"]


def test_amd_gemm_kernels_time_as_kernels_that_do_not_split_k():
    # AITER's tuned BF16 GEMMs on gfx950 (MI355X; data/validation/aiter_gemm.csv, the tuner's
    # best kernel per shape): with 65-2,048 rows (too few 256 x 256 tiles to fill 256 CUs) they
    # run as kernels that leave K whole (only row tiles of 16 or fewer split K: the file's
    # gemm_tile.split_k_rows); priced as if every tile split K across the idle CUs (NVIDIA's
    # cuBLAS / CUTLASS), they would be ~40% faster
    import csv
    import dataclasses

    from llm_codesign.validate import bundled_data

    hw = load_hardware("mi355x")
    assert hw.split_k_rows == 16 and load_hardware("h200-sxm").split_k_rows is None
    eng = load_engine("vllm")
    rows = [
        r
        for r in csv.DictReader(bundled_data("aiter_gemm.csv").open())
        if r["gpu"] == "MI355X" and 65 <= int(r["m"]) <= 2048
    ]
    assert len(rows) > 1000

    def errors(spec):
        out = []
        for r in rows:
            op = Op(
                "g", "ffn", "gemm", 1.0, m=float(r["m"]), n=float(r["n"]), k=float(r["k"]),
                w_bytes=2.0, a_bytes=2.0, compute_class="bf16",
            )  # fmt: skip
            t = float(gemm_time(op, spec, eng)[0]) + eng.kernel_overhead_s
            out.append(t / (float(r["time_us"]) * 1e-6) - 1.0)
        return np.array(out)

    bundled = errors(hw)
    split = errors(dataclasses.replace(hw, split_k_rows=None))
    # the rule is the dense GEMMs': a batched one (MLA's absorbed heads) keeps splitting K
    op = Op(
        "g", "attention", "gemm", 1.0, m=4.0, n=128.0, k=512.0, groups=16.0,
        w_bytes=2.0, a_bytes=2.0, compute_class="bf16",
    )  # fmt: skip
    free = dataclasses.replace(hw, split_k_rows=None)
    assert float(gemm_time(op, hw, eng)[0]) == float(gemm_time(op, free, eng)[0])
    assert abs(np.median(bundled)) <= 0.10 and np.median(np.abs(bundled)) <= 0.35
    assert np.median(split) <= -0.30


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 8192),
    n=st.sampled_from([512, 1024, 2880, 4096, 7168, 14336]),
    k=st.sampled_from([256, 1024, 2048, 7168, 16384]),
)
def test_a_gemm_without_split_k_is_never_faster(m, n, k):
    # leaving K whole (no row tile narrow enough to split) can only issue more work per tile
    # than splitting it across idle SMs
    import dataclasses

    for gpu in ("h200-sxm", "mi355x"):
        hw = load_hardware(gpu)
        op = Op(
            "g", "ffn", "gemm", 1.0, m=float(m), n=float(n), k=float(k),
            w_bytes=2.0, a_bytes=2.0, compute_class="bf16",
        )  # fmt: skip
        whole = float(gemm_time(op, dataclasses.replace(hw, split_k_rows=1), ENG)[0])
        split = float(gemm_time(op, dataclasses.replace(hw, split_k_rows=None), ENG)[0])
        assert whole >= split * (1.0 - 1e-9)


def test_amd_grouped_gemm_shares_reproduce_aiters_fused_moe_kernels():
    # AITER's fused-MoE tuner tables on gfx950 (MI355X; data/validation/aiter_moe.csv: the two
    # grouped GEMM stages, random top-k routing): at 1,024 tokens or more (compute-bound) the
    # grouped GEMMs reach a share of the dense ceiling (efficiency.grouped_gemm: BF16 0.65, FP8
    # 0.55, MXFP4 0.6); at the dense ceiling they would be priced 29-43% fast
    import csv
    import dataclasses
    import importlib

    moe_layer = importlib.import_module("llm_codesign.validate.moe_layer")
    from llm_codesign.validate import bundled_data

    precision = {"bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8+fp8_block-w"}
    precision["mxfp4"] = "mxfp4+mxfp4-w"  # weights and activations (moe_layer reads W4A16)
    eng = load_engine("sglang").with_overrides(
        moe_kernels="triton", moe_kernels_weight_only="same", expert_balancer="uniform"
    )
    rows = [
        r
        for r in csv.DictReader(bundled_data("aiter_moe.csv").open())
        if r["gpu"] == "MI355X" and int(r["tokens"]) >= 1024
    ]
    hw = load_hardware("mi355x")
    dense = dataclasses.replace(hw, grouped_gemm_efficiency={})

    def bias(spec, cls):
        errs = []
        for r in rows:
            if r["dtype"].split("_")[0] != cls:
                continue
            _, parts = moe_layer.moe_layer_time(
                spec, eng, precision[r["dtype"]], int(r["tokens"]), int(r["experts"]),
                int(r["experts"]), int(r["top_k"]), int(r["hidden"]),
                int(r["expert_intermediate"]),
            )  # fmt: skip
            t = parts["experts_up"] + parts["experts_down"] + 2 * eng.kernel_overhead_s
            errs.append(t / (float(r["time_us"]) * 1e-6) - 1.0)
        return len(errs), float(np.median(errs))

    for cls, count in (("bf16", 6), ("fp8", 108), ("mxfp4", 185)):
        n, own = bias(hw, cls)
        assert n == count and abs(own) <= 0.05
        assert bias(dense, cls)[1] <= -0.25
