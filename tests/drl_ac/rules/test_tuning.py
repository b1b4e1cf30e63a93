"""The control tuner's search near a system's limit: the horizon from a base's relaxation, a
screen on the tuning run, the leaders run to the horizon (scripted runs: what each rule's
steady-state run would say at each length)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drl_ac.rules.tuning import ControlTuner, Tuner, look_bounds
from envs import load_spec


class Rule:
    def __init__(self, name: str):
        self.name = name

    def describe(self) -> str:
        return self.name


class Scripted(ControlTuner):
    """A tuner whose runs are read from ``script[(rule, steps)]`` (mean, stationary, warm-up)."""

    def __init__(self, script: dict, max_steps: int = 1_000):
        super().__init__(load_spec("redundancy_ps"), seed=0, num_envs=4, max_steps=max_steps)
        self.script, self.runs = script, []

    def __call__(self, rule, max_steps=None):
        steps = max_steps or self.max_steps
        key = (rule.describe(), steps)
        if key not in self.cache:
            self.runs.append(key)
            mean, stationary, warmup = self.script[key]
            m = {"mean_delay": mean, "arrivals": 100, "acceptance": 1.0, "warmup_steps": warmup,
                 "stationary": stationary}
            self.cache[key] = m if stationary else {**m, "unstable": "no stationary regime"}
        return self.cache[key]


def test_a_quick_system_keeps_the_tuning_run_and_picks_the_lowest_stationary_mean():
    script = {("base", 8_000): (2.0, True, 100), ("a", 1_000): (1.5, True, 100), ("b", 1_000): (1.2, True, 100),
              ("c", 1_000): (0.9, False, 500)}
    tuner = Scripted(script)
    tuner.settle_on(Rule("base"))
    assert tuner.horizon == 1_000  # its warm-up (100) is far inside the tuning run
    assert tuner.best([Rule("a"), Rule("b"), Rule("c")]).rule.name == "b"  # c drifts: never chosen
    assert all(steps == 1_000 for name, steps in tuner.runs if name != "base")


def test_near_the_limit_the_leaders_of_the_screen_run_to_the_horizon():
    """No candidate settles in the tuning run: they rank by their means there (same random
    numbers), the three lowest run to four times the base's warm-up, the best of those wins."""
    script = {("base", 8_000): (10.0, True, 1_500)}
    for name, short, long in (("a", 5.0, 6.0), ("b", 4.0, 4.9), ("c", 4.5, 4.7), ("d", 4.2, 5.5), ("e", 7.0, 3.0)):
        script[(name, 1_000)] = (short, False, 400)
        script[(name, 6_000)] = (long, True, 1_200)
    tuner = Scripted(script)
    tuner.settle_on(Rule("base"))
    assert tuner.horizon == 6_000  # 4 x 1,500, within 8 x the tuning run
    best = tuner.best([Rule(n) for n in "abcde"])
    assert best.rule.name == "c" and best.metrics["mean_delay"] == 4.7  # its long run
    assert {name for name, steps in tuner.runs if steps == 6_000} == {"b", "c", "d"}  # e's screen was poor
    assert tuner.score(Rule("c")) == 4.7 and math.isinf(tuner.score(Rule("a")))


def test_a_base_that_never_settles_stretches_the_horizon_to_its_longest():
    tuner = Scripted({("base", 8_000): (9.0, False, 4_000)})
    tuner.settle_on(Rule("base"))
    assert tuner.horizon == 8_000


class Walk(Tuner):
    """A margin tuner whose rule ``i`` reads the i-th of ``paths``: its violation at each look is
    eps plus the mean of the first n of one stream of noise (nested samples, as common random
    numbers give), with the standard error that mean has."""

    def __init__(self, paths: np.ndarray, eps: float):
        super().__init__(load_spec("paper_tandem"), 1_000, seed=0, num_envs=4, max_arrivals=8_000, margin=True)
        self.paths, self.eps, self.looks = paths, eps, []

    def evaluate(self, rule, arrivals):
        self.looks.append(arrivals)
        n = arrivals // 1_000  # looks at 1, 2, 4, 8 blocks
        mean = self.paths[int(rule.name), :n].mean()
        return {"violation": self.eps + mean, "violation_se": 1 / math.sqrt(n), "acceptance": 1.0}


def test_looks_together_keep_a_rule_at_eps_passing_at_most_5_percent():
    """A rule exactly at eps must pass at most 5% of the time however many looks its sample
    grows through; a one-sided 1.645 at every look passes it about twice as often."""
    reps, eps = 20_000, 0.1
    paths = np.random.default_rng(7).standard_normal((reps, 8))
    tuner = Walk(paths, eps)
    passed = np.mean([tuner.feasible(Rule(str(i))) for i in range(reps)])
    assert tuner.z_early == pytest.approx(3.0902, abs=1e-4) and tuner.z_last == pytest.approx(1.6747, abs=1e-4)
    assert passed <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    naive = np.zeros(reps, bool)  # 1.645 at each of the looks, stopping at the first decision
    undecided = np.ones(reps, bool)
    for n in (1, 2, 4, 8):
        z = paths[:, :n].mean(axis=1) * math.sqrt(n)  # (estimate - eps) / se
        naive |= undecided & (z + 1.6449 <= 0)
        undecided &= np.abs(z) < 1.6449
    assert naive.mean() > 0.08


def test_a_rule_far_from_eps_is_decided_on_the_first_sample():
    paths = np.full((1, 8), -10.0)  # ten standard errors below eps
    tuner = Walk(paths, 0.1)
    assert tuner.feasible(Rule("0")) and tuner.looks == [1_000]
    assert look_bounds(8_000, 8_000) == pytest.approx((3.0902, 1.6449), abs=1e-4)  # one look: the plain bound


def test_looks_that_leave_the_last_nothing_are_refused():
    with pytest.raises(ValueError, match="arrivals: 0 arrivals"):
        look_bounds(0, 10)
    with pytest.raises(ValueError, match="max_arrivals: 61 looks"):
        look_bounds(1, 2**60)
