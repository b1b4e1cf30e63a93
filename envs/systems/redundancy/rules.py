"""Rules for redundancy-d (docs/systems/redundancy.md): how many copies d of a job to start.

* ``ConstantAction``: the same d for every job, one rule per choice of the scenario (every constant
  action). A d whose exact stability limit lambda*(d) = N / (d E[min(X_1..X_d)]) is at or
  below the arrival rate is reported unstable, not simulated (``envs.systems.redundancy.theory``).
* ``LoadThreshold``: d = ``high`` while fewer than k jobs are in the system, else ``low``:
  copies are cheap when servers idle and cost capacity when they do not. ``low`` is the best
  fixed d (what the rule falls back to under load), ``high`` any larger choice, k tuned.
* ``OwnServers``: a copy on each of the job's servers in turn (its random order, the first
  always) while that server holds at most m jobs, up to ``d_max``: a copy costs capacity
  only where it shares a busy server, so it is made where it is cheap (redundancy to idle
  queues, Gardner et al.). It reads the jobs at the job's own servers (the observation's
  ``candidates``), d_max and m tuned.

All are tuned in steady state on common random numbers (``tuning.ControlTuner``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drl_ac.rules.tuning import ConstantAction, ControlTuner, TuningResult
from envs import NetworkSpec, ObservationEncoding
from envs.systems.redundancy.theory import stability_threshold

K_GRID = (2, 4, 8, 16, 32)  # jobs in system at which the rule falls back to ``low``: geometric
K_MAX = 1024  # doubled past the grid while the best k is the largest tried (at load 0.9: ~90 jobs)


@dataclass(frozen=True)
class LoadThreshold:
    """Action ``high`` while fewer than ``k`` jobs are in the system (observation column
    ``column``, the number in system), else ``low``."""

    k: int
    high: int
    low: int
    column: int
    labels: tuple[int, ...]  # d of each action, for describe

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.where(obs[:, self.column] < self.k, self.high, self.low).astype(np.int64)

    def describe(self) -> str:
        return f"d = {self.labels[self.high]} below {self.k} jobs in system, else {self.labels[self.low]}"

    def guard_fields(self) -> dict:
        """The policy-section fields that make this rule a learned policy's default (a guard,
        exported in torch: ``drl_ac.learning.qnet.RuleDefault``)."""
        return {"default_rule": {"kind": "threshold", "column": self.column, "k": self.k, "below": self.high,
                                 "above": self.low}}


@dataclass(frozen=True)
class OwnServers:
    """d = 1 + the number of the job's servers 2..``d_max`` (in its order, a prefix) holding at
    most ``m`` jobs each: the observation's ``candidates`` start at ``column``; ``actions[j]``
    is the action of the largest choice of d <= j + 1 (``choice_for``)."""

    d_max: int
    m: int
    column: int
    actions: tuple[int, ...]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        free = obs[:, self.column + 1: self.column + self.d_max] <= self.m
        count = np.cumprod(free, axis=1).sum(1)
        return np.asarray(self.actions, np.int64)[count]

    def describe(self) -> str:
        return f"copies on the job's next servers while they hold <= {self.m} jobs (d <= {self.d_max})"

    def guard_fields(self) -> dict:
        """The policy-section fields that make this rule a learned policy's default (a guard,
        exported in torch: ``drl_ac.learning.qnet.RuleDefault``)."""
        return {"default_rule": {"kind": "prefix", "column": self.column, "m": self.m, "actions": list(self.actions)}}


M_GRID = (0, 1, 2, 4, 8)  # jobs a server may hold and still get a copy (OwnServers)


def own_server_rules(spec: NetworkSpec, m_grid: tuple[int, ...] = M_GRID) -> list[OwnServers]:
    """One ``OwnServers`` rule per d_max > 1 of the scenario's choices and m of ``m_grid``; none
    when the observation does not count the jobs at the job's own servers."""
    enc = ObservationEncoding.for_spec(spec)
    choices = spec.block.choices
    if not enc.candidates:
        return []
    column = enc.width - enc.candidates
    rules = []
    for d_max in sorted(d for d in choices if 1 < d <= enc.candidates):
        actions = tuple(choice_for(choices, j) for j in range(1, d_max + 1))
        rules += [OwnServers(d_max, m, column, actions) for m in m_grid]
    return rules


def choice_for(choices: tuple[int, ...], d: int) -> int:
    """The action of the largest of ``choices`` (any order) at most ``d``; the smallest choice's
    when none is."""
    fits = [a for a, c in enumerate(choices) if c <= d]
    return max(fits, key=lambda a: choices[a]) if fits else min(range(len(choices)), key=lambda a: choices[a])


def limits(spec: NetworkSpec) -> dict[int, float]:
    """lambda*(d) of each choice d of the scenario (exact, fluid)."""
    red = spec.block
    return {d: stability_threshold(red.servers, d, red.copies, size=red.size, scale=red.scale, factor=red.factor)
            for d in red.choices}


BUDGETS = {"smoke": {"num_envs": 8, "max_steps": 400, "k_grid": (4, 16), "m_grid": (0, 2)},
           "quick": {"num_envs": 32, "max_steps": 8_000}, "full": {"num_envs": 64, "max_steps": 32_000}}
"""``tuned_rules`` options per comparison budget (``drl_ac.study.BUDGETS``): smoke checks the
wiring in seconds, quick ends a default training run, full is a study's."""


CHAINS = 2
"""Independent chains of the tuned families (``tuned_rules``'s ``chain``): every fixed d and the
load threshold, which falls back to the best of them; the own-server threshold. Each chain
settles its tuner on the same base, so two processes can tune the two at once
(``drl_ac.study.BackgroundRules``), with the rules and figures of one process."""


def tuned_rules(spec: NetworkSpec, seed: int = 777, num_envs: int = 64, max_steps: int = 16_000,
                progress: Callable[[str], None] | None = None, k_grid: tuple[int, ...] = K_GRID,
                m_grid: tuple[int, ...] = M_GRID, chain: int | None = None) -> dict[str, TuningResult]:
    """Every fixed d (unstable ones marked, not simulated), the load threshold, tuned over
    ``k_grid`` and every ``high`` above the best fixed d (while the best k is the largest
    tried, k doubles up to ``K_MAX``: a careful engineer's grid covers the loads it meets),
    and the own-server threshold, tuned over its d_max and ``m_grid`` (``own_server_rules``).
    ``chain``: only that one of the ``CHAINS`` (0: the fixed d and the load threshold, 1: the
    own-server threshold)."""
    if chain not in (None, *range(CHAINS)):
        raise ValueError(f"chain must be None or one of 0..{CHAINS - 1}, got {chain!r}. Fix: 0 for the fixed d and "
                         "the load threshold, 1 for the own-server threshold, None for both.")
    red, rate = spec.block, spec.arrival_rate
    lam_star = limits(spec)
    tuner = ControlTuner(spec, seed, num_envs, max_steps, progress=progress)
    out: dict[str, TuningResult] = {}
    safest = max(range(len(red.choices)), key=lambda a: lam_star[red.choices[a]])
    if rate < lam_star[red.choices[safest]]:  # near the limit, the system sets the horizon
        tuner.settle_on(ConstantAction(safest, f"d = {red.choices[safest]}"))
    if chain in (None, 0):
        out.update(_fixed_and_load_threshold(spec, tuner, lam_star, k_grid))
    own = own_server_rules(spec, m_grid)
    hopeless = all(rate >= lam_star[d] for d in red.choices)  # no fixed d is stable: no threshold is tuned
    if chain in (None, 1) and own and not hopeless:
        out["own-server threshold"] = tuner.best(own)
    return out


def _fixed_and_load_threshold(spec: NetworkSpec, tuner: ControlTuner, lam_star: dict[int, float],
                              k_grid: tuple[int, ...]) -> dict[str, TuningResult]:
    red, rate = spec.block, spec.arrival_rate
    out: dict[str, TuningResult] = {}
    for a, d in enumerate(red.choices):
        rule = ConstantAction(a, f"d = {d}")
        if rate >= lam_star[d]:
            out[rule.describe()] = TuningResult(rule, {"unstable": f"arrival rate {rate:.4g} >= lambda*(d={d}) "
                                                                   f"{lam_star[d]:.4g}", "mean_delay": math.inf})
        else:
            out[rule.describe()] = TuningResult(rule, tuner.measures(rule, tuner.horizon), list(tuner.trace))
    stable = [r.rule for r in out.values() if "arrivals" in r.metrics]
    if not stable:
        return out
    low = min(stable, key=tuner.score).action
    column = spec.num_stations  # the pool encoding: jobs per server sorted, then the number in system
    def at(k: int) -> list[LoadThreshold]:
        return [LoadThreshold(k, high, low, column, red.choices) for high in range(low + 1, len(red.choices))]

    candidates = [rule for k in k_grid for rule in at(k)]
    if candidates:
        best = tuner.best(candidates)
        while best.rule.k == max(c.k for c in candidates) and best.rule.k < K_MAX:  # at the grid's edge: go on
            candidates += at(min(2 * best.rule.k, K_MAX))
            best = tuner.best(candidates)
        out["load threshold"] = best
    return out
