"""Rules for two server pools (docs/systems/pools.md): where a job starts and whether it is
rerouted or replicated after tau in service there.

* ``ConstantAction``: one of the scenario's actions for every job, one rule per action (every
  constant action). With one server per pool, "pool i, replicate after 0 in service" is full
  replication in effect: a copy joins the other queue as soon as the job starts.
* ``SignalledPool(policy, tau, by_type, queue, preempt)``: the job starts on the faster pool of its
  signalled (or revealed) type, then reroutes or replicates after tau there (the copy to the
  back or the front of the other queue, and a rescue that preempts after ``preempt``): the
  threshold rule of the literature, tuned over the (policy, tau, queue, preempt) the
  scenario's actions offer for both pools.

Both are tuned in steady state on common random numbers (``tuning.ControlTuner``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drl_ac.rules.tuning import ConstantAction, ControlTuner, TuningResult
from envs import NetworkSpec
from envs.systems.pools.system import server_times


@dataclass(frozen=True)
class SignalledPool:
    """The action (faster pool of the signalled type, ``policy``, ``tau``): ``by_type[j]`` is
    its index for type information j (the last: nothing known, pool 1). The type
    information is the one-hot block at the end of the observation."""

    policy: str
    tau: float
    by_type: tuple[int, ...]
    queue: str = "back"
    preempt: float = math.inf

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        info = obs[:, -len(self.by_type):].argmax(1)
        return np.asarray(self.by_type, np.int64)[info]

    def describe(self) -> str:
        if self.policy == "none":
            return "signalled pool"
        return (f"signalled pool, {self.policy} after {self.tau:g}" + (" to the front" if self.queue == "front" else "")
                + (f", preempting after {self.preempt:g}" if math.isfinite(self.preempt) else ""))

    def guard_fields(self) -> dict:
        """The policy-section fields that make this rule a learned policy's default (a guard,
        exported in torch: ``drl_ac.learning.qnet.RuleDefault``)."""
        return {"default_rule": {"kind": "table", "actions": list(self.by_type)}}


def signalled_rules(spec: NetworkSpec) -> list[SignalledPool]:
    """One rule per (policy, tau, queue, preempt) the scenario's actions offer on both pools."""
    pools = spec.block
    index = {(a.pool, a.policy, a.tau[a.pool] if a.pool >= 0 else a.tau[0], a.queue, a.preempt): i
             for i, a in enumerate(pools.actions)}
    faster = [int(np.argmax([pools.speeds[0][j], pools.speeds[1][j]])) for j in range(pools.num_types)] + [0]
    rules = []
    for policy, tau, queue, preempt in sorted({key[1:] for key in index}):
        by_type = tuple(index.get((pool, policy, tau, queue, preempt), -1) for pool in faster)
        if min(by_type) >= 0:
            rules.append(SignalledPool(policy, tau, by_type, queue, preempt))
    return rules


def safest_action(pools) -> int:
    """The choice whose server time leaves the most room on the busier pool (the module text's
    formula, ``server_times``): the base the tuner measures the system's relaxation on."""
    pk, T, _ = server_times(pools)
    load = np.einsum("k,kai->ai", pk, T) / np.asarray(pools.servers, float)
    return int(np.argmin(load.max(1)))


BUDGETS = {"smoke": {"num_envs": 8, "max_steps": 400}, "quick": {"num_envs": 32, "max_steps": 8_000},
           "full": {"num_envs": 64, "max_steps": 32_000}}
"""``tuned_rules`` options per comparison budget (``drl_ac.study.BUDGETS``): smoke checks the
wiring in seconds, quick ends a default training run, full is a study's."""


def tuned_rules(spec: NetworkSpec, seed: int = 777, num_envs: int = 64, max_steps: int = 16_000,
                progress: Callable[[str], None] | None = None) -> dict[str, TuningResult]:
    """Every constant action and the signalled-pool threshold rule, tuned (its policy, tau and
    queue; the row keeps its name, "tuned policy and tau", which studies' files record)."""
    tuner = ControlTuner(spec, seed, num_envs, max_steps, progress=progress)
    constants = [ConstantAction(a, f"always {action.name}") for a, action in enumerate(spec.block.actions)]
    tuner.settle_on(constants[safest_action(spec.block)])  # near the limit, the system sets the horizon
    out: dict[str, TuningResult] = {}
    for rule in constants:
        out[rule.describe()] = TuningResult(rule, tuner.measures(rule), list(tuner.trace))
    signalled = signalled_rules(spec)
    if signalled:
        out["signalled pool (tuned policy and tau)"] = tuner.best(signalled)
    return out


