"""Redundancy-d (docs/systems/redundancy.md): N servers, each job copied to d distinct servers
chosen uniformly at random, the first copy to finish cancels the others.

Everything hinges on M = min(X_1..X_d), the work a job needs when all its copies are
served at the same rate. Its law depends on the joint law of the copies:
  * "identical": X_1 = ... = X_d = X, so M = X;
  * "iid": independent copies of one law, P(M > x) = P(X > x)^d;
  * "scaled": X_i = S * Y_i with S common and Y_i i.i.d., so M = S * min(Y_1..Y_d).

Sizes are the distributions of ``envs.distributions`` (survival functions are written here,
dispatching on the type, since the distribution classes only know how to sample) or a
``PhaseMixture`` (explicit phase probabilities and rates).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.special import erfc, gammaincc

from envs.distributions import (
    Deterministic,
    Empirical,
    Exponential,
    Gamma,
    HyperExponential,
    LogNormal,
    Lomax,
    PhaseMixture,
)

LAWS = ("identical", "iid", "scaled")


def _hyperexp_phases(dist: HyperExponential) -> tuple[tuple[float, float], tuple[float, float]]:
    """Balanced-means H2 of envs: p = (1 + sqrt((SCV-1)/(SCV+1)))/2, phase means m/(2p), m/(2(1-p))."""
    p = 0.5 * (1.0 + math.sqrt((dist.cv2 - 1.0) / (dist.cv2 + 1.0)))
    return (p, 1.0 - p), (2.0 * p / dist.mean, 2.0 * (1.0 - p) / dist.mean)


def _exp_mixture(dist: Any) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """(probabilities, rates) when the law is a finite mixture of exponentials, else None."""
    if isinstance(dist, PhaseMixture):
        return tuple(dist.probs), tuple(dist.rates)
    if isinstance(dist, Exponential):
        return (1.0,), (1.0 / dist.mean,)
    if isinstance(dist, HyperExponential):
        return _hyperexp_phases(dist)
    return None


def survival(dist: Any, x) -> np.ndarray:
    """P(X > x) for a distribution of ``envs.distributions`` or any object with ``survival(x)``."""
    x = np.asarray(x, dtype=float)
    mix = _exp_mixture(dist)
    if mix is not None:
        return sum(p * np.exp(-r * np.maximum(x, 0.0)) for p, r in zip(*mix, strict=True))
    if isinstance(dist, Deterministic):
        return (x < dist.mean).astype(float)
    if isinstance(dist, Gamma):  # shape 1/SCV, scale mean * SCV
        return np.where(x > 0, gammaincc(1.0 / dist.cv2, np.maximum(x, 0.0) / (dist.mean * dist.cv2)), 1.0)
    if isinstance(dist, LogNormal):  # sigma^2 = ln(1 + SCV), median mean / sqrt(1 + SCV)
        s2 = math.log1p(dist.cv2)
        mu = math.log(dist.mean) - s2 / 2.0
        with np.errstate(divide="ignore"):
            z = (np.log(np.maximum(x, 0.0)) - mu) / math.sqrt(2.0 * s2)
        return np.where(x > 0, 0.5 * erfc(z), 1.0)
    if isinstance(dist, Lomax):
        return (1.0 + np.maximum(x, 0.0) / dist.scale) ** -dist.shape
    if isinstance(dist, Empirical):
        v = np.sort(np.asarray(dist.values, dtype=float))
        return 1.0 - np.searchsorted(v, x, side="right") / v.size
    if hasattr(dist, "survival"):
        return np.asarray(dist.survival(x), dtype=float)
    raise ValueError(f"no survival function for {type(dist).__name__}. Fix: use one of Exponential, "
                     "Deterministic, Gamma, LogNormal, HyperExponential, Lomax, Empirical, PhaseMixture, "
                     "or pass an object with a survival(x) method and a mean.")


def _segment(a: float, b: float, beta: float) -> float:
    """Integral of exp(-beta x) over [a, b]."""
    if beta == 0.0:
        return b - a
    return (math.exp(-beta * a) - math.exp(-beta * b)) / beta


def _integral_power(dist: Any, d: int, beta: float = 0.0, method: str = "auto") -> float:
    """Integral over x >= 0 of P(X > x)^d exp(-beta x).

    beta = 0 gives E[min of d i.i.d. copies]; beta > 0 gives (1 - E[exp(-beta M)]) / beta.
    Closed forms where the law allows (exponential mixtures expand multinomially into a sum
    of exponentials; deterministic and empirical survivals are piecewise constant; Lomax to
    the d-th power is Lomax with shape d * shape); adaptive quadrature otherwise, or always
    with method="quad".
    """
    if method not in ("auto", "quad"):
        raise ValueError(f"method must be 'auto' or 'quad', got {method!r}")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if method == "auto":
        mix = _exp_mixture(dist)
        if mix is not None:
            probs, rates = mix
            total = 0.0
            for combo in itertools.combinations_with_replacement(range(len(probs)), d):
                counts = np.bincount(combo, minlength=len(probs))
                coef = math.factorial(d) / math.prod(math.factorial(int(c)) for c in counts)
                weight = coef * math.prod(p**c for p, c in zip(probs, counts, strict=True))
                total += weight / (float(np.dot(counts, rates)) + beta)
            return float(total)
        if isinstance(dist, Deterministic):
            return _segment(0.0, dist.mean, beta)
        if isinstance(dist, Empirical):
            v, counts = np.unique(np.asarray(dist.values, dtype=float), return_counts=True)
            above = 1.0 - np.concatenate([[0], np.cumsum(counts)[:-1]]) / counts.sum()  # P(X > x), x in [v_{j-1}, v_j)
            edges = np.concatenate([[0.0], v])
            return float(sum(s**d * _segment(edges[j], edges[j + 1], beta) for j, s in enumerate(above)))
        if isinstance(dist, Lomax) and beta == 0.0:
            if d * dist.shape <= 1.0:
                return math.inf
            return dist.scale / (d * dist.shape - 1.0)

    def f(x: float) -> float:
        return float(survival(dist, x)) ** d * math.exp(-beta * x)

    m = float(dist.mean)
    opts = {"limit": 500, "epsabs": 1e-13, "epsrel": 1e-11}
    points = [m] if isinstance(dist, Deterministic) else None
    head = quad(f, 0.0, 2.0 * m, points=points, **opts)[0]
    tail = quad(f, 2.0 * m, math.inf, **opts)[0]
    return head + tail


def _check_law(law: str, size, scale, factor) -> None:
    if law not in LAWS:
        raise ValueError(f"unknown joint law {law!r}. Fix: use one of {', '.join(LAWS)}.")
    if law in ("identical", "iid") and size is None:
        raise ValueError(f"law {law!r} needs size= (the law of one copy)")
    if law == "scaled" and (scale is None or factor is None):
        raise ValueError("law 'scaled' needs scale= (the common S) and factor= (the law of each Y_i)")


def expected_min(d: int, law: str, size=None, scale=None, factor=None, *, method: str = "auto") -> float:
    """E[min(X_1..X_d)] under the joint law (see the module docstring).

    identical: E[X], whatever d. iid: integral of P(X > x)^d over x >= 0, in closed form for
    exponential, hyperexponential, phase mixtures, deterministic, empirical and Lomax sizes,
    by quadrature otherwise (method="quad" forces quadrature, to check the closed forms).
    scaled: S independent of the Y_i, so E[S min Y] = E[S] E[min Y].
    """
    _check_law(law, size, scale, factor)
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if law == "identical":
        return float(size.mean)
    if law == "iid":
        return _integral_power(size, d, 0.0, method)
    return float(scale.mean) * _integral_power(factor, d, 0.0, method)


def stability_threshold(N: int, d: int, law: str, size=None, scale=None, factor=None, *,
                        method: str = "auto") -> float:
    """lambda* = N / (d E[min]): the fluid-limit stability bound lambda d E[min] < N.

    Each job holds d servers busy until its first copy finishes, i.e. for d E[min] units of
    server time (when its copies progress together), and N servers supply N units per unit time.
    """
    return N / (d * expected_min(d, law, size, scale, factor, method=method))


def _min_integral(d: int, law: str, beta: float, size, scale, factor, method: str) -> float:
    """Integral over x >= 0 of P(M > x) exp(-beta x) = (1 - E[exp(-beta M)]) / beta."""
    if law == "identical":
        return _integral_power(size, 1, beta, method)
    if law == "iid":
        return _integral_power(size, d, beta, method)
    # scaled: M = S * M', M' = min Y; the integral is E_S[S * J(beta S)] with J that of M'
    if isinstance(scale, Deterministic):
        s = float(scale.mean)
        return s * _integral_power(factor, d, beta * s, method)
    if isinstance(scale, Empirical):
        vals = np.asarray(scale.values, dtype=float)
        return float(np.mean([s * _integral_power(factor, d, beta * s, method) for s in vals]))
    raise ValueError("fluid_growth_rate with law 'scaled' supports only a Deterministic or Empirical scale S "
                     "(it needs E over S of a Laplace transform). Fix: use one of those for S.")


def fluid_growth_rate(N: int, d: int, lam: float, law: str, size=None, scale=None, factor=None, *,
                      method: str = "auto") -> float:
    """Fluid growth rate alpha of the number of jobs, Q(t) ~ alpha t, for redundancy-d over PS
    servers with Poisson(lam) arrivals above lambda*; 0 at or below lambda*.

    Derivation (a fluid approximation, not a theorem for fixed N):
      1. Symmetry: copies go to uniformly random d-subsets, so started empty the fluid
         limit is invariant under permuting servers and every server holds d Q / N copies.
         Each copy is then served at rate N / (d Q), all copies of a job progress together,
         and a job leaves when its common attained service reaches M = min(X_1..X_d).
      2. That is one PS server of capacity N / d with job sizes M. For an overloaded PS
         queue with Q(t) = alpha t, a job arriving at s has attained (N / (d alpha)) ln(t / s)
         by t, so Q(t) = int_0^t lam P(M > (N / (d alpha)) ln(t / s)) ds, which gives
         (Jean-Marie and Robert 1994 for M/G/1-PS)
                alpha = lam (1 - E[exp(-alpha d M / N)]).
         It has one positive root when lam > lambda* (the right side is concave in alpha
         with slope lam d E[M] / N = lam / lambda* > 1 at 0).
    Not lam - lambda*: that would need the departure rate to stay at lambda* in overload,
    and PS does not keep it there. The departure rate lam - alpha is the rate at which
    jobs with M below the attained-service frontier leave, which is below lambda* for
    low-variability M (much work sits in partly served jobs; e.g. deterministic sizes) and
    can exceed it for high-variability M (small jobs still get through). Only for
    exponential M (i.i.d. exponential copies) is alpha = lam - N mu exactly, where busy
    servers complete copies at rate mu each. Check against the simulator's drift.
    """
    lam_star = stability_threshold(N, d, law, size, scale, factor, method=method)
    if lam <= lam_star:
        return 0.0

    def g(alpha: float) -> float:  # alpha = lam (1 - L(alpha d / N)) <=> g(alpha) = 0, alpha > 0
        beta = alpha * d / N
        return lam * (d / N) * _min_integral(d, law, beta, size, scale, factor, method) - 1.0

    return brentq(g, 0.0, lam, xtol=1e-13, rtol=1e-12)


def gardner_fcfs_mean_response(k: int, d: int, lam: float, mu: float = 1.0) -> float:
    """Mean response time of redundancy-d with FCFS servers and i.i.d. exponential(mu) copies
    (Gardner et al. 2015): E[T] = sum_{i=d}^{k} 1 / (k mu C(k-1, d-1) / C(i-1, d-1) - lam).

    The smallest denominator is the i = k term, k mu - lam, so the system is stable iff
    lam < k mu for every d (copies of exponential jobs waste no capacity).
    """
    if not 1 <= d <= k:
        raise ValueError(f"need 1 <= d <= k, got d={d}, k={k}")
    if not lam < k * mu:
        raise ValueError(f"unstable: lam={lam} >= k mu = {k * mu}. Fix: lower lam or add servers.")
    top = math.comb(k - 1, d - 1)
    return sum(1.0 / (k * mu * top / math.comb(i - 1, d - 1) - lam) for i in range(d, k + 1))
