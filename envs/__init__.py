"""Simulation side of drl_ac: system specs, the batched engine of station kinds, and the
interfaces that step it (the driver, Gymnasium adapters)."""

from __future__ import annotations

import importlib
from typing import Any

from envs.distributions import Distribution, make_distribution
from envs.driver import Driver
from envs.engine import CapacityError, Engine
from envs.errors import SpecError
from envs.observation import ObservationEncoding
from envs.outcomes import Outcomes
from envs.registration import ENV_OPTIONS, env_id, make_vector, register_envs
from envs.reward import REWARD_RULES, met_deadline, reward
from envs.spec import NetworkSpec, StationSpec, available_scenarios, load_spec
from envs.vector_env import AdmissionVectorEnv

# Gymnasium ids, one per packaged scenario (envs/registration.py names them). They exist once
# this package is imported: Gymnasium 1.x has no plugin entry points (the "gymnasium.envs"
# entry-point group that 0.2x scanned at import was removed in 1.0; gymnasium/envs/registration.py
# has no plugin loader), so a pyproject entry point cannot register them. Without importing
# envs first, name the module in the id, which gymnasium.make imports itself:
#     gymnasium.make("envs:drl_ac/PaperTandem-v0")
# or import it:  import envs; gymnasium.make("drl_ac/PaperTandem-v0")
# (plain gymnasium.make("drl_ac/PaperTandem-v0") without the import fails with
# "Namespace drl_ac not found").
GYM_IDS = register_envs()


def __getattr__(name: str) -> Any:
    """``envs.sb3`` is imported on first use: it needs Stable-Baselines3, an optional extra."""
    if name == "sb3":
        return importlib.import_module("envs.sb3")
    raise AttributeError(f"module 'envs' has no attribute {name!r}")


__all__ = ["ENV_OPTIONS", "GYM_IDS", "REWARD_RULES", "AdmissionVectorEnv", "CapacityError", "Distribution", "Driver", "Engine",
           "NetworkSpec", "ObservationEncoding", "Outcomes", "SpecError", "StationSpec",
           "available_scenarios", "env_id", "load_spec", "make_distribution", "make_vector", "met_deadline", "reward"]
