"""Predictions for mapped rows, grouped by (model, GPU, precision, engine) and vectorized.

Serving modes:
  * ``concurrency``: a known client concurrency (closed loop) -> serving.evaluate;
  * ``static``: TensorRT-LLM <= v0.9 static batch -> serving.evaluate_static;
  * ``offline``: max-throughput runs with unknown concurrency -> the best prediction over the
    concurrencies that fit in memory (SOURCES.md caveat 1), at most ``OFFLINE_MAX_BATCH``;
  * ``rate``: open-loop request rate -> the concurrency whose throughput equals the rate
    (Little's law on the closed-loop curve); "INF" = offline;
  * ``disaggregated``: x prefill and y decode workers at a client concurrency ->
    serving.evaluate_disaggregated (``disaggregated_inputs``; conventions in ``conventions``).

Request-rate rows (Poisson at the offered rate, or INF: a burst) and percentile metrics go to
the request simulator instead (``validate.simulated``).

Rows with MTP pass their draft length and acceptance to serving.evaluate (``spec_tokens``,
``spec_acceptance``); static batches have no speculative-decoding model.

Each distinct input is priced once: rows that differ only in their metric, their GPU count or
(offline / rate) their load share one evaluation (``_distinct``), and ``price_key`` names
everything a row's prediction depends on, so callers can remember predictions across calls.
The serving functions price every configuration on its own (elementwise), so this changes no
number.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CodesignError
from ..explore import POINTS_PER_OCTAVE, concurrency_grid
from ..report.launch_data import gpus_per_node
from ..serving import evaluate, evaluate_disaggregated, evaluate_static
from ..serving.memory import rank_token_budget, scheduling_ranks
from ..specs.engine import EngineConstants, check_engine_runs_on, load_engine
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec, load_hardware
from ..specs.model import load_model
from ..specs.precision import parse_precision
from .conventions import throughput_metric, throughput_value
from .disagg_recipes import disagg_prefill_batch, disagg_prefill_engine
from .mapping import MappedRow, metric_class
from .recipes import TRTLLM_BENCH, recipe_behaviour, recipe_engine
from .simulated import predict_simulated, simulated

OFFLINE_MAX_BATCH = 4096  # trtllm-bench caps max_batch_size well below this; the grid stops here
# the sweeps' geometric grid (explore.grid), 4 points per doubling up to OFFLINE_MAX_BATCH
CONCURRENCY_GRID = concurrency_grid(np.array([OFFLINE_MAX_BATCH]), POINTS_PER_OCTAVE)[1]


def _metric_value(
    metric: str,
    per_gpu_out: Array,
    per_gpu_total: Array,
    ttft: Array,
    tpot: Array,
    gpus: Array,
    osl: Array | float,
    node_gpus: float,
) -> Array:
    if metric == "request_latency_ms":  # first token, then OSL - 1 decode steps
        return (ttft + np.maximum(np.asarray(osl, dtype=float) - 1.0, 0.0) * tpot) * 1e3
    if throughput_metric(metric):
        return throughput_value(metric, per_gpu_out, per_gpu_total - per_gpu_out, gpus, node_gpus)
    if metric == "ttft_ms":
        return ttft * 1e3
    if metric in ("tpot_ms", "itl_ms"):
        return tpot * 1e3
    if metric == "tok_s_per_user":
        return 1.0 / tpot
    raise AssertionError(metric)


Array = np.ndarray


def price_key(r: MappedRow) -> tuple[Any, ...]:
    """Everything ``predict_rows`` reads from a row: rows with equal keys get equal predictions
    and notes (the row's index, source, measured value and mapping note play no part)."""
    return (
        r.model,
        r.hardware,
        r.precision,
        r.engine,
        r.spec_tokens,
        r.spec_acceptance,
        r.mode,
        r.tp,
        r.pp,
        r.ep,
        r.attention_dp,
        r.isl,
        r.osl,
        r.load,
        r.metric,
        r.metric_gpus,
        r.pools,
        r.arrival,
        r.offered_rate,
        r.requests,
        r.recipe,
        r.mean_isl,
        r.mean_osl,
        r.burst_share,
    )


def _distinct(keys: list[Any]) -> tuple[list[int], np.ndarray]:
    """The first position of each distinct key (in order of appearance) and, for every
    position, the index of its key among them: ``keys[i] == keys[first[inverse[i]]]``."""
    slot: dict[Any, int] = {}
    first: list[int] = []
    inverse = np.empty(len(keys), dtype=np.int64)
    for i, k in enumerate(keys):
        j = slot.get(k)
        if j is None:
            j = slot[k] = len(first)
            first.append(i)
        inverse[i] = j
    return first, inverse


def disaggregated_inputs(r: MappedRow, eng: EngineConstants) -> dict[str, Any]:
    """Keyword arguments of ``serving.evaluate_disaggregated`` for one disaggregated row: the
    client concurrency C spread over the y decode workers (C / y each; with fewer clients than
    workers, C busy workers of one sequence each: a sequence's step is never a fraction of one,
    and the idle workers still count in the per-GPU metrics, see ``_predict_disaggregated``),
    and prefill batches of max_num_tokens // ISL prompts per scheduling rank (at least 1, at
    most the recipe's prefill batch per rank where the row names one,
    ``validate.disagg_recipes``, and the ceil(C / x) the clients can have outstanding per
    prefill worker)."""
    p = r.pools
    assert p is not None
    prefill = p.axes("prefill")
    # each scheduling rank of a prefill worker admits its token budget // ISL prompts
    ranks = int(scheduling_ranks(np.asarray(prefill["tp"]), np.asarray(prefill["attention_dp"])))
    budget = ranks * max(1, int(rank_token_budget(eng, ranks) // r.served_isl))
    if (cap := disagg_prefill_batch(r.recipe)) is not None:  # the recipe's prefill batch
        budget = min(budget, ranks * cap)
    outstanding = max(1, int(np.ceil(r.load / p.prefill_workers)))
    busy = min(float(p.decode_workers), max(r.load, 1.0))
    return {
        "prefill_plan": p.axes("prefill"),
        "decode_plan": p.axes("decode"),
        "prefill_count": p.prefill_workers,
        "decode_count": busy,
        "prefill_batch": min(budget, outstanding),
        "concurrency": r.load / busy,
        "isl": r.served_isl,
        "osl": r.served_osl,
    }


def _predict_disaggregated(
    model: Any,
    hw: HardwareSpec,
    prec: Any,
    eng: EngineConstants,
    rs: list[MappedRow],
    spec: dict[str, Any],
    node: float,
) -> tuple[list[float], list[str]]:
    """Predictions (NaN + reason where infeasible) of disaggregated rows, one ISL/OSL pair per
    call (evaluate_disaggregated takes scalar lengths), each distinct (pools, load) priced once,
    plans and counts vectorized; ``node``: the GPUs one node holds (per-node metrics)."""
    preds, notes = [float("nan")] * len(rs), [""] * len(rs)
    by_len: dict[tuple[int, int], list[int]] = {}
    for k, r in enumerate(rs):
        by_len.setdefault((r.served_isl, r.served_osl), []).append(k)
    for (isl, osl), ks in by_len.items():
        if osl < 2:
            for k in ks:
                notes[k] = "disaggregated serving needs osl >= 2"
            continue
        first, inv = _distinct([(rs[k].pools, rs[k].load) for k in ks])
        ins = [disaggregated_inputs(rs[ks[i]], eng) for i in first]

        def col(f: Any, ins: list[dict[str, Any]] = ins) -> np.ndarray:
            return np.array([f(d) for d in ins])

        plans = {
            side: {
                key: col(lambda d, side=side, key=key: d[side][key])
                for key in ("tp", "pp", "ep", "cp", "attention_dp")
            }
            for side in ("prefill_plan", "decode_plan")
        }
        out = evaluate_disaggregated(
            model,
            hw,
            prec,
            eng,
            prefill_engine=disagg_prefill_engine(rs[0].recipe, eng),  # one recipe a group
            **plans,
            prefill_count=col(lambda d: d["prefill_count"]),
            decode_count=col(lambda d: d["decode_count"]),
            prefill_batch=col(lambda d: d["prefill_batch"]),
            concurrency=col(lambda d: d["concurrency"]),
            isl=isl,
            osl=osl,
            **spec,
        )
        for k, i in zip(ks, inv.tolist()):
            r = rs[k]
            if not out.feasible[i]:
                notes[k] = str(out.reason[i])
                continue
            # per-GPU metrics over the GPUs the row divides by (all, or the decode pool's; idle
            # decode workers included)
            # (a pool's own rate divides by that pool: prompts by the prefill GPUs, output by
            # the decode GPUs)
            total_gpus = float(out.num_gpus[i])
            kind = (throughput_metric(r.metric) or ("", ""))[0]
            gpus = {"prefill": r.pools.prefill_gpus, "decode": r.pools.decode_gpus}.get(
                kind, r.metric_gpus
            )
            preds[k] = float(
                _metric_value(
                    r.metric,
                    out.output_tok_s_per_gpu[i] * total_gpus / gpus,
                    out.total_tok_s_per_gpu[i] * total_gpus / gpus,
                    out.ttft_s[i],
                    out.tpot_s[i],
                    gpus,
                    osl,
                    node,
                )
            )
    return preds, notes


def _predict_recipe_offline(
    model: Any,
    hw: HardwareSpec,
    prec: Any,
    eng: EngineConstants,
    rs: list[MappedRow],
    spec: dict[str, Any],
    node: float,
) -> tuple[list[float], list[str]]:
    """Offline rows whose benchmark chose its own engine limits (``MappedRow.recipe``,
    ``validate.recipes``): each priced with those limits at the benchmark's request count,
    all issued at once (a closed loop of that many clients; those beyond the batch queue), or
    at the full batch of every rank where the row states no count. Rows sharing limits are
    priced in one call."""
    preds, notes = [float("nan")] * len(rs), [""] * len(rs)
    groups: dict[EngineConstants, list[int]] = {}
    for k, r in enumerate(rs):
        e = recipe_engine(r.recipe, eng, model, hw, prec, r.tp, r.pp, r.isl, r.osl)
        groups.setdefault(e, []).append(k)
    keys = [(r.tp, r.pp, r.ep, r.attention_dp, r.isl, r.osl, r.requests) for r in rs]
    for e, ks in groups.items():
        first, inv = _distinct([keys[k] for k in ks])
        us = [rs[ks[i]] for i in first]

        def a(f: Any, us: list[MappedRow] = us) -> np.ndarray:
            return np.array([f(r) for r in us])

        full = e.max_batch_size * scheduling_ranks(a(lambda r: r.tp), a(lambda r: r.attention_dp))
        clients = np.where(a(lambda r: r.requests) > 0, a(lambda r: r.requests), full)
        out = evaluate(
            model,
            hw,
            prec,
            e,
            tp=a(lambda r: r.tp),
            pp=a(lambda r: r.pp),
            ep=a(lambda r: r.ep),
            attention_dp=a(lambda r: r.attention_dp),
            isl=a(lambda r: r.isl),
            osl=a(lambda r: r.osl),
            concurrency=clients,
            benchmark_burst=True,
            **spec,
        )
        for k, i in zip(ks, inv.tolist()):
            r = rs[k]
            if not out.feasible[i]:
                notes[k] = str(out.reason[i])
                continue
            preds[k] = float(
                _metric_value(
                    r.metric,
                    out.output_tok_s_per_gpu[i],
                    out.total_tok_s_per_gpu[i],
                    out.ttft_s[i],
                    out.tpot_s[i],
                    r.metric_gpus,
                    r.osl,
                    node,
                )
            )
            bench = r.recipe.partition(":")[0]
            notes[k] = (
                f"{bench} limits: max_batch_size {e.max_batch_size}, max_num_tokens "
                f"{e.max_num_tokens} per rank; {int(clients[i])} requests"
            )
    return preds, notes


def predict_rows(
    rows: list[MappedRow],
    engines: dict[str, EngineConstants] | None = None,
    engine_override: EngineConstants | None = None,
    hw_override: dict[str, HardwareSpec] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Predictions for mapped rows (NaN + reason where infeasible), grouped and vectorized;
    each distinct serving input is evaluated once, whatever the metrics asked of it."""
    preds = np.full(len(rows), np.nan)
    notes = [""] * len(rows)
    groups: dict[tuple[str, str, str, str, int, float, str], list[int]] = {}
    for j, r in enumerate(rows):
        # a recipe's scheduler settings apply to its rows alone (``validate.recipes``)
        how = "" if r.recipe == TRTLLM_BENCH else r.recipe
        key = (r.model, r.hardware, r.precision, r.engine, r.spec_tokens, r.spec_acceptance, how)
        groups.setdefault(key + (r.burst_share,), []).append(j)
    for (mid, hid, pid, eid, k_spec, a_spec, how, wave), idx in groups.items():
        model = load_model(mid)
        hw = (hw_override or {}).get(hid) or load_hardware(hid)
        prec = parse_precision(pid)
        eng = engine_override or (engines or {}).get(eid) or load_engine(eid)
        eng = for_gpu(recipe_behaviour(how, eng), hw)  # (the runtime's limits on this GPU)
        if wave >= 0.0:  # the client's own start-up share (MappedRow.burst_share)
            eng = eng.with_overrides(ttft_burst=wave)
        spec = {"spec_tokens": int(k_spec), "spec_acceptance": float(a_spec)}
        try:
            check_engine_runs_on(eng.id, hw)
            _predict_group(rows, idx, model, hw, prec, eng, spec, preds, notes)
        except CodesignError as err:
            # one group's inputs the model refuses (a plan the GPU cannot hold, a format it
            # cannot run): its rows are counted with the reason; the other rows are priced
            for j in idx:
                if not np.isfinite(preds[j]) and not notes[j]:
                    notes[j] = f"not priced: {err}"
    return preds, notes


def _predict_group(
    rows: list[MappedRow],
    idx: list[int],
    model: Any,
    hw: HardwareSpec,
    prec: Any,
    eng: EngineConstants,
    spec: dict[str, Any],
    preds: np.ndarray,
    notes: list[str],
) -> None:
    """Price the rows ``idx`` of one (model, GPU, precision, engine, speculation) group into
    ``preds`` and ``notes`` (``predict_rows``)."""
    node = float(gpus_per_node(hw))  # per-node metrics: the GPUs one node holds
    # request-rate rows, percentile metrics, InferenceX's closed loops and closed loops under
    # the attention-DP balance: the request simulator
    sim = [j for j in idx if simulated(rows[j], eng)]
    if sim:
        vals, why, back = predict_simulated(model, hw, prec, eng, [rows[j] for j in sim], spec)
        for j, v, n in zip(sim, vals, why):
            preds[j], notes[j] = v, n
        # (a closed loop whose run thrashed: the analytic loop below prices it, its note kept)
        taken = {j for j, b in zip(sim, back) if not b}
        idx = [j for j in idx if j not in taken]
    # offline rows of a benchmark recipe: its own engine limits and request count
    rec = [j for j in idx if rows[j].mode == "offline" and rows[j].recipe]
    if rec:
        vals, why = _predict_recipe_offline(
            model, hw, prec, eng, [rows[j] for j in rec], spec, node
        )
        for j, v, n in zip(rec, vals, why):
            preds[j], notes[j] = v, n
        done = set(rec)
        idx = [j for j in idx if j not in done]
    sub = [rows[j] for j in idx]
    for mode in ("concurrency", "static", "offline", "rate", "disaggregated"):
        js = [j for j, r in zip(idx, sub) if r.mode == mode]
        if not js:
            continue
        rs = [rows[j] for j in js]
        if mode == "disaggregated":
            vals, why = _predict_disaggregated(model, hw, prec, eng, rs, spec, node)
            for j, v, n in zip(js, vals, why):
                preds[j], notes[j] = v, n
            continue
        if mode == "static" and spec["spec_tokens"]:
            for j in js:
                notes[j] = "speculative decoding is not modelled for static batches"
            continue
        # the serving inputs; offline and rate rows share a concurrency grid whatever
        # their load (the rate picks its point on the grid afterwards)
        grid = mode in ("offline", "rate")
        first, u = _distinct(
            [
                (r.tp, r.pp, r.ep, r.attention_dp, r.served_isl, r.served_osl)
                + (() if grid else (r.load,))
                for r in rs
            ]
        )
        us = [rs[i] for i in first]

        def a(f: Any, rs: list[MappedRow] = us) -> np.ndarray:
            return np.array([f(r) for r in rs])

        tp, pp, ep, adp = (
            a(lambda r: r.tp),
            a(lambda r: r.pp),
            a(lambda r: r.ep),
            a(lambda r: r.attention_dp),
        )
        isl, osl = a(lambda r: r.served_isl), a(lambda r: r.served_osl)
        # per row (the GPU count is not a serving input)
        gpus, osl_row = a(lambda r: r.metric_gpus, rs), osl[u]
        plan = dict(tp=tp, pp=pp, ep=ep, attention_dp=adp, isl=isl, osl=osl)
        if mode == "static":
            out = evaluate_static(model, hw, prec, eng, **plan, batch=a(lambda r: r.load))
            values = {
                m: _metric_value(
                    m,
                    out["output_tok_s_per_gpu"][u],
                    out["total_tok_s_per_gpu"][u],
                    out["ttft_s"][u],
                    out["tpot_s"][u],
                    gpus,
                    osl_row,
                    node,
                )
                for m in {r.metric for r in rs}
            }
            for k, (j, r, i) in enumerate(zip(js, rs, u.tolist())):
                if out["feasible"][i]:
                    preds[j] = values[r.metric][k]
                else:
                    notes[j] = str(out["reason"][i])
            continue
        if mode == "concurrency":
            out = evaluate(
                model,
                hw,
                prec,
                eng,
                **plan,
                concurrency=a(lambda r: r.load),
                benchmark_burst=True,
                **spec,
            )
            for k, (j, r, i) in enumerate(zip(js, rs, u.tolist())):
                v = _metric_value(
                    r.metric,
                    out.output_tok_s_per_gpu[i],
                    out.total_tok_s_per_gpu[i],
                    out.ttft_s[i],
                    out.tpot_s[i],
                    gpus[k],
                    osl_row[k],
                    node,
                )
                if out.feasible[i]:
                    preds[j] = float(v)
                else:
                    notes[j] = str(out.reason[i])
            continue
        # offline / rate: a concurrency grid per distinct input
        g = CONCURRENCY_GRID[CONCURRENCY_GRID <= eng.max_batch_size][None, :]
        out = evaluate(
            model,
            hw,
            prec,
            eng,
            tp=tp[:, None],
            pp=pp[:, None],
            ep=ep[:, None],
            attention_dp=adp[:, None],
            isl=isl[:, None],
            osl=osl[:, None],
            concurrency=g,
            benchmark_burst=mode == "offline",
            **spec,
        )
        thr = np.where(out.feasible, out.output_tok_s_per_gpu, -np.inf)
        for k, (j, r, i) in enumerate(zip(js, rs, u.tolist())):
            if not np.any(np.isfinite(thr[i])):
                notes[j] = str(out.reason[i, 0])
                continue
            if mode == "offline":
                b = int(np.argmax(thr[i]))
            else:
                req_rate = out.output_tok_s_per_gpu[i] * r.tp * r.pp / r.osl
                ok = np.where(out.feasible[i] & (req_rate >= r.load * 0.999))[0]
                b = int(ok[0]) if len(ok) else int(np.argmax(thr[i]))
                if len(ok) == 0:
                    notes[j] = "rate above predicted capacity (saturated)"
            v = _metric_value(
                r.metric,
                out.output_tok_s_per_gpu[i, b],
                out.total_tok_s_per_gpu[i, b],
                out.ttft_s[i, b],
                out.tpot_s[i, b],
                gpus[k],
                osl_row[k],
                node,
            )
            if mode == "rate" and metric_class(r.metric) == "throughput" and not notes[j]:
                # below saturation the delivered throughput is the offered rate
                per_gpu = r.load * r.osl / (r.tp * r.pp)
                v = _metric_value(
                    r.metric,
                    per_gpu,
                    per_gpu * (r.isl + r.osl) / r.osl,
                    0.0,
                    1.0,
                    gpus[k],
                    r.osl,
                    node,
                )
            preds[j] = float(v)
