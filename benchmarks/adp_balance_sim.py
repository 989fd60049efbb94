"""TensorRT-LLM's attention-DP context balance in a closed loop, simulated iteration by iteration
against the model's closed form (issue 11: the attention-DP TTFT class).

The rule simulated is the executor's (``PyExecutor._balance_adp_requests``, TensorRT-LLM
1.1-1.2, read at the source; its one home is ``serving.sim_ranks.Ranks``, which the request
simulator runs too: this script keeps a loop of whole iterations, without step times): a
rank's scheduled context requests are held back until every rank holds one and has a free
batch slot, or until ``timeout_iters`` iterations have passed in
which that was not so (the counter runs every iteration and restarts when contexts go through);
every rank then releases what its scheduler took this iteration: one prompt per rank where
``max_num_tokens`` holds one (InferenceX's scripts: ISL + batch + 64, rounded up). A rank holds
``N`` requests (clients / ranks); a request decodes ``D`` iterations (OSL over the tokens a
step yields, drawn on 0.8 .. 1 x its mean as the InferenceX client draws lengths); when it
finishes, its client's next request arrives at the same rank (the least-loaded one).

The model (``serving.balance.adp_balance_window``) waits half a round window W = min(T, coupon
collector time). The simulation shows where that holds (rounds triggered by every rank holding
a prompt) and where it does not: with rounds at the timeout, a rank that receives two prompts
in one window releases one, and the second waits for a later round, so the mean wait exceeds
T / 2 by 40-70% for the InferenceX 8k/1k 64-client and 1k/8k 256-client runs.

Run: python benchmarks/adp_balance_sim.py [--iters 40000]
"""

from __future__ import annotations

import argparse

import numpy as np

from llm_codesign.serving.sim_ranks import Ranks

RANKS = 8
TIMEOUT = 60
H_R = sum(1.0 / k for k in range(1, RANKS + 1))

# the InferenceX DeepSeek-R1 H200 TensorRT-LLM attention-DP runs (inferencex_hopper.csv) by what
# the iteration counts depend on: clients, mean OSL (0.9 x OSL) and the tokens a step yields (1
# without MTP, 1 + 0.65 with one MTP draft). ISL does not enter them: a rank releases one prompt
# per round at 1k and 8k alike (the runs' max_num_tokens hold one), so 1k/1k and 8k/1k share a row
RUNS = (
    ("8k/1k c64", 64, 921.6, 1.0),
    ("8k/1k c64 MTP", 64, 921.6, 1.65),
    ("1k/1k and 8k/1k c128 MTP", 128, 921.6, 1.65),
    ("1k/1k and 8k/1k c256 MTP", 256, 921.6, 1.65),
    ("1k/8k c256 MTP", 256, 7372.8, 1.65),
)


def simulate(per_rank: int, decode_iters: float, iters: int, seed: int = 0) -> tuple[float, float]:
    """(mean iterations a prompt waits for its round, prompts per iteration) in steady state."""
    rng = np.random.default_rng(seed)
    lo, hi = 0.8 * decode_iters / 0.9, decode_iters / 0.9  # lengths on 0.8 .. 1 x L

    def length() -> int:
        return max(int(rng.uniform(lo, hi)), 1)

    pending: list[list[int]] = [[] for _ in range(RANKS)]
    left = [list(rng.integers(1, int(hi) + 1, per_rank)) for _ in range(RANKS)]
    waits: list[int] = []
    ranks = Ranks(RANKS, per_rank, TIMEOUT)  # the executor's rule (serving.sim_ranks)
    for it in range(iters):
        ctx = [min(len(p), 1) for p in pending]  # one prompt per rank fits max_num_tokens
        ranks.decoding[:] = [len(d) for d in left]
        release = ctx
        if not any(ctx):
            ranks.idle(1)
        elif ranks.hold(sum(ctx)):
            ranks.held(1)
            release = [0] * RANKS
        for r in range(RANKS):
            still = []
            for x in left[r]:
                if x > 1:
                    still.append(x - 1)
                else:
                    pending[r].append(it + 1)  # the client's next request
            left[r] = still
            for _ in range(release[r]):
                arrived = pending[r].pop(0)
                if it >= iters // 10:
                    waits.append(it - arrived)
                left[r].append(length())
    return float(np.mean(waits)), len(waits) / (iters - iters // 10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40000)
    args = ap.parse_args()
    print("| run | clients per rank | prompts per iteration | model W / 2 | simulated wait |")
    print("|---|---:|---:|---:|---:|")
    for name, clients, osl, per_step in RUNS:
        n = clients // RANKS
        wait, lam = simulate(n, osl / per_step, args.iters)
        cover = RANKS / lam * H_R  # the coupon collector's iterations to cover every rank
        model = 0.5 * min(cover, TIMEOUT)
        print(f"| {name} | {n} | {lam:.3f} | {model:.1f} | {wait:.1f} |")


if __name__ == "__main__":
    main()
