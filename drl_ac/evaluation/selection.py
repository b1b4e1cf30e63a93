"""Choosing a learned controller on a validation seed, as a rule's parameter is tuned on one.

A training run can pass through a better policy than the one it ends with, and a network's
greedy rule can leave a good rule in states where its value differences are noise. So the
candidates are the greedy policies of several runs (seeds, cost charges) at several points
of each run, and each of them also *guarded* by the best constant action (the best fixed
rule of the learner's own action set, found on the tuning seed): it leaves that action only
where the network's advantage over it is at least a bias (``drl_ac.learning.qnet.greedy``),
the bias at quantiles of the positive advantages the network sees in the states the constant
action visits. The candidate with the lowest mean response on the validation seed is the
learned controller; the evaluation seed is never seen before the final comparison, and
``paired_difference`` then says whether it beats each rule on the same arrivals.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from drl_ac.checkpoint import LoadedPolicy, build_qnet
from drl_ac.learning.trainer import TrainConfig, Trainer
from envs import Driver, NetworkSpec, ObservationEncoding
from envs.engine import CapacityError
from envs.rollout import collect

Policy = Callable[[np.ndarray], np.ndarray]
TUNING, VALIDATION, EVALUATION = 777, 555, 10_000  # seed offsets: rules tuned, learner chosen, all compared


@dataclass(frozen=True)
class Candidate:
    label: str
    section: dict[str, Any]  # a policy section (``Trainer.policy_section``), maybe with default_action and bias

    def policy(self) -> LoadedPolicy:
        return LoadedPolicy(self.section)


def run_label(config: TrainConfig) -> str:
    return f"seed {config.seed}, cost {config.cost}"


def train_snapshots(spec: NetworkSpec, configs: Sequence[TrainConfig], snapshots: int,
                    say: Callable[[str], None] = lambda s: None) -> list[Candidate]:
    """Train one learner per config on ``spec``; the greedy policy of each at ``snapshots``
    evenly spaced points of its run. A run whose instances outgrow the job table (an
    unstable policy, with decisions charged only when their jobs leave) stops there; its
    earlier snapshots stay candidates."""
    out = []
    for config in configs:
        torch.manual_seed(config.seed)
        trainer = Trainer(config, spec=spec)
        for k in range(1, snapshots + 1):
            try:
                trainer.train(until=config.steps * k // snapshots)
            except CapacityError:
                say(f"{run_label(config)}: job table full after {trainer.decisions} decisions; run stopped")
                break
            out.append(Candidate(f"{run_label(config)}, {trainer.decisions} decisions",
                                 copy.deepcopy(trainer.policy_section())))
            say(f"trained {out[-1].label}")
    return out


def visited_states(spec: NetworkSpec, policy: Policy, encoding: ObservationEncoding, seed: int, num_envs: int = 64,
                   steps: int = 200, warmup: int = 1000) -> np.ndarray:
    """Observations (in ``encoding``) at the decisions of ``policy`` on ``spec``."""
    driver = Driver(spec, num_envs, seed=seed, encoding=encoding)
    _, seen = collect(driver, policy, steps, warmup, record_obs=True)
    return seen.reshape(-1, seen.shape[-1])


def guarded(candidate: Candidate, default: int | Policy, states: np.ndarray, quantiles: Sequence[float]
            ) -> list[Candidate]:
    """``candidate`` guarded by ``default`` (an action, or a rule with ``guard_fields``: its
    action per state), one variant per quantile q: the bias is the q-quantile of the
    network's positive advantages over the default in ``states``, so the variant leaves the
    default in about a fraction 1 - q of the states where the plain greedy policy would."""
    if isinstance(default, (int, np.integer)):
        fields, name, actions = {"default_action": int(default)}, f"action {default}", np.full(len(states), default)
    else:
        fields, name, actions = default.guard_fields(), default.describe(), np.asarray(default(states))
    with torch.inference_mode():
        q = build_qnet(candidate.section)(torch.from_numpy(states.astype(np.float32)))
    advantage = (q.max(1).values - q.gather(1, torch.from_numpy(actions.astype(np.int64))[:, None])[:, 0]).numpy()
    positive = advantage[advantage > 0]
    if positive.size == 0:
        return []
    return [Candidate(f"{candidate.label}, guarded by {name} at q {quantile:g}",
                      {**candidate.section, **fields, "bias": float(bias)})
            for quantile, bias in zip(quantiles, np.quantile(positive, quantiles), strict=True)]


def choose(candidates: Sequence[Candidate], score: Callable[[Policy], dict]) -> tuple[Candidate, list[dict]]:
    """The candidate with the lowest ``score(policy)["mean_response"]`` among those not marked
    ``unstable`` (the last one when all are); and every score, labelled."""
    scored = []
    for c in candidates:
        scored.append({"label": c.label, **score(c.policy())})
    stable = [i for i, s in enumerate(scored) if "unstable" not in s]
    best = min(stable, key=lambda i: scored[i]["mean_response"]) if stable else len(scored) - 1
    return candidates[best], scored


def deviation(policy: Policy, default: int, states: np.ndarray) -> float:
    """The fraction of ``states`` where ``policy`` does not take ``default``."""
    return float((np.asarray(policy(states)) != default).mean())
