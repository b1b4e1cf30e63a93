"""One path from data to update (Algorithm 1, batched):

    observe s_t -> epsilon-greedy a_t -> store (s_t, a_t, greedy) as incomplete
    -> env.step -> s_{t+1}, outcomes of earlier decisions -> complete them -> replay
    -> (multiplier update) -> gradient steps on replayed batches with the current lam.

Many instances feed one learner; ``updates_per_step`` gradient steps follow each
vector step.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drl_ac.checkpoint import (
    CHECKPOINT_FORMAT,
    FORMAT_VERSION,
    POLICY_FORMAT,
    load_file,
    save_atomic,
    to_arrays,
    to_tensors,
    versions,
)
from drl_ac.learning.interaction import act, epsilon_greedy
from drl_ac.learning.learner import DifferentialQLearner, LearnerConfig
from drl_ac.learning.multiplier import LagrangeMultiplier
from drl_ac.learning.replay import ReplayBuffer
from drl_ac.learning.store import DelayedCompletionStore
from drl_ac.tracking import RunningStats
from envs import REWARD_RULES, Driver, NetworkSpec, ObservationEncoding, load_spec


@dataclass
class TrainConfig:
    scenario: str = "paper_tandem"
    steps: int = 6_000_000  # decisions (arrivals) summed over all instances
    num_envs: int = 2048
    lam: float | str | None = None  # None: the scenario's (auto when it fixes none); "auto"; or a number
    eps: float | None = None
    d_ub: float | None = None
    delay: str | None = None
    seed: int = 0
    device: str = "auto"
    include_in_service: bool = False
    updates_per_step: int = 1
    learning_starts: int = 20_000  # experiences in replay before learning
    replay_size: int = 300_000
    exploration_start: float = 0.5
    exploration_end: float = 0.01
    exploration_fraction: float = 0.3  # of the run, decayed geometrically
    lam_init: float = 1.0  # starting multiplier when automatic
    lam_eta: float = 2.0
    lam_kp: float = 0.0
    lam_every: int = 10  # vector steps between multiplier updates
    lam_margin: float = 0.003  # the automatic lam aims at violation eps - margin (evaluation noise)
    lam_start: float = 0.2  # fraction of the run before the automatic lam moves (policy still immature)
    stats_half_life: float = 200_000.0
    learner: LearnerConfig = field(default_factory=LearnerConfig)

    def spec(self) -> NetworkSpec:
        lam = None if self.lam == "auto" else self.lam
        overrides = {"eps": self.eps, "d_ub": self.d_ub, "delay": self.delay}
        spec = load_spec(self.scenario, **{k: v for k, v in overrides.items() if v is not None})
        if self.lam == "auto":
            spec = spec.with_overrides(lam=None)
        elif lam is not None:
            spec = spec.with_overrides(lam=float(lam))
        return spec

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["learner"]["hidden"] = list(d["learner"]["hidden"])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        d = dict(d)
        learner = dict(d.pop("learner", {}))
        if "hidden" in learner:
            learner["hidden"] = tuple(int(h) for h in learner["hidden"])
        return cls(**d, learner=LearnerConfig(**learner))


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise ValueError(f"device: unknown {name!r}. Fix: use auto, cpu or cuda.")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device: cuda requested but torch sees no CUDA device. Fix: use --device cpu or auto.")
    return torch.device(name)


class Trainer:
    """``spec``: the resolved system (a resumed run passes the one stored in its checkpoint,
    so an edited or moved YAML file cannot change it); default ``config.spec()``."""

    def __init__(self, config: TrainConfig, spec: NetworkSpec | None = None):
        self.config = config
        self.spec = spec if spec is not None else config.spec()
        self.device = resolve_device(config.device)
        torch.manual_seed(config.seed)
        self.encoding = ObservationEncoding.for_spec(self.spec, config.include_in_service)
        self.driver = Driver(self.spec, config.num_envs, seed=config.seed, encoding=self.encoding)
        self.B = config.num_envs
        self.obs_dim = self.encoding.width
        self.num_actions = self.spec.num_actions
        self.learner = DifferentialQLearner(self.obs_dim, torch.from_numpy(self.encoding.scale(self.spec)),
                                            config.learner, self.device, self.num_actions,
                                            REWARD_RULES[self.spec.objective], self.spec.admission)
        self.replay = ReplayBuffer(config.replay_size, self.obs_dim, self.device, seed=config.seed)
        self.store = DelayedCompletionStore(self.B, self.obs_dim)
        self.rng = np.random.default_rng([config.seed, 1])  # exploration
        self.auto_lam = self.spec.admission and self.spec.lam is None
        self.multiplier = LagrangeMultiplier(self.spec.eps - (config.lam_margin if self.auto_lam else 0.0),
                                             lam=config.lam_init if self.auto_lam else (self.spec.lam or 0.0),
                                             eta=config.lam_eta, kp=config.lam_kp, every=config.lam_every)
        self.stats = RunningStats(config.stats_half_life)
        self.t = 0
        self.last: dict[str, float] = {}
        obs = self.driver.reset(config.seed)
        self.obs = obs
        self.store.put_obs(0, obs)

    # ------------------------------------------------------------------ the loop
    @property
    def lam(self) -> float:
        return self.multiplier.lam

    @property
    def decisions(self) -> int:
        return self.t * self.B

    def exploration(self) -> float:
        c = self.config
        horizon = max(1.0, c.exploration_fraction * c.steps)
        frac = min(1.0, self.decisions / horizon)
        return c.exploration_start * (c.exploration_end / c.exploration_start) ** frac

    def step(self) -> None:
        """One vector step and its gradient steps."""
        obs_t = torch.from_numpy(self.obs).to(self.device)
        greedy = self.learner.greedy_actions(obs_t).cpu().numpy()
        action = epsilon_greedy(greedy, self.exploration(), self.num_actions, self.rng)
        self.obs, exp = act(self.driver, self.store, self.t, action, greedy)
        self.t += 1
        self.replay.add(exp)
        self.stats.update(exp)
        if (self.auto_lam and self.t % self.multiplier.every == 0 and self.decisions >= self.config.lam_start
                * self.config.steps and math.isfinite(self.stats.greedy_violation)):
            self.multiplier.update(self.stats.greedy_violation)
        if len(self.replay) >= self.config.learning_starts:
            for _ in range(self.config.updates_per_step):
                diag = self.learner.update(self.replay.sample(self.config.learner.batch_size), self.lam,
                                           self.spec.eps)
            self.last = diag

    def progress(self) -> dict[str, float]:
        out = {"violation": self.stats.violation, "greedy_violation": self.stats.greedy_violation,
               "acceptance": self.stats.acceptance, "objective": self.stats.objective,
               "throughput": self.stats.throughput, "mean_cost": self.stats.mean_cost,
               "rbar": float(self.learner.rbar), "lam": self.lam, "exploration": self.exploration(),
               "decisions": self.decisions}
        out.update({k: float(v) for k, v in self.last.items()})
        return out

    def train(self, until: int | None = None, callback: Callable[[Trainer], None] | None = None,
              callback_every: int = 20) -> None:
        """Run until ``until`` decisions (default: the configured total)."""
        until = self.config.steps if until is None else until
        while self.decisions < until:
            self.step()
            if callback is not None and self.t % callback_every == 0:
                callback(self)

    # ------------------------------------------------------------------ state
    def policy_section(self, metrics: dict | None = None) -> dict[str, Any]:
        """What an exported policy holds: weights, shapes, scenario, settings, evaluation, versions."""
        return {"format": POLICY_FORMAT, "version": FORMAT_VERSION, "obs_dim": self.obs_dim,
                "num_actions": self.num_actions, "admission": self.spec.admission,
                "hidden": list(self.config.learner.hidden), "scale": self.learner.q.scale.cpu(),
                "state_dict": {k: v.cpu() for k, v in self.learner.q.state_dict().items()},
                "encoding": self.encoding.to_dict(), "scenario": self.spec.to_dict(),
                "lam": self.lam, "rbar": float(self.learner.rbar), "decisions": self.decisions,
                "config": self.config.to_dict(), "metrics": metrics or {}, "versions": versions()}

    def state_dict(self) -> dict[str, Any]:
        return {"format": CHECKPOINT_FORMAT, "version": FORMAT_VERSION, "versions": versions(),
                "policy": self.policy_section(), "config": self.config.to_dict(), "t": self.t,
                "learner": self.learner.state_dict(), "multiplier": self.multiplier.state_dict(),
                "stats": self.stats.state_dict(), "replay": self.replay.state_dict(),
                "store": to_tensors(self.store.get_state()), "sim": to_tensors(self.driver.engine.get_state()),
                "obs": torch.from_numpy(self.obs), "exploration_rng": self.rng.bit_generator.state,
                "torch_rng": torch.get_rng_state()}

    def save(self, path: str | Path) -> Path:
        return save_atomic(self.state_dict(), path)

    @classmethod
    def resume(cls, path: str | Path, **changes: Any) -> Trainer:
        """Continue a run from ``checkpoint.pt``; ``changes`` may extend ``steps`` or set ``device``."""
        state = load_file(path, expected=(CHECKPOINT_FORMAT,))
        allowed = {"steps", "device"}
        if set(changes) - allowed:
            raise ValueError(f"resume: only {sorted(allowed)} may change, not {sorted(set(changes) - allowed)}. "
                             "Fix: start a new run to change other settings.")
        config = TrainConfig.from_dict({**state["config"], **changes})
        trainer = cls(config, spec=NetworkSpec.from_dict(state["policy"]["scenario"]))
        trainer.load_state_dict(state)
        return trainer

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t = int(state["t"])
        self.learner.load_state_dict(state["learner"])
        self.multiplier.load_state_dict(state["multiplier"])
        self.stats.load_state_dict(state["stats"])
        self.replay.load_state_dict(state["replay"])
        self.store.set_state(to_arrays(state["store"]))
        self.driver.engine.set_state(to_arrays(state["sim"]))
        self.obs = state["obs"].numpy()
        self.rng.bit_generator.state = state["exploration_rng"]
        torch.set_rng_state(state["torch_rng"])

