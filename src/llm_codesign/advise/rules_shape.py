"""Lint rules on matrix shapes: dim alignment, near-square GEMMs, depth vs width."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .. import cost
from ..ops import Op
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import ParallelPlan
from .archsearch import SearchSpace, search
from .findings import (
    GEMM_SHAPE_OP_SPEEDUP,
    MIN_IMPACT,
    Finding,
    LintContext,
    op_seconds,
    scalar,
    severity_for,
    step_rows,
    surgery,
)
from .quality import CONFIDENCE as QUALITY_CONFIDENCE

# rule: dim-alignment
# ---------------------------------------------------------------------------------------------


@dataclass
class _Dim:
    location: str
    value: int
    shard: int
    ops: tuple[
        tuple[str, str, float], ...
    ]  # (op name, "n" | "k", coefficient on the per-GPU delta)
    suggestion: str = ""


def _dims(model: ModelSpec, plan: ParallelPlan) -> list[_Dim]:
    a, moe = model.attention, model.moe
    tp_dense = 1 if plan.attention_dp else plan.tp
    atp = plan.attention_tp
    mats = 2.0 if model.gated_ffn else 1.0
    d = model.hidden_size
    dims = [
        _Dim(
            "hidden_size",
            d,
            1,
            (
                ("qkv_proj", "k", 1),
                ("q_proj", "k", 1),
                ("q_a_proj", "k", 1),
                ("kv_a_proj", "k", 1),
                ("o_proj", "n", 1),
                ("ffn_up", "k", 1),
                ("ffn_down", "n", 1),
                ("experts_up", "k", 1),
                ("experts_down", "n", 1),
                ("shared_up", "k", 1),
                ("shared_down", "n", 1),
                ("router", "k", 1),
                ("lm_head", "k", 1),
            ),
        )
    ]
    if model.num_moe_layers < model.num_layers:
        dims.append(
            _Dim(
                "intermediate_size",
                model.intermediate_size,
                tp_dense,
                (("ffn_up", "n", mats), ("ffn_down", "k", 1)),
            )
        )
    if moe is not None:
        dims.append(
            _Dim(
                "moe.expert_intermediate",
                moe.expert_intermediate,
                plan.moe_tp,
                (("experts_up", "n", mats), ("experts_down", "k", 1)),
            )
        )
        if moe.num_shared:
            dims.append(
                _Dim(
                    "moe.shared_width",
                    moe.num_shared * moe.shared_intermediate,
                    tp_dense,
                    (("shared_up", "n", mats), ("shared_down", "k", 1)),
                )
            )
    if a.kind == "gqa":
        dims.append(
            _Dim(
                "attention.heads x head_dim",
                a.num_heads * a.head_dim,
                atp,
                (("qkv_proj", "n", 1), ("o_proj", "k", 1)),
            )
        )
        if atp <= a.num_kv_heads:
            dims.append(
                _Dim(
                    "attention.kv_heads x head_dim",
                    a.num_kv_heads * a.head_dim,
                    atp,
                    (("qkv_proj", "n", 2),),
                )
            )
    elif a.kind == "shared_kv":  # DeepSeek-V4: fused wq_a + wkv, wq_b, grouped wo_a, wo_b
        group = a.num_heads // max(a.o_groups, 1) * a.head_dim
        for name, value, split, ops_ in (
            ("attention.q_a_proj (q_lora_rank + head_dim)", a.q_lora_rank + a.head_dim, 1,
             (("q_a_proj", "n", 1),)),
            ("attention.heads x head_dim", a.num_heads * a.head_dim, atp, (("q_b_proj", "n", 1),)),
            ("attention.q_lora_rank", a.q_lora_rank, 1, (("q_b_proj", "k", 1),)),
            ("attention.o_group (heads / o_groups x head_dim)", group, 1, (("o_a_proj", "k", 1),)),
            ("attention.o_lora_rank", a.o_lora_rank, 1, (("o_a_proj", "n", 1),)),
        ):  # fmt: skip
            dims.append(_Dim(name, value, split, ops_))
    else:
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        dims.append(
            _Dim(
                "attention.heads x qk_head_dim",
                a.num_heads * qk,
                atp,
                (("q_b_proj", "n", 1), ("q_proj", "n", 1)),
            )
        )
        dims.append(
            _Dim(
                "attention.heads x v_head_dim",
                a.num_heads * a.v_head_dim,
                atp,
                (("o_proj", "k", 1),),
            )
        )
        if a.q_lora_rank:
            dims.append(_Dim("attention.q_lora_rank", a.q_lora_rank, 1, (("q_b_proj", "k", 1),)))
            fused = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim
            dims.append(
                _Dim(
                    "attention.q_a_proj (q_lora_rank + kv_lora_rank + qk_rope_head_dim)",
                    fused,
                    1,
                    (("q_a_proj", "n", 1),),
                    "choose q_lora_rank so the fused down-projection is aligned",
                )
            )
        else:
            dims.append(
                _Dim(
                    "attention.kv_a_proj (kv_lora_rank + qk_rope_head_dim)",
                    a.kv_lora_rank + a.qk_rope_head_dim,
                    1,
                    (("kv_a_proj", "n", 1),),
                    "choose kv_lora_rank so the fused down-projection is aligned",
                )
            )
        dims.append(_Dim("attention.kv_lora_rank", a.kv_lora_rank, 1, (("kv_b_proj", "k", 1),)))
    dims.append(_Dim("vocab_size", model.vocab_size, tp_dense, (("lm_head", "n", 1),)))
    return dims


def nearest_multiple(x: float, step: int) -> int:
    lo = max(int(x // step) * step, step)
    hi = lo + step if lo < x else lo
    return lo if (x - lo) <= (hi - x) else hi


def rule_alignment(ctx: LintContext) -> list[Finding]:
    out: list[Finding] = []
    plan = ctx.primary.plan
    two_sm = ctx.hw.tile_cluster_sms >= 2
    steps = step_rows(ctx, ctx.primary)
    # 16 bytes of the GEMM operand format (cost.gemm_shape_efficiency's alignment test)
    act = ctx.prec.activation_bytes
    align16 = int(16 / (min(act, 2.0) if act >= 1 else 1.0))
    for dim in _dims(ctx.model, plan):
        per_gpu = dim.value / dim.shard
        checks = [(128, "warn")] + ([(256, "info")] if two_sm else [])
        for step, severity in checks:
            bad_whole = dim.value % step != 0
            bad_shard = per_gpu != int(per_gpu) or int(per_gpu) % step != 0
            if not (bad_whole or bad_shard):
                continue
            target_shard = nearest_multiple(per_gpu, step)
            new_value = target_shard * dim.shard
            delta = target_shard - per_gpu  # per-GPU change of the dim
            names = {name: (attr, coef) for name, attr, coef in dim.ops}

            def fix(op: Op, names=names, delta=delta) -> tuple[Op, float] | None:
                if op.kind != "gemm" or op.name not in names:
                    return None
                attr, coef = names[op.name]
                old = float(np.asarray(getattr(op, attr)).reshape(-1)[0])
                new = max(old + coef * delta, 1.0)
                return dataclasses.replace(op, **{attr: new}), new / old

            impacts = {}
            for phase, (total, rows, scale) in steps.items():
                after, _touched = surgery(total, rows, fix, ctx.hw, ctx.eng, scale)
                impacts[phase] = total / after if after > 0 else 1.0
            phase = max(impacts, key=lambda p: impacts[p])
            impact = max(impacts[phase], 1.0)
            misaligned16 = any(x % align16 for x in (dim.value, per_gpu) if x == int(x))
            if impact < MIN_IMPACT:
                if severity == "info" and not misaligned16:
                    continue
                severity = (
                    "warn" if misaligned16 else "info"
                )  # structural miss, negligible cost here
            where = (
                ""
                if not bad_shard or dim.shard == 1
                else f" ({dim.value} / {dim.shard} = {per_gpu:g} per GPU under {plan.label()})"
            )
            msg = (
                f"{dim.location} = {dim.value}{where} is not a multiple of {step}"
                + (" (nor of 16 bytes: no vectorized/TMA path)" if misaligned16 else "")
                + (
                    f"; at {new_value} the step's GEMMs would run {impact:.3f}x faster per unit of "
                    f"work ({phase} step)"
                )
            )
            if dim.suggestion:
                msg += f"; {dim.suggestion}"
            out.append(
                Finding(
                    "dim-alignment",
                    severity,
                    dim.location,
                    msg,
                    impact,
                    {
                        "metric": f"{phase} step time per unit of GEMM work",
                        "value": dim.value,
                        "per_gpu": per_gpu,
                        "multiple_of": step,
                        "suggested": new_value,
                        "speedup_by_phase": impacts,
                        "setting": ctx.setting(),
                    },
                )
            )
            break  # the 256 check only matters once the 128 one passes
    return out


# ---------------------------------------------------------------------------------------------
# rule: gemm-shape
# ---------------------------------------------------------------------------------------------


def small_dim_threshold(hw: HardwareSpec, compute_class: str) -> float:
    """K (or N) below which the cost model's per-tile fixed cost alone keeps a GEMM under 80% of
    its sustained rate: k / (k + k0) < 0.8, k0 = TILE_OVERHEAD_BF16_K x the format's speed over
    BF16 (GB300 NVFP4: 3072, the blog's Fig. 4 threshold); never below 1024."""
    rate = hw.compute_rate_class(compute_class)
    base = hw.peak_flops_per_s.get("bf16") or hw.peak_flops_per_s.get("fp16") or hw.peak_flops(rate)
    return max(4.0 * cost.TILE_OVERHEAD_BF16_K * hw.peak_flops(rate) / base, 1024.0)


def rule_gemm_shape(ctx: LintContext) -> list[Finding]:
    best: dict[str, Finding] = {}
    steps = step_rows(ctx, ctx.primary)
    for phase, (total, rows, scale) in steps.items():
        for op, t in rows:
            if (
                op.kind != "gemm"
                or t <= 0
                or op.name in ("lm_head", "router")
                or op.name.startswith("mla_absorb")
            ):
                continue
            n, k = scalar(op.n), scalar(op.k)
            threshold = small_dim_threshold(ctx.hw, op.compute_class)
            if n <= 0 or k <= 0 or min(n, k) >= threshold:
                continue
            side = max(ctx.align, nearest_multiple(math.sqrt(n * k), ctx.align))
            # near-square reference, averaged over neighbouring aligned sides
            # (wave-quantization noise)
            refs = []
            for s_ in (side - ctx.align, side, side + ctx.align):
                if s_ <= 0:
                    continue
                sq = dataclasses.replace(op, n=float(s_), k=float(s_))
                refs.append(op_seconds(sq, ctx.hw, ctx.eng) * scale / (s_ * s_ / (n * k)))
            t_sq = float(np.mean(refs))
            if t_sq <= 0 or t / t_sq < GEMM_SHAPE_OP_SPEEDUP:
                continue
            impact = total / (total - t + t_sq)
            if impact < MIN_IMPACT:
                continue
            _t, comp, mem = cost.gemm_time(op, ctx.hw, ctx.eng)
            bound = "memory" if scalar(mem) > scalar(comp) else "compute"
            m = scalar(op.m)
            small = "K" if k < n else "N"
            msg = (
                f"{op.name}: M={m:,.0f} x N={n:,.0f} x K={k:,.0f} per GPU ({phase} step) is "
                f"{bound}-bound with {small} = {min(n, k):,.0f} under {threshold:,.0f} (80% of the "
                f"sustained rate on {ctx.hw.id}); a near-square {side}x{side} matrix with the same "
                f"parameters would run {t / t_sq:.2f}x faster, the step {impact:.3f}x"
            )
            f = Finding(
                "gemm-shape",
                severity_for(impact),
                f"op {op.name}",
                msg,
                impact,
                {
                    "metric": f"{phase} step time",
                    "m": m,
                    "n": n,
                    "k": k,
                    "bound": bound,
                    "op_speedup": t / t_sq,
                    "near_square": side,
                    "small_dim_threshold": threshold,
                    "setting": ctx.setting(),
                },
            )
            if op.name not in best or impact > best[op.name].impact:
                best[op.name] = f
    return sorted(best.values(), key=lambda f: -f.impact)


# ---------------------------------------------------------------------------------------------
# rule: depth-vs-width
# ---------------------------------------------------------------------------------------------


def rule_depth_width(ctx: LintContext) -> list[Finding]:
    p = ctx.primary
    space = SearchSpace(
        hidden_scales=(1.0, 1.125, 1.25, 1.5),
        layer_scales=(0.5, 0.625, 0.75, 0.875, 1.0),
        kv_heads=(1.0,),
        experts=(1.0,),
        mla_rank_scales=(1.0,),
        align=ctx.align,
    )
    r = search(
        ctx.model, ctx.hw, ctx.prec, isl=p.isl, osl=p.osl, engine=ctx.eng, space=space, top=1
    )
    v = r.variants[0]
    if not v.changes or v.gain < 1.0 + (MIN_IMPACT - 1.0) * 5:
        return []
    ch = {c["field"]: (c["from"], c["to"]) for c in v.changes}
    if "layers" not in ch or ch["layers"][1] >= ch["layers"][0]:
        return []
    text = ", ".join(f"{k} {a}->{b}" for k, (a, b) in ch.items())
    q = v.quality
    msg = (
        f"a wider, shallower shape with the same parameters ({text}; total "
        f"{v.total_params / 1e9:.2f}B vs {ctx.model.total_params / 1e9:.2f}B) raises the "
        f"throughput-interactivity frontier area {v.gain:.2f}x at ISL/OSL {p.isl}/{p.osl}; "
        f"estimated loss change {q.relative_change:+.2%} (aspect ratio "
        f"{ctx.model.hidden_size / ctx.model.num_layers:.0f} -> {q.aspect_ratio:.0f}; a "
        f"scaling-law estimate, not a measurement; confidence {QUALITY_CONFIDENCE})"
    )
    return [
        Finding(
            "depth-vs-width",
            severity_for(v.gain),
            "num_hidden_layers / hidden_size",
            msg,
            v.gain,
            {
                "metric": "frontier area (tok/s/GPU x tok/s/user)",
                "before": r.baseline.objective,
                "after": v.objective,
                "changes": v.changes,
                "quality_estimate": q.to_dict(),
                "setting": ctx.setting() | {"plan": "best per frontier point"},
            },
        )
    ]


# ---------------------------------------------------------------------------------------------
