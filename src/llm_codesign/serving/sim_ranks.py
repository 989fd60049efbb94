"""The scheduling ranks of the request simulator's replica (``serving.simulate``): under
attention-DP each request lives on one rank, which schedules it with its own share of the token
budget and of the running-batch limit, and an attention-DP hold (TensorRT-LLM's context balance,
SGLang's prefill delayer) holds the ranks' prompts back until each rank has one. Without
attention-DP a replica is one rank.

* Placement: a request the replica admits goes to the rank holding the fewest requests (running
  or prefilling; the lowest index among equals), as TensorRT-LLM's executor request queue
  balances new requests across ranks (``expected_num_active_requests``: only ranks under the
  mean take new ones) and vLLM's data-parallel coordinator picks the least-loaded engine.
  SGLang's data-parallel controller dispatches round robin by default
  (``--load-balance-method round_robin``), which does not follow the ranks' load: not
  modelled, SGLang's requests are placed least-loaded here too.
* The balance (TensorRT-LLM ``attention_dp_config``: ``enable_balance``, ``timeout_iters`` T,
  ``batching_wait_iters`` b; ``PyExecutor._balance_adp_requests``, read at the source of 1.1
  and of its later ``RequestScheduler._balance_adp_context_requests``): every iteration, where
  every rank has a prompt scheduled and a free batch slot, the waiting count restarts and the
  prompts go (after b more iterations where every rank also decodes); else the count grows by
  one and the prompts wait, until it reaches T or some rank has nothing decoding: then the
  prompts that are scheduled go and the count restarts. The count runs in iterations without
  any prompt too, so rounds at the timeout fall every T iterations, and restarts in every
  iteration where some rank has nothing decoding.
  ``serving.balance.adp_balance_window`` prices the same rule in the mean (half a window's wait).
* SGLang's prefill delayer (``--enable-prefill-delayer``, ``--prefill-delayer-max-delay-passes``
  T + 1; ``PrefillDelayer._negotiate_should_allow_prefill_pure``; engine ``adp_balance_kind``
  ``delayer``): where some rank can prefill and another cannot, a delay episode counts the passes
  it delays, from its first, and lets the prompts through at T of them or when every rank can
  prefill, which ends the episode; a pass where no rank has a new prompt ends it too. A lone
  prompt waits the whole T. A pass with nothing to run is an idle loop of the scheduler, not a
  forward pass: where no rank decodes, the simulator lets the prompts through and ends the
  episode (its remaining delay passes take no GPU time). The delayer gates new prompts only
  (``PrefillAdder.add_one_req``); a prompt whose chunked prefill has begun goes on in a delayed
  pass (counted as one). SGLang's token-usage watermark (``--prefill-delayer-token-usage-low-
  watermark``, off by default) is not modelled. The executor's balance holds every context
  chunk (InferenceX's TensorRT-LLM recipes prefill a prompt in one chunk).
"""

from __future__ import annotations

from collections.abc import Callable


class Ranks:
    """Per-rank placement and the context balance of one replica (module docstring).

    ``count`` ranks, each running at most ``running`` requests; ``timeout`` T and ``wait`` b of
    the balance (T = 0: no balance); ``kind``, which hold it is (``specs.engine
    .ADP_BALANCE_KINDS``: TensorRT-LLM's ``executor`` balance or SGLang's prefill ``delayer``)."""

    def __init__(
        self, count: int, running: int, timeout: int = 0, wait: int = 0, kind: str = "executor"
    ) -> None:
        self.count = max(int(count), 1)
        self.running = max(int(running), 1)
        self.timeout = int(timeout) if self.count > 1 else 0
        self.wait = int(wait)
        self.delayer = kind == "delayer"
        self.placed = [0] * self.count  # requests placed on each rank, not yet finished
        self.decoding = [0] * self.count  # of them, those decoding
        self.count_iters = 0  # the balance's waiting count
        self.batching = 0  # its batching-wait count
        self.batching_hold = False  # the last hold was the batching wait's

    def place(self) -> int:
        """The rank a request admitted now goes to: the least loaded. It has room wherever the
        replica has (``running`` = ceil(max_running / count)), so the replica's limit keeps
        each rank within its share."""
        return min(range(self.count), key=self.placed.__getitem__)

    def hold(self, scheduled: int) -> int:
        """Iterations the balance holds this iteration's prompts back, ``scheduled`` ranks
        having a prompt chunk scheduled: 0, the step takes them now (the counts updated as the
        executor does); k > 0, this iteration and up to k - 1 more decode without them (the
        caller then calls :meth:`held` with the iterations it ran)."""
        self.batching_hold = False
        if not self.timeout:
            return 0
        if self.delayer:  # an episode of delayed passes, from its first; idle passes are free
            done = scheduled in (0, self.count) or self.count_iters >= self.timeout
            if done or not any(self.decoding):
                self.count_iters = 0  # the pass that lets them go (or has none) ends it
                return 0
            return self.timeout - self.count_iters
        if not scheduled:
            return 0
        every_decodes = all(d > 0 for d in self.decoding)
        free = all(d < self.running for d in self.decoding)
        if scheduled == self.count and free:
            self.count_iters = 0
            if every_decodes and self.batching < self.wait:
                self.batching_hold = True
                return self.wait - self.batching
            self.batching = 0
            return 0
        if not every_decodes or self.count_iters + 1 >= self.timeout:
            self.count_iters = 0
            return 0
        return self.timeout - 1 - self.count_iters

    def gate(
        self, chunks: list[tuple[int, int]], rank_of: list[int], fresh: Callable[[int], bool]
    ) -> tuple[list[tuple[int, int]], int]:
        """(the prompt chunks (request, tokens) a step takes, the decode iterations the held
        ones wait: 0 where none are held); ``rank_of`` each request's rank, ``fresh`` whether a
        request's prefill has not begun. The executor holds every chunk; the delayer holds the
        fresh ones and lets begun prompts go on (a delayed pass)."""
        if not self.timeout or not chunks:
            return chunks, 0
        if not self.delayer:
            k = self.hold(len({rank_of[i] for i, _ in chunks}))
            return (chunks, 0) if k == 0 else ([], k)
        k = self.hold(len({rank_of[i] for i, _ in chunks if fresh(i)}))
        if k == 0:
            return chunks, 0
        begun = [(i, c) for i, c in chunks if not fresh(i)]
        if begun:
            self.held(1)
            return begun, 0
        return [], k

    def held(self, iters: int) -> None:
        """``iters`` iterations passed holding the prompts, as the last :meth:`hold` said (the
        batching wait's, after every rank had one, or the timeout's)."""
        if self.batching_hold:
            self.batching += iters
        else:
            self.count_iters += iters

    def idle(self, iters: int) -> None:
        """``iters`` iterations passed with no prompt scheduled on any rank: the executor's
        waiting count runs on, restarting at every timeout and in every iteration where some
        rank has nothing decoding; the delayer's episode ends."""
        if self.delayer or not all(d > 0 for d in self.decoding):
            self.count_iters = 0
        elif self.timeout:
            self.count_iters = (self.count_iters + iters) % self.timeout
