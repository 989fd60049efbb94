"""Communication: the time of a collective among GPUs (all-reduce, all-gather, reduce-scatter,
all-to-all, point-to-point) inside the NVLink domain or across the scale-out network, and of
MoE dispatch/combine by the engine's kernel family. ``cost.op_time`` prices communication ops
here; the pipeline's activation hops and the disaggregated KV transfer call
:func:`collective_time` directly.
"""

from __future__ import annotations

import numpy as np

from .errors import UnsupportedError
from .ops import Op
from .routing import reach_share
from .specs.engine import MOE_COMM, MOE_COMM_VENDORS, EngineConstants
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
# DeepEP V1: time = alpha + max(NVLink bytes / (f_nvlink x the scale-up link per direction),
# network bytes / (f_rdma x the NIC)), a rank's bytes split by where their destinations sit:
# itself (free), the other GPUs of its NVLink domain, other nodes (``ep_kernel_time``). Fit by
# benchmarks/deepep_aic_report.py --fit on AIConfigurator's DeepEP tables measured through SGLang
# on Hopper (aiconfigurator @095f58a systems/data/h100_sxm/comm/sglang/: 0.5.6.post2 on 1, 2, 4
# and 8 H100 nodes of 8, 0.5.12 on one H100 and one H200 node; hidden 7168, top-8, 256 experts,
# FP8 dispatch, BF16 combine; the 0.5.6.post2 H200 files repeat the H100 ones); Blackwell's
# tables (B200, B300, GB200, GB300, 0.5.12) are the check, not the fit.
# low_latency (decode; CUDA-graph safe): one message per (token, expert), top_k a token, no
#   deduplication. Inside one NVLink domain its messages go over NVLink (alpha_*_nvlink 12.7 us
#   dispatch, 12.2 us combine, f_nvlink 0.51; 1-node rows); across nodes over RDMA with the
#   alphas and f_rdma fit on DeepEP's H800 table (deepseek-ai/DeepEP docs/legacy.md, gemm.csv
#   deepep_v1_legacy, EP 16-256 at 128 tokens: 29.4 us, 25.1 us, 0.86; benchmarks/
#   moe_comm_report.py --fit), which AIConfigurator's 2-8 node rows confirm (median |error| 5%).
# normal (prefill; not CUDA-graph safe): a token once per destination rank over NVLink, once
#   per other destination node over the network; f_nvlink 0.80 (DeepEP's H800 EP 8 rows, where
#   the link binds; moe_comm_report.py --fit). alpha 26.6 us dispatch, 48.6 us combine (the
#   1-node rows at 16 tokens or less); across nodes a notify phase first (the ranks exchange
#   their counts: 13.4 us + 10.0 us a node, the tables' notify column, 2-8 nodes, flat in
#   tokens), and f_rdma 0.77 of the NIC on remote bytes (2 and 4 nodes, 1,024 tokens or more;
#   the 8-node rows run at half that, DeepEP's own EP 64 row does not). The normal kernels copy
#   on a fixed number of SMs (DeepEP's Buffer.num_sms, 20 by default), so their NVLink leg runs
#   at most sms x payload / (c + payload / r) bytes/s: a token copy takes one SM c (dispatch
#   0.288 us, combine 0.383 us) plus its bytes at r = 37.3 GB/s, fit on DeepEP's B200 rows of
#   16-32 SMs in NVIDIA's Hybrid-EP tables (gemm.csv deepep_hybrid_ep_readme, EP 8, 4096 tokens;
#   12 rows, median |error| 2.0%); on H800's 160 GB/s NVLink the link binds, on NVLink 4/5 the
#   SMs (B200, 24 SMs: 358 GB/s of FP8 payload, 349 in DeepEP's count with the scales).
# On NVLink 5 the low-latency NVLink alphas take NCCL's measured latency ratio (1.43,
# nvlink_latency_scale): they are latency, measured on Hopper.
DEEPEP_LOW_LATENCY = {"alpha_dispatch": 29.4e-6, "alpha_combine": 25.1e-6,
                      "alpha_dispatch_nvlink": 12.7e-6, "alpha_combine_nvlink": 12.2e-6,
                      "nvlink": 0.51, "rdma": 0.86}  # fmt: skip
DEEPEP_NORMAL = {"alpha_dispatch": 26.6e-6, "alpha_combine": 48.6e-6, "notify_s": 13.4e-6,
                 "notify_node_s": 10.0e-6, "nvlink": 0.80, "rdma": 0.77, "sms": 20,
                 "sm_dispatch_s": 0.288e-6, "sm_combine_s": 0.383e-6,
                 "sm_bytes_per_s": 37.3e9}  # fmt: skip
# MoRI-EP (ROCm/mori; AMD GPUs only): SGLang's --moe-a2a-backend mori, vLLM's --all2all-backend
# mori_high_throughput / mori_low_latency. Like DeepEP's normal kernels it sends a token once to
# each distinct destination rank (its own counted, MoRI's convention) and once to each other node
# it reaches over the network: time = alpha + max(xGMI bytes / (xgmi x the scale-up link), network
# bytes / (rdma x the NIC)), alpha of the kernels inside one node (IntraNode) or across nodes
# (InterNodeV1LL below 4,096 tokens, InterNodeV1 above, as MoRI's benchmark picks them). Fit by
# benchmarks/mori_ep_report.py --fit on MoRI's published MI355X tables (data/validation/mori_ep.csv:
# docs/EP8.en.md, 8 GPUs of one node; docs/EP16.en.md, 2 nodes of 8 with a 400 Gb/s NIC per GPU;
# hidden 7168, top-8, 256 experts; FP8 and BF16 dispatch, BF16 combine without zero copy, the
# engines' path: their integrations pass use_external_inp_buf=True): the alphas are the medians
# of the rows of 16 tokens or less less their transmit, the fractions the medians of the rows of
# 4,096 tokens or more. MI300X and MI325X (MoRI runs on gfx942 too) take MI355X's constants, their
# own links' bandwidth: an assumption (the bundled tables are MI355X's). The xGMI leg runs on the
# links to the group's peers (AMD's xGMI is a mesh of one link to each of the 7 other GPUs of a
# node: reference/gpus.md [S19]), all 7 at EP 8 and beyond, 3 at EP 4.
MORI = {"alpha_dispatch": 29.1e-6, "alpha_combine": 27.9e-6,
        "alpha_dispatch_internode": 49.2e-6, "alpha_combine_internode": 68.1e-6,
        "xgmi": 0.689, "rdma": 0.775}  # fmt: skip
# the all-to-all kernel families ep_kernel_time prices, by EngineConstants.moe_comm
EP_KERNELS = {
    "deepep_low_latency": DEEPEP_LOW_LATENCY,
    "deepep_normal": DEEPEP_NORMAL,
    "mori": MORI,
}


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

# NCCL's all-gather and reduce-scatter inside an NVLink domain (the attention-DP MoE gather path:
# TensorRT-LLM's AllGather / ReduceScatter ops and vLLM's AgRs manager call NCCL, not the custom
# all-reduce kernels): time = base + (n - 1) hop + (n - 1) / n S / (fraction x the per-direction
# link), n GPUs, S the gathered bytes. Fit (benchmarks/nccl_gather_report.py): AIConfigurator's
# nccl-tests tables (ai-dynamo/aiconfigurator @095f58a, systems/data/<gpu>/comm/nccl/<version>/
# nccl_perf.parquet: all_gather_perf and reduce_scatter_perf, FP16 and INT8, 2-8 GPUs), messages
# of 64 KiB to 64 MiB, least squares on the relative error per link generation: NVLink 4 (H100,
# H200; NCCL 2.23-2.29, 792 points): 6.65 us + 0.85 us a hop at 0.509 of 450 GB/s, median
# |error| 12.3%; NVLink 5 (B200, B300, GB200; NCCL 2.23-2.29, 968 points): 9.49 us + 1.22 us at
# 0.422 of 900 GB/s, 9.0%. At 8 GPUs that is 12.6 / 18.0 us of latency, where the engines'
# one-shot all-reduce latency (TensorRT-LLM's 4.6 us) had priced them. Other fabrics keep the
# engine's all-reduce latency and the hardware's all-reduce efficiency (an assumption).
NCCL_GATHER = {"NVLink4": (6.65e-6, 0.85e-6, 0.509), "NVLink5": (9.49e-6, 1.22e-6, 0.422)}


def nvlink_latency_scale(hw: HardwareSpec) -> float:
    """The small-message latency of ``hw``'s NVLink generation over NVLink 4's, as NCCL measures
    it on 8 GPUs (``NCCL_GATHER``: base + 7 hops; NVLink 5 1.43x); 1 on other fabrics. The
    low-latency all-to-all kernels' NVLink alphas were measured on Hopper (``DEEPEP_LOW_LATENCY``)
    and are latency: their remote writes and flag polls cross the same links and switches."""
    nccl = NCCL_GATHER.get(hw.scaleup_technology)
    if nccl is None:
        return 1.0
    (base, hop, _), (base4, hop4, _) = nccl, NCCL_GATHER["NVLink4"]
    return (base + 7.0 * hop) / (base4 + 7.0 * hop4)


def collective_time(
    collective: str, nbytes: Array, group: Array, hw: HardwareSpec, eng: EngineConstants
) -> Array:
    """NCCL-style cost: latency + bytes on the wire / link bandwidth (``reference/codesign.md`` B);
    an all-reduce inside the NVLink domain takes the faster of a one-shot kernel and the
    bandwidth-optimal algorithm (``ALLREDUCE_LARGE_LATENCY_S``).

    ``nbytes`` is the per-GPU payload (the full tensor for all-reduce). Inside the NVLink domain
    the per-direction scale-up bandwidth x measured efficiency applies (an all-gather or
    reduce-scatter on NVLink: NCCL's measured latency and fraction, ``NCCL_GATHER``); beyond it
    the per-GPU scale-out NIC bandwidth and an extra network latency. Group size 1 or 0 bytes
    costs nothing.
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
        nccl = NCCL_GATHER.get(hw.scaleup_technology)
        if collective != "alltoall" and nccl is not None:  # NCCL's own, inside the domain
            base, hop, frac = nccl
            lat = np.where(inside, base + (n - 1.0) * hop, lat)
            link = hw.scaleup_bytes_per_s * frac * eng.comm_efficiency
            bw = np.where(inside, link, bw)
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
    one-sided in a multi-node NVLink domain, else all-gather + reduce-scatter; ``deepep``:
    DeepEP's normal kernels in a step with prompt tokens, its low-latency ones otherwise)."""
    if MOE_COMM_VENDORS.get(eng.moe_comm, hw.vendor) != hw.vendor:  # (the one vendor check)
        allowed = [c for c in MOE_COMM if MOE_COMM_VENDORS.get(c, hw.vendor) == hw.vendor]
        raise UnsupportedError(
            f"engine moe_comm={eng.moe_comm}: its kernels run on {MOE_COMM_VENDORS[eng.moe_comm]} "
            f"GPUs only, not {hw.name}; allowed on {hw.vendor}: {', '.join(allowed)}"
        )
    if eng.moe_comm != "auto":
        return eng.moe_comm
    return "nvlink_one_sided" if hw.scaleup_domain_size > 8 else "allgather_reducescatter"


def gathers(hw: HardwareSpec, eng: EngineConstants, pure_ep: Array | bool) -> Array:
    """Whether attention-DP ranks' tokens reach the experts by the all-gather: the engine's
    family is the all-gather, or the experts are sliced over moe_tp GPUs (``pure_ep`` false),
    which the all-to-all kernels cannot feed (TensorRT-LLM CutlassFusedMoE: "AlltoAll cannot
    support MoE TP"; SGLang sets ep to tp with DeepEP or FlashInfer's all-to-all). The one home
    of that rule: ``moe_comm_time``, ``dispatch_family``, :func:`fed_every_token`."""
    family = moe_comm_family(hw, eng)
    return (family == "allgather_reducescatter") | ~np.asarray(pure_ep, dtype=bool)


def fed_every_token(
    hw: HardwareSpec, eng: EngineConstants, adp: Array | bool, pure_ep: Array | bool
) -> Array:
    """Whether an MoE kernel is fed every token of the step, not only the pairs a dispatch
    sends it: tensor-parallel attention (every rank holds every token) or attention-DP ranks'
    tokens all-gathered (:func:`gathers`). Read by ``cost.moe_permute_time`` (the Triton path's
    zero-filled pairs) and ``moe_kernels.padded_rows``."""
    return ~np.asarray(adp, dtype=bool) | gathers(hw, eng, pure_ep)


def ep_kernel_time(
    mode: str,
    dispatch: bool,
    tokens: Array,
    top_k: Array | float,
    payload: float,
    group: Array,
    hw: HardwareSpec,
    eng: EngineConstants,
    constants: dict[str, float] | None = None,
) -> Array:
    """Seconds of one dispatch (or combine) of ``tokens`` tokens per rank over ``group`` EP
    ranks, ``payload`` bytes per token copy, by the all-to-all kernels ``mode``
    (``EP_KERNELS``: DeepEP's deepep_low_latency or deepep_normal, MoRI-EP's mori): alpha + the
    slower of the scale-up (NVLink, xGMI) and network legs. Destinations spread evenly
    over the ranks (uniform routing): low_latency sends top_k copies per token, 1/group of them
    to the rank itself, with its NVLink alpha where the group fits in one NVLink domain; normal
    sends a token once to each distinct rank, G (1 - (1 - 1/G)^k) of them, and once to each
    other distinct node over the network (nodes of the NVLink domain's size, a last one of the
    ranks left), after a notify phase that grows with the (whole) nodes; mori sends as normal
    does (``deduplicated_bytes``), after its alpha inside one node or across nodes.

    Example (closed form): low_latency dispatch of 128 tokens, top-8, 7168 FP8 bytes, EP 8
    inside one H800 node (200 GB/s per direction): 12.7 us + 128 x 8 x 7168 x 7/8 B / (0.51 x
    200 GB/s) = 75.7 us (DeepEP publishes 77 us); mori dispatch of 4,096 FP8 tokens over 8
    MI355X (535.5 GB/s of xGMI a direction): 29.1 us + 4096 x 7168 x 8 (1 - (7/8)^8) B / (0.689 x
    535.5 GB/s) = 447 us (MoRI publishes 469 us). ``constants`` replaces the mode's
    ``EP_KERNELS`` entry (the fits' trials)."""
    c = EP_KERNELS[mode] if constants is None else constants
    g = np.maximum(np.asarray(group, dtype=float), 1.0)
    s = np.minimum(g, float(hw.scaleup_domain_size))  # ranks per NVLink domain
    across = g > s
    b = np.asarray(tokens, dtype=float) * payload  # bytes of one copy of every token
    k = np.asarray(top_k, dtype=float)
    link = c["xgmi"] if mode == "mori" else c["nvlink"]  # (the scale-up link's share)
    nvl_bw = hw.scaleup_bytes_per_s * link * eng.comm_efficiency
    net_bw = max(hw.scaleout_bytes_per_s * c["rdma"] * eng.comm_efficiency, 1e-9)
    side = "dispatch" if dispatch else "combine"
    # the alphas are the kernels' own, measured over the links and RDMA (no engine network latency)
    if mode == "deepep_low_latency":
        nvl = b * k * (s - 1.0) / g
        net = b * k * (g - s) / g
        inside = c[f"alpha_{side}_nvlink"] * nvlink_latency_scale(hw)  # (Hopper-measured)
        alpha = np.where(across, c[f"alpha_{side}"], inside)
    elif mode == "mori":
        nvl, net, _ = deduplicated_bytes(b, k, g, s)
        # AMD's xGMI is a mesh, one link to each peer of the node: s ranks use s - 1 of them
        nvl_bw = nvl_bw * np.maximum(s - 1.0, 1.0) / max(hw.scaleup_domain_size - 1.0, 1.0)
        alpha = np.where(across, c[f"alpha_{side}_internode"], c[f"alpha_{side}"])
    else:
        per_copy = c[f"sm_{side}_s"] + payload / c["sm_bytes_per_s"]
        nvl_bw = min(nvl_bw, c["sms"] * payload / per_copy)  # the SMs the kernels copy on
        nvl, net, whole = deduplicated_bytes(b, k, g, s)
        notify = np.where(across, c["notify_s"] + c["notify_node_s"] * whole, 0.0)
        alpha = c[f"alpha_{side}"] + notify
    return np.where((g > 1) & (b > 0), alpha + np.maximum(nvl / nvl_bw, net / net_bw), 0.0)


def deduplicated_bytes(b: Array, k: Array, g: Array, s: Array) -> tuple[Array, Array, Array]:
    """(bytes a rank sends over the scale-up links, bytes over the network, the whole nodes of
    the group) where a kernel sends a token once to each distinct destination rank (its own
    counted) and once to each other node it reaches: ``b`` bytes of one copy of every token,
    top-``k`` routing, ``g`` ranks, ``s`` of them a node (DeepEP's normal kernels, MoRI)."""
    full = np.floor(g / s + 1e-9)  # whole nodes of s ranks (at least one)
    rest = g - full * s  # the ranks of a last, part node
    nvl = b * g * reach_share(k, g)
    # a token goes once to each other node it reaches (a rank on a full node, the slowest): the
    # other full nodes and the part node
    last = np.where(rest > 0.5, reach_share(k, g / np.maximum(rest, 1.0)), 0.0)
    net = b * ((full - 1.0) * reach_share(k, g / s) + last)
    return nvl, net, full + (rest > 0.5)


def moe_comm_time(op: Op, hw: HardwareSpec, eng: EngineConstants) -> Array:
    """Time of one MoE dispatch (``op.collective == "moe_dispatch"``, activation format) or
    combine (BF16) of attention-DP ranks, by the engine's kernel family.

    ``op.meta``: tokens on this rank, tokens of all ranks, copies per token (experts' owners,
    at most the group), the router's top-k, whether the step carries prompt tokens, bytes per
    token element of the payload, hidden size, group size."""
    mt = op.meta["moe_comm"]
    group = np.maximum(np.asarray(op.group_size, dtype=float), 1.0)
    family = moe_comm_family(hw, eng)
    dispatch = op.collective == "moe_dispatch"
    gathered = np.asarray(mt["tokens_all"], dtype=float) * mt["hidden"] * mt["elem_bytes"]
    ag = collective_time("allgather" if dispatch else "reducescatter", gathered, group, hw, eng)
    gather = gathers(hw, eng, mt["pure_ep"])
    if np.all(gather):
        return ag
    if is_ep_kernel(family):
        payload = mt["hidden"] * mt["elem_bytes"]
        args = (dispatch, mt["tokens_rank"], mt["top_k"], payload, group, hw, eng)
        if family == "deepep":  # normal kernels where the step carries prompt tokens
            normal = ep_kernel_time("deepep_normal", *args)
            low = ep_kernel_time("deepep_low_latency", *args)
            t = np.where(np.asarray(mt["prompt"], dtype=bool), normal, low)
        else:
            t = ep_kernel_time(family, *args)
        return np.where(gather, ag, t)
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
    return np.where(gather, ag, np.where((group > 1) & (logical > 0), t, 0.0))


def is_ep_kernel(family: str) -> bool:
    """Whether dispatch family ``family`` is one of the all-to-all kernel libraries
    ``ep_kernel_time`` prices (DeepEP's, MoRI-EP; ``deepep`` runs both DeepEP modes), which
    need attention-DP ranks to feed them (``report.deploy_map`` refuses them without)."""
    return family == "deepep" or family in EP_KERNELS


def dispatch_family(hw: HardwareSpec, eng: EngineConstants, tp: int, ep: int) -> str:
    """The dispatch/combine family priced for a plan's attention-DP ranks: the engine's
    (``moe_comm_family``), or the all-gather where ``gathers``."""
    gather = bool(gathers(hw, eng, ep == tp))
    return "allgather_reducescatter" if gather else moe_comm_family(hw, eng)
