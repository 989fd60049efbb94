"""The engine limits a benchmark recipe ran with, where a table does not state them.

``trtllm-bench throughput`` (TensorRT-LLM's max-throughput benchmark; the tables
``trtllm_perf_v1.0`` and ``trtllm_perf_devguide`` of serving.csv, PyTorch backend) chooses the
runtime ``max_batch_size`` and ``max_num_tokens`` itself when the command does not pass both,
and the published commands pass neither. The published rows therefore ran with limits well
below the engine defaults (2,048 sequences, 8,192 tokens) that ``serving.evaluate`` assumes
for TensorRT-LLM: DeepSeek-R1 on 8 x H200 at ISL/OSL 1024/1024 ran 384 sequences and 2,048
tokens per rank. The rule (NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/build/tuning.py``
``calc_engine_setting`` / ``finetune_setting``, ``bench/build/build.py``
``get_benchmark_engine_settings``, ``bench/benchmark/utils/general.py`` ``get_settings``; the
same arithmetic in every 2025 version read, v0.21 to v1.1):

* it runs for checkpoints quantized NVFP4, FP8 or FP8 block-scaled, or unquantized; any other
  (MXFP4: gpt-oss) keeps the defaults 2,048 / 8,192 (``TUNED_QUANTS``);
* KV per token (GiB) = 2 x layers x max(tp, num_key_value_heads) x head_size x KV bytes /
  1024^3, with the HuggingFace config's head count and ``head_size`` = its ``head_dim``, else
  hidden / heads. MLA models are priced as if they cached every head: DeepSeek-R1's config
  states 128 KV heads and no ``head_dim`` (head_size 56), about 25x its real latent cache;
* weights (GiB) = the checkpoint's safetensors element count x bytes per element (FP8 1,
  NVFP4 0.5, else 2). NVFP4 checkpoints store two FP4 values per byte with an FP8 scale per 16
  (ModelOpt's export), so their element count is 9/16 of the parameters;
* cache (GiB) = (GPU memory x tp x pp - weights) x ``--kv_cache_free_gpu_mem_fraction``
  (0.95 here: the tables' notes, "0.95 in most cases"), and the requests that fit =
  cache / (KV per token x (ISL + OSL));
* batch = min(requests, 4096) / pp, rounded up to a multiple of 32 (at least 64) below 256,
  of 128 below 1,024, else of 256; tokens = min(batch x (1 + ISL / OSL), 32768) (unrounded
  batch), rounded up to a multiple of 256 (at least 2,048) below 4,096, of 512 below 8,192,
  else of 1,024; chunked prefill being off (its default), tokens >= ISL + batch.

The v0.17 TRT-engine table sized its engines with the same rule (``trtllm-bench build
--dataset``); that version divided the weights by 1000^3 instead of 1024^3, a few percent of
the cache, not modelled. EP and attention-DP are not inputs of the rule, and the executor
applies both limits per rank (``LlmArgs`` per attention-DP rank). GPU memory is the hardware
file's HBM in GiB (NVML's total, which the rule reads, is within 0.5% of it on H100, H200 and
B200).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import replace

from ..errors import SpecError
from ..formats import BLOCK_SCALED_WEIGHTS
from ..moe_kernels import runs_deepgemm, runs_trtllm_gen
from ..specs.cuda_graphs import executor_sizes
from ..specs.engine import (
    ADP_BALANCE_FIELDS,
    EXPERT_BALANCERS,
    MOE_COMM,
    TRTLLM_CAPACITY_POLICIES,
    EngineConstants,
)
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision
from .campaigns import run_date, run_gpu_precision
from .tables import bundled_rows

TRTLLM_BENCH = "trtllm-bench"
# vLLM releases whose MoE for block-scaled FP8 experts on SM90/SM100 is DeepGEMM computing its
# worst-case rows (``moe_kernels.DEEPGEMM_BLOCK_M``), [first, first after): the engine's
# ``moe_kernels`` becomes ``deepgemm`` for their rows (``vllm_release_recipe``). Read in each
# release's source (its PyPI sdist): 0.10.2 runs Triton; 0.11.0 DeepGEMM only from 128 tokens
# and GEMM2 widths over 512 (``_valid_deep_gemm``, enforced while E8M0 on Hopper stays off by
# default); 0.11.1-0.12.x at every batch, their padding rows labelled expert 0 and computed;
# 0.13-0.14 label them -1, which DeepGEMM's SM90 kernel loads but does not multiply (not priced
# here: its cost is the loads'); 0.15-0.16 default to FlashInfer's CUTLASS MoE, 0.17-0.19 to Triton
VLLM_DEEPGEMM_MOE = "vllm-deepgemm-moe"
VLLM_DEEPGEMM_MOE_RELEASES = ((0, 11, 1), (0, 13, 0))
# InferenceX's TensorRT-LLM aggregated DeepSeek-R1 runs (SemiAnalysisAI/InferenceX
# benchmarks/dsr1_fp8_h200_trt.sh, dsr1_fp8_h200_trt_mtp.sh, dsr1_fp4_b200_trt.sh @ 1fc5d73):
# with attention-DP their extra LLM-API options set ``attention_dp_config: enable_balance:
# true, timeout_iters: 60, batching_wait_iters: 0`` (TensorRT-LLM's default is no balance)
INFERENCEX_TRTLLM = "inferencex-trtllm"
# InferenceX's SGLang runs (``validate.launch_scripts.inferencex_script_settings``):
# ``inferencex-sglang`` with ``delay=<passes - 1>`` where the script passed
# --enable-prefill-delayer under attention-DP (the engine's attention-DP context balance at that
# timeout, no batching wait; ``inferencex_sglang_delayer``), ``mem=<per mille>`` and
# ``chunk=<tokens>``, the --mem-fraction-static and --chunked-prefill-size it passed
# (``inferencex_script_value``), each where it applies; InferenceX's vLLM runs: ``inferencex-vllm``
# with ``mem`` and ``chunk``, the --gpu-memory-utilization and --max-num-batched-tokens it passed
INFERENCEX_SGLANG = "inferencex-sglang"
INFERENCEX_VLLM = "inferencex-vllm"
INFERENCEX_ADP_BALANCE = {"adp_balance_timeout_iters": 60, "adp_balance_wait_iters": 0}
# and their engine limits (the same scripts, and their *_slurm.sh forms before 2026-01-22,
# SemiAnalysisAI/InferenceX b0c4ed21b^): kv_cache_config free_gpu_memory_fraction 0.75; without
# MTP --max_num_tokens max(8192, ceil64(CONC + ISL + 64)) and the default batch limit; with MTP
# (k = num_nextn_predict_layers) --max_batch_size B = max(1, CONC // TP) with attention-DP, else
# CONC, and --max_num_tokens ceil64((k + 1) B + ISL + 64), ISL the nominal input length
INFERENCEX_TRTLLM_KV_FRACTION = 0.75  # H200's, and the fraction of a GPU the file below omits
# each GPU's own fraction in its scripts: data/validation/inferencex_trtllm_kv_fractions.csv
INFERENCEX_TRTLLM_KV_FILE = "inferencex_trtllm_kv_fractions.csv"
INFERENCEX_TRTLLM_MIN_TOKENS = 8192  # the no-MTP script's floor
# ... which the scripts gained on 2026-01-21 (SemiAnalysisAI/InferenceX 64af5a771, H200 and B200,
# FP8 and FP4 alike): a run before it had ceil64(CONC + ISL + 64) tokens
INFERENCEX_TRTLLM_FLOOR_SINCE = "2026-01-21"
# Between two dates (2025-09-18 .. 2025-11-03, until InferenceX 17d5e204f made them inputs of
# the search space) the DeepSeek-R1 scripts chose EP and attention-DP themselves, by GPU,
# precision, TP, lengths and client count, and the API's ep / dp of those runs are its defaults
# (1, blank): data/validation/inferencex_trtllm_script_plans.csv, each rule with its script
INFERENCEX_SCRIPT_PLANS_FILE = "inferencex_trtllm_script_plans.csv"
# ... and their MoE backend on SM100/SM103 (B200, B300): ``moe_config.backend: TRTLLM``, the
# TRTLLM-Gen fused MoE (moe_kernels trtllm_gen), for a run without attention-DP; CUTLASS (FP4)
# or DEEPGEMM (FP8) with it (benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200_trt.sh,
# dsr1_fp8_b200_trt.sh and their _mtp forms @ 1b234994f). FP4: every version from 2025-09-17
# (c93f6ac82; CUTLASS before); until 2026-02-03 (6eecc0e66) the no-MTP script chose CUTLASS by
# client count instead (256 clients or more at 1k/1k and 1k/8k, more than 32 at 8k/1k), where
# its runs used attention-DP: the attention-DP test stands for it. FP8: DEEPGEMM until TRTLLM
# entered the scripts, 2026-01-29 (ec7bafaae; the MTP form 2026-02-05, 5d517074c). The gpt-oss,
# Qwen3.5 and MiniMax-M2.5 scripts set their own backend (validate.trtllm_scripts)
INFERENCEX_TRTLLM_GEN_SINCE = {"nvfp4": "2025-09-17", "fp8_block": "2026-01-29"}
INFERENCEX_TRTLLM_GEN_MTP_SINCE = {"nvfp4": "2025-09-17", "fp8_block": "2026-02-05"}


def inferencex_trtllm_moe(
    hw: HardwareSpec, weights: str, attention_dp: bool, spec_tokens: int, date: str
) -> bool:
    """Whether an InferenceX TensorRT-LLM aggregated run of ``weights`` experts on ``hw``
    ran the TRTLLM MoE backend (``INFERENCEX_TRTLLM_GEN_SINCE``; a run of no stated ``date``
    takes the current scripts'), which the TRTLLM-Gen path prices where it exists."""
    since = (INFERENCEX_TRTLLM_GEN_MTP_SINCE if spec_tokens else INFERENCEX_TRTLLM_GEN_SINCE).get(
        weights
    )
    ran = since is not None and not attention_dp and (not date or date >= since)
    return ran and runs_trtllm_gen(hw)


# InferenceX's aggregated H200 SGLang DeepSeek-R1 scripts (SemiAnalysisAI/InferenceX
# benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200.sh @ 8eec0d4, dsr1_fp8_h200_mtp.sh @ bdf931e;
# benchmarks/dsr1_fp8_h200.sh @ 1fc5d73) pass no --kv-cache-dtype: SGLang's ``auto`` is the
# model's dtype unless the checkpoint quantizes its KV cache. Its TensorRT-LLM scripts set
# kv_cache_config dtype fp8 (dsr1_fp8_h200_trt.sh @ 1fc5d73), which the precision's FP8 cache
# already is. Other rows that leave the KV unstated keep their precision's cache.
INFERENCEX_SGLANG_KV = (
    "a run the table of InferenceX's launch scripts does not cover takes SGLang's default, no "
    "--kv-cache-dtype (auto: the model's dtype where the checkpoint does not quantize its KV "
    "cache; validate.launch_scripts)"
)
# InferenceX's benchmark client (SemiAnalysisAI/InferenceX benchmarks/benchmark_lib.sh
# run_benchmark_serving @ 843c6254; before 2026-01-21 the same flags in each launch script, e.g.
# benchmarks/dsr1_fp8_h200_slurm.sh @ e06929c7): vLLM's benchmark_serving on the random dataset
# with --random-range-ratio 0.8 (.github/workflows/benchmark-tmpl.yml), --num-prompts 10 x
# CONC, --max-concurrency CONC, --request-rate inf, --ignore-eos. Each prompt's input and
# output length is drawn uniformly from the integers floor(0.8 L) .. L
# (utils/bench_serving/benchmark_serving.py sample_random_requests; kimbochen/bench_serving
# before), so the mean is (floor(0.8 L) + L) / 2, about 0.9 L. The run starts its CONC clients
# at once (the warm-up requests, 2 x CONC since 2026-01-21, finish before it) and times the run
# from its first request to its last finished. ``validate`` runs that client in the request
# simulator (``validate.simulated.inferencex_loop``): the drawn lengths spread each round's
# finishing times over at most a fifth of a request's life, so the start-up waves last several
# rounds. Where the analytic closed loop prices a row instead, the first of the ten rounds is
# its start-up wave share.
INFERENCEX_RANGE_RATIO = 0.8
INFERENCEX_PROMPTS_PER_CLIENT = 10
# InferenceX's disaggregated runs (Dynamo with TensorRT-LLM, SGLang or vLLM): its NVIDIA master
# config (SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml, later
# configs/nvidia-master.yaml) names one srt-slurm recipe per model, precision, GPU, lengths,
# speculative method, pools and concurrency (``CONFIG_FILE=``; ishandhanani/srt-slurm and
# NVIDIA/srt-slurm, vendored under benchmarks/multi_node/srt-slurm-recipes). The recipes cap each
# decode rank's batch, often below the client concurrency (the H100 TensorRT-LLM runs offer
# ceil(1.2 x the slots) clients per decode worker), so the surplus clients wait for a slot, and
# the prefill worker's batch and token budget. data/validation/inferencex_disagg_limits.csv holds,
# per run and master-config version since 2025-09-01 (its first and last dates), the decode
# batch per scheduling rank (TensorRT-LLM max_batch_size, SGLang max-running-requests // dp-size,
# vLLM max-num-seqs), the prefill batch per rank and token budget, the decode pool's MoE
# dispatch family (decode_moe_comm: SGLang moe-a2a-backend / deepep-mode, vLLM all2all-backend;
# blank for TensorRT-LLM's own choice) and the recipe file (or the master config's own settings
# before the recipe files)
# (benchmarks/inferencex_disagg_recipes.py writes it from a clone of InferenceX)
INFERENCEX_DISAGG = "inferencex-disagg"
DISAGG_RECIPE_KEYS = ("decode", "prefill", "tokens")  # its fields, each required
# and its optional a2a=i and pa2a=j: the decode and the prefill pool's MoE dispatch/combine
# family (the table's decode_moe_comm, prefill_moe_comm), DISAGG_RECIPE_A2A[i] (the decode
# pool's engine, recipe_behaviour; the prefill pool's, disagg_recipes.disagg_prefill_engine)
DISAGG_RECIPE_A2A = MOE_COMM[1:]  # the engine's families less auto
# (and bal=k, pbal=l: the decode and the prefill pool's expert balancer, EXPERT_BALANCERS[k])
DISAGG_RECIPE_OPTIONAL = ("a2a", "pa2a", "bal", "pbal")
INFERENCEX_DISAGG_LIMITS_FILE = "inferencex_disagg_limits.csv"
# The srt-slurm recipes of InferenceX's disaggregated SGLang runs set --mem-fraction-static
# (the vendored ones under benchmarks/multi_node/srt-slurm-recipes/sglang @843c6254: 0.7 to
# 0.95), which the limits table does not hold; those runs keep the 0.9 priced before SGLang's own
# default (serving.memory.sglang_memory_fraction) became the engine's, which reserves CUDA-graph
# memory for 512 sequences per DP-attention rank that these recipes do not capture
INFERENCEX_DISAGG_SGLANG_MEMORY_FRACTION = 0.9
# the recipe of an InferenceX disaggregated SGLang run the limits table has no row for: that
# memory fraction alone
INFERENCEX_DISAGG_SGLANG = "inferencex-disagg-sglang"
# (with the optional fields of DISAGG_RECIPE_OPTIONAL.) InferenceX's AMD disaggregated SGLang
# runs, whose scripts the limits table does not walk: the MoE flags their scripts pass each model
# (benchmarks/multi_node/amd_utils/models.yaml, every version from the first in InferenceX's
# repository, 2026-02-19 @8d81e0bf4, to @843c6254): the dispatch backend of its DP-attention /
# EP pools and SGLang's expert dispatch algorithm, per bundled model and run of versions,
# data/validation/inferencex_amd_disagg_flags.csv (benchmarks/inferencex_amd_disagg_flags.py
# writes it; disagg_recipes.amd_script_flags reads it). Runs before 2026-02-19 cloned their
# scripts from billishyahao/sglang_disagg (not read) and keep the engine's own.
INFERENCEX_AMD_DISAGG_FLAGS_FILE = "inferencex_amd_disagg_flags.csv"
# options a published trtllm-bench table's llm_options.yml sets per model beyond the limits:
# data/validation/trtllm_bench_options.csv (source id, bundled model id, the attention-DP
# context balance's timeout_iters and batching_wait_iters, and where the file says so)
TRTLLM_BENCH_OPTIONS_FILE = "trtllm_bench_options.csv"
KV_FRACTION = 0.95  # --kv_cache_free_gpu_mem_fraction of the published runs (their notes)
# the CUDA-graph sizes the published llm_options.yml sets for every model (cuda_graph_config:
# enable_padding: true, batch_sizes; perf-overview.md @00f37686 for v1.0, the developer guide's
# @03e27c7d): the sizes above the run's max_batch_size are dropped and max_batch_size joins them
# (NVIDIA/TensorRT-LLM PR #4843, 2025-06-02, written for these perf runs), so a decode step pads up
# to the next of them (specs.cuda_graphs)
TRTLLM_BENCH_GRAPH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192)
MAX_BATCH = 4096  # the rule's cap on the batch (before dividing by pp)
MAX_TOKENS = 32768  # and on the token budget (before rounding)
DEFAULT_LIMITS = (2048, 8192)  # BuildConfig's defaults, kept for checkpoints the rule skips
# formats the rule tunes (its bytes per element, FP8 1, NVFP4 0.5, BF16/FP16 2, are the
# formats' own element sizes)
_TUNED = ("fp8", "fp8_block", "nvfp4", "bf16", "fp16")


def _round_batch(b: float) -> int:
    if b < 256:
        return max(64, 32 * math.ceil(b / 32))
    if b < 1024:
        return 128 * math.ceil(b / 128)
    return 256 * math.ceil(b / 256)


def _round_tokens(t: float) -> int:
    if t < 4096:
        return max(2048, 256 * math.ceil(t / 256))
    if t < 8192:
        return 512 * math.ceil(t / 512)
    return 1024 * math.ceil(t / 1024)


def trtllm_bench_limits(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    tp: int,
    pp: int,
    isl: int,
    osl: int,
    kv_fraction: float = KV_FRACTION,
) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) per rank that ``trtllm-bench throughput`` chooses for
    fixed ISL/OSL (module docstring). Checkpoints outside the rule keep ``DEFAULT_LIMITS``."""
    weights = prec.weights.id
    if weights not in _TUNED:
        return DEFAULT_LIMITS
    a = model.attention
    heads = a.num_heads if a.kv_lora_rank else a.num_kv_heads
    head_size = model.hidden_size // a.num_heads if a.kv_lora_rank else a.head_dim
    kv_bytes = prec.kv_cache.element_bits / 8.0
    gib = float(2**30)
    per_token = 2.0 * model.num_layers * max(tp, heads) * head_size * kv_bytes / gib
    elements = model.total_params * (9.0 / 16.0 if weights == "nvfp4" else 1.0)
    engine = elements * prec.weights.element_bits / 8.0 / gib
    cache = (hw.device_memory / gib * tp * pp - engine) * kv_fraction
    requests = max(cache, 0.0) / (per_token * (isl + osl))
    raw_bs = min(requests, MAX_BATCH) / pp
    tokens = _round_tokens(min(raw_bs * (1.0 + isl / osl), MAX_TOKENS))
    batch = _round_batch(raw_bs)
    return batch, max(tokens, isl + batch)


def recipe_engine(
    recipe: str,
    eng: EngineConstants,
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    tp: int,
    pp: int,
    isl: int,
    osl: int,
) -> EngineConstants:
    """``eng`` with the limits the row's benchmark recipe ran with (``eng`` itself without a
    recipe)."""
    if recipe.partition(":")[0] != TRTLLM_BENCH:
        return recipe_behaviour(recipe, eng)
    batch, tokens = trtllm_bench_limits(model, hw, prec, tp, pp, isl, osl)
    eng = replace(recipe_behaviour(recipe, eng), max_batch_size=batch, max_num_tokens=tokens)
    if eng.cuda_graph_batches == "none":  # (an engine without CUDA graphs: TRT engines)
        return eng
    return replace(eng, cuda_graph_batches=executor_sizes(TRTLLM_BENCH_GRAPH_SIZES, batch))


def trtllm_bench_recipe(source_id: str, model_id: str) -> tuple[str, str]:
    """(the recipe of a ``trtllm-bench throughput`` row, the mapping's note of what it adds):
    ``TRTLLM_BENCH``, with the attention-DP context balance where the table's published
    ``llm_options.yml`` for that model sets one (``TRTLLM_BENCH_OPTIONS_FILE``).

    Example:
        >>> trtllm_bench_recipe("trtllm_perf_devguide", "deepseek-r1")[0]
        'trtllm-bench:balance=60:wait=0'
    """
    opts = _trtllm_bench_options().get((source_id.strip().lower(), model_id))
    if opts is None:
        return TRTLLM_BENCH, ""
    timeout, wait = opts
    note = (
        f"its llm_options.yml sets the attention-DP context balance (timeout_iters {timeout}, "
        f"batching_wait_iters {wait}; {TRTLLM_BENCH_OPTIONS_FILE})"
    )
    return f"{TRTLLM_BENCH}:balance={timeout}:wait={wait}", note


@functools.cache
def _trtllm_bench_options() -> dict[tuple[str, str], tuple[int, int]]:
    return {
        (r["source_id"].strip().lower(), r["model"].strip()): (
            int(r["adp_balance_timeout_iters"]),
            int(r["adp_balance_wait_iters"]),
        )
        for r in bundled_rows(TRTLLM_BENCH_OPTIONS_FILE)
    }


def vllm_release_recipe(framework: str, hw: HardwareSpec, weights: str) -> tuple[str, str]:
    """(``VLLM_DEEPGEMM_MOE``, the mapping's note) for an MoE row of a vLLM release in
    ``VLLM_DEEPGEMM_MOE_RELEASES`` whose experts are block-scaled FP8 on a GPU DeepGEMM runs on
    (``moe_kernels.runs_deepgemm``: Hopper, SM100 Blackwell); ("", "")
    for any other framework text, release, weight format or GPU.

    Example:
        >>> from llm_codesign import load_hardware
        >>> vllm_release_recipe("vllm 0.12.0", load_hardware("h200-sxm"), "fp8_block")[0]
        'vllm-deepgemm-moe'
        >>> vllm_release_recipe("vllm 0.16.0", load_hardware("h200-sxm"), "fp8_block")
        ('', '')
    """
    m = re.search(r"vllm\s+v?(\d+)\.(\d+)(?:\.(\d+))?", framework.lower())
    if m is None or not runs_deepgemm(hw) or weights not in BLOCK_SCALED_WEIGHTS:
        return "", ""
    release = tuple(int(x or 0) for x in m.groups())
    first, after = VLLM_DEEPGEMM_MOE_RELEASES
    if not first <= release < after:
        return "", ""
    return VLLM_DEEPGEMM_MOE, (
        "vLLM {}.{}.{}: block-scaled FP8 experts run DeepGEMM over padded rows "
        "(moe_kernels.padded_rows)".format(*release)
    )


def recipe_behaviour(recipe: str, eng: EngineConstants) -> EngineConstants:
    """``eng`` with the scheduler settings and limits a recipe states for the row
    (``inferencex_trtllm_recipe``: InferenceX's TensorRT-LLM limits, and its attention-DP
    context balance; ``trtllm_bench_recipe``: the balance its options file sets;
    ``disagg_recipes.inferencex_disagg_recipe``: a disaggregated run's pool limits, and an SGLang
    run's memory fraction, ``INFERENCEX_DISAGG_SGLANG_MEMORY_FRACTION``); ``eng``
    itself for any other recipe (the bare ``TRTLLM_BENCH``: its limits are
    ``recipe_engine``'s, per row)."""
    name, _, rest = recipe.partition(":")
    if name == VLLM_DEEPGEMM_MOE:
        return replace(eng, moe_kernels="deepgemm")
    if name == INFERENCEX_DISAGG_SGLANG:  # its memory fraction; an AMD run's dispatch, balancer
        eng = disagg_recipe_engine(eng, disagg_recipe_fields(recipe, rest))
        if eng.memory_utilization == 0:
            return replace(eng, memory_utilization=INFERENCEX_DISAGG_SGLANG_MEMORY_FRACTION)
        return eng
    if name == INFERENCEX_DISAGG:  # the decode pool's batch, the prefill pool's token budget
        pools = disagg_recipe_fields(recipe, rest)
        eng = disagg_recipe_engine(eng, pools)
        if eng.memory_utilization == 0:  # SGLang's default: the recipe set its own
            eng = replace(eng, memory_utilization=INFERENCEX_DISAGG_SGLANG_MEMORY_FRACTION)
        return replace(
            eng, max_batch_size=int(pools["decode"]), max_num_tokens=int(pools["tokens"])
        )
    if name == TRTLLM_BENCH and rest:
        bench = recipe_fields(recipe, rest, ("balance", "wait"), True, "trtllm_bench_recipe")
        return replace(
            eng,
            adp_balance_timeout_iters=int(bench["balance"]),
            adp_balance_wait_iters=int(bench["wait"]),
        )
    if name in (INFERENCEX_SGLANG, INFERENCEX_VLLM):  # the prefill delayer, fraction, tokens
        keys = ("delay", "mem", "chunk") if name == INFERENCEX_SGLANG else ("mem", "chunk")
        f = recipe_fields(recipe, rest, keys, False, "inferencex_script_settings")
        if "delay" in f:
            eng = replace(eng, adp_balance_timeout_iters=int(f["delay"]), adp_balance_wait_iters=0)
        if "chunk" in f:
            eng = replace(eng, max_num_tokens=int(f["chunk"]))
        return replace(eng, memory_utilization=int(f["mem"]) / 1000.0) if "mem" in f else eng
    if name != INFERENCEX_TRTLLM:
        return eng
    keys = ("adp", "batch", "tokens", "kv", "moe", "balance", "wait", "bwait", "bratio", "kvmean")
    fields = recipe_fields(recipe, rest, keys, False, "inferencex_trtllm_recipe")
    kv = int(fields["kv"]) / 100.0 if "kv" in fields else INFERENCEX_TRTLLM_KV_FRACTION
    over: dict[str, float | int | str] = {"memory_utilization": kv}
    if fields.get("moe") == "1":
        over["moe_kernels"] = "trtllm_gen"
    if "bwait" in fields:  # batch waiting (its share in basis points)
        over["batch_wait_timeout_iters"] = int(fields["bwait"])
        over["batch_wait_max_tokens_ratio"] = int(fields.get("bratio", "0")) / 1e4
    if fields.get("kvmean") == "1":  # TensorRT-LLM's capacity scheduler MAX_UTILIZATION
        over["kv_admission"] = TRTLLM_CAPACITY_POLICIES["MAX_UTILIZATION"]
    if fields.get("adp", "1") == "1":  # the bare name: the balance (its attention-DP recipe)
        over.update(INFERENCEX_ADP_BALANCE)
        if "balance" in fields:  # the script's own counts (the gpt-oss scripts')
            counts = (int(fields["balance"]), int(fields.get("wait", "0")))
            over.update(zip(ADP_BALANCE_FIELDS, counts))
    if "batch" in fields:
        over["max_batch_size"] = int(fields["batch"])
    if "tokens" in fields:
        over["max_num_tokens"] = int(fields["tokens"])
    return replace(eng, **over)


def disagg_recipe_fields(recipe: str, rest: str) -> dict[str, str]:
    """The fields of an ``inferencex_disagg_recipe`` (``DISAGG_RECIPE_KEYS``, each required,
    none for ``INFERENCEX_DISAGG_SGLANG``; ``DISAGG_RECIPE_OPTIONAL``, each an index: a2a= and
    pa2a= into ``DISAGG_RECIPE_A2A``, bal= and pbal= into ``EXPERT_BALANCERS``)."""
    sglang = recipe.partition(":")[0] == INFERENCEX_DISAGG_SGLANG  # (optional fields only)
    required = () if sglang else DISAGG_RECIPE_KEYS
    keys = (*required, *DISAGG_RECIPE_OPTIONAL)
    out = recipe_fields(recipe, rest, keys, required, "inferencex_disagg_recipe")
    for k in DISAGG_RECIPE_OPTIONAL:
        top = len(EXPERT_BALANCERS if k.endswith("bal") else DISAGG_RECIPE_A2A)
        if k in out and int(out[k]) >= top:
            raise SpecError(f"recipe {recipe!r}: {k}= must be below {top}")
    return out


def disagg_recipe_engine(eng: EngineConstants, fields: dict[str, str]) -> EngineConstants:
    """``eng`` with the decode pool's dispatch family (a2a=) and expert balancer (bal=) a
    disaggregated recipe's fields state (``DISAGG_RECIPE_OPTIONAL``; the prefill pool's:
    ``disagg_recipes.disagg_prefill_engine``)."""
    if "a2a" in fields:
        eng = replace(eng, moe_comm=DISAGG_RECIPE_A2A[int(fields["a2a"])])
    if "bal" in fields:
        eng = replace(eng, expert_balancer=EXPERT_BALANCERS[int(fields["bal"])])
    return eng


def recipe_fields(
    recipe: str, rest: str, keys: tuple[str, ...], every: bool | tuple[str, ...], maker: str
) -> dict[str, str]:
    """The ``key=value`` fields after a recipe's name: keys of ``keys`` (each of them where
    ``every`` is true, those it names where it is a tuple), each once, each value a whole
    number in ASCII digits; a ``SpecError`` naming the recipe, the rule and its maker otherwise
    (an empty field, an unknown or repeated key, another value)."""
    pairs = [f.partition("=") for f in rest.split(":")] if rest else []
    found = [k for k, _, _ in pairs]
    values_ok = all(eq and re.fullmatch(r"[0-9]+", v) for _, eq, v in pairs)
    keys_ok = len(set(found)) == len(found) and set(found) <= set(keys)
    need = set(keys) if every is True else set(every or ())
    if not (values_ok and keys_ok and need <= set(found)):
        shown = (" and " if every else ", ").join(f"{k}=" for k in keys)
        raise SpecError(
            f"recipe {recipe!r}: fields must be {shown} with integer values, each once "
            f"(validate.recipes.{maker})"
        )
    return {k: v for k, _, v in pairs}


def inferencex_trtllm_script_plan(
    row: dict[str, str], model_id: str, isl: int, osl: int, clients: int, tp: int, ep: int,
    adp: bool,
) -> tuple[int, bool, str]:  # fmt: skip
    """(ep, attention-DP, the mapping's note) an InferenceX TensorRT-LLM aggregated run used:
    its script's own choice for a run between a rule's dates (``INFERENCEX_SCRIPT_PLANS_FILE``:
    EP = TP above one client count, attention-DP above another), else the row's own."""
    date, (gpu, prec) = run_date(row), run_gpu_precision(row)
    for r in bundled_rows(INFERENCEX_SCRIPT_PLANS_FILE):
        key = (r["gpu"], r["model"], r["precision"], int(r["isl"]), int(r["osl"]))
        if key != (gpu, model_id, prec, isl, osl) or not r["since"] <= date < r["until"]:
            continue
        if r["tp"] and int(r["tp"]) != tp:
            continue
        ep = tp if clients > int(r["ep_above_clients"]) else 1
        adp = clients > int(r["adp_above_clients"])
        said = f"its script chose EP {ep} and attention-DP {adp} itself"
        return ep, adp, f"run of {date}: {said} ({INFERENCEX_SCRIPT_PLANS_FILE})"
    return ep, adp, ""


@functools.cache
def _kv_fractions() -> dict[str, float]:
    return {r["gpu"]: float(r["kv_fraction"]) for r in bundled_rows(INFERENCEX_TRTLLM_KV_FILE)}


def inferencex_trtllm_recipe(
    clients: int, isl: int, tp: int, attention_dp: bool, spec_tokens: int, date: str = "",
    gpu: str = "", trtllm_gen: bool = False,
) -> tuple[str, str]:  # fmt: skip
    """(the recipe of an InferenceX TensorRT-LLM aggregated row, the mapping's note): its launch
    script's limits for ``clients`` concurrent clients at nominal input length ``isl`` (the
    ``gpu``'s KV fraction, ``INFERENCEX_TRTLLM_KV_FILE``; without MTP, the token floor only for
    runs from ``INFERENCEX_TRTLLM_FLOOR_SINCE`` on, or of no stated ``date``), the
    attention-DP balance where it runs attention-DP, and the TRTLLM MoE backend where it ran
    it (``trtllm_gen``: ``inferencex_trtllm_moe``).

    Example:
        >>> inferencex_trtllm_recipe(256, 1024, 8, True, 1)[0]
        'inferencex-trtllm:adp=1:batch=32:tokens=1152'
    """

    def ceil64(x: int) -> int:
        return (x + 63) // 64 * 64

    kv = _kv_fractions().get(gpu.strip().lower(), INFERENCEX_TRTLLM_KV_FRACTION)
    batch = None
    if spec_tokens:
        batch = max(1, clients // tp) if attention_dp else clients
        tokens = ceil64((spec_tokens + 1) * batch + isl + 64)
        limits = f"max_batch_size {batch}, max_num_tokens {tokens}"
    else:
        floor = (
            INFERENCEX_TRTLLM_MIN_TOKENS if date >= INFERENCEX_TRTLLM_FLOOR_SINCE or not date else 0
        )
        tokens = max(floor, ceil64(clients + isl + 64))
        limits = f"max_num_tokens {tokens}"
    stated_kv = kv if kv != INFERENCEX_TRTLLM_KV_FRACTION else None
    recipe = inferencex_trtllm_name(attention_dp, batch, tokens, stated_kv, trtllm_gen)
    note = f"InferenceX's TensorRT-LLM recipe: {limits}, KV fraction {kv:g}"
    if trtllm_gen:
        note += ", MoE backend TRTLLM (TRTLLM-Gen)"
    if attention_dp:
        timeout = INFERENCEX_ADP_BALANCE["adp_balance_timeout_iters"]
        note += f", attention-DP context balance (timeout_iters {timeout})"
    return recipe, note + " (validate.recipes)"


def inferencex_trtllm_name(
    attention_dp: bool,
    batch: int | None,
    tokens: int,
    kv: float | None,
    trtllm_gen: bool,
    balance: tuple[int, int] | None = None,
    batch_wait: tuple[int, float] | None = None,
    kv_mean: bool = False,
) -> str:
    """An ``INFERENCEX_TRTLLM`` recipe in the fields ``recipe_behaviour`` reads (batch, KV
    fraction, balance (timeout, wait), batch waiting (timeout, token share, the share in
    basis points): None where the script leaves the default; ``kv_mean``: the capacity
    scheduler MAX_UTILIZATION, which admits on the blocks in use, engine ``kv_admission``
    mean)."""
    parts = [INFERENCEX_TRTLLM, f"adp={int(attention_dp)}"]
    parts += [f"batch={batch}"] if batch is not None else []
    parts.append(f"tokens={tokens}")
    parts += [f"kv={round(kv * 100)}"] if kv is not None else []
    parts += ["moe=1"] if trtllm_gen else []
    parts += [f"balance={balance[0]}", f"wait={balance[1]}"] if balance is not None else []
    if batch_wait is not None:
        parts += [f"bwait={batch_wait[0]}", f"bratio={round(batch_wait[1] * 1e4)}"]
    parts += ["kvmean=1"] if kv_mean else []
    return ":".join(parts)


def inferencex_mean_length(nominal: int) -> float:
    """The mean input or output length InferenceX's client draws for a nominal length L: the
    integers floor(0.8 L) .. L uniformly (``INFERENCEX_RANGE_RATIO``).

    Example:
        >>> inferencex_mean_length(1024)
        921.5
    """
    return sum(inferencex_lengths(nominal)) / 2.0


def inferencex_client(
    isl: int, osl: int, clients: float, disaggregated: bool
) -> tuple[float, float, int, float, str]:
    """What InferenceX's client sent for a row of nominal lengths ``isl``/``osl`` at
    concurrency ``clients``: (mean ISL, mean OSL, requests, share of them in the start-up
    wave, the mapping's note). The share is the first of the ``INFERENCEX_PROMPTS_PER_CLIENT``
    rounds, for an aggregated row the analytic closed loop prices (where the simulator runs the
    client, its waves run instead); the disaggregated model has no start-up wave (-1)."""
    mean_isl, mean_osl = inferencex_mean_length(isl), inferencex_mean_length(osl)
    requests = INFERENCEX_PROMPTS_PER_CLIENT * int(clients)
    share, wave = -1.0, ""
    if not disaggregated:
        share = 1.0 / INFERENCEX_PROMPTS_PER_CLIENT
        wave = f" (start-up wave share {share:g} where priced analytically)"
    note = (
        f"InferenceX client: mean ISL/OSL {mean_isl:g}/{mean_osl:g} (lengths drawn on "
        f"{INFERENCEX_RANGE_RATIO:g} L .. L), {requests} requests at concurrency "
        f"{int(clients)}{wave} (validate.recipes)"
    )
    return mean_isl, mean_osl, requests, share, note


def inferencex_lengths(nominal: int) -> tuple[int, int]:
    """The integers InferenceX's client draws a length from, floor(0.8 L) .. L
    (``INFERENCEX_RANGE_RATIO``): the request simulator's uniform length distribution."""
    return math.floor(INFERENCEX_RANGE_RATIO * nominal), nominal
