"""Ops: what one GPU runs for one engine step, per layer group. Counting only (FLOPs, bytes,
GEMM shapes, collective bytes); no timing (that is :mod:`llm_codesign.cost`).

Every size is a numpy array broadcast over the swept axes (concurrency, plan, context), so one
call counts one configuration or a million. A step holds ``decode_seqs`` sequences decoding one
token each at mean context ``decode_ctx`` and ``prefill_tokens`` prompt tokens (of
``prefill_seqs`` sequences) attending to a mean causal context ``prefill_ctx``: the in-flight
batched mixed step of DESIGN.md.

Per-GPU sharding follows TensorRT-LLM (DESIGN.md): attention heads split over ``atp`` (1 under
attention-DP, tp/cp under Helix), KV heads replicated once tp exceeds them; dense FFN split over
tp (replicated under attention-DP); experts split as ep x moe_tp = tp, over the EP group's slots
(the experts, with redundant copies where ep does not divide them: ``specs.plan.expert_slots``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .formats import get_format
from .mixers import cache_bytes_per_layer, dsa_meta, indexer_kernel, linear_counts, softmax_counts
from .routing import rank_experts
from .specs.checkpoint import kept_parts
from .specs.model import LayerGroup, ModelSpec
from .specs.plan import expert_slots
from .specs.precision import Precision

Array = np.ndarray

OP_CLASSES = ("attention", "ffn", "communication", "other")
# the ops of an MoE layer's routed experts, what a fused-MoE kernel benchmark times (routing,
# permute, the two grouped GEMMs, the activation and the finalize; not the router GEMM):
# validate.moe_layer prices published timings of them
MOE_LAYER_OPS = ("moe_routing", "moe_permute", "experts_up", "experts_down", "ffn_activation")


@dataclass
class Op:
    """One kind of operation per layer of a group (``layers`` of them on this GPU per step).

    kind: ``gemm`` (m, n, k, groups, touched), ``attention`` (flops, bytes, phase),
    ``memory`` (bytes), ``comm`` (collective, bytes per GPU, group size), ``fixed`` (a kernel
    chain of fixed time per layer, the engine constant named in ``meta["fixed"]``: MoE
    routing, the DSA indexer), ``permute`` (the bytes around the MoE GEMMs,
    ``meta["moe_permute"]``).
    """

    name: str
    op_class: str
    kind: str
    layers: Array | float
    kernels: float = 1.0
    m: Array | float = 0.0
    n: Array | float = 0.0
    k: Array | float = 0.0
    groups: Array | float = 1.0
    touched: Array | float = 1.0
    w_bytes: float = 2.0
    a_bytes: float = 2.0  # per element, block scales amortized (the bytes moved)
    o_bytes: float = 2.0
    compute_class: str = "bf16"
    a_elem_bytes: float = 0.0  # the element alone, its scales apart (alignment); 0: a_bytes
    flops: Array | float = 0.0
    bytes: Array | float = 0.0
    phase: str = ""
    collective: str = ""
    group_size: Array | float = 1.0
    meta: dict = field(default_factory=dict)

    def gemm_flops(self) -> Array:
        return 2.0 * np.asarray(self.m) * self.n * self.k * self.groups

    def total_flops(self) -> Array:
        return self.gemm_flops() if self.kind == "gemm" else np.asarray(self.flops, dtype=float)


KEPT_PARTS = ("attention", "shared", "dense")  # (specs.checkpoint.kept_parts)


def stored_as(fmt: str) -> dict:
    """A GEMM's weights, math and activations where its weights are kept in format ``fmt``."""
    f = get_format(fmt)
    return {"wbytes": f.bytes_per_element, "ccls": f.compute_class, "abytes": f.element_bits / 8}


# each indexer kind's fixed kernel chain (an engine constant): DSA's lightning indexer, MiniMax
# Sparse Attention's block indexer
INDEXER_CHAINS = {"dsa": "indexer_overhead_s", "msa": "msa_indexer_overhead_s"}


def fixed_op(name: str, op_class: str, layers: Array | float, tokens: Array, constant: str) -> Op:
    """A kernel chain of fixed time per layer with tokens (engine ``constant``; cost.op_time)."""
    return Op(name, op_class, "fixed", layers, 0.0, m=tokens, meta={"fixed": constant})


@dataclass
class StepShape:
    """The per-replica token mix of one engine step plus the plan axes (all broadcastable)."""

    decode_seqs: Array
    decode_ctx: Array
    prefill_tokens: Array
    prefill_seqs: Array
    prefill_ctx: Array
    tp: Array
    ep: Array
    pp: Array
    cp: Array
    attention_dp: Array
    decode_query: Array | float = 1.0  # query tokens per decoding sequence (1 + speculative drafts)
    # share of the replica's per-sequence host work one stage carries: micro-batches / pp (each
    # sequence is scheduled once per step however many stages it crosses)
    host_seq_share: Array | float = 1.0
    micro_batches: Array | float = 1.0  # micro-batches the replica's tokens are split into
    # prompt tokens on the busiest attention-DP rank (None: the replica's spread evenly); the
    # MoE and the collectives still see the replica's ``prefill_tokens``
    rank_prefill_tokens: Array | None = None
    # spread of the decoding sequences' positions: uniform on decode_ctx -/+ decode_span / 2
    # (the steady state's [ISL, ISL + OSL]; 0 where the contexts are given as they are)
    decode_span: Array | float = 0.0
    # a decode-only step's dummy sequences (per micro-batch), its CUDA graph's padding rows
    pad_seqs: Array | float = 0.0


def step_shape(
    tp: Array | int,
    pp: Array | int,
    ep: Array | int,
    cp: Array | int,
    attention_dp: Array | bool,
    *,
    isl: Array | float,
    osl: Array | float,
    decode_seqs: Array | float = 0.0,
    prefill_tokens: Array | float = 0.0,
    prefill_seqs: Array | float | None = None,
    decode_query: Array | float = 1.0,
    micro_batches: Array | float | None = None,
    rank_prefill_tokens: Array | float | None = None,
) -> StepShape:
    """The one place a step's shape is built: a replica's token mix (``decode_seqs`` sequences
    decoding ``decode_query`` tokens each, ``prefill_tokens`` prompt tokens of ``prefill_seqs``
    requests) as one pipeline stage sees it.

    The replica's tokens are split into ``micro_batches`` micro-batches. The default is as many
    as there are pipeline stages, but never more than the sequences in the step (a micro-batch
    holds whole sequences: with C < pp requests, C micro-batches of one sequence each cross
    all pp stages); a single prefill chunk streaming through the stages passes
    ``micro_batches=1``. ``rank_prefill_tokens``: prompt tokens on the busiest attention-DP
    rank when a chunk lands on one rank (``serving.step.chunked_prefill``). Contexts follow
    the steady state of DESIGN.md: a decoding sequence holds ISL + OSL/2 tokens on average, a
    prompt token attends to ISL/2.

    Example:
        >>> s = step_shape(8, 2, 1, 1, False, isl=1024, osl=1024, decode_seqs=64.0)
        >>> float(s.decode_seqs), float(s.decode_ctx)
        (32.0, 1536.0)
    """
    tp, pp, ep, cp = (np.asarray(v, dtype=np.int64) for v in (tp, pp, ep, cp))
    isl_f, osl_f = np.asarray(isl, dtype=float), np.asarray(osl, dtype=float)
    pre = np.asarray(prefill_tokens, dtype=float)
    pseqs = pre / isl_f if prefill_seqs is None else np.asarray(prefill_seqs, dtype=float)
    dec = np.asarray(decode_seqs, dtype=float)
    if micro_batches is None:
        micro = np.minimum(pp.astype(float), np.maximum(dec + pseqs, 1.0))
        host_share = micro / pp
    else:
        micro = np.asarray(micro_batches, dtype=float)
        host_share = 1.0
    return StepShape(
        decode_seqs=dec / micro,
        decode_ctx=isl_f + osl_f / 2.0,
        decode_span=osl_f,
        prefill_tokens=pre / micro,
        prefill_seqs=pseqs / micro,
        prefill_ctx=isl_f / 2.0,
        tp=tp,
        ep=ep,
        pp=pp,
        cp=cp,
        attention_dp=np.asarray(attention_dp, dtype=bool),
        decode_query=decode_query,
        host_seq_share=host_share,
        micro_batches=micro,
        rank_prefill_tokens=None
        if rank_prefill_tokens is None
        else np.asarray(rank_prefill_tokens, dtype=float) / micro,
    )


def layer_group_ops(
    model: ModelSpec,
    prec: Precision,
    g: LayerGroup,
    s: StepShape,
    layers: Array,
    keep: dict[str, str] | None = None,
) -> list[Op]:
    """Ops of one layer of group ``g`` on one GPU, ``layers`` = how many such layers it holds;
    ``keep``: the model's ``kept_parts`` at ``prec`` (None: read here)."""
    a = model.attention
    d = model.hidden_size
    adp = s.attention_dp
    tp, ep, cp = s.tp, s.ep, s.cp
    atp = np.where(adp, 1, tp // cp)
    rank_div = np.where(adp, tp, 1)  # attention-DP splits sequences over the tp group
    q = s.decode_query
    pad = s.pad_seqs * q  # a CUDA graph's dummy rows: no context, no routed experts of their own
    t_dec = (s.decode_seqs * q + pad) / rank_div
    t_pre = s.prefill_tokens / rank_div if s.rank_prefill_tokens is None else s.rank_prefill_tokens
    t_attn = t_dec + t_pre  # tokens through attention projections on this GPU
    t_all = s.decode_seqs * q + s.prefill_tokens  # tokens in the replica (MoE sees all of them)
    t_run = t_all + pad  # ... and the rows its dense kernels and collectives run
    wb, ab, ob = prec.weight_bytes, prec.activation_bytes, 2.0
    ae = prec.activations.element_bits / 8.0  # (MXFP8: 1 byte; its E8M0 scales a tensor apart)
    cc = prec.compute_class
    heads = a.num_heads / atp
    ops: list[Op] = []
    # parts the checkpoint keeps in BF16 (gpt-oss's attention; Kimi's attention, shared experts
    # and dense FFNs) or FP8 blocks (DeepSeek-V4's beside its FP4 experts): their GEMMs so
    keep = kept_parts(model, prec) if keep is None else keep
    w16 = stored_as("bf16")
    at16, sh16, dn16 = (stored_as(keep[p]) if p in keep else {} for p in KEPT_PARTS)

    def gemm(
        name: str,
        cls: str,
        m,
        n,
        k,
        groups=1.0,
        touched=None,
        kernels=1.0,
        wbytes=wb,
        ccls=cc,
        abytes=ab,
    ) -> Op:
        return Op(
            name,
            cls,
            "gemm",
            layers,
            kernels,
            m=m,
            n=n,
            k=k,
            groups=groups,
            touched=groups if touched is None else touched,
            w_bytes=wbytes,
            a_bytes=abytes,
            o_bytes=ob,
            compute_class=ccls,
            a_elem_bytes=ae if abytes == ab else abytes,
        )

    # ---- token mixer: projections ----
    if g.mixer == "linear":
        lin = model.linear_attention
        assert lin is not None
        ops.append(gemm("linear_in_proj", "attention", t_attn, lin.in_proj_width / atp, d))
        o_k = lin.value_dim / atp
    elif a.kind == "mla":
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            qa = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim
            ops.append(gemm("q_a_proj", "attention", t_attn, qa, d, **at16))
            ops.append(gemm("q_b_proj", "attention", t_attn, heads * qk, a.q_lora_rank, **at16))
        else:
            ops.append(gemm("q_proj", "attention", t_attn, heads * qk, d, **at16))
            kv_a = a.kv_lora_rank + a.qk_rope_head_dim
            ops.append(gemm("kv_a_proj", "attention", t_attn, kv_a, d, **at16))
        # decode: absorbed W_UK / W_UV as per-head batched GEMMs; prefill: decompress K, V
        uk = (a.kv_lora_rank, a.qk_nope_head_dim)
        ops.append(gemm("mla_absorb_uk", "attention", t_dec, *uk, groups=heads, **w16))
        uv = (a.v_head_dim, a.kv_lora_rank)
        ops.append(gemm("mla_absorb_uv", "attention", t_dec, *uv, groups=heads, **w16))
        kv_b = heads * (a.qk_nope_head_dim + a.v_head_dim)
        ops.append(gemm("kv_b_proj", "attention", t_pre, kv_b, a.kv_lora_rank, **at16))
        o_k = heads * a.v_head_dim
    elif a.kind == "shared_kv":  # DeepSeek-V4: wq_a and wkv fused, replicated over TP
        ops.append(gemm("q_a_proj", "attention", t_attn, a.q_lora_rank + a.head_dim, d, **at16))
        q_b = (heads * a.head_dim, a.q_lora_rank)
        ops.append(gemm("q_b_proj", "attention", t_attn, *q_b, **at16))
        groups = a.o_groups * heads / a.num_heads  # wo_a: a batched GEMM over the rank's groups
        o_a = (a.o_lora_rank, a.num_heads // a.o_groups * a.head_dim)
        ops.append(gemm("o_a_proj", "attention", t_attn, *o_a, groups=groups, **at16))
        o_k = groups * a.o_lora_rank
        if g.mixer == "compressed":  # wkv and wgate (vLLM: unquantized, FP32 out), replicated
            width = 2 * model.compressor.overlap(g.compress) * a.head_dim  # type: ignore[union-attr]
            ops.append(gemm("compressor", "attention", t_attn, width, d, **w16))
    else:
        kv_local = np.maximum(a.num_kv_heads / atp, 1.0)
        q_width = heads * a.head_dim * (2 if a.output_gate else 1)  # + output gate
        qkv = q_width + 2 * kv_local * a.head_dim
        ops.append(gemm("qkv_proj", "attention", t_attn, qkv, d, **at16))
        o_k = heads * a.v_head_dim
    csa = g.mixer == "compressed" and model.compressor and model.compressor.indexed(g.compress)
    if g.mixer == "sparse" or csa:
        idx = model.indexer
        assert idx is not None
        # indexer: queries from the q latent (or hidden), one shared key (V4: its compressor's
        # wkv and wgate) and DSA's per-head weights from hidden
        q_in = a.q_lora_rank or d
        q_i = (idx.num_heads * idx.head_dim, q_in)  # (V4: FP8, as its attention)
        ops.append(gemm("indexer_q", "attention", t_attn, *q_i, **(at16 if csa else {})))
        k_w = (3 if csa else 0) * idx.head_dim + idx.key_width  # (V4's: unquantized, BF16)
        ops.append(gemm("indexer_k_w", "attention", t_attn, k_w, d, **(w16 if csa else {})))
        # its kernel chain around them (norm, RoPE, quantize, index-K store, logits meta, top-k)
        chain = "compressed_indexer_overhead_s" if csa else INDEXER_CHAINS[idx.kind]
        ops.append(fixed_op("indexer_chain", "attention", layers, t_attn, chain))
        if csa:  # its top-k selection runs where a query's entries pass top-k (decode, prompts)
            k, r = idx.topk, g.compress  # (entries: one per r tokens, whole ones)
            dec, pre = np.floor(s.decode_ctx / r) > k, np.floor(2.0 * s.prefill_ctx / r) > k
            over = ((s.decode_seqs > 0) & dec) | ((t_pre > 0) & pre)
            select = np.where(over, t_attn, 0.0)
            ops.append(fixed_op("indexer_topk", "attention", layers, select, "compressed_topk_s"))
    if g.mixer == "compressed":  # DeepSeek-V4's module chain (norms, RoPE, stores, pooling)
        chain = "compressed_overhead_s"
        ops.append(fixed_op("compressed_chain", "attention", layers, t_attn, chain))
    ops.append(gemm("o_proj", "attention", t_attn, d, o_k, **at16))

    # ---- token-mixer kernels (mixers.py: closed forms per kind) ----
    seqs_local = s.decode_seqs / rank_div
    # Helix / context parallelism shards the KV sequence over cp GPUs for prefill as for decode
    ctx_d, ctx_p = s.decode_ctx, s.prefill_ctx
    kernels = []
    if g.mixer == "linear":
        kernels.append(
            ("linear_attention", linear_counts(model, seqs_local, q, t_pre, atp), "bf16", {}, {})
        )
    else:
        kv_local = np.maximum(a.num_kv_heads / atp, 1.0)
        counts = softmax_counts(
            model, prec, g, seqs_local, q, ctx_d, t_pre, ctx_p, heads, kv_local, cp, s.decode_span
        )
        # MLA decode (and DeepSeek-V4's, the same FlashMLA family over one latent-like head):
        # the GPU's measured kernel (a part per query head); GQA decode over an FP8 cache may be
        # bound by its conversion; DSA's kernels pad heads (cost.attention_time)
        latent = a.kind in ("mla", "shared_kv")
        mla = {"query_heads": seqs_local * q * heads} if latent else {}
        dsa, pre = dsa_meta(model, prec, g, heads, ctx_p)
        meta = {**(mla or ({"fp8_kv": True} if prec.kv_fp8 else {})), **dsa}
        pre = {"head_dim": a.prefill_head_dim, **pre}
        if a.kind == "shared_kv":  # (its per-head chain runs on prompt tokens alike)
            pre["query_heads"] = t_pre * heads
        kernels.append(("attention", counts, prec.attention_class, meta, pre))
        if g.mixer == "sparse" or csa:  # (V4's indexer scores the entries: one per ratio)
            r = g.compress or 1
            idx = indexer_kernel(model, prec, seqs_local, q, ctx_d / r, t_pre, ctx_p / r, cp)
            kernels.append(("indexer", *idx, {}))
    for name, (dec_flops, dec_bytes, pre_flops, pre_bytes), ccls, dec_meta, pre_meta in kernels:
        for phase, flops, nbytes, meta in (
            ("decode", dec_flops, dec_bytes, dec_meta),
            ("prefill", pre_flops, pre_bytes, pre_meta),
        ):
            ops.append(Op(f"{name}_{phase}", "attention", "attention", layers, 1.0, flops=flops,
                          bytes=nbytes, phase=phase, compute_class=ccls, meta=meta))  # fmt: skip

    # ---- FFN ----
    mats = 2 if model.gated_ffn else 1
    moe_meta: dict = {}  # the routed experts' ``moe``, which the activation op carries too
    if not g.moe:
        f_local = model.intermediate_size / np.where(adp, 1, tp)
        t_ffn = np.where(adp, t_attn, t_run)
        ops.append(gemm("ffn_up", "ffn", t_ffn, mats * f_local, d, **dn16))
        ops.append(gemm("ffn_down", "ffn", t_ffn, d, f_local, **dn16))
    else:
        moe = model.moe
        assert moe is not None
        e, k = moe.num_experts, moe.top_k
        moe_tp = tp // ep
        slots = expert_slots(e, ep).astype(float)  # (+ redundant copies: specs.plan)
        experts_local = slots / ep
        pairs = t_all * k / ep  # routed (token, local expert) pairs per EP rank
        # the mean rank's touched slots and rows per touched slot (routing.rank_experts)
        touched = rank_experts(np.maximum(t_all, 0.0), slots, k, ep)
        rows = np.where(touched > 0, pairs / np.maximum(touched, 1e-30), 0.0)
        fe_local = moe.expert_intermediate / moe_tp
        ops.append(gemm("router", "ffn", t_attn, e, d, wbytes=2.0, ccls="bf16", abytes=2.0))
        up = gemm("experts_up", "ffn", rows, mats * fe_local, d, groups=touched, touched=touched)
        down = gemm("experts_down", "ffn", rows, d, fe_local, groups=touched, touched=touched)
        # the busiest EP rank's load follows from the mean pairs (routing.moe_rank_imbalance)
        up.meta["moe"] = down.meta["moe"] = {
            "pairs_per_rank": pairs,
            "ep": ep,
            "top_k": float(k),
            "experts_local": experts_local,
            "routed": True,  # rows per expert are random (routing.expected_row_tiles)
            "weights": prec.weights.id,  # its grouped kernel's share (cost.gemm_time)
            "moe_tp": moe_tp,  # (moe_kernels.weight_only_tiles: a path that takes EP but not TP)
            "adp": adp, "pure_ep": ep == tp,  # fed every token? (comm.fed_every_token)
        }  # fmt: skip
        # routing, sort, permute, quantize, finalize: fixed a layer (moe_kernels.moe_layer_fixed_s)
        routing = fixed_op("moe_routing", "ffn", layers, t_all, "moe_layer_overhead_s")
        routing.meta["weights"] = prec.weights.id  # (its chain differs by format)
        ops.append(routing)
        # ... and the permute/finalize bytes, by kernel path (cost.moe_permute_time; launched above)
        permute = Op("moe_permute", "ffn", "permute", layers, 0.0)
        # (every routed pair, attention-DP and GEMM1's width: what a kernel fed every token fills)
        permute.meta["moe_permute"] = {"tokens": t_all, "pairs": pairs, "hidden": float(d),
            "act_bytes": ab, "pairs_all": t_all * k, "width": mats * fe_local,
            "mats": float(mats), "moe": up.meta["moe"]}  # fmt: skip
        ops.append(permute)
        ops.extend([up, down])
        moe_meta = {"moe": up.meta["moe"]}
        if moe.num_shared:
            fs_local = moe.num_shared * moe.shared_intermediate / np.where(adp, 1, tp)
            t_sh = np.where(adp, t_attn, t_run)
            ops.append(gemm("shared_up", "ffn", t_sh, mats * fs_local, d, **sh16))
            ops.append(gemm("shared_down", "ffn", t_sh, d, fs_local, **sh16))

    # ---- communication ----
    comm = prec.comm_bytes
    multi = tp > 1
    ar_attn = np.where(multi & ~adp, t_run * d * comm, 0.0)
    ops.append(Op("allreduce_attn", "communication", "comm", layers, 1.0, bytes=ar_attn,
                  collective="allreduce", group_size=tp))  # fmt: skip
    if a.qk_norm_across_heads and g.mixer == "attention":
        # RMSNorm over all heads of a token: tp ranks all-reduce the FP32 variance of q and k
        qk_var = np.where(multi & ~adp, t_attn * 2 * 4.0, 0.0)
        ops.append(Op("allreduce_qk_norm", "communication", "comm", layers, 1.0, bytes=qk_var,
                      collective="allreduce", group_size=tp))  # fmt: skip
    if g.moe:
        # attention-DP: each rank's tokens travel to the GPUs holding their experts (top-k owners,
        # each sliced over moe_tp GPUs) and back: at most all tp GPUs (an all-gather)
        k_moe = model.moe.top_k if model.moe else 1
        copies = np.minimum(k_moe * (tp // ep), tp)
        a2a = np.where(multi & adp, t_attn * copies * d, 0.0)
        for name, elem in (("moe_dispatch", prec.activation_bytes), ("moe_combine", comm)):
            # priced by the engine's kernel family (comm.moe_comm_time); bytes = logical payload
            op = Op(
                name,
                "communication",
                "comm",
                layers,
                1.0,
                bytes=a2a * elem,
                collective=name,
                group_size=np.where(multi & adp, tp, 1),
            )
            op.meta["moe_comm"] = {
                "tokens_rank": np.where(multi & adp, t_attn, 0.0),
                "tokens_all": np.where(multi & adp, t_run, 0.0),
                "copies": copies,
                "top_k": k_moe * (tp // ep),  # pairs a token sends without deduplication
                "pure_ep": ep == tp,  # experts whole on their ranks (no moe_tp slicing)
                "prompt": s.prefill_tokens > 0,  # the step carries prompt tokens
                "hidden": float(d),
                "elem_bytes": float(elem),
            }
            ops.append(op)
    ar_ffn = np.where(multi & ~adp, t_run * d * comm, 0.0)
    ops.append(Op("allreduce_moe" if g.moe else "allreduce_ffn", "communication", "comm", layers,
                  1.0, bytes=ar_ffn, collective="allreduce", group_size=tp))  # fmt: skip
    if np.any(np.asarray(cp) > 1):
        # Helix: exchange partial attention outputs + softmax stats across the KV-parallel group
        helix = np.where(cp > 1, seqs_local * a.num_heads / atp * (a.v_head_dim + 2) * 2.0, 0.0)
        ops.append(Op("helix_alltoall", "communication", "comm", layers, 1.0, bytes=helix,
                      collective="alltoall", group_size=cp))  # fmt: skip

    # ---- norms, residuals, activation functions, rope (bandwidth-bound elementwise) ----
    routed = model.moe.expert_intermediate * model.moe.top_k if g.moe and model.moe else 0.0
    ffn_width = (routed or model.intermediate_size) / np.where(adp, 1, tp) if g.ffn else 0.0
    ops.append(Op("norms_elementwise", "other", "memory", layers, 3.0, bytes=t_attn * d * 2.0 * 6))
    if n := model.hyper_connections:  # mHC: each sublayer's fused post + pre over n BF16 streams
        hc = t_attn * 2 * (2 * n + 2) * d * 2.0  # reads streams + output, writes streams + input
        ops.append(Op("hyper_connections", "other", "memory", layers, 2.0, bytes=hc))
        # ... and its mixes: the n x d streams -> (2 + n) x n by FP32 weights, per sublayer
        mix = ((2 + n) * n, n * d, 2.0)
        ops.append(gemm("hc_mixes", "other", t_attn, *mix, wbytes=4.0, ccls="bf16", abytes=2.0))
    # the FFN's activation function (SwiGLU: reads the gate and up outputs, writes their product;
    # the experts' ``moe``: a kernel path that fuses it into GEMM1, cost.op_time)
    act = np.where(adp, t_attn, t_run) * ffn_width * 2.0 * 3
    ops.append(Op("ffn_activation", "ffn", "memory", layers, 1.0, bytes=act, meta=moe_meta))
    return [op for op in ops if _in_block(op, g)]


# collectives that belong to the token mixer / to the FFN of a layer
_MIXER_COMMS = ("allreduce_attn", "allreduce_qk_norm", "helix_alltoall")
_FFN_COMMS = ("allreduce_ffn", "allreduce_moe", "moe_dispatch", "moe_combine")


def _in_block(op: Op, g: LayerGroup) -> bool:
    """Whether ``op`` runs in a layer of ``g``: an FFN-only block (mixer ``none``) has no mixer
    ops, a mixer-only block (``ffn`` False, Nemotron-H's Mamba and attention blocks) no FFN
    ops."""
    if g.mixer == "none" and (op.op_class == "attention" or op.name in _MIXER_COMMS):
        return False
    return g.ffn or not (op.op_class == "ffn" or op.name in _FFN_COMMS)


def step_ops(model: ModelSpec, prec: Precision, s: StepShape) -> list[Op]:
    """All ops of one step on one GPU of the first pipeline stage's size (layers / pp each)."""
    ops: list[Op] = []
    keep = kept_parts(model, prec)  # (read once for every group)
    for g in model.layer_groups:
        ops.extend(layer_group_ops(model, prec, g, s, g.count / s.pp, keep))
    adp = s.attention_dp
    rank_div = np.where(adp, s.tp, 1)
    rows = (s.decode_seqs + s.pad_seqs) * s.decode_query  # (a CUDA graph's dummy rows too)
    logits_rows = (rows + s.prefill_seqs) / rank_div
    vocab_local = model.vocab_size / np.where(adp, 1, s.tp)
    # LM head and embeddings stay BF16 in NVIDIA ModelOpt FP8/NVFP4 checkpoints (not quantized)
    ops.append(Op("lm_head", "other", "gemm", 1.0 / s.pp, 1.0, m=logits_rows, n=vocab_local,
                  k=model.hidden_size, w_bytes=2.0, a_bytes=2.0, o_bytes=4.0,
                  compute_class="bf16"))  # fmt: skip
    t_attn = (rows + s.prefill_tokens) / rank_div
    emb = t_attn * model.hidden_size * 2.0 * 2
    ops.append(Op("embedding", "other", "memory", 1.0 / s.pp, 1.0, bytes=emb))
    return ops


def mtp_group(model: ModelSpec) -> LayerGroup:
    """The layer group an MTP block is made like: the last with an FFN and full softmax attention,
    else windowed, else the last (DeepSeek-V3's MTP module is one of its MoE blocks)."""
    if model.compressor is not None:  # DeepSeek-V4's: the window alone (compress_ratios 0)
        return LayerGroup(1, model.compressor.window, True)
    soft = [g for g in model.layer_groups if g.ffn and g.mixer in ("attention", "sparse")]
    return ([g for g in soft if not g.window] or soft or list(model.layer_groups))[-1]


def draft_layers(model: ModelSpec, spec_tokens: int) -> int:
    """MTP blocks a deployment loads beside the model: all the checkpoint holds where it drafts
    (``spec_tokens`` > 0), none otherwise. A draft model of its own (EAGLE heads) is not one."""
    return model.num_mtp_layers if spec_tokens else 0


def weight_bytes_per_gpu(
    model: ModelSpec,
    prec: Precision,
    tp: Array,
    ep: Array,
    pp: Array,
    attention_dp: Array,
    cp: Array,
    drafts: int = 0,
) -> Array:
    """Weight bytes resident on one GPU (the largest pipeline stage ~ layers / pp), with
    ``drafts`` MTP blocks (:func:`draft_layers`) on the last stage: each a layer of
    :func:`mtp_group` plus its projection of [embedding; hidden] (2d x d, an unquantized
    replicated ``nn.Linear`` in vLLM's DeepSeek MTP) and three norms, in BF16; the embedding and
    the head are the model's."""
    atp = np.where(attention_dp, 1, tp // cp)
    dense_div = np.where(attention_dp, 1, tp)
    wb = prec.weight_bytes
    keep = kept_parts(model, prec)  # (parts the checkpoint keeps in 16 or 8 bits)
    wa, ws, wd = (stored_as(keep[p])["wbytes"] if p in keep else wb for p in KEPT_PARTS)
    total = np.zeros(np.broadcast(tp, ep, pp, attention_dp, cp).shape)
    mtp = mtp_group(model) if drafts else None
    d = model.hidden_size
    extra = drafts * (2.0 * d * d + 3.0 * d) * 2.0

    def layer(g: LayerGroup) -> Array:
        split, rep, b16, f32 = model.mixer_param_split(g.mixer, g.compress)
        per = (split / atp + rep) * wa + b16 * 2.0 + f32 * 4.0 + model.norm_params_per_layer * 2.0
        if g.ffn and g.moe:
            assert model.moe is not None
            per = per + expert_slots(model.moe.num_experts, ep) * model.expert_params / tp * wb
            per = per + model.shared_expert_params / dense_div * ws + model.router_params * 2.0
        elif g.ffn:
            per = per + model.dense_ffn_params / dense_div * wd
        return per

    for g in model.layer_groups:
        total = total + g.count * layer(g)
    extra = extra + (drafts * layer(mtp) if mtp is not None else 0.0)
    vocab_div = np.where(attention_dp, 1, tp)
    total = total / pp + (model.embedding_params + model.lm_head_params) * 2.0 / vocab_div
    return total + extra


def kv_bytes_per_sequence_per_gpu(
    model: ModelSpec,
    prec: Precision,
    context: Array,
    tp: Array,
    pp: Array,
    attention_dp: Array,
    cp: Array,
    window_share: float = 0.0,
    drafts: int = 0,
    sparse_latent: float | None = None,
) -> Array:
    """KV-cache (and recurrent-state) bytes one sequence of ``context`` tokens occupies on one
    GPU holding it: the sum over layer groups of ``mixers.cache_bytes_per_layer`` (its
    ``window_share`` and ``sparse_latent``: an engine's, ``serving.memory.engine_kv_bytes``),
    with ``drafts`` MTP blocks' on the last stage (the engines cache their attention too)."""
    atp = np.where(attention_dp, 1, tp // cp)
    ctx = np.asarray(context, dtype=float)
    total, lay, mtp_g = 0.0, sparse_latent, (mtp_group(model) if drafts else None)
    for g in model.layer_groups:
        total = total + g.count * cache_bytes_per_layer(model, prec, g, ctx, atp, window_share, lay)
    mtp = drafts * cache_bytes_per_layer(model, prec, mtp_g, ctx, atp, 0, lay) if drafts else 0
    return (total / pp + mtp) / cp
