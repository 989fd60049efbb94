"""Engine constants: the small named set of fitted, physically meaningful constants that differ
between serving engines (TensorRT-LLM, vLLM, SGLang) while the physics stays shared.

Each bundled file ``data/engines/<engine>.yaml`` states every value's meaning and source
(a default with its citation, or the fit that produced it: ``benchmarks/fit_calibration.py``).
``data/engines/base.yaml`` is the one home of the base values: it must give every constant,
and any engine file (bundled or a user's YAML) gives the constants it changes on top of it.
``base`` itself is the sourced physics without host costs (for analysis); the default engine,
when none is named, is a real one that runs on the GPU: TensorRT-LLM's PyTorch runtime
(``trtllm``) on NVIDIA GPUs, vLLM on AMD ones (``DEFAULT_ENGINE_BY_VENDOR``), fitted on
measurements.

Example:
    >>> load_engine().id
    'trtllm'
"""

from __future__ import annotations

import dataclasses
import operator
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import SpecError, UnknownIdError, UnsupportedError
from ._load import Fields, existing_file, read_mapping, shown
from .cuda_graphs import check_graph_batches
from .gpu_defaults import GPU_DEFAULTS, RULE_FIELDS, TOKEN_BUDGET_SCOPES, for_gpu
from .hardware import ATTENTION_KERNEL_FAMILIES, GQA_DECODE_KERNEL_FAMILIES

# trtllm = TensorRT-LLM's PyTorch runtime (v1.0 and later, the default since 1.0);
# trtllm-trt = its earlier TensorRT-engine runtime (v0.x: gptSessionBenchmark, trtllm-bench on
# TRT engines), whose host overheads differ
# generic = fitted on every framework's rows pooled: the engine of a measurement whose
# framework has no fit of its own
# base = the sourced physics values every engine file builds on (no host costs; not an engine)
# default = the engine used when none is named: TensorRT-LLM's PyTorch runtime (on AMD GPUs,
# DEFAULT_ENGINE_BY_VENDOR's vLLM)
ENGINES = ("default", "base", "generic", "trtllm", "trtllm-trt", "vllm", "sglang")
DEFAULT_ENGINE = "trtllm"
# the GPU vendors each serving engine runs on: TensorRT-LLM is CUDA only (both runtimes); vLLM
# and SGLang ship CUDA and ROCm builds. base and generic are not one engine: any GPU
ENGINE_VENDORS = {
    "trtllm": ("nvidia",),
    "trtllm-trt": ("nvidia",),
    "vllm": ("nvidia", "amd"),
    "sglang": ("nvidia", "amd"),
}
# the engine used when none is named, by the GPU's vendor: TensorRT-LLM on NVIDIA; on AMD vLLM,
# the engine of AMD's own inference benchmarks (rocm.docs.amd.com "vLLM inference performance
# testing", with its rocm/vllm images). Other vendors (a CPU calibration profile): DEFAULT_ENGINE
DEFAULT_ENGINE_BY_VENDOR = {"nvidia": "trtllm", "amd": "vllm"}
# MoE dispatch/combine kernel families (comm.MOE_COMM_KERNELS and comm.EP_KERNELS hold their sourced
# alpha/beta): auto = NVLink one-sided all-to-all inside a multi-node NVLink domain (GB200
# NVL72), else all-gather + reduce-scatter; DeepEP's low-latency or normal kernels, or deepep =
# both as SGLang's --deepep-mode auto runs them (normal in a step with prompt tokens)
MOE_COMM = ("auto", "allgather_reducescatter", "nvlink_one_sided", "deepep", "deepep_low_latency",
            "deepep_normal", "mori")  # fmt: skip
# the GPU vendors each dispatch family's kernels run on (the rest run anywhere): DeepEP and the
# NVLink one-sided all-to-all are CUDA kernels over NVLink / NVSHMEM, MoRI-EP is ROCm's
MOE_COMM_VENDORS = {"nvlink_one_sided": "nvidia", "deepep": "nvidia", "mori": "amd",
                    "deepep_low_latency": "nvidia", "deepep_normal": "nvidia"}  # fmt: skip
# MoE kernel paths around the grouped GEMMs (cost.moe_permute_time prices what each streams;
# trtllm_gen: TensorRT-LLM's TRTLLM-Gen fused MoE on Blackwell, moe_kernels.TRTLLM_GEN_LAYER_S;
# deepgemm: vLLM 0.12's DeepGEMM MoE on SM90/SM100, moe_kernels.DEEPGEMM_BLOCK_M)
MOE_KERNELS = ("auto", "cutlass", "triton", "trtllm_gen", "deepgemm")
# the grouped GEMMs' path for weight-only experts (``moe_kernels_weight_only``) and for 4-bit
# integer ones (``moe_kernels_int4``: ``moe_kernels.moe_kernel_path``); ``same`` = ``moe_kernels``
WEIGHT_ONLY_MOE_KERNELS = ("same", "cutlass", "triton")
INT4_MOE_KERNELS = ("same", "marlin", "trtllm_gen")
# MLA decode-attention kernel family (attention_kernels.decode_attention_efficiency):
# ``default`` = the GPU file's ``efficiency.attention_decode`` (TensorRT-LLM's kernels in the
# bundled files), else a family the GPU file may measure apart
# (``efficiency.attention_decode_<family>``)
ATTENTION_KERNELS = ("default", *ATTENTION_KERNEL_FAMILIES)
# DeepSeek Sparse Attention's kernel family (attention_kernels.sparse_kernel: the heads
# each pads a rank's to, and which engine runs which)
DSA_KERNELS = ("none", "flashmla", "flashmla_fa3")
# GQA decode-attention kernel family (``cost.attention_time``): ``default`` = none the GPU files
# measure apart, else a family whose FP8-cache read rate a GPU file may give
# (``efficiency.fp8_kv_decode``)
GQA_DECODE_KERNELS = ("default", *GQA_DECODE_KERNEL_FAMILIES)
# Coefficient of variation of the experts' shares of the routed pairs (their popularity), per
# load balancer (``EngineConstants.expert_balancer``). TensorRT-LLM's wide-EP blog (TB4 Table 1;
# moe-comm.md 3: DeepSeek-R1 on 32 x GB200, EP 32, 8 experts per rank, decode) measured the busiest
# rank at 1.564 over the mean without EPLB and 0.109 with it (9 slots per rank), where random
# draws alone give 0.08: the rest is popularity, which does not shrink with the batch. With
# ``routing.moe_rank_imbalance``'s popularity term cv x sqrt(2 ln n / experts per rank), those
# excesses give cv = 1.564 x sqrt(8) / sqrt(2 ln 32) = 1.68 and 0.109 x sqrt(9) / sqrt(2 ln 32)
# = 0.124.
# ``uniform``: every expert equally popular, as synthetic kernel benchmarks route (balanced or
# random gating: AIConfigurator's "balanced" tables, vLLM's benchmark_moe.py).
EXPERT_POPULARITY_CV = {"none": 1.68, "eplb": 0.124, "uniform": 0.0}
EXPERT_BALANCERS = tuple(EXPERT_POPULARITY_CV)  # none, eplb, uniform
# KV admission: full = reserve ISL + OSL at admission (TensorRT-LLM GUARANTEED_NO_EVICT);
# mean = blocks as tokens arrive (vLLM, SGLang), ISL + OSL / 2 held on average
KV_ADMISSION = ("full", "mean")
# TensorRT-LLM's capacity scheduler policies (``scheduler_config.capacity_scheduler_policy``) ->
# the KV admission they make: GUARANTEED_NO_EVICT (its default) reserves each request's prompt
# and whole output; MAX_UTILIZATION schedules on the blocks in use and pauses a request where
# they run out (the unified scheduler's MaxUtilizationScheduledBlocksManager /
# NoEvictScheduledBlocksManager; TensorRT-LLM docs, useful-runtime-flags)
TRTLLM_CAPACITY_POLICIES = {"GUARANTEED_NO_EVICT": "full", "MAX_UTILIZATION": "mean"}
# What ``memory_utilization`` is a fraction of (``serving.memory.kv_budget_bytes``): the memory
# free after weights and the profiled activation peak (TensorRT-LLM
# kv_cache_free_gpu_mem_fraction), the GPU's total memory for weights, activations and KV
# (vLLM gpu_memory_utilization), or the total for weights and KV with activations outside
# (SGLang mem_fraction_static)
MEMORY_BUDGETS = ("free", "total", "static")
# renamed constants: old name -> what replaced it (a clear error for old YAML files)
RENAMED = {
    "mem_efficiency": (
        "'mem_efficiency' was replaced by 'hbm_efficiency_scale', a multiplier on the hardware "
        "file's efficiency.hbm (mem_efficiency 0.8 on a GPU with hbm 0.80 = scale 1.0)"
    ),
    "moe_imbalance": (
        "'moe_imbalance' was replaced by 'routing_skew': the busiest EP rank's load now follows "
        "from multinomial top-k routing (routing.moe_rank_imbalance), and routing_skew "
        "(1 = uniform) scales its spread over uniform routing; TP-only MoE has no rank imbalance"
    ),
}


@dataclass(frozen=True)
class EngineConstants:
    """Fitted or default constants (SI units). Fractions lie in (0, 1]; times are >= 0.
    The base values and their sources are in ``data/engines/base.yaml`` (``load_engine("base")``);
    derive variants with ``load_engine().with_overrides(...)``.

    Attributes:
        gemm_scale: multiplier on the hardware's measured GEMM ceiling (MAMF fraction).
        hbm_efficiency_scale: multiplier on the hardware's measured HBM fraction
            (``efficiency.hbm``) for streaming kernels: achieved bandwidth = datasheet x
            hbm_efficiency x hbm_efficiency_scale (``cost.hbm_bytes_per_s_achieved``).
        attn_prefill_efficiency: fraction of tensor-core peak reached by prefill attention.
        attn_decode_efficiency: fraction of HBM bandwidth reached by decode attention (KV read).
        kernel_overhead_s: fixed cost per kernel launch/ramp (ops x layers per step).
        step_overhead_s: fixed cost per engine iteration (scheduling, sampling, host sync).
        host_overlap: share of the host work (step + per-sequence overheads) hidden behind the
            GPU's work of the previous step (TensorRT-LLM's and SGLang's overlap schedulers).
        request_overhead_s: fixed latency added to every request's TTFT (request admission,
            tokenization, first-token detokenization and delivery).
        per_seq_overhead_s: host-side cost per scheduled sequence per iteration (request
            bookkeeping, sampling, detokenization): what caps small models' throughput.
        allreduce_latency_s: small-message latency of one all-reduce inside an NVLink domain.
        alltoall_latency_s: latency of one NCCL all-to-all (Helix exchange); MoE dispatch and
            combine use the kernel family of ``moe_comm`` instead.
        network_latency_s: extra latency when a collective crosses the scale-out network.
        comm_efficiency: multiplier on the hardware's measured link efficiency.
        moe_comm: MoE dispatch/combine kernel family (``MOE_COMM``).
        moe_kernels: the MoE kernel path around the grouped GEMMs (``MOE_KERNELS``;
            ``moe_kernels.moe_kernel_path``): what the permute and finalize stream per token.
        moe_kernels_weight_only: the grouped GEMMs' path for experts the GPU runs weight-only
            (``HardwareSpec.runs_weight_only``: MXFP4 on Hopper), where the MoE is not
            tensor-parallel (``WEIGHT_ONLY_MOE_KERNELS``; ``moe_kernels.weight_only_tiles``):
            ``same`` keeps ``moe_kernels``.
        moe_kernels_int4: the path for 4-bit integer weight-only experts (``INT4_MOE_KERNELS``).
        attention_kernels: the MLA decode-attention kernel family the engine runs
            (``ATTENTION_KERNELS``; ``attention_kernels.decode_attention_efficiency``): a GPU
            file's entries for that family where it has them, else its default entries.
        dsa_kernels: the DeepSeek Sparse Attention kernels the engine runs (``DSA_KERNELS``).
        gqa_decode_kernels: the GQA decode-attention kernel family the engine runs
            (``GQA_DECODE_KERNELS``): a GPU file's measured FP8-cache read rate of that family
            (``efficiency.fp8_kv_decode``) caps ``attn_decode_efficiency`` over an FP8 cache.
        kv_admission: KV the scheduler holds per running sequence (``KV_ADMISSION``;
            ``serving.memory.kv_context``).
        moe_layer_overhead_s: fixed time per MoE layer per step of the kernels around the
            grouped GEMMs (routing/top-k, sort/align, permute, quantize, finalize).
        indexer_overhead_s: fixed time per DeepSeek Sparse Attention layer per step of the
            lightning indexer's kernel chain beyond what its GEMMs and logits cost at the
            roofline (LayerNorm, RoPE, FP8 quantization, index-K store, paged-logits metadata,
            top-k selection): measured per engine (``benchmarks/dsa_indexer_report.py``).
        msa_indexer_overhead_s: the same for MiniMax Sparse Attention's block indexer (norms,
            RoPE, key store, block top-k; ``benchmarks/msa_module_report.py --fit``).
        compressed_overhead_s / compressed_indexer_overhead_s / compressed_topk_s: the same for
            a DeepSeek-V4 compressed layer's attention module (norms, RoPE, FP8 cache stores,
            the compressor's pooling and state, metadata) / a CSA layer's indexer beside it /
            its top-k selection, which runs where the entries pass top-k: measured per engine
            (``benchmarks/dsv4_attention_report.py --fit``).
        routing_skew: spread of the busiest EP rank's load over that of uniform multinomial
            top-k routing (1 = uniform; real routers without a load balancer are skewed, a
            balancer with redundant experts can do better than uniform, 0 = perfect balance).
        expert_balancer: the expert load balancer the engine runs (``EXPERT_BALANCERS``:
            ``none``; ``eplb``: redundant experts placed by load, SGLang/vLLM
            ``--enable-eplb``, TensorRT-LLM's MoE load balancer; ``uniform``: equally popular
            experts, as synthetic kernel benchmarks route); it sets how unequal the experts'
            popularity leaves the EP ranks (``EXPERT_POPULARITY_CV``).
        max_num_tokens: tokens per engine step (chunked-prefill budget); 0: the runtime's own
            for the GPU (``gpu_defaults``).
        memory_utilization: the engine's memory fraction, of what ``memory_budget`` says; 0:
            SGLang's own default for each plan and GPU (``--mem-fraction-static`` unset;
            ``serving.memory.sglang_memory_fraction``, with ``memory_budget`` static only).
        memory_budget: what ``memory_utilization`` is a fraction of (``MEMORY_BUDGETS``):
            ``free``: the memory left after weights and the profiled activation peak, all of
            it KV (TensorRT-LLM ``kv_cache_free_gpu_mem_fraction``); ``total``: the GPU's
            memory, for weights, activations and KV (vLLM ``gpu_memory_utilization``);
            ``static``: the GPU's memory, for weights and KV, activations from the rest
            (SGLang ``mem_fraction_static``). ``serving.memory.kv_budget_bytes``.
        max_batch_size: most sequences an engine schedules at once (bounds offline runs); 0:
            the runtime's own for the GPU (``gpu_defaults``).
        cuda_graph_batches: the batch sizes the engine captures its decode step at as CUDA
            graphs, a decode-only step running the next one up (``specs.cuda_graphs``: a rule of
            ``GRAPH_RULES`` or a comma-separated list of sizes; ``none``: no padding).
        gpu_defaults: whose rule fills ``max_num_tokens`` / ``max_batch_size`` left at 0 for
            each GPU (``specs.gpu_defaults.GPU_DEFAULTS``: none, sglang, vllm; ``for_gpu``).
        token_budget_scope: whose ``max_num_tokens`` it is: ``rank``, each attention-DP rank's;
            ``server``, the server's, split over its attention-DP ranks (SGLang:
            ``chunked_prefill_size // dp_size``; ``serving.memory.rank_token_budget``).
        ttft_burst: mean TTFT includes the start-up burst of a closed-loop benchmark
            (all clients start at once); see serving.ttft.
        moe_partial_ep: the engine runs MoE layers as ep x moe_tp = tp with 1 < ep < tp (else
            experts are either all expert-parallel or all tensor-parallel over the tp ranks;
            ``specs.plan.plan_feasibility``).
        pp_prefill_overlap: under pipeline parallelism the engine runs the chunks of one prompt
            in successive micro-batches without waiting for the previous chunk to leave the
            last stage (a lone prompt of n chunks takes n + pp - 1 stage times, else n x pp).
        recurrent_state_overlap: the engine keeps its overlap scheduler (``host_overlap``) for
            models with recurrent-state token mixers (linear attention, SSMs: ``linear`` in
            ``ModelSpec.mixers``); false: it runs such models without it, its host work
            in series with the GPU's (SGLang with its radix cache on; ``serving.step
            .host_overlap_share``).
        spec_separate_drafts: a speculative step (MTP, EAGLE) runs the draft model's k passes
            as forward passes of their own after the verify, each with the host work of a step
            (``step_overhead_s`` and ``per_seq_overhead_s`` a sequence of the scheduling rank)
            that the overlap scheduler cannot hide: a pass's inputs are the verify's accepted
            tokens (SGLang's EAGLE worker). False: the drafts run inside the target's forward
            (TensorRT-LLM's one-model MTP) and add no host work (``serving.step.draft_time``).
        windowed_kv_share: the share of a sliding-window layer's whole context that the engine's
            KV cache reserves for a sequence beside its full-attention layers, in [0, 1]: the
            layer holds max(window-capped context, share x context) tokens in
            ``serving.memory.memory_fit``. 0: the window only (vLLM's hybrid KV manager); 0.8:
            SGLang's SWA pool (``--swa-full-tokens-ratio``); 1: every layer at full attention
            (TensorRT-LLM's equal pools per window size). Models of windowed layers only, and
            Llama 4's chunked attention, follow their own rule (``mixers.windowed_share``). What the
            layer's attention reads stays capped at the window.
        adp_balance_timeout_iters: TensorRT-LLM's attention-DP context balance
            (``attention_dp_config``: ``enable_balance`` with ``timeout_iters``): while every
            attention-DP rank decodes, a context request waits until every rank holds one, at
            most this many iterations, and then all ranks prefill in the same iteration
            (``serving.balance.adp_balance_window``). 0: balance off (TensorRT-LLM's default).
            SGLang's prefill delayer is the same hold, max delay passes - 1 iterations
            (``SGLANG_PREFILL_DELAYER_PASSES``), counted as ``adp_balance_kind`` says.
        adp_balance_kind: whose hold ``adp_balance_timeout_iters`` is (``ADP_BALANCE_KINDS``):
            ``executor``, TensorRT-LLM's balance, whose count runs every iteration (rounds at
            the timeout fall every T iterations, whatever arrived) and which lets the prompts
            through while some rank decodes nothing; ``delayer``, SGLang's prefill delayer,
            which counts only the passes it delays, from the first (a lone prompt waits the
            whole T). The request simulator runs each (``serving.sim_ranks``).
        adp_balance_wait_iters: the balance's ``batching_wait_iters``: iterations it waits
            further, once every rank holds a context request, to gather more of them.
        batch_wait_timeout_iters: TensorRT-LLM's batch waiting without attention-DP
            (``batch_wait_timeout_iters``): while sequences decode, the scheduler holds context
            requests back until the step's tokens (prompts and decode) reach
            ``batch_wait_max_tokens_ratio`` x ``max_num_tokens``, at most this many iterations,
            then prefills them together (``serving.balance.batch_wait_window``). 0: off
            (TensorRT-LLM's default).
        batch_wait_max_tokens_ratio: the batch waiting's ``batch_wait_max_tokens_ratio``, in
            [0, 1]: the share of ``max_num_tokens`` whose tokens release the held prompts at
            once (0: none held).
    """

    id: str
    gemm_scale: float
    hbm_efficiency_scale: float
    attn_prefill_efficiency: float
    attn_decode_efficiency: float
    kernel_overhead_s: float
    step_overhead_s: float
    per_seq_overhead_s: float
    request_overhead_s: float
    host_overlap: float
    allreduce_latency_s: float
    alltoall_latency_s: float
    network_latency_s: float
    comm_efficiency: float
    moe_comm: str
    moe_kernels: str
    moe_kernels_weight_only: str
    moe_kernels_int4: str
    attention_kernels: str
    gqa_decode_kernels: str
    dsa_kernels: str
    kv_admission: str
    moe_layer_overhead_s: float
    indexer_overhead_s: float
    msa_indexer_overhead_s: float
    compressed_overhead_s: float
    compressed_indexer_overhead_s: float
    compressed_topk_s: float
    routing_skew: float
    expert_balancer: str
    max_num_tokens: int
    memory_utilization: float
    memory_budget: str
    max_batch_size: int
    cuda_graph_batches: str
    gpu_defaults: str
    token_budget_scope: str
    ttft_burst: float
    moe_partial_ep: bool
    pp_prefill_overlap: bool
    recurrent_state_overlap: bool
    spec_separate_drafts: bool
    windowed_kv_share: float
    adp_balance_timeout_iters: int
    adp_balance_wait_iters: int
    adp_balance_kind: str
    batch_wait_timeout_iters: int
    batch_wait_max_tokens_ratio: float
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def with_overrides(self, **changes: Any) -> EngineConstants:
        for name in ITERATION_FIELDS:  # whole numbers of any integer type, stored as int
            if name in changes and _whole(changes[name]) is not None:
                changes[name] = _whole(changes[name])
        out = dataclasses.replace(self, **changes)
        _check(out, "engine override")
        return out

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("sources")
        return d


ADP_BALANCE_FIELDS = ("adp_balance_timeout_iters", "adp_balance_wait_iters")
# whose attention-DP hold the balance fields describe: TensorRT-LLM's executor balance
# (PyExecutor._balance_adp_requests: its count runs every iteration, restarting at the timeout or
# a release) or SGLang's prefill delayer (PrefillDelayer._negotiate_should_allow_prefill_pure: a
# delay episode starts at the first pass some rank can prefill and another not, counts the
# passes it delays and ends at max passes - 1 or when every rank can prefill)
ADP_BALANCE_KINDS = ("executor", "delayer")
# every constant counted in executor iterations (whole numbers, at most ADP_BALANCE_MAX_ITERS)
ITERATION_FIELDS = (*ADP_BALANCE_FIELDS, "batch_wait_timeout_iters")
# TensorRT-LLM's AttentionDpConfig defaults (llm_args.py) where enable_balance is on and the
# options leave the two counts out
TRTLLM_ADP_BALANCE_DEFAULTS = {"adp_balance_timeout_iters": 50, "adp_balance_wait_iters": 10}
# SGLang's prefill delayer (``--enable-prefill-delayer``, attention-DP only): while some DP ranks
# hold a prompt and others none, it holds the prompts at most ``--prefill-delayer-max-delay-
# passes`` - 1 forward passes (PrefillDelayer._negotiate_should_allow_prefill_pure: delay while
# the delayed count is under max - 1), then lets them through; all ranks holding one releases them
# at once. The attention-DP context balance with timeout max - 1 and no batching wait (it has no
# guard on the ranks decoding, which the balance's ramp keeps). Default 30 passes
# (sgl-project/sglang python/sglang/srt/server_args.py, prefill_delayer_max_delay_passes)
SGLANG_PREFILL_DELAYER_PASSES = 30
ADP_BALANCE_MAX_ITERS = 100_000  # a bound on the scheduler's waits (iterations), not a fact
# SGLang's KV cache format where ``--kv-cache-dtype`` is ``auto`` for a DeepSeek Sparse
# Attention model (its ``is_deepseek_nsa``: DeepseekV3/V32, GlmMoeDsaForCausalLM with
# ``index_topk``): ``fp8_e4m3`` on compute capability 10 and above (NVIDIA Blackwell, B200 to
# RTX), ``bfloat16`` below (Hopper; ROCm reports 9.x), whatever the checkpoint quantizes
# (ServerArgs._set_default_nsa_kv_cache_dtype, called from _handle_model_specific_adjustments;
# sgl-project/sglang python/sglang/srt/server_args.py, the stored version of search-index file id
# 271536807; GLM-5 joined is_deepseek_nsa in sgl-project/sglang#18521). Every other model's
# ``auto`` is the model's dtype unless its checkpoint quantizes the cache.
SGLANG_DSA_FP8_KV_ARCHITECTURES = ("blackwell", "blackwell-ultra", "blackwell-rtx")


def sglang_auto_kv_fp8(model: Any, hardware: Any) -> bool:
    """Whether SGLang's automatic KV format (no ``--kv-cache-dtype``, or ``auto``) is FP8 for
    ``model`` on ``hardware`` whatever its checkpoint states: a DeepSeek Sparse Attention model
    (``ModelSpec.indexer`` of kind ``dsa``) on an NVIDIA GPU of compute capability 10 or more
    (``SGLANG_DSA_FP8_KV_ARCHITECTURES``). False where ``auto`` follows the checkpoint (the
    model's dtype unless the checkpoint quantizes its cache), DSA models on Hopper included,
    which SGLang gives a BF16 cache."""
    dsa = getattr(getattr(model, "indexer", None), "kind", "") == "dsa"  # (not MSA's)
    nvidia = str(getattr(hardware, "vendor", "")).lower() == "nvidia"
    arch = getattr(hardware, "architecture", "")
    return dsa and nvidia and arch in SGLANG_DSA_FP8_KV_ARCHITECTURES


FRACTIONS = ("attn_prefill_efficiency", "attn_decode_efficiency")
TIMES = ("kernel_overhead_s", "step_overhead_s", "per_seq_overhead_s", "request_overhead_s",
         "allreduce_latency_s", "alltoall_latency_s", "network_latency_s",
         "moe_layer_overhead_s", "indexer_overhead_s", "msa_indexer_overhead_s",
         "compressed_overhead_s", "compressed_indexer_overhead_s", "compressed_topk_s")  # fmt: skip


# the engine's named behaviours: (constant, its allowed values, what an unknown value is not:
# "" for none, the message's "is not a known <what>")
CHOICES = (
    ("kv_admission", KV_ADMISSION, ""),
    ("moe_comm", MOE_COMM, "kernel family"),
    ("moe_kernels", MOE_KERNELS, "MoE kernel path"),
    ("moe_kernels_weight_only", WEIGHT_ONLY_MOE_KERNELS, "weight-only MoE kernel path"),
    ("moe_kernels_int4", INT4_MOE_KERNELS, "INT4 MoE kernel path"),
    ("attention_kernels", ATTENTION_KERNELS, "decode-attention kernel family"),
    ("gqa_decode_kernels", GQA_DECODE_KERNELS, "GQA decode-attention kernel family"),
    ("dsa_kernels", DSA_KERNELS, "DeepSeek Sparse Attention kernel family"),
    ("expert_balancer", EXPERT_BALANCERS, "expert load balancer"),
    ("memory_budget", MEMORY_BUDGETS, "memory fraction convention"),
    ("gpu_defaults", GPU_DEFAULTS, ""),
    ("token_budget_scope", TOKEN_BUDGET_SCOPES, ""),
    ("adp_balance_kind", ADP_BALANCE_KINDS, "attention-DP hold"),
)


def _whole(v: Any) -> int | None:
    """``v`` as a Python int where it is a whole number type (numpy's too), else None."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _check(c: EngineConstants, where: str) -> None:
    for name in FRACTIONS:
        v = getattr(c, name)
        if not 0 < v <= 1:
            raise SpecError(f"{where}: {name}={v} must be a fraction in (0, 1]")
    if not 0 <= c.memory_utilization <= 1 or (
        c.memory_utilization == 0 and c.memory_budget != "static"
    ):
        raise SpecError(
            f"{where}: memory_utilization={c.memory_utilization} must be a fraction in (0, 1], "
            "or 0 with memory_budget static (SGLang's default mem_fraction_static for each plan)"
        )
    for name in TIMES:
        v = getattr(c, name)
        if not 0 <= v < 1:
            raise SpecError(f"{where}: {name}={v} must be a non-negative time under 1 s")
    if not 0 < c.gemm_scale <= 1.5 or not 0 < c.comm_efficiency <= 1.2:
        raise SpecError(
            f"{where}: gemm_scale and comm_efficiency must be positive multipliers near 1"
        )
    if not 0 < c.hbm_efficiency_scale <= 1.5:
        raise SpecError(
            f"{where}: hbm_efficiency_scale={c.hbm_efficiency_scale} must be a positive multiplier "
            "near 1 (at most 1.5)"
        )
    if not 0 <= c.windowed_kv_share <= 1:
        raise SpecError(
            f"{where}: windowed_kv_share={c.windowed_kv_share} must be a share of the context in "
            "[0, 1] (0: a windowed layer holds its window only; 1: its whole context)"
        )
    if not 0 <= c.routing_skew <= 100:
        raise SpecError(f"{where}: routing_skew={c.routing_skew} must lie in [0, 100]")
    for name, allowed, what in CHOICES:  # each named behaviour: one of its known values
        if getattr(c, name) not in allowed:
            what = f" is not a known {what}" if what else ""
            raise SpecError(
                f"{where}: {name}={getattr(c, name)!r}{what}; allowed: " + ", ".join(allowed)
            )
    check_graph_batches(c.cuda_graph_batches, where)
    for name in ("max_num_tokens", "max_batch_size"):  # 0: a rule's value for each GPU
        if getattr(c, name) < (0 if name in RULE_FIELDS.get(c.gpu_defaults, ()) else 1):
            rules = [r for r, names in RULE_FIELDS.items() if name in names]
            raise SpecError(
                f"{where}: {name}={getattr(c, name)} must be >= 1, or 0 with "
                f"gpu_defaults {' or '.join(rules)} (the runtime's own for each GPU)"
            )
    if not 0 <= c.ttft_burst <= 1 or not 0 <= c.host_overlap <= 1:
        raise SpecError(f"{where}: ttft_burst and host_overlap must lie in [0, 1]")
    if not 0 <= c.batch_wait_max_tokens_ratio <= 1:
        raise SpecError(
            f"{where}: batch_wait_max_tokens_ratio={c.batch_wait_max_tokens_ratio} must be a "
            "share of max_num_tokens in [0, 1]"
        )
    for name in ITERATION_FIELDS:
        v = getattr(c, name)
        whole = _whole(v)
        if whole is None or not 0 <= whole <= ADP_BALANCE_MAX_ITERS:
            raise SpecError(
                f"{where}: {name}={v!r} must be a whole number of iterations in "
                f"[0, {ADP_BALANCE_MAX_ITERS}]"
            )


def engine_from_mapping(
    data: dict[str, Any], where: str, *, base: EngineConstants | None = None
) -> EngineConstants:
    """Engine constants from a mapping: the constants it gives, the rest from ``base`` (by
    default the bundled ``default`` engine). ``sources`` are the mapping's own."""
    return _from_mapping(data, where, base or _bundled("base"))


def _from_mapping(
    data: dict[str, Any], where: str, base: EngineConstants | None
) -> EngineConstants:
    """``base=None``: every constant is required (the base file itself)."""
    f = Fields(data, where)
    for old, why in RENAMED.items():
        if old in data:
            raise SpecError(f"{where}: {why}")
    allowed = {x.name for x in dataclasses.fields(EngineConstants)}
    f.reject_unknown(allowed)
    kwargs: dict[str, Any] = {"id": f.str("id")}
    for x in dataclasses.fields(EngineConstants):
        if x.name in ("id", "sources"):
            continue
        if x.name not in data and base is not None:
            kwargs[x.name] = getattr(base, x.name)
        elif x.name in ITERATION_FIELDS:
            kwargs[x.name] = f.int(x.name, minimum=0, maximum=ADP_BALANCE_MAX_ITERS)
        elif x.name in ("max_num_tokens", "max_batch_size"):
            kwargs[x.name] = f.int(x.name, minimum=0)  # (0: the runtime's, _check)
        elif x.name in {name for name, _, _ in CHOICES} | {"cuda_graph_batches"}:
            kwargs[x.name] = f.str(x.name)
        elif x.type in (bool, "bool"):
            kwargs[x.name] = f.bool(x.name)
        else:
            kwargs[x.name] = f.float(x.name, positive=False)
    kwargs["sources"] = {
        str(k): str(v) for k, v in f.mapping("sources", required=False).data.items()
    }
    out = EngineConstants(**kwargs)
    _check(out, where)
    return out


def _dir() -> Path:
    return Path(str(resources.files("llm_codesign") / "data" / "engines"))


@cache
def _bundled(engine_id: str) -> EngineConstants:
    path = _dir() / f"{engine_id}.yaml"
    data = read_mapping(path)
    if engine_id == "base":
        return _from_mapping(data, path.name, None)
    return _from_mapping(data, path.name, _bundled("base"))


def load_engine(
    engine: str | Path | EngineConstants | None = None, hardware: Any = None
) -> EngineConstants:
    """Resolve engine constants: None or ``default`` -> ``DEFAULT_ENGINE`` (TensorRT-LLM), or
    with ``hardware`` (a ``HardwareSpec``) its vendor's default (``DEFAULT_ENGINE_BY_VENDOR``:
    vLLM on AMD); an engine id; or a YAML path. With ``hardware``, a bundled engine that does
    not run on its vendor's GPUs (``ENGINE_VENDORS``: TensorRT-LLM on an AMD GPU) is refused,
    naming the engines that do. With ``hardware``, the limits the engine leaves to its runtime
    (0) are the runtime's for that GPU (``specs.gpu_defaults.for_gpu``)."""
    eng = engine if isinstance(engine, EngineConstants) else _named(engine, hardware)
    if hardware is not None and (engine is eng or str(engine) in ENGINES):
        check_engine_runs_on(eng.id, hardware)  # (a deployment's, a caller's or a bundled one)
    return eng if hardware is None else for_gpu(eng, hardware)


def _named(engine: str | Path | None, hardware: Any) -> EngineConstants:
    """The engine ``load_engine`` names: the default (by the hardware's vendor), an id or a
    YAML path."""
    if engine is None or str(engine) == "default":
        vendor = str(getattr(hardware, "vendor", "")).lower()
        return _bundled(DEFAULT_ENGINE_BY_VENDOR.get(vendor, DEFAULT_ENGINE))
    text = str(engine)
    if text in ENGINES:
        return _bundled(text)
    path = existing_file(text)
    if path is not None:
        return engine_from_mapping(read_mapping(path), str(path))
    raise UnknownIdError(
        f"unknown engine {shown(text)!r}; allowed: {', '.join(ENGINES)} or a YAML path"
    )


def check_engine_runs_on(engine_id: str, hardware: Any) -> None:
    """Refuse a bundled engine on a GPU whose vendor it does not run on (``ENGINE_VENDORS``:
    TensorRT-LLM on an AMD GPU), naming the engines that do. Engines that are not one runtime
    (base, generic, a user's YAML) and GPUs of no known vendor (a CPU calibration profile) pass."""
    vendor = str(getattr(hardware, "vendor", "")).lower()
    runs_on = ENGINE_VENDORS.get(engine_id)
    gpu_vendors = {v for vs in ENGINE_VENDORS.values() for v in vs}
    if runs_on is not None and vendor in gpu_vendors and vendor not in runs_on:
        others = [e for e, vs in ENGINE_VENDORS.items() if vendor in vs]
        raise UnsupportedError(
            f"engine {engine_id} runs on {', '.join(runs_on)} GPUs only; {hardware.id} is "
            f"{vendor}: use one of {', '.join(others)} (or generic, base, a YAML path)"
        )


# AMD's ATOM engine's framework label ("atom", "ATOM (image)")
ATOM_FRAMEWORK = re.compile(r"atom\b")


def engine_for_framework(framework: str) -> str:
    """Map a measurement's framework text to an engine id (``trtllm``, ``trtllm-trt``, ``vllm``,
    ``sglang``; ``generic`` for any other framework). ``dynamo-sglang`` is SGLang; ``trt`` and
    ``dynamo-trt`` (InferenceX's labels for trtllm-serve and Dynamo's TensorRT-LLM runtime) are
    TensorRT-LLM's PyTorch runtime; AMD's ATOM, "a lightweight vLLM-like implementation"
    (ROCm/ATOM README) that also runs as vLLM's out-of-tree platform plugin, takes vLLM's."""
    t = framework.lower().strip()
    if "vllm" in t or ATOM_FRAMEWORK.match(t):
        return "vllm"
    if "sglang" in t:
        return "sglang"
    if re.match(r"(dynamo-)?trt\b", t):
        return "trtllm"
    if "tensorrt" in t or "trtllm" in t or "trt-llm" in t:
        m = re.search(r"(?:v|trtllm |tensorrt-llm )(\d+)\.(\d+)", t)
        if m and int(m.group(1)) == 0:
            return "trtllm-trt"
        return "trtllm"
    return "generic"
