"""Two server pools with rerouting and replication (docs/systems/pools.md): the formula's
server time per job, effective loads and stability bound.

Model. Job types j = 0..J-1 arrive with probabilities p_j; pool i (i = 0, 1 here, pools 1
and 2 in docs/systems/pools.md) has N_i servers, one job per server. A type-j job on pool i needs
X / s_ij time, X its size (exponential with mean 1 unless ``size=`` says otherwise).
``PoolsModel.speeds[i][j]`` is s_ij: one row per pool, one column per type.

Policy. On arrival the job goes to a first pool (see ``PoolsPolicy``); if it has not
finished after tau_a time in service on its first pool a (tau per pool, inf = never):
  * "reroute": it stops there and restarts from scratch on the other pool b;
  * "replicate": a copy starts on b and the first of the two to finish cancels the other.
One action per job: a rerouted job or a copy runs on b until it finishes (or is cancelled).
``restart="same"``: the job on b needs the same size X (work done on a is lost; a copy
redoes all of X); ``restart="fresh"``: it needs an independent draw X' of the same law.

The formula assumes the job on b starts at once (no wait in b's queue). In server time
that is exact for "none" and "reroute" at any load, but not for "replicate": a copy that
waits overlaps less with its original (docs/systems/pools.md reports how far off it is). With that
assumption the timer from the start of service and from arrival coincide.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
from scipy.integrate import quad
from scipy.optimize import minimize

from envs.distributions import Deterministic, Distribution, Exponential
from envs.systems.redundancy.theory import survival as _envs_survival

KNOWLEDGE = ("full", "signal", "revealed", "none")
ASSIGNMENTS = ("faster", "split")
ACTIONS = ("none", "reroute", "replicate")
RESTARTS = ("same", "fresh")
METHODS = ("auto", "closed", "quad")
_QUAD = {"limit": 500, "epsabs": 1e-13, "epsrel": 1e-11}


@dataclass(frozen=True)
class PoolsModel:
    """Type probabilities ``p`` (length J), speeds ``speeds[i][j]`` = s_ij (2 rows: pools;
    J columns: types) and servers ``servers = (N_1, N_2)``."""

    p: tuple[float, ...]
    speeds: tuple[tuple[float, ...], ...]
    servers: tuple[int, int] = (1, 1)

    def __post_init__(self):
        p = np.asarray(self.p, dtype=float)
        if p.ndim != 1 or p.size == 0:
            raise ValueError(f"p must be a flat list of type probabilities, got {self.p!r}. Fix: e.g. p=(0.5, 0.5).")
        if not np.isfinite(p).all() or (p < 0).any() or abs(p.sum() - 1.0) > 1e-9:
            raise ValueError(f"p must be >= 0 and sum to 1, got {self.p!r} (sum {p.sum():g}). Fix: normalise p.")
        s = np.asarray(self.speeds, dtype=float)
        if s.shape != (2, p.size):
            raise ValueError(f"speeds must have shape (2 pools, {p.size} types) = speeds[pool][type], got shape "
                             f"{s.shape}. Fix: one row per pool, one column per type (transpose if needed).")
        if not np.isfinite(s).all() or (s <= 0).any():
            raise ValueError(f"speeds must be finite and > 0, got {self.speeds!r}. Fix: a pool that cannot serve a "
                             "type is not modelled here; use a tiny speed.")
        n = tuple(self.servers)
        if len(n) != 2 or any(int(k) != k or k < 1 for k in n):
            raise ValueError(f"servers must be two integers >= 1 (N_1, N_2), got {self.servers!r}.")
        object.__setattr__(self, "p", tuple(float(x) for x in p))
        object.__setattr__(self, "speeds", tuple(tuple(float(x) for x in row) for row in s))
        object.__setattr__(self, "servers", (int(n[0]), int(n[1])))

    @property
    def s(self) -> np.ndarray:
        """Speeds as an array, shape (2, J)."""
        return np.asarray(self.speeds)


@dataclass(frozen=True)
class PoolsPolicy:
    """Type knowledge, first-pool assignment and the threshold action.

    knowledge: "full" (type known), "none", or one of the two partial forms of docs/systems/pools.md:
      "signal" with accuracy ``q``: the job shows a signal equal to its type w.p. q, else one of
      the other J - 1 types uniformly at random (one type only: the signal is the type);
      "revealed" with fraction ``f``: the type is known for a fraction f of jobs, nothing for the rest.
    assignment: "faster" sends the job to the faster pool for its known type, or for its
      maximum-posterior type given the signal (ties among those types broken uniformly at
      random); with no information, or for a type with equal speeds, pool 1 w.p. ``p_split``.
      "split" ignores the type: pool 1 w.p. ``p_split`` always.
    action: "none", "reroute" or "replicate" after ``tau[a]`` time in service on the first
      pool a; ``tau`` is one number for both pools or a pair; inf means never (tau is
      unused with action "none"). restart: "same" (keep X) or "fresh" (redraw X).
    """

    knowledge: str = "full"
    q: float | None = None
    f: float | None = None
    assignment: str = "faster"
    p_split: float = 0.5
    action: str = "none"
    tau: float | tuple[float, float] = math.inf
    restart: str = "same"

    def __post_init__(self):
        if self.knowledge not in KNOWLEDGE:
            hint = (" Partial knowledge has two forms: knowledge='signal' with q=, or knowledge='revealed' "
                    "with f=." if self.knowledge == "partial" else "")
            raise ValueError(f"unknown knowledge {self.knowledge!r}. Fix: use one of {', '.join(KNOWLEDGE)}.{hint}")
        for name, needed_by in (("q", "signal"), ("f", "revealed")):
            value = getattr(self, name)
            if (value is None) == (self.knowledge == needed_by):
                raise ValueError(f"{name} is needed with, and only with, knowledge={needed_by!r} (got knowledge="
                                 f"{self.knowledge!r}, {name}={value!r}). Fix: set or drop {name}.")
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}.")
        if self.assignment not in ASSIGNMENTS:
            raise ValueError(f"unknown assignment {self.assignment!r}. Fix: use one of {', '.join(ASSIGNMENTS)}.")
        if not 0.0 <= self.p_split <= 1.0:
            raise ValueError(f"p_split (probability of pool 1 without information) must be in [0, 1], "
                             f"got {self.p_split!r}.")
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action {self.action!r}. Fix: use one of {', '.join(ACTIONS)}.")
        if self.restart not in RESTARTS:
            raise ValueError(f"unknown restart {self.restart!r}. Fix: use one of {', '.join(RESTARTS)}.")
        tau = (self.tau, self.tau) if np.ndim(self.tau) == 0 else tuple(self.tau)
        if len(tau) != 2 or any(not (t >= 0) for t in tau):  # rejects NaN too
            raise ValueError(f"tau must be a time >= 0 (inf = never) or a pair (tau_1, tau_2) of them, "
                             f"got {self.tau!r}.")
        object.__setattr__(self, "tau", (float(tau[0]), float(tau[1])))


# ---------------------------------------------------------------- size laws


@dataclass(frozen=True)
class _Law:
    """What the formulas need of X: its survival G(x) = P(X > x), its mean, and whether it
    is exponential (then every integral below has a closed form)."""

    sf: Callable[[float], float]
    mean: float
    exponential: bool
    steps: tuple[float, ...] = field(default=())  # where G may jump: quadrature breakpoints


def _law(size: Any, method: str) -> _Law:
    """Minimal interface: None (exponential, mean 1), a distribution of envs.distributions
    (PhaseMixture included), or any object with ``sf(x)`` (scipy.stats frozen laws) or
    ``survival(x)``, and ``mean`` (a number or a method, as in scipy)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if size is None:
        size = Exponential(1.0)
    mean = size.mean() if callable(getattr(size, "mean", None)) else getattr(size, "mean", None)
    if mean is None or not (0.0 < float(mean) < math.inf):
        raise ValueError(f"the size law needs a finite mean > 0, got {mean!r} for {type(size).__name__}. "
                         "Fix: give an object with a mean (number or method), e.g. a scipy.stats frozen law.")
    mean = float(mean)
    if isinstance(size, Distribution):
        sf = lambda x: float(_envs_survival(size, x))  # noqa: E731
    elif callable(getattr(size, "sf", None)):
        sf = lambda x: float(size.sf(x))  # noqa: E731
    elif callable(getattr(size, "survival", None)):
        sf = lambda x: float(size.survival(x))  # noqa: E731
    else:
        raise ValueError(f"no survival function for {type(size).__name__}. Fix: pass a scipy.stats frozen law, "
                         "a distribution of envs.distributions, or an object with sf(x) or survival(x) and a mean.")
    exponential = isinstance(size, Exponential)
    if method == "closed" and not exponential:
        raise ValueError(f"method='closed' needs exponential sizes, got {type(size).__name__}. "
                         "Fix: use method='auto' or 'quad'.")
    steps = (mean,) if isinstance(size, Deterministic) else ()
    return _Law(sf, mean, exponential and method != "quad", steps)


def _pieces(a: float, b: float, scale: float, extra: Sequence[float] = ()) -> list[tuple[float, float]]:
    """[a, b] cut at a + scale * 4^k and at ``extra`` points, so quad sees the bulk and the tail apart."""
    cuts = {a + scale * 4.0**k for k in range(-2, 6)} | set(extra)
    edges = [a, *sorted(c for c in cuts if a < c < b), b]
    return list(zip(edges[:-1], edges[1:], strict=True))


def _int_sf(law: _Law, a: float, b: float) -> float:
    """Integral of G(x) over [a, b] (b may be inf): e.g. E[min(X, c)] is that over [0, c]."""
    if not a < b:
        return 0.0
    m = law.mean
    if law.exponential:
        return m * (math.exp(-a / m) - (0.0 if b == math.inf else math.exp(-b / m)))
    return sum(quad(law.sf, lo, hi, **_QUAD)[0] for lo, hi in _pieces(a, b, m, law.steps))


def _race_fresh(law: _Law, s: float, r: float, tau: float) -> float:
    """E[(min(X / s - tau, X' / r))^+]: how long the race of a fresh copy (X' independent of X)
    lasts after tau: the integral over u >= 0 of G(s tau + s u) G(r u)."""
    m = law.mean
    if law.exponential:
        return math.exp(-s * tau / m) * m / (s + r)

    def f(u: float) -> float:
        return law.sf(s * tau + s * u) * law.sf(r * u)

    steps = [(x - s * tau) / s for x in law.steps] + [x / r for x in law.steps]
    return sum(quad(f, lo, hi, **_QUAD)[0] for lo, hi in _pieces(0.0, math.inf, m / max(s, r), steps))


# ---------------------------------------------------------------- one job


def job_server_time(s: float, r: float, tau: float, action: str, restart: str, law: _Law) -> tuple[float, float]:
    """(E[T_a], E[T_b]): server time one job uses on its first pool a (speed s) and the other
    pool b (speed r), acting after tau time in service on a; b's server starts at once.

    Write G(x) = P(X > x), m = E[X], and I(u, v) = integral of G over [u, v]; so E[min(X/s, tau)]
    = I(0, s tau) / s and E[X; X > c] = c G(c) + I(c, inf). For exponential X, G(x) = e^{-x/m}
    and I(u, v) = m (e^{-u/m} - e^{-v/m}).

    none (or tau = inf): T_a = X / s, E = m / s.
    reroute: T_a = min(X/s, tau), E[T_a] = I(0, s tau) / s = (m/s)(1 - e^{-s tau/m}).
      same X: T_b = (X/r) 1{X > s tau}, E[T_b] = (s tau G(s tau) + I(s tau, inf)) / r
              = (s tau + m) e^{-s tau/m} / r.
      fresh:  T_b = (X'/r) 1{X > s tau}, E[T_b] = G(s tau) m / r (X' independent of X).
    replicate: after tau the original needs X/s - tau more, the copy needs X/r (same) or X'/r
      (fresh) from scratch; both servers are busy until the first finishes, so
      T_a = min(X/s, tau + copy time) and T_b = T_a - min(X/s, tau) = (T_a - tau)^+.
      same X: P(T_a > t) = P(X > max(s t, r (t - tau))). If r <= s the copy never wins (it
        redoes all of X more slowly): E[T_a] = m/s, E[T_b] = I(s tau, inf)/s = (m/s) e^{-s tau/m}.
        If r > s the two lines cross at size c = s r tau / (r - s) (jobs bigger than c are
        finished by the copy): E[T_a] = I(0, c)/s + I(c, inf)/r, E[T_b] = I(s tau, c)/s + I(c, inf)/r;
        exponential: E[T_a] = (m/s)(1 - e^{-c/m}) + (m/r) e^{-c/m},
                     E[T_b] = (m/s)(e^{-s tau/m} - e^{-c/m}) + (m/r) e^{-c/m}.
      fresh X': E[T_b] = integral over u >= 0 of G(s tau + s u) G(r u); exponential (memoryless:
        after tau a race of rates s/m and r/m, reached w.p. e^{-s tau/m}): e^{-s tau/m} m / (s + r);
        E[T_a] = I(0, s tau)/s + E[T_b].
    """
    m = law.mean
    if action == "none" or tau == math.inf:
        return m / s, 0.0
    before = _int_sf(law, 0.0, s * tau) / s  # E[min(X/s, tau)]
    if action == "reroute":
        if restart == "same":
            return before, (s * tau * law.sf(s * tau) + _int_sf(law, s * tau, math.inf)) / r
        return before, law.sf(s * tau) * m / r
    if restart == "fresh":
        race = _race_fresh(law, s, r, tau)
        return before + race, race
    c = s * r * tau / (r - s) if r > s else math.inf
    after = _int_sf(law, s * tau, c) / s + _int_sf(law, c, math.inf) / r
    return before + after, after


# ---------------------------------------------------------------- assignment


def _preferred(model: PoolsModel, p_split: float) -> np.ndarray:
    """P(pool 1 | type j known): 1 if pool 1 is faster, 0 if slower, p_split on equal speeds."""
    s = model.s
    return np.where(s[0] > s[1], 1.0, np.where(s[0] < s[1], 0.0, p_split))


def first_pool_probability(model: PoolsModel, policy: PoolsPolicy) -> np.ndarray:
    """P(first pool = pool 1 | type j), one entry per type."""
    J = len(model.p)
    split = np.full(J, policy.p_split)
    if policy.assignment == "split" or policy.knowledge == "none":
        return split
    pref = _preferred(model, policy.p_split)
    if policy.knowledge == "full":
        return pref
    if policy.knowledge == "revealed":
        return policy.f * pref + (1.0 - policy.f) * split
    # signal: lik[k, j] = P(signal k | type j); pool 1 given k: mean preference of the MAP types
    q = policy.q
    lik = np.eye(J) if J == 1 else np.where(np.eye(J, dtype=bool), q, (1.0 - q) / (J - 1))
    post = lik * np.asarray(model.p)[None, :]  # unnormalised posterior over types j, per signal k
    top = post >= post.max(axis=1, keepdims=True) * (1.0 - 1e-12)
    pool1_given_signal = (top * pref[None, :]).sum(axis=1) / top.sum(axis=1)
    return lik.T @ pool1_given_signal


# ---------------------------------------------------------------- per job, loads, bound


def server_time(model: PoolsModel, policy: PoolsPolicy, size: Any = None, *,
                method: str = "auto") -> tuple[float, float]:
    """(E[T_1], E[T_2]): expected server time a job uses in pool 1 and pool 2, copies and
    rerouted jobs starting at once (see ``job_server_time`` for the derivation).

    size: None (exponential, mean 1) or a law as ``_law`` describes. method: "auto" (closed
    form for exponential sizes, quadrature of the survival function otherwise), "closed"
    (exponential only) or "quad" (always quadrature, to check the closed forms).
    """
    law = _law(size, method)
    s = model.s
    first1 = first_pool_probability(model, policy)
    total = np.zeros(2)
    for j, pj in enumerate(model.p):
        for a, pa in ((0, first1[j]), (1, 1.0 - first1[j])):
            if pj * pa == 0.0:
                continue
            b = 1 - a
            ta, tb = job_server_time(s[a, j], s[b, j], policy.tau[a], policy.action, policy.restart, law)
            total[a] += pj * pa * ta
            total[b] += pj * pa * tb
    return float(total[0]), float(total[1])


def effective_loads(model: PoolsModel, policy: PoolsPolicy, lam: float, size: Any = None, *,
                    method: str = "auto") -> tuple[float, float]:
    """(rho_1, rho_2) = lam E[T_i] / N_i: the fraction of pool i's servers kept busy."""
    if not lam >= 0:
        raise ValueError(f"lam (arrival rate) must be >= 0, got {lam!r}")
    t = server_time(model, policy, size, method=method)
    return lam * t[0] / model.servers[0], lam * t[1] / model.servers[1]


def stability_bound(model: PoolsModel, policy: PoolsPolicy, size: Any = None, *, method: str = "auto") -> float:
    """The largest lam with both loads below 1: min_i N_i / E[T_i] (a pool with E[T_i] = 0 imposes none)."""
    t = server_time(model, policy, size, method=method)
    return min((n / ti if ti > 0 else math.inf) for n, ti in zip(model.servers, t, strict=True))


# ---------------------------------------------------------------- choosing tau


class BestTau(NamedTuple):
    tau: tuple[float, float]
    bound: float


def _default_grid(model: PoolsModel, mean: float) -> np.ndarray:
    """Times from a hundredth of the fastest mean service to a hundred times the slowest."""
    s = model.s
    return np.geomspace(1e-2 * mean / s.max(), 1e2 * mean / s.min(), 41)


def best_tau(model: PoolsModel, policy: PoolsPolicy, size: Any = None, *, grid: Sequence[float] | None = None,
             same_tau: bool = False, refine: bool = True) -> BestTau:
    """The (tau_1, tau_2) maximising the formula's stability bound for ``policy``'s action,
    knowledge, assignment and restart (its own tau is ignored).

    Candidates: ``grid`` (default: 41 geometric times, see ``_default_grid``) plus 0 and inf,
    for each pool (``same_tau``: one tau for both). Ties go to the larger tau (less
    intervention; inf first). ``refine`` then polishes the finite, positive coordinates of the
    best candidate together (Nelder-Mead in log tau: the bound is a min of two pools, so one
    coordinate at a time stalls), kept only if it raises the bound, then sets a coordinate
    to inf or 0 where that loses nothing (the search in log tau only approaches them).
    """
    if policy.action == "none":
        raise ValueError("best_tau needs action 'reroute' or 'replicate' (with 'none' tau does nothing).")
    law = _law(size, "auto")
    base = np.asarray(_default_grid(model, law.mean) if grid is None else grid, dtype=float)
    if base.ndim != 1 or (base < 0).any() or np.isnan(base).any():
        raise ValueError(f"grid must be a flat list of times >= 0, got {grid!r}")
    cands = sorted(set(base[np.isfinite(base)].tolist()) | {0.0, math.inf}, reverse=True)

    def bound(t1: float, t2: float) -> float:
        return stability_bound(model, _with_tau(policy, (t1, t2)), size)

    pairs = [(t, t) for t in cands] if same_tau else [(t1, t2) for t1 in cands for t2 in cands]
    best = pairs[0]
    best_value = bound(*best)
    for pair in pairs[1:]:
        v = bound(*pair)
        if v > best_value * (1.0 + 1e-12):
            best, best_value = pair, v
    free = [i for i in ((0,) if same_tau else (0, 1)) if 0.0 < best[i] < math.inf]
    if refine and free:
        def neg(x: np.ndarray) -> float:
            return -bound(*_put(best, free, np.exp(x), same_tau))

        res = minimize(neg, np.log([best[i] for i in free]), method="Nelder-Mead",
                       options={"xatol": 1e-7, "fatol": 1e-13, "maxiter": 400})
        if -res.fun > best_value * (1.0 + 1e-12):
            best, best_value = _put(best, free, np.exp(res.x), same_tau), float(-res.fun)
        for i in free:  # the search in log tau creeps towards an optimum at 0 or inf: snap to it
            for edge in (math.inf, 0.0):
                trial = _put(best, [i], np.array([edge]), same_tau)
                v = bound(*trial)
                if v >= best_value * (1.0 - 1e-12):
                    best, best_value = trial, max(v, best_value)
                    break
    return BestTau((float(best[0]), float(best[1])), float(best_value))


def _put(tau: tuple[float, float], free: list[int], values: np.ndarray,
         same_tau: bool) -> tuple[float, float]:
    """tau with its coordinates ``free`` set to ``values`` (both coordinates when same_tau)."""
    out = [float(v) for v in (values[0], values[0])] if same_tau else list(tau)
    if not same_tau:
        for i, v in zip(free, values, strict=True):
            out[i] = float(v)
    return out[0], out[1]


def _with_tau(policy: PoolsPolicy, tau: tuple[float, float]) -> PoolsPolicy:
    return replace(policy, tau=tau)
