"""Rendering helpers shared by CLI commands: JSON without NaN/inf, fixed-width rich tables."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table


def clean(obj: Any) -> Any:
    """Make an object JSON-safe: numpy scalars to Python, NaN/inf to None."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return clean(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    return obj


# Version of every JSON document the CLI prints (--json). 2: engine constant
# `hbm_efficiency_scale` replaces `mem_efficiency` (a multiplier on the GPU's measured
# `hbm_efficiency`, now listed in the assumptions); estimate adds `mode`; frontier region labels
# come from the TPOT step. 3: engine constant `moe_imbalance` is replaced by `routing_skew`,
# `alltoall_latency_s` no longer prices MoE dispatch/combine, and engines add `moe_comm`,
# `kv_admission` and `moe_layer_overhead_s`; op tables add the `moe_routing` op (bound
# `overhead`); the engine named `default` is TensorRT-LLM (`trtllm`). 4: estimate adds
# `mixer_savings` (null for a softmax-only model); `models` entries add `layers` (layers per token
# mixer); op tables may hold `indexer_*` and `linear_*` ops (sparse and linear token mixers).
# 5: accuracy as the third dimension: `estimate` adds `accuracy`; `frontier` points and `best`
# carry `accuracy` (kind, value in benchmark points or null, metric, baseline, source,
# checkpoint) and the document adds `precision_decisions` (searched or why not); estimate and
# frontier points add `economics` (tokens/s/MW, $/M tokens); estimate adds `notes` (queueing,
# replicas, infeasibility) and `units`; `hardware` entries add `hbm_gib`.
# 6: how far to trust each number (specs.uncertainty, data/validation/error_bands.json):
# `estimate` adds `uncertainty` (`class`, `class_id`, `metrics`: one band or null per metric
# class ttft/tpot/throughput, `fields`: the predicted fields each speaks for); a band is
# `class_id`, `keys`, `backoff`, `n`, `median_abs`, `p90_abs`, `bias`, `extrapolated`. `frontier`
# points and `best` add `uncertainty` (`class_id` and the band id per metric class) and the
# document adds `uncertainty` (`bands`: band id -> band, every band its points name).
# 7: the engine constants in `assumptions` add `pp_prefill_overlap` (whether one prompt's
# chunks overlap across pipeline stages).
# 8: `estimate` (aggregated; null when disaggregated) and `frontier` points and `best` add
# `running_concurrency`: the sequences a replica runs at once (the memory cap, or the batch
# limit a tuned engine keeps, serving.admission; clients beyond it queue); launch files set the
# engine's batch limit to it.
# 9: the engine constants in `assumptions` add `adp_balance_timeout_iters` and
# `adp_balance_wait_iters` (TensorRT-LLM's attention-DP context balance; 0: off); an estimate's
# `notes` can say what the balance adds to TTFT.
# 10: `assumptions` adds `attention_decode_efficiency` (`compute_class`, `value`, `source`):
# decode attention's compute fraction of the peak, from the GPU file's measured decode kernel
# where it has one (`efficiency.attention_decode`), else the engine's `attn_prefill_efficiency`.
# 11: the engine constants in `assumptions` add `moe_kernels`; `assumptions` adds
# `grouped_gemm_efficiency` ({value, source}).
# 12: `assumptions.attention_decode_efficiency` adds the measured MLA decode kernel's terms:
# `hbm` (its fraction of HBM bandwidth on the latent cache, or null: the engine's
# `attn_decode_efficiency`), `per_query_head_s` and `per_call_s` (0 where not measured); the
# engine constants add `attention_kernels` (the MLA decode kernel family: `default` or `fa3`).
# 13: the engine constants in `assumptions` add `expert_balancer` (`none`, `eplb` or `uniform`:
# the expert load balancer, which sets how unequal expert popularity spreads the EP ranks).
# 14: the engine constants in `assumptions` add `memory_budget` (`free`, `total` or `static`:
# what `memory_utilization` is a fraction of, as TensorRT-LLM, vLLM and SGLang define theirs).
# 15: the engine constants in `assumptions` add `indexer_overhead_s` (the DSA lightning
# indexer's fixed kernel-chain time per sparse layer and step); op tables of sparse-attention
# models add the `indexer_chain` op (bound `overhead`).
# 16: the engine constants in `assumptions` add `gqa_decode_kernels` (`default` or
# `flash_attention`: the GQA decode kernel family, whose measured FP8-cache read rate, the GPU
# file's `efficiency.fp8_kv_decode`, caps `attn_decode_efficiency` over an FP8 KV cache), and
# `assumptions` adds `fp8_kv_decode` ({value, source} of that cap where the cache is FP8 and the
# GPU file measures the family, else null).
# 17: the engine constants in `assumptions` add `recurrent_state_overlap` (false: the engine
# runs models with recurrent-state token mixers without its overlap scheduler, SGLang).
# 18: the engine constants in `assumptions` add `moe_kernels_weight_only` (`same`, `cutlass` or
# `triton`: the grouped GEMMs' path for experts the GPU runs weight-only, MXFP4 on Hopper, where
# the MoE is not tensor-parallel; TensorRT-LLM: `triton`, its TRITON MoE backend).
# 19: the engine constants' `moe_kernels` may be `trtllm_gen` (TensorRT-LLM's TRTLLM-Gen fused
# MoE on SM100/SM103: SGLang's flashinfer_trtllm runner, TensorRT-LLM's TRTLLM backend, read by
# `estimate --from`); `auto` now prices it for SGLang and vLLM on those GPUs; `assumptions` adds
# `moe_kernel_path` (the path priced: `cutlass`, `triton` or `trtllm_gen`; null for a dense
# model).
# 20: the engine constants' `moe_comm` may be `deepep`, `deepep_low_latency` or `deepep_normal`
# (DeepEP's kernels, comm.deepep_time, now ep_kernel_time; SGLang --moe-a2a-backend deepep /
# --deepep-mode, vLLM --all2all-backend, read by `estimate --from` and written by the launch
# files); `assumptions` adds `moe_dispatch` (the dispatch/combine family priced for
# attention-DP ranks: `allgather_reducescatter`, `nvlink_one_sided` or a DeepEP one; null for a
# dense model).
# 21: the engine constants in `assumptions` add `spec_separate_drafts` (true: a speculative
# step's k draft passes each add the host work of a step, unhidden; SGLang's EAGLE worker).
# 22: the engine constants in `assumptions` add `windowed_kv_share` (the share of its context a
# windowed attention layer holds in the KV cache beside the window: 0 vLLM, 0.8 SGLang's SWA
# pool, 1 TensorRT-LLM's equal pools per window size).
# 23: `assumptions` adds `device_memory_bytes` (the memory the driver exposes, nvidia-smi's
# memory.total: what every engine's KV budget is a share of; the HBM capacity where the GPU file
# states none) and `device_memory_source`; the hardware list (`hardware --json`) adds
# `device_memory_gib` beside `hbm_gib`.
# 24: the engine constants' `moe_kernels` may be `deepgemm` (vLLM 0.11.1-0.12.x's DeepGEMM MoE on
# SM90/SM100, whose block-scaled FP8 experts compute padded rows: moe_kernels.padded_rows), and
# `assumptions`' `moe_kernel_path` may say `deepgemm`.
# 25: the engine constants in `assumptions` add `batch_wait_timeout_iters` and
# `batch_wait_max_tokens_ratio` (TensorRT-LLM's batch waiting without attention-DP; 0: off); an
# estimate's `notes` can say what it adds to TTFT.
# 26: the engine constant `memory_utilization` may be 0: SGLang's own default fraction for
# each plan and GPU (`serving.memory.sglang_memory_fraction`), the bundled sglang engine's value.
# 27: the engine constants add `gpu_defaults` (none, sglang, vllm: whose rule fills
# `max_num_tokens` / `max_batch_size` left at 0 for each GPU, `specs.gpu_defaults`); an estimate's
# `engine_constants` state the limits resolved on its GPU (SGLang's 16,384-token chunk on a B200).
# 28: the engine constants add `token_budget_scope` (rank, server: whose `max_num_tokens` it is;
# SGLang's is the server's, split over its DP-attention ranks, `serving.memory.rank_token_budget`).
# 29: the simulation's `traffic` states `clients_start` (clients starting together or spread).
# 30: `assumptions` adds `attention_prefill_efficiency` (`compute_class`, `value`,
# `head_dim_share`, `source`): prefill attention's fraction of the peak, the engine's
# `attn_prefill_efficiency` x the head-dim share of the model's softmax layers (0.75 at head dim
# 64, 1 at 128 and above and for MLA: `mixers.prefill_head_dim_share`).
# 31: the engine constants add `dsa_kernels` (none, flashmla, flashmla_fa3: the DeepSeek Sparse
# Attention kernels the engine runs, which may pad a rank's query heads:
# `attention_kernels.sparse_kernel`).
# 32: an estimate adds `precision_note` (where its precision came from, as `estimate` prints it;
# "" for a precision given as is); lint's, regimes' and search's `assumptions` add `precision`
# (the one given, the checkpoint's own, or the advisors' default, and a name that says an export's
# format with no bundled quantization_config: `explore.operating.advisor_precision`).
# 33: the engine constants add `moe_kernels_int4` (same, marlin, trtllm_gen: the grouped GEMMs' path
# for 4-bit integer weight-only experts, `moe_kernels.moe_kernel_path`); `moe_kernel_path` in
# `assumptions` is the experts' own (marlin for Kimi-K2.5's INT4 experts on vLLM).
# 34: the engine constants add `cuda_graph_batches` (none, trtllm, trtllm-pow2, vllm, sglang, or a
# comma-separated list: the batch sizes the engine captures its decode step at as CUDA graphs, a
# decode-only step running the next one up with dummy rows, `specs.cuda_graphs`).
# 35: the engine constants add `compressed_overhead_s`, `compressed_indexer_overhead_s` and
# `compressed_topk_s` (the fixed kernel chains of a DeepSeek-V4 compressed layer's attention
# module, of a CSA layer's indexer, and of its top-k selection past top-k entries); op tables of
# DeepSeek-V4 add `compressed_chain` and `indexer_topk` (bound `overhead`), `compressor`,
# `o_a_proj`, `hyper_connections` and `hc_mixes`.
# 36: `reason` adds `workspace_exceeds_memory` (an estimate's, a frontier point's, a simulation's):
# the weights fit, but the step the engine profiles before it sizes its KV cache (its
# `max_num_tokens` of activations and MoE runner buffers) leaves the cache no memory
# (`serving.memory_reason`); `weights_exceed_memory` now means the weights and the runtime reserve
# exceed the engine's budget. The plan reason `ep_not_dividing_experts` is gone: an EP group that
# does not divide the experts holds the fewest redundant copies that split evenly
# (`specs.plan.expert_slots`; an estimate's notes say so, launch files set them).
# 37: the engine constants add `msa_indexer_overhead_s` (the fixed kernel chain of a MiniMax
# Sparse Attention layer's block indexer); models add `minimax-m3` (its sparse layers' op
# tables carry `indexer_q`, `indexer_k_w`, `indexer_chain` and `indexer_decode` as DSA's do).
# 38: the precision's summary adds `index_keys` (the sparse-attention indexer's key-cache format
# a `+FORMAT-idx` override sets: `fp8` or `bf16`; null: the model's own; vLLM's MiniMax-M3
# `indexer_kv_dtype`, FP8 on SM100 only).
# 39: the engine constants' `moe_comm` may be `mori` (MoRI-EP, AMD GPUs only: comm.ep_kernel_time;
# SGLang --moe-a2a-backend mori, vLLM --all2all-backend mori_low_latency / mori_high_throughput),
# and so may `assumptions.moe_dispatch`.
SCHEMA_VERSION = 39


def to_json(obj: Any) -> str:
    """JSON text of a result document; a top-level mapping gets ``schema_version`` first."""
    if isinstance(obj, dict):
        obj = {"schema_version": SCHEMA_VERSION, **obj}
    return json.dumps(clean(obj), indent=2, allow_nan=False)


def trust_text(label: str, band: dict[str, Any] | None, cls: dict[str, str] | None = None) -> str:
    """One line on how far to trust a predicted metric (a ``specs.uncertainty`` band; ``cls``:
    the configuration's class, named when the band is extrapolated), e.g.
    ``TPOT ±13% median (p90 29%, bias -5%; 19 rows: tpot, mla, hopper, trtllm, c5-32)``."""
    if band is None:
        return f"{label}: no validated rows of this metric (no error band)"
    keys = band["keys"]
    text = (
        f"{label} ±{band['median_abs']:.0%} median (p90 {band['p90_abs']:.0%}, bias "
        f"{band['bias']:+.0%}; {band['n']:,} rows: {', '.join(keys.values())})"
    )
    if band["extrapolated"]:
        what = f"{cls['kind']} model on {cls['generation']}" if cls else "model kind on this GPU"
        text += f"; extrapolated: no {what} measured"
    return text


def console(width: int | None = None) -> Console:
    return Console(width=width or 120, soft_wrap=False)


def table(title: str, columns: list[str], rows: list[list[Any]]) -> Table:
    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(
            c,
            justify="right"
            if c
            not in (
                "op",
                "class",
                "bound",
                "phase",
                "id",
                "name",
                "model",
                "gpu",
                "metric",
                "plan",
                "precision",
                "source",
                "rule",
                "severity",
                "location",
                "message",
                "reason",
            )
            else "left",
        )
    for r in rows:
        t.add_row(*[fmt(v) for v in r])
    return t


def fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not math.isfinite(v):
            return "-"
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.3g}"
    return str(v)
