"""Gymnasium vector interface: an adapter over ``envs.driver.Driver``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from envs.driver import Driver
from envs.observation import ObservationEncoding
from envs.outcomes import Outcomes
from envs.reward import reward_rule
from envs.spec import NetworkSpec


class AdmissionVectorEnv(VectorEnv):
    """``num_envs`` independent copies of one system; a step is one arrival in each.

    Actions: int array (num_envs,) in ``range(spec.num_actions)`` (admission: 1 accept,
    0 reject). Observations: float32 (num_envs, D) as ``ObservationEncoding`` lays them out
    (jobs waiting per station first).

    ``info["completed"]`` lists, one row per decision whose outcome became known in this
    step, ``env``, ``step``, ``accepted``, ``delay``, ``action``, ``success`` (plus
    ``sojourn``, ``arrival_time``, ``departure_time``, ``job_class``). The reward of
    instance i is the sum of the rewards of its rows completed in this step: it is
    *time-shifted* (an accepted job is paid when it leaves), so learners should use
    ``info["completed"]`` for exact credit assignment. A cell's reward is not shifted: it is
    paid per step, for the UE arriving now and the drops since (``envs.reward``).

    The task is continuing: no termination. With ``horizon`` every instance is truncated
    after that many steps and restarts empty on the next ``step`` (next-step autoreset).
    ``reset(options={"reset_mask": mask})`` empties only the masked instances.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, spec: NetworkSpec, num_envs: int, seed: int | None = None,
                 horizon: int | None = None, include_in_service: bool = False,
                 lam: float | None = None, **engine_options: Any):
        self.spec = spec
        self.num_envs = int(num_envs)
        self.horizon = horizon
        self.lam = float(lam if lam is not None else (spec.lam if spec.lam is not None else 1.0))
        self.driver = Driver(spec, self.num_envs, seed=seed,
                             encoding=ObservationEncoding.for_spec(spec, include_in_service), **engine_options)
        self._reward = reward_rule(spec)
        width = self.driver.encoding.width
        self.single_observation_space = gym.spaces.Box(0.0, np.inf, (width,), np.float32)
        self.single_action_space = gym.spaces.Discrete(spec.num_actions)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._needs_reset = False
        self._episode_step = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        mask = (options or {}).get("reset_mask")
        if mask is not None:
            mask = np.asarray(mask, bool)
            if mask.shape != (self.num_envs,):
                raise ValueError(f"reset_mask: expected a bool array of shape ({self.num_envs},), got {mask.shape}.")
            return self.driver.reset_instances(mask), {}
        obs = self.driver.reset(seed)
        self._needs_reset = False
        self._episode_step = 0
        return obs, {}

    def step(self, actions):
        if self._needs_reset:
            obs, info = self.reset()
            zeros = np.zeros(self.num_envs, bool)
            return obs, np.zeros(self.num_envs), zeros, zeros.copy(), info
        actions, step = np.asarray(actions), self.driver.t
        obs, done = self.driver.step(actions)
        self._episode_step += 1
        truncated = np.full(self.num_envs, self.horizon is not None and self._episode_step >= self.horizon)
        self._needs_reset = bool(truncated[0])
        return obs, self.rewards(done, actions, step), np.zeros(self.num_envs, bool), truncated, \
            {"completed": done.info()}

    def rewards(self, done: Outcomes, actions: np.ndarray, step: int) -> np.ndarray:
        """Per-instance sum of the rewards of the rows in ``done`` that are decisions; a cell
        is paid per step, for the UE arriving at ``step`` and the drops since (``envs.reward``):
        the system computes them (``System.step_rewards``)."""
        return self.spec.system.step_rewards(done, actions, step, self._reward, self.lam, self.num_envs)
