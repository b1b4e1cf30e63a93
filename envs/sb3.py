"""The batched simulator as a Stable-Baselines3 ``VecEnv``, so SB3 trains on it as is:

    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize
    import envs.sb3
    model = PPO("MlpPolicy", VecNormalize(envs.sb3.make("paper_tandem", 256)), n_steps=64).learn(10**6)

(normalised: raw, PPO drifts to accepting every job on paper_tandem; docs/gymnasium.md).

SB3's own ``DummyVecEnv`` over ``gymnasium.make`` steps one Python env per instance; this
adapter steps all instances in one call of ``envs.AdmissionVectorEnv`` (hundreds of times
more decisions per CPU second). Imported only on use (``envs.sb3``): it needs the optional
Stable-Baselines3 (the ``dev`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

try:
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn
except ImportError as exc:  # tests/envs/test_sb3.py hides the package to check this message
    raise ImportError("envs.sb3 needs Stable-Baselines3, an optional dependency. Fix: "
                      "pip install 'drl_ac[dev]' (or pip install stable-baselines3).") from exc

from envs.spec import NetworkSpec
from envs.vector_env import AdmissionVectorEnv


class SB3VecEnv(VecEnv):
    """SB3's VecEnv API over one ``AdmissionVectorEnv`` (all instances in lockstep).

    ``reset()`` returns observations only, seeded by ``seed()`` (the first of SB3's seeds
    seeds the whole batch); ``step_wait`` returns float32 rewards, dones and one info dict
    per instance. With a ``horizon`` every instance ends its episode at once: ``dones`` is
    all True, ``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]`` are set
    and the observations returned are the restarted instances' (SB3's same-step reset).
    The per-instance dicts are otherwise empty; the batch's outcome rows of the step (the
    vector env's ``info["completed"]``) are ``last_info``.

    ``get_attr``/``set_attr``/``env_method`` reach the one batched simulator: a value read
    is the same for every index, and writes and method calls act on all instances, so they
    refuse a subset of indices.
    """

    def __init__(self, env: AdmissionVectorEnv):
        self.env = env
        self.last_info: dict[str, Any] = {}
        self._actions: np.ndarray | None = None
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

    def reset(self) -> np.ndarray:
        if any(self._options):
            raise ValueError("options: per-instance reset options are not supported by the batched simulator. "
                             "Fix: call set_options() with nothing, or reset the vector env (.env) yourself.")
        obs, self.last_info = self.env.reset(seed=self._seeds[0])
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait: no actions. Fix: call step_async(actions) first, or step(actions).")
        obs, reward, terminated, truncated, self.last_info = self.env.step(self._actions)
        self._actions = None
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():  # every instance at once (a shared horizon): SB3 resets in the same step
            for i in np.flatnonzero(dones):
                infos[i] = {"terminal_observation": obs[i], "TimeLimit.truncated": bool(truncated[i])
                            and not bool(terminated[i])}
            obs, _ = self.env.reset()
        return obs, reward.astype(np.float32), dones, infos

    def close(self) -> None:
        self.env.close()

    def _all(self, indices: VecEnvIndices, what: str) -> list[int]:
        idx = list(self._get_indices(indices))
        if sorted(idx) != list(range(self.num_envs)):
            raise ValueError(f"indices: {what} acts on the one batched simulator, i.e. on every instance. "
                             "Fix: pass indices=None.")
        return idx

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self.env, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._all(indices, "set_attr")
        setattr(self.env, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        idx = self._all(indices, "env_method")
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """Never: the batched simulator carries no Gymnasium wrappers."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Iterable[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


def make(scenario: str | Path | NetworkSpec = "paper_tandem", num_envs: int = 256, seed: int | None = None,
         **options: Any) -> SB3VecEnv:
    """``num_envs`` instances of a scenario as an SB3 VecEnv; ``options`` as ``envs.make_vector``'s
    (horizon, lam, d_ub, eps, include_in_service, ...)."""
    from envs import make_vector

    venv = SB3VecEnv(make_vector(scenario, num_envs, seed=seed, **options))
    if seed is not None:
        venv.seed(seed)
    return venv
