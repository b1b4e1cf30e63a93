"""The control tuner's search near a system's limit: the horizon from a base's relaxation, a
screen on the tuning run, the leaders run to the horizon (scripted runs: what each rule's
steady-state run would say at each length)."""

from __future__ import annotations

import math

from drl_ac.rules.tuning import ControlTuner
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
