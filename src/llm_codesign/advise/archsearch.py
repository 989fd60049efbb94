"""Architecture search at constant accuracy: variants of a model on hardware-friendly grids,
kept when their parameter counts (total and active) stay within a tolerance of the original and
their scaling-law quality estimate holds (:mod:`llm_codesign.advise.quality`), ranked by the serving
model's throughput-interactivity frontier on a target GPU (guidelines 1-3 and 5 of DESIGN.md).

Knobs (``SearchSpace``): hidden size D (multiples of the alignment, heads follow at a fixed head
dim), layer count L, KV heads, expert granularity (E, k, F_e) at equal total and active expert
parameters, MLA ranks, full-attention layers traded for Gated DeltaNet ones. The FFN width (dense
F, or F_e for MoE) is *solved* from the parameter budget, rounded to the alignment.

Ranking (``objective``):
* ``area``: the frontier area of :mod:`llm_codesign.pareto` (the same definition ``frontier``
  reports): the mean output tokens/s/GPU of the Pareto staircase over tokens/s/user
  log-uniform on [10, 1000], from all plans x concurrencies that fit (units tok/s/GPU);
* ``throughput``: the most output tokens/s/GPU among points with tokens/s/user >= the target.
``gain`` is the variant's objective over the original's. When no variant beats the original,
the result's only variant is the original itself (gain 1, no changes).

Example:
    >>> space = SearchSpace(hidden_scales=(1.0,), layer_scales=(1.0,))
    >>> r = search("llama-3.1-8b", "h200-sxm", space=space)
    >>> r.variants[0].changes
    []
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..calibrate import resolve_hardware
from ..errors import SpecError
from ..explore import ADVISOR_CONCURRENCY, Curve, advisor_precision, candidate_plans, grid_curve
from ..specs.context import check_window
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec, gdn_like, load_model
from ..specs.model_config import model_from_config
from ..specs.precision import Precision
from .quality import DEFAULT_LOSS_TOLERANCE, QualityEstimate, estimate_quality
from .quality import assumptions as quality_assumptions

DEFAULT_PARAM_TOLERANCE = 0.02  # |variant / original - 1| for total and for active params
MIN_GAIN = 1.005  # a variant must beat the original by 0.5% to be reported
FFN_RATIO_BAND = (1.0, 8.0)  # F / D kept inside this band (beyond it the FFN is degenerate)


@dataclass(frozen=True)
class SearchSpace:
    """Grids of the knobs. Scales multiply the original value before snapping to the grid.

    ``kv_heads``: multipliers of the KV-head count (``0.5`` halves it; fewer KV heads is an
    accuracy change the scaling law does not see, reported as ``unmodelled``). ``experts``:
    granularity multipliers g: E -> g E, k -> g k, F_e -> F_e / g (equal expert parameters).
    ``mla_rank_scales`` multiply ``kv_lora_rank`` (unmodelled). ``linear_shares``: shares of the
    full-attention layers traded for Gated DeltaNet layers (``specs.model.gdn_like``, the
    Qwen3-Next pairing; 0 = none; GQA models; accuracy of the trade is unmodelled). ``align`` =
    None picks 256 on GPUs with 2-SM tiles, else 128."""

    hidden_scales: tuple[float, ...] = (0.75, 0.875, 1.0, 1.125, 1.25, 1.5)
    layer_scales: tuple[float, ...] = (0.5, 0.625, 0.75, 0.875, 1.0, 1.25)
    kv_heads: tuple[float, ...] = (1.0,)
    experts: tuple[float, ...] = (0.5, 1.0, 2.0)
    mla_rank_scales: tuple[float, ...] = (1.0,)
    linear_shares: tuple[float, ...] = (0.0,)
    align: int | None = None

    def __post_init__(self) -> None:
        for name in ("hidden_scales", "layer_scales", "kv_heads", "experts", "mla_rank_scales"):
            values = getattr(self, name)
            if not values or any(not (0 < v <= 8) for v in values):
                raise SpecError(f"search space: {name}={values} must be non-empty scales in (0, 8]")
        if not self.linear_shares or any(not 0 <= v < 1 for v in self.linear_shares):
            raise SpecError(
                f"search space: linear_shares={self.linear_shares} must be shares in [0, 1)"
            )
        if self.align is not None and (self.align < 8 or self.align % 8):
            raise SpecError(f"search space: align={self.align} must be a multiple of 8")


_KEYS: dict[str, dict[str, str]] = {
    "_default": {
        "hidden": "hidden_size",
        "layers": "num_hidden_layers",
        "heads": "num_attention_heads",
        "kv_heads": "num_key_value_heads",
        "ffn": "intermediate_size",
    },
    "gptj": {"hidden": "n_embd", "layers": "n_layer", "heads": "n_head", "ffn": "n_inner"},
    "falcon": {"kv_heads": "num_kv_heads", "ffn": "ffn_hidden_size"},
    "deepseek_v3": {
        "expert_ffn": "moe_intermediate_size",
        "experts": "n_routed_experts",
        "top_k": "num_experts_per_tok",
    },
    "qwen3_moe": {
        "expert_ffn": "moe_intermediate_size",
        "experts": "num_experts",
        "top_k": "num_experts_per_tok",
    },
    "mixtral": {
        "expert_ffn": "intermediate_size",
        "experts": "num_local_experts",
        "top_k": "num_experts_per_tok",
    },
    "gpt_oss": {
        "expert_ffn": "intermediate_size",
        "experts": "num_local_experts",
        "top_k": "num_experts_per_tok",
    },
    "llama4_text": {
        "expert_ffn": "intermediate_size",
        "experts": "num_local_experts",
        "top_k": "num_experts_per_tok",
        "ffn": "intermediate_size_mlp",
    },
}
_INDEX_LISTS = ("moe_layers", "mlp_only_layers")


def _keys(model_type: str) -> dict[str, str]:
    keys = dict(_KEYS["_default"])
    keys.update(_KEYS.get("llama4_text" if model_type == "llama4" else model_type, {}))
    return keys


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    return config["text_config"] if config.get("model_type") == "llama4" else config


def _period(values: list[Any]) -> int:
    for p in range(1, len(values) + 1):
        if all(values[i] == values[i % p] for i in range(len(values))):
            return p
    return len(values)


def _resize_layer_lists(cfg: dict[str, Any], old: int, new: int) -> None:
    """Per-layer lists follow a new depth by repeating their period (alternating windows,
    interleaved MoE); index lists (``moe_layers``) are mapped through per-layer membership."""
    for key, value in list(cfg.items()):
        if not isinstance(value, list) or not value:
            continue
        if key in _INDEX_LISTS:
            members = [i in set(value) for i in range(old)]
            p = _period(members)
            cfg[key] = [i for i in range(new) if members[i % p]]
        elif len(value) == old and key not in ("architectures",):
            p = _period(value)
            cfg[key] = [value[i % p] for i in range(new)]


def apply_changes(model: ModelSpec, changes: dict[str, int]) -> dict[str, Any]:
    """A config.json dict of ``model`` with canonical knobs changed: hidden, layers, heads,
    kv_heads, head_dim, ffn (dense width), expert_ffn, experts, top_k, kv_lora_rank, q_lora_rank."""
    config = copy.deepcopy(model.config)
    cfg = _text_config(config)
    keys = _keys(model.model_type)
    for knob, value in changes.items():
        if knob == "layers":
            _resize_layer_lists(cfg, model.num_layers, int(value))
        if knob == "head_dim":
            cfg["head_dim"] = int(value)
            continue
        if knob in ("kv_lora_rank", "q_lora_rank"):
            cfg[knob] = int(value)
            continue
        if knob not in keys:
            raise SpecError(
                f"{model.id}: knob {knob!r} does not apply to model_type {model.model_type!r}"
            )
        cfg[keys[knob]] = int(value)
    if model.model_type == "gpt_oss" and "experts_per_token" in cfg and "top_k" in changes:
        cfg["experts_per_token"] = int(changes["top_k"])
    return config


def build_variant(
    model: ModelSpec, changes: dict[str, int], variant_id: str
) -> tuple[ModelSpec, dict[str, Any]]:
    """The variant's spec and config.json; ``linear_pct`` (percent of the full-attention layers
    made Gated DeltaNet) is applied to the spec and written to the config in Qwen3-Next's field
    names (``linear_*``) for the reader: the config's own model_type does not parse them."""
    changes = dict(changes)
    pct = changes.pop("linear_pct", 0)
    config = apply_changes(model, changes)
    spec = model_from_config(
        config, model_id=variant_id, name=variant_id, source=f"variant of {model.id}"
    )
    if pct:
        lin = gdn_like(spec.attention)
        spec = spec.with_mixer("linear", pct / 100, "gdn", linear_attention=lin)
        _text_config(config).update(
            linear_share_of_full_attention_layers=pct / 100,
            linear_num_key_heads=lin.num_k_heads,
            linear_num_value_heads=lin.num_v_heads,
            linear_key_head_dim=lin.head_k_dim,
            linear_value_head_dim=lin.head_v_dim,
            linear_conv_kernel_dim=lin.conv_kernel,
        )
    return spec, config


# ---------------------------------------------------------------------------------------------
# variant generation
# ---------------------------------------------------------------------------------------------


def _snap(value: float, step: int, minimum: int | None = None) -> int:
    v = round(value / step) * step
    return max(v, minimum if minimum is not None else step)


def _layer_step(layers: int) -> int:
    return 4 if layers >= 24 else (2 if layers >= 8 else 1)


def _knob_value(model: ModelSpec, knob: str) -> int:
    a, moe = model.attention, model.moe
    return {
        "hidden": model.hidden_size,
        "layers": model.num_layers,
        "heads": a.num_heads,
        "kv_heads": a.num_kv_heads,
        "head_dim": a.head_dim,
        "ffn": model.intermediate_size,
        "expert_ffn": moe.expert_intermediate if moe else 0,
        "experts": moe.num_experts if moe else 0,
        "top_k": moe.top_k if moe else 0,
        "kv_lora_rank": a.kv_lora_rank,
        "q_lora_rank": a.q_lora_rank,
        "linear_pct": 0,
    }[knob]


def _solve_linear(
    model: ModelSpec,
    base: dict[str, int],
    knob: str,
    count: str,
    target: float,
    step: int,
    vid: str,
    lo: int = 1,
) -> int | None:
    """The value of ``knob`` making ``count`` (``total_params`` or ``active_params``) equal the
    target, snapped to ``step``: parameter counts are linear in a width or an expert count, so
    two evaluations solve it. None when no positive value does."""
    x1, x2 = max(step * 4, lo), max(step * 8, lo + 1)
    try:
        m1, _ = build_variant(model, {**base, knob: x1}, vid)
        m2, _ = build_variant(model, {**base, knob: x2}, vid)
    except SpecError:
        return None
    slope = (getattr(m2, count) - getattr(m1, count)) / (x2 - x1)
    if slope <= 0:
        return None
    x = x1 + (target - getattr(m1, count)) / slope
    if x < max(step, lo):
        return None
    return max(_snap(x, step), lo)


@dataclass
class Candidate:
    model: ModelSpec
    config: dict[str, Any]
    changes: dict[str, tuple[int, int]]
    unmodelled: tuple[str, ...]


def _shape_changes(
    model: ModelSpec, hs: float, ls: float, kvs: float, gs: float, rs: float, lin: float, align: int
) -> dict[str, int] | None:
    """The knob values of one grid point before the parameter budget is filled (None: invalid)."""
    a, moe = model.attention, model.moe
    ch: dict[str, int] = {}
    kv = max(1, round(a.num_kv_heads * kvs)) if a.kind == "gqa" else 1
    if hs != 1.0:
        d = _snap(model.hidden_size * hs, math.lcm(align, a.head_dim if a.kind == "gqa" else 1))
        ch["hidden"] = d
        # heads follow the width at a fixed head dim (keeps the attention : FFN balance)
        heads = _snap(
            a.num_heads * d / model.hidden_size, math.lcm(kv, 8 if a.num_heads >= 8 else 1)
        )
        ch["heads"] = heads
        if a.kind == "gqa":
            ch["head_dim"] = a.head_dim
        if model.intermediate_size and (moe is None or model.num_moe_layers < model.num_layers):
            # dense FFN (MoE: the dense-first layers) keeps its F/D ratio
            ch["ffn"] = _snap(model.intermediate_size * d / model.hidden_size, align)
    if a.kind == "gqa" and kv != a.num_kv_heads:
        if ch.get("heads", a.num_heads) % kv:
            return None
        ch["kv_heads"] = kv
    if ls != 1.0:
        ch["layers"] = _snap(model.num_layers * ls, _layer_step(model.num_layers))
    if moe is not None and gs != 1.0:
        e, k = moe.num_experts * gs, moe.top_k * gs
        if e != int(e) or k != int(k) or k < 1 or e < 2 or k > e:
            return None
        ch.update(experts=int(e), top_k=int(k))
    if a.kind == "mla" and rs != 1.0:
        ch["kv_lora_rank"] = _snap(a.kv_lora_rank * rs, 128)
    if lin:
        ch["linear_pct"] = round(100 * lin)
    return ch


def _fill_budget(
    model: ModelSpec, ch: dict[str, int], align: int, vid: str
) -> dict[str, int] | None:
    """Solve the width knobs so the variant keeps the original's parameters: dense F from the
    total; MoE: the expert width from the active params (top-k experts per token), then the
    expert count (a multiple of 8 for EP) from the total."""
    moe = model.moe
    if moe is None:
        width = _solve_linear(
            model, ch, "ffn", "total_params", float(model.total_params), align, vid
        )
        return None if width is None else {**ch, "ffn": width}
    width = _solve_linear(
        model, ch, "expert_ffn", "active_params", float(model.active_params), align, vid
    )
    if width is None:
        return None
    ch = {**ch, "expert_ffn": width}
    lo = max(ch.get("top_k", moe.top_k), 2)
    experts = _solve_linear(
        model,
        ch,
        "experts",
        "total_params",
        float(model.total_params),
        8 if moe.num_experts >= 16 else 1,
        vid,
        lo=lo,
    )
    return None if experts is None else {**ch, "experts": experts}


def generate_variants(
    model: ModelSpec,
    space: SearchSpace,
    align: int,
    tolerance: float = DEFAULT_PARAM_TOLERANCE,
) -> list[Candidate]:
    """Variants on the grids whose total and active params stay within ``tolerance`` of the
    original (the original itself excluded)."""
    a, moe = model.attention, model.moe
    total0, active0 = float(model.total_params), float(model.active_params)
    grids = (
        space.hidden_scales,
        space.layer_scales,
        space.kv_heads if a.kind == "gqa" else (1.0,),
        space.experts if moe is not None else (1.0,),
        space.mla_rank_scales if a.kind == "mla" else (1.0,),
        space.linear_shares if a.kind == "gqa" and model.linear_attention is None else (0.0,),
    )
    vid = f"{model.id}-variant"
    seen: set[tuple] = set()
    out: list[Candidate] = []
    for hs, ls, kvs, gs, rs, lin in itertools.product(*grids):
        shape = _shape_changes(model, hs, ls, kvs, gs, rs, lin, align)
        if not shape:  # invalid, or the original shape
            continue
        ch = _fill_budget(model, shape, align, vid)
        if ch is None:
            continue
        key = tuple(sorted(ch.items()))
        if key in seen:
            continue
        seen.add(key)
        try:
            spec, cfg = build_variant(model, ch, vid)
        except SpecError:
            continue
        if (
            moe is None
            and not FFN_RATIO_BAND[0]
            <= spec.intermediate_size / spec.hidden_size
            <= FFN_RATIO_BAND[1]
        ):
            continue
        if (
            abs(spec.total_params / total0 - 1) > tolerance
            or abs(spec.active_params / active0 - 1) > tolerance
        ):
            continue
        changes = {
            k: (_knob_value(model, k), int(v))
            for k, v in ch.items()
            if _knob_value(model, k) != int(v)
        }
        if not changes:
            continue
        unmodelled = tuple(
            f"{k} {changes[k][0]} -> {changes[k][1]}"
            for k in ("kv_heads", "experts", "top_k", "kv_lora_rank", "linear_pct")
            if k in changes
        )
        out.append(Candidate(spec, cfg, changes, unmodelled))
    return out


# ---------------------------------------------------------------------------------------------
# search
# ---------------------------------------------------------------------------------------------


@dataclass
class Variant:
    """One ranked architecture: its config.json, parameter counts, quality estimate and gain."""

    config: dict[str, Any]
    total_params: int
    active_params: int
    quality: QualityEstimate
    objective: float
    gain: float
    changes: list[dict[str, Any]]
    frontier: Curve
    model: ModelSpec = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "total_params": self.total_params,
            "active_params": self.active_params,
            "quality_estimate": self.quality.to_dict(),
            "gain": self.gain,
            "objective": self.objective,
            "changes": self.changes,
            "frontier": self.frontier.to_dict(),
        }


@dataclass
class SearchResult:
    baseline: Variant
    variants: list[Variant]
    objective: str
    hardware: str
    precision: str
    isl: int
    osl: int
    considered: int
    assumptions: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.to_dict(),
            "variants": [v.to_dict() for v in self.variants],
            "objective": self.objective,
            "hardware": self.hardware,
            "precision": self.precision,
            "isl": self.isl,
            "osl": self.osl,
            "considered": self.considered,
            "assumptions": self.assumptions,
        }


def default_align(hw: HardwareSpec) -> int:
    """256 where the GPU forms 2-SM (clusterMMA) tiles, else the portable 128 (guideline 2)."""
    return 256 if hw.tile_cluster_sms >= 2 else 128


def _objective_fn(objective: str, target: float | None) -> Callable[[Curve], float]:
    if objective == "area":
        return lambda f: f.area
    if objective == "throughput":
        if target is None or not 0 < target < math.inf:  # NaN fails too
            raise SpecError(
                f"objective 'throughput' needs a positive target tok/s/user (finite), got {target}"
            )
        return lambda f: f.throughput_at(float(target))
    raise SpecError(f"objective {objective!r} must be 'area' or 'throughput'")


def search(
    model: str | Path | ModelSpec,
    hardware: str | Path | HardwareSpec,
    precision: str | Precision | None = None,
    *,
    isl: int = 1024,
    osl: int = 1024,
    engine: str | Path | EngineConstants | None = None,
    space: SearchSpace | None = None,
    objective: str = "area",
    target_tok_s_per_user: float | None = None,
    param_tolerance: float = DEFAULT_PARAM_TOLERANCE,
    quality_tolerance: float = DEFAULT_LOSS_TOLERANCE,
    train_tokens: float | None = None,
    top: int = 5,
    concurrency: tuple[int, ...] = ADVISOR_CONCURRENCY,
    max_tp: int | None = None,
) -> SearchResult:
    """Search variants of ``model`` at constant parameters and estimated quality, ranked by the
    serving frontier on ``hardware`` at ISL/OSL. Best first; the original when none beats it.

    ``objective='throughput'`` with ``target_tok_s_per_user`` ranks by tokens/s/GPU at that
    interactivity; ``'area'`` by the frontier area.
    """
    m = load_model(model)
    hw = resolve_hardware(hardware)  # a bundled id, a YAML/JSON spec or a calibration profile
    prec, prec_note = advisor_precision(m, hw, precision)
    eng = load_engine(engine, hw)
    space = space or SearchSpace()
    if not 0 <= param_tolerance < 1:  # NaN fails too
        raise SpecError(f"param_tolerance={param_tolerance} must lie in [0, 1)")
    if not 0 <= quality_tolerance < math.inf:
        raise SpecError(f"quality_tolerance={quality_tolerance} must be a finite number >= 0")
    if isl < 1 or osl < 1:
        raise SpecError(f"isl={isl} and osl={osl} must be >= 1")
    check_window(m, isl, osl, "search: isl and osl")
    if top < 1:
        raise SpecError(f"top={top} must be >= 1")
    score = _objective_fn(objective, target_tok_s_per_user)
    align = space.align or default_align(hw)

    def frontier(spec: ModelSpec) -> Curve:
        try:
            plans = candidate_plans(spec, hw, max_tp)
        except SpecError:
            return Curve(np.zeros(0), np.zeros(0), [], [])
        return grid_curve(spec, hw, prec, eng, isl, osl, plans, tuple(concurrency))

    base_front = frontier(m)
    base_obj = score(base_front)
    base_q = estimate_quality(m, train_tokens=train_tokens, tolerance=quality_tolerance)
    baseline = Variant(
        m.config, m.total_params, m.active_params, base_q, base_obj, 1.0, [], base_front, m
    )
    cands = generate_variants(m, space, align, param_tolerance)
    ranked: list[Variant] = []
    for c in cands:
        q = estimate_quality(
            c.model,
            base=m,
            train_tokens=train_tokens,
            tolerance=quality_tolerance,
            unmodelled=c.unmodelled,
        )
        if not q.holds:
            continue
        f = frontier(c.model)
        obj = score(f)
        gain = obj / base_obj if base_obj > 0 else (float("inf") if obj > 0 else 0.0)
        if gain < MIN_GAIN:
            continue
        changes = [{"field": k, "from": v[0], "to": v[1]} for k, v in c.changes.items()]
        ranked.append(
            Variant(
                c.config,
                c.model.total_params,
                c.model.active_params,
                q,
                obj,
                gain,
                changes,
                f,
                c.model,
            )
        )
    ranked.sort(key=lambda v: -v.gain)
    variants = ranked[:top] or [baseline]
    return SearchResult(
        baseline=baseline,
        variants=variants,
        objective=objective,
        hardware=hw.id,
        precision=prec.id,
        isl=isl,
        osl=osl,
        considered=len(cands),
        assumptions={
            "precision": prec_note,
            "param_tolerance": param_tolerance,
            "align": align,
            "space": {k: list(v) for k, v in vars(space).items() if isinstance(v, tuple)},
            "objective": objective
            if objective == "area"
            else f"tok/s/GPU at >= {target_tok_s_per_user:g} tok/s/user",
            "frontier": (
                f"plans {', '.join(p.label() for p in candidate_plans(m, hw, max_tp))} x "
                f"concurrency {list(concurrency)}"
            ),
            "min_gain": MIN_GAIN,
            "quality": quality_assumptions(),
            "engine": eng.id,
        },
    )
