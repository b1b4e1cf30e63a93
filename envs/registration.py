"""Gymnasium ids for every packaged scenario, and the options ``gymnasium.make`` may pass.

Ids follow one rule, so a new YAML file in ``envs/scenarios`` gets its id without an
edit here: ``drl_ac/`` + the scenario's name with every ``_``-separated part's first
letter upper-cased + ``-v0`` (``paper_tandem`` -> ``drl_ac/PaperTandem-v0``, ``cell_5g`` ->
``drl_ac/Cell5G-v0``, ``mmc_c5_overload`` -> ``drl_ac/MmcC5Overload-v0``). Each id has the
single env (``envs.single_env:AdmissionEnv``) as entry point and the batched simulator
(``envs.vector_env.AdmissionVectorEnv``) as vector entry point, so
``gymnasium.make_vec(id, 4096, vectorization_mode="vector_entry_point")`` steps 4096
instances in one NumPy call instead of 4096 Python envs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from envs.errors import SpecError, as_horizon, did_you_mean
from envs.spec import NetworkSpec, available_scenarios, load_spec
from envs.vector_env import AdmissionVectorEnv

NAMESPACE = "drl_ac"
VERSION = 0

# Options of the environment itself (AdmissionVectorEnv / the engine), and the spec fields
# ``NetworkSpec.with_overrides`` replaces (tests/envs/test_registration.py checks they agree).
ENV_OPTIONS = ("horizon", "include_in_service", "capacity", "max_jobs", "max_bytes", "exact_counterfactual")
SPEC_FIELDS = ("d_ub", "delay", "eps", "lam", "name")


def env_id(scenario: str) -> str:
    """The Gymnasium id of a packaged scenario (``paper_tandem`` -> ``drl_ac/PaperTandem-v0``)."""
    parts = []
    for part in scenario.split("_"):
        first = next((i for i, ch in enumerate(part) if ch.isalpha()), None)
        parts.append(part if first is None else part[:first] + part[first].upper() + part[first + 1:])
    return f"{NAMESPACE}/{''.join(parts)}-v{VERSION}"


def scenario_ids() -> dict[str, str]:
    """``{id: scenario}`` for every packaged scenario; refuses two scenarios sharing an id."""
    ids: dict[str, str] = {}
    for scenario in available_scenarios():
        key = env_id(scenario)
        if key in ids:
            raise SpecError("scenario", f"{ids[key]!r} and {scenario!r} both map to the id {key!r}",
                            "rename one of the YAML files in envs/scenarios")
        ids[key] = scenario
    return ids


def register_envs() -> list[str]:
    """Register every packaged scenario with Gymnasium (idempotent); returns the ids."""
    ids = scenario_ids()
    for key, scenario in ids.items():
        if key not in gym.registry:
            gym.register(key, entry_point="envs.single_env:AdmissionEnv",
                         vector_entry_point="envs.registration:make_vector_env",
                         kwargs={"scenario": scenario})
    return list(ids)


def check_render_mode(render_mode: Any) -> None:
    """Refuse any render mode but None. A TypeError, as an env without a ``render_mode``
    argument would raise: Stable-Baselines3's ``make_vec_env`` passes ``render_mode="rgb_array"``
    and retries without it on TypeError only."""
    if render_mode is not None:
        raise TypeError(f"render_mode: {render_mode!r} is not supported (drl_ac environments draw "
                        "nothing). Fix: pass render_mode=None or leave it out.")


def split_options(options: Mapping[str, Any], where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split keyword options into the environment's (``ENV_OPTIONS``) and spec overrides
    (``SPEC_FIELDS``); any other name is refused, naming it and the accepted ones. A spec
    field given as None is left out: the scenario's value stands (``with_overrides`` would
    read ``lam=None`` as "clear the multiplier")."""
    env_kwargs, overrides = {}, {}
    for key, value in options.items():
        if key in ENV_OPTIONS:
            env_kwargs[key] = value
        elif key in SPEC_FIELDS:
            if value is not None:
                overrides[key] = value
        else:
            guess = did_you_mean(key, ENV_OPTIONS + SPEC_FIELDS)
            hint = f"did you mean '{guess}'? " if guess else ""
            raise SpecError(str(key), f"not an option of {where}: it is no environment option and cannot be "
                            "overridden in the spec",
                            f"{hint}pass environment options ({', '.join(ENV_OPTIONS)}) or spec fields "
                            f"({', '.join(SPEC_FIELDS)}); for episodes use horizon=N (or Gymnasium's "
                            "max_episode_steps=N of gymnasium.make)")
    return env_kwargs, overrides


def make_vector(scenario: str | Path | NetworkSpec, num_envs: int, seed: int | None = None,
                **overrides: Any) -> AdmissionVectorEnv:
    """A vector environment of ``num_envs`` instances of a registered scenario or YAML file.

    ``overrides`` may replace spec fields (d_ub, delay, eps, lam, name) and set environment
    options (horizon, include_in_service, capacity, max_jobs, max_bytes, exact_counterfactual);
    other names are refused. ``lam`` is fixed (``envs.vector_env.fixed_multiplier``).
    """
    env_kwargs, spec_overrides = split_options(overrides, "make_vector")
    spec = load_spec(scenario, **spec_overrides)
    env = AdmissionVectorEnv(spec, num_envs, seed=seed, lam=spec_overrides.get("lam"), **env_kwargs)
    env.reset(seed=seed)
    return env


def make_vector_env(num_envs: int = 1, scenario: str | Path | NetworkSpec = "paper_tandem",
                    render_mode: str | None = None, max_episode_steps: int | None = None,
                    seed: int | None = None, **options: Any):
    """The vector entry point of every id: ``num_envs`` instances in one
    ``envs.AdmissionVectorEnv``. ``max_episode_steps`` (which ``gymnasium.make_vec`` forwards)
    is the env's ``horizon``: every instance is truncated after that many steps."""
    check_render_mode(render_mode)
    max_episode_steps = as_horizon(max_episode_steps, "max_episode_steps")
    if max_episode_steps is not None:
        if options.get("horizon") not in (None, max_episode_steps):
            raise SpecError("max_episode_steps", f"{max_episode_steps} disagrees with horizon={options['horizon']}",
                            "give only one of them")
        options["horizon"] = max_episode_steps
    split_options(options, "the vector environment")
    return make_vector(scenario, num_envs, seed=seed, **options)
