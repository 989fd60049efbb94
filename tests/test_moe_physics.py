"""MoE physics (issue 11): dispatch/combine by kernel family against the published TB18 table,
the multinomial EP rank imbalance (closed form), discrete chunked prefill (token conservation)
and invariants of the step in the new constants."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import load_hardware, load_model, parse_precision
from llm_codesign.comm import (
    collective_time,
    ep_kernel_time,
    moe_comm_family,
    moe_comm_time,
    nvlink_latency_scale,
)
from llm_codesign.cost import gemm_time
from llm_codesign.errors import SpecError
from llm_codesign.ops import step_ops, step_shape
from llm_codesign.routing import moe_rank_imbalance
from llm_codesign.serving import evaluate
from llm_codesign.serving.step import chunked_prefill, pipelined_step
from llm_codesign.specs.engine import EXPERT_POPULARITY_CV, load_engine

BASE = load_engine("base")
R1 = load_model("deepseek-r1")


def _moe_op(name, hw_id, prec, tokens_per_rank, tp=8, ep=8):
    s = step_shape(tp, 1, ep, 1, True, isl=1024, osl=1024, decode_seqs=tokens_per_rank * tp)
    ops = step_ops(R1, parse_precision(prec), s)
    return next(o for o in ops if o.name == name), load_hardware(hw_id)


# TensorRT-LLM tech blog 18 (reference/moe-comm.md 1e): NVLinkOneSided all-to-all on GB200
# NVL72, DeepSeek-V3 shape, BF16 dispatch and combine, batch = tokens per rank: (EP, bs) ->
# (dispatch us, combine us)
TB18 = {
    (8, 1): (18.9, 31.0),
    (8, 512): (89.5, 91.7),
    (8, 2048): (311.8, 322.6),
    (16, 2048): (343.3, 348.4),
    (32, 2048): (373.7, 369.5),
}


@pytest.mark.parametrize("ep_bs", sorted(TB18))
def test_nvlink_one_sided_reproduces_tb18(ep_bs):
    ep, bs = ep_bs
    eng = BASE.with_overrides(moe_comm="nvlink_one_sided")
    for i, name in enumerate(("moe_dispatch", "moe_combine")):
        op, hw = _moe_op(name, "gb200", "bf16", bs, tp=ep, ep=ep)
        t = float(moe_comm_time(op, hw, eng)) * 1e6
        assert t == pytest.approx(TB18[ep_bs][i], rel=0.10), (name, t)


def test_all_to_all_kernels_feed_whole_experts_only():
    """Experts sliced over moe_tp GPUs (ep < tp) are fed by the all-gather whatever the family
    (TensorRT-LLM CutlassFusedMoE.select_alltoall_method_type: "AlltoAll cannot support MoE
    TP"); ``dispatch_family`` says so for a plan."""
    from llm_codesign.comm import dispatch_family

    hw = load_hardware("gb200")
    gathered = BASE.with_overrides(moe_comm="allgather_reducescatter")
    for family in ("nvlink_one_sided", "deepep", "deepep_low_latency"):
        eng = BASE.with_overrides(moe_comm=family)
        sliced, _ = _moe_op("moe_combine", "gb200", "nvfp4", 64, tp=16, ep=8)
        assert float(moe_comm_time(sliced, hw, eng)) == float(moe_comm_time(sliced, hw, gathered))
        whole, _ = _moe_op("moe_combine", "gb200", "nvfp4", 64, tp=16, ep=16)
        assert float(moe_comm_time(whole, hw, eng)) != float(moe_comm_time(whole, hw, gathered))
        assert dispatch_family(hw, eng, 16, 8) == "allgather_reducescatter"
        assert dispatch_family(hw, eng, 16, 16) == family


def test_auto_family_follows_the_nvlink_domain():
    assert moe_comm_family(load_hardware("gb200"), BASE) == "nvlink_one_sided"
    assert moe_comm_family(load_hardware("h200-sxm"), BASE) == "allgather_reducescatter"


def test_allgather_reducescatter_is_the_nccl_pair_on_all_tokens():
    """Dispatch = all-gather of every rank's tokens in FP8; combine = reduce-scatter in BF16."""
    op_d, hw = _moe_op("moe_dispatch", "h200-sxm", "fp8", 128)
    op_c, _ = _moe_op("moe_combine", "h200-sxm", "fp8", 128)
    all_tokens = 128 * 8
    d = R1.hidden_size
    want_d = collective_time("allgather", np.array(all_tokens * d * 1.0), np.array(8), hw, BASE)
    want_c = collective_time("reducescatter", np.array(all_tokens * d * 2.0), np.array(8), hw, BASE)
    # hand check of the all-gather: NCCL's latency on NVLink 4 (6.65 us + 7 hops of 0.85 us) +
    # 7/8 of the gathered bytes at its measured share of the link (comm.NCCL_GATHER)
    bw = hw.scaleup_bytes_per_s * 0.509
    assert float(want_d) == pytest.approx(12.6e-6 + 7 / 8 * all_tokens * d / bw)
    assert float(moe_comm_time(op_d, hw, BASE)) == pytest.approx(float(want_d))
    assert float(moe_comm_time(op_c, hw, BASE)) == pytest.approx(float(want_c))


# H800 as DeepEP's tables describe it: NVLink 400 GB/s bidirectional (200 per direction), 8
# GPUs a node, one CX7 400 Gb/s NIC per GPU
H800 = {"scaleup_bytes_per_s": 200e9, "scaleout_bytes_per_s": 50e9, "scaleup_domain_size": 8}


def test_deepep_low_latency_closed_form():
    """128 tokens a rank, top-8, FP8 (1 byte) of hidden 7168, EP 8 inside one H800 node: by
    hand, the NVLink alpha 12.7 us + 128 x 8 x 7168 x 7/8 B / (0.51 x 200 GB/s) = 75.67 us
    (DeepEP publishes 77); at EP 16 the network leg (half the copies leave the node, 0.86 x 50
    GB/s) is the slower one, after the RDMA alpha: 29.4 us + 128 x 8 x 7168 / 2 B / 43 GB/s =
    114.75 us."""
    hw = load_hardware("h100-sxm").with_overrides(**H800)
    eng = BASE.with_overrides(comm_efficiency=1.0)
    op, _ = _moe_op("moe_dispatch", "h100-sxm", "fp8", 128)
    low = eng.with_overrides(moe_comm="deepep_low_latency")
    assert float(moe_comm_time(op, hw, low)) * 1e6 == pytest.approx(75.67, abs=0.01)
    op16, _ = _moe_op("moe_dispatch", "h100-sxm", "fp8", 128, tp=16, ep=16)
    assert float(moe_comm_time(op16, hw, low)) * 1e6 == pytest.approx(114.75, abs=0.01)


def test_deepep_low_latency_nvlink5_alpha_scales_with_nccls_measured_latency():
    """The low-latency kernels' NVLink alphas were measured on Hopper; on NVLink 5 they take
    NCCL's measured small-message latency ratio (8 GPUs: (9.49 + 7 x 1.22) / (6.65 + 7 x 0.85)
    = 1.431, comm.NCCL_GATHER): one token inside one B200 node, by hand, 12.7 us x 1.431 + the
    transmit at B200's link. (AIConfigurator measures 22 us there through SGLang 0.5.12, H100
    13 us: priced 0.62 of it before, 0.86 now; the normal kernels' alphas, a host round trip,
    keep Hopper's.) An H100 and an AMD GPU keep the Hopper alpha."""
    ratio = (9.49 + 7 * 1.22) / (6.65 + 7 * 0.85)
    eng = BASE.with_overrides(comm_efficiency=1.0)
    for gpu, scale in (("b200", ratio), ("h100-sxm", 1.0)):
        hw = load_hardware(gpu)
        t = float(ep_kernel_time("deepep_low_latency", True, 1, 8, 7168, 8, hw, eng))
        wire = 8 * 7168 * 7 / 8 / (0.51 * hw.scaleup_bytes_per_s)
        assert t == pytest.approx(12.7e-6 * scale + wire, rel=1e-9)
    assert nvlink_latency_scale(load_hardware("mi355x")) == 1.0


def test_deepep_normal_internode_closed_form():
    """The normal kernels across 2 H100 nodes (EP 16), one token a rank, top-8, FP8 hidden 7168:
    alpha 26.6 us + notify 13.4 + 2 x 10.0 us + the slower leg, by hand: the network sends the
    token to the other node with chance 1 - (1/2)^8, 7168 x 0.99609 B / (0.77 x 50 GB/s) =
    0.185 us; NVLink 16 x (1 - (15/16)^8) = 6.4525 copies at the SMs' 20 x 7168 B / (0.288 us +
    7168 B / 37.3 GB/s) = 298.6 GB/s, 0.155 us. 26.6 + 33.4 + 0.185 = 60.19 us. The notify is
    what the tables measure at small batches: 31.6 us dispatch notify at 2 nodes (AIConfigurator
    @095f58a h100_sxm/comm/sglang/0.5.6.post2/wideep_deepep_normal_perf.parquet, 20 SMs, 1
    token), 33.4 priced; none inside one node."""
    from llm_codesign.comm import ep_kernel_time

    hw, eng = load_hardware("h100-sxm"), BASE.with_overrides(comm_efficiency=1.0)
    t = ep_kernel_time("deepep_normal", True, np.array(1.0), 8, 7168.0, np.array(16.0), hw, eng)
    assert float(t) * 1e6 == pytest.approx(60.19, abs=0.01)
    one = ep_kernel_time("deepep_normal", True, np.array(1.0), 8, 7168.0, np.array(8.0), hw, eng)
    assert float(one) * 1e6 == pytest.approx(26.6 + 8 * (1 - (7 / 8) ** 8) * 7168 / 298.56e9 * 1e6,
                                             abs=0.01)  # fmt: skip


def test_deepep_normal_group_of_part_nodes_by_hand():
    """EP 12 on H100 nodes of 8 GPUs: a full node and one of 4 ranks. A rank on the full node
    (the slowest) sends a token over the network when one of its 8 picks lands on the other
    node's 4 ranks, 1 - (2/3)^8 = 0.96098; 4096 tokens x 7168 B x that / (0.77 x 50 GB/s) =
    732.9 us, above the SMs' NVLink leg (12 x (1 - (11/12)^8) = 6.016 copies at 298.6 GB/s,
    591.6 us). The notify counts two whole nodes: 26.6 + 13.4 + 2 x 10.0 + 732.9 = 792.9 us. More
    ranks, in whole nodes, never take less time, in either mode."""
    from llm_codesign.comm import ep_kernel_time

    hw, eng = load_hardware("h100-sxm"), BASE.with_overrides(comm_efficiency=1.0)

    def t(group, tokens=4096.0):
        return float(ep_kernel_time("deepep_normal", True, np.array(tokens), 8, 7168.0,
                                 np.array(float(group)), hw, eng)) * 1e6  # fmt: skip

    assert t(12) == pytest.approx(792.9, abs=0.1)
    for mode in ("deepep_normal", "deepep_low_latency"):
        for tokens in (1.0, 128.0, 4096.0):
            times = [float(ep_kernel_time(mode, True, np.array(tokens), 8, 7168.0,
                                       np.array(float(g)), hw, eng))
                     for g in (8, 16, 32, 64, 128)]  # fmt: skip
            assert times == sorted(times), (mode, tokens)


# AIConfigurator @095f58a, SGLang 0.5.6.post2's DeepEP normal kernels on H100 nodes of 8 GPUs
# (hidden 7168, top-8, 256 experts, 20 SMs; transmit + notify, us): (nodes, tokens a rank) ->
# (dispatch, combine). The fit's own rows (benchmarks/deepep_aic_report.py --fit reads 2-4
# nodes at 1,024 tokens or more for f_rdma), so a check that the form holds them to 25%.
AIC_DEEPEP_NORMAL_H100 = {(2, 8192): (1658.8, 4060.8), (4, 8192): (3585.7, 7073.1),
                          (2, 64): (77.1, 132.6), (4, 64): (126.2, 198.3)}  # fmt: skip


@pytest.mark.parametrize("nodes_tokens", sorted(AIC_DEEPEP_NORMAL_H100))
def test_deepep_normal_prices_multinode_measurements(nodes_tokens):
    from llm_codesign.comm import ep_kernel_time

    nodes, tokens = nodes_tokens
    hw = load_hardware("h100-sxm")
    eng = load_engine("sglang")
    for i, (dispatch, elem) in enumerate(((True, 1.0), (False, 2.0))):
        t = ep_kernel_time("deepep_normal", dispatch, np.array(float(tokens)), 8, 7168.0 * elem,
                        np.array(8.0 * nodes), hw, eng)  # fmt: skip
        assert float(t) * 1e6 == pytest.approx(AIC_DEEPEP_NORMAL_H100[nodes_tokens][i], rel=0.25)


# pplx-garden docs/fabric-lib.md @2446003 (arXiv 2510.27656), "Decode (128 tokens)", the DeepEP
# column on ConnectX-7 (Hopper nodes of 8 GPUs): EP -> (dispatch us, combine us). Not used in
# the fit (DeepEP's own H800 table is), so an out-of-sample check of the network leg.
GARDEN_DEEPEP_CX7 = {16: (123.9, 203.0), 32: (159.1, 285.0), 64: (177.9, 325.0)}


@pytest.mark.parametrize("ep", sorted(GARDEN_DEEPEP_CX7))
def test_deepep_low_latency_predicts_pplx_garden_measurements(ep):
    eng = BASE.with_overrides(moe_comm="deepep_low_latency", comm_efficiency=1.0)
    for i, name in enumerate(("moe_dispatch", "moe_combine")):
        op, hw = _moe_op(name, "h100-sxm", "fp8", 128, tp=ep, ep=ep)
        t = float(moe_comm_time(op, hw, eng)) * 1e6
        assert t == pytest.approx(GARDEN_DEEPEP_CX7[ep][i], rel=0.10), (name, t)


def test_deepep_auto_is_normal_with_prompt_tokens_and_low_latency_without():
    """SGLang's --deepep-mode auto: the normal kernels for a batch with prompt tokens, the
    low-latency ones for a decode-only batch; DeepEP only where experts are whole on their
    ranks (ep = tp), else the all-gather feeds the sliced experts."""
    hw = load_hardware("h200-sxm")
    fam = {f: BASE.with_overrides(moe_comm=f) for f in ("deepep", "deepep_low_latency",
                                                        "deepep_normal")}  # fmt: skip
    s = step_shape(16, 1, 16, 1, True, isl=1024, osl=1024, decode_seqs=512, prefill_tokens=4096)
    op = next(o for o in step_ops(R1, parse_precision("fp8"), s) if o.name == "moe_dispatch")
    assert float(moe_comm_time(op, hw, fam["deepep"])) == float(
        moe_comm_time(op, hw, fam["deepep_normal"])
    )
    dec, _ = _moe_op("moe_dispatch", "h200-sxm", "fp8", 32, tp=16, ep=16)
    assert float(moe_comm_time(dec, hw, fam["deepep"])) == float(
        moe_comm_time(dec, hw, fam["deepep_low_latency"])
    )
    sliced, _ = _moe_op("moe_dispatch", "h200-sxm", "fp8", 32, tp=16, ep=8)
    gathered = BASE.with_overrides(moe_comm="allgather_reducescatter")
    assert float(moe_comm_time(sliced, hw, fam["deepep"])) == float(
        moe_comm_time(sliced, hw, gathered)
    )


# NVIDIA's Hybrid-EP tables (DeepEP branch hybrid-ep @17cfb81 docs/README_Hybrid-EP.md), DeepEP's
# normal kernels through its torch API, EP 8, 4096 tokens a rank, top-8, uniform routing over 8
# local experts: (GPU, SMs) -> algorithm GB/s of (FP8 dispatch, BF16 dispatch, combine). The
# B200 rows of 16-32 SMs fit comm.DEEPEP_NORMAL's SM rate; the GB200 rows do not.
HYBRID_EP_DEEPEP = {
    ("b200", 16): (246, 348, 302),
    ("b200", 24): (349, 494, 420),
    ("b200", 32): (443, 619, 524),
    ("gb200", 16): (248.86, 362.01, 310.21),
    ("gb200", 24): (350.97, 512.72, 425.95),
    ("gb200", 32): (447.76, 615.78, 519.57),
}


@pytest.mark.parametrize("gpu_sms", sorted(HYBRID_EP_DEEPEP))
def test_deepep_normal_is_bound_by_its_sms_on_blackwell(gpu_sms):
    """By hand at 24 SMs, FP8 (1 byte) of hidden 7168: a copy takes one SM 0.288 us + 7168 B /
    37.3 GB/s = 0.4802 us, so 24 SMs move 358 GB/s, under the link's 0.80 x 900; 4096 tokens
    reach 8 (1 - (7/8)^8) = 5.25 ranks: 26.6 us + 4096 x 5.25 x 7168 B / 358 GB/s = 457 us.
    DeepEP's published algorithm bandwidth (with FP8's scales) gives the same time to 10%."""
    from llm_codesign.comm import EP_KERNELS, ep_kernel_time

    gpu, sms = gpu_sms
    hw, eng = load_hardware(gpu), BASE.with_overrides(comm_efficiency=1.0)
    c = {**EP_KERNELS["deepep_normal"], "sms": sms}
    copies = 4096 * 8 * (1 - (7 / 8) ** 8)
    for bw, (dispatch, elem) in zip(HYBRID_EP_DEEPEP[gpu_sms], ((True, 1), (True, 2), (False, 2))):
        published = copies * 7168 * (elem if elem == 2 else 1 + 4 / 128) / (bw * 1e9)
        t = ep_kernel_time("deepep_normal", dispatch, np.array(4096.0), 8, 7168.0 * elem,
                        np.array(8), hw, eng, c)  # fmt: skip
        assert float(t) == pytest.approx(published, rel=0.10), (dispatch, elem)
    if gpu_sms == ("b200", 24):
        t = ep_kernel_time(
            "deepep_normal", True, np.array(4096.0), 8, 7168.0, np.array(8), hw, eng, c
        )
        assert float(t) * 1e6 == pytest.approx(456.9, abs=1.0)


@settings(max_examples=40, deadline=None)
@given(
    tokens=st.integers(1, 4096),
    ep=st.sampled_from([2, 4, 8, 16, 32, 64]),
    mode=st.sampled_from(["deepep_low_latency", "deepep_normal"]),
    nvl=st.floats(100e9, 1000e9),
    nic=st.floats(12.5e9, 100e9),
    more=st.floats(1.0, 4.0),
)
def test_ep_kernel_time_monotone(tokens, ep, mode, nvl, nic, more):
    """More tokens never take less time; faster links (NVLink or NIC) never take more; a
    dispatch never beats its fixed alpha."""
    from llm_codesign.comm import EP_KERNELS, ep_kernel_time

    hw = load_hardware("h100-sxm").with_overrides(scaleup_bytes_per_s=nvl, scaleout_bytes_per_s=nic)
    faster = hw.with_overrides(scaleup_bytes_per_s=nvl * more, scaleout_bytes_per_s=nic * more)

    def t(n, h):
        return float(
            ep_kernel_time(mode, True, np.array(float(n)), 8, 7168.0, np.array(ep), h, BASE)
        )

    assert t(tokens, hw) >= min(v for key, v in EP_KERNELS[mode].items() if key.startswith("alpha"))
    assert t(tokens + 1, hw) >= t(tokens, hw)
    assert t(tokens, faster) <= t(tokens, hw) * (1 + 1e-12)


def test_rank_imbalance_closed_form():
    # 1024 pairs per rank over 8 ranks, uniform routing: 1 + sqrt(2 ln 8 / 1024)
    assert float(moe_rank_imbalance(1024.0, 8, 1.0, 8, 32)) == pytest.approx(
        1 + math.sqrt(2 * math.log(8) / 1024)
    )
    # no expert parallelism: no rank imbalance, whatever the skew
    assert float(moe_rank_imbalance(10.0, 1, 20.0, 8, 256)) == 1.0
    # a rank never holds more than every pair its tokens can send it
    assert float(moe_rank_imbalance(1.0, 8, 20.0, 8, 32)) == pytest.approx(8.0)
    # the TB4 measurement without EPLB ((max - mean) / mean = 1.564 at 1024 tokens per rank,
    # EP32, top-8) lies inside the fitted skew's range [1, 20]
    uniform_excess = math.sqrt(2 * math.log(32) / (1024 * 8))
    assert 1.0 < 1.564 / uniform_excess < 20.0 * 8**0.5


def test_expert_popularity_reproduces_tb4_and_shrinks_with_experts_per_rank():
    """TensorRT-LLM's wide-EP blog (TB4 Table 1, moe-comm.md 3): DeepSeek-R1, EP 32, 8 experts per
    rank, decode: the busiest rank at (max - mean) / mean = 1.564 without EPLB and 0.109 with it
    (9 slots per rank). The popularity term gives both at a batch large enough that the draw
    vanishes, adds to the draw in quadrature, shrinks with the experts per rank and as
    1 / sqrt(experts) does not depend on the batch; no EP: none."""
    cv = EXPERT_POPULARITY_CV
    big = 1e12
    assert float(moe_rank_imbalance(big, 32, 1.0, 8, 8, cv["none"])) - 1 == pytest.approx(
        1.564, abs=2e-3
    )
    assert float(moe_rank_imbalance(big, 32, 1.0, 8, 9, cv["eplb"])) - 1 == pytest.approx(
        0.109, abs=2e-3
    )
    # quadrature with the draw: 1024 pairs per rank over 8 ranks of 32 experts
    draw = math.sqrt(2 * math.log(8) / 1024)
    popular = cv["none"] * math.sqrt(2 * math.log(8) / 32)
    got = float(moe_rank_imbalance(1024.0, 8, 1.0, 8, 32, cv["none"]))
    assert got == pytest.approx(1 + math.hypot(draw, popular), rel=1e-12)
    # the same batch and ranks with more experts per rank: less spread (EP 4 of 256 experts)
    assert float(moe_rank_imbalance(big, 4, 1.0, 8, 64, cv["none"])) < float(
        moe_rank_imbalance(big, 8, 1.0, 8, 32, cv["none"])
    )
    assert float(moe_rank_imbalance(big, 1, 1.0, 8, 256, cv["none"])) == 1.0
    # a balancer leaves less than none, and the engines run none unless told
    assert cv["uniform"] == 0 < cv["eplb"] < cv["none"]
    assert all(load_engine(e).expert_balancer == "none" for e in ("trtllm", "vllm", "sglang"))


def test_expert_balancer_is_validated():
    with pytest.raises(SpecError, match="expert_balancer='eplb2' is not a known expert load"):
        BASE.with_overrides(expert_balancer="eplb2")


def test_tp_only_moe_has_no_rank_imbalance():
    s = step_shape(8, 1, 1, 1, False, isl=1024, osl=1024, decode_seqs=512.0)
    (up,) = [o for o in step_ops(R1, parse_precision("fp8"), s) if o.name == "experts_up"]
    hw = load_hardware("h200-sxm")
    a = gemm_time(up, hw, BASE.with_overrides(routing_skew=1.0))[0]
    b = gemm_time(up, hw, BASE.with_overrides(routing_skew=20.0))[0]
    assert float(a) == float(b)


def test_chunked_prefill_conserves_tokens():
    eng = BASE
    # one replica, 1024-token prompts, 128 prompt tokens per step: a full prompt every 8 steps
    share, total, rank, base = chunked_prefill(eng, 1024.0, 8, False, 64.0, 128.0)
    assert float(share) == pytest.approx(1 / 8) and float(total) == pytest.approx(1024.0)
    assert float(rank) == pytest.approx(1024.0) and float(base) == 0.0
    # attention-DP over 8 ranks: each rank prefills with f = 16/1024 per step
    share, total, rank, base = chunked_prefill(eng, 1024.0, 8, True, 64.0, 128.0)
    f = 16 / 1024
    assert float(share) == pytest.approx(1 - (1 - f) ** 8)
    assert float(share * total) == pytest.approx(128.0)  # conserved
    assert float(rank) == pytest.approx(1024.0) and float(base) == 0.0
    # demand beyond a prompt: whole prompts, 2 or 3 of 1024 tokens, (3000 - 2048) / 1024 of
    # the steps carrying 3 (by hand: 0.9297 x 3072 + 0.0703 x 2048 = 3000)
    share, total, _, base = chunked_prefill(eng, 1024.0, 1, False, 0.0, 3000.0)
    assert float(share) == pytest.approx((3000 - 2048) / 1024)
    assert float(total) == 3072.0 and float(base) == 2048.0
    assert float(share * total + (1 - share) * base) == pytest.approx(3000.0)
    # long prompts are chunked at the budget (max_num_tokens less the decode tokens)
    share, total, _, base = chunked_prefill(eng, 32768.0, 1, False, 192.0, 100.0)
    assert float(total) == pytest.approx(eng.max_num_tokens - 192.0) and float(base) == 0.0


@settings(max_examples=25, deadline=None)
@given(
    decode=st.floats(1.0, 512.0),
    prompt=st.floats(0.0, 20000.0),
    adp=st.booleans(),
    isl=st.sampled_from([1024.0, 8192.0]),
)
def test_a_step_that_carries_prompt_tokens_is_never_shorter_than_the_mean_step(
    decode, prompt, adp, isl
):
    """``PipelinedStep.prompt_step_s`` (a step carrying prompt tokens, which a request's TTFT
    rides under the attention-DP balance) is at least the mean step it is mixed into, and is
    that step where no step carries prompt tokens; the share of such steps is within [0, 1]."""
    hw, prec = load_hardware("h200-sxm"), parse_precision("fp8")
    eng = load_engine("trtllm").with_overrides(adp_balance_timeout_iters=60)
    s = pipelined_step(
        R1, prec, hw, eng, tp=8, pp=1, ep=8, cp=1, attention_dp=adp, isl=isl, osl=1024.0,
        decode_seqs=decode, prefill_tokens=prompt,
    )  # fmt: skip
    share, t, t_on = float(np.ravel(s.prompt_share)[0]), float(s.total_s), float(s.prompt_step_s)
    assert 0.0 <= share <= 1.0
    assert t_on >= t * (1.0 - 1e-9)
    if prompt == 0.0:
        assert t_on == pytest.approx(t, rel=1e-12)


def test_pipeline_micro_batches_each_fill_their_own_budget():
    """Two micro-batches, each a batch of its own under max_num_tokens (8,192 here): 14,000
    prompt tokens of 8,192-token prompts and 240 decode rows per step. Per micro-batch 7,000
    prompt tokens and 120 decode rows, a budget of 8,072: one chunk of 8,072 tokens in
    7,000 / 8,072 of the micro-batch steps (by hand), not 14,000 tokens spread over both."""
    eng = BASE.with_overrides(max_num_tokens=8192)
    share, total, rank, base = chunked_prefill(eng, 8192.0, 4, False, 240.0, 14000.0, 2.0)
    assert float(share) == pytest.approx(7000 / 8072)
    assert float(total) == pytest.approx(2 * 8072.0) and float(rank) == float(total)
    assert float(base) == 0.0
    assert float(share * total) == pytest.approx(14000.0)  # conserved
    # one micro-batch: the demand is past the budget, carried in every step as before
    share, total, _, _ = chunked_prefill(eng, 8192.0, 4, False, 240.0, 14000.0)
    assert float(share) == 1.0 and float(total) == pytest.approx(14000.0)


def test_each_attention_dp_rank_has_its_own_prompt_budget():
    """TensorRT-LLM's best-practice max-throughput run of DeepSeek-R1 on 8 x B200 (TP8 EP8
    attention-DP, max_batch_size 896 and max_num_tokens 2,048 per rank, 7,168 clients,
    1k/2k): each of the 8 schedulers admits up to 2,048 tokens a step, 16,384 in all. A
    request needs ISL = 1,024 prompt tokens per OSL - 1 = 2,047 decode steps, so d decoding
    sequences need about d / 2 prompt tokens a step: 3,584 at d = 7,168, far inside 16,384,
    and most clients decode. One budget of 2,048 for the replica would hold d at 2,048 /
    (1 + 1,024/2,047) = 1,365 (by hand) and queue the rest; without attention-DP one
    scheduler does hold it at or below that."""
    eng = load_engine("trtllm").with_overrides(max_batch_size=896, max_num_tokens=2048)
    hw, p = load_hardware("b200"), parse_precision("nvfp4")
    kw = dict(tp=8, ep=8, isl=1024, osl=2048, concurrency=7168.0)
    adp = evaluate(R1, hw, p, eng, attention_dp=True, **kw)
    # (most decode: the rest are in the closed loop's start-up wave of 7,168 prompts, whose
    # share of TTFT grows with the prefill time, ttft_burst)
    assert float(adp.step_decode_seqs) > 0.8 * 7168.0 > 4 * 2048.0 / (1.0 + 0.5)
    assert float(adp.step_prefill_tokens) <= 8 * 2048.0
    kappa = 1024.0 * (7167.0 / 7168.0) / 2047.0
    one = evaluate(R1, hw, p, eng.with_overrides(max_batch_size=7168), **kw)
    assert float(one.step_decode_seqs) <= 2048.0 / (1.0 + kappa) * (1 + 1e-6)


def test_a_tuned_attention_dp_batch_is_whole_per_rank_and_tunes_no_further():
    """Engines bound the batch per attention-DP rank (TensorRT-LLM's max_batch_size, SGLang's
    max-running-requests over its dp ranks): every batch a tuned engine keeps below the clients
    is a multiple of the 8 ranks, and an engine set to that batch (per rank) keeps it: the
    tuned batch is a fixed point of the tuning, so a launch file reproduces its estimate."""
    hw, p, eng = load_hardware("h200-sxm"), parse_precision("fp8"), load_engine("sglang")
    conc = np.array([96.0, 300.0, 1000.0, 2500.0, 5000.0, 8192.0])
    kw = dict(tp=8, ep=8, attention_dp=True, isl=1024, osl=256)
    r = evaluate(R1, hw, p, eng, **kw, concurrency=conc)
    limited = r.feasible & (r.running_concurrency < np.minimum(conc, r.max_concurrency) - 1e-9)
    assert np.any(limited)
    run = r.running_concurrency[limited]
    np.testing.assert_array_equal(run % 8, 0.0)
    for c, n in zip(conc[limited], run):
        again = evaluate(
            R1, hw, p, eng.with_overrides(max_batch_size=int(n) // 8), **kw, concurrency=c
        )
        assert float(again.running_concurrency) == n
        assert float(again.output_tok_s_per_gpu) == pytest.approx(
            float(r.output_tok_s_per_gpu[conc == c][0]), rel=1e-12
        )


def _tpot(eng, **kw):
    plan = dict(tp=8, ep=8, attention_dp=True, isl=1024, osl=1024, concurrency=256)
    plan.update(kw)
    return float(
        evaluate(R1, load_hardware("h200-sxm"), parse_precision("fp8"), eng, **plan).tpot_s
    )


@settings(max_examples=12, deadline=None)
@given(
    st.floats(0.5, 20.0),
    st.floats(0.5, 20.0),
    st.floats(4e-6, 120e-6),
    st.floats(4e-6, 120e-6),
)
def test_step_monotone_in_moe_constants(s1, s2, o1, o2):
    """More routing skew or more fixed MoE time never speeds a step of a given token mix up
    (the closed loop's TPOT may still fall: a longer TTFT leaves fewer sequences decoding)."""
    (s1, s2), (o1, o2) = sorted((s1, s2)), sorted((o1, o2))
    lo = BASE.with_overrides(routing_skew=s1, moe_layer_overhead_s=o1)
    hi = BASE.with_overrides(routing_skew=s2, moe_layer_overhead_s=o2)
    hw, prec = load_hardware("h200-sxm"), parse_precision("fp8")
    for dec, pre in ((8.0, 0.0), (1024.0, 0.0), (1024.0, 900.0)):
        kw = dict(tp=8, pp=1, ep=8, cp=1, attention_dp=True, isl=1024, osl=1024)
        a = pipelined_step(R1, prec, hw, lo, decode_seqs=dec, prefill_tokens=pre, **kw).total_s
        b = pipelined_step(R1, prec, hw, hi, decode_seqs=dec, prefill_tokens=pre, **kw).total_s
        assert float(b) >= float(a) * (1 - 1e-12)


def test_grouped_gemm_reproduces_deepgemm_group_ratios():
    """DeepGEMM FP8 masked grouped GEMM, H800 (moe-comm.md 2): relative to one group of 1024
    rows, 4 groups of 256 rows reach 932/1233 = 0.76 (N x K = 4096 x 7168) and 815/925 = 0.88
    (7168 x 2048); 2 x 512 rows 1040/1233 = 0.84 and 916/925 = 0.99. The model's ratio must
    lie inside each pair's range (within 0.03)."""
    from llm_codesign.ops import Op

    hw = load_hardware("h100-sxm")

    def tflops(groups, rows):
        op = Op("e", "ffn", "gemm", 1.0, m=float(rows), n=4096.0, k=7168.0, groups=groups)
        op.compute_class = "fp8"
        op.w_bytes = op.a_bytes = 1.0
        op.meta["moe"] = {"pairs_per_rank": 1e9, "ep": 1, "top_k": 8.0, "experts_local": groups}
        return groups * rows / float(gemm_time(op, hw, BASE)[1])

    for groups, rows, lo, hi in ((4, 256, 0.76, 0.88), (2, 512, 0.84, 0.99)):
        ratio = tflops(groups, rows) / tflops(1, 1024)
        assert lo - 0.03 <= ratio <= hi + 0.03, (groups, rows, ratio)


@settings(max_examples=10, deadline=None)
@given(st.floats(0.0, 4000.0), st.floats(0.0, 4000.0))
def test_mean_step_monotone_in_prefill_demand(p1, p2):
    p1, p2 = sorted((p1, p2))
    hw, prec = load_hardware("h200-sxm"), parse_precision("fp8")
    kw = dict(tp=8, pp=1, ep=8, cp=1, attention_dp=True, isl=1024, osl=1024, decode_seqs=512.0)
    a = pipelined_step(R1, prec, hw, BASE, prefill_tokens=p1, **kw).total_s
    b = pipelined_step(R1, prec, hw, BASE, prefill_tokens=p2, **kw).total_s
    assert float(b) >= float(a) * (1 - 1e-9)


def test_a_routed_gemm_does_not_switch_its_split_on_a_fraction_of_a_tile():
    """Qwen3-30B-A3B on H200 BF16 TP2 decoding ~3 sequences: the routed experts_up GEMM's
    expected tile count crosses the point where split-K halves (two splits fill the SMs, one
    more tile leaves one). Priced on the fractional count, 0.05 decode rows moved experts_up
    from 580 to 1,034 us (the step 7.5%); a launch has a whole number of tiles, so the expected
    work is the mix of the two whole counts around the mean: the step rises continuously and
    never falls as rows are added (issue 15's bandwidth case at 3 clients)."""
    m, p = load_model("qwen3-30b-a3b"), parse_precision("bf16")
    hw, eng = load_hardware("h200-sxm"), load_engine("sglang")
    d = np.arange(2.80, 3.10, 0.01)
    t = pipelined_step(
        m, p, hw, eng, tp=2, pp=1, ep=1, cp=1, attention_dp=False, isl=128, osl=64,
        decode_seqs=d,
    ).total_s  # fmt: skip
    assert np.all(np.diff(t) >= -1e-12)
    assert np.max(np.diff(t) / t[:-1]) < 0.02


@settings(max_examples=40, deadline=None)
@given(
    hidden=st.sampled_from([2048, 4096, 7168]),
    width=st.sampled_from([768, 1536, 2048]),
    experts=st.sampled_from([64, 128, 256]),
    top_k=st.sampled_from([4, 8]),
    ep=st.sampled_from([1, 2, 4, 8]),
    fmt=st.sampled_from(["fp8_block", "nvfp4", "bf16"]),
    tokens=st.integers(1, 8192),
    more=st.integers(1, 64),
)
def test_trtllm_gen_layer_never_falls_as_tokens_are_added(
    hidden, width, experts, top_k, ep, fmt, tokens, more
):
    """The TRTLLM-Gen MoE layer (SGLang's on B200: its idle grid, fused activation and kernel
    rates) takes no less time for more tokens, at any shape, EP and format."""
    from llm_codesign.validate.moe_layer import moe_layer_time

    eng = load_engine("sglang")
    args = (experts, experts // ep, top_k, hidden, width)
    a = moe_layer_time("b200", eng, fmt, tokens, *args)[0]
    b = moe_layer_time("b200", eng, fmt, tokens + more, *args)[0]
    assert b >= a * (1.0 - 1e-12)
