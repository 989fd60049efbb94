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

from ..errors import SpecError
from .model import ModelSpec


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
        if self.tp % self.ep:
            raise SpecError(f"plan: ep={self.ep} must divide tp={self.tp} (MoE layers split the tp group as ep x moe_tp = tp)")
        if self.tp % self.cp:
            raise SpecError(f"plan: cp={self.cp} must divide tp={self.tp} (Helix shards attention over kv-parallel x tp-attention = tp)")
        if self.attention_dp and self.cp > 1:
            raise SpecError("plan: attention_dp and cp (Helix) are alternative attention layouts; choose one")

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
        """Raise SpecError with the failing arithmetic if this plan cannot run ``model``."""
        a = model.attention
        atp = self.attention_tp
        if a.num_heads % atp:
            raise SpecError(f"plan: attention tp={atp} does not divide num_attention_heads={a.num_heads} of {model.id}")
        if a.kind == "gqa" and atp > a.num_kv_heads and atp % a.num_kv_heads:
            raise SpecError(f"plan: attention tp={atp} exceeds num_kv_heads={a.num_kv_heads} and is not a multiple of it (KV heads cannot be replicated evenly)")
        if a.kind == "gqa" and atp < a.num_kv_heads and a.num_kv_heads % atp:
            raise SpecError(f"plan: tp={atp} does not divide num_kv_heads={a.num_kv_heads} of {model.id}")
        if self.pp > model.num_layers:
            raise SpecError(f"plan: pp={self.pp} exceeds the {model.num_layers} layers of {model.id}")
        if model.moe is None and self.ep > 1:
            raise SpecError(f"plan: ep={self.ep} but {model.id} is dense (no experts)")
        if model.moe is not None and model.moe.num_experts % self.ep:
            raise SpecError(f"plan: ep={self.ep} does not divide num_experts={model.moe.num_experts} of {model.id}")
        if model.moe is not None:
            width = model.moe.expert_intermediate
            if width % self.moe_tp:
                raise SpecError(f"plan: moe_tp = tp/ep = {self.tp}/{self.ep} = {self.moe_tp} does not divide the expert width {width}")
        if not self.attention_dp and model.intermediate_size % self.tp and model.num_moe_layers < model.num_layers:
            raise SpecError(f"plan: tp={self.tp} does not divide intermediate_size={model.intermediate_size} of {model.id}")
        if num_gpus_available is not None and self.num_gpus > num_gpus_available:
            raise SpecError(
                f"plan needs tp x pp x dp = {self.tp} x {self.pp} x {self.dp} = {self.num_gpus} GPUs but only {num_gpus_available} are available"
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
        return {"tp": self.tp, "pp": self.pp, "ep": self.ep, "dp": self.dp, "attention_dp": self.attention_dp, "cp": self.cp}
