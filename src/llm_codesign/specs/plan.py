"""Parallelism plans with TensorRT-LLM semantics (DESIGN.md): GPUs per replica = tp x pp; MoE
layers split the tp group as ep x moe_tp = tp; ``attention_dp`` runs attention data-parallel over
the tp group; ``cp`` is Helix KV-parallel attention inside the tp group; dp counts replicas.

Plans validate themselves against a model and show the arithmetic that failed (STYLE.md 9).

Example:
    >>> ParallelPlan(tp=8, ep=8).num_gpus
    8
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from .hardware import HardwareSpec
from .model import ModelSpec

Array = np.ndarray


@dataclass(frozen=True)
class ParallelPlan:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    attention_dp: bool = False
    cp: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep", "dp", "cp"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"plan: {name} must be a positive integer, got {value!r}")
            if value > 1_000_000:
                raise SpecError(f"plan: {name}={value} is implausibly large")
        code = str(structural_reason(self.tp, self.ep, self.cp, self.attention_dp).item())
        if code:
            raise SpecError(f"plan: {explain_reason(code, None, self)}")

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def moe_tp(self) -> int:
        return self.tp // self.ep

    @property
    def attention_tp(self) -> int:
        """GPUs sharding attention heads: 1 under attention DP, tp/cp under Helix."""
        return 1 if self.attention_dp else self.tp // self.cp

    def validate_for(self, model: ModelSpec, num_gpus_available: int | None = None) -> None:
        """Raise SpecError with the failing arithmetic if this plan cannot run ``model``.

        The rules are :func:`plan_feasibility` (the vectorized sweeps use the same code)."""
        code = str(
            plan_feasibility(model, self.tp, self.pp, self.ep, self.attention_dp, self.cp).item()
        )
        if code:
            raise SpecError(f"plan: {explain_reason(code, model, self)}")
        if num_gpus_available is not None and self.num_gpus > num_gpus_available:
            raise SpecError(
                f"plan needs tp x pp x dp = {self.tp} x {self.pp} x {self.dp} = {self.num_gpus} "
                f"GPUs but only {num_gpus_available} are available"
            )

    def label(self) -> str:
        parts = [f"TP{self.tp}"]
        if self.pp > 1:
            parts.append(f"PP{self.pp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.attention_dp:
            parts.append(f"attnDP{self.tp}")
        if self.cp > 1:
            parts.append(f"Helix{self.cp}")
        if self.dp > 1:
            parts.append(f"DP{self.dp}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, int | bool]:
        return {
            "tp": self.tp,
            "pp": self.pp,
            "ep": self.ep,
            "dp": self.dp,
            "attention_dp": self.attention_dp,
            "cp": self.cp,
        }


@dataclass(frozen=True)
class DisaggregatedPlan:
    """Disaggregated serving: ``prefill_workers`` workers of plan ``prefill`` (each batching
    ``prefill_batch`` prompts) feed ``decode_workers`` workers of plan ``decode`` over a KV
    transfer. GPUs = x g_p + y g_d (each plan's dp is ignored: the worker counts replace it).

    Example:
        >>> p = DisaggregatedPlan(ParallelPlan(tp=4), ParallelPlan(tp=8), 2, 1)
        >>> p.num_gpus, p.label()
        (16, 'disagg 2x[TP4] : 1x[TP8]')
    """

    prefill: ParallelPlan
    decode: ParallelPlan
    prefill_workers: int = 1
    decode_workers: int = 1
    prefill_batch: int = 1

    def __post_init__(self) -> None:
        for name in ("prefill_workers", "decode_workers", "prefill_batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
                raise SpecError(f"plan: {name} must be an integer in 1..1,000,000, got {value!r}")

    @property
    def prefill_gpus(self) -> int:
        return self.prefill_workers * self.prefill.gpus_per_replica

    @property
    def decode_gpus(self) -> int:
        return self.decode_workers * self.decode.gpus_per_replica

    @property
    def num_gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    def validate_for(self, model: ModelSpec) -> None:
        """Both plans must run ``model`` (the failing arithmetic names the pool)."""
        for role, plan in (("prefill", self.prefill), ("decode", self.decode)):
            try:
                plan.validate_for(model)
            except SpecError as exc:
                raise SpecError(f"{role} {exc}") from None

    def axes(self, role: str) -> dict[str, int | bool]:
        """The ``prefill`` or ``decode`` plan's axes as keyword arguments (tp, pp, ep, cp,
        attention_dp)."""
        p = self.prefill if role == "prefill" else self.decode
        return {"tp": p.tp, "pp": p.pp, "ep": p.ep, "cp": p.cp, "attention_dp": p.attention_dp}

    def label(self) -> str:
        return (
            f"disagg {self.prefill_workers}x[{self.prefill.label()}] : "
            f"{self.decode_workers}x[{self.decode.label()}]"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "prefill": self.prefill.to_dict(),
            "decode": self.decode.to_dict(),
            "prefill_workers": self.prefill_workers,
            "decode_workers": self.decode_workers,
            "prefill_batch": self.prefill_batch,
        }


# ---------------------------------------------------------------------------------------------
# The plan rules: one vectorized definition; ParallelPlan.validate_for is the scalar call
# ---------------------------------------------------------------------------------------------

# reason code -> the arithmetic that failed (``explain_reason``)
PLAN_REASONS = (
    "ep_not_dividing_tp",
    "cp_not_dividing_tp",
    "attention_dp_with_cp",
    "tp_not_dividing_heads",
    "tp_not_dividing_o_groups",
    "tp_exceeds_kv_heads_unevenly",
    "tp_not_dividing_kv_heads",
    "pp_exceeds_layers",
    "ep_on_dense_model",
    "moe_tp_not_dividing_expert_width",
    "tp_not_dividing_ffn",
    "tp_not_dividing_linear_heads",
    "engine_moe_ep_all_or_none",
)


def structural_reason(
    tp: Array | int, ep: Array | int, cp: Array | int, attention_dp: Array | bool
) -> Array:
    """The plan rules that need no model: ep and cp divide tp; attention-DP and Helix are
    alternatives. '' where they hold, else the first failing rule's code."""
    tp, ep, cp = (np.asarray(v, dtype=np.int64) for v in (tp, ep, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    shape = np.broadcast(tp, ep, cp, adp).shape
    reason = np.full(shape, "", dtype=object)
    reason = np.where(
        np.broadcast_to(tp % np.maximum(ep, 1) != 0, shape), "ep_not_dividing_tp", reason
    )
    bad_cp = (reason == "") & np.broadcast_to(tp % np.maximum(cp, 1) != 0, shape)
    reason = np.where(bad_cp, "cp_not_dividing_tp", reason)
    both = (reason == "") & np.broadcast_to(adp & (cp > 1), shape)
    return np.where(both, "attention_dp_with_cp", reason)


def expert_slots(num_experts: int, ep: Array | int) -> Array:
    """The expert slots an EP group of ``ep`` ranks holds: the ``num_experts`` where ep divides
    them, else the fewest multiple of ep above them, the rest redundant copies of experts.
    Engines split the slots evenly over the EP ranks and place copies beyond the experts through
    their load balancer: TensorRT-LLM's ``moe_config.load_balancer.num_slots`` (wide-EP guide:
    288 slots for DeepSeek-R1's 256 experts), SGLang's ``--ep-num-redundant-experts`` and vLLM's
    ``--num-redundant-experts`` under ``--enable-eplb`` (physical = logical + redundant experts,
    a multiple of the EP size). InferenceX's GB200/GB300 recipes run DeepSeek-R1 at EP 24, 40,
    48 and 56 (configs/deprecated/nvidia-1k1k-master.yaml); DeepSeek's own decode ran EP 144
    with 32 redundant experts (moe-comm.md).

    Example:
        >>> expert_slots(256, np.array([8, 48, 72, 144, 512])).tolist()
        [256, 288, 288, 288, 512]
    """
    ep = np.maximum(np.asarray(ep, dtype=np.int64), 1)
    return -(-int(num_experts) // ep) * ep


def redundant_experts(model: ModelSpec, ep: int) -> int:
    """Redundant expert copies an EP group of ``ep`` ranks holds (:func:`expert_slots` less the
    experts; 0 for a dense model): what a launch sets (TensorRT-LLM's ``num_slots`` = experts +
    this, SGLang's ``--ep-num-redundant-experts``, vLLM's ``num_redundant_experts``)."""
    if model.moe is None:
        return 0
    return int(expert_slots(model.moe.num_experts, ep)) - model.moe.num_experts


def expert_slots_note(
    model: ModelSpec, plan: ParallelPlan | DisaggregatedPlan, balancer: str
) -> list[str]:
    """An estimate's notes where an EP group holds redundant copies of experts
    (:func:`expert_slots`; a disaggregated plan's pools each): the slots, the copies, their
    weights, and the balance priced (the engine's ``balancer``: the copies do not change it, so
    plans compare at one balance)."""
    if model.moe is None:
        return []
    e = model.moe.num_experts
    pools = [("", plan)] if isinstance(plan, ParallelPlan) else [
        ("prefill pool: ", plan.prefill), ("decode pool: ", plan.decode)]  # fmt: skip
    out = []
    for label, p in pools:
        extra = redundant_experts(model, p.ep)
        if not extra:
            continue
        out.append(
            f"{label}the {e} experts of {model.id} do not split evenly over ep={p.ep}: the EP "
            f"group holds {e + extra} expert slots ({(e + extra) // p.ep} a rank), {extra} of "
            "them redundant "
            "copies, which the engines place through their load balancer (TensorRT-LLM's "
            "num_slots, SGLang's --ep-num-redundant-experts, vLLM's num_redundant_experts with "
            f"--enable-eplb): expert weights x{(e + extra) / e:.4g} a GPU; the ranks' imbalance "
            f"priced is the engine's expert_balancer {balancer!r}, as for any plan "
            "(specs.plan.expert_slots)"
        )
    return out


def plan_feasibility(
    model: ModelSpec,
    tp: Array | int,
    pp: Array | int,
    ep: Array | int,
    attention_dp: Array | bool,
    cp: Array | int,
    partial_ep: bool = True,
) -> Array:
    """The model rules of a plan, broadcast over arrays: '' where the plan can run ``model``,
    else the first failing rule's code (one of ``PLAN_REASONS``). ``partial_ep``: the engine
    can split MoE layers as ep x moe_tp with 1 < ep < tp (``EngineConstants.moe_partial_ep``).

    Example:
        >>> from llm_codesign.specs.model import load_model
        >>> plan_feasibility(load_model("llama-3.1-8b"), np.array([4, 16]), 1, 1, False, 1).tolist()
        ['', 'tp_exceeds_kv_heads_unevenly']
    """
    tp, pp, ep, cp = (np.asarray(v, dtype=np.int64) for v in (tp, pp, ep, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    a = model.attention
    shape = np.broadcast(tp, pp, ep, adp, cp).shape
    reason = np.broadcast_to(structural_reason(tp, ep, cp, adp), shape).copy()
    safe_ep, safe_cp = np.maximum(ep, 1), np.maximum(cp, 1)
    atp = np.where(adp, 1, tp // safe_cp)

    def mark(cond: Array | bool, why: str) -> None:
        nonlocal reason
        reason = np.where((reason == "") & np.broadcast_to(cond, shape), why, reason)

    mark(a.num_heads % np.maximum(atp, 1) != 0, "tp_not_dividing_heads")
    if a.o_groups:  # DeepSeek-V4's grouped output: whole groups a rank (vLLM n_local_groups)
        mark(a.o_groups % np.maximum(atp, 1) != 0, "tp_not_dividing_o_groups")
    if a.kind == "gqa":
        kvh = a.num_kv_heads
        mark((atp > kvh) & (atp % kvh != 0), "tp_exceeds_kv_heads_unevenly")
        mark((atp < kvh) & (kvh % np.maximum(atp, 1) != 0), "tp_not_dividing_kv_heads")
    mark(pp > model.num_layers, "pp_exceeds_layers")
    if model.moe is None:
        mark(ep > 1, "ep_on_dense_model")
    else:
        moe_tp = np.maximum(tp // safe_ep, 1)
        mark(model.moe.expert_intermediate % moe_tp != 0, "moe_tp_not_dividing_expert_width")
        if not partial_ep:
            mark(partial_moe_ep(tp, ep), "engine_moe_ep_all_or_none")
    if model.num_moe_layers < model.num_layers:  # dense FFN layers split over tp (not under DP)
        mark(~adp & (model.intermediate_size % np.maximum(tp, 1) != 0), "tp_not_dividing_ffn")
    lin = model.linear_attention
    if lin is not None:  # recurrent (Gated DeltaNet) heads split over the attention tp
        heads_ok = (lin.num_k_heads % np.maximum(atp, 1) == 0) & (
            lin.num_v_heads % np.maximum(atp, 1) == 0
        )
        mark(~heads_ok, "tp_not_dividing_linear_heads")
    return reason


def partial_moe_ep(tp: Array | int, ep: Array | int) -> Array:
    """MoE layers split as ep x moe_tp with both above 1 (1 < ep < tp): what an engine with
    ``moe_partial_ep`` false cannot run."""
    return (np.asarray(ep) > 1) & (np.asarray(ep) < np.asarray(tp))


def explain_reason(
    code: str, model: ModelSpec | None, plan: ParallelPlan, engine: str = "this engine"
) -> str:
    """The arithmetic behind a ``plan_feasibility`` reason code, for one plan (``model`` may be
    None for the structural rules; ``engine``: the engine an engine's rule names)."""
    if model is None:
        structural = {
            "ep_not_dividing_tp": f"ep={plan.ep} must divide tp={plan.tp} (MoE layers split the "
            "tp group as ep x moe_tp = tp)",
            "cp_not_dividing_tp": f"cp={plan.cp} must divide tp={plan.tp} (Helix shards attention "
            "over kv-parallel x tp-attention = tp)",
            "attention_dp_with_cp": "attention_dp and cp (Helix) are alternative attention "
            "layouts; choose one",
        }
        return structural.get(code, code)
    a, moe = model.attention, model.moe
    atp = plan.attention_tp if plan.tp % plan.cp == 0 else plan.tp
    messages = {
        "tp_not_dividing_heads": f"attention tp={atp} does not divide "
        f"num_attention_heads={a.num_heads} of {model.id}",
        "tp_not_dividing_o_groups": f"attention tp={atp} does not divide o_groups="
        f"{a.o_groups} of {model.id} (each rank runs whole output groups)",
        "tp_exceeds_kv_heads_unevenly": f"attention tp={atp} exceeds num_kv_heads="
        f"{a.num_kv_heads} and is not a multiple of it (KV heads cannot be replicated evenly)",
        "tp_not_dividing_kv_heads": f"tp={atp} does not divide num_kv_heads={a.num_kv_heads} "
        f"of {model.id}",
        "pp_exceeds_layers": f"pp={plan.pp} exceeds the {model.num_layers} layers of {model.id}",
        "ep_on_dense_model": f"ep={plan.ep} but {model.id} is dense (no experts)",
        "moe_tp_not_dividing_expert_width": f"moe_tp = tp/ep = {plan.tp}/{plan.ep} = "
        f"{max(plan.tp // plan.ep, 1)} does not divide the expert width "
        f"{moe.expert_intermediate if moe else 0}",
        "tp_not_dividing_ffn": f"tp={plan.tp} does not divide intermediate_size="
        f"{model.intermediate_size} of {model.id}",
        "engine_moe_ep_all_or_none": f"{engine} runs MoE experts either all expert-parallel "
        f"or all tensor-parallel over the tp={plan.tp} ranks: ep must be 1 or {plan.tp}, got "
        f"ep={plan.ep}",
        "tp_not_dividing_linear_heads": f"attention tp={atp} does not divide the linear-"
        f"attention heads of {model.id} (key heads "
        f"{model.linear_attention.num_k_heads if model.linear_attention else 0}, value heads "
        f"{model.linear_attention.num_v_heads if model.linear_attention else 0})",
    }
    return messages.get(code) or explain_reason(code, None, plan)


NO_SCALEOUT_NETWORK = "no_scaleout_network"


def crosses_domain_without_network(hw: HardwareSpec, gpus: Array | int) -> Array:
    """True where a group of ``gpus`` GPUs spans more than one scale-up (NVLink) domain of
    ``hw`` and the hardware file gives no scale-out bandwidth to connect them."""
    if hw.scaleout_bytes_per_s > 0:
        return np.zeros(np.shape(gpus), dtype=bool)
    return np.asarray(gpus) > hw.scaleup_domain_size
