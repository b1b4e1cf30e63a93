"""Simulation side of drl_ac: system specs, the batched engine of station kinds, and the
interfaces that step it (the driver, Gymnasium adapters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym

from envs.distributions import Distribution, make_distribution
from envs.driver import Driver
from envs.engine import CapacityError, Engine, QueueNetworkSim
from envs.errors import SpecError
from envs.observation import ObservationEncoding
from envs.outcomes import Outcomes
from envs.reward import REWARD_RULES, met_deadline, reward
from envs.spec import NetworkSpec, StationSpec, available_scenarios, load_spec
from envs.vector_env import AdmissionVectorEnv

ENV_OPTIONS = ("horizon", "include_in_service", "capacity", "max_jobs", "max_bytes", "exact_counterfactual")


def make_vector(scenario: str | Path | NetworkSpec, num_envs: int, seed: int | None = None,
                **overrides: Any) -> AdmissionVectorEnv:
    """A vector environment of ``num_envs`` instances of a registered scenario or YAML file.

    ``overrides`` may replace spec fields (d_ub, eps, lam, delay) and set environment
    options (horizon, include_in_service, capacity, max_jobs, max_bytes, exact_counterfactual).
    """
    env_kwargs = {k: overrides.pop(k) for k in list(overrides) if k in ENV_OPTIONS}
    lam = overrides.get("lam")
    spec = load_spec(scenario, **overrides)
    env = AdmissionVectorEnv(spec, num_envs, seed=seed, lam=None if lam == "auto" else lam, **env_kwargs)
    env.reset(seed=seed)
    return env


# Gymnasium ids. They exist once this package is imported: Gymnasium 1.x has no plugin entry
# points (the "gymnasium.envs" entry-point group that 0.2x scanned at import was removed in
# 1.0; gymnasium/envs/registration.py has no plugin loader), so a pyproject entry point
# cannot register them. Without importing envs first, name the module in the id, which
# gymnasium.make imports itself:
#     gymnasium.make("envs:drl_ac/PaperTandem-v0")
# or import it:  import envs; gymnasium.make("drl_ac/PaperTandem-v0")
# (plain gymnasium.make("drl_ac/PaperTandem-v0") without the import fails with
# "Namespace drl_ac not found").
_REGISTERED = {"PaperTandem": "paper_tandem", "PaperAcyclic": "paper_acyclic",
               "Tandem": "tandem", "Acyclic": "acyclic"}
for _name, _scenario in _REGISTERED.items():
    if f"drl_ac/{_name}-v0" not in gym.registry:
        gym.register(f"drl_ac/{_name}-v0", entry_point="envs.single_env:AdmissionEnv",
                     kwargs={"scenario": _scenario})

__all__ = ["REWARD_RULES", "AdmissionVectorEnv", "CapacityError", "Distribution", "Driver", "Engine",
           "NetworkSpec", "ObservationEncoding", "Outcomes", "QueueNetworkSim", "SpecError", "StationSpec",
           "available_scenarios", "load_spec", "make_distribution", "make_vector", "met_deadline", "reward"]
