"""The rules a careful engineer would tune, one module per system, each with a public tuner
returning ``{name: TuningResult}``: every constant action of the scenario where it makes sense,
and today's rule families (networks: queue thresholds; cells: PRB, per-type, guard and
fractional guard thresholds, per phase; redundancy: d by a load threshold; pools: the
signalled pool with reroute or replicate after tau). ``tune`` picks the family of a spec's
system; the best feasible rule of the result is the comparator of a learned controller
(``drl_ac.study``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drl_ac.rules import cell, network, pools, redundancy
from drl_ac.rules.tuning import ControlTuner, Tuner, TuningResult
from envs import NetworkSpec

TUNERS: dict[str, Callable[..., dict[str, TuningResult]]] = {
    "network": network.tuned_rules, "cell": cell.tuned_cell_rules, "redundancy": redundancy.tuned_rules,
    "pools": pools.tuned_rules}


def tune(spec: NetworkSpec, seed: int = 777, progress: Callable[[str], None] | None = None,
         **options: Any) -> dict[str, TuningResult]:
    """Every rule of ``spec``'s system tuned on ``seed`` (the tuning seed); ``options`` go to
    that system's tuner (``TUNERS``: e.g. ``arrivals`` for a network or a cell, ``num_envs``
    and ``max_steps`` for a control system)."""
    return TUNERS[spec.system.name](spec, seed=seed, progress=progress, **options)


CHAINS: dict[str, int] = {"cell": cell.CHAINS}
"""Systems whose tuner splits its families into independent chains (its ``chain`` option):
``tune(spec, chain=i)`` for each i gives, merged in order, what ``tune(spec)`` gives."""


def chains(spec: NetworkSpec) -> int:
    """How many processes can tune ``spec``'s rules at once (``CHAINS``; else 1)."""
    return CHAINS.get(spec.system.name, 1)


__all__ = ["CHAINS", "TUNERS", "ControlTuner", "Tuner", "TuningResult", "cell", "network", "pools", "redundancy",
           "chains", "tune"]
