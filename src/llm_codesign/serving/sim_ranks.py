"""The scheduling ranks of the request simulator's replica (``serving.simulate``): under
attention-DP each request lives on one rank, which schedules it with its own share of the token
budget and of the running-batch limit, and TensorRT-LLM's attention-DP context balance holds
every rank's prompts back until each rank has one. Without attention-DP a replica is one rank.

* Placement: a request the replica admits goes to the rank holding the fewest requests (running
  or prefilling; the lowest index among equals), as TensorRT-LLM's executor request queue
  balances new requests across ranks (``expected_num_active_requests``: only ranks under the
  mean take new ones) and vLLM's data-parallel coordinator picks the least-loaded engine.
  SGLang's data-parallel controller dispatches round robin by default
  (``--load-balance-method round_robin``), which a closed loop at its batch limit turns into
  the same placement (a rank takes a request when one of its own finishes); open-loop traffic
  on SGLang is placed least-loaded here too.
* The balance (TensorRT-LLM ``attention_dp_config``: ``enable_balance``, ``timeout_iters`` T,
  ``batching_wait_iters`` b; ``PyExecutor._balance_adp_requests``, read at the source of 1.1
  and of its later ``RequestScheduler._balance_adp_context_requests``): every iteration, where
  every rank has a prompt scheduled and a free batch slot, the waiting count restarts and the
  prompts go (after b more iterations where every rank also decodes); else the count grows by
  one and the prompts wait, until it reaches T or some rank has nothing decoding: then the
  prompts that are scheduled go and the count restarts. The count runs in iterations without
  any prompt too, so rounds at the timeout fall every T iterations.
  ``serving.balance.adp_balance_window`` prices the same rule in the mean (half a window's wait).
"""

from __future__ import annotations


class Ranks:
    """Per-rank placement and the context balance of one replica (module docstring).

    ``count`` ranks, each running at most ``running`` requests; ``timeout`` T and ``wait`` b of
    the balance (T = 0: no balance)."""

    def __init__(self, count: int, running: int, timeout: int = 0, wait: int = 0) -> None:
        self.count = max(int(count), 1)
        self.running = max(int(running), 1)
        self.timeout = int(timeout) if self.count > 1 else 0
        self.wait = int(wait)
        self.placed = [0] * self.count  # requests placed on each rank, not yet finished
        self.decoding = [0] * self.count  # of them, those decoding
        self.count_iters = 0  # the balance's waiting count
        self.batching = 0  # its batching-wait count
        self.batching_hold = False  # the last hold was the batching wait's

    def place(self) -> int:
        """The rank a request admitted now goes to, or -1 where every rank is full."""
        r = min(range(self.count), key=self.placed.__getitem__)
        return r if self.placed[r] < self.running else -1

    def hold(self, scheduled: int) -> int:
        """Iterations the balance holds this iteration's prompts back, ``scheduled`` ranks
        having a prompt chunk scheduled: 0, the step takes them now (the counts updated as the
        executor does); k > 0, this iteration and up to k - 1 more decode without them (the
        caller then calls :meth:`held` with the iterations it ran)."""
        self.batching_hold = False
        if not self.timeout or not scheduled:
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

    def held(self, iters: int) -> None:
        """``iters`` iterations passed holding the prompts, as the last :meth:`hold` said (the
        batching wait's, after every rank had one, or the timeout's)."""
        if self.batching_hold:
            self.batching += iters
        else:
            self.count_iters += iters

    def idle(self, iters: int) -> None:
        """``iters`` iterations passed with no prompt scheduled on any rank: the waiting count
        runs on, restarting at every timeout."""
        if self.timeout:
            self.count_iters = (self.count_iters + iters) % self.timeout
