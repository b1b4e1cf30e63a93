"""Exact constrained optimum for admission to one M/M/c station with a sojourn deadline.

An arrival that finds n jobs (in service and waiting) meets the deadline t with
    P_n = 1 - exp(-mu t)                                    if n < c,
    P_n = P(W + S <= t), W ~ Erlang(n - c + 1, c mu), S ~ Exp(mu)   otherwise.
The long-run problem "minimise P(R, d < t) subject to P(d > t | A) <= eps" over
randomised stationary policies is a linear program in the occupation measure of the
birth-death chain truncated at L: with p_n the stationary probability of n (= the
probability an arrival sees n, by PASTA) and x_n = p_n * P(accept | n),

    minimise   sum_n (p_n - x_n) P_n
    subject to lam x_n = min(n + 1, c) mu p_{n+1}       (cut between n and n + 1)
               sum_n x_n (1 - P_n - eps) <= 0            (violation <= eps)
               0 <= x_n <= p_n,  sum_n p_n = 1,  x_L = 0.

The truncation is chosen by doubling L until the optimum carries no probability near L
and its value no longer changes (``solve`` reports the L it settled on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.special import gammainc


def meet_probability(n: np.ndarray | int, c: int, mu: float, d_ub: float) -> np.ndarray:
    """P(sojourn <= d_ub) for an FCFS M/M/c arrival that finds n jobs in the station."""
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    out = np.empty(n.shape)
    free = n < c
    out[free] = -math.expm1(-mu * d_ub)
    k = (n[~free] - c + 1).astype(float)  # waiting phases
    theta = c * mu
    if c == 1:  # W + S ~ Erlang(k + 1, mu)
        out[~free] = gammainc(k + 1, mu * d_ub)
    else:
        # P(W + S <= t) = P(W <= t) - e^{-mu t} E[e^{mu W}; W <= t]
        #              = F_{k, theta}(t) - e^{-mu t} (theta / (theta - mu))^k F_{k, theta - mu}(t)
        tail = gammainc(k, (theta - mu) * d_ub)
        with np.errstate(divide="ignore"):
            log_term = -mu * d_ub + k * math.log(theta / (theta - mu)) + np.log(tail)
        out[~free] = gammainc(k, theta * d_ub) - np.exp(log_term)
    return np.clip(out, 0.0, 1.0)


@dataclass
class AdmissionSolution:
    """A stationary policy's acceptance probability per state n and its long-run metrics."""

    accept: np.ndarray  # (L + 1,) P(accept | n jobs)
    stationary: np.ndarray  # (L + 1,) p_n
    objective: float  # P(R, d < d_ub): unnecessary rejections per arrival
    violation: float  # P(d > d_ub | A)
    acceptance: float  # P(A)
    truncation: int

    @property
    def threshold(self) -> int | None:
        """K such that the policy accepts iff n < K, if it is a deterministic threshold."""
        a = self.accept
        if not np.all((a == 0) | (a == 1)):
            return None
        k = int(np.argmin(a)) if (a == 0).any() else a.size
        return k if np.all(a[:k] == 1) and np.all(a[k:] == 0) else None


def _metrics(accept: np.ndarray, p: np.ndarray, meet: np.ndarray, truncation: int) -> AdmissionSolution:
    x = accept * p
    acc = float(x.sum())
    violation = float((x * (1 - meet)).sum() / acc) if acc > 0 else 0.0
    return AdmissionSolution(accept, p, float(((p - x) * meet).sum()), violation, acc, truncation)


def threshold_policy(K: int, c: int, mu: float, lam: float, d_ub: float, truncation: int | None = None
                     ) -> AdmissionSolution:
    """Accept iff fewer than K jobs are present: birth-death stationary distribution in closed form."""
    return randomised_threshold_policy(K, 0.0, c, mu, lam, d_ub, truncation)


def randomised_threshold_policy(K: int, p: float, c: int, mu: float, lam: float, d_ub: float,
                                truncation: int | None = None) -> AdmissionSolution:
    """Accept iff fewer than K jobs are present, with probability p iff exactly K: the form of
    the constrained optimum (it spends the violation budget exactly), in closed form. The chain
    lives on 0..K (p = 0, ``threshold_policy(K)``) or 0..K + 1 (p > 0; p = 1 is K + 1's)."""
    L = max(truncation or 0, K + (p > 0))
    n = np.arange(L + 1)
    accept = np.where(n < K, 1.0, np.where(n == K, p, 0.0))
    log_p = np.zeros(L + 1)
    with np.errstate(divide="ignore"):  # a state never entered: log 0 = -inf
        log_p[1:] = np.cumsum(np.log(accept[:-1] * lam / (np.minimum(n[1:], c) * mu)))
    prob = np.exp(log_p - log_p.max())
    prob /= prob.sum()
    return _metrics(accept, prob, meet_probability(n, c, mu, d_ub), L)


def best_threshold(c: int, mu: float, lam: float, d_ub: float, eps: float, max_k: int = 2000) -> AdmissionSolution:
    """The deterministic threshold policy with the smallest objective among those with violation <= eps."""
    best = None
    for K in range(1, max_k):
        sol = threshold_policy(K, c, mu, lam, d_ub)
        if sol.violation <= eps and (best is None or sol.objective < best.objective - 1e-15):
            best = sol
        if meet_probability(K, c, mu, d_ub)[0] < 1e-12:
            break
    if best is None:
        raise ValueError(f"no threshold policy meets eps={eps}: even accepting only with free servers violates it. "
                         "Fix: raise d_ub or eps.")
    return best


def solve_lp(c: int, mu: float, lam: float, d_ub: float, eps: float, truncation: int,
             fixed_accept: np.ndarray | None = None) -> AdmissionSolution:
    """The LP above at a fixed truncation L. ``fixed_accept`` (0/1 per state, NaN = free)
    pins some decisions, e.g. to evaluate a given policy through the same equations."""
    L = truncation
    n = np.arange(L + 1)
    meet = meet_probability(n, c, mu, d_ub)
    # variables z = [p_0..p_L, x_0..x_L]
    cost = np.concatenate([meet, -meet])
    a_eq = np.zeros((L + 1, 2 * (L + 1)))
    b_eq = np.zeros(L + 1)
    for i in range(L):  # lam x_i - min(i+1, c) mu p_{i+1} = 0
        a_eq[i, L + 1 + i] = lam
        a_eq[i, i + 1] = -min(i + 1, c) * mu
    a_eq[L, : L + 1] = 1.0
    b_eq[L] = 1.0
    a_ub = np.zeros((L + 2, 2 * (L + 1)))
    a_ub[0, L + 1:] = 1 - meet - eps  # violation constraint
    for i in range(L + 1):  # x_i <= p_i
        a_ub[1 + i, L + 1 + i] = 1.0
        a_ub[1 + i, i] = -1.0
    bounds = [(0, None)] * (L + 1) + [(0, None)] * L + [(0, 0)]
    if fixed_accept is not None:  # x_i = a_i p_i for pinned states
        pinned = np.flatnonzero(~np.isnan(fixed_accept[: L + 1]))
        rows = np.zeros((pinned.size, 2 * (L + 1)))
        rows[np.arange(pinned.size), L + 1 + pinned] = 1.0
        rows[np.arange(pinned.size), pinned] = -fixed_accept[pinned]
        a_eq, b_eq = np.vstack([a_eq, rows]), np.concatenate([b_eq, np.zeros(pinned.size)])
        a_ub = a_ub[1:]  # a pinned policy is evaluated, not held to eps
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]), A_eq=a_eq, b_eq=b_eq, bounds=bounds,
                  method="highs")
    if res.status != 0:
        raise ValueError(f"the admission LP has no solution ({res.message}). Fix: check that eps is achievable "
                         "(P(d > d_ub) with a free server must not exceed eps).")
    p, x = res.x[: L + 1], res.x[L + 1:]
    accept = np.where(p > 1e-14, np.clip(x / np.maximum(p, 1e-300), 0, 1), 0.0)
    return _metrics(accept, p, meet, L)


def solve(c: int, mu: float, lam: float, d_ub: float, eps: float, start: int = 32, max_truncation: int = 4096
          ) -> AdmissionSolution:
    """Optimal randomised policy; the truncation doubles until it no longer matters."""
    L = max(start, 2 * c)
    prev = solve_lp(c, mu, lam, d_ub, eps, L)
    while L < max_truncation:
        L *= 2
        sol = solve_lp(c, mu, lam, d_ub, eps, L)
        unchanged = abs(sol.objective - prev.objective) < 1e-10
        if unchanged and sol.stationary[L // 2:].sum() < 1e-12:
            return sol
        prev = sol
    raise ValueError(f"truncation did not settle below {max_truncation}. Fix: the station is probably overloaded "
                     "for this deadline; check lam, mu and c.")
