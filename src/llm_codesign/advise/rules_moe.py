"""Lint rules on mixture-of-experts deployments: expert TP versus expert parallelism
(moe-expert-tp), per-expert GEMM rows (moe-expert-m), expert count and granularity
(moe-balance)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import SpecError
from ..explore import candidate_plans
from ..ops import Op
from ..specs.plan import redundant_experts
from .archsearch import build_variant
from .findings import (
    EXPERT_TP_MIN_WIDTH,
    MIN_IMPACT,
    Finding,
    LintContext,
    best_throughput,
    severity_for,
    step_rows,
    surgery,
)
from .rules_shape import nearest_multiple


def rule_moe_expert_tp(ctx: LintContext) -> list[Finding]:
    moe = ctx.model.moe
    if moe is None:
        return []
    plans = candidate_plans(ctx.model, ctx.hw)
    tps = sorted(
        {p.tp for p in plans if p.tp > 1 and moe.expert_intermediate / p.tp < EXPERT_TP_MIN_WIDTH}
    )
    out = []
    p0 = ctx.primary
    pref = sorted(tps, key=lambda t: (t != p0.plan.tp, t != 8, t))
    for tp in pref:
        tp_only = [p for p in plans if p.tp == tp and p.ep == 1]
        with_ep = [p for p in plans if p.tp == tp and p.ep > 1]
        if not tp_only or not with_ep:
            continue
        # (at the primary workload's pinned concurrency, as lint's other comparisons)
        a, pa = best_throughput(ctx, ctx.model, p0.isl, p0.osl, tp_only)
        b, pb = best_throughput(ctx, ctx.model, p0.isl, p0.osl, with_ep)
        if a <= 0 or b <= 0 or pa is None or pb is None:
            continue
        impact = b / a
        if impact < MIN_IMPACT:
            continue
        copies = redundant_experts(ctx.model, pb.plan.ep)
        held = (
            f" (its EP group holds {moe.num_experts + copies} expert slots, {copies} of them "
            "redundant copies: specs.plan.expert_slots)"
            if copies
            else ""
        )
        msg = (
            f"expert width {moe.expert_intermediate} split over TP{tp} leaves "
            f"{moe.expert_intermediate / tp:g} columns per GPU (GEMM K of the down projection); "
            f"expert parallelism keeps whole experts: {pb.plan.label()} gives {b:.0f} vs {a:.0f} "
            f"tok/s/GPU for {pa.plan.label()} at ISL/OSL {p0.isl}/{p0.osl}{held}"
        )
        out.append(
            Finding(
                "moe-expert-tp",
                severity_for(impact),
                "moe.expert_intermediate",
                msg,
                impact,
                {
                    "metric": "output tok/s/GPU at the throughput goal",
                    "before": a,
                    "after": b,
                    "plans": [pa.plan.label(), pb.plan.label()],
                    "setting": ctx.setting(pa),
                },
            )
        )
        break
    return out


def rule_moe_expert_m(ctx: LintContext) -> list[Finding]:
    moe = ctx.model.moe
    if moe is None:
        return []
    p = ctx.primary
    tokens = p.concurrency * (
        1.0 + p.isl / p.osl
    )  # decode + prefill tokens per step, whole replica
    m_e = tokens * moe.top_k / moe.num_experts
    tile = ctx.hw.tile_m
    if m_e >= tile:
        return []
    need = math.ceil(tile * moe.num_experts / moe.top_k / (1.0 + p.isl / p.osl))
    # lever 1: wider EP where the NVLink domain allows it
    plans = candidate_plans(ctx.model, ctx.hw)
    wider = [q for q in plans if q.ep > max(p.plan.ep, 1)]
    base = p.output_tok_s_per_gpu
    impact, how = 1.0, ""
    if wider:
        thr, pt = best_throughput(ctx, ctx.model, p.isl, p.osl, wider)
        if pt is not None and thr > base:
            impact, how = (
                thr / base,
                f"widening EP to {pt.plan.label()} (concurrency {pt.concurrency}) gives {thr:.0f} "
                "tok/s/GPU",
            )
    if impact < MIN_IMPACT:
        # lever 2 (beyond one NVLink domain): the expert GEMMs at a full tile of rows per expert
        steps = step_rows(ctx, p)
        total, rows, step_scale = steps["mixed"]
        scale = tile / max(m_e, 1e-9)

        def fix(op: Op) -> tuple[Op, float] | None:
            if not op.meta.get("moe"):
                return None
            return dataclasses.replace(op, m=np.asarray(op.m) * scale), scale

        after, _touched = surgery(total, rows, fix, ctx.hw, ctx.eng, step_scale)
        impact = total / after if after > 0 else 1.0
        how = (
            f"expert GEMMs at {tile} rows per expert would do the same work {impact:.2f}x faster "
            f"per token (needs about {need:,} concurrent requests across the EP group)"
        )
    if impact < MIN_IMPACT:
        return []
    msg = (
        f"per-expert GEMM M = tokens x top-k / experts = {tokens:,.0f} x {moe.top_k} / "
        f"{moe.num_experts} = {m_e:.1f} rows at {p.plan.label()}, concurrency {p.concurrency} "
        f"(under one {tile}-row tile: expert weights are read for few tokens); {how}"
    )
    return [
        Finding(
            "moe-expert-m",
            severity_for(impact),
            "moe (num_experts, top_k)",
            msg,
            impact,
            {
                "metric": "output tok/s/GPU at the throughput goal"
                if wider and "widening" in how
                else "mixed step time per token",
                "rows_per_expert": m_e,
                "tile_m": tile,
                "concurrency_for_full_tile": need,
                "setting": ctx.setting(),
            },
        )
    ]


def rule_moe_balance(ctx: LintContext) -> list[Finding]:
    moe = ctx.model.moe
    if moe is None:
        return []
    out: list[Finding] = []
    p = ctx.primary
    base = p.output_tok_s_per_gpu
    ep_sizes = [e for e in (8, 16, 32) if e <= ctx.hw.scaleup_domain_size]
    bad = [e for e in ep_sizes if moe.num_experts % e]
    if bad and moe.num_experts >= 8:
        e_new = nearest_multiple(moe.num_experts, max(bad))
        try:
            alt, _ = build_variant(ctx.model, {"experts": e_new}, f"{ctx.model.id}-e{e_new}")
            thr, pt = best_throughput(ctx, alt, p.isl, p.osl)
        except SpecError:
            thr, pt = 0.0, None
        impact = thr / base if base > 0 else 1.0
        if impact < MIN_IMPACT:
            return out
        msg = (
            f"{moe.num_experts} experts do not divide over EP {', '.join(map(str, bad))}: such "
            "groups hold redundant expert copies to split evenly (more expert weights a GPU: "
            f"specs.plan.expert_slots); with {e_new} experts the best plan gives {thr:.0f} vs "
            f"{base:.0f} tok/s/GPU"
        )
        out.append(
            Finding(
                "moe-balance",
                severity_for(impact),
                "moe.num_experts",
                msg,
                impact,
                {
                    "metric": "output tok/s/GPU at the throughput goal",
                    "before": base,
                    "after": thr,
                    "setting": ctx.setting(),
                },
            )
        )
    if moe.top_k % 2 == 0 and moe.num_experts % 2 == 0 and moe.num_experts >= 4:
        try:
            alt, _ = build_variant(
                ctx.model,
                {
                    "experts": moe.num_experts // 2,
                    "top_k": moe.top_k // 2,
                    "expert_ffn": moe.expert_intermediate * 2,
                },
                f"{ctx.model.id}-coarse",
            )
            thr, pt = best_throughput(ctx, alt, p.isl, p.osl)
        except SpecError:
            thr, pt = 0.0, None
        impact = thr / base if base > 0 else 0.0
        if impact >= 1.0 + 5 * (MIN_IMPACT - 1.0) and pt is not None:
            msg = (
                f"top-{moe.top_k} of {moe.num_experts} experts of width {moe.expert_intermediate}: "
                f"half as many experts, twice as wide, top-{moe.top_k // 2} (same total and active "
                f"parameters) gives {thr:.0f} vs {base:.0f} tok/s/GPU ({pt.plan.label()}); finer "
                "experts often train better, an effect this estimate does not model"
            )
            out.append(
                Finding(
                    "moe-balance",
                    "info",
                    "moe (num_experts, top_k, expert width)",
                    msg,
                    impact,
                    {
                        "metric": "output tok/s/GPU at the throughput goal",
                        "before": base,
                        "after": thr,
                        "setting": ctx.setting(),
                    },
                )
            )
    return out
