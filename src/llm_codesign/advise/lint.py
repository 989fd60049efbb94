"""Co-design lint: what in an architecture wastes the target hardware, by how much, and what
shape to use instead. Each rule is one of the seven guidelines (DESIGN.md,
``reference/codesign.md``) and every finding carries an ``impact`` computed by the cost model:
the predicted speedup (>= 1) of applying the fix, with the metric, the before/after numbers and
the setting it was computed at in ``details``. Nothing is a fixed text.

Rules (``RULES``):

* ``dim-alignment`` (guideline 2): dims (hidden, FFN, expert and shared widths, heads x head
  dim, vocab, MLA ranks and fused projections), whole and per GPU under the plan, that are not
  multiples of 128 (warn) or, on GPUs with 2-SM tiles, of 256 (info). Impact: the step's GEMMs
  at the nearest aligned width, per unit of work (so a wider matrix is not credited for doing more).
* ``gemm-shape`` (guideline 1): GEMMs whose small projection (N) or reduction (K) dim costs time
  at a token count where a near-square matrix of the same parameters would not (the blog's
  FFN-2 H' = 512 example). Impact: the step with that GEMM at N = K = sqrt(N K).
* ``depth-vs-width`` (guideline 3): a wider, shallower shape with the same parameters inside the
  aspect band where the quality estimate holds (:mod:`llm_codesign.quality`). Impact: ratio of
  the throughput-interactivity frontier areas (:mod:`llm_codesign.archsearch`).
* ``attention-tp`` (guideline 7): attention TP stops at the KV heads; beyond, the KV cache is
  replicated. Impact: best tokens/s/user (latency goal) with Helix KV-parallel attention over
  the best without.
* ``kv-cache``: the KV cache against the workload's context: GQA ratio, bytes per token, and the
  throughput gain of fewer KV heads, MLA or a sliding window on 3 of 4 layers.
* ``moe-expert-tp``, ``moe-expert-m``, ``moe-balance`` (guideline 5): experts sliced too thin by
  TP (suggest EP), per-expert GEMM M = tokens x k / E under one tile at the target concurrency
  (widen EP), and expert count / granularity (EP divisibility; fewer, wider experts).
* ``pipeline-balance`` (guideline 6): layers that do not split into balanced pipeline stages
  (dense-first layers, irregular patterns, layer counts not divisible by pp).
* ``quantization`` (guideline 4): the ops whose time drops most with the GPU's lowest native
  format (NVFP4 on Blackwell, FP8 on Hopper) and the predicted step speedup.

Example:
    >>> r = lint("llama-3.1-8b", "h200-sxm", rules=("dim-alignment",))
    >>> r.findings
    []
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import cost
from ..errors import SpecError
from ..explore import (
    ADVISOR_CONCURRENCY,
    THROUGHPUT_MIN_TOK_S_USER,
    OperatingPoint,
    candidate_plans,
    default_precision,
    evaluate_plans,
    operating_point,
)
from ..explore.operating import operating_step
from ..ops import Op, layer_group_ops, step_shape
from ..serving import pipelined_step, step_cost
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec, load_hardware
from ..specs.model import AttentionSpec, LayerGroup, ModelSpec, load_model
from ..specs.plan import ParallelPlan
from ..specs.precision import Precision, parse_precision
from .archsearch import SearchSpace, build_variant, default_align, search
from .regimes import LONG_ISL, LONG_OSL, REGIMES, SHORT_ISL, SHORT_OSL

RULES = (
    "dim-alignment", "gemm-shape", "depth-vs-width", "attention-tp", "kv-cache", "moe-expert-tp",
    "moe-expert-m", "moe-balance", "pipeline-balance", "quantization",
)
SEVERITIES = ("error", "warn", "info")
MIN_IMPACT = 1.01  # findings whose fix buys less than 1% are not reported (except hard misalignment)
WARN_IMPACT = 1.10  # impact at or above which an opportunity is a warning rather than info
GEMM_SHAPE_OP_SPEEDUP = 1.15  # a GEMM must run this much faster near-square to be flagged
EXPERT_TP_MIN_WIDTH = 1024  # per-GPU expert width under TP below which EP is considered
PIPELINE_STAGES = (2, 4, 8)
SLIDING_WINDOW = 4096  # window suggested for 3 of 4 layers by the kv-cache rule
DEFAULT_WORKLOADS = (f"{SHORT_ISL}/{SHORT_OSL}", f"{LONG_ISL}/{LONG_OSL}")


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------


@dataclass
class Finding:
    """One lint finding. ``impact``: predicted speedup (>= 1) of the fix on ``details['metric']``."""

    rule: str
    severity: str
    location: str
    message: str
    impact: float
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "location": self.location,
                "message": self.message, "impact": self.impact, "details": self.details}


@dataclass(frozen=True)
class WorkloadSpec:
    """ISL/OSL and an optional fixed concurrency (None: the throughput operating point)."""

    isl: int
    osl: int
    concurrency: int | None = None

    @property
    def label(self) -> str:
        return f"{self.isl}/{self.osl}" + (f"/{self.concurrency}" if self.concurrency else "")


def parse_workload(text: str | WorkloadSpec) -> WorkloadSpec:
    """``ISL/OSL[/CONCURRENCY]`` (e.g. ``8192/1024/64``) or a regime name (``long-throughput``)."""
    if isinstance(text, WorkloadSpec):
        return text
    t = str(text).strip().lower()
    if t in REGIMES:
        isl, osl, _goal = REGIMES[t]
        return WorkloadSpec(isl, osl)
    m = re.fullmatch(r"(\d+)[/:x](\d+)(?:[/:x@](\d+))?", t)
    if not m:
        raise SpecError(f"workload {text!r} must be ISL/OSL[/CONCURRENCY] (e.g. 8192/1024/64) or one of {', '.join(REGIMES)}")
    isl, osl = int(m.group(1)), int(m.group(2))
    conc = int(m.group(3)) if m.group(3) else None
    if isl < 1 or osl < 1 or (conc is not None and conc < 1):
        raise SpecError(f"workload {text!r}: ISL, OSL and concurrency must be >= 1")
    return WorkloadSpec(isl, osl, conc)


@dataclass
class LintReport:
    model: str
    hardware: str
    precision: str
    engine: str
    workloads: list[dict[str, Any]]
    findings: list[Finding]
    assumptions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self.findings], "model": self.model, "hardware": self.hardware,
            "precision": self.precision, "engine": self.engine, "workloads": self.workloads,
            "assumptions": self.assumptions,
        }


@dataclass
class _Ctx:
    model: ModelSpec
    hw: HardwareSpec
    prec: Precision
    eng: EngineConstants
    workloads: list[WorkloadSpec]
    points: list[OperatingPoint]
    align: int

    @property
    def primary(self) -> OperatingPoint:
        return self.points[0]

    @property
    def longest(self) -> OperatingPoint:
        return max(self.points, key=lambda p: p.isl + p.osl)

    def setting(self, p: OperatingPoint | None = None) -> dict[str, Any]:
        p = p or self.primary
        return {"hardware": self.hw.id, "precision": self.prec.id, "plan": p.plan.label(), "isl": p.isl,
                "osl": p.osl, "concurrency": p.concurrency}


def _severity(impact: float) -> str:
    return "warn" if impact >= WARN_IMPACT else "info"


# ---------------------------------------------------------------------------------------------
# step-level measurements (op surgery on the cost model's op list)
# ---------------------------------------------------------------------------------------------


def _steps(
    ctx: _Ctx, point: OperatingPoint, model: ModelSpec | None = None, prec: Precision | None = None
) -> dict[str, tuple[float, list[tuple[Op, float]], float]]:
    """Per-op times of the compute-bound prefill chunk and of the workload's steady-state step
    (the step whose time is the point's TPOT: ``explore.operating_step``). Each entry is
    (step seconds, [(op, seconds in the step)], scale) where scale converts one stage's op time
    into seconds of the step (pp micro-batches); surgery on other models or precisions keeps
    the point's step mix."""
    model = model or ctx.model
    prec = prec or ctx.prec
    p = point.plan
    chunk = float(min(point.isl, ctx.eng.max_num_tokens))
    axes = (p.tp, p.pp, p.ep, p.cp, p.attention_dp)
    pre_shape = step_shape(*axes, isl=point.isl, osl=point.osl, prefill_tokens=chunk, micro_batches=1.0)
    pre = step_cost(model, prec, ctx.hw, ctx.eng, pre_shape, detail=True)
    mixed = operating_step(model, ctx.hw, prec, ctx.eng, point)
    micro = float(p.pp)
    out = {}
    for name, total, stage_ops, scale in (
        ("prefill", pre.total_s, pre.ops, 1.0),
        ("mixed", mixed.total_s, mixed.stage.ops, micro),
    ):
        rows = [(op, float(np.asarray(t).reshape(-1)[0]) * scale) for op, t, _b in stage_ops]
        out[name] = (float(np.asarray(total).reshape(-1)[0]), rows, scale)
    return out


def _op_time(op: Op, hw: HardwareSpec, eng: EngineConstants) -> float:
    t, _ = cost.op_time(op, hw, eng)
    return float(np.asarray(t).reshape(-1)[0]) * float(np.asarray(op.layers).reshape(-1)[0])


def _scalar(x: Any) -> float:
    return float(np.asarray(x, dtype=float).reshape(-1)[0])


def _surgery(
    total: float,
    rows: list[tuple[Op, float]],
    fix: Callable[[Op], tuple[Op, float] | None],
    hw: HardwareSpec,
    eng: EngineConstants,
    scale: float = 1.0,
) -> tuple[float, float]:
    """(step time after, time of the touched ops before): ``fix`` maps an op to (new op, work
    ratio new/old) or None; the new op's time is divided by the work ratio (per unit of work)."""
    before = after = 0.0
    for op, t in rows:
        if t <= 0:
            continue
        r = fix(op)
        if r is None:
            continue
        new, work = r
        before += t
        after += _op_time(new, hw, eng) * scale / work
    return total - before + after, before


# ---------------------------------------------------------------------------------------------
# rule: dim-alignment
# ---------------------------------------------------------------------------------------------


@dataclass
class _Dim:
    location: str
    value: int
    shard: int
    ops: tuple[tuple[str, str, float], ...]  # (op name, "n" | "k", coefficient on the per-GPU delta)
    suggestion: str = ""


def _dims(model: ModelSpec, plan: ParallelPlan) -> list[_Dim]:
    a, moe = model.attention, model.moe
    tp_dense = 1 if plan.attention_dp else plan.tp
    atp = plan.attention_tp
    mats = 2.0 if model.gated_ffn else 1.0
    d = model.hidden_size
    dims = [_Dim("hidden_size", d, 1, (
        ("qkv_proj", "k", 1), ("q_proj", "k", 1), ("q_a_proj", "k", 1), ("kv_a_proj", "k", 1), ("o_proj", "n", 1),
        ("ffn_up", "k", 1), ("ffn_down", "n", 1), ("experts_up", "k", 1), ("experts_down", "n", 1),
        ("shared_up", "k", 1), ("shared_down", "n", 1), ("router", "k", 1), ("lm_head", "k", 1)))]
    if model.num_moe_layers < model.num_layers:
        dims.append(_Dim("intermediate_size", model.intermediate_size, tp_dense, (("ffn_up", "n", mats), ("ffn_down", "k", 1))))
    if moe is not None:
        dims.append(_Dim("moe.expert_intermediate", moe.expert_intermediate, plan.moe_tp,
                         (("experts_up", "n", mats), ("experts_down", "k", 1))))
        if moe.num_shared:
            dims.append(_Dim("moe.shared_width", moe.num_shared * moe.shared_intermediate, tp_dense,
                             (("shared_up", "n", mats), ("shared_down", "k", 1))))
    if a.kind == "gqa":
        dims.append(_Dim("attention.heads x head_dim", a.num_heads * a.head_dim, atp, (("qkv_proj", "n", 1), ("o_proj", "k", 1))))
        if atp <= a.num_kv_heads:
            dims.append(_Dim("attention.kv_heads x head_dim", a.num_kv_heads * a.head_dim, atp, (("qkv_proj", "n", 2),)))
    else:
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        dims.append(_Dim("attention.heads x qk_head_dim", a.num_heads * qk, atp, (("q_b_proj", "n", 1), ("q_proj", "n", 1))))
        dims.append(_Dim("attention.heads x v_head_dim", a.num_heads * a.v_head_dim, atp, (("o_proj", "k", 1),)))
        if a.q_lora_rank:
            dims.append(_Dim("attention.q_lora_rank", a.q_lora_rank, 1, (("q_b_proj", "k", 1),)))
            fused = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim
            dims.append(_Dim("attention.q_a_proj (q_lora_rank + kv_lora_rank + qk_rope_head_dim)", fused, 1,
                             (("q_a_proj", "n", 1),), "choose q_lora_rank so the fused down-projection is aligned"))
        else:
            dims.append(_Dim("attention.kv_a_proj (kv_lora_rank + qk_rope_head_dim)", a.kv_lora_rank + a.qk_rope_head_dim, 1,
                             (("kv_a_proj", "n", 1),), "choose kv_lora_rank so the fused down-projection is aligned"))
        dims.append(_Dim("attention.kv_lora_rank", a.kv_lora_rank, 1, (("kv_b_proj", "k", 1),)))
    dims.append(_Dim("vocab_size", model.vocab_size, tp_dense, (("lm_head", "n", 1),)))
    return dims


def _nearest_multiple(x: float, step: int) -> int:
    lo = max(int(x // step) * step, step)
    hi = lo + step if lo < x else lo
    return lo if (x - lo) <= (hi - x) else hi


def _rule_alignment(ctx: _Ctx) -> list[Finding]:
    out: list[Finding] = []
    plan = ctx.primary.plan
    two_sm = ctx.hw.tile_cluster_sms >= 2
    steps = _steps(ctx, ctx.primary)
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
            target_shard = _nearest_multiple(per_gpu, step)
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
                after, _touched = _surgery(total, rows, fix, ctx.hw, ctx.eng, scale)
                impacts[phase] = total / after if after > 0 else 1.0
            phase = max(impacts, key=lambda p: impacts[p])
            impact = max(impacts[phase], 1.0)
            misaligned16 = any(x % align16 for x in (dim.value, per_gpu) if x == int(x))
            if impact < MIN_IMPACT:
                if severity == "info" and not misaligned16:
                    continue
                severity = "warn" if misaligned16 else "info"  # structural miss, negligible cost here
            where = "" if not bad_shard or dim.shard == 1 else f" ({dim.value} / {dim.shard} = {per_gpu:g} per GPU under {plan.label()})"
            msg = (f"{dim.location} = {dim.value}{where} is not a multiple of {step}"
                   + (" (nor of 16 bytes: no vectorized/TMA path)" if misaligned16 else "")
                   + f"; at {new_value} the step's GEMMs would run {impact:.3f}x faster per unit of work ({phase} step)")
            if dim.suggestion:
                msg += f"; {dim.suggestion}"
            out.append(Finding(
                "dim-alignment", severity, dim.location, msg, impact,
                {"metric": f"{phase} step time per unit of GEMM work", "value": dim.value, "per_gpu": per_gpu,
                 "multiple_of": step, "suggested": new_value, "speedup_by_phase": impacts, "setting": ctx.setting()},
            ))
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


def _rule_gemm_shape(ctx: _Ctx) -> list[Finding]:
    best: dict[str, Finding] = {}
    steps = _steps(ctx, ctx.primary)
    for phase, (total, rows, scale) in steps.items():
        for op, t in rows:
            if op.kind != "gemm" or t <= 0 or op.name in ("lm_head", "router") or op.name.startswith("mla_absorb"):
                continue
            n, k = _scalar(op.n), _scalar(op.k)
            threshold = small_dim_threshold(ctx.hw, op.compute_class)
            if n <= 0 or k <= 0 or min(n, k) >= threshold:
                continue
            side = max(ctx.align, _nearest_multiple(math.sqrt(n * k), ctx.align))
            # near-square reference, averaged over neighbouring aligned sides (wave-quantization noise)
            refs = []
            for s_ in (side - ctx.align, side, side + ctx.align):
                if s_ <= 0:
                    continue
                sq = dataclasses.replace(op, n=float(s_), k=float(s_))
                refs.append(_op_time(sq, ctx.hw, ctx.eng) * scale / (s_ * s_ / (n * k)))
            t_sq = float(np.mean(refs))
            if t_sq <= 0 or t / t_sq < GEMM_SHAPE_OP_SPEEDUP:
                continue
            impact = total / (total - t + t_sq)
            if impact < MIN_IMPACT:
                continue
            _t, comp, mem = cost.gemm_time(op, ctx.hw, ctx.eng, ctx.eng.moe_imbalance if op.meta.get("moe") else 1.0)
            bound = "memory" if _scalar(mem) > _scalar(comp) else "compute"
            m = _scalar(op.m)
            small = "K" if k < n else "N"
            msg = (f"{op.name}: M={m:,.0f} x N={n:,.0f} x K={k:,.0f} per GPU ({phase} step) is {bound}-bound with {small} = "
                   f"{min(n, k):,.0f} under {threshold:,.0f} (80% of the sustained rate on {ctx.hw.id}); a near-square "
                   f"{side}x{side} matrix with the same parameters would run {t / t_sq:.2f}x faster, the step {impact:.3f}x")
            f = Finding("gemm-shape", _severity(impact), f"op {op.name}", msg, impact, {
                "metric": f"{phase} step time", "m": m, "n": n, "k": k, "bound": bound, "op_speedup": t / t_sq,
                "near_square": side, "small_dim_threshold": threshold, "setting": ctx.setting()})
            if op.name not in best or impact > best[op.name].impact:
                best[op.name] = f
    return sorted(best.values(), key=lambda f: -f.impact)


# ---------------------------------------------------------------------------------------------
# rule: depth-vs-width
# ---------------------------------------------------------------------------------------------


def _rule_depth_width(ctx: _Ctx) -> list[Finding]:
    p = ctx.primary
    space = SearchSpace(hidden_scales=(1.0, 1.125, 1.25, 1.5), layer_scales=(0.5, 0.625, 0.75, 0.875, 1.0),
                        kv_heads=(1.0,), experts=(1.0,), mla_rank_scales=(1.0,), align=ctx.align)
    r = search(ctx.model, ctx.hw, ctx.prec, isl=p.isl, osl=p.osl, engine=ctx.eng, space=space, top=1)
    v = r.variants[0]
    if not v.changes or v.gain < 1.0 + (MIN_IMPACT - 1.0) * 5:
        return []
    ch = {c["field"]: (c["from"], c["to"]) for c in v.changes}
    if "layers" not in ch or ch["layers"][1] >= ch["layers"][0]:
        return []
    text = ", ".join(f"{k} {a}->{b}" for k, (a, b) in ch.items())
    q = v.quality
    msg = (f"a wider, shallower shape with the same parameters ({text}; total {v.total_params / 1e9:.2f}B vs "
           f"{ctx.model.total_params / 1e9:.2f}B) raises the throughput-interactivity frontier area {v.gain:.2f}x at "
           f"ISL/OSL {p.isl}/{p.osl}; estimated loss change {q.relative_change:+.2%} (aspect ratio "
           f"{ctx.model.hidden_size / ctx.model.num_layers:.0f} -> {q.aspect_ratio:.0f}; a scaling-law estimate, not a measurement)")
    return [Finding("depth-vs-width", _severity(v.gain), "num_hidden_layers / hidden_size", msg, v.gain, {
        "metric": "frontier area (tok/s/GPU x tok/s/user)", "before": r.baseline.objective, "after": v.objective,
        "changes": v.changes, "quality_estimate": q.to_dict(), "setting": ctx.setting() | {"plan": "best per frontier point"}})]


# ---------------------------------------------------------------------------------------------
# rules: attention-tp and kv-cache
# ---------------------------------------------------------------------------------------------


def _best_throughput(ctx: _Ctx, model: ModelSpec, isl: int, osl: int, plans: list[ParallelPlan] | None = None) -> tuple[float, OperatingPoint | None]:
    try:
        pt = operating_point(model, ctx.hw, ctx.prec, ctx.eng, isl, osl, "throughput", plans=plans)
    except SpecError:
        return 0.0, None
    return pt.output_tok_s_per_gpu, pt


def _rule_attention_tp(ctx: _Ctx) -> list[Finding]:
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
        lat_plain = operating_point(ctx.model, ctx.hw, ctx.prec, ctx.eng, p0.isl, p0.osl, "latency", plans=plain)
    except SpecError:
        return []
    setting = ctx.setting(p0) | {"plan": lat_plain.plan.label(), "concurrency": lat_plain.concurrency}
    head = (f"num_key_value_heads = {a.num_kv_heads} caps attention TP at {a.num_kv_heads} GPUs (beyond, every GPU "
            f"holds a replica of its KV heads)")
    if helix:
        lat_helix = operating_point(ctx.model, ctx.hw, ctx.prec, ctx.eng, p0.isl, p0.osl, "latency", plans=plain + helix)
        impact = lat_helix.tok_s_per_user / lat_plain.tok_s_per_user
        if impact >= MIN_IMPACT:
            msg = (f"{head}; at ISL/OSL {p0.isl}/{p0.osl} the fastest plan without KV-parallel attention "
                   f"({lat_plain.plan.label()}) reaches {lat_plain.tok_s_per_user:.0f} tok/s/user, with Helix "
                   f"({lat_helix.plan.label()}) {lat_helix.tok_s_per_user:.0f}: decouple attention and FFN parallelism")
            return [Finding("attention-tp", _severity(impact), "attention.num_key_value_heads", msg, impact, {
                "metric": "tok/s/user at the latency goal", "before": lat_plain.tok_s_per_user,
                "after": lat_helix.tok_s_per_user, "plans": [lat_plain.plan.label(), lat_helix.plan.label()],
                "setting": setting})]
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
            ctx.model, ctx.prec, ctx.hw, ctx.eng, tp=q.tp, pp=q.pp, ep=q.ep, cp=q.cp,
            attention_dp=q.attention_dp, isl=p0.isl, osl=p0.osl, decode_seqs=1.0,
        )
        dec[q] = _scalar(step.total_s)
    g = evaluate_plans(ctx.model, ctx.hw, ctx.prec, ctx.eng, [lp, sharded], p0.isl, p0.osl, [1])
    fit_before, fit_after = float(g.max_concurrency[0, 0]), float(g.max_concurrency[1, 0])
    speedup = dec[lp] / dec[sharded]
    impact = max(speedup, 1.0)
    msg = (f"{head}; the fastest plan at ISL/OSL {p0.isl}/{p0.osl}, {lp.label()}, replicates the KV cache {rep}x: "
           f"{fit_before:.0f} concurrent {p0.isl + p0.osl:,}-token sequences fit instead of {fit_after:.0f} with the KV heads "
           f"sharded (Helix cp={rep}); a Helix decode step is {speedup:.2f}x the speed of the replicated one at this "
           f"context" + ("" if speedup >= MIN_IMPACT else " (no speedup predicted here: the capacity is the cost)"))
    return [Finding("attention-tp", _severity(impact) if impact >= MIN_IMPACT else "info", "attention.num_key_value_heads",
                    msg, impact, {
                        "metric": "decode step time at concurrency 1 (Helix vs replicated KV)", "before": dec[lp],
                        "after": dec[sharded], "max_concurrency": {"replicated": fit_before, "sharded": fit_after},
                        "replication": rep, "setting": setting})]


def _with_attention(model: ModelSpec, attention: AttentionSpec, suffix: str) -> ModelSpec:
    return dataclasses.replace(model, id=f"{model.id}-{suffix}", attention=attention)


def _kv_alternatives(model: ModelSpec) -> list[tuple[str, ModelSpec]]:
    a = model.attention
    alts: list[tuple[str, ModelSpec]] = []
    if a.kind != "gqa":
        return alts
    if a.num_kv_heads >= 2 and a.num_heads % (a.num_kv_heads // 2) == 0:
        alts.append((f"num_key_value_heads {a.num_kv_heads} -> {a.num_kv_heads // 2}",
                     _with_attention(model, dataclasses.replace(a, num_kv_heads=a.num_kv_heads // 2), "kv-half")))
    rope = 64
    mla = AttentionSpec("mla", a.num_heads, a.num_heads, a.head_dim + rope, a.v_head_dim, q_lora_rank=0,
                        kv_lora_rank=512, qk_rope_head_dim=rope, qk_nope_head_dim=a.head_dim)
    alts.append(("MLA (kv_lora_rank 512 + rope 64, DeepSeek-V3 style)", _with_attention(model, mla, "mla")))
    if all(g.window == 0 for g in model.layer_groups):
        groups: list[LayerGroup] = []
        for g in model.layer_groups:
            local = (g.count * 3) // 4
            groups += [LayerGroup(local, SLIDING_WINDOW, g.moe), LayerGroup(g.count - local, 0, g.moe)]
        alts.append((f"sliding window {SLIDING_WINDOW} on 3 of 4 layers",
                     dataclasses.replace(model, id=f"{model.id}-swa", layer_groups=tuple(x for x in groups if x.count))))
    return alts


def _rule_kv_cache(ctx: _Ctx) -> list[Finding]:
    a = ctx.model.attention
    if a.kind != "gqa":
        return []
    p = ctx.longest
    if p.fractions.get("attention", 0.0) < 0.4:
        return []
    base, _ = _best_throughput(ctx, ctx.model, p.isl, p.osl)
    if base <= 0:
        return []
    results = []
    for label, alt in _kv_alternatives(ctx.model):
        thr, pt = _best_throughput(ctx, alt, p.isl, p.osl)
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
    msg = (f"GQA {a.num_heads}/{a.num_kv_heads} = {a.num_heads // a.num_kv_heads} query heads per KV head keeps "
           f"{kv_tok / 1e3:.0f} KB of KV cache per token ({ctx.prec.kv_cache.id}), {kv_tok * ctx_tokens / 1e9:.2f} GB per "
           f"{ctx_tokens:,}-token sequence; attention is {p.fractions['attention']:.0%} of the step at ISL/OSL "
           f"{p.isl}/{p.osl}. Throughput at the throughput goal ({p.output_tok_s_per_gpu:.0f} tok/s/GPU): {alts} "
           f"(attention-variant accuracy is not estimated)")
    return [Finding("kv-cache", _severity(impact), "attention (KV cache)", msg, impact, {
        "metric": f"output tok/s/GPU at the throughput goal (>= {THROUGHPUT_MIN_TOK_S_USER:g} tok/s/user)",
        "before": base, "after": base * impact, "kv_bytes_per_token": kv_tok, "gqa_ratio": a.num_heads / a.num_kv_heads,
        "alternatives": {lbl: g for lbl, g, _ in results}, "best": best_label,
        "setting": ctx.setting(p)})]


# ---------------------------------------------------------------------------------------------
# MoE rules
# ---------------------------------------------------------------------------------------------


def _throughput_at(ctx: _Ctx, model: ModelSpec, plans: list[ParallelPlan], isl: int, osl: int, concurrency: int | None) -> tuple[float, OperatingPoint | None]:
    try:
        pt = operating_point(model, ctx.hw, ctx.prec, ctx.eng, isl, osl, "throughput", plans=plans, concurrency=concurrency)
    except SpecError:
        return 0.0, None
    return pt.output_tok_s_per_gpu, pt


def _rule_moe_expert_tp(ctx: _Ctx) -> list[Finding]:
    moe = ctx.model.moe
    if moe is None:
        return []
    plans = candidate_plans(ctx.model, ctx.hw)
    tps = sorted({p.tp for p in plans if p.tp > 1 and moe.expert_intermediate / p.tp < EXPERT_TP_MIN_WIDTH})
    out = []
    p0 = ctx.primary
    pref = sorted(tps, key=lambda t: (t != p0.plan.tp, t != 8, t))
    for tp in pref:
        tp_only = [p for p in plans if p.tp == tp and p.ep == 1]
        with_ep = [p for p in plans if p.tp == tp and p.ep > 1]
        if not tp_only or not with_ep:
            continue
        conc = ctx.workloads[0].concurrency
        a, pa = _throughput_at(ctx, ctx.model, tp_only, p0.isl, p0.osl, conc)
        b, pb = _throughput_at(ctx, ctx.model, with_ep, p0.isl, p0.osl, conc)
        if a <= 0 or b <= 0 or pa is None or pb is None:
            continue
        impact = b / a
        if impact < MIN_IMPACT:
            continue
        msg = (f"expert width {moe.expert_intermediate} split over TP{tp} leaves {moe.expert_intermediate / tp:g} columns per "
               f"GPU (GEMM K of the down projection); expert parallelism keeps whole experts: {pb.plan.label()} gives "
               f"{b:.0f} vs {a:.0f} tok/s/GPU for {pa.plan.label()} at ISL/OSL {p0.isl}/{p0.osl}")
        out.append(Finding("moe-expert-tp", _severity(impact), "moe.expert_intermediate", msg, impact, {
            "metric": "output tok/s/GPU at the throughput goal", "before": a, "after": b,
            "plans": [pa.plan.label(), pb.plan.label()], "setting": ctx.setting(pa)}))
        break
    return out


def _rule_moe_expert_m(ctx: _Ctx) -> list[Finding]:
    moe = ctx.model.moe
    if moe is None:
        return []
    p = ctx.primary
    tokens = p.concurrency * (1.0 + p.isl / p.osl)  # decode + prefill tokens per step, whole replica
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
        thr, pt = _throughput_at(ctx, ctx.model, wider, p.isl, p.osl, None)
        if pt is not None and thr > base:
            impact, how = thr / base, f"widening EP to {pt.plan.label()} (concurrency {pt.concurrency}) gives {thr:.0f} tok/s/GPU"
    if impact < MIN_IMPACT:
        # lever 2 (beyond one NVLink domain): the expert GEMMs at a full tile of rows per expert
        steps = _steps(ctx, p)
        total, rows, step_scale = steps["mixed"]
        scale = tile / max(m_e, 1e-9)

        def fix(op: Op) -> tuple[Op, float] | None:
            if not op.meta.get("moe"):
                return None
            return dataclasses.replace(op, m=np.asarray(op.m) * scale), scale

        after, _touched = _surgery(total, rows, fix, ctx.hw, ctx.eng, step_scale)
        impact = total / after if after > 0 else 1.0
        how = (f"expert GEMMs at {tile} rows per expert would do the same work {impact:.2f}x faster per token "
               f"(needs about {need:,} concurrent requests across the EP group)")
    if impact < MIN_IMPACT:
        return []
    msg = (f"per-expert GEMM M = tokens x top-k / experts = {tokens:,.0f} x {moe.top_k} / {moe.num_experts} = {m_e:.1f} rows "
           f"at {p.plan.label()}, concurrency {p.concurrency} (under one {tile}-row tile: expert weights are read for few "
           f"tokens); {how}")
    return [Finding("moe-expert-m", _severity(impact), "moe (num_experts, top_k)", msg, impact, {
        "metric": "output tok/s/GPU at the throughput goal" if wider and "widening" in how else "mixed step time per token",
        "rows_per_expert": m_e, "tile_m": tile, "concurrency_for_full_tile": need, "setting": ctx.setting()})]


def _rule_moe_balance(ctx: _Ctx) -> list[Finding]:
    moe = ctx.model.moe
    if moe is None:
        return []
    out: list[Finding] = []
    p = ctx.primary
    base = p.output_tok_s_per_gpu
    ep_sizes = [e for e in (8, 16, 32) if e <= ctx.hw.scaleup_domain_size]
    bad = [e for e in ep_sizes if moe.num_experts % e]
    if bad and moe.num_experts >= 8:
        e_new = _nearest_multiple(moe.num_experts, max(bad))
        try:
            alt, _ = build_variant(ctx.model, {"experts": e_new}, f"{ctx.model.id}-e{e_new}")
            thr, pt = _best_throughput(ctx, alt, p.isl, p.osl)
        except SpecError:
            thr, pt = 0.0, None
        impact = thr / base if base > 0 else 1.0
        if impact < MIN_IMPACT:
            return out
        msg = (f"{moe.num_experts} experts do not divide over EP {', '.join(map(str, bad))}: experts cannot spread "
               f"evenly over an 8-GPU (or wider) group; with {e_new} experts the best plan gives {thr:.0f} vs {base:.0f} tok/s/GPU")
        out.append(Finding("moe-balance", _severity(impact), "moe.num_experts", msg, impact, {
            "metric": "output tok/s/GPU at the throughput goal", "before": base, "after": thr, "setting": ctx.setting()}))
    if moe.top_k % 2 == 0 and moe.num_experts % 2 == 0 and moe.num_experts >= 4:
        try:
            alt, _ = build_variant(ctx.model, {"experts": moe.num_experts // 2, "top_k": moe.top_k // 2,
                                               "expert_ffn": moe.expert_intermediate * 2}, f"{ctx.model.id}-coarse")
            thr, pt = _best_throughput(ctx, alt, p.isl, p.osl)
        except SpecError:
            thr, pt = 0.0, None
        impact = thr / base if base > 0 else 0.0
        if impact >= 1.0 + 5 * (MIN_IMPACT - 1.0) and pt is not None:
            msg = (f"top-{moe.top_k} of {moe.num_experts} experts of width {moe.expert_intermediate}: half as many experts, "
                   f"twice as wide, top-{moe.top_k // 2} (same total and active parameters) gives {thr:.0f} vs {base:.0f} "
                   f"tok/s/GPU ({pt.plan.label()}); finer experts often train better, an effect this estimate does not model")
            out.append(Finding("moe-balance", "info", "moe (num_experts, top_k, expert width)", msg, impact, {
                "metric": "output tok/s/GPU at the throughput goal", "before": base, "after": thr, "setting": ctx.setting()}))
    return out


# ---------------------------------------------------------------------------------------------
# rule: pipeline-balance
# ---------------------------------------------------------------------------------------------


def layer_sequence(model: ModelSpec) -> list[tuple[int, bool]]:
    """Per-layer (window, moe) in model order, from the config (layer groups drop the order)."""
    cfg = model.config
    n = model.num_layers
    t = model.model_type
    try:
        if t == "deepseek_v3":
            first, freq = int(cfg.get("first_k_dense_replace", 0)), int(cfg.get("moe_layer_freq", 1))
            return [(0, i >= first and i % freq == 0) for i in range(n)]
        if t == "qwen3_moe":
            step = int(cfg.get("decoder_sparse_step", 1))
            dense = set(cfg.get("mlp_only_layers", []) or [])
            w = int(cfg.get("sliding_window") or 0) if cfg.get("use_sliding_window") else 0
            return [(w, i not in dense and (i + 1) % step == 0) for i in range(n)]
        if t == "gpt_oss":
            sw = int(cfg.get("sliding_window", 0))
            types = cfg.get("layer_types") or ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
            return [(sw if x == "sliding_attention" else 0, True) for x in types]
        if t in ("llama4", "llama4_text"):
            step = int(cfg.get("interleave_moe_layer_step", 1))
            moe_layers = set(cfg.get("moe_layers") or [i for i in range(n) if (i + 1) % step == 0])
            chunk = int(cfg.get("attention_chunk_size") or 0)
            no_rope = cfg.get("no_rope_layers") or [0 if (i + 1) % 4 == 0 else 1 for i in range(n)]
            return [(chunk if (no_rope[i] if i < len(no_rope) else 1) else 0, i in moe_layers) for i in range(n)]
    except (TypeError, ValueError):
        pass
    seq: list[tuple[int, bool]] = []
    for g in model.layer_groups:
        seq += [(g.window, g.moe)] * g.count
    return seq


def _layer_times(ctx: _Ctx, point: OperatingPoint) -> dict[tuple[int, bool], float]:
    """Time of one layer of each (window, moe) kind in the workload's mixed step."""
    p = point.plan
    s = step_shape(
        p.tp, p.pp, p.ep, p.cp, p.attention_dp, isl=point.isl, osl=point.osl,
        decode_seqs=point.step_decode_seqs, prefill_tokens=point.step_prefill_tokens,
    )
    out = {}
    for g in ctx.model.layer_groups:
        t = 0.0
        for op in layer_group_ops(ctx.model, ctx.prec, g, s, np.array(1.0)):
            tt, _ = cost.op_time(op, ctx.hw, ctx.eng)
            t += _scalar(tt) + (op.kernels * ctx.eng.kernel_overhead_s if _scalar(tt) > 0 else 0.0)
        out[(g.window, g.moe)] = t
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


def _rule_pipeline(ctx: _Ctx) -> list[Finding]:
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
    desc = ", ".join(f"{sum(1 for x in seq if x == k)} x {'MoE' if k[1] else 'dense'}{f' window {k[0]}' if k[0] else ''} "
                     f"({per_kind[k] * 1e3:.2f} ms)" for k in kinds)
    why = []
    if len(kinds) > 1:
        why.append("layers of different cost")
    if any(len(times) % pp for pp in balances):
        why.append(f"{len(times)} layers not divisible by {', '.join(str(pp) for pp in balances if len(times) % pp)}")
    suggest = [x for x in (len(times) - len(times) % 8, len(times) - len(times) % 8 + 8) if x > 0]
    msg = (f"{len(times)} layers ({desc}) split into {worst} pipeline stages at best {balances[worst]:.1%} balanced "
           f"({'; '.join(why) or 'irregular pattern'}): the slowest stage sets the pipeline rate; a regular stack of "
           f"{' or '.join(map(str, suggest))} identical layers splits evenly (chunked PP prefill: the bubble shrinks too)")
    return [Finding("pipeline-balance", _severity(impact), "num_hidden_layers / layer pattern", msg, impact, {
        "metric": "pipeline stage time (slowest over mean, mixed step)", "balance_by_pp": balances,
        "layer_time_s": {f"{'moe' if k[1] else 'dense'}{f'-w{k[0]}' if k[0] else ''}": v for k, v in per_kind.items()},
        "setting": ctx.setting()})]


# ---------------------------------------------------------------------------------------------
# rule: quantization
# ---------------------------------------------------------------------------------------------


def _target_precision(hw: HardwareSpec, prec: Precision) -> str | None:
    for cand in ("nvfp4", "mxfp4", "fp8"):
        if hw.supports(cand) and parse_precision(cand).weight_bytes < prec.weight_bytes:
            return cand
    return None


def _rule_quantization(ctx: _Ctx) -> list[Finding]:
    target = _target_precision(ctx.hw, ctx.prec)
    if target is None:
        return []
    tprec = parse_precision(target)
    p = ctx.primary
    now = _steps(ctx, p)
    then = _steps(ctx, p, prec=tprec)
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
    pinned = [op.name for op, t in now[phase][1] if op.kind == "gemm" and op.w_bytes >= 2.0 and t > 0.02 * total]
    msg = (f"at {p.plan.label()}, concurrency {p.concurrency}, ISL/OSL {p.isl}/{p.osl}: {ctx.prec.id} -> {target} "
           f"makes the step {impact:.2f}x faster (prefill chunk {impacts['prefill']:.2f}x); largest savings (share of the "
           f"step): {top_txt}" + (f"; still BF16 after quantization: {', '.join(sorted(set(pinned)))}" if pinned else "")
           + " (quantized weights also free memory for more concurrency)")
    return [Finding("quantization", _severity(impact), f"precision {ctx.prec.id}", msg, impact, {
        "metric": "mixed step time", "target": target, "speedup_by_phase": impacts,
        "saved_s_by_op": dict(top), "setting": ctx.setting()})]


_RULE_FUNCS: dict[str, Callable[[_Ctx], list[Finding]]] = {
    "dim-alignment": _rule_alignment, "gemm-shape": _rule_gemm_shape, "depth-vs-width": _rule_depth_width,
    "attention-tp": _rule_attention_tp, "kv-cache": _rule_kv_cache, "moe-expert-tp": _rule_moe_expert_tp,
    "moe-expert-m": _rule_moe_expert_m, "moe-balance": _rule_moe_balance, "pipeline-balance": _rule_pipeline,
    "quantization": _rule_quantization,
}


def lint(
    model: str | Path | ModelSpec,
    hardware: str | Path | HardwareSpec = "h200-sxm",
    precision: str | Precision | None = None,
    *,
    workloads: Iterable[str | WorkloadSpec] | None = None,
    engine: str | Path | EngineConstants | None = None,
    rules: Iterable[str] | None = None,
    plan: ParallelPlan | None = None,
) -> LintReport:
    """Lint ``model`` for ``hardware``: findings sorted by severity then impact.

    ``workloads``: ``ISL/OSL[/CONCURRENCY]`` strings or regime names; the first is the primary
    setting (default ``1024/1024`` and ``32768/1024``, each at its throughput operating point:
    plan and concurrency chosen by the serving model). ``plan`` pins the deployment plan.

    Example:
        >>> [f.rule for f in lint("deepseek-r1", "h200-sxm", rules=["pipeline-balance"]).findings]
        ['pipeline-balance']
    """
    m = load_model(model)
    hw = load_hardware(hardware)
    prec = parse_precision(precision or default_precision(hw))
    eng = load_engine(engine)
    wls = [parse_workload(w) for w in (workloads or DEFAULT_WORKLOADS)]
    if not wls:
        raise SpecError("lint: at least one workload is required")
    chosen = list(rules) if rules is not None else list(RULES)
    unknown = [r for r in chosen if r not in _RULE_FUNCS]
    if unknown:
        raise SpecError(f"unknown lint rule(s) {', '.join(unknown)}; rules: {', '.join(RULES)}")
    if plan is not None:
        plan.validate_for(m)
    plans = [plan] if plan is not None else candidate_plans(m, hw)
    points = [operating_point(m, hw, prec, eng, w.isl, w.osl, "throughput", plans=plans, concurrency=w.concurrency) for w in wls]
    ctx = _Ctx(m, hw, prec, eng, wls, points, default_align(hw))
    findings: list[Finding] = []
    for r in chosen:
        findings.extend(_RULE_FUNCS[r](ctx))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (order[f.severity], -f.impact))
    return LintReport(
        model=m.id, hardware=hw.id, precision=prec.id, engine=eng.id,
        workloads=[{"spec": w.label, **p.to_dict()} for w, p in zip(wls, points)], findings=findings,
        assumptions={
            "operating_point": f"per workload: plan x concurrency ({ADVISOR_CONCURRENCY[0]}..{ADVISOR_CONCURRENCY[-1]}) with the "
                               f"most output tok/s/GPU at >= {THROUGHPUT_MIN_TOK_S_USER:g} tok/s/user unless pinned",
            "impact": "predicted speedup of the fix on details.metric, from the cost model (llm_codesign.cost/serving)",
            "alignment": f"multiples of 128 (warn); of {default_align(hw)} on GPUs with 2-SM tiles (info)",
            "min_impact": MIN_IMPACT, "warn_impact": WARN_IMPACT, "rules": chosen,
        },
    )

