"""Communication: the time of a collective among GPUs (all-reduce, all-gather, reduce-scatter,
all-to-all, point-to-point) inside the NVLink domain or across the scale-out network, and of
MoE dispatch/combine by the engine's kernel family. ``cost.op_time`` prices communication ops
here; the pipeline's activation hops and the disaggregated KV transfer call
:func:`collective_time` directly.
"""

from __future__ import annotations

import numpy as np

from .ops import Op
from .specs.engine import EngineConstants
from .specs.hardware import HardwareSpec

Array = np.ndarray

# MoE dispatch/combine kernel families: (dispatch floor s, combine floor s, intercept s,
# fraction of the scale-up link's per-direction bandwidth reached on logical bytes, fraction
# lost per doubling of EP beyond 8); time = max(floor, intercept + bytes / bandwidth).
# nvlink_one_sided: TensorRT-LLM NVLinkOneSided all-to-all on GB200 NVL72 (moe-comm.md 1e, TB18):
#   small-batch floors 18.9 us dispatch / 31.0 us combine at EP8; the bs>=256 fit gives
#   intercepts of 15-19 us and 790 / 710 / 660 / 620 GB/s logical at EP 8/16/32/64 of
#   900 GB/s = 0.88, ~0.06 lost per doubling of EP. Logical bytes = tokens x min(EP, top_k) x
#   bytes per token.
# allgather_reducescatter: dispatch = all-gather of every rank's tokens in the activation format,
#   combine = reduce-scatter in BF16 (TensorRT-LLM's attention-DP AllGather, TB3; vLLM
#   AgRsAll2AllManager); NCCL-style: the engine's all-reduce latency and the hardware's
#   measured bus efficiency (collective_time).
MOE_COMM_KERNELS = {"nvlink_one_sided": (18.9e-6, 31.0e-6, 17.0e-6, 0.88, 0.06)}


def scaleup_bytes_per_s(hw: HardwareSpec, eng: EngineConstants) -> float:
    """Per-GPU bandwidth a collective achieves inside the NVLink domain (per-direction link x
    measured all-reduce efficiency x the engine's ``comm_efficiency``)."""
    return hw.scaleup_bytes_per_s * hw.scaleup_efficiency.value * eng.comm_efficiency


def scaleout_bytes_per_s(hw: HardwareSpec, eng: EngineConstants) -> float:
    """Per-GPU bandwidth a collective achieves across the scale-out network (NIC x measured
    link efficiency x the engine's ``comm_efficiency``; never 0)."""
    return max(hw.scaleout_bytes_per_s * hw.scaleup_efficiency.value * eng.comm_efficiency, 1e-9)


# All-reduce inside an NVLink domain runs one of two kinds of kernel (TensorRT-LLM's, vLLM's and
# SGLang's custom all-reduce, NCCL/NVLS): a one-shot kernel, each GPU reading every peer's whole
# buffer ((n - 1) S bytes over its links) after the engine's small-message latency
# (``allreduce_latency_s``), or the bandwidth-optimal reduce-scatter + all-gather (2 (n - 1) / n S
# bytes) after a larger latency, this constant (never below the engine's own latency); engines
# switch to the latter as messages grow.
# Fit (benchmarks/allreduce_report.py): AIConfigurator's all-reduce tables
# (ai-dynamo/aiconfigurator @095f58a, systems/data/{h200_sxm,b200_sxm}/comm/{trtllm/1.3.0rc20,
# vllm/0.19.0,sglang/0.5.14}/custom_allreduce_perf.parquet, BF16, 4 and 8 GPUs): the time less
# the wire bytes at the hardware file's all-reduce bandwidth, over messages of 2-32 MB (decode
# steps of 128-2,048 sequences at hidden size 8,192 in BF16), median 8-38 us per table and
# group, 21.6 us over all 12. With the latency-plus-bandwidth form alone, those messages were
# priced 1.5-2x fast (H200, 8 GPUs, 2 MB: 14.6 us against 30.5 us measured). Measured on NVLink
# (H200, B200) only; other scale-up fabrics (PCIe, xGMI) take it as an assumption.
ALLREDUCE_LARGE_LATENCY_S = 21.6e-6


def collective_time(
    collective: str, nbytes: Array, group: Array, hw: HardwareSpec, eng: EngineConstants
) -> Array:
    """NCCL-style cost: latency + bytes on the wire / link bandwidth (``reference/codesign.md`` B);
    an all-reduce inside the NVLink domain takes the faster of a one-shot kernel and the
    bandwidth-optimal algorithm (``ALLREDUCE_LARGE_LATENCY_S``).

    ``nbytes`` is the per-GPU payload (the full tensor for all-reduce). Inside the NVLink domain
    the per-direction scale-up bandwidth x measured efficiency applies; beyond it the per-GPU
    scale-out NIC bandwidth and an extra network latency. Group size 1 or 0 bytes costs nothing.
    """
    nbytes = np.asarray(nbytes, dtype=float)
    group = np.asarray(group, dtype=float)
    n = np.maximum(group, 1.0)
    inside = n <= hw.scaleup_domain_size
    bw = np.where(inside, scaleup_bytes_per_s(hw, eng), scaleout_bytes_per_s(hw, eng))
    if collective == "allreduce":
        wire = 2.0 * (n - 1.0) / n * nbytes
        lat = eng.allreduce_latency_s
    elif collective in ("alltoall", "allgather", "reducescatter"):
        wire = (n - 1.0) / n * nbytes
        lat = eng.alltoall_latency_s if collective == "alltoall" else eng.allreduce_latency_s
    elif collective == "p2p":
        wire = nbytes
        lat = eng.allreduce_latency_s / 2.0
    else:  # pragma: no cover - internal
        raise AssertionError(collective)
    lat = lat + np.where(inside, 0.0, eng.network_latency_s)
    active = (n > 1) & (nbytes > 0)
    t = lat + wire / bw
    if collective == "allreduce":  # inside the domain, the faster of the two algorithms
        one_shot = eng.allreduce_latency_s + (n - 1.0) * nbytes / bw
        large = max(ALLREDUCE_LARGE_LATENCY_S, eng.allreduce_latency_s) + wire / bw
        t = np.where(inside, np.minimum(one_shot, large), t)
    return np.where(active, t, 0.0)


def moe_comm_family(hw: HardwareSpec, eng: EngineConstants) -> str:
    """The dispatch/combine kernel family the engine uses on this hardware (``auto``: NVLink
    one-sided in a multi-node NVLink domain, else all-gather + reduce-scatter)."""
    if eng.moe_comm != "auto":
        return eng.moe_comm
    return "nvlink_one_sided" if hw.scaleup_domain_size > 8 else "allgather_reducescatter"


def moe_comm_time(op: Op, hw: HardwareSpec, eng: EngineConstants) -> Array:
    """Time of one MoE dispatch (``op.collective == "moe_dispatch"``, activation format) or
    combine (BF16) of attention-DP ranks, by the engine's kernel family.

    ``op.meta``: tokens on this rank, tokens of all ranks, copies per token (experts' owners,
    at most the group), bytes per token element of the payload, hidden size, group size."""
    mt = op.meta["moe_comm"]
    group = np.maximum(np.asarray(op.group_size, dtype=float), 1.0)
    family = moe_comm_family(hw, eng)
    dispatch = op.collective == "moe_dispatch"
    if family == "allgather_reducescatter":
        gathered = np.asarray(mt["tokens_all"], dtype=float) * mt["hidden"] * mt["elem_bytes"]
        coll = "allgather" if dispatch else "reducescatter"
        return collective_time(coll, gathered, group, hw, eng)
    floor_d, floor_c, intercept, frac, loss = MOE_COMM_KERNELS[family]
    logical = np.asarray(mt["tokens_rank"], dtype=float) * mt["copies"] * mt["hidden"]
    logical = logical * mt["elem_bytes"]
    inside = group <= hw.scaleup_domain_size
    frac_ep = frac * np.maximum(1.0 - loss * np.log2(np.maximum(group / 8.0, 1.0)), 0.1)
    bw = np.where(
        inside,
        hw.scaleup_bytes_per_s * frac_ep * eng.comm_efficiency,
        scaleout_bytes_per_s(hw, eng),
    )
    net = np.where(inside, 0.0, eng.network_latency_s)
    t = np.maximum(floor_d if dispatch else floor_c, intercept + logical / bw) + net
    return np.where((group > 1) & (logical > 0), t, 0.0)
