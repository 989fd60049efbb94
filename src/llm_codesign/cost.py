"""Cost: time of each op on a hardware spec (roofline with GEMM tile and wave quantization,
attention kernels, collectives), vectorized over numpy arrays.

GEMM model (DESIGN.md, ``reference/codesign.md`` A2-A3 and C7-C8):
  * tile quantization: partial edge tiles cost full tiles: ceil(M/TM) x ceil(N/TN) tiles;
  * wave quantization: tiles run in waves of ``sm_count / cluster_sms`` concurrent tiles;
  * per-tile fixed cost (prologue, epilogue) of ``TILE_OVERHEAD_BF16_K`` BF16 k-steps, scaled
    by the format's speed (the same time in more k for faster formats): the K-saturation of
    NVIDIA's GB300 sweep (80% of sustained throughput needs K > 3072);
  * the best of a few tile shapes per architecture (smaller tiles waste less on edges but
    reuse operands less: relative efficiency 1 / (1 + TILE_REUSE_C (1/TM + 1/TN)));
  * a ceiling: the measured MAMF fraction of the GPU (hardware file) times the engine's
    ``gemm_scale``; a misalignment penalty (:func:`alignment_factor`; H100 SwiGLU d_ff = 10922
    vs 10944: 272.73 vs ~398 TFLOPS, gemm.csv);
  * memory-bound small-M case: bytes of A, B (weights: only experts touched) and C over the
    achieved HBM bandwidth (:func:`hbm_bytes_per_s_achieved`).
Time = the smooth maximum ``gemm_overlap_time`` of compute and memory (a kernel overlaps its operand
streaming with its math imperfectly near the ridge); per-kernel fixed overheads are added per step
in serving.

MoE (``reference/moe-comm.md``): each group (expert) of a grouped GEMM pays a fixed
``GROUPED_GEMM_GROUP_ROWS`` rows of compute on top of its tiles; the busiest EP rank carries
:func:`moe_rank_imbalance` times the mean load over the experts it touches, more than the mean
rank's at a small batch (:func:`routing.busiest_rank_experts`: their weights bound the step there)
(vLLM's DeepGEMM MoE computes its worst-case rows: ``moe_kernels.padded_rows``); a fixed
``moe_layer_overhead_s`` per MoE layer covers the launches of the routing, sort, permute and
finalize kernels, and the bytes the permute and finalize stream follow the engine's kernel path
(:func:`moe_permute_time`); dispatch and combine by ``comm.moe_comm_time`` (collectives:
:mod:`llm_codesign.comm`).
"""

from __future__ import annotations

import numpy as np

from .attention_kernels import (
    INDEXER_DECODE_HBM,
    attention_rate_class,
    decode_attention_efficiency,
    fp8_kv_decode_rate,
    indexer_streams,
    msa_prefill_rate,
    sparse_cache_scale,
    sparse_kernel,
)
from .comm import collective_time, fed_every_token, moe_comm_time
from .distinct import distinct
from .mixers import prefill_head_dim_share
from .moe_kernels import (
    busiest_rank_rows,
    fuses_activation,
    grouped_block_efficiency,
    grouped_share,
    grouped_token_tiles,
    marlin_share,
    moe_kernel_path,
    moe_layer_fixed_s,
    padded_rows,
    takes_weight_only_path,
    trtllm_gen_idle_time,
    weight_only_tiles,
)
from .ops import Op
from .routing import expected_row_tiles
from .specs.engine import EngineConstants
from .specs.hardware import HardwareSpec

Array = np.ndarray

TILE_OVERHEAD_BF16_K = 128.0  # per-tile fixed cost in BF16 k-steps (fits blog Fig. 4 K-sweep)
TILE_REUSE_C = 32.0  # operand-reuse constant of the tile-shape efficiency
SPLIT_K_MIN = 256.0  # smallest K slice worth a split-K partition
# misaligned dims lose TMA (alignment_factor): mlengineering_swiglu_h100, 272.73 / 397.5 = 0.686
MISALIGNED_FACTOR = 272.73 / 397.5

# MAMF is measured on large aligned shapes; the ceiling is normalized to reproduce it at 8192^3
_REFERENCE_SHAPE = (8192.0, 8192.0, 8192.0)

# The MoE kernels around the grouped GEMMs that stream bytes growing with the tokens, per kernel
# path (``specs.engine.MOE_KERNELS``, ``moe_kernels.moe_kernel_path``); the GEMMs' own operands and
# outputs are the GEMMs', and the launches are in ``moe_layer_overhead_s``. Bytes per layer, with
# T tokens through the layer on this GPU, P = T x top_k / ep routed (token, local expert) pairs,
# d the hidden size and a the activation format's bytes per element:
#   cutlass: TensorRT-LLM's MoE runner (FlashInfer's cutlass_fused_moe is the same code):
#     expandInputRows reads each token in BF16 and writes one quantized copy per pair,
#     2 T d + a P d; the finalize is fused into GEMM2's epilogue (a scatter-add of the GEMM's own
#     output; TensorRT-LLM's moe plugin use_fused_finalize_, FlashInfer's use_fused_finalize,
#     both on by default);
#   triton: vLLM/SGLang fused_moe: GEMM1 gathers the tokens through the sorted ids (no copy);
#     the tokens are quantized once where the activations are narrower than BF16 (2 T d + a T d)
#     and moe_sum reads the pairs' BF16 outputs and writes the token sums (2 P d + 2 T d).
#     Fed every token (expert parallelism without a dispatch: no attention-DP, or an
#     all-gather), the kernel also meets the pairs routed to other GPUs' experts: their blocks
#     write zeros to GEMM1's and GEMM2's outputs and the activation and moe_sum run over them,
#     2 (2 w + w / g + 2 d) bytes per such pair, w = GEMM1's width, g its matrices
#     (vllm-project/vllm fused_moe.py fused_moe_kernel: expert id -1 -> write_zeros_to_output;
#     the workspace and moe_sum span every top-k slot). AIConfigurator's vLLM 0.19 EP8 modules
#     (moe_layer.csv, 52 rows): median error -32% without this term, -5.5% with it;
#   trtllm_gen: TRTLLM-Gen gathers the tokens by its routing kernel's permutation and sums the
#     pairs in a finalize, as triton's base bytes; fed only its own pairs (moe_kernels.py);
#   deepgemm: vLLM 0.12's DeepGEMM MoE, triton's bytes, plus the activation and its FP8
#     quantization over every padded row R, R (2 w + w / g) (moe_kernels.padded_rows, whose rows
#     already hold the pairs routed off the GPU).
# Checked against published fused-MoE kernel times (data/validation/moe_layer.csv).
# Grouped GEMMs lose throughput as rows per group fall, beyond what tile quantization explains:
# DeepGEMM FP8 masked grouped GEMM on H800 (moe-comm.md 2, DGEMM), relative to one group of 1024
# rows: 2 x 512 rows 0.84 / 0.99, 4 x 256 rows 0.76 / 0.88 (N x K = 4096 x 7168 / 7168 x 2048; our
# tile/wave model gives 1.0 for all of them). A fixed cost per group of R0 rows at the dense
# ceiling, factor 1 / (1 + R0 / rows), fits both: R0 = 256 (1/0.82 - 1) = 56 at 256 rows and 512
# (1/0.915 - 1) = 48 at 512 rows, so R0 = 50. Below R0 rows a group pays its own rows again at most
# (small-M decode kernels swap A and B, no 64-row padding to fill).
GROUPED_GEMM_GROUP_ROWS = 50.0
# A GEMM kernel does not hide its operand streaming behind its math perfectly: near the ridge
# (compute time ~ memory time) it runs slower than max(compute, memory). Time = hi x (1 + (lo /
# hi)^P)^(1/P) = (c^P + m^P)^(1/P) (``gemm_overlap_time``, P = 3): max() as P -> inf, compute +
# memory at P = 1, 2^(1/P) x max() at the ridge. P is a documented fit to kernel measurements, not
# to serving rows: over the 28 DeepGEMM FP8 rows of the shipped gemm.csv (data/validation; H800,
# dense M = 64..4096 and grouped 1..8 groups; `llm-codesign validate --data .../gemm.csv`), median
# |error| / p90 / bias of predicted TFLOPS are 8.8% / 24.2% / +3.8% with max() (P = inf), 7.9 / 18.0
# / +3.5 at P = 4, 7.8 / 16.4 / +2.8 at 3.5, 7.4 / 15.9 / +1.3 at 3, 7.0 / 17.4 / -1.0 at 2.5 and
# 6.6 / 19.6 / -4.9 at 2; P = 3 has the smallest tail and bias. The 15 MAMF rows (compute-bound, far
# from the ridge) move by under 0.5 points.
# swap-AB GEMMs (the small-M decode kernels of TensorRT-LLM and CUTLASS): the token dimension
# rides on the MMA's N, a multiple of 8 up to 256 (PTX ISA, wgmma.mma_async shapes m64nNk16;
# Blackwell tcgen05.mma N likewise), so a batch pads to 8 rows, not to a 64/128-row tile
SWAP_AB_ROW_STEP = 8.0
SWAP_AB_MAX_ROWS = 256.0
SWAP_AB_WEIGHT_TILE = 128.0  # the weight side: two 64-row warpgroup MMAs
SWAP_AB_EXTRA_SPLITS = 3  # splits into 1..3 more tiles than the fewest are tried too


def _tile_candidates(hw: HardwareSpec) -> list[tuple[int, int, int]]:
    tm, tn, c = hw.tile_m, hw.tile_n, hw.tile_cluster_sms
    cands = {
        (tm, tn, c),
        (max(tm // 2, 64), tn, max(c // 2, 1)),
        (tm, max(tn // 2, 64), c),
        (max(tm // 2, 64), max(tn // 2, 64), max(c // 2, 1)),
        (64, 128, 1),
    }
    return sorted(cands)


def tile_reuse(tm: float, tn: float) -> float:
    """A tm x tn tile's operand reuse, 1 / (1 + TILE_REUSE_C (1/tm + 1/tn)) (advise.gemm too)."""
    return 1.0 / (1.0 + TILE_REUSE_C * (1.0 / tm + 1.0 / tn))


def _tile_efficiency(hw: HardwareSpec, k0: float, best_reuse: float, routed: bool, m: Array,
                     n: Array, k: Array, groups: Array, tm: float | Array, tn: float, c: int,
                     m_tiles: Array) -> Array:  # fmt: skip
    """Useful over issued work of one tile shape (tm x tn on clusters of c SMs, ``m_tiles`` row
    tiles per group) x its operand reuse over the best shape's (``gemm_shape_efficiency``)."""
    slots = max(hw.sm_count // c, 1)
    # groups (experts) run as one grouped launch: tiles of all groups share the waves (rows are
    # float token counts: one a rounding error above a tile boundary is on it)
    tiles = m_tiles * np.ceil(n / tn - 1e-9) * np.maximum(groups, 1e-9)
    tiles = np.maximum(tiles, 1e-9)

    def issued_at(t: Array, kk: Array = k) -> Array:
        # split-K: too few output tiles to fill the GPU -> split K across idle SMs (cuBLAS
        # and CUTLASS stream-K / split-K kernels), keeping at least SPLIT_K_MIN of K each;
        # a dense GEMM's (one group) row tiles wider than the GPU's split-K kernels' do not
        # split (``HardwareSpec.split_k_rows``; grouped and batched GEMMs keep splitting)
        most = np.maximum(np.floor(kk / SPLIT_K_MIN), 1.0)
        if hw.split_k_rows is not None and not routed:
            whole = (np.asarray(tm) > hw.split_k_rows) & (np.asarray(groups) <= 1.0)
            most = np.where(whole, 1.0, most)
        splits = np.clip(np.floor(slots / t), 1.0, most)
        waves = np.ceil(t * splits / slots - 1e-9)
        return waves * slots * tm * tn * (kk / splits + k0)

    if routed:
        # a launch has a whole number of tiles, chosen (splits, waves) on that number: the
        # expected work over the two whole counts around the expected one (the narrowest
        # spread with that mean), so a fraction of a tile does not switch the split
        lo_t = np.maximum(np.floor(tiles), 1.0)
        w = np.clip(tiles - lo_t, 0.0, 1.0)
        issued = (1.0 - w) * issued_at(lo_t) + w * issued_at(lo_t + 1.0)
        few = tiles < 1.0  # under one tile: the fraction itself (priced where it occurs)
        if np.ndim(tm) > 0 or np.broadcast(tiles, k).shape != few.shape:
            # (swap-AB widths, or a K, that vary where the tile counts do not)
            issued = np.where(few, issued_at(tiles), issued)
        elif np.any(few):
            issued = np.array(np.broadcast_to(issued, few.shape))
            issued[few] = issued_at(tiles[few], np.broadcast_to(k, few.shape)[few])
    else:
        issued = issued_at(tiles)
    useful = m * n * np.maximum(groups, 1e-9) * k
    return useful / np.maximum(issued, 1e-30) * tile_reuse(tm, tn) / best_reuse


def alignment_factor(n: Array, k: Array, elem_bytes: float) -> Array:
    """``MISALIGNED_FACTOR`` where n or k is not a multiple of 16 bytes of ``elem_bytes``-wide
    elements (the element alone: a block-scaled format's scales are a tensor apart; sub-byte
    elements count as 1 byte, wider than 2 as 2), else 1."""
    align = 16.0 / (min(elem_bytes, 2.0) if elem_bytes >= 1 else 1.0)
    return np.where((np.mod(k, align) == 0) & (np.mod(n, align) == 0), 1.0, MISALIGNED_FACTOR)


def gemm_shape_efficiency(
    hw: HardwareSpec,
    m: Array,
    n: Array,
    k: Array,
    groups: Array | float,
    speed_ratio: float,
    elem_bytes: float = 2.0,
    routed: bool = False,
    token_tiles: tuple[int, ...] = (),
    row_tiles: dict[int, Array] | None = None,
) -> Array:
    """Fraction of the sustained ceiling a GEMM of this shape reaches (tile, wave, K overhead,
    alignment), best over tile shapes. 1.0 = a perfectly shaped, large GEMM. ``token_tiles``:
    the narrow token tiles a routed GEMM's kernel may use per expert (``grouped_token_tiles``;
    none unless the caller names them). ``row_tiles``: expected row tiles per tile height of
    routed rows ``m``, shared by the GEMMs of those rows (read where present, else filled)."""
    m = np.maximum(np.asarray(m, dtype=float), 0.0)
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    groups = np.asarray(groups, dtype=float)
    cands = _tile_candidates(hw)
    best_reuse = max(tile_reuse(tm, tn) for tm, tn, _ in cands)
    k0 = TILE_OVERHEAD_BF16_K * speed_ratio
    best = np.zeros(np.broadcast(m, n, k, groups).shape)
    # swap-AB kernels put the tokens on the MMA's N side, whose width is any multiple of
    # SWAP_AB_ROW_STEP up to SWAP_AB_MAX_ROWS (Hopper wgmma m64nNk16, Blackwell tcgen05): the
    # rows split into t tiles, each as narrow as its share allows, for the fewest t and a few
    # more (a split into more, narrower tiles can finish in the same waves: trying them keeps the
    # best time from falling as rows are added) (dense GEMMs only: grouped expert GEMMs, e.g.
    # DeepGEMM's masked layout, pad each group to 64/128-row blocks)
    dense = groups <= 1.0
    fewest = np.maximum(np.ceil(m / SWAP_AB_MAX_ROWS - 1e-9), 1.0)
    swap = []
    # (none where every GEMM is grouped: their swap-AB tiles are 1e30 wide, never the best)
    for extra in range(SWAP_AB_EXTRA_SPLITS + 1 if np.any(dense) else 0):
        t = fewest + extra
        width = np.maximum(
            np.ceil(m / t / SWAP_AB_ROW_STEP - 1e-9) * SWAP_AB_ROW_STEP, SWAP_AB_ROW_STEP
        )
        swap.append((width, SWAP_AB_WEIGHT_TILE, 1, np.where(dense, t, 1e30)))
    # ``routed``: each group's rows are random (tokens routed to experts), so its tiles are an
    # expectation over that spread (``expected_row_tiles``; a benchmark's fixed rows: the ceil)
    tiles_of = row_tiles if routed and row_tiles is not None else {}  # per tile height
    for tm, _, _ in cands:
        if tm not in tiles_of:
            tiles_of[tm] = expected_row_tiles(m, tm) if routed else np.ceil(m / tm - 1e-9)
    shapes = [(float(tm), float(tn), c, tiles_of[tm]) for tm, tn, c in cands] + swap
    shape_args = (hw, k0, best_reuse, routed)
    for tm, tn, c, m_tiles in shapes:
        best = np.maximum(best, _tile_efficiency(*shape_args, m, n, k, groups, tm, tn, c, m_tiles))
    # narrow token tiles of routed GEMMs (``grouped_token_tiles``): a tile shape issues at least
    # the useful work (to the 1e-9 of its wave count), so its efficiency is at most its operand
    # reuse over the best one's; it is priced only where the shapes above stay under that (at
    # decode sizes): the same numbers as everywhere, at a fraction of the row-tile series
    for tm in token_tiles if routed else ():
        tn = SWAP_AB_WEIGHT_TILE
        cap = tile_reuse(tm, tn) / best_reuse * (1.0 + 1e-6)
        open_ = np.flatnonzero(best.ravel() < cap)
        if not open_.size:
            continue
        at = [np.broadcast_to(x, best.shape).ravel()[open_] for x in (m, n, k, groups)]
        m_tiles = expected_row_tiles(at[0], tm, widest=float(np.max(m, initial=0.0)))
        eff = _tile_efficiency(*shape_args, *at, float(tm), tn, 1, m_tiles)
        flat = np.array(best, dtype=float).reshape(-1)  # (a copy: best may be a 0-d scalar)
        flat[open_] = np.maximum(flat[open_], eff)
        best = flat.reshape(np.shape(best))
    return best * alignment_factor(n, k, elem_bytes)


# Dense (unrouted) GEMMs: every tile count above is an integer function of
# ceil(m / multiple of 8 - 1e-9) (tile heights 64/128/256, swap-AB widths in steps of 8 per
# tile), so the work issued is constant for rows m in (8(j-1), 8j] and the efficiency is linear
# in m there: eff(m) = m x eff(8j) / 8j. ``_unrouted_efficiency`` reads eff(8j) / 8j from a table
# per (tiles and SMs of the GPU, n, k, groups, format) shape, kept for the process
# (``_EFF_TABLES``, at most ``_TABLE_CACHE`` shapes), instead of pricing every tile shape for
# every configuration. Rows within ``_TABLE_EDGE`` above a multiple of 8 (where the 1e-9 offsets
# of different tile quanta disagree) are priced directly.
_TABLE_ROW = 8.0
_TABLE_EDGE = 1e-6
_TABLE_SHAPES = 16  # beyond this many distinct shapes in one call, price directly
_TABLE_CACHE = 4096
_EFF_TABLES: dict[tuple, Array] = {}


def _unrouted_efficiency(
    hw: HardwareSpec,
    m: Array,
    n: Array,
    k: Array,
    groups: Array | float,
    speed_ratio: float,
    elem_bytes: float,
) -> Array:
    """``gemm_shape_efficiency(hw, m, n, k, groups, speed_ratio, elem_bytes)`` (unrouted) from
    per-shape tables (``_EFF_TABLES``): the same numbers to rounding."""
    m = np.maximum(np.asarray(m, dtype=float), 0.0)
    raw = [np.asarray(x, dtype=float) for x in (n, k, groups)]
    shape = np.broadcast(m, *raw).shape
    m = np.broadcast_to(m, shape).ravel()
    j = np.ceil(m / _TABLE_ROW - 1e-9)
    # (m >= 0: at m = 0, j = 0 and the gap is 8, never an edge)
    edge = m - (j - 1.0) * _TABLE_ROW <= _TABLE_EDGE * _TABLE_ROW
    # one shape for every configuration (n, k, groups constant, checked before broadcasting)
    single = all(r.size == 0 or r.min() == r.max() for r in raw)
    if single:
        combos = [tuple(float(r.flat[0]) if r.size else 0.0 for r in raw)]
    else:  # a few shapes (the plans of a chunk): found by comparison, no sort
        dims = [np.broadcast_to(r, shape).ravel() for r in raw]
        key = (dims[0] * 1048576.0 + dims[1]) * 2048.0 + dims[2]
        exact = all(np.all(d == np.floor(d)) & np.all((d >= 0) & (d < c)) for d, c in zip(
            dims, (1048576.0, 1048576.0, 2048.0)))  # fmt: skip
        inverse = np.full(m.size, -1, dtype=np.int64)
        combos = []
        while exact and len(combos) < _TABLE_SHAPES:
            left = np.flatnonzero(inverse < 0)
            if left.size == 0:
                break
            i = left[0]
            inverse[key == key[i]] = len(combos)
            combos.append(tuple(float(d[i]) for d in dims))
        if not exact or np.any(inverse < 0):
            return gemm_shape_efficiency(
                hw, m.reshape(shape), n, k, groups, speed_ratio, elem_bytes
            )
    j_max = int(np.max(j, initial=0.0))
    per_row = np.zeros(0) if single else np.zeros(m.size)
    for c, (nc, kc, gc) in enumerate(combos):
        gpu = (hw.tile_m, hw.tile_n, hw.tile_cluster_sms, hw.sm_count, hw.split_k_rows)
        tkey = (gpu, nc, kc, gc, speed_ratio, elem_bytes)
        table = _EFF_TABLES.get(tkey)
        if table is None or table.size <= j_max:
            size = max(j_max + 1, 2 * (0 if table is None else table.size), 64)
            rows = np.arange(size, dtype=float) * _TABLE_ROW
            eff = gemm_shape_efficiency(hw, rows, nc, kc, gc, speed_ratio, elem_bytes)
            table = np.where(rows > 0, eff / np.maximum(rows, 1e-30), 0.0)
            if len(_EFF_TABLES) >= _TABLE_CACHE:
                _EFF_TABLES.clear()
            _EFF_TABLES[tkey] = table
        if single:
            per_row = np.take(table, j.astype(np.int64))
        else:
            sel = inverse == c
            per_row[sel] = table[j[sel].astype(np.int64)]
    out = per_row * m
    if np.any(edge):
        at = m[edge]
        n_e, k_e, g_e = (
            (np.full(at.size, c) for c in combos[0]) if single else (d[edge] for d in dims)
        )
        out[edge] = gemm_shape_efficiency(hw, at, n_e, k_e, g_e, speed_ratio, elem_bytes)
    return out.reshape(shape)


def hbm_bytes_per_s_achieved(hw: HardwareSpec, eng: EngineConstants) -> float:
    """HBM bandwidth streaming kernels achieve (bytes/s): the datasheet figure x the hardware
    file's measured fraction (``efficiency.hbm``) x the engine's ``hbm_efficiency_scale``,
    the product capped at 1 (never above the datasheet).

    Example: H200 (4.8e12 B/s, measured hbm 0.835) with the default engine (scale 1.0) ->
    4.008e12 B/s.
    """
    return hw.hbm_bytes_per_s * min(hw.hbm_efficiency.value * eng.hbm_efficiency_scale, 1.0)


def gemm_ceiling(hw: HardwareSpec, compute_class: str, eng: EngineConstants) -> tuple[float, float]:
    """(peak FLOP/s of the rate class, sustained fraction) for GEMMs of ``compute_class``."""
    rate_class = hw.compute_rate_class(compute_class)
    peak = hw.peak_flops(rate_class)
    mamf = hw.gemm_efficiency_for(rate_class).value
    shape = (np.array(x) for x in _REFERENCE_SHAPE)
    ref = float(gemm_shape_efficiency(hw, *shape, 1.0, _speed_ratio(hw, rate_class)))
    ceiling = min(1.0, mamf / max(ref, 1e-6) * eng.gemm_scale)
    return peak, ceiling


def _speed_ratio(hw: HardwareSpec, rate_class: str) -> float:
    f = hw.peak_flops_per_s
    return hw.peak_flops(rate_class) / (f.get("bf16") or f.get("fp16") or hw.peak_flops(rate_class))


def gemm_time(
    op: Op, hw: HardwareSpec, eng: EngineConstants, memo: dict | None = None
) -> tuple[Array, Array, Array]:
    """(time_s, compute_s, memory_s) of a GEMM op (one layer). ``memo`` (a dict owned by the
    caller, e.g. one ``evaluate`` call) reuses the per-class ceiling across ops. Grouped expert
    GEMMs (``op.meta["moe"]``) carry the busiest EP rank's load, and each group pays
    ``GROUPED_GEMM_GROUP_ROWS`` extra rows of compute."""
    rate_class = hw.compute_rate_class(op.compute_class)
    covered: Array | bool = False  # shapes a calibration profile measured (their whole time)
    memo = {} if memo is None else memo  # (a call's own: nothing kept)
    key = ("ceiling", op.compute_class)
    if key not in memo:
        memo[key] = gemm_ceiling(hw, op.compute_class, eng)
    peak, ceiling = memo[key]
    moe = op.meta.get("moe")
    m = np.asarray(op.m, dtype=float)
    groups, touched, pad = op.groups, op.touched, None
    row_tiles: dict[int, Array] | None = None
    if moe:  # experts_up and experts_down share their rows (one ``moe`` dict): the busiest
        # rank's pairs, the experts they touch (its weight stream) and its rows per expert and
        # their row tiles are computed once per layer (``memo``'s last one)
        last = memo.get("routed")
        if last is None or last[0] is not op.m or last[1] is not moe or last[2] is not eng:
            rows, g, pad = busiest_rank_rows(hw, eng, m, op.groups, moe)
            last = memo["routed"] = (op.m, moe, eng, rows, {}, g, pad, {})
        m, row_tiles, groups, pad, lazy = last[3:]
        touched = groups
    elem = op.a_elem_bytes or op.a_bytes  # (the alignment's element: alignment_factor)
    routed, ratio = bool(moe and moe.get("routed", False)), _speed_ratio(hw, rate_class)
    weights = moe.get("weights", "") if moe else ""  # (the experts' format: their kernel path)
    if not routed:
        eff = _unrouted_efficiency(hw, m, op.n, op.k, groups, ratio, elem)
    else:
        scalar = np.ndim(op.n) == np.ndim(op.k) == 0  # (then priced on its distinct points)
        if scalar and "few" not in lazy:  # (the grid's distinct (rows, experts): distinct.py)
            lazy["few"] = distinct(m, groups)
        few = lazy["few"] if scalar else None
        rows_g, tiles = ((m, groups), row_tiles) if few is None else (few.columns, few.cache)
        shape = (hw, rows_g[0], op.n, op.k, rows_g[1])
        shape += (ratio, elem, routed)
        spread = (lambda x: x) if few is None else few.expand
        eff = spread(gemm_shape_efficiency(*shape, grouped_token_tiles(hw, eng, weights), tiles))
        alone = weight_only_tiles(hw, eng, weights)
        if alone is not None:  # the weight-only path, where the MoE is not tensor-parallel
            takes = takes_weight_only_path(moe.get("moe_tp", 1))
            if np.any(takes):
                eff = np.where(takes, spread(gemm_shape_efficiency(*shape, alone, tiles)), eff)
    flops = 2.0 * m * op.n * op.k * groups
    # a measured grouped kernel's share of the dense ceiling (routed GEMMs; moe_kernels): per
    # class, the kernel's math rate (Blackwell's grouped FP4 tiles); per weight format, work off
    # the tensor cores (FP8 block rescaling, Hopper's conversion of MXFP4 weights to BF16)
    share = grouped_share(hw, eng, rate_class, weights).value if routed else 1.0
    scaled = grouped_block_efficiency(hw, eng, moe, rate_class) if routed else None
    block = scaled.value if scaled is not None else 1.0  # (DeepGEMM's rows: its own rate)
    if routed and (own := marlin_share(hw, eng, weights, m, peak * ceiling * share)) is not None:
        block = own  # the marlin path's own math rate, on the rows its tiles compute
    deep = pad > 0 if pad is not None else False
    compute = np.where(flops > 0, flops / (peak * ceiling * share * np.maximum(eff, 1e-9)), 0.0)
    if hw.gemm_table is not None:  # calibration profile: measured throughput where covered
        measured = hw.gemm_table.flops_per_s(
            rate_class, m, np.asarray(op.n, dtype=float), np.asarray(op.k, dtype=float)
        )
        if measured is not None:
            measured = np.asarray(measured, dtype=float)
            ok = np.isfinite(measured) & (measured > 0)
            covered = ok & (flops > 0)
            compute = np.where(covered, flops / np.where(ok, measured, 1.0), compute)
    weight_bytes = np.asarray(op.n) * op.k * op.w_bytes * touched
    moved = (m * op.k * op.a_bytes + m * op.n * op.o_bytes) * groups + weight_bytes
    moved = np.where(m > 0, moved, 0.0)
    memory = moved / hbm_bytes_per_s_achieved(hw, eng)
    groups_s = 0.0
    if moe:  # each active group's fixed cost (grouped GEMMs stream weights like dense ones)
        rows = np.minimum(m, GROUPED_GEMM_GROUP_ROWS)
        groups_s = np.asarray(groups) * 2.0 * rows * np.asarray(op.n) * op.k / (peak * ceiling)
    t = gemm_overlap_time(compute + groups_s, memory)
    if np.any(block < 1.0):
        # the work off the tensor cores (on the rows computed, not the tiles' padding) bounds the
        # time where the GEMM is compute-bound and hides under the weight stream where it is not:
        # block-scaled modules at 1-512 tokens time as the per-tensor ones, weight-only MXFP4
        # ones below about 1,024 tokens as the unbounded model (AIConfigurator, moe_layer.csv)
        slow = np.where(covered | deep, compute, flops / (peak * ceiling * share * block))
        t = np.where(covered | deep, t, np.maximum(t, slow + groups_s))
        compute = slow
    compute = compute + groups_s
    if np.any(covered):  # a measured GEMM's time already holds its own overlap
        t = np.where(covered, np.maximum(compute, memory), t)
    return t, compute, memory


def gemm_overlap_time(compute: Array, memory: Array) -> Array:
    """A GEMM's time from its compute and memory times: (c^3 + m^3)^(1/3) (the fitted
    exponent 3, module constants), between max(compute, memory) and 2^(1/3) x max at the
    ridge; 0 when both are 0.

    Example: compute 1.0 and memory 1.0 -> 2^(1/3) = 1.26; compute 1.0 and memory 0.5 ->
    (1 + 0.125)^(1/3) = 1.040; compute 1.0 and memory 0 -> 1.0.
    """
    return np.cbrt(compute * compute * compute + memory * memory * memory)


def attention_time(op: Op, hw: HardwareSpec, eng: EngineConstants) -> tuple[Array, Array, Array]:
    """(time, compute time, memory time) of one layer's attention kernel. An MLA decode op
    (``meta["query_heads"]``: query heads x query tokens on this GPU) runs the measured decode
    kernel: its HBM fraction on the latent cache where measured, plus its time per query head and
    per call (``efficiency.attention_decode``, :class:`DecodeKernel`; none per call where
    ``meta["per_call"]`` is False: DeepSeek-V4's, whose module chain is its own op). A GQA decode op
    over an FP8 cache (``meta["fp8_kv"]``) reads it at most at the GPU's measured FP8-cache rate of
    the engine's GQA decode kernels (``efficiency.fp8_kv_decode``, ``gqa_decode_kernels``): Hopper's
    FlashAttention kernels are bound by converting FP8, not by HBM. Prefill: at most
    ``attn_prefill_efficiency`` x ``mixers.prefill_head_dim_share`` of ``meta["head_dim"]``. DSA's
    sparse core (``meta["sparse_heads"]``: the rank's query heads) computes the heads its kernel
    pads them to, at that kernel's BF16 rate (``attention_kernels.sparse_kernel``), where it runs
    the sparse path (``meta["sparse_path"]``; a short prompt's dense kernels do not), and its decode
    reads an FP8 cache in their layout (``attention_kernels.sparse_cache_scale``); where they run,
    the DSA indexer's decode scoring (``meta["indexer"]``) streams at ``INDEXER_DECODE_HBM``. MSA
    prefill (``meta["msa"]``): ``attention_kernels.msa_prefill_rate``."""
    peak = hw.peak_flops(rate_class := attention_rate_class(hw, op.compute_class))
    flops, pad, on, sparse_rate = np.asarray(op.flops), 1.0, False, None
    if (h := op.meta.get("sparse_heads")) is not None:
        own = np.asarray(h, dtype=float)
        padded, eff = sparse_kernel(hw, eng, op.phase, op.meta.get("fp8_cache", False), own)
        on = op.meta.get("sparse_path", True) & (own > 0)
        pad = np.where(on, padded / np.maximum(own, 1e-30), 1.0)
        flops = flops * pad
        if eff is not None:  # where it runs, the sparse kernel's rate (BF16 math)
            sparse_rate = hw.peak_flops("bf16") * eff

    def rate(engine_rate: float) -> Array | float:
        return engine_rate if sparse_rate is None else np.where(on, sparse_rate, engine_rate)

    if op.phase == "decode":
        kern = decode_attention_efficiency(hw, rate_class, eng)
        compute = flops / rate(peak * kern.value)
        query_heads, hbm = op.meta.get("query_heads"), eng.attn_decode_efficiency
        if indexer_streams(hw, eng, op.meta):  # (INDEXER_DECODE_HBM; MSA's FP8 keys: SM100)
            hbm = INDEXER_DECODE_HBM
        elif query_heads is not None and kern.hbm is not None:
            hbm = kern.hbm
        elif op.meta.get("fp8_kv") and (fp8 := fp8_kv_decode_rate(hw, eng)) is not None:
            hbm = min(hbm, fp8.value)
        nbytes = np.asarray(op.bytes) * sparse_cache_scale(hw, eng, op.meta)  # (DSA's layout)
        memory = nbytes / (hw.hbm_bytes_per_s * hbm)
        t = np.maximum(compute, memory)
        if query_heads is not None:
            q = np.asarray(query_heads, dtype=float) * pad
            call = kern.per_call_s * op.meta.get("per_call", True) + kern.per_query_head_s * q
            t = t + np.where(q > 0, call, 0.0)
        return t, compute, memory
    share = eng.attn_prefill_efficiency * prefill_head_dim_share(op.meta.get("head_dim"))
    msa = msa_prefill_rate(hw, eng, op.meta["fp8_cache"]) if op.meta.get("msa") else None
    compute, memory = flops / (msa or rate(peak * share)), memory_time(op, hw, eng)
    t = np.maximum(compute, memory)
    if (heads := op.meta.get("query_heads")) is not None:  # (DeepSeek-V4's per-head chain)
        t = t + decode_attention_efficiency(hw, rate_class, eng).per_query_head_s * heads * pad
    return t, compute, memory


def memory_time(op: Op, hw: HardwareSpec, eng: EngineConstants) -> Array:
    return np.asarray(op.bytes, dtype=float) / hbm_bytes_per_s_achieved(hw, eng)


def moe_permute_time(op: Op, hw: HardwareSpec, eng: EngineConstants) -> Array:
    """Time of the bytes the MoE kernels around the grouped GEMMs stream in one layer, by the
    engine's kernel path (each path's bytes: the comment above ``GROUPED_GEMM_GROUP_ROWS``).
    ``op.meta["moe_permute"]``: tokens, pairs (this GPU's), hidden size, activation bytes per
    element, the experts' ``moe`` (``padded_rows``; attention-DP and pure EP, which decide whether
    the kernel is fed every token: ``comm.fed_every_token``), and for the triton path's
    zero-filled pairs: every routed pair (``pairs_all``), GEMM1's width and matrices."""
    mp = op.meta["moe_permute"]
    t = np.asarray(mp["tokens"], dtype=float) * mp["hidden"]
    p = np.asarray(mp["pairs"], dtype=float) * mp["hidden"]
    a = mp["act_bytes"]
    path, w = moe_kernel_path(hw, eng, mp["moe"].get("weights", "")), mp["width"]
    if path == "cutlass":
        nbytes = 2.0 * t + a * p
    else:
        nbytes = (2.0 + a if a < 2.0 else 0.0) * t + 2.0 * p + 2.0 * t
    if path in ("triton", "deepgemm", "marlin"):
        # fed every token (no dispatch), each pair routed off this GPU is zero-filled (GEMM1's
        # and GEMM2's outputs), activated and summed like a local one, in BF16
        fed_all = fed_every_token(hw, eng, mp["moe"]["adp"], mp["moe"]["pure_ep"])
        pad = padded_rows(hw, eng, mp["moe"])
        if pad is not None:  # deepgemm: its padded rows hold those pairs; the activation (BF16
            # in) and its FP8 quantization run over every padded row
            nbytes = nbytes + pad * (2.0 * w + w / mp["mats"])
            fed_all = fed_all & (pad <= 0)
        off = np.where(fed_all, np.asarray(mp["pairs_all"], dtype=float) - mp["pairs"], 0.0)
        nbytes = nbytes + 2.0 * off * (2.0 * w + w / mp["mats"] + 2.0 * mp["hidden"])
    # trtllm_gen: its grouped GEMMs' launched CTAs that exit idle (moe_kernels)
    idle = trtllm_gen_idle_time(hw, eng, mp["moe"], mp["tokens"], a, (w, mp["hidden"]))
    return nbytes / hbm_bytes_per_s_achieved(hw, eng) + idle


def op_time(
    op: Op, hw: HardwareSpec, eng: EngineConstants, memo: dict | None = None, bound: bool = True
) -> tuple[Array, str | Array | None]:
    """(time of one layer's op in seconds, bound resource: 'compute'|'memory'|'network'; None
    for a GEMM or attention op with ``bound=False``, which spares the per-element labels)."""
    if op.kind == "gemm":
        t, c, m = gemm_time(op, hw, eng, memo)
        return t, (np.where(c >= m, "compute", "memory") if bound else None)
    if op.kind == "fixed":  # a kernel chain of fixed time per layer (MoE routing, DSA indexer)
        name = op.meta["fixed"]
        w = op.meta["weights"] if name == "moe_layer_overhead_s" else None
        fixed = getattr(eng, name) if w is None else moe_layer_fixed_s(hw, eng, w)
        return np.where(np.asarray(op.m) > 0, fixed, 0.0), "overhead"
    if op.kind == "attention":
        t, c, m = attention_time(op, hw, eng)
        return t, (np.where(c >= m, "compute", "memory") if bound else None)
    if op.kind == "memory":  # (none for an activation the MoE kernels fuse: fuses_activation)
        return memory_time(op, hw, eng) * (not fuses_activation(hw, eng, op.meta)), "memory"
    if op.kind == "permute":
        return moe_permute_time(op, hw, eng), "memory"
    if op.kind == "comm":
        if op.collective in ("moe_dispatch", "moe_combine"):
            return moe_comm_time(op, hw, eng), "network"
        return collective_time(op.collective, op.bytes, op.group_size, hw, eng), "network"
    raise AssertionError(op.kind)  # pragma: no cover
