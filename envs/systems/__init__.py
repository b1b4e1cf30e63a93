"""The systems the engine simulates, one plugin each (``envs.systems.base.System``):

* ``network`` (no block: the top-level keys): kind ``admission`` (maximise ``acceptance``
  s.t. ``violation`` <= eps) or ``control`` (objective response_time: minimise
  ``mean_delay``; deadline: maximise ``throughput``);
* ``cell`` (block ``cell``): kind ``loss``, minimise ``blocking`` s.t. ``dropping`` <= eps;
* ``redundancy`` (block ``redundancy``) and ``pools`` (block ``pools``): kind ``control``,
  minimise ``mean_delay`` (deadline: maximise ``throughput``).

The measures are keys of ``drl_ac.evaluation.metrics`` (``Headline``). ``spec.system``
(``system_of(spec)``) is the plugin bound to a spec; code outside this package asks it
(``spec.system.name``, ``.kind``, ``.headline``, ``.stability_problem()``, ...) instead of
testing which block a spec has. ``SYSTEMS`` maps names to plugin classes; a new system is a
module here with a ``System`` subclass added to it (its block key also goes in
``envs.spec.TOP_KEYS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envs.errors import SpecError
from envs.systems.base import KINDS, Headline, System
from envs.systems.cell.system import CellSystem
from envs.systems.network.system import NetworkSystem
from envs.systems.pools.system import PoolsSystem
from envs.systems.redundancy.system import RedundancySystem

if TYPE_CHECKING:
    from envs.spec import NetworkSpec

SYSTEMS: dict[str, type[System]] = {cls.name: cls for cls in (NetworkSystem, CellSystem, RedundancySystem,
                                                              PoolsSystem)}
BLOCKS: dict[str, type[System]] = {cls.block: cls for cls in SYSTEMS.values() if cls.block is not None}


def system_class(cfg: Mapping[str, Any]) -> type[System]:
    """The system a YAML mapping describes: the one whose block it has (a network without)."""
    found = [cls for block, cls in BLOCKS.items() if block in cfg]
    if len(found) > 1:
        raise SpecError(found[1].block, f"cannot be given with '{found[0].block}'", "describe one system per file")
    return found[0] if found else NetworkSystem


def system_of(spec: NetworkSpec) -> System:
    """The plugin of ``spec``'s system, bound to it (what ``spec.system`` returns)."""
    found = [cls for block, cls in BLOCKS.items() if getattr(spec, block) is not None]
    if len(found) > 1:
        raise SpecError(found[1].block, f"cannot be given with '{found[0].block}'", "describe one system per spec")
    return (found[0] if found else NetworkSystem)(spec)


__all__ = ["BLOCKS", "KINDS", "SYSTEMS", "CellSystem", "Headline", "NetworkSystem", "PoolsSystem", "RedundancySystem",
           "System", "system_class", "system_of"]
