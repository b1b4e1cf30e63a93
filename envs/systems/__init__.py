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
testing which block a spec has. ``SYSTEMS`` maps names to plugin classes, ``BLOCKS`` YAML
keys to them; a new system is a folder with a ``System`` subclass, made known by ``register``
(docs/architecture.md).
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

SYSTEMS: dict[str, type[System]] = {}
BLOCKS: dict[str, type[System]] = {}  # a system's YAML key -> its plugin class


def register(cls: type[System]) -> type[System]:
    """Make a system known by its ``name`` and, unless it is described by the top-level keys,
    by its YAML ``block`` key (a file with that key is that system). A new system's folder
    calls it once, e.g. as a class decorator of its plugin; returns ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, System) and cls.name and cls.kinds):
        raise TypeError(f"register: {cls!r} is not a System subclass with a name and kinds")
    taken = SYSTEMS.get(cls.name) or (BLOCKS.get(cls.block) if cls.block else None)
    if taken is not None and taken is not cls:
        raise ValueError(f"register: {cls.__name__}'s name {cls.name!r} or block {cls.block!r} is {taken.__name__}'s. "
                         "Fix: give the new system its own name and block key")
    SYSTEMS[cls.name] = cls
    if cls.block is not None:
        BLOCKS[cls.block] = cls
    return cls


for _packaged in (NetworkSystem, CellSystem, RedundancySystem, PoolsSystem):
    register(_packaged)


def system_class(cfg: Mapping[str, Any]) -> type[System]:
    """The system a YAML mapping describes: the one whose block it has (a network without)."""
    found = [cls for block, cls in BLOCKS.items() if block in cfg]
    if len(found) > 1:
        raise SpecError(found[1].block, f"cannot be given with '{found[0].block}'", "describe one system per file")
    return found[0] if found else NetworkSystem


def system_of(spec: NetworkSpec) -> System:
    """The plugin of ``spec``'s system, bound to it (what ``spec.system`` returns)."""
    if spec.system_block is None:
        return NetworkSystem(spec)
    if spec.system_block not in BLOCKS:
        raise SpecError(spec.system_block, "no system has this block", f"use one of {', '.join(BLOCKS)}, or "
                        "register the system first (envs.systems.register)")
    return BLOCKS[spec.system_block](spec)


__all__ = ["BLOCKS", "KINDS", "SYSTEMS", "CellSystem", "Headline", "NetworkSystem", "PoolsSystem", "RedundancySystem",
           "System", "register", "system_class", "system_of"]
