"""Disaggregated points of the frontier search: every decode (plan, concurrency) near the
decode-only frontier, paired with the best prefill worker of each size and balanced within the
GPU budget. The physics (worker rates, KV transfer, pool balance) is
:mod:`llm_codesign.serving.disaggregated`; this module only chooses candidates."""

from __future__ import annotations

import math

import numpy as np

from ..ops import OP_CLASSES
from ..pareto import pareto_mask, staircase
from ..serving.disaggregated import (
    best_split,
    check_decode_length,
    closed_loop_ttft,
    decode_workers,
    kv_transfer_time,
    pooled_outcome,
    prefill_workers,
)
from ..serving.memory import (
    concurrency_cap,
    kv_context,
    memory_fit,
    rank_token_budget,
    scheduling_ranks,
)
from .grid import concurrency_grid
from .plans import PlanTable
from .points import MODE_DISAGGREGATED, Points
from .runner import Job

Array = np.ndarray

# decode configurations within this share of the decode-only frontier are paired with prefill
DISAGG_DECODE_TOLERANCE = 0.25


def disaggregated_points(
    job: Job,
    pi: int,
    plans: PlanTable,
    num_gpus: int,
    points_per_octave: int,
    ttft_target_s: float | None,
) -> Points:
    """Disaggregated points of precision ``pi``: every decode (plan, concurrency) with the best
    prefill worker of each size, balanced within the budget."""
    m, hw, eng, prec, isl, osl = job.model, job.hw, job.eng, job.precisions[pi], job.isl, job.osl
    check_decode_length(osl)
    ok = plans.valid & (plans.gpus_per_replica < num_gpus)  # leave room for the other pool
    pl = plans.take(np.flatnonzero(ok))
    if len(pl) == 0:
        return Points.concat([])
    # ---- prefill workers: plans x batch sizes ----
    # each scheduling rank (attention-DP: every tp rank) admits its token budget // ISL prompts
    ranks = scheduling_ranks(pl.tp, pl.attention_dp).astype(int)
    b_top = ranks * np.maximum(1, rank_token_budget(eng, ranks).astype(int) // isl)
    powers = np.round(2.0 ** np.arange(0, math.log2(int(b_top.max())) + 1))
    batches = np.unique(np.concatenate([powers, b_top]))
    pidx, bi = np.nonzero(batches[None, :] <= b_top[:, None])
    b = batches[bi].astype(float)
    p_tp, p_pp, p_ep, p_cp, p_adp = (v[pidx] for v in (pl.tp, pl.pp, pl.ep, pl.cp, pl.attention_dp))
    pw = prefill_workers(
        m, hw, prec, eng, tp=p_tp, pp=p_pp, ep=p_ep, cp=p_cp, attention_dp=p_adp, batch=b, isl=isl,
        spec_tokens=job.spec_tokens,
    )  # fmt: skip
    latency_p, rate_p, g_p = pw.latency_s, pw.rate_req_s, pw.gpus
    good = pw.fits & np.isfinite(rate_p) & (rate_p > 0)
    if ttft_target_s is not None and np.any(good & (latency_p <= ttft_target_s)):
        good &= latency_p <= ttft_target_s
    if not good.any():
        return Points.concat([])
    # best prefill candidate per worker size (requests/s per GPU)
    cand = np.flatnonzero(good)
    per_gpu = rate_p[cand] / g_p[cand]
    cand = cand[np.lexsort((-per_gpu, g_p[cand]))]
    first = np.ones(len(cand), dtype=bool)
    first[1:] = g_p[cand][1:] != g_p[cand][:-1]
    cand = cand[first]
    # a larger prefill worker is only worth balancing with if it is more efficient per GPU
    eff = rate_p[cand] / g_p[cand]
    cand = cand[eff >= np.maximum.accumulate(eff)]
    # ---- decode workers: plans x concurrency ----
    *_, lim_d = memory_fit(
        m, hw, prec, eng, pl.tp, pl.pp, pl.ep, pl.attention_dp, pl.cp, kv_context(eng, isl, osl),
        job.spec_tokens,
    )  # fmt: skip
    row, conc = concurrency_grid(
        concurrency_cap(eng, lim_d, pl.tp, pl.attention_dp), points_per_octave
    )
    if len(row) == 0:
        return Points.concat([])
    d_tp, d_pp, d_ep, d_cp, d_adp = (v[row] for v in (pl.tp, pl.pp, pl.ep, pl.cp, pl.attention_dp))
    dw = decode_workers(
        m,
        hw,
        prec,
        eng,
        tp=d_tp,
        pp=d_pp,
        ep=d_ep,
        cp=d_cp,
        attention_dp=d_adp,
        concurrency=conc,
        isl=isl,
        osl=osl,
        spec_tokens=job.spec_tokens,
        spec_acceptance=job.spec_acceptance,
    )
    tpot, rate_d, g_d = dw.tpot_s, dw.rate_req_s, dw.gpus
    # only decode configurations near the decode-only frontier (tok/s/user vs requests/s/GPU)
    # can reach the combined frontier: combined requests/s/GPU = 1 / (g_p/R_p + g_d/R_d)
    x_u, y_e = 1.0 / tpot, rate_d / g_d
    okd = np.isfinite(x_u) & np.isfinite(y_e)
    front = np.flatnonzero(
        okd & pareto_mask(np.where(okd, x_u, np.nan), np.where(okd, y_e, np.nan))
    )
    s_tol = 1.0 + DISAGG_DECODE_TOLERANCE
    keep = np.flatnonzero(okd & (y_e * s_tol >= staircase(x_u[front], y_e[front], x_u * s_tol)))
    row, conc, tpot, rate_d, g_d = row[keep], conc[keep], tpot[keep], rate_d[keep], g_d[keep]
    d_tp, d_pp, d_ep, d_cp, d_adp = (v[keep] for v in (d_tp, d_pp, d_ep, d_cp, d_adp))
    dec_by_class = {cl: dw.by_class[cl][keep] for cl in OP_CLASSES}
    # ---- combine: decode points x prefill candidates, integer balance ----
    x, y, req_s, gpus, k = best_split(rate_p[cand], g_p[cand], rate_d, g_d, num_gpus)
    c = cand[k]
    transfer, inside = kv_transfer_time(m, hw, prec, eng, g_p[c], g_d, gpus, isl, job.spec_tokens)
    ttft, req_s = closed_loop_ttft(
        latency_p[c] + transfer,
        tpot,
        clients=y * conc,
        prefill_capacity=x * rate_p[c],
        decode_capacity=y * rate_d,
        batch_service_s=b[c] / rate_p[c],
        osl=osl,
    )
    reason = np.where(gpus <= 0, "budget_too_small_for_two_pools", "").astype(object)
    reason, feasible, out, total = pooled_outcome(hw, reason, gpus, inside, tpot, req_s, isl, osl)
    n = len(conc)
    cols: dict[str, Array] = {
        "precision": np.full(n, pi, dtype=np.int64),
        "mode": np.full(n, MODE_DISAGGREGATED, dtype=np.int64),
        "plan_id": np.flatnonzero(ok)[row],
        "tp": d_tp,
        "pp": d_pp,
        "ep": d_ep,
        "cp": d_cp,
        "attention_dp": d_adp,
        "dp": y.astype(np.int64),
        "p_tp": p_tp[c],
        "p_pp": p_pp[c],
        "p_ep": p_ep[c],
        "p_cp": p_cp[c],
        "p_attention_dp": p_adp[c],
        "p_batch": b[c].astype(np.int64),
        "prefill_workers": x.astype(np.int64),
        "decode_workers": y.astype(np.int64),
        "concurrency": conc,
        "ttft_s": ttft,
        "tpot_s": tpot,
        "tok_s_per_user": 1.0 / tpot,
        "output_tok_s_per_gpu": out,
        "total_tok_s_per_gpu": total,
        "num_gpus": gpus,
        "max_concurrency": lim_d[row],
        "running_concurrency": conc,
        "fits_in_memory": conc <= lim_d[row],
        "memory_per_gpu_bytes": dw.memory_per_gpu_bytes[keep],
        "kv_transfer_s": transfer,
        "feasible": feasible,
        "reason": reason,
        "step_decode_seqs": conc,
        "step_prefill_tokens": np.zeros(n),
    }
    for cl in OP_CLASSES:
        cols[f"bd_prefill_{cl}"] = pw.by_class[cl][c]
        cols[f"bd_decode_{cl}"] = dec_by_class[cl]
        cols[f"bd_mixed_step_{cl}"] = dec_by_class[cl]
    return Points(cols)
