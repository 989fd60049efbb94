"""Candidate parallel plans of a deployment search, as arrays (invalid ones kept with a reason).

What is searched (``enumerate_plans``), for a budget of N GPUs:
  * tp, pp from A = {powers of two <= N} U {divisors of N}, with tp x pp <= N; dp = N // (tp x pp)
    replicas fill the budget (GPUs left over stay idle and are not counted);
  * MoE: ep from the divisors of tp (the tp group splits as ep x moe_tp), each with tensor-parallel
    attention and with data-parallel attention (wide EP + attention DP, DESIGN.md guideline 5);
  * Helix KV-parallel attention cp | tp (cp > 1), pp = 1, wherever tensor-parallel attention
    would replicate the KV cache (GQA: tp > KV heads; MLA: tp > 1). Elsewhere Helix shards
    nothing more than TP does and only adds its all-to-all, so it is not generated; Helix
    (arXiv 2507.07120) pairs KV parallelism with TP/EP, not with pipeline stages;
  * dense models: ep = 1 and no attention DP (on a dense model attention DP over tp GPUs is
    tp replicas, which dp already covers).
  Plans that break a model rule (``specs.plan.plan_feasibility``) are kept, one row each, with
  their reason.

``candidate_plans`` is the smaller single-replica set the advisor compares (lint, regimes,
search): TP in powers of two inside the NVLink domain, wide EP and Helix variants.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import (
    NO_SCALEOUT_NETWORK,
    ParallelPlan,
    crosses_domain_without_network,
    plan_feasibility,
)

Array = np.ndarray

MAX_PLAN_TP = 32  # largest tensor/expert-parallel group the advisor considers


@dataclass(frozen=True)
class PlanTable:
    """Candidate plans as arrays; ``reason`` is '' for a valid plan, else why it cannot run."""

    tp: Array
    pp: Array
    ep: Array
    cp: Array
    attention_dp: Array
    dp: Array
    reason: Array

    def __len__(self) -> int:
        return len(self.tp)

    @property
    def valid(self) -> Array:
        return self.reason == ""

    @property
    def gpus_per_replica(self) -> Array:
        return self.tp * self.pp

    def take(self, idx: Array) -> PlanTable:
        return PlanTable(
            *(
                np.asarray(getattr(self, f))[idx]
                for f in ("tp", "pp", "ep", "cp", "attention_dp", "dp", "reason")
            )
        )

    def plan(self, i: int) -> ParallelPlan:
        return ParallelPlan(
            int(self.tp[i]),
            int(self.pp[i]),
            int(self.ep[i]),
            int(self.dp[i]),
            bool(self.attention_dp[i]),
            int(self.cp[i]),
        )


def axis_values(num_gpus: int) -> list[int]:
    """Candidate sizes of one parallel axis: powers of two up to N and the divisors of N.

    Example:
        >>> axis_values(12)
        [1, 2, 3, 4, 6, 8, 12]
    """
    if num_gpus < 1:
        raise SpecError(f"num_gpus must be >= 1, got {num_gpus}")
    vals = {1 << i for i in range(num_gpus.bit_length()) if (1 << i) <= num_gpus}
    vals |= {d for d in range(1, num_gpus + 1) if num_gpus % d == 0}
    return sorted(vals)


def enumerate_plans(
    model: ModelSpec,
    hw: HardwareSpec,
    num_gpus: int,
    *,
    max_pp: int | None = None,
    helix: bool = True,
    attention_dp: bool = True,
    partial_ep: bool = True,
) -> PlanTable:
    """Every candidate plan for ``num_gpus`` GPUs (module docstring), invalid ones with a reason
    (``partial_ep``: the engine's ``moe_partial_ep``).

    Example (Llama-3.1-8B on 4 GPUs: (tp, pp) in {(1,1),(1,2),(1,4),(2,1),(2,2),(4,1)}):
        >>> len(enumerate_plans(load_model("llama-3.1-8b"), load_hardware("h100-sxm"), 4))
        6
    """
    if num_gpus < 1 or num_gpus > 1_000_000:
        raise SpecError(f"num_gpus must lie in 1..1,000,000, got {num_gpus}")
    a = np.array(axis_values(num_gpus), dtype=np.int64)
    moe = model.moe is not None
    # (tp, ep, cp) with ep | tp and cp | tp, then x pp with tp x pp <= N, then x attention layout
    tp, ep, cp = (g.ravel() for g in np.meshgrid(a, a, a, indexing="ij"))
    ok = (tp % ep == 0) & (tp % cp == 0)
    tp, ep, cp = tp[ok], ep[ok], cp[ok]
    i, j = (g.ravel() for g in np.meshgrid(np.arange(len(tp)), np.arange(len(a)), indexing="ij"))
    ok = tp[i] * a[j] <= num_gpus
    i, pp = i[ok], a[j[ok]]
    tp, ep, cp = tp[i], ep[i], cp[i]
    tp, ep, cp, pp = (np.concatenate([v, v]) for v in (tp, ep, cp, pp))
    adp = np.repeat(np.array([False, True]), len(tp) // 2)
    keep = ~(adp & (cp > 1)) & ~(adp & (tp == 1))
    if max_pp is not None:
        keep &= pp <= max_pp
    if not moe:
        keep &= (ep == 1) & ~adp
    if not attention_dp:
        keep &= ~adp
    at = model.attention
    kv_replicated = (tp > 1) if at.kind == "mla" else (tp > at.num_kv_heads)
    keep &= (cp == 1) | (helix & kv_replicated & (pp == 1))
    tp, pp, ep, cp, adp = tp[keep], pp[keep], ep[keep], cp[keep], adp[keep]
    order = np.lexsort((cp, adp, ep, pp, tp))
    tp, pp, ep, cp, adp = tp[order], pp[order], ep[order], cp[order], adp[order]
    reason = plan_feasibility(model, tp, pp, ep, adp, cp, partial_ep)
    reason = np.asarray(np.broadcast_to(reason, tp.shape), dtype=object).copy()
    no_net = crosses_domain_without_network(hw, tp)
    reason = np.where((reason == "") & no_net, NO_SCALEOUT_NETWORK, reason)
    return PlanTable(tp, pp, ep, cp, adp, num_gpus // (tp * pp), reason)


def candidate_plans(
    model: ModelSpec, hw: HardwareSpec, max_tp: int | None = None
) -> list[ParallelPlan]:
    """Single-replica plans worth comparing: TP in powers of two inside the NVLink domain; MoE
    adds EP = TP with and without attention-DP (wide EP); GQA adds Helix KV-parallel attention
    once TP exceeds the KV heads. Plans the model cannot run are kept out here; memory fit is
    decided per point by the serving model."""
    limit = min(hw.scaleup_domain_size, max_tp or MAX_PLAN_TP)
    plans: list[ParallelPlan] = []
    tp = 1
    while tp <= limit:
        options = [ParallelPlan(tp=tp)]
        if model.moe is not None and tp > 1:
            options += [ParallelPlan(tp=tp, ep=tp), ParallelPlan(tp=tp, ep=tp, attention_dp=True)]
        a = model.attention
        if a.kind == "gqa" and tp > a.num_kv_heads and tp % a.num_kv_heads == 0:
            options.append(ParallelPlan(tp=tp, cp=tp // a.num_kv_heads, ep=tp if model.moe else 1))
        for p in options:
            try:
                p.validate_for(model)
            except SpecError:
                continue
            plans.append(p)
        tp *= 2
    if not plans:
        raise SpecError(
            f"{model.id}: no tensor-parallel plan up to tp={limit} divides its heads and widths"
        )
    return plans
