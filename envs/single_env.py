"""A single network instance as a plain ``gymnasium.Env`` (registered as ``drl_ac/...-v0``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.errors import check_actions
from envs.registration import check_render_mode, split_options
from envs.spec import NetworkSpec, load_spec
from envs.vector_env import AdmissionVectorEnv


class Rows(Mapping):
    """The instance's outcome rows of a step (``info["completed"]``): a read-only mapping of
    equal-length arrays, like the vector env's dict. Not a dict, so that Gymnasium's
    ``SyncVectorEnv``/``AsyncVectorEnv`` (``make_vec`` sync and async) keep one per instance in
    an object array instead of stacking arrays whose lengths differ between instances."""

    def __init__(self, columns: dict[str, np.ndarray]):
        self._columns = columns

    def __getitem__(self, key: str) -> np.ndarray:
        return self._columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __repr__(self) -> str:
        return f"Rows({self._columns!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self.keys() == other.keys() and all(
            np.array_equal(v, other[k], equal_nan=np.asarray(v).dtype.kind == "f") for k, v in self.items())

    __hash__ = None  # mutable arrays inside


class AdmissionEnv(gym.Env):
    """One instance of the vector environment; same observations, rewards and info (its
    ``completed`` rows as a ``Rows`` mapping).

    Registered on ``import envs`` for every packaged scenario (``envs.registration``):
    ``gymnasium.make("drl_ac/PaperTandem-v0", lam=8, horizon=1000)``. Options: the
    environment's (``horizon``: truncate after that many steps; ``include_in_service``;
    ``capacity``, ``max_jobs``, ``max_bytes``, ``exact_counterfactual``) and spec fields
    (``d_ub``, ``delay``, ``eps``, ``lam``, ``name``); anything else is refused by name.

    ``lam`` is the fixed multiplier of the rewards: the scenario's, or 1.0 with a warning
    when the scenario leaves it to automatic tuning (which a plain env cannot do, so
    ``lam="auto"`` is refused). ``spec_network`` is the simulated system (Gymnasium owns
    ``spec``). An action is an integer the action space contains (Python or NumPy); anything
    else (0.9999, "1", True) is refused rather than converted.
    """

    metadata = {"render_modes": []}

    def __init__(self, scenario: str | Path | NetworkSpec = "paper_tandem", render_mode: str | None = None,
                 **options: Any):
        check_render_mode(render_mode)
        env_kwargs, overrides = split_options(options, "the environment")
        spec = load_spec(scenario, **overrides)
        self._vec = AdmissionVectorEnv(spec, 1, lam=overrides.get("lam"), **env_kwargs)
        self.spec_network = spec
        self.render_mode = None
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space

    @property
    def lam(self) -> float:
        """The Lagrange multiplier the rewards are paid with."""
        return self._vec.lam

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        # Draw the simulator's seed from gymnasium's generator so reset(seed) is reproducible.
        obs, _ = self._vec.reset(seed=int(self.np_random.integers(2**63 - 1)))
        return obs[0], {}

    def step(self, action):
        # What the action space does not contain is refused, not converted: int(0.9999) is 0.
        action = check_actions(action, (), self.spec_network.actions)
        obs, reward, terminated, truncated, info = self._vec.step(action.reshape(1))
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), \
            {"completed": Rows(info.get("completed", {}))}
