"""The context requests a TensorRT-LLM scheduler holds back to prefill them together: its
attention-DP context balance (``attention_dp_config``: ``enable_balance``, ``timeout_iters``,
``batching_wait_iters``; tech blog 10, "ADP Balance Strategy") and, without attention-DP, its
batch waiting (``batch_wait_timeout_iters``, ``batch_wait_max_tokens_ratio``). For each: the round
window in executor iterations, the TTFT a request waits for its round (``context_hold_wait``),
and what an estimate says of both. ``serving.step.chunked_prefill`` prices the rounds
themselves (the round's prompts in one step) and ``serving.aggregated`` the closed loop's TTFT
(the wait, then the round's step)."""

from __future__ import annotations

import numpy as np

from ..specs.engine import EngineConstants

Array = np.ndarray


def prompt_rate(
    prefill_tokens: Array | float, isl: Array | float, micro_batches: Array | float = 1.0
) -> Array:
    """lambda of the holds: the prompts of ``isl`` tokens a scheduler iteration admits, for a
    step admitting ``prefill_tokens`` prompt tokens over its ``micro_batches`` iterations."""
    micro = np.maximum(np.asarray(micro_batches, dtype=float), 1.0)
    pre = np.maximum(np.asarray(prefill_tokens, dtype=float), 0.0)
    return pre / micro / np.maximum(np.asarray(isl, dtype=float), 1.0)


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

    SGLang's prefill delayer (``EngineConstants.adp_balance_kind`` ``delayer``) opens its window
    at a first prompt, one rank already holding one: W = (R / lambda) H_(R-1) where under T, else
    T (``context_hold_wait``: the first prompt waits W, the lambda W that join it W / 2). Its
    passes without a forward (nothing decoding) are idle loops: the same ramp.

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
    sums = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, int(whole.max()) + 1))])
    # H_R to cover every rank from a round; the delayer's window from a first prompt: H_(R-1)
    harmonic = sums[whole - 1] if eng.adp_balance_kind == "delayer" else sums[whole]
    lam = prompt_rate(prefill_tokens, isl, micro)
    with np.errstate(divide="ignore"):
        cover = np.where(lam > 0, r / np.maximum(lam, 1e-300) * harmonic, np.inf)
    window = np.where(cover < timeout, cover + float(eng.adp_balance_wait_iters), timeout)
    # every rank decoding while a request of its own waits: more than one sequence per rank
    # (with one, the waiting request's rank has nothing to decode and the executor lets it
    # through), a linear ramp from R to 2R decoding sequences
    decoding = np.clip(np.asarray(decode_seqs, dtype=float) / micro / r - 1.0, 0.0, 1.0)
    return np.where((r > 1) & (lam > 0), window * decoding, 0.0)


def batch_wait_window(
    eng: EngineConstants,
    ranks: Array | float,
    isl: Array | float,
    prefill_tokens: Array | float,
    decode_tokens: Array | float,
    decode_seqs: Array | float,
    micro_batches: Array | float = 1.0,
) -> tuple[Array, Array, Array]:
    """(W, m, q) of TensorRT-LLM's batch waiting (``EngineConstants.batch_wait_timeout_iters`` T
    and ``batch_wait_max_tokens_ratio`` r, both > 0) for a replica on one scheduler (no
    attention-DP: ``ranks`` 1; the balance of ``adp_balance_window`` is the attention-DP one)
    whose iterations admit ``prefill_tokens`` prompt tokens on average with ``decode_tokens``
    decode tokens (``decode_seqs`` sequences, draft tokens included in the tokens) in
    ``micro_batches`` pipeline micro-batches: W the iterations a round holds its first prompt,
    m the prompts that join it meanwhile, q the chance the token share (not the timeout)
    releases it (0, 0, 0 where nothing is held).

    TensorRT-LLM (``PyExecutor._waiting_requests``, the unified scheduler's
    ``_apply_batch_waiting``): while a sequence decodes, the scheduled context requests wait
    as long as the iteration's tokens (their prompt tokens and the decode tokens g) stay under
    r ``max_num_tokens`` and fewer than T iterations have passed since the first waited; then
    all of them prefill in that iteration and the count restarts. The held prompts reach the
    threshold at n = ceil((r M - g) / ISL) of them; with prompts arriving as a Poisson stream of
    lambda = prefill_tokens / ISL an iteration, the k = n - 1 after the first come at the
    Erlang time S_k, and the hold lasts

        W = E[min(S_k, T)] = E[min(N, k)] / lambda,  N ~ Poisson(lambda T),

    (the integral of P(S_k > t) over [0, T], which is P(N(t) < k)), with m = lambda W prompts
    joining and q = P(N >= k). Nothing is held where one prompt reaches the threshold (k = 0),
    nor without another sequence decoding (the executor's guard against dead waiting: a linear
    ramp from one to two decoding sequences, as the attention-DP balance's).

    Example: T 50, r 0.45, ``max_num_tokens`` 16,384 (InferenceX's Qwen3.5 B200 script),
    1024-token prompts, one per 250 iterations, 4 decoding: n = ceil((7,373 - 4) / 1024) = 8,
    k = 7; N ~ Poisson(0.2), E[min(N, 7)] = 0.2 to 1e-9, so W = 50 iterations, m = 0.2.
    """
    shape = np.broadcast(ranks, isl, prefill_tokens, decode_tokens, decode_seqs, micro_batches)
    zeros = np.zeros(shape.shape)
    timeout, ratio = float(eng.batch_wait_timeout_iters), float(eng.batch_wait_max_tokens_ratio)
    if timeout <= 0 or ratio <= 0 or not np.prod(shape.shape, dtype=np.int64):
        return zeros, zeros, zeros
    micro = np.maximum(np.asarray(micro_batches, dtype=float), 1.0)
    isl_a = np.maximum(np.asarray(isl, dtype=float), 1.0)
    lam = prompt_rate(prefill_tokens, isl_a, micro)
    g = np.maximum(np.asarray(decode_tokens, dtype=float), 0.0) / micro
    need = np.ceil((ratio * eng.max_num_tokens - g) / isl_a - 1e-9)
    k = np.broadcast_to(np.maximum(need - 1.0, 0.0), shape.shape)
    mu = np.broadcast_to(lam * timeout, shape.shape)
    capped, reach = _poisson_capped_mean(mu, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        hold = np.where(lam > 0, capped / np.maximum(lam, 1e-300), 0.0)
    decoding = np.clip(np.asarray(decode_seqs, dtype=float) / micro - 1.0, 0.0, 1.0)
    on = (np.asarray(ranks, dtype=float) <= 1.0) & (lam > 0) & (k > 0)
    window = np.where(on, np.minimum(hold, timeout) * decoding, 0.0)
    return window, lam * window, np.where(on, reach, 0.0)


def _poisson_capped_mean(mu: Array, k: Array) -> tuple[Array, Array]:
    """(E[min(N, k)], P(N >= k)) for N ~ Poisson(``mu``), k whole: the first the sum over
    j < k of P(N > j), the pmf by its recursion in log space (no underflow at large means),
    summed to at most 12 standard deviations above the mean (the rest under 1e-30)."""
    mean, reach = np.zeros(mu.shape), np.ones(mu.shape)
    live = k > 0
    if not np.any(live):
        return mean, reach
    m, kk = mu[live], k[live]
    log_mu = np.log(np.maximum(m, 1e-300))
    log_p = -m  # log P(N = 0)
    cdf = np.exp(log_p)
    acc, at_k = np.zeros(m.shape), np.zeros(m.shape)
    top = np.minimum(kk, np.ceil(m + 12.0 * np.sqrt(m) + 30.0))
    for j in range(int(top.max())):
        tail = 1.0 - np.minimum(cdf, 1.0)  # P(N > j)
        acc += np.where(j < kk, tail, 0.0)
        at_k = np.where(j == kk - 1, tail, at_k)
        log_p = log_p + log_mu - np.log(j + 1.0)
        cdf = cdf + np.exp(log_p)
    mean[live], reach[live] = acc, at_k
    return mean, reach


def context_hold_wait(
    eng: EngineConstants,
    ranks: Array | float,
    isl: Array | float,
    prefill_tokens: Array | float,
    decode_seqs: Array | float,
    micro_batches: Array | float,
    step_s: Array | float,
    decode_tokens: Array | float | None = None,
) -> tuple[Array, Array]:
    """(round window in executor iterations, mean wait it adds to TTFT in seconds) of the
    context requests the scheduler holds back, for a replica whose step of ``step_s`` seconds
    admits ``prefill_tokens`` prompt tokens with ``decode_seqs`` sequences decoding in
    ``micro_batches`` pipeline micro-batches (one executor iteration each): the attention-DP
    balance's on several ranks (``adp_balance_window``: a request waits half the window; under
    SGLang's delayer the window's first prompt waits all of it and the m = lambda W that join
    it half, W (1 + m / 2) / (1 + m) a request), the batch waiting's on one
    (``batch_wait_window``:
    the round's first prompt waits W and the m that join it W / 2 on average, W (1 + m / 2) /
    (1 + m) iterations a request, where the timeout ends the round; where the token share
    does (chance q), its last prompt waits nothing, W / 2 a request (m of Erlang arrivals
    before the release, spaced evenly on average): W (1 + m / 2 - q / 2) / (1 + m) in all, in
    iterations of step_s / micro_batches)."""
    window = adp_balance_window(eng, ranks, isl, prefill_tokens, decode_seqs, micro_batches)
    tokens = decode_seqs if decode_tokens is None else decode_tokens
    held, joined, reach = batch_wait_window(
        eng, ranks, isl, prefill_tokens, tokens, decode_seqs, micro_batches
    )
    micro = np.maximum(np.asarray(micro_batches, dtype=float), 1.0)
    share = 0.5
    if eng.adp_balance_kind == "delayer":  # the episode's first prompt waits it all
        m = prompt_rate(prefill_tokens, isl, micro) * window
        share = (1.0 + 0.5 * m) / (1.0 + m)
    iters = share * window + held * (1.0 + 0.5 * joined - 0.5 * reach) / (1.0 + joined)
    return window + held, iters * np.asarray(step_s) / micro


def holds_context(eng: EngineConstants, attention_dp: bool) -> bool:
    """Whether ``eng`` holds context requests back on a plan with or without ``attention_dp``:
    the attention-DP balance, or batch waiting (both of its settings above 0)."""
    if attention_dp:
        return eng.adp_balance_timeout_iters > 0
    return eng.batch_wait_timeout_iters > 0 and eng.batch_wait_max_tokens_ratio > 0


def context_hold_note(
    eng: EngineConstants,
    ranks: int,
    isl: float,
    prefill_tokens: Array | float,
    decode_seqs: Array | float,
    micro_batches: int,
    step_s: float,
    round_step_s: Array | float,
    query: float = 1.0,
) -> list[str]:
    """An estimate's note on the prompts its scheduler holds back (``context_hold_wait`` at the
    estimate's step of ``step_s`` seconds, drafts included, ``query`` tokens a decoding
    sequence): the attention-DP balance's on ``ranks`` > 1 ranks, else the batch waiting's; the
    mean wait and the round's step (``round_step_s``: ``PipelinedStep.prompt_step_s``, the held
    prompts at once), which the request's TTFT holds; none where nothing is held."""
    adp = ranks > 1
    if not holds_context(eng, adp):
        return []
    tokens = np.asarray(decode_seqs, dtype=float) * query
    w, wait = (
        float(np.ravel(x)[0])
        for x in context_hold_wait(
            eng, ranks, isl, prefill_tokens, decode_seqs, micro_batches, step_s, tokens
        )
    )
    if adp:
        head = f"attention-DP context balance on (timeout_iters {eng.adp_balance_timeout_iters})"
        if eng.adp_balance_kind == "delayer":
            passes = eng.adp_balance_timeout_iters + 1
            head = f"SGLang's prefill delayer on (max delay passes {passes})"
        none, until, held = "one sequence per rank", "every rank holds one", "every waiting rank's"
    else:
        head = (
            f"batch waiting on (batch_wait_timeout_iters {eng.batch_wait_timeout_iters}, "
            f"batch_wait_max_tokens_ratio {eng.batch_wait_max_tokens_ratio:g})"
        )
        none = "one prompt reaches the token share, or no other sequence decodes"
        until = (
            f"the held prompts and the decode reach {eng.batch_wait_max_tokens_ratio:g} x "
            "max_num_tokens or the timeout"
        )
        held = "the held"
    if w <= 0:
        return [f"{head}: no prompt waits here ({none})"]
    waited = wait / max(step_s / max(micro_batches, 1), 1e-30)
    msg = f"{waited:.0f} iterations ({wait * 1e3:,.0f} ms) of TTFT on average for its round"
    rnd = float(np.ravel(round_step_s)[0]) * 1e3
    ride = f"then rides the round's step ({rnd:,.0f} ms), {held} prompts at once"
    # the wait is the rule's mean; the simulator runs it rank by rank (sim_ranks)
    sim = (
        " (a mean over the window; --percentiles --clients-start together runs the rule rank "
        "by rank, as a benchmark meets it: a rank releases what its budget holds a round, and "
        "clients that start together arrive in waves)"
        if adp
        else ""
    )
    return [f"{head}: a prompt waits until {until}, {msg}{sim}; {ride}"]
