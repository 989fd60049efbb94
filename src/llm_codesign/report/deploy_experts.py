"""Reading a deployment's redundant expert copies and the load balancer that places them
(``estimate --from``): SGLang's, vLLM's and TensorRT-LLM's settings, checked against the expert
slots the plan prices (``specs.plan.expert_slots``)."""

from __future__ import annotations

import json
from collections.abc import Callable

from ..errors import SpecError
from ..specs.model import ModelSpec
from ..specs.plan import redundant_experts
from .deploy_read import Setting
from .deploy_values import as_bool, as_choice, as_int

# a deployment's settings of redundant expert copies and their load balancer (``expert_copies``)
EXPERT_COPY_SETTINGS = (
    "eplb", "redundant_experts", "eplb_config", "expert_slots", "load_balancer", "eplb_updates",
    "ep_dispatch",
)  # fmt: skip
# SGLang's --ep-dispatch-algorithm (a free string; the values its expert_location_dispatch
# handles): which copy of an expert a token goes to, except fake, which replaces the router's
# logits by noise and zeroes its correction bias, so tokens route uniformly at random
# (sgl-project/sglang python/sglang/srt/eplb/expert_location_dispatch.py,
# transform_select_experts_inputs): engine expert_balancer uniform
SGLANG_EP_DISPATCH = ("static", "dynamic", "static_with_zero_expert", "fake")


def expert_copies(
    by: dict[str, Setting], model: ModelSpec, ep: int, engine: dict, note: Callable, skip: Callable
) -> None:
    """Redundant expert copies and the load balancer that places them: SGLang's
    ``--enable-eplb`` / ``--ep-num-redundant-experts``, vLLM's ``--enable-eplb`` with
    ``--eplb-config`` (its ``num_redundant_experts``) or ``--num-redundant-experts``, TensorRT-LLM's
    ``moe_config.load_balancer`` (a file, or ``num_slots`` and ``layer_updates_per_iter``). A
    balancer on (``--enable-eplb``, a TensorRT-LLM load balancer) sets the engine's
    ``expert_balancer`` to eplb; copies without one keep the engine's balance. The copies stated
    (the last where several settings state them) are checked against the slots the plan prices,
    the fewest multiple of ep above the experts (``specs.plan.expert_slots``): more copies than
    that are noted, their weights not counted.

    Example: --ep 48 --enable-eplb --ep-num-redundant-experts 32 on DeepSeek-R1 -> engine
    expert_balancer=eplb; checked: 288 expert slots, the fewest ep=48 divides."""
    keys = [k for k in EXPERT_COPY_SETTINGS if k in by]
    if not keys:
        return
    if model.moe is None:
        for k in keys:
            skip(by[k], f"{model.id} has no experts")
        return
    e = model.moe.num_experts
    lb = by.get("load_balancer")
    if lb is not None and not _names_balancer(lb):
        skip(lb, "no load balancer configured (an empty setting)")
        lb = None
    if lb is not None and isinstance(lb.value, dict) and "num_slots" in lb.value:
        by = {**by, "expert_slots": Setting(lb.name, lb.value["num_slots"], lb.origin)}
    stated = [(by[k], _stated_copies(by[k], k, e)) for k in COUNTS if k in by]
    for s, _ in stated[:-1]:  # (the last one stated wins, as the engines' own parsers do)
        skip(s, f"superseded by {stated[-1][0].origin}")
    switch, updates = by.get("eplb"), by.get("eplb_updates")
    off = switch is not None and not as_bool(switch)
    if off:
        skip(switch, "the load balancer is off: expert_balancer as the engine states")
    on = [s for s in (switch, lb) if s is not None and (s is lb or as_bool(s))]
    on += [updates] if updates is not None and as_int(updates, lo=0) > 0 else []
    if on and not off:
        engine["expert_balancer"] = "eplb"
        note(on[0], "engine expert_balancer=eplb (the load balancer places the experts' copies)")
    if "ep_dispatch" in by:
        alg = by["ep_dispatch"]
        if as_choice(alg, SGLANG_EP_DISPATCH) == "fake":  # (whatever a balancer would place)
            engine["expert_balancer"] = "uniform"
            note(alg, "engine expert_balancer=uniform (SGLang routes tokens at random)")
        else:
            note(alg, "which copy of an expert a token goes to: the balance priced is as above")
    if not stated:
        return
    src, copies = stated[-1]
    priced = redundant_experts(model, ep)
    if (e + copies) % ep:
        raise SpecError(
            f"{src.origin}: {e} experts + {copies} copies = {e + copies} slots do not split over "
            f"ep={ep}; allowed: a count that makes them a multiple of ep (the fewest: {priced})"
        )
    held = "" if engine.get("expert_balancer") == "eplb" else (
        "; no load balancer named: the balance priced is the engine's")  # fmt: skip
    if copies == priced:
        note(src, f"checked: {e + copies} expert slots, the fewest ep={ep} divides{held}")
    else:
        note(src, f"{e + copies} expert slots: the plan prices the fewest ep={ep} divides, "
                  f"{e + priced}; the other {copies - priced} copies' weights are not counted "
                  f"(specs.plan.expert_slots){held}")  # fmt: skip


# the settings that state a count of copies (``expert_copies``; the last one stated wins)
COUNTS = ("redundant_experts", "eplb_config", "expert_slots")


def _names_balancer(s: Setting) -> bool:
    """Whether a TensorRT-LLM ``moe_config.load_balancer`` configures one: a mapping with keys
    or a file path; empty is none; any other form is an error naming the allowed ones."""
    if isinstance(s.value, dict):
        return bool(s.value)
    if s.value is None or (isinstance(s.value, str) and not s.value.strip()):
        return False
    if isinstance(s.value, str):
        return True
    raise SpecError(f"{s.origin}: allowed: a mapping (num_slots, layer_updates_per_iter) or a "
                    "file path")  # fmt: skip


def _stated_copies(s: Setting, kind: str, experts: int) -> int:
    """The redundant copies a setting states (``expert_copies``)."""
    if kind == "redundant_experts":
        return as_int(s, lo=0)
    if kind == "expert_slots":
        slots = as_int(s, lo=experts, unit=f"(at least the {experts} experts)")
        return slots - experts
    value = s.value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise SpecError(f"{s.origin}: not JSON ({exc}); allowed: a JSON object") from None
    if not isinstance(value, dict):
        raise SpecError(f"{s.origin}: allowed: a JSON object such as "
                        '{"num_redundant_experts": 32}')  # fmt: skip
    copies = value.get("num_redundant_experts", 0)
    return as_int(Setting(s.name, copies, s.origin), lo=0)
