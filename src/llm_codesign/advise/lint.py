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

from collections.abc import Callable, Iterable
from pathlib import Path

from ..calibrate import resolve_hardware
from ..errors import SpecError
from ..explore import (
    ADVISOR_CONCURRENCY,
    THROUGHPUT_MIN_TOK_S_USER,
    advisor_precision,
    candidate_plans,
    operating_point,
)
from ..specs.context import check_window
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec, load_model
from ..specs.plan import ParallelPlan
from ..specs.precision import Precision
from .archsearch import default_align
from .findings import (
    MIN_IMPACT,
    RULES,
    SEVERITIES,
    WARN_IMPACT,
    Finding,
    LintContext,
    LintReport,
    WorkloadSpec,
    default_workloads,
    parse_workload,
)
from .rules_moe import rule_moe_balance, rule_moe_expert_m, rule_moe_expert_tp
from .rules_serving import (
    rule_attention_tp,
    rule_kv_cache,
    rule_pipeline,
    rule_quantization,
)
from .rules_shape import rule_alignment, rule_depth_width, rule_gemm_shape

_RULE_FUNCS: dict[str, Callable[[LintContext], list[Finding]]] = {
    "dim-alignment": rule_alignment,
    "gemm-shape": rule_gemm_shape,
    "depth-vs-width": rule_depth_width,
    "attention-tp": rule_attention_tp,
    "kv-cache": rule_kv_cache,
    "moe-expert-tp": rule_moe_expert_tp,
    "moe-expert-m": rule_moe_expert_m,
    "moe-balance": rule_moe_balance,
    "pipeline-balance": rule_pipeline,
    "quantization": rule_quantization,
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

    ``workloads``: ``ISL/OSL[/CONCURRENCY]`` strings or regime names (their lengths); the first
    is the primary setting (default ``1024/1024`` and ``32768/1024``, their prompts within the
    checkpoint's context window: ``findings.default_workloads``); each at its throughput
    operating point (plan and concurrency chosen by the serving model); lengths past the window
    are refused. ``plan`` pins the deployment plan.

    Example:
        >>> [f.rule for f in lint("deepseek-r1", "h200-sxm", rules=["pipeline-balance"]).findings]
        ['pipeline-balance']
    """
    m = load_model(model)
    hw = resolve_hardware(hardware)  # a bundled id, a YAML/JSON spec or a calibration profile
    prec, prec_note = advisor_precision(m, hw, precision)
    eng = load_engine(engine, hw)
    wls = [parse_workload(w, m) for w in (workloads or default_workloads(m))]
    if not wls:
        raise SpecError("lint: at least one workload is required")
    for w in wls:
        check_window(m, w.isl, w.osl, f"lint: workload {w.label}")
    chosen = list(rules) if rules is not None else list(RULES)
    unknown = [r for r in chosen if r not in _RULE_FUNCS]
    if unknown:
        raise SpecError(f"unknown lint rule(s) {', '.join(unknown)}; rules: {', '.join(RULES)}")
    if plan is not None:
        plan.validate_for(m)
    plans = [plan] if plan is not None else candidate_plans(m, hw)
    points = [
        operating_point(
            m, hw, prec, eng, w.isl, w.osl, "throughput", plans=plans, concurrency=w.concurrency
        )
        for w in wls
    ]
    ctx = LintContext(m, hw, prec, eng, wls, points, default_align(hw))
    findings: list[Finding] = []
    for r in chosen:
        findings.extend(_RULE_FUNCS[r](ctx))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (order[f.severity], -f.impact))
    return LintReport(
        model=m.id,
        hardware=hw.id,
        precision=prec.id,
        engine=eng.id,
        workloads=[{"spec": w.label, **p.to_dict()} for w, p in zip(wls, points)],
        findings=findings,
        assumptions={
            "precision": prec_note,
            "operating_point": (
                "per workload: plan x concurrency "
                f"({ADVISOR_CONCURRENCY[0]}..{ADVISOR_CONCURRENCY[-1]}) with the most output "
                f"tok/s/GPU at >= {THROUGHPUT_MIN_TOK_S_USER:g} tok/s/user unless pinned"
            ),
            "impact": (
                "predicted speedup of the fix on details.metric, from the cost model "
                "(llm_codesign.cost/serving)"
            ),
            "alignment": (
                f"multiples of 128 (warn); of {default_align(hw)} on GPUs with 2-SM tiles (info)"
            ),
            "min_impact": MIN_IMPACT,
            "warn_impact": WARN_IMPACT,
            "rules": chosen,
        },
    )
