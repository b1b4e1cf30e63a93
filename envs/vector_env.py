"""Gymnasium vector interface over the batched simulator."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from envs.engine import Completions, QueueNetworkSim
from envs.reward import met_deadline, reward
from envs.spec import NetworkSpec


class AdmissionVectorEnv(VectorEnv):
    """``num_envs`` independent copies of one network; a step is one arrival in each.

    Actions: int array (num_envs,), 1 accept, 0 reject. Observations: float32
    (num_envs, N) jobs waiting per station (with ``include_in_service``, (num_envs, 2N)).

    ``info["completed"]`` lists, one row per decision whose outcome became known in this
    step, ``env``, ``step``, ``accepted``, ``delay`` (plus ``sojourn``, ``arrival_time``,
    ``departure_time``). The reward of instance i is the sum of eq. 7 rewards of its rows
    completed in this step: it is *time-shifted* (an accepted job is paid when it leaves),
    so learners should use ``info["completed"]`` for exact credit assignment.

    The task is continuing: no termination. With ``horizon`` every instance is truncated
    after that many steps and restarts empty on the next ``step`` (next-step autoreset).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, spec: NetworkSpec, num_envs: int, seed: int | None = None,
                 horizon: int | None = None, include_in_service: bool = False,
                 lam: float | None = None, **sim_options: Any):
        self.spec = spec
        self.num_envs = int(num_envs)
        self.horizon = horizon
        self.include_in_service = include_in_service
        # With an automatically tuned multiplier the reward uses this value, which the trainer updates.
        self.lam = float(lam if lam is not None else (spec.lam if spec.lam is not None else 1.0))
        self.sim = QueueNetworkSim(spec, self.num_envs, seed=seed, **sim_options)
        width = spec.num_stations * (2 if include_in_service else 1)
        self.single_observation_space = gym.spaces.Box(0.0, np.inf, (width,), np.float32)
        self.single_action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._needs_reset = False
        self._episode_step = 0

    def _obs(self) -> np.ndarray:
        return self.sim.observe(self.include_in_service)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.sim.reset(seed)
        self._needs_reset = False
        self._episode_step = 0
        return self._obs(), {}

    def step(self, actions):
        if self._needs_reset:
            obs, info = self.reset()
            zeros = np.zeros(self.num_envs, bool)
            return obs, np.zeros(self.num_envs), zeros, zeros.copy(), info
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.isin(actions, (0, 1)).all():
            raise ValueError(f"actions: expected ints in {{0, 1}} of shape ({self.num_envs},), "
                             f"got shape {actions.shape}. Fix: 1 accepts, 0 rejects, one per instance.")
        done = self.sim.step(actions == 1)
        self._episode_step += 1
        rewards = self.rewards(done)
        truncated = np.full(self.num_envs, self.horizon is not None and self._episode_step >= self.horizon)
        self._needs_reset = bool(truncated[0])
        return self._obs(), rewards, np.zeros(self.num_envs, bool), truncated, {"completed": done.info()}

    def rewards(self, done: Completions) -> np.ndarray:
        """Per-instance sum of eq. 7 rewards of the rows in ``done``."""
        r = reward(done.accepted, met_deadline(done.delay, self.spec.d_ub), self.lam, self.spec.eps)
        return np.bincount(done.env, weights=r, minlength=self.num_envs)
