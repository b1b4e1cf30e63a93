"""Closed-form queueing results used as independent truth in the tests.

Loads are in Erlangs (arrival rate times mean service time). Functions raise
``ValueError`` for an unstable queue rather than returning a meaningless number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def _require_stable(rho: float, what: str) -> None:
    if not rho < 1:
        raise ValueError(f"{what} is unstable: utilisation {rho:.6g} >= 1. Fix: lower the arrival rate "
                         "or add capacity.")


def erlang_b(c: int, a: float) -> float:
    """Blocking probability of the Erlang loss system M/G/c/c with offered load ``a`` Erlangs.

    Uses B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)): every intermediate value lies in [0, 1],
    so unlike a^c / c! it neither overflows nor loses precision for large c.
    """
    if c < 0 or a < 0:
        raise ValueError(f"erlang_b needs c >= 0 and a >= 0, got c={c}, a={a}")
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(c: int, lam: float, mu: float) -> float:
    """Probability an arrival waits in M/M/c (Erlang C).

    Computed from Erlang B, C = B / (1 - rho (1 - B)), which is exact and stays finite for
    large c (the factorial form overflows near c = 170).
    """
    a = lam / mu
    rho = a / c
    _require_stable(rho, f"M/M/{c}")
    b = erlang_b(c, a)
    return b / (1 - rho * (1 - b))


def mmc_mean_wait(c: int, lam: float, mu: float) -> float:
    return erlang_c(c, lam, mu) / (c * mu - lam)


def mmc_wait_tail(c: int, lam: float, mu: float, t: float) -> float:
    """P(W > t) in M/M/c."""
    return erlang_c(c, lam, mu) * math.exp(-(c * mu - lam) * t)


def pk_mean_wait(lam: float, mean: float, second_moment: float) -> float:
    """Pollaczek-Khinchine mean wait of M/G/1."""
    rho = lam * mean
    _require_stable(rho, "M/G/1")
    return lam * second_moment / (2 * (1 - rho))


def mmc_mean_sojourn(c: int, lam: float, mu: float) -> float:
    """Mean time in system (wait + service) of FCFS M/M/c."""
    return mmc_mean_wait(c, lam, mu) + 1.0 / mu


def mg1_ps_mean_sojourn(lam: float, mean: float) -> float:
    """Mean sojourn of M/G/1 processor sharing: E[S] / (1 - rho), insensitive to the size law."""
    rho = lam * mean
    _require_stable(rho, "M/G/1-PS")
    return mean / (1 - rho)


def mg1_ps_conditional_sojourn(x: float, lam: float, mean: float) -> float:
    """Mean sojourn of a job of size ``x`` in M/G/1-PS: x / (1 - rho), linear in the size,
    which is why PS is "fair" and why its mean depends on the size law only through E[S]."""
    rho = lam * mean
    _require_stable(rho, "M/G/1-PS")
    return x / (1 - rho)


def mgc_ps_mean_sojourn(c: int, lam: float, mean: float) -> float:
    """Mean sojourn of M/G/c-PS: with n jobs present each is served at rate min(1, c/n).

    The total service rate min(n, c) depends only on n and the discipline is symmetric in
    Kelly's sense, so the queue is insensitive: the number in system has the same law as
    with exponential sizes, where it is the birth-death chain of M/M/c (rate lam up,
    min(n, c)/mean down). Same mean number, same arrival rate, so by Little's law the same
    mean sojourn as FCFS M/M/c with mu = 1/mean. Only the mean (and the law of the number
    in system) coincide: the sojourn distributions of the two disciplines differ.
    """
    return mmc_mean_sojourn(c, lam, 1.0 / mean)


@dataclass(frozen=True)
class TandemStation:
    """One station of a product-form tandem.

    ``discipline`` "fcfs" is M/M/c and needs exponential service (Jackson); "ps" is the
    c-server processor sharing of ``mgc_ps_mean_sojourn`` and allows any size law (BCMP).
    """

    servers: int
    mean: float
    discipline: str = "fcfs"


def product_form_tandem_mean_sojourn(lam: float, stations: Sequence[TandemStation | tuple]) -> float:
    """Mean end-to-end sojourn of a tandem of FCFS M/M/c and/or PS stations fed by Poisson(lam).

    Both station kinds are quasi-reversible: their departures are Poisson(lam) and
    independent of the current state, so every station sees Poisson(lam) arrivals and the
    joint law is the product of the marginals (Jackson / BCMP). The mean of a sum is the sum
    of the means whatever the dependence, so the per-station means simply add up. (The
    end-to-end *distribution* is not a convolution of the marginals in general: a job's
    sojourns at successive stations are dependent except in special cases.)

    ``stations`` holds ``TandemStation`` or tuples ``(servers, mean[, discipline])``.
    """
    total = 0.0
    for i, st in enumerate(stations):
        st = st if isinstance(st, TandemStation) else TandemStation(*st)
        if st.discipline == "fcfs":
            total += mmc_mean_sojourn(st.servers, lam, 1.0 / st.mean)
        elif st.discipline == "ps":
            total += mgc_ps_mean_sojourn(st.servers, lam, st.mean)
        else:
            raise ValueError(f"station {i}: unknown discipline {st.discipline!r}. Fix: use 'fcfs' or 'ps'.")
    return total
