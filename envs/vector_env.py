"""Gymnasium vector interface: an adapter over ``envs.driver.Driver``."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode, VectorEnv

from envs.bounds import observation_high
from envs.driver import Driver
from envs.errors import SpecError, as_finite, as_horizon, check_actions
from envs.observation import ObservationEncoding
from envs.outcomes import Outcomes
from envs.reward import reward_rule
from envs.spec import NetworkSpec


class AdmissionVectorEnv(VectorEnv):
    """``num_envs`` independent copies of one system; a step is one arrival in each.

    Actions: int array (num_envs,) in ``range(spec.num_actions)`` (admission: 1 accept,
    0 reject); floats, booleans or another shape are refused, naming the value
    (``envs.errors.check_actions``). Observations: float32 (num_envs, D) as
    ``ObservationEncoding`` lays them out (jobs waiting per station first).

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

    ``lam``: the fixed Lagrange multiplier the rewards are paid with (``fixed_multiplier``).
    ``spec`` is the simulated system (a ``NetworkSpec``); the Gymnasium registry record that
    ``gymnasium.make_vec`` assigns to ``spec`` is kept as ``env_spec``.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, spec: NetworkSpec, num_envs: int, seed: int | None = None,
                 horizon: int | None = None, include_in_service: bool = False,
                 lam: float | None = None, **engine_options: Any):
        self.spec = spec
        self.num_envs = int(num_envs)
        self.horizon = as_horizon(horizon)
        self.lam = fixed_multiplier(spec, lam)
        if engine_options.get("probes") is False and spec.system.engine_options().get("probes") is not False:
            raise ValueError(f"probes=False: {spec.name}'s rewards score its rejections by their probes. Fix: keep "
                             "probes on (only a system that never reads them, a cell, runs without).")
        self.driver = Driver(spec, self.num_envs, seed=seed,
                             encoding=ObservationEncoding.for_spec(spec, include_in_service), **engine_options)
        self._reward = reward_rule(spec)
        width = self.driver.encoding.width
        high = observation_high(spec, self.driver.encoding, self.driver.engine.max_jobs)
        self.single_observation_space = gym.spaces.Box(np.zeros(width, np.float32), high, (width,), np.float32)
        self.single_action_space = gym.spaces.Discrete(spec.num_actions)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._needs_reset = False
        self._episode_step = 0

    # Gymnasium's VectorEnv reserves ``spec`` for its registry record and make_vec assigns it;
    # this project's ``spec`` has always been the system, which rewards read.
    env_spec: EnvSpec | None = None

    @property
    def spec(self) -> NetworkSpec:
        """The simulated system."""
        return self._network

    @spec.setter
    def spec(self, value: NetworkSpec | EnvSpec) -> None:
        if isinstance(value, EnvSpec):
            self.env_spec = value
        else:
            self._network = value

    @property
    def spec_network(self) -> NetworkSpec:
        """The simulated system (the single env's name for it)."""
        return self._network

    def __repr__(self) -> str:
        name = self.env_spec.id if self.env_spec is not None else self._network.name
        return f"{type(self).__name__}({name}, num_envs={self.num_envs})"

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
        if self._needs_reset:  # checked though ignored (the driver checks every other step's)
            check_actions(actions, (self.num_envs,), self.spec.actions)
            obs, info = self.reset()
            zeros = np.zeros(self.num_envs, bool)
            return obs, np.zeros(self.num_envs), zeros, zeros.copy(), info
        step = self.driver.t
        obs, done = self.driver.step(actions)
        self._episode_step += 1
        truncated = np.full(self.num_envs, self.horizon is not None and self._episode_step >= self.horizon)
        self._needs_reset = bool(truncated[0])
        return obs, self.rewards(done, np.asarray(actions), step), np.zeros(self.num_envs, bool), truncated, \
            {"completed": done.info()}

    def rewards(self, done: Outcomes, actions: np.ndarray, step: int) -> np.ndarray:
        """Per-instance sum of the rewards of the rows in ``done`` that are decisions; a cell
        is paid per step, for the UE arriving at ``step`` and the drops since (``envs.reward``):
        the system computes them (``System.step_rewards``)."""
        return self.spec.system.step_rewards(done, actions, step, self._reward, self.lam, self.num_envs)


def fixed_multiplier(spec: NetworkSpec, lam: float | str | None) -> float:
    """The Lagrange multiplier a Gymnasium environment pays its rewards with: ``lam`` if
    given, else the scenario's. A scenario without one leaves it to automatic tuning, which
    needs a learner (``experiments/train.py``); the environment then pays with 1.0 and says
    so once (a warning), where the reward reads the multiplier."""
    if isinstance(lam, str) and lam.strip().lower() == "auto":
        raise SpecError("lam", "'auto' needs a learner that tunes the multiplier as it trains "
                        "(experiments/train.py does); a Gymnasium environment pays a fixed one",
                        "give a number (e.g. lam=8, paper_tandem's), or leave lam out for the scenario's own")
    if lam is not None:
        value = as_finite(lam, "lam", "give a finite number >= 0")
        if value < 0:
            raise SpecError("lam", f"must be >= 0, got {lam!r}", "give a finite number >= 0")
        return value
    if spec.lam is not None:
        return float(spec.lam)
    if spec.system.kind != "control":  # admission and loss rewards read the multiplier
        warnings.warn(f"{spec.name}: the scenario fixes no lam (it leaves the multiplier to automatic "
                      "tuning), so the environment pays its rewards with lam=1.0. Pass lam=<number> "
                      "to choose it; env.unwrapped.lam reports it.", UserWarning, stacklevel=3)
    return 1.0
