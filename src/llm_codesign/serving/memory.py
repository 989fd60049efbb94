"""Memory fit per GPU (weights, KV cache, workspace) and the concurrency an engine can run.

One home for the concurrency cap: a replica runs at most the sequences whose KV fits and at
most the engine's ``max_batch_size`` per scheduling rank (each attention-DP rank schedules its
own batch); clients beyond the cap queue (serving) and sweeps stop their grids there (explore).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..attention_kernels import sparse_latent_bytes
from ..formats import BLOCK_SCALED_WEIGHTS
from ..mixers import windowed_layers, windowed_share
from ..moe_kernels import fed_tokens, moe_kernel_path, runs_aiter
from ..ops import draft_layers, kv_bytes_per_sequence_per_gpu, weight_bytes_per_gpu
from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu, sglang_tier
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision

Array = np.ndarray

# Per-GPU memory the engine cannot give to weights or KV: CUDA context, cuBLAS/NCCL workspaces.
RUNTIME_RESERVED_BYTES = 2.0e9
# vLLM's fused-MoE chunk: its Triton experts take at most this many tokens at once and size
# their workspace for it (vllm/envs.py VLLM_FUSED_MOE_CHUNK_SIZE, 16 x 1024)
FUSED_MOE_CHUNK_TOKENS = 16384
# Largest concurrency per replica any sweep considers (a bound on grids, far above real engines)
MAX_CONCURRENCY = 1 << 22


# SGLang's default ``mem_fraction_static`` (``--mem-fraction-static`` unset), from its GPU
# memory in MiB (ServerArgs._handle_gpu_memory_settings, sgl-project/sglang#10975;
# python/sglang/srt/server_args.py, the stored version of search-index file id 271536807):
# reserved = 512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs
# + 1024 x tp x pp / 8 MiB, under attention DP + 3 x cuda_graph_max_bs x dp (+ 1.5 x
# cuda_graph_max_bs x dp where cuda_graph_max_bs > 300), at least 10 GiB on GPUs over 60 GiB,
# + 2 GiB with EAGLE/MTP drafts; fraction = round((memory - reserved) / memory, 3).
# cuda_graph_max_bs and the chunk by the GPU's memory: specs.gpu_defaults.SGLANG_GPU_TIERS.
SGLANG_RESERVED_MIB = 512.0
SGLANG_LARGE_GPU_MIB = 60 * 1024  # over this, at least SGLANG_MIN_RESERVED_MIB reserved
SGLANG_MIN_RESERVED_MIB = 10 * 1024.0
SGLANG_DRAFT_RESERVED_MIB = 2 * 1024.0


def sglang_memory_fraction(
    gpu_bytes: float,
    tp: Array | int,
    pp: Array | int,
    attention_dp: Array | bool,
    chunk: Array | int,
    cuda_graph_max_bs: Array | int | None = None,
    drafts: bool = False,
) -> Array:
    """SGLang's default ``mem_fraction_static`` for a GPU of ``gpu_bytes`` (as its driver reports
    them) serving ``tp`` x ``pp`` ranks (``attention_dp``: DP attention over the tp ranks), a
    ``chunk``-token chunked prefill and CUDA graphs up to ``cuda_graph_max_bs`` sequences (None:
    SGLang's default for the GPU, ``specs.gpu_defaults.sglang_tier``), ``drafts``: EAGLE/MTP
    speculation. Module comment: its formula.

    Examples (H100 80 GB: 81,559 MiB; H200: 143,771 MiB):
        >>> float(sglang_memory_fraction(81559 * 2**20, 8, 1, False, 8192))
        0.818
        >>> float(sglang_memory_fraction(143771 * 2**20, 8, 1, True, 8192))
        0.769
    """
    mib = gpu_bytes / 2**20
    tp_a = np.asarray(tp, dtype=float)
    if cuda_graph_max_bs is None:
        _, small, large = sglang_tier(gpu_bytes)
        cuda_graph_max_bs = np.where(tp_a < 4, small, large)
    bs = np.asarray(cuda_graph_max_bs, dtype=float)
    reserved = SGLANG_RESERVED_MIB + 1.5 * np.maximum(np.asarray(chunk, dtype=float), 2048.0)
    reserved = reserved + 2.0 * bs + tp_a * np.asarray(pp, dtype=float) / 8.0 * 1024.0
    adp = np.asarray(attention_dp, dtype=bool)
    reserved = reserved + np.where(adp, bs * tp_a * (3.0 + np.where(bs > 300, 1.5, 0.0)), 0.0)
    if mib > SGLANG_LARGE_GPU_MIB:
        reserved = np.maximum(reserved, SGLANG_MIN_RESERVED_MIB)
    reserved = reserved + (SGLANG_DRAFT_RESERVED_MIB if drafts else 0.0)
    return np.round((mib - reserved) / mib, 3)


def memory_utilization(
    hw: HardwareSpec,
    eng: EngineConstants,
    tp: Array | int,
    pp: Array | int,
    attention_dp: Array,
    drafts: bool = False,
) -> Array | float:
    """The engine's memory fraction on this plan: ``memory_utilization``, or where it is 0
    (SGLang's default, ``--mem-fraction-static`` unset) :func:`sglang_memory_fraction` with the
    engine's ``max_num_tokens`` on this GPU (``for_gpu``) as the chunk, SGLang's default
    CUDA-graph batch and, with ``drafts`` (speculative decoding), its draft reserve."""
    if eng.memory_utilization > 0:
        return eng.memory_utilization
    chunk = for_gpu(eng, hw).max_num_tokens
    return sglang_memory_fraction(hw.device_memory, tp, pp, attention_dp, chunk, drafts=drafts)


def scheduling_ranks(tp: Array, attention_dp: Array) -> Array:
    """Ranks that schedule their own batch in a replica: tp under attention-DP, else 1."""
    return np.where(attention_dp, tp, 1)


def rank_token_budget(eng: EngineConstants, ranks: Array | float) -> Array:
    """Tokens (prompt chunks and decode) one of ``ranks`` scheduling ranks puts in a step
    (:func:`scheduling_ranks`): the engine's ``max_num_tokens``, or where that is the server's
    (``token_budget_scope`` server) its whole share per rank: SGLang gives each DP-attention rank
    ``chunked_prefill_size // dp_size``.

    Example: SGLang's --chunked-prefill-size 32768 over 8 DP-attention ranks: 4,096 a rank;
    TensorRT-LLM's max_num_tokens 8,192: 8,192 a rank, whatever the ranks."""
    r = np.maximum(np.asarray(ranks, dtype=float), 1.0)
    m = float(eng.max_num_tokens)
    return np.floor(m / r) if eng.token_budget_scope == "server" else np.full(r.shape, m)


def kv_context(eng: EngineConstants, isl: Array | float, osl: Array | float) -> Array:
    """KV tokens a running sequence holds against the cache under the engine's admission
    policy: ``full`` reserves ISL + OSL at admission (TensorRT-LLM's default capacity
    scheduler GUARANTEED_NO_EVICT admits only what it can finish); ``mean`` allocates blocks
    as tokens arrive (vLLM, SGLang: preempt under pressure), so running sequences spread over
    their decode phase hold ISL + OSL / 2 on average."""
    isl_a, osl_a = np.asarray(isl, dtype=float), np.asarray(osl, dtype=float)
    return isl_a + (osl_a if eng.kv_admission == "full" else osl_a / 2.0)


def _budget_terms(
    hw: HardwareSpec, budget: str, w_bytes: Array, other: Array
) -> tuple[Array | float, Array | float]:
    """(a, b) with KV bytes = a x fraction - b under the ``budget`` convention (the one home of
    the three conventions; :func:`kv_budget_bytes` and :func:`memory_fraction_for` apply it
    forwards and backwards). ``total`` is the memory the driver exposes
    (``HardwareSpec.device_memory``): what the engines measure (``torch.cuda.mem_get_info``)."""
    total = hw.device_memory
    if budget == "total":
        return total, w_bytes + other
    if budget == "static":
        return total, w_bytes + RUNTIME_RESERVED_BYTES
    return total - w_bytes - other, 0.0


def kv_budget_bytes(
    hw: HardwareSpec,
    eng: EngineConstants,
    w_bytes: Array,
    other: Array,
    plan: tuple[Array | int, Array | int, Array | bool] = (1, 1, False),
    drafts: bool = False,
) -> Array:
    """Bytes per GPU the engine gives its KV cache: weights ``w_bytes``, ``other`` the rest it
    holds besides KV (runtime reserve and activations), :func:`memory_utilization` on ``plan``
    (tp, pp, attention_dp; ``drafts``: speculative decoding) a fraction of what the engine's
    ``memory_budget`` says:

    * ``free`` (TensorRT-LLM): u x (HBM - weights - other), what is free after the profiling
      pass (``KvCacheCreator._cal_max_memory``: fraction x (total - peak));
    * ``total`` (vLLM): u x HBM - weights - other (``gpu_memory_utilization`` x total less
      the non-KV memory of the profiling run);
    * ``static`` (SGLang): u x HBM - weights - the runtime reserve (the memory free after
      loading less total x (1 - ``mem_fraction_static``); activations and CUDA graphs live in
      that remainder, so ``other`` beyond the reserve does not enter).

    Negative where the weights alone exceed the budget."""
    a, b = _budget_terms(hw, eng.memory_budget, w_bytes, other)
    return np.asarray(a * memory_utilization(hw, eng, *plan, drafts=drafts) - b)


def weights_and_workspace(
    model: ModelSpec,
    prec: Precision,
    hw: HardwareSpec,
    eng: EngineConstants,
    tp: Array,
    pp: Array,
    ep: Array,
    attention_dp: Array,
    cp: Array,
    spec_tokens: int = 0,
) -> tuple[Array, Array]:
    """Per-GPU (weight bytes, workspace bytes): the workspace is the runtime reserve plus the
    activations of one ``max_num_tokens`` step, the step an engine profiles before it sizes its
    KV cache (TensorRT-LLM ``KvCacheCreator``: ``max_num_tokens`` of dummy prompts on every
    rank; vLLM's profile run: ``max_num_batched_tokens``), with an MoE model's runner buffers
    for that step (:func:`moe_runner_workspace`). With ``spec_tokens`` drafts the weights hold
    the model's MTP blocks (``ops.draft_layers``)."""
    drafts = draft_layers(model, spec_tokens)
    w_bytes = weight_bytes_per_gpu(model, prec, tp, ep, pp, attention_dp, cp, drafts)
    d = model.hidden_size
    ffn_local = model.intermediate_size / np.where(attention_dp, 1, tp)
    step = rank_token_budget(eng, scheduling_ranks(tp, attention_dp))  # (a rank's step tokens)
    workspace = RUNTIME_RESERVED_BYTES + step * (8.0 * d + 4.0 * ffn_local) * 2.0
    if model.moe is not None:
        fed = moe_profile_tokens(model, hw, eng, tp, ep, attention_dp)
        workspace = workspace + moe_runner_workspace(model, prec, hw, eng, tp, ep, fed)
    return w_bytes, workspace


def moe_profile_tokens(
    model: ModelSpec, hw: HardwareSpec, eng: EngineConstants, tp: Array, ep: Array, adp: Array
) -> Array:
    """Tokens a GPU's MoE runner is fed in the step the engine profiles (every scheduling rank's
    token budget reaches the layer: all of them behind an all-gather, the tokens routed to the
    GPU behind an all-to-all, ``moe_kernels.fed_tokens``); an MoE ``model``."""
    assert model.moe is not None
    ranks = scheduling_ranks(tp, adp)
    step = rank_token_budget(eng, ranks) * ranks
    return fed_tokens(hw, eng, step, adp, np.asarray(ep) == np.asarray(tp), model.moe.top_k, ep)


def memory_notes(
    model: ModelSpec, prec: Precision, hw: HardwareSpec, eng: EngineConstants, plan: Any, wl: Any
) -> list[str]:
    """An estimate's notes on the engine's memory beyond weights and a window-only KV cache
    (:func:`windowed_kv_note`, :func:`moe_workspace_note`); ``plan``: a ``ParallelPlan``."""
    args = (plan.tp, plan.pp, plan.attention_dp, plan.cp)
    return windowed_kv_note(model, prec, eng, args, wl) + moe_workspace_note(
        model, prec, hw, eng, plan
    )


def moe_workspace_note(
    model: ModelSpec, prec: Precision, hw: HardwareSpec, eng: EngineConstants, plan: Any
) -> list[str]:
    """An estimate's note where the engine sizes its KV cache after a profiled step (the
    ``free`` and ``total`` budgets) whose MoE runner buffers take 1 GB a GPU or more
    (:func:`moe_runner_workspace`); ``plan``: a ``ParallelPlan``."""
    if model.moe is None or eng.memory_budget == "static":
        return []
    tp, ep, adp = (np.asarray(v) for v in (plan.tp, plan.ep, plan.attention_dp))
    fed = moe_profile_tokens(model, hw, eng, tp, ep, adp)
    held = float(moe_runner_workspace(model, prec, hw, eng, tp, ep, fed))
    if held < 1e9:
        return []
    ranks = int(scheduling_ranks(tp, adp))
    return [
        f"engine {eng.id} sizes its KV cache after profiling a step of "
        f"{float(rank_token_budget(eng, ranks)):,.0f} tokens on each of {ranks} scheduling "
        f"rank{'s' if ranks > 1 else ''}: the MoE runner's buffers for the {float(fed):,.0f} "
        f"tokens it is fed take {held / 1e9:.1f} GB a GPU the KV cache does not get "
        "(moe_runner_workspace)"
    ]


def moe_runner_workspace(
    model: ModelSpec,
    prec: Precision,
    hw: HardwareSpec,
    eng: EngineConstants,
    tp: Array,
    ep: Array,
    tokens: Array,
) -> Array:
    """Bytes one MoE layer's runner holds for ``tokens`` tokens fed to it, by the engine's kernel
    path on ``hw`` (``moe_kernels.moe_kernel_path``); h the hidden size, k the top-k, I the
    expert width on a GPU (the experts sliced over tp / ep GPUs):

    * cutlass (TensorRT-LLM's ``CutlassMoeFCRunner``; FlashInfer's cutlass_fused_moe is that
      runner): per token, k x (the overlapped GEMM-input region, the largest of the permuted
      input, the FC1 result, a x I, and the BF16 FC2 result, 2h, a the activations' bytes; the
      overlapped GEMM-output region, the gated FC1 result in BF16, 4I, or, unless the weights
      are block-scaled FP8, the FC2 result, 2h; four int32 row maps and a float scale, 20) +
      the runner's BF16 output, 2h (``getWorkspaceDeviceBufferSizes``, cpp/tensorrt_llm/kernels/
      mixtureOfExperts/moe_kernels.cu, not the min-latency mode; the scale factors of FP4
      activations, a sixteenth of theirs, left out);
    * triton (vLLM's ``TritonExperts``): workspace1 (M, k, max(I, h)) and workspace2 (M, k,
      max(2I, h)) in 16-bit activations and the output (M, h), M at most
      ``FUSED_MOE_CHUNK_TOKENS`` (vLLM runs larger steps in chunks of it);
    * trtllm_gen, deepgemm and marlin, and AITER's fused MoE that the triton path is on AMD
      GPUs (``moe_kernels.runs_aiter``): 0. FlashInfer's TRTLLM-Gen MoE keeps its own buffers,
      DeepGEMM's are per expert of padded rows, Marlin's and AITER's are not read here: not
      priced.

    Example (closed form): DeepSeek-R1 (h 7,168, k 8, I 2,048) in block-scaled FP8 on
    TensorRT-LLM's CUTLASS runner: 8 x (14,336 + 8,192 + 20) + 14,336 = 194,720 bytes a token;
    8,192 tokens on each of 8 attention-DP ranks, all-gathered: 65,536 x 194,720 B = 12.8 GB."""
    moe = model.moe
    if moe is None:
        return np.zeros(np.broadcast(tp, ep).shape)
    path = moe_kernel_path(hw, eng, prec.weights.id)
    h, k = float(model.hidden_size), float(moe.top_k)
    i = moe.expert_intermediate / np.maximum(np.asarray(tp, dtype=float) / np.asarray(ep), 1.0)
    m = np.asarray(tokens, dtype=float)
    if path == "cutlass":
        inputs = np.maximum(2.0 * h, prec.activation_bytes * i)
        block = prec.weights.id in BLOCK_SCALED_WEIGHTS  # (its FC2 result sits in the inputs)
        outputs = 4.0 * i if block else np.maximum(4.0 * i, 2.0 * h)
        return m * (k * (inputs + outputs + 20.0) + 2.0 * h)
    if path == "triton" and not runs_aiter(hw, eng):
        m = np.minimum(m, FUSED_MOE_CHUNK_TOKENS)
        return m * (k * (np.maximum(i, h) + np.maximum(2.0 * i, h)) * 2.0 + 2.0 * h)
    return np.zeros(np.broadcast(m, i).shape)


def fraction_ceiling(hw: HardwareSpec, budget: str) -> float:
    """The largest memory fraction a launch under ``budget`` can state on ``hw``: 1 of the free
    memory (``free``); a fraction of the whole GPU (``total``, ``static``) leaves at least the
    runtime's own ``RUNTIME_RESERVED_BYTES`` outside it (vLLM refuses to start where the memory
    free at start-up is below the fraction it asks for). Rounded down to 0.001.

    Example (H100 80 GB, 85.5e9 bytes as its driver reports them):
        >>> from ..specs.hardware import load_hardware
        >>> fraction_ceiling(load_hardware("h100-sxm"), "total")
        0.976
    """
    if budget == "free":
        return 1.0
    return math.floor((1.0 - RUNTIME_RESERVED_BYTES / hw.device_memory) * 1000.0) / 1000.0


def memory_fraction_for(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: tuple[int, int, int, bool, int],
    budget: str,
    spec_tokens: int = 0,
) -> float:
    """The memory fraction that gives the KV cache, under another engine's ``budget``
    convention (``specs.engine.MEMORY_BUDGETS``), the bytes ``eng`` gives it on ``plan``
    (tp, pp, ep, attention_dp, cp): what a launch file for that engine must say for the
    predicted batch to fit. Rounded down to 0.001 (never more KV than predicted)."""
    tp, pp, ep, adp, cp = (np.asarray(v) for v in plan)
    w, o = (
        float(np.reshape(x, -1)[0])
        for x in weights_and_workspace(model, prec, hw, eng, tp, pp, ep, adp, cp, spec_tokens)
    )
    kv = max(float(kv_budget_bytes(hw, eng, w, o, (tp, pp, adp), spec_tokens > 0)), 0.0)
    a, b = _budget_terms(hw, budget, w, o)
    u = (kv + float(b)) / max(float(a), 1.0)
    return min(max(math.floor(u * 1000.0 + 1e-6) / 1000.0, 0.001), 1.0)


def memory_fit(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    tp: Array,
    pp: Array,
    ep: Array,
    attention_dp: Array,
    cp: Array,
    context: Array,
    spec_tokens: int = 0,
) -> tuple[Array, Array, Array, Array, Array]:
    """Per-GPU memory: (weight bytes, KV bytes per sequence of ``context`` tokens, workspace
    bytes, bytes the KV cache may use, max concurrency per replica).

    The KV cache gets what :func:`kv_budget_bytes` leaves it under the engine's
    ``memory_budget`` convention. ``context`` is the tokens a
    sequence holds: :func:`kv_context` for in-flight batching (the engine's admission policy),
    the full ISL + OSL for static batches; a windowed layer holds at most its window, or the
    share of the context the engine's cache reserves for it where that is more
    (``EngineConstants.windowed_kv_share``). Workspace = runtime
    reserve + activations of one ``max_num_tokens`` step (the runtime's on ``hw``: ``for_gpu``).
    With ``spec_tokens`` drafts the model's MTP blocks hold weights and KV too, and SGLang's
    default fraction keeps its draft reserve.
    """
    eng = for_gpu(eng, hw)
    plan = (tp, pp, ep, attention_dp, cp)
    w_bytes, workspace = weights_and_workspace(model, prec, hw, eng, *plan, spec_tokens)
    kv_seq = engine_kv_bytes(model, hw, prec, eng, context, tp, pp, attention_dp, cp, spec_tokens)
    usable = kv_budget_bytes(hw, eng, w_bytes, workspace, (tp, pp, attention_dp), spec_tokens > 0)
    seqs_per_gpu = np.floor(np.maximum(usable, 0.0) / np.maximum(kv_seq, 1e-9))
    return w_bytes, kv_seq, workspace, usable, seqs_per_gpu * scheduling_ranks(tp, attention_dp)


# why a plan's KV cache gets no memory (``memory_reason``): the weights alone, or the step the
# engine profiles before it sizes the cache (activations and MoE runner buffers of its
# ``max_num_tokens``), which a smaller ``max_num_tokens`` shrinks
WEIGHTS_EXCEED_MEMORY = "weights_exceed_memory"
WORKSPACE_EXCEEDS_MEMORY = "workspace_exceeds_memory"
# the smallest max_num_tokens a refusal's hint offers (``fitting_step_tokens``)
MIN_HINT_STEP_TOKENS = 256


def memory_reason(
    hw: HardwareSpec,
    eng: EngineConstants,
    w_bytes: Array,
    usable: Array,
    kv_seq: Array,
    plan: tuple[Array | int, Array | int, Array | bool],
    drafts: bool = False,
    need: Array | float = 1.0,
) -> Array:
    """Why a GPU's KV budget ``usable`` (:func:`memory_fit`) does not hold ``need`` sequences of
    ``kv_seq`` bytes ("" where it does): ``weights_exceed_memory`` where the weights and the runtime
    reserve alone exceed the engine's budget; ``workspace_exceeds_memory`` where without the step
    the engine profiles before it sizes its cache (``max_num_tokens`` per scheduling rank of
    activations and MoE runner buffers: :func:`weights_and_workspace`) the budget would hold
    them, so a smaller ``max_num_tokens`` helps; ``oom`` where it would not even then. ``plan``:
    (tp, pp, attention_dp), as :func:`kv_budget_bytes` takes it.

    Example: DeepSeek-R1 FP8 on 16 H100s, TP16 EP16 attention-DP, TensorRT-LLM at 8,192 tokens
    a rank: 60 GB of weights fit in 80 GB, the MoE runner's buffers for the 131,072 tokens of the
    profiled step do not leave a sequence room -> ``workspace_exceeds_memory``."""
    eng = for_gpu(eng, hw)
    alone = kv_budget_bytes(hw, eng, w_bytes, RUNTIME_RESERVED_BYTES, plan, drafts)
    per = np.maximum(np.asarray(kv_seq, dtype=float), 1e-9)

    def holds(budget: Array) -> Array:
        return np.floor(np.maximum(budget, 0.0) / per) >= need

    step = np.where(holds(alone), WORKSPACE_EXCEEDS_MEMORY, "oom")
    return np.where(holds(usable), "", np.where(alone <= 0, WEIGHTS_EXCEED_MEMORY, step))


def fitting_step_tokens(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: tuple[int, int, int, bool, int],
    context: float,
    spec_tokens: int = 0,
) -> int | None:
    """The largest power-of-two ``max_num_tokens`` (the engine's knob: a rank's, or the server's
    where its scope is the server) below the engine's, down to
    ``MIN_HINT_STEP_TOKENS``, at which one sequence of ``context`` tokens fits beside the weights
    and the profiled step (:func:`memory_fit`) on ``plan`` (tp, pp, ep, attention_dp, cp); None
    where none does. A refusal's hint for ``workspace_exceeds_memory``."""
    eng = for_gpu(eng, hw)
    tp, pp, ep, adp, cp = (np.asarray(v) for v in plan)
    ctx = np.asarray(float(context))
    n = 1 << (max(int(eng.max_num_tokens) - 1, 1).bit_length() - 1)  # the power of two below it
    while n >= MIN_HINT_STEP_TOKENS:
        trial = dataclasses.replace(eng, max_num_tokens=n)
        fit = memory_fit(model, hw, prec, trial, tp, pp, ep, adp, cp, ctx, spec_tokens)
        if float(np.reshape(fit[4], -1)[0]) >= 1:
            return n
        n //= 2
    return None


def concurrency_cap(eng: EngineConstants, max_conc: Array, tp: Array, attention_dp: Array) -> Array:
    """Most sequences a replica runs at once: what its KV holds (``max_conc`` from
    :func:`memory_fit`), at most ``max_batch_size`` per scheduling rank and ``MAX_CONCURRENCY``."""
    batch = eng.max_batch_size * scheduling_ranks(tp, attention_dp)
    return np.minimum(np.minimum(max_conc, batch), MAX_CONCURRENCY)


def running_kv_bytes(kv_seq: Array, running: Array, tp: Array, attention_dp: Array) -> Array:
    """KV bytes on the busiest GPU running ``running`` sequences per replica (attention-DP
    ranks hold ceil(running / tp) sequences each); memory in use = weights + this + workspace."""
    return np.ceil(running / scheduling_ranks(tp, attention_dp)) * kv_seq


def static_batch_fits(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    tp: Array,
    pp: Array,
    ep: Array,
    attention_dp: Array,
    cp: Array,
    context: Array,
    batch: Array,
) -> Array:
    """Whether a static batch of ``batch`` sequences of ``context`` tokens fits: the session
    benchmark reserves the full context per sequence and no chunked-prefill workspace."""
    w_bytes = weight_bytes_per_gpu(model, prec, tp, ep, pp, attention_dp, cp)
    kv_seq = engine_kv_bytes(model, hw, prec, eng, context, tp, pp, attention_dp, cp)
    usable = kv_budget_bytes(hw, eng, w_bytes, RUNTIME_RESERVED_BYTES, (tp, pp, attention_dp))
    return usable >= np.ceil(batch / scheduling_ranks(tp, attention_dp)) * kv_seq


def engine_kv_bytes(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    context: Array,
    tp: Array,
    pp: Array,
    attention_dp: Array,
    cp: Array,
    spec_tokens: int = 0,
) -> Array:
    """KV bytes one sequence of ``context`` tokens holds on one GPU in this engine's cache on
    ``hw``: its windowed layers hold ``mixers.windowed_share`` of the engine's
    ``windowed_kv_share``, its DSA layers' FP8 latent the layout of the engine's DSA kernels
    (``attention_kernels.sparse_latent_bytes``); with ``spec_tokens`` drafts, the model's MTP
    blocks hold theirs."""
    share = windowed_share(model, eng.windowed_kv_share)
    ctx = np.asarray(context, dtype=float)
    drafts = draft_layers(model, spec_tokens)
    plan = (tp, pp, attention_dp, cp)
    lay = sparse_latent_bytes(model, hw, prec, eng)
    return kv_bytes_per_sequence_per_gpu(model, prec, ctx, *plan, share, drafts, lay)


def windowed_kv_note(
    model: ModelSpec,
    prec: Precision,
    eng: EngineConstants,
    plan: tuple[int, int, bool, int],
    wl: Any,
) -> list[str]:
    """An estimate's note where the engine's KV cache holds more than the window for the
    model's windowed attention layers (``mixers.windowed_share`` of ``EngineConstants.
    windowed_kv_share``): the share, and the KV a sequence holds against a window-only cache's,
    at the context the engine admits for the workload ``wl`` (:func:`kv_context`). ``plan``:
    (tp, pp, attention_dp, cp)."""
    share = windowed_share(model, eng.windowed_kv_share)
    if share <= 0:
        return []
    args = tuple(np.asarray(v) for v in plan)
    context = float(kv_context(eng, wl.isl, wl.osl))
    held, only = (
        float(kv_bytes_per_sequence_per_gpu(model, prec, np.asarray(context), *args, s))
        for s in (share, 0.0)
    )
    if held <= only * (1 + 1e-9):
        return []
    chunked = model.attention.chunked_window
    why = "chunked attention: no engine's default cache frees a past chunk"
    layers = f"{windowed_layers(model)} windowed attention layers"
    return [
        f"engine {eng.id}'s KV cache holds {share:.0%} of the context in the {layers} "
        f"({why if chunked else 'windowed_kv_share'}): a {context:,.0f}-token sequence holds "
        f"{held / only:.2f}x the KV of a window-only cache, so fewer sequences fit; attention "
        f"still reads {'its own chunk' if chunked else 'the window'} only"
    ]
