"""The rules a careful engineer would tune. Each system's folder has a ``rules`` module
(``envs/systems/<name>/rules.py``) with a public tuner ``tuned_rules(spec, seed, progress,
**options)`` returning ``{name: TuningResult}``: every constant action of the scenario where
it makes sense, and today's rule families (networks: queue thresholds; cells: PRB, per-type,
guard and fractional guard thresholds, per phase; redundancy: d by a load threshold; pools:
the signalled pool with reroute or replicate after tau). ``tune`` runs the one of a spec's
system; the best feasible rule of the result is the comparator of a learned controller
(``drl_ac.study``). ``tuning`` holds what every tuner shares."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from drl_ac.rules.tuning import ControlTuner, Tuner, TuningResult
from envs import NetworkSpec


def rules_of(spec: NetworkSpec) -> ModuleType:
    """The ``rules`` module of ``spec``'s system."""
    return spec.system.part("rules")


def tune(spec: NetworkSpec, seed: int = 777, progress: Callable[[str], None] | None = None,
         **options: Any) -> dict[str, TuningResult]:
    """Every rule of ``spec``'s system tuned on ``seed`` (the tuning seed); ``options`` go to
    that system's tuner (e.g. ``arrivals`` for a network or a cell, ``num_envs`` and
    ``max_steps`` for a control system)."""
    return rules_of(spec).tuned_rules(spec, seed=seed, progress=progress, **options)


def chains(spec: NetworkSpec) -> int:
    """How many processes can tune ``spec``'s rules at once: a system whose tuner splits its
    families into independent chains (its ``chain`` option) says how many in its rules
    module's ``CHAINS``; ``tune(spec, chain=i)`` for each i gives, merged in order, what
    ``tune(spec)`` gives. Else 1."""
    return getattr(rules_of(spec), "CHAINS", 1)


__all__ = ["ControlTuner", "Tuner", "TuningResult", "chains", "rules_of", "tune"]
