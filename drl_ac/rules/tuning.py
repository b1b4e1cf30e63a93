"""Tuning a rule family on common random numbers: every candidate sees the same arrivals and
service times, so comparisons between candidates are sharp, and a candidate's sample grows
while its constraint is undecided (see ``Tuner``). Shared by every system's rules."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from drl_ac.evaluation.metrics import Z95_ONE_SIDED, evaluate
from drl_ac.evaluation.steady import steady_state
from envs import NetworkSpec


@dataclass(frozen=True)
class ConstantAction:
    """The same action for every job (a fixed d, a fixed pool and timer, accept-all): every
    rule family includes each of its system's constant actions. ``label`` names it."""

    action: int
    label: str = ""

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.full(obs.shape[0], self.action, np.int64)

    def describe(self) -> str:
        return self.label or f"always action {self.action}"

    def guard_fields(self) -> dict:
        """The policy-section fields that make this rule a learned policy's default (a guard)."""
        return {"default_action": self.action}


EARLY_ALPHA = 0.001  # what each look before the largest sample spends of the 5% (``look_bounds``)


def look_bounds(arrivals: int, max_arrivals: int, alpha: float = 0.05) -> tuple[float, float]:
    """The z of a one-sided bound at each early look and at the last: a candidate whose sample
    doubles from ``arrivals`` to ``max_arrivals`` is looked at several times, and a rule that
    passed at any look would pass too often (on mmc_c3, n < 8 at exact violation 0.0999
    passed at 1.645 on 8 of 30 seeds with four looks, 4 of 30 with one). Each early look spends
    ``EARLY_ALPHA``, the last the rest, so all together keep P(a rule at eps passes) <= alpha
    (Bonferroni over the looks), as the learner's single calibration look does. Only passing
    spends it: a rule whose one-sided lower bound is above eps is dropped at any look with the
    plain 1.645 (a dropped rule cannot pass), so clearly infeasible rules stay cheap."""
    if arrivals < 1:
        raise ValueError(f"arrivals: {arrivals} arrivals per first look. Fix: give at least 1.")
    looks, n = 1, arrivals
    while n < max_arrivals:
        n, looks = min(2 * n, max_arrivals), looks + 1
    last = alpha - EARLY_ALPHA * (looks - 1)
    if last <= 0:
        raise ValueError(f"max_arrivals: {looks} looks from {arrivals} to {max_arrivals} arrivals leave the last "
                         f"none of the {alpha:.0%}. Fix: a max_arrivals at most 2^40 times arrivals.")
    z = NormalDist().inv_cdf
    return z(1 - EARLY_ALPHA), z(1 - last)


@dataclass
class TuningResult:
    rule: Callable
    metrics: dict  # the chosen rule's evaluation on the largest sample it needed
    trace: list[tuple[str, int, float, float]] = field(default_factory=list)  # (rule, arrivals, violation, acceptance)
    complete: bool = True  # False: the search was cut short by its deadline (the rule is the best found by then)


class Tuner:
    """Evaluates candidates on common random numbers, growing the sample while undecided."""

    def __init__(self, spec: NetworkSpec, arrivals: int, seed: int, num_envs: int, max_arrivals: int | None = None,
                 progress: Callable[[str], None] | None = None, measure: str = "violation", margin: bool = False,
                 deadline: float | None = None, bins: int = 24, warmup: int | str = "auto"):
        """``measure``: the metric held <= eps (a cell: ``dropping``, P(dropped | admitted), or
        ``handover_dropping``); ``margin``: feasible iff its one-sided 95% upper bound is <= eps
        (the sample doubles while the one-sided bounds straddle eps), instead of the point
        estimate once the two-sided 95% interval excludes eps. ``deadline`` (``time.time()``):
        searches that ask ``expired()`` stop there with the best rule found so far. ``bins``:
        phase bins of the evaluations (a periodic system's ``..._by_phase``). ``warmup``: of each
        evaluation (``evaluate``'s; a few steps make a smoke run cheap, deciding nothing)."""
        self.spec, self.arrivals, self.seed, self.num_envs, self.bins = spec, arrivals, seed, num_envs, bins
        self.warmup = warmup
        self.measure, self.margin, self.deadline = measure, margin, deadline
        self.cut = False  # a search stopped at the deadline
        self.max_arrivals = max_arrivals if max_arrivals is not None else 8 * arrivals
        self.z_early, self.z_last = look_bounds(arrivals, self.max_arrivals)
        self.progress = progress
        self.trace: list[tuple[str, int, float, float]] = []
        self.cache: dict[tuple[str, int], dict] = {}
        self.decided: dict[str, tuple[bool, dict]] = {}

    def evaluate(self, rule, arrivals: int) -> dict:
        key = (rule.describe(), arrivals)
        if key not in self.cache:
            # (a randomised rule replays its uniforms in each evaluation: common random numbers)
            m = evaluate(rule, self.spec, arrivals=arrivals, seed=self.seed, num_envs=self.num_envs, bins=self.bins,
                         warmup=self.warmup, probes=False)  # the search reads acceptance and the constraint only
            self.cache[key] = m
            v = self.measure
            self.trace.append((key[0], arrivals, m[v], m["acceptance"]))
            if self.progress is not None:
                lo, hi = m[f"{v}_ci"]
                extra = f", blocking {m['blocking']:.4f}" if "blocking" in m else ""
                self.progress(f"{key[0]}: {v} {m[v]:.4f} [{lo:.4f}, {hi:.4f}], acceptance "
                              f"{m['acceptance']:.4f}{extra} ({m['arrivals']} arrivals)")
        return self.cache[key]

    def _decide(self, rule) -> tuple[bool, dict]:
        key = rule.describe()
        if key not in self.decided:
            n, eps = self.arrivals, self.spec.eps
            while True:
                m = self.evaluate(rule, n)
                if self.margin:
                    p, se = m[self.measure], m[f"{self.measure}_se"]
                    if math.isnan(p):  # nothing admitted: nothing dropped
                        p, se = 0.0, 0.0
                    # passing spends the 5% (``look_bounds``); dropping a rule spends none of it
                    lo, hi = p - Z95_ONE_SIDED * se, p + (self.z_early if n < self.max_arrivals else self.z_last) * se
                    ok = hi <= eps
                else:
                    lo, hi = m[f"{self.measure}_ci"]
                    ok = m[self.measure] <= eps
                if hi <= eps or lo > eps or n >= self.max_arrivals:
                    self.decided[key] = (bool(ok), m)
                    break
                n = min(2 * n, self.max_arrivals)
        return self.decided[key]

    def __call__(self, rule) -> dict:
        return self._decide(rule)[1]

    def feasible(self, rule) -> bool:
        return self._decide(rule)[0]

    def expired(self) -> bool:
        """Past the deadline (a search asking this stops, and its result says so)."""
        if self.deadline is not None and time.time() > self.deadline:
            self.cut = True
        return self.cut

    def result(self, rule) -> TuningResult:
        return TuningResult(rule, self(rule), list(self.trace), complete=not self.cut)


class ControlTuner:
    """The mean response time of control rules in steady state (``drl_ac.evaluation.steady``)
    on common random numbers: every candidate runs on the same instances and seed, from the
    same ``start`` state when one is given (e.g. the best constant action's stationary state,
    so that candidates need only their own, shorter transient). A candidate whose run never
    reaches a stationary regime within ``max_steps`` scores infinity (unstable or too slow
    to tell, never chosen).

    Near a system's limit the number in system relaxes over more decisions than a tuning run
    has (redundancy_ps at load 0.9: about 60,000 per instance); a search where no candidate
    settled took its first (there the own-server rule at 6.04, where its best reads 4.8).
    ``settle_on`` measures that: a stable base runs until it settles (up to ``LONGER`` times
    the tuning run), and the ``horizon`` is four times its warm-up where that exceeds the run.
    Every candidate still runs the tuning run, on the same random numbers from the same start,
    and ranks by its mean there (a screen: those means share the transient); the ``confirm``
    leaders then run to the horizon, and the best of those that settle is chosen."""

    LONGER = 8  # the most ``settle_on`` stretches the horizon

    def __init__(self, spec: NetworkSpec, seed: int, num_envs: int, max_steps: int, rel_se: float = 0.02,
                 start: dict | None = None, progress: Callable[[str], None] | None = None, confirm: int = 3):
        self.spec, self.seed, self.num_envs, self.max_steps, self.rel_se = spec, seed, num_envs, max_steps, rel_se
        self.start, self.progress, self.confirm = start, progress, confirm
        self.horizon = max_steps
        self.cache: dict[str, dict] = {}
        self.trace: list[tuple[str, int, float, float]] = []

    def settle_on(self, rule) -> dict:
        """Run ``rule`` (a stable base: the most stable constant action) to the longest horizon
        and set ``horizon`` from what it needed; returns its measures."""
        m = self(rule, self.max_steps * self.LONGER)
        settle = 4 * m["warmup_steps"] if m["stationary"] else self.max_steps * self.LONGER  # warm-up: < half a run
        self.horizon = min(max(self.max_steps, settle), self.max_steps * self.LONGER)
        return m

    def __call__(self, rule, max_steps: int | None = None) -> dict:
        """``rule``'s measures from a run of at most ``max_steps`` (the tuning run's by default)."""
        steps = max_steps or self.max_steps
        key = (rule.describe(), steps)
        if key not in self.cache:
            m = steady_state(rule, self.spec, seed=self.seed, num_envs=self.num_envs, max_steps=steps,
                             rel_se=self.rel_se, start=self.start)
            if not m["stationary"]:  # a run whose backlog outgrew the job table says so already
                m = {**m, "unstable": m.get("unstable") or f"no stationary regime within {steps} decisions per instance"}
            self.cache[key] = m
            self.trace.append((key[0], m["arrivals"], m["mean_delay"], m["acceptance"]))
            if self.progress is not None:
                lo, hi = m["mean_delay_ci"]
                self.progress(f"{key[0]}: mean response {m['mean_delay']:.4f} [{lo:.4f}, {hi:.4f}] "
                              f"({m['arrivals']} arrivals after {m['warmup_steps']} warm-up steps"
                              f"{'; NOT stationary' if 'unstable' in m else ''})")
        return self.cache[key]

    def measures(self, rule, at_least: int | None = None) -> dict:
        """``rule``'s measures from its longest run so far, run to at least ``at_least``
        decisions per instance (the tuning run's by default) if it has not been."""
        runs = [steps for name, steps in self.cache if name == rule.describe()]
        return self(rule, max(runs + [at_least or self.max_steps]))

    def score(self, rule) -> float:
        m = self.measures(rule)
        return math.inf if "unstable" in m else float(m["mean_delay"])

    def best(self, rules: list) -> TuningResult:
        """The candidate with the lowest mean response (the first when none is stationary);
        beyond the tuning run, among the ``confirm`` leaders of the screen."""
        if self.horizon > self.max_steps:
            screened = sorted((r for r in rules if math.isfinite(self(r)["mean_delay"])),
                              key=lambda r: self(r)["mean_delay"])
            for r in screened[: self.confirm]:
                self(r, self.horizon)
            rules = screened[: self.confirm] or rules
        rule = min(rules, key=self.score)
        return TuningResult(rule, self.measures(rule), list(self.trace))
