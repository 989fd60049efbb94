"""Predictions for mapped rows, grouped by (model, GPU, precision, engine) and vectorized.

Serving modes:
  * ``concurrency``: a known client concurrency (closed loop) -> serving.evaluate;
  * ``static``: TensorRT-LLM <= v0.9 static batch -> serving.evaluate_static;
  * ``offline``: max-throughput runs with unknown concurrency -> the best prediction over the
    concurrencies that fit in memory (SOURCES.md caveat 1), at most ``OFFLINE_MAX_BATCH``;
  * ``rate``: open-loop request rate -> the concurrency whose throughput equals the rate
    (Little's law on the closed-loop curve); "INF" = offline.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..explore import POINTS_PER_OCTAVE, concurrency_grid
from ..serving import evaluate, evaluate_static
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec, load_hardware
from ..specs.model import load_model
from ..specs.precision import parse_precision
from .mapping import THROUGHPUT_METRICS, MappedRow

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
    osl: Array | float = 1.0,
) -> Array:
    if metric == "request_latency_ms":  # first token, then OSL - 1 decode steps
        return (ttft + np.maximum(np.asarray(osl, dtype=float) - 1.0, 0.0) * tpot) * 1e3
    if metric == "output_tok_s_per_gpu":
        return per_gpu_out
    if metric == "output_tok_s_total":
        return per_gpu_out * gpus
    if metric == "total_tok_s_per_gpu":
        return per_gpu_total
    if metric == "total_tok_s":
        return per_gpu_total * gpus
    if metric == "ttft_ms":
        return ttft * 1e3
    if metric in ("tpot_ms", "itl_ms"):
        return tpot * 1e3
    if metric == "tok_s_per_user":
        return 1.0 / tpot
    raise AssertionError(metric)


Array = np.ndarray


def predict_rows(
    rows: list[MappedRow],
    engines: dict[str, EngineConstants] | None = None,
    engine_override: EngineConstants | None = None,
    hw_override: dict[str, HardwareSpec] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Predictions for mapped rows (NaN + reason where infeasible), grouped and vectorized."""
    preds = np.full(len(rows), np.nan)
    notes = [""] * len(rows)
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for j, r in enumerate(rows):
        groups.setdefault((r.model, r.hardware, r.precision, r.engine), []).append(j)
    for (mid, hid, pid, eid), idx in groups.items():
        model = load_model(mid)
        hw = (hw_override or {}).get(hid) or load_hardware(hid)
        prec = parse_precision(pid)
        eng = engine_override or (engines or {}).get(eid) or load_engine(eid)
        sub = [rows[j] for j in idx]
        for mode in ("concurrency", "static", "offline", "rate"):
            js = [j for j, r in zip(idx, sub) if r.mode == mode]
            if not js:
                continue
            rs = [rows[j] for j in js]

            def a(f: Any, rs: list[MappedRow] = rs) -> np.ndarray:
                return np.array([f(r) for r in rs])

            tp, pp, ep, adp = (
                a(lambda r: r.tp),
                a(lambda r: r.pp),
                a(lambda r: r.ep),
                a(lambda r: r.attention_dp),
            )
            isl, osl, gpus = a(lambda r: r.isl), a(lambda r: r.osl), a(lambda r: r.metric_gpus)
            if mode == "static":
                out = evaluate_static(
                    model,
                    hw,
                    prec,
                    eng,
                    tp=tp,
                    pp=pp,
                    ep=ep,
                    attention_dp=adp,
                    isl=isl,
                    osl=osl,
                    batch=a(lambda r: r.load),
                )
                values = {
                    m: _metric_value(
                        m,
                        out["output_tok_s_per_gpu"],
                        out["total_tok_s_per_gpu"],
                        out["ttft_s"],
                        out["tpot_s"],
                        gpus,
                        osl,
                    )
                    for m in {r.metric for r in rs}
                }
                for k, (j, r) in enumerate(zip(js, rs)):
                    if out["feasible"][k]:
                        preds[j] = values[r.metric][k]
                    else:
                        notes[j] = str(out["reason"][k])
                continue
            if mode == "concurrency":
                out = evaluate(
                    model,
                    hw,
                    prec,
                    eng,
                    tp=tp,
                    pp=pp,
                    ep=ep,
                    attention_dp=adp,
                    isl=isl,
                    osl=osl,
                    concurrency=a(lambda r: r.load),
                    benchmark_burst=True,
                )
                for k, (j, r) in enumerate(zip(js, rs)):
                    v = _metric_value(
                        r.metric,
                        out.output_tok_s_per_gpu[k],
                        out.total_tok_s_per_gpu[k],
                        out.ttft_s[k],
                        out.tpot_s[k],
                        gpus[k],
                        osl[k],
                    )
                    if out.feasible[k]:
                        preds[j] = float(v)
                    else:
                        notes[j] = str(out.reason[k])
                continue
            # offline / rate: a concurrency grid per row
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
            )
            thr = np.where(out.feasible, out.output_tok_s_per_gpu, -np.inf)
            for k, (j, r) in enumerate(zip(js, rs)):
                if not np.any(np.isfinite(thr[k])):
                    notes[j] = str(out.reason[k, 0])
                    continue
                if mode == "offline":
                    b = int(np.argmax(thr[k]))
                else:
                    req_rate = out.output_tok_s_per_gpu[k] * r.tp * r.pp / r.osl
                    ok = np.where(out.feasible[k] & (req_rate >= r.load * 0.999))[0]
                    b = int(ok[0]) if len(ok) else int(np.argmax(thr[k]))
                    if len(ok) == 0:
                        notes[j] = "rate above predicted capacity (saturated)"
                v = _metric_value(
                    r.metric,
                    out.output_tok_s_per_gpu[k, b],
                    out.total_tok_s_per_gpu[k, b],
                    out.ttft_s[k, b],
                    out.tpot_s[k, b],
                    gpus[k],
                    osl[k],
                )
                if mode == "rate" and r.metric in THROUGHPUT_METRICS and not notes[j]:
                    # below saturation the delivered throughput is the offered rate
                    per_gpu = r.load * r.osl / (r.tp * r.pp)
                    v = _metric_value(
                        r.metric, per_gpu, per_gpu * (r.isl + r.osl) / r.osl, 0.0, 1.0, gpus[k]
                    )
                preds[j] = float(v)
    return preds, notes
