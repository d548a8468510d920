"""Balls into bins: what uniformly random hashes put into the slots of an index file, computed
with the standard library alone (no rmqlab code), for the tests that judge the capacity model's
analytic occupancy and chains against measured files.

Keys are hashed independently and uniformly into m slots. A key stored r times (a hot key:
every entry of one hash is chained in that hash's slot, IndexFile.putKey) puts r entries in one
slot: the stated model for hot keys. So a file is described by its multiplicities: how many
distinct keys it holds r times, for each r. One slot's load (its chain length) is then
``sum over r of r x Binomial(keys held r times, 1/m)``, the slots' loads are negatively
associated (Dubhashi and Ranjan, 1998: balls into bins), so any non-decreasing function of a
slot's load (load >= k, load squared) summed over the slots has at most the variance of a sum of
independent copies. That is the bound the tests' tolerances use where no exact variance is given
here; the occupied-slot count has its exact variance.
"""
from __future__ import annotations

import math


def occupied_mean(distinct: int, m: int) -> float:
    """Expected slots holding an entry when `distinct` keys hash into `m` slots: m (1 - (1 - 1/m)^D)."""
    return m * (1.0 - (1.0 - 1.0 / m) ** distinct)


def occupied_sd(distinct: int, m: int) -> float:
    """Exact standard deviation of the occupied-slot count: with a = (1 - 1/m)^D, the chance a
    slot is empty, and b = (1 - 2/m)^D, the chance two given slots are, the empty count has
    variance m a + m (m - 1) b - m^2 a^2 (the sum of the indicators' covariances)."""
    a = (1.0 - 1.0 / m) ** distinct
    b = (1.0 - 2.0 / m) ** distinct if m > 1 else 0.0
    return math.sqrt(max(0.0, m * a + m * (m - 1) * b - m * m * a * a))


def _binomial_pmf(n: int, p: float, kmax: int) -> list[float]:
    out = []
    for k in range(min(n, kmax) + 1):
        log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
        log += (n - k) * math.log1p(-p) if p < 1 else (0.0 if n == k else -math.inf)
        out.append(math.exp(log))
    return out + [0.0] * (kmax + 1 - len(out))


def load_distribution(multiplicities: dict[int, int], m: int, kmax: int = 200) -> list[float]:
    """P(a given slot's chain holds k entries), k = 0..kmax, for distinct keys held
    `multiplicities[r]` of them r times each: the convolution over r of r x Binomial(count, 1/m).
    The mass beyond kmax is dropped (kmax well past any chain the tests meet)."""
    dist = [1.0] + [0.0] * kmax
    for r, count in sorted(multiplicities.items()):
        pmf = _binomial_pmf(count, 1.0 / m, kmax // r)
        new = [0.0] * (kmax + 1)
        for j, pj in enumerate(pmf):
            if pj == 0.0:
                continue
            shift = j * r
            for k in range(kmax + 1 - shift):
                new[k + shift] += dist[k] * pj
        dist = new
    return dist


def tail(dist: list[float], k: int) -> float:
    """P(load >= k) of a load distribution."""
    return max(0.0, 1.0 - sum(dist[:k]))


def moment(dist: list[float], f) -> float:
    return sum(p * f(k) for k, p in enumerate(dist))


def max_load_probabilities(dist: list[float], m: int, k: int) -> tuple[float, float]:
    """Bounds on the largest chain of a file: (an upper bound on P(max >= k), an upper bound on
    P(max < k)). The first is the union bound m P(load >= k); the second holds because the
    loads are negatively associated: P(every load < k) <= P(load < k)^m."""
    p = tail(dist, k)
    return min(1.0, m * p), (1.0 - p) ** m
