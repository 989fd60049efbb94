"""Lint rules on the deployment: attention TP and KV replication, KV-cache size, pipeline
balance, quantization (the MoE rules are in :mod:`.rules_moe`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import cost
from ..errors import SpecError
from ..explore import (
    THROUGHPUT_MIN_TOK_S_USER,
    OperatingPoint,
    candidate_plans,
    evaluate_plans,
    operating_point,
)
from ..ops import layer_group_ops, step_shape
from ..serving import pipelined_step
from ..specs.hardware import HardwareSpec
from ..specs.model import DSA_INDEXER, AttentionSpec, LayerGroup, ModelSpec, gdn_like
from ..specs.plan import ParallelPlan
from ..specs.precision import Precision, parse_precision
from .findings import (
    MIN_IMPACT,
    PIPELINE_STAGES,
    SLIDING_WINDOW,
    Finding,
    LintContext,
    best_throughput,
    scalar,
    severity_for,
    step_rows,
)

# rules: attention-tp and kv-cache
# ---------------------------------------------------------------------------------------------


def rule_attention_tp(ctx: LintContext) -> list[Finding]:
    a = ctx.model.attention
    if a.kind != "gqa":
        return []
    plans = candidate_plans(ctx.model, ctx.hw)
    if not any(p.tp > a.num_kv_heads for p in plans):
        return []
    p0 = ctx.longest  # KV-parallel attention pays with long contexts
    plain = [p for p in plans if p.cp == 1]
    helix = [p for p in plans if p.cp > 1]
    try:
        lat_plain = operating_point(
            ctx.model, ctx.hw, ctx.prec, ctx.eng, p0.isl, p0.osl, "latency", plans=plain
        )
    except SpecError:
        return []
    setting = ctx.setting(p0) | {
        "plan": lat_plain.plan.label(),
        "concurrency": lat_plain.concurrency,
    }
    head = (
        f"num_key_value_heads = {a.num_kv_heads} caps attention TP at {a.num_kv_heads} GPUs "
        "(beyond, every GPU holds a replica of its KV heads)"
    )
    if helix:
        lat_helix = operating_point(
            ctx.model, ctx.hw, ctx.prec, ctx.eng, p0.isl, p0.osl, "latency", plans=plain + helix
        )
        impact = lat_helix.tok_s_per_user / lat_plain.tok_s_per_user
        if impact >= MIN_IMPACT:
            msg = (
                f"{head}; at ISL/OSL {p0.isl}/{p0.osl} the fastest plan without KV-parallel "
                f"attention ({lat_plain.plan.label()}) reaches {lat_plain.tok_s_per_user:.0f} "
                f"tok/s/user, with Helix ({lat_helix.plan.label()}) "
                f"{lat_helix.tok_s_per_user:.0f}: decouple attention and FFN parallelism"
            )
            return [
                Finding(
                    "attention-tp",
                    severity_for(impact),
                    "attention.num_key_value_heads",
                    msg,
                    impact,
                    {
                        "metric": "tok/s/user at the latency goal",
                        "before": lat_plain.tok_s_per_user,
                        "after": lat_helix.tok_s_per_user,
                        "plans": [lat_plain.plan.label(), lat_helix.plan.label()],
                        "setting": setting,
                    },
                )
            ]
    lp = lat_plain.plan
    if lp.attention_tp <= a.num_kv_heads:
        return []
    # the fastest plan replicates KV heads: Helix (KV sharded over cp) in a disaggregated decode
    # pool, where TRT-LLM deploys it, and the memory the replicas take
    rep = lp.attention_tp // a.num_kv_heads
    sharded = ParallelPlan(tp=lp.tp, ep=lp.ep, cp=rep)
    try:
        sharded.validate_for(ctx.model)
    except SpecError:
        return []
    dec = {}
    for q in (lp, sharded):
        step = pipelined_step(
            ctx.model,
            ctx.prec,
            ctx.hw,
            ctx.eng,
            tp=q.tp,
            pp=q.pp,
            ep=q.ep,
            cp=q.cp,
            attention_dp=q.attention_dp,
            isl=p0.isl,
            osl=p0.osl,
            decode_seqs=1.0,
        )
        dec[q] = scalar(step.total_s)
    g = evaluate_plans(ctx.model, ctx.hw, ctx.prec, ctx.eng, [lp, sharded], p0.isl, p0.osl, [1])
    fit_before, fit_after = float(g.max_concurrency[0, 0]), float(g.max_concurrency[1, 0])
    speedup = dec[lp] / dec[sharded]
    impact = max(speedup, 1.0)
    msg = (
        f"{head}; the fastest plan at ISL/OSL {p0.isl}/{p0.osl}, {lp.label()}, replicates the KV "
        f"cache {rep}x: {fit_before:.0f} concurrent {p0.isl + p0.osl:,}-token sequences fit "
        f"instead of {fit_after:.0f} with the KV heads sharded (Helix cp={rep}); a Helix decode "
        f"step is {speedup:.2f}x the speed of the replicated one at this context"
        + (
            ""
            if speedup >= MIN_IMPACT
            else " (no speedup predicted here: the capacity is the cost)"
        )
    )
    return [
        Finding(
            "attention-tp",
            severity_for(impact) if impact >= MIN_IMPACT else "info",
            "attention.num_key_value_heads",
            msg,
            impact,
            {
                "metric": "decode step time at concurrency 1 (Helix vs replicated KV)",
                "before": dec[lp],
                "after": dec[sharded],
                "max_concurrency": {"replicated": fit_before, "sharded": fit_after},
                "replication": rep,
                "setting": setting,
            },
        )
    ]


def _with_attention(model: ModelSpec, attention: AttentionSpec, suffix: str) -> ModelSpec:
    return dataclasses.replace(model, id=f"{model.id}-{suffix}", attention=attention)


def _mixer_alternatives(model: ModelSpec) -> list[tuple[str, ModelSpec]]:
    """Sparse or linear token mixers in place of softmax attention, at their published shapes:
    DeepSeek-V3.2's lightning indexer (64 x 128, top-2048) on every MLA layer; Gated DeltaNet
    on 3 of 4 layers as in Qwen3-Next (value width = the query width in 128-dim heads, half as
    many key heads, convolution 4; architectures.md section 2). The parameters change with the
    mixer (a GDN layer is not an attention layer's size) and accuracy is not estimated."""
    a = model.attention
    out: list[tuple[str, ModelSpec]] = []
    if a.kind == "mla" and model.indexer is None:
        label = "DSA indexer 64 x 128, top-2048 (DeepSeek-V3.2)"
        out.append((label, model.with_mixer("sparse", 1.0, "dsa", indexer=DSA_INDEXER)))
    if a.kind == "gqa" and model.linear_attention is None:
        lin = gdn_like(a)
        label = (
            f"Gated DeltaNet ({lin.num_k_heads}/{lin.num_v_heads} heads x 128) on 3 of 4 layers "
            "(Qwen3-Next layout)"
        )
        out.append((label, model.with_mixer("linear", 0.75, "gdn", linear_attention=lin)))
    return out


def _kv_alternatives(model: ModelSpec) -> list[tuple[str, ModelSpec]]:
    a = model.attention
    alts: list[tuple[str, ModelSpec]] = _mixer_alternatives(model)
    if a.kind != "gqa":
        return alts
    if a.num_kv_heads >= 2 and a.num_heads % (a.num_kv_heads // 2) == 0:
        alts.append(
            (
                f"num_key_value_heads {a.num_kv_heads} -> {a.num_kv_heads // 2}",
                _with_attention(
                    model, dataclasses.replace(a, num_kv_heads=a.num_kv_heads // 2), "kv-half"
                ),
            )
        )
    rope = 64
    mla = AttentionSpec(
        "mla",
        a.num_heads,
        a.num_heads,
        a.head_dim + rope,
        a.v_head_dim,
        q_lora_rank=0,
        kv_lora_rank=512,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=a.head_dim,
        chunked_window=a.chunked_window,
    )
    alts.append(
        ("MLA (kv_lora_rank 512 + rope 64, DeepSeek-V3 style)", _with_attention(model, mla, "mla"))
    )
    if all(g.window == 0 for g in model.layer_groups):
        groups: list[LayerGroup] = []
        for g in model.layer_groups:  # only softmax-attention layers take a window
            local = (g.count * 3) // 4 if g.mixer == "attention" else 0
            groups += [
                dataclasses.replace(g, count=local, window=SLIDING_WINDOW),
                dataclasses.replace(g, count=g.count - local),
            ]
        alts.append(
            (
                f"sliding window {SLIDING_WINDOW} on 3 of 4 layers",
                dataclasses.replace(
                    model,
                    id=f"{model.id}-swa",
                    layer_groups=tuple(x for x in groups if x.count),
                    layer_order=(),
                ),
            )
        )
    return alts


def rule_kv_cache(ctx: LintContext) -> list[Finding]:
    a = ctx.model.attention
    if a.kind != "gqa" and not _mixer_alternatives(ctx.model):
        return []
    p = ctx.longest
    if p.fractions.get("attention", 0.0) < 0.4:
        return []
    base, _ = best_throughput(ctx, ctx.model, p.isl, p.osl)
    if base <= 0:
        return []
    results = []
    for label, alt in _kv_alternatives(ctx.model):
        thr, pt = best_throughput(ctx, alt, p.isl, p.osl)
        results.append((label, thr / base, pt))
    if not results:
        return []
    results.sort(key=lambda r: -r[1])
    best_label, impact, _best_pt = results[0]
    if impact < MIN_IMPACT:
        return []
    kv_tok = ctx.model.kv_bytes_per_token(ctx.prec.kv_bytes)
    ctx_tokens = p.isl + p.osl
    alts = "; ".join(f"{lbl}: {g:.2f}x" for lbl, g, _ in results)
    shape = (
        f"GQA {a.num_heads}/{a.num_kv_heads} = {a.num_heads // a.num_kv_heads} query heads per KV "
        "head"
        if a.kind == "gqa"
        else f"MLA (latent {a.kv_lora_rank} + rope {a.qk_rope_head_dim})"
    )
    msg = (
        f"{shape} keeps {kv_tok / 1e3:.0f} KB of KV cache per token ({ctx.prec.kv_cache.id}), "
        f"{kv_tok * ctx_tokens / 1e9:.2f} GB per {ctx_tokens:,}-token sequence; attention is "
        f"{p.fractions['attention']:.0%} of the step at ISL/OSL {p.isl}/{p.osl}. Throughput at the "
        f"throughput goal ({p.output_tok_s_per_gpu:.0f} tok/s/GPU): {alts} (attention-variant "
        "accuracy is not estimated)"
    )
    return [
        Finding(
            "kv-cache",
            severity_for(impact),
            "attention (KV cache)",
            msg,
            impact,
            {
                "metric": (
                    f"output tok/s/GPU at the throughput goal (>= {THROUGHPUT_MIN_TOK_S_USER:g} "
                    "tok/s/user)"
                ),
                "before": base,
                "after": base * impact,
                "kv_bytes_per_token": kv_tok,
                "gqa_ratio": a.num_heads / a.num_kv_heads if a.kind == "gqa" else None,
                "alternatives": {lbl: g for lbl, g, _ in results},
                "best": best_label,
                "setting": ctx.setting(p),
            },
        )
    ]


# ---------------------------------------------------------------------------------------------
# rule: pipeline-balance
# ---------------------------------------------------------------------------------------------


def layer_sequence(model: ModelSpec) -> list[tuple[int, bool, str, bool, int]]:
    """Per-layer (window, moe, mixer, ffn, compress) in model order (``ModelSpec.layer_kinds``)."""
    return [(g.window, g.moe, g.mixer, g.ffn, g.compress) for g in model.layer_kinds()]


def _kind_label(k: tuple, sep: str = " ") -> str:
    """A layer kind in words: its FFN (MoE, dense or none), window and token mixer (with its
    compression ratio)."""
    parts = [("MoE" if k[1] else "dense") if k[3] else "mixer-only"]
    parts += [f"window{sep}{k[0]}"] if k[0] else []
    parts += [{"none": "ffn-only"}.get(k[2], k[2])] if k[2] != "attention" else []
    parts += [f"ratio{sep}{k[4]}"] if k[4] else []
    return sep.join(parts)


def _layer_times(ctx: LintContext, point: OperatingPoint) -> dict[tuple, float]:
    """Time of one layer of each (window, moe, mixer, ffn, compress) kind in the workload's
    mixed step."""
    p = point.plan
    s = step_shape(
        p.tp,
        p.pp,
        p.ep,
        p.cp,
        p.attention_dp,
        isl=point.isl,
        osl=point.osl,
        decode_seqs=point.step_decode_seqs,
        prefill_tokens=point.step_prefill_tokens,
    )
    out = {}
    for g in ctx.model.layer_groups:
        t = 0.0
        for op in layer_group_ops(ctx.model, ctx.prec, g, s, np.array(1.0)):
            tt, _ = cost.op_time(op, ctx.hw, ctx.eng)
            t += scalar(tt) + (op.kernels * ctx.eng.kernel_overhead_s if scalar(tt) > 0 else 0.0)
        out[(g.window, g.moe, g.mixer, g.ffn, g.compress)] = t
    return out


def stage_balance(times: list[float], stages: int) -> float:
    """Best contiguous split of per-layer times into ``stages``: mean stage / slowest stage."""
    n = len(times)
    if stages > n:
        return 0.0
    prefix = np.concatenate([[0.0], np.cumsum(times)])
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for s in range(1, stages + 1):
        for j in range(s, n + 1):
            best[s][j] = min(max(best[s - 1][i], prefix[j] - prefix[i]) for i in range(s - 1, j))
    return float(prefix[-1] / stages / best[stages][n])


def rule_pipeline(ctx: LintContext) -> list[Finding]:
    seq = layer_sequence(ctx.model)
    per_kind = _layer_times(ctx, ctx.primary)
    times = [per_kind.get(k, 0.0) for k in seq]
    worst = None
    balances = {}
    for pp in PIPELINE_STAGES:
        if pp > len(times):
            continue
        b = stage_balance(times, pp)
        balances[pp] = b
        if worst is None or b < balances[worst]:
            worst = pp
    if worst is None:
        return []
    impact = 1.0 / balances[worst]
    if impact < MIN_IMPACT:
        return []
    kinds = sorted({k for k in seq}, key=lambda k: seq.index(k))
    desc = ", ".join(
        f"{sum(1 for x in seq if x == k)} x {_kind_label(k)} ({per_kind[k] * 1e3:.2f} ms)"
        for k in kinds
    )
    why = []
    if len(kinds) > 1:
        why.append("layers of different cost")
    if any(len(times) % pp for pp in balances):
        why.append(
            f"{len(times)} layers not divisible by "
            f"{', '.join(str(pp) for pp in balances if len(times) % pp)}"
        )
    suggest = [x for x in (len(times) - len(times) % 8, len(times) - len(times) % 8 + 8) if x > 0]
    msg = (
        f"{len(times)} layers ({desc}) split into {worst} pipeline stages at best "
        f"{balances[worst]:.1%} balanced ({'; '.join(why) or 'irregular pattern'}): the slowest "
        f"stage sets the pipeline rate; a regular stack of {' or '.join(map(str, suggest))} "
        "identical layers splits evenly (chunked PP prefill: the bubble shrinks too)"
    )
    return [
        Finding(
            "pipeline-balance",
            severity_for(impact),
            "num_hidden_layers / layer pattern",
            msg,
            impact,
            {
                "metric": "pipeline stage time (slowest over mean, mixed step)",
                "balance_by_pp": balances,
                "layer_time_s": {_kind_label(k, "-").lower(): v for k, v in per_kind.items()},
                "setting": ctx.setting(),
            },
        )
    ]


# ---------------------------------------------------------------------------------------------
# rule: quantization
# ---------------------------------------------------------------------------------------------


def _target_precision(hw: HardwareSpec, prec: Precision) -> str | None:
    for cand in ("nvfp4", "mxfp4", "fp8"):
        if hw.supports(cand) and parse_precision(cand).weight_bytes < prec.weight_bytes:
            return cand
    return None


def rule_quantization(ctx: LintContext) -> list[Finding]:
    target = _target_precision(ctx.hw, ctx.prec)
    if target is None:
        return []
    tprec = parse_precision(target)
    p = ctx.primary
    now = step_rows(ctx, p)
    then = step_rows(ctx, p, prec=tprec)
    impacts = {ph: now[ph][0] / then[ph][0] for ph in now}
    phase = "mixed"
    impact = impacts[phase]
    if impact < MIN_IMPACT:
        return []
    by_op: dict[str, float] = {}
    for (op, t0), (_op1, t1) in zip(now[phase][1], then[phase][1]):
        by_op[op.name] = by_op.get(op.name, 0.0) + (t0 - t1)
    total = now[phase][0]
    top = sorted(by_op.items(), key=lambda kv: -kv[1])[:4]
    top_txt = ", ".join(f"{name} -{dt / total:.0%}" for name, dt in top if dt > 0)
    pinned = [
        op.name
        for op, t in now[phase][1]
        if op.kind == "gemm" and op.w_bytes >= 2.0 and t > 0.02 * total
    ]
    msg = (
        f"at {p.plan.label()}, concurrency {p.concurrency}, ISL/OSL {p.isl}/{p.osl}: {ctx.prec.id} "
        f"-> {target} makes the step {impact:.2f}x faster (prefill chunk "
        f"{impacts['prefill']:.2f}x); largest savings (share of the step): {top_txt}"
        + (f"; still BF16 after quantization: {', '.join(sorted(set(pinned)))}" if pinned else "")
        + " (quantized weights also free memory for more concurrency)"
    )
    return [
        Finding(
            "quantization",
            severity_for(impact),
            f"precision {ctx.prec.id}",
            msg,
            impact,
            {
                "metric": "mixed step time",
                "target": target,
                "speedup_by_phase": impacts,
                "saved_s_by_op": dict(top),
                "setting": ctx.setting(),
            },
        )
    ]
