"""Statistics of random top-k routing that the MoE costs use: the tiles a grouped GEMM launches
per expert when tokens land on experts at random (``expected_row_tiles``), the busiest
expert-parallel rank's load over the mean (``moe_rank_imbalance``), from the draw of tokens and
from the experts' unequal popularity (``specs.engine.EXPERT_POPULARITY_CV``), and the experts
the busiest rank touches (``busiest_rank_experts``), whose weights it streams."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

Array = np.ndarray

# 0.5 erfc(6.5) = 1.9e-20 (A & S 7.1.26 below gives 2.0e-20 there), far under half an ulp of a
# sum >= 1 (1.1e-16): a term past it cannot change such a sum
ERFC_NEGLIGIBLE_Z = 6.5


def _erfc(x: Array) -> Array:
    """Complementary error function (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7; numpy has
    none and scipy is not a dependency)."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    half = poly * np.exp(-z * z)
    return np.where(x >= 0, half, 2.0 - half)


def expected_row_tiles(rows: Array, tile: float, widest: float | None = None) -> Array:
    """E[ceil(X / tile) | X > 0] for a group's row count X ~ Poisson(rows): the tiles a grouped
    GEMM launches per active group when tokens land on experts at random (per-expert counts are
    binomial, ~Poisson). Smooth in the mean, unlike ceil(rows / tile): a mean of 64 rows is
    ~1.5 tiles of 64, half the groups spilling into a second tile. Normal approximation with
    continuity correction for the tail terms P(X > j tile), j >= 1 (each 1 well below the mean,
    0 well above it). ``widest``: the largest row count of the call whose subset ``rows`` is
    (its spread bounds the series, so a subset sums the same terms as the whole)."""
    mu = np.maximum(np.asarray(rows, dtype=float), 0.0)
    shape = mu.shape
    mu = mu.ravel()
    sigma = np.sqrt(np.maximum(mu, 1e-9))
    full = np.maximum(np.floor((mu - 8.0 * sigma) / tile), 0.0)  # terms j = 1 .. full are ~1
    spread = float(np.max(sigma, initial=0.0))
    if widest is not None:
        spread = max(spread, float(np.sqrt(max(widest, 1e-9))))
    width = int(min(np.ceil(16.0 * spread / tile) + 2, 400))
    total = 1.0 + full
    scale = sigma * np.sqrt(2.0)
    # the terms fall as z = (edge - mu) / (sigma sqrt 2) rises with j; from z >= ERFC_NEGLIGIBLE_Z
    # on a term is under half an ulp of the total (>= 1), and adding it leaves the total as it
    # is: each row count stops there (the same sum, fewer terms)
    live = None  # the row counts still summing (None: all of them)
    f_l, mu_l, sc_l = full, mu, scale
    for w in range(1, width + 1):
        z = ((f_l + w) * tile + 0.5 - mu_l) / sc_l
        keep = z < ERFC_NEGLIGIBLE_Z
        if not np.all(keep):
            live = np.flatnonzero(keep) if live is None else live[keep]
            f_l, mu_l, sc_l, z = f_l[keep], mu_l[keep], sc_l[keep], z[keep]
        if z.size == 0:
            break
        if live is None:
            total = total + 0.5 * _erfc(z)
        else:
            total[live] = total[live] + 0.5 * _erfc(z)
    return total.reshape(shape)


def moe_rank_imbalance(
    pairs_per_rank: Array,
    ep: Array,
    skew: float,
    top_k: float = 1.0,
    experts_local: Array = 1.0,
    popularity_cv: float = 0.0,
) -> Array:
    """Busiest EP rank's token-expert pairs over the mean (>= 1) under top-k routing.

    Two spreads, added in quadrature:
    * the draw (balls into bins, Raab & Steger 1998; moe-comm.md 3): m pairs into n = ep ranks
      land at most m/n + sqrt(2 (m/n) ln n), i.e. skew x sqrt(2 ln n / (m/n)); ``skew`` = 1 is
      uniform multinomial routing;
    * the experts' popularity: a rank's share is the sum of its e local experts' shares, whose
      spread is ``popularity_cv`` / sqrt(e), and the busiest of n ranks sits sqrt(2 ln n) spreads
      above the mean, whatever the batch (``specs.engine.EXPERT_POPULARITY_CV``; 0 = equally
      popular).

    Capped where a rank holds every pair its tokens can send it (min(top_k, local experts) per
    token). No EP (ep = 1): 1.

    Examples: 1024 pairs per rank over 8 ranks, uniform, equally popular experts:
    1 + sqrt(2 ln 8 / 1024) = 1.064. TB4's case (32 ranks of 8 experts, popularity 1.68, a
    batch so large the draw vanishes): 1 + 1.68 x sqrt(2 ln 32 / 8) = 2.564.
    """
    n = np.maximum(np.asarray(ep, dtype=float), 1.0)
    mean = np.maximum(np.asarray(pairs_per_rank, dtype=float), 1e-9)
    excess = skew * np.sqrt(2.0 * np.log(n) / mean)
    if popularity_cv > 0:
        local = np.maximum(np.asarray(experts_local, dtype=float), 1.0)
        popular = popularity_cv * np.sqrt(2.0 * np.log(n) / local)
        excess = np.sqrt(excess * excess + popular * popular)
    cap = n * np.minimum(top_k, np.asarray(experts_local, dtype=float)) / max(top_k, 1e-9)
    return np.where(n > 1, np.minimum(1.0 + excess, np.maximum(cap, 1.0)), 1.0)


@lru_cache(maxsize=256)
def _normal_max_of(count: float) -> float:
    x = np.linspace(-12.0, 12.0, 48001)
    phi = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
    cdf = np.clip(np.cumsum(phi) * (x[1] - x[0]), 0.0, 1.0)
    return float(np.trapezoid(x * count * phi * cdf ** (count - 1.0), x))


def normal_max_mean(count: Array) -> Array:
    """E[max of ``count`` standard normals] by quadrature on a fine grid (once per distinct
    count, kept): the integral of x count phi(x) Phi(x)^(count - 1). 0 for one, 1/sqrt(pi) =
    0.564 for two, 1.423 for eight."""
    values, inverse = np.unique(np.asarray(count, dtype=float), return_inverse=True)
    means = np.array([_normal_max_of(float(c)) for c in values])
    return means[inverse].reshape(np.shape(count))


def busiest_rank_experts(tokens: Array, experts: Array, top_k: float, ep: Array) -> Array:
    """E[distinct experts the busiest of ``ep`` EP ranks touches] when ``tokens`` tokens each
    pick ``top_k`` of ``experts`` experts uniformly (without replacement), the experts split
    evenly over the ranks: the weights the busiest rank's grouped GEMMs stream, which bound a
    small batch's MoE time (the step waits for the busiest rank at the combine).

    Each of a rank's e_l = experts / ep experts is touched with probability
    p = 1 - (1 - k / E)^t, so a rank's count is about Binomial(e_l, p) (mean e_l p, the count
    ``ops.layer_group_ops`` gives every rank), and the busiest of n ranks holds
    e_l p + E[max of n standard normals] sqrt(e_l p (1 - p)) (:func:`normal_max_mean`), at
    most e_l. Without EP, the mean. Uniform routing: the experts' unequal popularity
    (``EXPERT_POPULARITY_CV``) moves the pairs a rank holds (:func:`moe_rank_imbalance`) but
    which way it moves the experts they touch is not known, so it does not enter.

    Example: DeepSeek-R1 (256 experts, top-8) on EP 8 at 4 tokens: p = 1 - (1 - 8/256)^4 =
    0.119; the mean rank touches 32 x 0.119 = 3.82 experts, the busiest 3.82 + 1.423 x
    sqrt(32 x 0.119 x 0.881) = 6.43 (1.68x: its expert weights take 1.68x the mean rank's
    time). A Monte Carlo of the draw gives 6.58 (tests/test_moe_physics.py).
    """
    return _touched(tokens, experts, top_k, ep)[1]


def busiest_touch_ratio(tokens: Array, experts: Array, top_k: float, ep: Array) -> Array:
    """The busiest rank's touched experts over the mean rank's (:func:`busiest_rank_experts`
    over e_l p; 1 without EP, and where no expert is touched)."""
    mean, busiest = _touched(tokens, experts, top_k, ep)
    return np.where(mean > 0, busiest / np.maximum(mean, 1e-30), 1.0)


def rank_experts(tokens: Array, experts: Array, top_k: float, ep: Array) -> Array:
    """E[distinct experts one of ``ep`` EP ranks touches] (the mean rank,
    :func:`busiest_rank_experts`): e_l p, p = 1 - (1 - k / E)^t."""
    local, p = _touch(tokens, experts, top_k, ep)
    return local * p


def reach_share(top_k: Array | float, groups: Array) -> Array:
    """The share of ``groups`` equal groups of experts (EP ranks, nodes) one token's ``top_k``
    picks reach, 1 - (1 - 1/n)^k (uniform routing, picks independent; 1 for one group)."""
    n = np.maximum(np.asarray(groups, dtype=float), 1.0 + 1e-9)
    return -np.expm1(np.asarray(top_k, dtype=float) * np.log1p(-1.0 / n))


def _touch(tokens: Array, experts: Array, top_k: float, ep: Array) -> tuple[Array, Array]:
    """(a rank's experts e_l, the chance p that ``tokens`` tokens touch one of them)."""
    e = np.maximum(np.asarray(experts, dtype=float), 1.0)
    local = e / np.maximum(np.asarray(ep, dtype=float), 1.0)
    return local, 1.0 - np.power(1.0 - np.minimum(top_k / e, 1.0), np.asarray(tokens, dtype=float))


def _touched(tokens: Array, experts: Array, top_k: float, ep: Array) -> tuple[Array, Array]:
    """(the mean rank's, the busiest rank's) touched experts (:func:`busiest_rank_experts`)."""
    local, p = _touch(tokens, experts, top_k, ep)
    spread = normal_max_mean(np.maximum(np.asarray(ep, dtype=float), 1.0))
    spread = spread * np.sqrt(local * p * (1.0 - p))
    return local * p, np.minimum(local * p + spread, local)
