"""Static batching (TensorRT-LLM <= v0.9 ``gptSessionBenchmark``): a batch prefilled together,
then decoded together; the serving metrics of such a run over a broadcast grid."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import step_shape
from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import plan_feasibility
from ..specs.precision import Precision
from .memory import static_batch_fits
from .step import pipeline_hops, step_cost

Array = np.ndarray


def evaluate_static(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    *,
    tp: Array | int = 1,
    pp: Array | int = 1,
    ep: Array | int = 1,
    attention_dp: Array | bool = False,
    cp: Array | int = 1,
    isl: Array | int,
    osl: Array | int,
    batch: Array | int,
) -> dict[str, Array]:
    """Static batching (TensorRT-LLM <= v0.9 ``gptSessionBenchmark``): a batch of B requests is
    prefilled together, then decoded for OSL steps; throughput = B x OSL / (prefill + OSL decode
    steps). Returns arrays: ttft_s (the batch's prefill), tpot_s, output_tok_s_per_gpu,
    feasible, reason, fits_in_memory."""
    eng = for_gpu(eng, hw)  # (the runtime's limits on hw: specs.gpu_defaults)
    tp, pp, ep, cp = (np.asarray(x, dtype=np.int64) for x in (tp, pp, ep, cp))
    adp = np.asarray(attention_dp, dtype=bool)
    isl_f, osl_f, b = (np.asarray(x, dtype=float) for x in (isl, osl, batch))
    shape = np.broadcast(tp, pp, ep, cp, adp, isl_f, osl_f, b).shape
    tp, pp, ep, cp, adp, isl_f, osl_f, b = (
        np.broadcast_to(x, shape) for x in (tp, pp, ep, cp, adp, isl_f, osl_f, b)
    )
    reason = plan_feasibility(model, tp, pp, ep, adp, cp, eng.moe_partial_ep)
    ok = reason == ""
    tp, ep, cp, pp = (np.where(ok, x, 1) for x in (tp, ep, cp, pp))
    micro = pp.astype(float)
    fits = static_batch_fits(model, hw, prec, eng, tp, pp, ep, adp, cp, isl_f + osl_f, b)
    reason = np.where(ok & ~fits, "oom", reason)
    axes: dict[str, Any] = {"tp": tp, "pp": pp, "ep": ep, "cp": cp, "attention_dp": adp}
    pre_shape = step_shape(**axes, isl=isl_f, osl=osl_f, prefill_tokens=b * isl_f, prefill_seqs=b)
    pre = step_cost(model, prec, hw, eng, pre_shape).total_s
    dec = step_cost(
        model, prec, hw, eng, step_shape(**axes, isl=isl_f, osl=osl_f, decode_seqs=b)
    ).total_s
    # a micro-batch holds whole sequences: min(pp, B) of them cross the pp stages
    batches = np.minimum(micro, np.maximum(b, 1.0))
    hop_pre = pipeline_hops(model, hw, prec, eng, pp, b * isl_f, batches)
    hop_dec = pipeline_hops(model, hw, prec, eng, pp, b, batches)
    # no request_overhead_s: the static C++ session benchmark times the engine alone (no server)
    ttft = micro * pre + hop_pre
    tpot = micro * dec + hop_dec
    total = ttft + np.maximum(osl_f - 1.0, 0.0) * tpot
    return {
        "ttft_s": ttft,
        "tpot_s": tpot,
        "output_tok_s_per_gpu": b * osl_f / total / (tp * pp),
        "total_tok_s_per_gpu": b * (isl_f + osl_f) / total / (tp * pp),
        "tok_s_per_user": 1.0 / tpot,
        "feasible": reason == "",
        "reason": reason,
        "fits_in_memory": fits,
    }
