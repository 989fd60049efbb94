"""Serving: memory fit, the engine step, and serving metrics (TTFT, TPOT, tokens/s/user,
tokens/s/GPU) for aggregated in-flight batching and for disaggregated prefill/decode pools,
vectorized over every axis."""

from .aggregated import FIXED_POINT_ITERATIONS, GridResult, evaluate
from .disaggregated import (
    DisaggregatedResult,
    balance_pools,
    best_split,
    decode_workers,
    evaluate_disaggregated,
    kv_transfer_time,
    prefill_workers,
)
from .economics import economics
from .memory import (
    MAX_CONCURRENCY,
    RUNTIME_RESERVED_BYTES,
    concurrency_cap,
    memory_fit,
    running_kv_bytes,
    scheduling_ranks,
)
from .static import evaluate_static
from .step import (
    REGIONS,
    RESOURCES,
    PipelinedStep,
    StepCost,
    bound_split,
    pipeline_hops,
    pipelined_step,
    region_of,
    step_cost,
)

__all__ = [
    "economics",
    "FIXED_POINT_ITERATIONS",
    "MAX_CONCURRENCY",
    "REGIONS",
    "RESOURCES",
    "RUNTIME_RESERVED_BYTES",
    "DisaggregatedResult",
    "GridResult",
    "PipelinedStep",
    "StepCost",
    "balance_pools",
    "best_split",
    "bound_split",
    "concurrency_cap",
    "decode_workers",
    "evaluate",
    "evaluate_disaggregated",
    "evaluate_static",
    "kv_transfer_time",
    "memory_fit",
    "pipeline_hops",
    "pipelined_step",
    "prefill_workers",
    "region_of",
    "running_kv_bytes",
    "scheduling_ranks",
    "step_cost",
]
