"""Closed-form queueing results used as independent truth in the tests."""

import math


def erlang_c(c: int, lam: float, mu: float) -> float:
    """Probability an arrival waits in M/M/c (Erlang C)."""
    a = lam / mu
    rho = a / c
    assert rho < 1
    tail = a**c / math.factorial(c) / (1 - rho)
    return tail / (sum(a**k / math.factorial(k) for k in range(c)) + tail)


def mmc_mean_wait(c: int, lam: float, mu: float) -> float:
    return erlang_c(c, lam, mu) / (c * mu - lam)


def mmc_wait_tail(c: int, lam: float, mu: float, t: float) -> float:
    """P(W > t) in M/M/c."""
    return erlang_c(c, lam, mu) * math.exp(-(c * mu - lam) * t)


def pk_mean_wait(lam: float, mean: float, second_moment: float) -> float:
    """Pollaczek-Khinchine mean wait of M/G/1."""
    rho = lam * mean
    assert rho < 1
    return lam * second_moment / (2 * (1 - rho))
