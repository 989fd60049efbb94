"""TensorRT-LLM's attention-DP context balance (``attention_dp_config``: ``enable_balance``,
``timeout_iters``, ``batching_wait_iters``; tech blog 10, "ADP Balance Strategy"): the round
window in executor iterations, the TTFT a request waits for its round, and what an estimate says
of both. ``serving.step.chunked_prefill`` prices the rounds themselves (every waiting rank's
prompts in one step) and ``serving.aggregated`` the closed loop's TTFT (the wait, then the round's
step)."""

from __future__ import annotations

import numpy as np

from ..specs.engine import EngineConstants

Array = np.ndarray


def adp_balance_window(
    eng: EngineConstants,
    ranks: Array | float,
    isl: Array | float,
    prefill_tokens: Array | float,
    decode_seqs: Array | float,
    micro_batches: Array | float = 1.0,
) -> Array:
    """Executor iterations from one attention-DP context round to the next under TensorRT-LLM's
    attention-DP context balance (``EngineConstants.adp_balance_timeout_iters`` T > 0), for a
    replica whose step admits ``prefill_tokens`` prompt tokens with ``decode_seqs`` sequences
    decoding, on ``ranks`` attention-DP ranks, in ``micro_batches`` pipeline micro-batches (an
    executor iteration each: per iteration, prefill_tokens / micro_batches prompt tokens and
    decode_seqs / micro_batches decoding); 0 where the balance holds nothing back.

    TensorRT-LLM (``PyExecutor._balance_adp_requests``; tech blog 10, "ADP Balance Strategy")
    holds every context request back, while every rank has a request decoding, until every
    rank holds one: then, after ``batching_wait_iters`` b more iterations, all ranks prefill
    in the same iteration; or after T iterations counted from the last round. A new request
    goes to the least-loaded rank, which in a loop at its batch limit is the rank a request
    just left, so each rank gains context requests as its own arrival stream of lambda / R per
    iteration (lambda = prompts per iteration = prefill_tokens / ISL). Every rank holds one after
    the coupon collector's (R / lambda) H_R iterations, H_R = 1 + 1/2 + ... + 1/R, so

        W = (R / lambda) H_R + b  where that is under T, else T,

    and a request waits W / 2 iterations on average for its round. Nothing waits where a
    waiting request's rank has nothing else to decode (one sequence per rank or fewer: the
    executor then lets contexts through; full from two per rank, a linear ramp between), nor
    without attention-DP.

    Example: 8 ranks, one 1024-token prompt per 4 iterations (256 tokens per iteration), T 60:
    32 x 2.718 = 87 iterations to cover every rank, so W = 60.

    A limit, measured: where rounds come at the timeout, a rank releases one prompt per round
    (``max_num_tokens`` holds one), so a second prompt that reached it in the same window
    waits for a later round. ``benchmarks/adp_balance_sim.py`` (the rule simulated in a closed
    loop) puts the mean wait 40-75% above W / 2 for InferenceX's 64-client 8k/1k and 256-client
    1k/8k runs; W / 2 holds where every rank holds a prompt before the timeout.
    """
    shape = np.broadcast(ranks, isl, prefill_tokens, decode_seqs, micro_batches).shape
    timeout = float(eng.adp_balance_timeout_iters)
    if timeout <= 0 or not np.prod(shape, dtype=np.int64):
        return np.zeros(shape)
    micro = np.maximum(np.asarray(micro_batches, dtype=float), 1.0)
    r = np.broadcast_to(np.asarray(ranks, dtype=float), shape)
    whole = np.maximum(np.rint(r).astype(np.int64), 1)
    harmonic = np.cumsum(1.0 / np.arange(1, int(whole.max()) + 1))[whole - 1]
    pre = np.asarray(prefill_tokens, dtype=float) / micro
    lam = pre / np.maximum(np.asarray(isl, dtype=float), 1.0)
    with np.errstate(divide="ignore"):
        cover = np.where(lam > 0, r / np.maximum(lam, 1e-300) * harmonic, np.inf)
    window = np.where(cover < timeout, cover + float(eng.adp_balance_wait_iters), timeout)
    # every rank decoding while a request of its own waits: more than one sequence per rank
    # (with one, the waiting request's rank has nothing to decode and the executor lets it
    # through), a linear ramp from R to 2R decoding sequences
    decoding = np.clip(np.asarray(decode_seqs, dtype=float) / micro / r - 1.0, 0.0, 1.0)
    return np.where((r > 1) & (lam > 0), window * decoding, 0.0)


def adp_balance_wait(
    eng: EngineConstants,
    ranks: Array | float,
    isl: Array | float,
    prefill_tokens: Array | float,
    decode_seqs: Array | float,
    micro_batches: Array | float,
    step_s: Array | float,
) -> tuple[Array, Array]:
    """(round window in executor iterations, mean wait it adds to TTFT in seconds) for a
    replica whose step of ``step_s`` seconds admits ``prefill_tokens`` prompt tokens with
    ``decode_seqs`` sequences decoding, in ``micro_batches`` pipeline micro-batches (one
    executor iteration each): ``adp_balance_window``, and a request waits half the window,
    W / 2 iterations of step_s / micro_batches."""
    window = adp_balance_window(eng, ranks, isl, prefill_tokens, decode_seqs, micro_batches)
    micro = np.maximum(np.asarray(micro_batches, dtype=float), 1.0)
    return window, np.where(window > 0, 0.5 * window * np.asarray(step_s) / micro, 0.0)


def adp_balance_note(
    eng: EngineConstants,
    ranks: int,
    isl: float,
    prefill_tokens: Array | float,
    decode_seqs: Array | float,
    micro_batches: int,
    step_s: float,
    round_step_s: Array | float,
) -> list[str]:
    """An estimate's note on the balance, on ``ranks`` attention-DP ranks: the round's mean wait
    (``adp_balance_wait`` at the estimate's step of ``step_s`` seconds, drafts included) and the
    round's step (``round_step_s``: ``PipelinedStep.prompt_step_s``, every waiting rank's
    prompts at once), which the request's TTFT holds; none where the balance is off or there is
    one rank."""
    if eng.adp_balance_timeout_iters <= 0 or ranks <= 1:
        return []
    w, wait = (
        float(np.ravel(x)[0])
        for x in adp_balance_wait(
            eng, ranks, isl, prefill_tokens, decode_seqs, micro_batches, step_s
        )
    )
    head = f"attention-DP context balance on (timeout_iters {eng.adp_balance_timeout_iters})"
    if w <= 0:
        return [f"{head}: no prompt waits here (one sequence per rank)"]
    msg = f"{w / 2:.0f} iterations ({wait * 1e3:,.0f} ms) of TTFT on average for its round"
    rnd = float(np.ravel(round_step_s)[0]) * 1e3
    ride = f"then rides the round's step ({rnd:,.0f} ms), every waiting rank's prompts at once"
    return [f"{head}: a prompt waits until every rank holds one, {msg}; {ride}"]
