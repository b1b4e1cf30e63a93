"""Rules operators use today, in the same harness as the learned controller, each tuned
automatically for a scenario: the rule with the highest acceptance whose violation
P(d > d_ub | A) stays <= eps, found with common random numbers (every candidate sees the
same arrivals and service times) so that comparisons between candidates are sharp.

Feasibility is decided with the estimate's noise, as the learned controller's calibration
decides it: a candidate is feasible when the one-sided 95% upper bound of its violation is
<= eps (``Tuner`` with ``margin``). It is evaluated on ``arrivals`` decisions, and while the
bounds straddle eps the sample doubles (the same instances run longer, so samples are
nested) up to ``max_arrivals``, the looks spending the 5% together (``look_bounds``). Rules far
from eps are settled cheaply; rules close to it get a standard error of about 0.0015 (800k
arrivals).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from drl_ac.rules.tuning import ConstantAction, Tuner, TuningResult
from envs import NetworkSpec


@dataclass
class TotalThreshold:
    """Accept iff the total number of waiting jobs is below k. ``columns``: the stations' queue
    features it sums, the leading ones (None: all; a scenario with a clock observes its phase
    after them, which a queue threshold must not add in)."""

    k: int
    columns: int | None = None

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return (obs[:, : self.columns].sum(1) < self.k).astype(np.int64)

    def describe(self) -> str:
        return f"sum q < {self.k}"


@dataclass
class RandomisedThreshold:
    """Accept iff the total number of waiting jobs is below k, with probability p iff it is k:
    the form of the constrained optimum (on one M/M/c station exactly the LP's), which spends the violation budget a
    deterministic threshold leaves. Uniforms come from a generator seeded with ``seed``,
    restarted by ``reset`` (the tuner calls it before each evaluation: every candidate sees the
    same uniforms)."""

    k: int
    p: float
    seed: int = 0
    columns: int | None = None  # as TotalThreshold's
    rng: np.random.Generator = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.reset()

    def reset(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        total = obs[:, : self.columns].sum(1)
        u = self.rng.random(obs.shape[0])
        return ((total < self.k) | ((total == self.k) & (u < self.p))).astype(np.int64)

    def describe(self) -> str:
        return f"sum q < {self.k}, at {self.k} w.p. {self.p:.6g}"  # keys the tuner's cache: distinct per p


@dataclass
class StationThresholds:
    """Accept iff every station's queue is below its own threshold."""

    ks: tuple[int, ...]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return (obs[:, : len(self.ks)] < np.asarray(self.ks)).all(1).astype(np.int64)  # the stations' queues

    def describe(self) -> str:
        return "q < (" + ", ".join(map(str, self.ks)) + ")"


@dataclass
class WeightedThreshold:
    """Accept iff a weighted sum of queue lengths (an estimate of the wait ahead) is below k."""

    weights: tuple[float, ...]
    k: float

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return (obs[:, : len(self.weights)] @ np.asarray(self.weights) < self.k).astype(np.int64)

    def describe(self) -> str:
        return "w.q < {:.3g}, w = ({})".format(self.k, ", ".join(f"{w:.3g}" for w in self.weights))


def wait_weights(spec: NetworkSpec) -> tuple[float, ...]:
    """Expected extra wait a new job suffers per job waiting at station n: it visits n with
    probability v_n and each job ahead there takes about E[S_n] / c_n."""
    means = np.array([s.service.mean for s in spec.stations])
    return tuple(float(w) for w in spec.visit_ratios() * means / spec.servers)


def tune_total(spec: NetworkSpec, arrivals: int = 100_000, seed: int = 777, num_envs: int = 400,
               max_k: int = 400, **tuner_options) -> TuningResult:
    """Largest k with violation <= eps (violation and acceptance grow with k)."""
    tuner, n = Tuner(spec, arrivals, seed, num_envs, **tuner_options), spec.num_stations
    if not tuner.feasible(TotalThreshold(1, n)):
        return tuner.result(TotalThreshold(1, n))
    lo, hi = 1, 2  # lo feasible; grow hi until infeasible
    while hi < max_k and tuner.feasible(TotalThreshold(hi, n)):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if tuner.feasible(TotalThreshold(mid, n)) else (lo, mid)
    return tuner.result(TotalThreshold(lo, n))


def tune_randomised_total(spec: NetworkSpec, start_k: int, arrivals: int = 100_000, seed: int = 777,
                          num_envs: int = 400, iterations: int = 6, max_k: int = 400,
                          **tuner_options) -> TuningResult:
    """From the tuned total threshold ``start_k`` (feasible), the largest p in [0, 1] feasible
    at state k by bisection (resolution 2^-iterations). If p = 1 is feasible after all (it is
    k + 1's threshold: another sample can put tune_total below it), k moves up until not."""
    tuner, n = Tuner(spec, arrivals, seed, num_envs, **tuner_options), spec.num_stations
    k = start_k
    while k < max_k and tuner.feasible(RandomisedThreshold(k, 1.0, seed, n)):
        k += 1
    lo, hi = 0.0, 1.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if tuner.feasible(RandomisedThreshold(k, mid, seed, n)) else (lo, mid)
    rule = RandomisedThreshold(k, lo, seed, n)
    result = tuner.result(rule)
    rule.reset()  # handed over fresh, whatever the tuner ran last: a measurement replays its uniforms
    return result


def tune_weighted(spec: NetworkSpec, arrivals: int = 100_000, seed: int = 777, num_envs: int = 400,
                  iterations: int = 12, **tuner_options) -> TuningResult:
    """Bisection on the threshold of the estimated wait w.q, w from ``wait_weights``."""
    tuner = Tuner(spec, arrivals, seed, num_envs, **tuner_options)
    w = wait_weights(spec)
    lo, hi = 1e-9, float(spec.d_ub)
    while tuner.feasible(WeightedThreshold(w, hi)) and hi < 1e4 * spec.d_ub:
        lo, hi = hi, 2 * hi
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if tuner.feasible(WeightedThreshold(w, mid)) else (lo, mid)
    return tuner.result(WeightedThreshold(w, lo))


def tune_stations(spec: NetworkSpec, start: int, arrivals: int = 100_000, seed: int = 777,
                  num_envs: int = 400, max_rounds: int = 30, **tuner_options) -> TuningResult:
    """Coordinate search from every threshold = ``start`` (the tuned total k): lower the
    threshold that costs least acceptance until feasible, then raise any that stays feasible
    and gains most, until no single change helps."""
    tuner = Tuner(spec, arrivals, seed, num_envs, **tuner_options)
    ks = [max(1, start)] * spec.num_stations

    def with_k(n: int, k: int) -> StationThresholds:
        new = list(ks)
        new[n] = k
        return StationThresholds(tuple(new))

    for _ in range(max_rounds):
        if tuner.feasible(StationThresholds(tuple(ks))):
            break
        options = [with_k(n, ks[n] - 1) for n in range(len(ks)) if ks[n] > 1]
        if not options:
            break
        ks = list(max(options, key=lambda r: (tuner.feasible(r), tuner(r)["acceptance"])).ks)
    for _ in range(max_rounds):
        options = [r for n in range(len(ks)) if tuner.feasible(r := with_k(n, ks[n] + 1))]
        if not options:
            break
        ks = list(max(options, key=lambda r: tuner(r)["acceptance"]).ks)
    return tuner.result(StationThresholds(tuple(ks)))


BUDGETS = {"smoke": {"arrivals": 2_000, "warmup": 50, "max_arrivals": 2_000}, "quick": {"arrivals": 10_000},
           "full": {"arrivals": 100_000}}
"""``tuned_rules`` options per comparison budget (``drl_ac.study.BUDGETS``): smoke checks the
wiring in seconds, quick ends a default training run, full is a study's."""


def tuned_rules(spec: NetworkSpec, arrivals: int = 100_000, seed: int = 777,
                progress: Callable[[str], None] | None = None, **tuner_options) -> dict[str, TuningResult]:
    """Every constant action but reject (accept-all, or each entry station) and the threshold
    rules tuned for ``spec`` (``progress`` is told of every evaluation; ``tuner_options``: of
    every ``Tuner``, e.g. a smoke run's short ``warmup``); the weighted threshold only where the
    weights differ (else it is the total threshold)."""
    tuner_options = {"margin": True, **tuner_options}  # the learned controller's calibration holds the same bound
    tuner = Tuner(spec, arrivals, seed, 400, progress=progress, **tuner_options)
    out = {f"always {spec.actions[a]}": tuner.result(ConstantAction(a, f"always {spec.actions[a]}"))
           for a in range(1, spec.num_actions)}
    total = tune_total(spec, arrivals, seed, progress=progress, **tuner_options)
    out.update({"total threshold": total,
                "randomised total threshold": tune_randomised_total(spec, total.rule.k, arrivals, seed,
                                                                    progress=progress, **tuner_options),
                "per-station thresholds": tune_stations(spec, total.rule.k, arrivals, seed, progress=progress,
                                                        **tuner_options)})
    if not np.allclose(wait_weights(spec), wait_weights(spec)[0]):  # equal weights: it is the total threshold
        out["weighted threshold"] = tune_weighted(spec, arrivals, seed, progress=progress, **tuner_options)
    return out
