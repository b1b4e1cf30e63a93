"""A single network instance as a plain ``gymnasium.Env`` (registered as ``drl_ac/...-v0``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.spec import NetworkSpec, load_spec
from envs.vector_env import AdmissionVectorEnv


class AdmissionEnv(gym.Env):
    """One instance of the vector environment; same observations, rewards and info.

    Registered on ``import envs`` (``gymnasium.make("drl_ac/PaperTandem-v0")`` needs that import).
    """

    metadata = {"render_modes": []}

    def __init__(self, scenario: str | Path | NetworkSpec = "paper_tandem", include_in_service: bool = False,
                 **overrides: Any):
        spec = load_spec(scenario, **overrides)
        self._vec = AdmissionVectorEnv(spec, 1, include_in_service=include_in_service)
        self.spec_network = spec
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        # Draw the simulator's seed from gymnasium's generator so reset(seed) is reproducible.
        obs, info = self._vec.reset(seed=int(self.np_random.integers(2**63 - 1)))
        return obs[0], info

    def step(self, action):
        obs, reward, terminated, truncated, info = self._vec.step(np.array([int(action)]))
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), info
