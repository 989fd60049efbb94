"""Request-level simulation: a workload replayed through an engine's scheduler one step at a
time, each step priced by the cost model (``serving.sim_table``), for what means cannot say:
percentiles of TTFT, TPOT and end-to-end latency under open-loop arrivals, varied lengths and
shared prefixes.

The scheduler (one per replica; replicas share the traffic round robin) is FCFS in-flight
batching with chunked prefill, as TensorRT-LLM, vLLM and SGLang run it:

* admission: a waiting request joins the running batch while the batch holds fewer than
  ``max_batch_size`` per scheduling rank and its KV fits. ``kv_admission: full`` reserves
  ISL + OSL at admission (TensorRT-LLM's GUARANTEED_NO_EVICT: never preempts); ``mean``
  allocates tokens as they arrive (vLLM, SGLang) and, when the cache runs out, preempts the
  newest decoding request, which recomputes its prompt and tokens so far when readmitted;
* each step decodes every running sequence (1 + MTP drafts query tokens each) and fills the
  rest of the token budget (``max_num_tokens`` per scheduling rank and micro-batch, at least
  a tenth of it, as ``serving.evaluate``) with prompt chunks, oldest request first; the step
  that finishes a prompt yields its first token;
* MTP: the tokens each step yields per sequence are drawn (draft j accepted with probability
  a if draft j - 1 was), so a request's decode steps are drawn once for its OSL - 1 tokens;
* prefix caching (``Traffic.prefix_len`` or a trace's ``prefix_id``): once a request has
  prefilled a prefix, later requests with it prefill only the rest (their first ``prefix_len``
  tokens are read, not computed: the attention still spans them) and the prefix's KV is held
  once; a computed prefix stays resident (engines evict it least-recently-used only under
  pressure, which this does not model);
* TensorRT-LLM's batch waiting (``batch_wait_timeout_iters``, ``batch_wait_max_tokens_ratio``;
  not under attention-DP): while a sequence decodes, the prompts a step would take wait, the
  batch decoding meanwhile, until they and the decode tokens reach the share of the budget or
  the timeout (``serving.balance.batch_wait_window`` prices the same rule in the mean);
* attention-DP (``serving.sim_ranks``): each request lives on one rank (the least loaded when
  admitted), which takes prompt chunks up to its own share of the budget less its own decode
  tokens and runs at most its share of ``max_running``; an attention-DP hold (TensorRT-LLM's
  balance, SGLang's delayer) holds the prompts until each rank has one, its timeout, or idle;
* every request pays ``request_overhead_s`` before the engine sees it (inside TTFT);
* one prompt's chunks run one after the other, each through every pipeline stage (TensorRT-LLM
  and vLLM; SGLang overlaps them, ``EngineConstants.pp_prefill_overlap``, which the analytic
  model follows and this loop does not: for SGLang with pp > 1 a lone long prompt's simulated
  TTFT is the serialized one).

Between events (an arrival the batch can admit, a request finishing, a prompt chunk) the
running batch decodes unchanged, so the loop advances many steps at once, pricing them at the
context halfway through (the step is linear in context): its cost is per event, not per token.
Llama 4's chunked attention is not linear in context (its keys restart at every chunk): the
steps price it at the batch's mean context as one position, where ``evaluate`` spreads the
positions over [ISL, ISL + OSL] (``mixers.chunk_mean_keys``).

``serving.sim_stats`` turns the per-request times into the reported statistics.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..specs.context import context_share_note
from ..specs.engine import EngineConstants
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision
from ..specs.traffic import STEADY_REQUESTS_PER_CLIENT, Requests, Traffic, steady_requests
from .sim_ranks import Ranks
from .sim_stats import summarize_run
from .sim_table import THRASHING, Engine, Thrashing, engine_for, tuned_batch_limit
from .step import PROMPT_BUDGET_FLOOR, speculating_engine, tokens_per_step

Array = np.ndarray

# allocate-as-you-go admission keeps this share of the KV cache free when it admits (vLLM's
# watermark: 1% of the blocks) and admits nothing after a preemption until a request finishes
KV_WATERMARK = 0.01


@dataclass
class SimulationResult:
    """Per-request times (seconds, arrays in request order; NaN where a request never ran)
    and the run's statistics (``serving.sim_stats.summarize_run``)."""

    issue_s: Array
    first_token_s: Array
    finish_s: Array
    isl: Array
    osl: Array
    summary: dict[str, Any]
    feasible: bool = True
    reason: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ttft_s(self) -> Array:
        return self.first_token_s - self.issue_s

    @property
    def e2e_s(self) -> Array:
        return self.finish_s - self.issue_s

    @property
    def tpot_s(self) -> Array:
        """(E2E - TTFT) / (OSL - 1); NaN for OSL = 1."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(
                self.osl > 1,
                (self.finish_s - self.first_token_s) / np.maximum(self.osl - 1, 1),
                np.nan,
            )


def decode_steps(
    osl: Array, spec_tokens: int, spec_acceptance: float, rng: np.random.Generator
) -> Array:
    """Engine steps each request needs for its OSL - 1 decode tokens: one token per step, or
    with MTP 1 + j per step, j the accepted drafts (j >= i with probability a^i, i <= k)."""
    need = np.maximum(np.asarray(osl, dtype=np.int64) - 1, 0)
    if spec_tokens == 0 or spec_acceptance <= 0:
        return need
    out = np.zeros(len(need), dtype=np.int64)
    tps = tokens_per_step(spec_tokens, spec_acceptance)
    block = 4096
    for s in range(0, len(need), block):
        n = need[s : s + block]
        width = int(np.ceil(n.max() / tps * 1.3)) + 16 if n.size else 1
        left = n.copy()
        steps = np.zeros(len(n), dtype=np.int64)
        while np.any(left > 0):
            acc = np.zeros((len(n), width), dtype=np.int64)
            alive = np.ones((len(n), width), dtype=bool)
            for _ in range(spec_tokens):
                alive &= rng.random((len(n), width)) < spec_acceptance
                acc += alive
            yields = np.cumsum(1 + acc, axis=1)
            done_at = np.argmax(yields >= left[:, None], axis=1)
            reached = yields[np.arange(len(n)), -1] >= left
            go = left > 0
            steps += np.where(go, np.where(reached, done_at + 1, width), 0)
            left = np.where(go & ~reached, left - yields[:, -1], 0)
        out[s : s + block] = steps
    return out


def simulate(
    model: ModelSpec,
    hw: HardwareSpec,
    prec: Precision,
    eng: EngineConstants,
    traffic: Traffic,
    *,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    dp: int = 1,
    attention_dp: bool = False,
    cp: int = 1,
    spec_tokens: int = 0,
    spec_acceptance: float = 0.0,
    max_preemptions: int = 0,
) -> SimulationResult:
    """Simulate ``traffic`` on ``dp`` replicas of the plan (module docstring). ``max_preemptions``
    > 0: a run that preempts more often stops, infeasible (``sim_table.Thrashing``).

    A closed loop runs ``traffic.clients`` clients on every replica; open-loop requests (a
    rate, a burst, a trace) go to the replicas round robin. Same traffic and seed, same run.

    Example:
        >>> from llm_codesign import load_model, load_hardware, load_engine
        >>> from llm_codesign.specs.precision import parse_precision
        >>> r = simulate(load_model("llama-3.1-8b"), load_hardware("h200-sxm"),
        ...              parse_precision("bf16"), load_engine("trtllm"),
        ...              Traffic(clients=8, num_requests=100))
        >>> r.summary["requests"]
        100
    """
    hw.compute_rate_class(prec.compute_class)
    eng = speculating_engine(for_gpu(eng, hw), spec_tokens)  # (the runtime's limits on hw)
    wall = time.perf_counter()
    reqs = traffic.requests()
    n = len(reqs.isl)
    rng = np.random.default_rng([traffic.seed, 1])
    steps = decode_steps(reqs.osl, spec_tokens, spec_acceptance, rng)
    axes = {"tp": tp, "pp": pp, "ep": ep, "cp": cp, "attention_dp": attention_dp}
    closed = traffic.arrival == "closed"
    issue = np.full(n, np.nan)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    replicas = [np.arange(n)] if closed else [np.arange(r, n, dp) for r in range(dp)]
    engine = engine_for(
        model, hw, prec, eng, axes, reqs, spec_tokens, spec_acceptance, len(replicas[0])
    )
    if isinstance(engine, str):
        return SimulationResult(
            issue, first, finish, reqs.isl, reqs.osl, {}, feasible=False, reason=engine
        )
    notes = context_share_note(model, reqs.isl, reqs.osl)  # (lengths past the window)
    notes += few_rounds_note(traffic) if closed else []
    if closed:
        limit = tuned_batch_limit(model, hw, prec, eng, axes, reqs, traffic.clients, spec_tokens,
                                  spec_acceptance)  # fmt: skip
        if limit < min(engine.max_running, traffic.clients):
            engine = replace(engine, max_running=limit)
            notes.append(
                f"running batch limited to {limit} sequences, the batch limit a tuned engine "
                "keeps for this many clients (serving.admission); the others queue"
            )
    counts = {"preemptions": 0, "rejected": 0, "steps": 0, "events": 0}
    together = traffic.clients_start == "together"
    engine = replace(engine, max_preemptions=max_preemptions)
    for idx in replicas:
        if not idx.size:
            continue
        try:
            out = run_replica(engine, reqs, idx, steps, traffic.clients if closed else 0, counts,
                              together=together)  # fmt: skip
        except Thrashing as why:
            return SimulationResult(issue, first, finish, reqs.isl, reqs.osl, {}, False, str(why))
        issue[idx], first[idx], finish[idx] = out
    gpus = tp * pp
    summary = summarize_run(
        issue,
        first,
        finish,
        reqs.isl,
        reqs.osl,
        traffic,
        gpus_per_replica=gpus,
        replicas=len(replicas),  # a closed loop simulates one replica's clients
        closed=closed,
    )
    summary.update(counts)
    summary["table_points"] = engine.table.points
    summary["wall_s"] = time.perf_counter() - wall
    if counts["rejected"]:
        notes.append(
            f"{counts['rejected']} requests never fit the KV cache on their own and were dropped"
        )
    if counts["preemptions"] > n:  # (validate prices such a closed loop analytically)
        notes.append(
            f"{counts['preemptions']} preemptions over {n} requests: the simulator recomputes a "
            "preempted request and admits again at once, with none of the engines' admission "
            "back-off, so this run thrashes more than the engine would; take the analytic means"
        )
    return SimulationResult(issue, first, finish, reqs.isl, reqs.osl, summary, notes=notes)


def run_replica(
    e: Engine,
    reqs: Requests,
    idx: Array,
    dec_steps: Array,
    clients: int,
    counts: dict[str, int],
    prefilled: bool = False,
    together: bool = False,
) -> tuple[Array, Array, Array]:
    """One replica's run of the requests ``idx`` (in order): (issue, first token, finish)
    seconds. ``clients`` > 0: a closed loop of that many clients (request i + clients is sent
    when one of theirs finishes; ``together``: the clients all start at once, else spread over
    one request cycle), else the requests' own arrival times. ``prefilled``: a disaggregated
    decode worker, whose requests arrive with their prompt's KV (and first token) from a
    prefill worker and join the decoding batch when admitted."""
    n = len(idx)
    isl = reqs.isl[idx].tolist()
    nsteps = dec_steps[idx].tolist()
    pid = reqs.prefix_id[idx].tolist()
    plen = [
        min(int(p), int(s) - 1) if q >= 0 else 0 for p, s, q in zip(reqs.prefix_len[idx], isl, pid)
    ]
    full_osl = reqs.osl[idx].tolist()
    overhead = e.overhead_s
    issue = [math.nan] * n
    first = [math.nan] * n
    finish = [math.nan] * n
    # sent, not yet at the engine: a heap of (engine arrival = issue + overhead, request)
    pending: list[tuple[float, int]] = []
    if clients:
        # the clients start spread over one estimated request cycle (a lone prompt's chunks
        # plus OSL - 1 steps of the full batch), as a loop that has run a while is: a loop
        # whose clients all start at once is a burst (``Traffic(arrival="burst")``)
        c = min(clients, n)
        mean_isl = float(np.mean(isl))
        chunk = min(mean_isl, e.budget)
        cycle = math.ceil(mean_isl / chunk) * e.table.mixed(0, chunk, 16.0, mean_isl / 2)
        cycle += float(np.mean(nsteps)) * e.table.decode(c, mean_isl + float(np.mean(full_osl)) / 2)
        for i in range(c):
            issue[i] = 0.0 if together else cycle * i / c
            pending.append((issue[i] + overhead, i))
        next_issue = min(clients, n)
    else:
        arr = reqs.arrival_s[idx].tolist()
        for i in range(n):
            issue[i] = arr[i]
            pending.append((issue[i] + overhead, i))
        next_issue = n
    waiting: deque[int] = deque()
    prefilling: list[int] = []
    pre_left = [0] * n
    pre_pos = [0] * n
    start = [0] * n  # the prompt position a request's prefill (re)started from
    kv_off = [0] * n  # prompt tokens of a decoding request the cache holds once (prefix)
    resume = [-1] * n  # decode steps left of a preempted request (-1: none)
    gen = [0] * n  # heap entries of an older generation are stale (preemption)
    join_step = [0] * n
    charge = [0.0] * n  # KV tokens a running request holds against the cache (own tokens)
    heap: list[tuple[int, int, int]] = []  # (finish step, request, generation)
    dec_order: list[int] = []  # decoding requests in the order they joined (preemption: newest)
    decoding = set()
    resident: set[int] = set()  # prefixes computed and held in the cache
    pinned = 0.0  # KV tokens of resident prefixes
    q = e.tokens_per_step
    ctx_base = 0.0  # sum over decoders of (context at join - q * join step)
    kv_base = 0.0  # the same for the KV they hold (shared prefixes excluded)
    kv_pre = 0.0  # KV of the prompt tokens prefilled so far by prefilling requests
    reserved = 0.0  # full admission: ISL + OSL of every running request
    n_dec = 0
    blocked = False  # a preemption stops admission until a request finishes (or none runs)
    t = 0.0
    S = 0
    done = 0
    table = e.table
    budget = e.budget
    max_running = e.max_running
    cap = e.kv_tokens
    full = e.full_admission
    waited = 0  # steps the prompts have waited under batch waiting (Engine.hold_iters)
    # the scheduling ranks (one without attention-DP): each request's, its share of the budget
    ranks = Ranks(
        e.ranks, -(-max_running // e.ranks), e.balance_timeout, e.balance_wait, e.balance_kind
    )
    rank_of = [0] * n
    rank_budget = budget / ranks.count
    rank_floor = PROMPT_BUDGET_FLOOR * rank_budget

    def preempt() -> tuple[int, float, float]:
        """``_preempt`` on this replica's state (the newest decoder back to the queue, off its
        rank)."""
        out = _preempt(
            dec_order, decoding, heap, gen, resume, join_step, pre_left, pre_pos, isl, kv_off,
            charge, S, q, waiting, n_dec, ctx_base, kv_base,
        )  # fmt: skip
        r = rank_of[waiting[0]]
        ranks.decoding[r] -= 1
        ranks.placed[r] -= 1
        if e.max_preemptions and counts["preemptions"] >= e.max_preemptions:
            raise Thrashing(f"more than {e.max_preemptions} preemptions {THRASHING}")
        return out

    def running() -> bool:  # (a preemption that left nothing running blocks nothing)
        return bool(prefilling or n_dec)

    def admit_need(i: int) -> float:
        shared = plen[i] if pid[i] >= 0 and pid[i] in resident else 0
        own = isl[i] - shared + (full_osl[i] if full else 0)
        return float(own)

    while done < n:
        while pending and pending[0][0] <= t:
            waiting.append(heapq.heappop(pending)[1])
        # ---- admission (FCFS: the head waits, so does everyone behind it) ----
        while waiting and len(prefilling) + n_dec < max_running and not (blocked and running()):
            i = waiting[0]
            r = ranks.place()
            need = admit_need(i) if resume[i] < 0 else float(pre_left[i])
            held = reserved if full else kv_pre + kv_base + n_dec * q * S
            if held + pinned + need > (cap if full else cap * (1.0 - KV_WATERMARK)):
                if not prefilling and n_dec == 0:  # never fits, even alone: dropped
                    waiting.popleft()
                    counts["rejected"] += 1
                    done += 1
                    if clients and next_issue < n:
                        issue[next_issue] = t
                        heapq.heappush(pending, (t + overhead, next_issue))
                        next_issue += 1
                    continue
                break
            waiting.popleft()
            rank_of[i] = r
            ranks.placed[r] += 1
            if resume[i] < 0:
                shared = plen[i] if pid[i] >= 0 and pid[i] in resident else 0
                pre_pos[i] = shared
                pre_left[i] = isl[i] - shared
            start[i] = pre_pos[i]
            charge[i] = need
            if full:
                reserved += need
            if not prefilled or resume[i] >= 0:  # a preempted request recomputes here
                prefilling.append(i)
                continue
            # a decode worker: the prompt's KV arrived; decode from the next step on
            pre_pos[i] = isl[i]
            if nsteps[i] == 0:
                finish[i] = t
                reserved -= charge[i] if full else 0.0
                ranks.placed[r] -= 1
                done += 1
                continue
            ranks.decoding[r] += 1
            join_step[i] = S
            ctx_base += isl[i] + 1.0 - q * S
            kv_base += isl[i] + 1.0 - q * S
            n_dec += 1
            decoding.add(i)
            dec_order.append(i)
            heapq.heappush(heap, (S + nsteps[i], i, gen[i]))
        if not prefilling and n_dec == 0:
            if not pending:
                break
            t = max(t, pending[0][0])
            continue
        counts["events"] += 1
        p, pctx, chunks = 0, 0.0, []
        if prefilling:  # the prompt chunks a step takes: each rank's rest of its budget share
            room = [max(rank_budget - d * e.query, rank_floor) for d in ranks.decoding]
            used = [0] * ranks.count
            full_ranks = 0
            for i in prefilling:
                r = rank_of[i]
                if used[r] < 0:  # that rank is full: its older prompts go first
                    continue
                c = min(pre_left[i], int(room[r]) - used[r], int(e.chunk_cap))
                if c <= 0:
                    used[r] = -1
                    full_ranks += 1
                    if full_ranks == ranks.count:
                        break
                    continue
                chunks.append((i, c))
                pctx += c * (pre_pos[i] + c / 2.0)
                p += c
                used[r] += c
        # batch waiting: those chunks and the decode tokens under the share of the budget hold
        # the prompts back (decode steps meanwhile); the attention-DP balance holds them until
        # every rank has one (sim_ranks)
        hold = bool(prefilling and e.hold_iters and n_dec and waited < e.hold_iters)
        hold = hold and p + n_dec * e.query < e.hold_tokens
        waited = waited if hold else 0
        balance = 0
        if prefilling and ranks.timeout:  # the attention-DP hold: the chunks that go, the wait
            chunks, balance = ranks.gate(chunks, rank_of, lambda i: pre_pos[i] == start[i])
            p = sum(c for _, c in chunks)
            pctx = sum(c * (pre_pos[i] + c / 2.0) for i, c in chunks)
        hold = hold or balance > 0
        if prefilling and not hold:
            # ---- one step with prompt chunks ----
            ctx = (ctx_base + n_dec * q * S) / n_dec if n_dec else 0.0
            if not full:
                grow = n_dec * q + p
                while n_dec and kv_pre + kv_base + n_dec * q * S + pinned + grow > cap:
                    n_dec, ctx_base, kv_base = preempt()
                    counts["preemptions"] += 1
                    blocked = True
                    grow = n_dec * q + p
                ctx = (ctx_base + n_dec * q * S) / n_dec if n_dec else 0.0
            t += table.mixed(n_dec, p, ctx, pctx / p if p else 0.0)
            S += 1
            counts["steps"] += 1
            finished_prompt = []
            for i, c in chunks:
                pre_left[i] -= c
                pre_pos[i] += c
                kv_pre += c
                if pre_left[i] == 0:
                    finished_prompt.append(i)
            for i in finished_prompt:
                prefilling.remove(i)
                kv_pre -= pre_pos[i] - start[i]
                kv_off[i] = start[i]
                if pid[i] >= 0 and plen[i] > 0 and pid[i] not in resident:
                    resident.add(pid[i])  # the cache now holds it once
                    pinned += plen[i]
                    kv_off[i] = plen[i]
                    charge[i] -= plen[i]
                    if full:
                        reserved -= plen[i]
                left = nsteps[i] if resume[i] < 0 else resume[i]
                if resume[i] < 0:
                    first[i] = t
                resume[i] = -1
                if left == 0:
                    finish[i] = t
                    reserved -= charge[i] if full else 0.0
                    ranks.placed[rank_of[i]] -= 1
                    blocked = False
                    done += 1
                    if clients and next_issue < n:
                        issue[next_issue] = t
                        heapq.heappush(pending, (t + overhead, next_issue))
                        next_issue += 1
                    continue
                ctx_i = pre_pos[i] + 1.0
                ranks.decoding[rank_of[i]] += 1
                join_step[i] = S
                ctx_base += ctx_i - q * S
                kv_base += ctx_i - kv_off[i] - q * S
                n_dec += 1
                decoding.add(i)
                dec_order.append(i)
                heapq.heappush(heap, (S + left, i, gen[i]))
        else:
            # ---- decode steps until the next event ----
            k = heap[0][0] - S
            ctx = (ctx_base + n_dec * q * S) / n_dec
            if pending and not waiting and len(prefilling) + n_dec < max_running:
                wait = pending[0][0] - t
                k = max(1, min(k, math.ceil(wait / table.decode(n_dec, ctx))))
            if hold:  # until the timeout at most
                k = max(1, min(k, balance if balance else e.hold_iters - waited))
            if not full:
                room_kv = cap - (kv_pre + kv_base + n_dec * q * S + pinned)
                k_kv = int(room_kv // (n_dec * q))
                if k_kv < 1:
                    n_dec, ctx_base, kv_base = preempt()
                    counts["preemptions"] += 1
                    blocked = True
                    continue
                k = min(k, k_kv)
            t += k * table.decode(n_dec, ctx + q * (k - 1) / 2.0)
            S += k
            counts["steps"] += k
            if balance:
                ranks.held(k)
            elif hold:
                waited += k
            elif not prefilling:
                ranks.idle(k)
        while heap and heap[0][0] <= S:
            _, i, g = heapq.heappop(heap)
            if g != gen[i]:
                continue
            finish[i] = t
            n_dec -= 1
            decoding.discard(i)
            ranks.decoding[rank_of[i]] -= 1
            ranks.placed[rank_of[i]] -= 1
            ctx_base -= (pre_pos[i] + 1.0) - q * join_step[i]
            kv_base -= (pre_pos[i] + 1.0) - kv_off[i] - q * join_step[i]
            if full:
                reserved -= charge[i]
            blocked = False
            done += 1
            if clients and next_issue < n:
                issue[next_issue] = t
                heapq.heappush(pending, (t + overhead, next_issue))
                next_issue += 1
        if not n_dec:
            ctx_base = kv_base = 0.0  # clear rounding drift
            dec_order.clear()
    return np.asarray(issue), np.asarray(first), np.asarray(finish)


def _preempt(
    dec_order, decoding, heap, gen, resume, join_step, pre_left, pre_pos, isl, kv_off,
    charge, S, q, waiting, n_dec, ctx_base, kv_base,
):  # fmt: skip
    """Preempt the newest decoding request (recompute: it returns to the head of the queue
    with its prompt and the tokens it has so far to prefill again)."""
    while dec_order and dec_order[-1] not in decoding:
        dec_order.pop()
    i = dec_order.pop()
    decoding.discard(i)
    finish_step = next(fs for fs, j, g in heap if j == i and g == gen[i])
    gen[i] += 1
    made = int(q * (S - join_step[i]))
    resume[i] = max(finish_step - S, 1)
    shared = kv_off[i]  # a resident prefix is not recomputed
    ctx_i = pre_pos[i] + 1.0
    ctx_base -= ctx_i - q * join_step[i]
    kv_base -= ctx_i - shared - q * join_step[i]
    pre_pos[i] = shared
    pre_left[i] = isl[i] + made - shared
    charge[i] = float(pre_left[i])
    waiting.appendleft(i)
    if n_dec - 1 == 0:
        ctx_base = kv_base = 0.0
    return n_dec - 1, ctx_base, kv_base


def few_rounds_note(traffic: Traffic) -> list[str]:
    """A note where a closed loop whose clients start spread (the steady state asked for, not a
    benchmark's start-up) simulates fewer than ``STEADY_REQUESTS_PER_CLIENT`` requests a client:
    its statistics still hold the start-up."""
    n, clients = traffic.count, traffic.clients
    need = steady_requests(clients)
    if traffic.clients_start != "spread" or n >= need:
        return []
    return [
        f"{n:,} requests for {clients:,} clients ({n / clients:.1f} a client): a closed loop "
        f"needs about {STEADY_REQUESTS_PER_CLIENT} a client before its statistics settle, so "
        f"these still hold its start-up; simulate {need:,} requests (--num-requests)"
    ]
