"""The pool limits of InferenceX's disaggregated runs (``validate.recipes``: the recipe each run
named, ``INFERENCEX_DISAGG_LIMITS_FILE``): the recipe string of a row, and the prefill batch it
states (the decode batch and the prefill token budget are ``recipes.recipe_behaviour``'s)."""

from __future__ import annotations

import functools

from ..specs.engine import EXPERT_BALANCERS, EngineConstants, load_engine
from ..specs.hardware import HardwareSpec
from ..specs.plan import DisaggregatedPlan
from .campaigns import run_date, run_gpu_precision
from .conventions import data_parallel_tp
from .recipes import (
    DISAGG_RECIPE_A2A,
    INFERENCEX_AMD_DISAGG_FLAGS_FILE,
    INFERENCEX_DISAGG,
    INFERENCEX_DISAGG_LIMITS_FILE,
    INFERENCEX_DISAGG_SGLANG,
    INFERENCEX_DISAGG_SGLANG_MEMORY_FRACTION,
    disagg_recipe_fields,
)
from .tables import bundled_rows


@functools.cache
def _inferencex_disagg_limits() -> dict[tuple[object, ...], list[tuple]]:
    """Run key -> [(first date the master config named the recipe, decode batch, prefill
    batch, prefill tokens, recipe file, the decode and the prefill pool's MoE dispatch family
    or "", the decode pool's draft tokens or 0)] (``INFERENCEX_DISAGG_LIMITS_FILE``)."""
    out: dict[tuple[object, ...], list[tuple]] = {}
    for r in bundled_rows(INFERENCEX_DISAGG_LIMITS_FILE):
        pools = []
        for p in ("prefill", "decode"):
            tp, ep, adp = int(r[f"{p}_tp"]), int(r[f"{p}_ep"]), r[f"{p}_adp"] == "True"
            pools.append((int(r[f"{p}_workers"]), data_parallel_tp(tp, ep, adp), ep, adp))
        run = (r["model"], r["precision"], r["gpu"], r["framework"])
        lengths = (int(r["isl"]), int(r["osl"]), int(r["concurrency"]), r["spec"] == "mtp")
        limits = (
            int(r[k]) for k in ("decode_max_batch", "prefill_max_batch", "prefill_max_tokens")
        )
        out.setdefault((*run, *lengths, *pools), []).append(
            (
                r["first_seen"],
                *limits,
                r["config_file"],
                r["decode_moe_comm"],
                r["prefill_moe_comm"],
                int(r["decode_draft_tokens"] or 0),
            )
        )
    return out


def inferencex_disagg_recipe(
    row: dict[str, str], model_id: str, isl: int, osl: int, clients: int, spec: bool,
    pools: DisaggregatedPlan, hw: HardwareSpec | None = None,
) -> tuple[str, str, tuple[int, str]]:  # fmt: skip
    """(the recipe of an InferenceX disaggregated row, the mapping's note, (the decode pool's
    draft tokens, where from) or (0, "")): the pool limits of the recipe the master config named
    for that run (``INFERENCEX_DISAGG_LIMITS_FILE``; the version in force on the row's ``run
    date`` where its notes state one, else only where every version agrees), or ("", a note)
    where the table has none (the engine's own limits then; on an AMD GPU, ``hw``, the MoE
    flags InferenceX's AMD scripts passed the model that day: ``amd_recipe_fields``).

    Example (the H100 TensorRT-LLM run of 6 clients on 3 decode workers of one sequence each):
        >>> from llm_codesign.specs.plan import DisaggregatedPlan, ParallelPlan
        >>> pools = DisaggregatedPlan(ParallelPlan(tp=16, ep=16, attention_dp=True),
        ...     ParallelPlan(tp=16, ep=16), 1, 3)
        >>> row = {"gpu": "H100", "framework": "dynamo-trt (image)", "precision": "fp8/?/?",
        ...     "notes": "run date 2026-02-08"}
        >>> inferencex_disagg_recipe(row, "deepseek-r1", 1024, 1024, 6, False, pools)[0]
        'inferencex-disagg:decode=1:prefill=2:tokens=2048'
    """
    sides = [
        (n, p.tp, p.ep, p.attention_dp)
        for n, p in ((pools.prefill_workers, pools.prefill), (pools.decode_workers, pools.decode))
    ]
    words = row.get("framework", "").split()
    gpu, prec = run_gpu_precision(row)
    run = (model_id, prec, gpu, words[0].lower() if words else "")
    found = sorted(_inferencex_disagg_limits().get((*run, isl, osl, clients, spec, *sides), []))
    date = run_date(row)
    if date:  # the version in force that day
        found = [f for f in found if f[0] <= date][-1:]
    elif len({f[1:4] for f in found}) > 1:  # versions that disagree, and no date to choose
        found = []
    # an SGLang run's recipe set its memory fraction, which the table does not hold
    sglang = "sglang" in run[3]
    mem = f"; memory fraction {INFERENCEX_DISAGG_SGLANG_MEMORY_FRACTION}" if sglang else ""
    if not found:
        recipe, note = INFERENCEX_DISAGG_SGLANG if sglang else "", ""
        if sglang and hw is not None and hw.vendor == "amd":
            fields, note = amd_recipe_fields(amd_script_flags(model_id, date), sides)
            recipe += fields
        return (
            recipe,
            (
                f"no InferenceX recipe for these pools in {INFERENCEX_DISAGG_LIMITS_FILE}: the "
                f"engine's own batch limits{mem}{note} (validate.recipes)"
            ),
            (0, ""),
        )
    _, decode, prefill, tokens, path, comm, pcomm, drafts = found[-1]
    recipe = f"{INFERENCEX_DISAGG}:decode={decode}:prefill={prefill}:tokens={tokens}"
    note = (
        f"InferenceX recipe {path}: decode max batch {decode} per scheduling rank, prefill max "
        f"batch {prefill} per rank and {tokens} tokens{mem} (validate.recipes)"
    )
    for key, family, pool in (("a2a", comm, "decode"), ("pa2a", pcomm, "prefill")):
        if family:  # the pool's MoE dispatch family (recipes.DISAGG_RECIPE_A2A)
            recipe += f":{key}={DISAGG_RECIPE_A2A.index(family)}"
            note += f"; {pool} pool MoE dispatch {family}"
    return recipe, note, (drafts, f"the decode pool's, recipe {path}") if drafts else (0, "")


@functools.cache
def _amd_disagg_flags() -> tuple[dict[str, dict[str, list[tuple[str, ...]]]], str]:
    """(bundled model -> the scripts' model key -> [(first date, last date, dispatch family or
    "", SGLang's expert dispatch algorithm or "", the pools it reaches)], oldest first; the
    table's latest date) of InferenceX's AMD disaggregated scripts
    (``INFERENCEX_AMD_DISAGG_FLAGS_FILE``)."""
    out: dict[str, dict[str, list[tuple[str, ...]]]] = {}
    latest = ""
    for r in bundled_rows(INFERENCEX_AMD_DISAGG_FLAGS_FILE):
        runs = out.setdefault(r["model"], {}).setdefault(r["models_yaml_key"], [])
        runs.append((r["first_seen"], r["last_seen"], r["moe_a2a"], r["ep_dispatch"],
                     r["dispatch_pools"]))  # fmt: skip
        latest = max(latest, r["last_seen"])
    return {m: {k: sorted(v) for k, v in keys.items()} for m, keys in out.items()}, latest


def amd_script_flags(model_id: str, date: str) -> tuple[str, str, str] | None:
    """(the dispatch family of its DP-attention / EP pools or "", SGLang's expert dispatch
    algorithm or "", the pools that reaches: all, dp or ep) InferenceX's AMD disaggregated
    scripts passed ``model_id`` on a run of ``date``: each of the scripts' keys for that model
    in its version in force that day (a key the scripts dropped is in force to its last date)
    must agree; None where they do not, where no version was in force (before the scripts were
    in InferenceX's repository) or the row states no date (its run may be older).

    Example: amd_script_flags("deepseek-r1", "2026-03-23") -> ("mori", "fake", "all")."""
    table, latest = _amd_disagg_flags()
    said = set()
    for runs in table.get(model_id, {}).values() if date else ():
        in_force = [r for r in runs if r[0] <= date][-1:]
        for first, last, *flags in in_force:
            dropped = in_force[0] is runs[-1] and last < latest  # (the key left after `last`)
            if not (dropped and date > last):
                said.add(tuple(flags))
    return next(iter(said)) if len(said) == 1 else None


def amd_recipe_fields(
    flags: tuple[str, str, str] | None, sides: list[tuple[int, int, int, bool]]
) -> tuple[str, str]:
    """(the recipe fields, the note) of the MoE flags InferenceX's AMD scripts passed
    (``amd_script_flags``) on pools ``sides`` ((workers, tp, ep, attention-DP): prefill,
    decode): the dispatch family on each DP-attention EP pool (a2a=, pa2a=) and, where SGLang's
    fake expert dispatch reaches a pool (its logits replaced by noise: uniform routing), that
    pool's balancer uniform, the other pool's the engine's own (bal=, pbal=)."""
    if flags is None:
        return "", ""
    family, dispatch, reach = flags
    pools = list(zip(("pa2a", "a2a"), ("pbal", "bal"), sides, ("prefill", "decode")))
    fields, note = "", ""
    for a2a, _, (_, _, ep, adp), pool in pools:
        if family and adp and ep > 1:  # a DP-attention EP pool's backend
            fields += f":{a2a}={DISAGG_RECIPE_A2A.index(family)}"
            note += f"; {pool} pool MoE dispatch {family} (InferenceX's AMD scripts)"
    reached = [
        reach == "all" or (reach == "ep" and ep > 1) or (reach == "dp" and adp)
        for _, _, (_, _, ep, adp), _ in pools
    ]
    if dispatch != "fake" or not any(reached):
        return fields, note
    own = EXPERT_BALANCERS.index(load_engine("sglang").expert_balancer)
    for (_, bal, _, pool), uniform in zip(pools, reached):
        fields += f":{bal}={EXPERT_BALANCERS.index('uniform') if uniform else own}"
        note += f"; {pool} pool: --ep-dispatch-algorithm fake, uniform routing" if uniform else ""
    return fields, note


def disagg_prefill_batch(recipe: str) -> int | None:
    """The prefill pool's batch limit per scheduling rank an ``inferencex_disagg_recipe``
    states (None for any other recipe)."""
    name, _, rest = recipe.partition(":")
    if name != INFERENCEX_DISAGG:
        return None
    return int(disagg_recipe_fields(recipe, rest)["prefill"])


def disagg_prefill_engine(recipe: str, eng: EngineConstants) -> EngineConstants:
    """The engine of the prefill pool an ``inferencex_disagg_recipe`` describes: ``eng`` (the
    decode pool's, ``recipes.recipe_behaviour``) with the prefill pool's MoE dispatch family
    where the recipe states one (``pa2a``; a decode pool's alone: the engine's own) and its
    expert balancer where it states one (``pbal``)."""
    name, _, rest = recipe.partition(":")
    if name not in (INFERENCEX_DISAGG, INFERENCEX_DISAGG_SGLANG):
        return eng
    fields = disagg_recipe_fields(recipe, rest)
    if "pbal" in fields:
        eng = eng.with_overrides(expert_balancer=EXPERT_BALANCERS[int(fields["pbal"])])
    if "pa2a" in fields:
        return eng.with_overrides(moe_comm=DISAGG_RECIPE_A2A[int(fields["pa2a"])])
    # a decode pool's family the recipe states is not the prefill pool's: the engine's own
    return eng.with_overrides(moe_comm="auto") if "a2a" in fields else eng
