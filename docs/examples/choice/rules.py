"""The rules an engineer would run: every constant action, and join-the-shortest-expected-
delay (JSED: the server with the least (jobs + 1) / speed), with nothing to tune."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drl_ac.rules.tuning import ConstantAction, ControlTuner, TuningResult
from envs import NetworkSpec

BUDGETS = {"smoke": {"num_envs": 8, "max_steps": 400}, "quick": {"num_envs": 32, "max_steps": 8_000},
           "full": {"num_envs": 64, "max_steps": 32_000}}
"""``tuned_rules`` options per comparison budget (``drl_ac.study.BUDGETS``)."""


@dataclass(frozen=True)
class ShortestExpectedDelay:
    """Send a job where (jobs there + 1) / speed is least (the observation's first columns are
    the jobs waiting per server, the next ones those in service)."""

    speeds: tuple[float, ...]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        n = len(self.speeds)
        jobs = obs[:, :n] + obs[:, n: 2 * n]
        return np.argmin((jobs + 1) / np.asarray(self.speeds), axis=1).astype(np.int64)

    def describe(self) -> str:
        return "shortest expected delay"


def tuned_rules(spec: NetworkSpec, seed: int = 777, num_envs: int = 64, max_steps: int = 16_000,
                progress: Callable[[str], None] | None = None) -> dict[str, TuningResult]:
    """Every constant action and JSED, each measured in steady state on ``seed``."""
    tuner = ControlTuner(spec, seed, num_envs, max_steps, progress=progress)
    rules = [ConstantAction(i, f"always {a}") for i, a in enumerate(spec.actions)]
    rules.append(ShortestExpectedDelay(spec.block.speeds))
    return {rule.describe(): TuningResult(rule, tuner(rule), list(tuner.trace)) for rule in rules}
