"""Station kinds: how a station places an arriving job and what its events do.

A kind is chosen per station by ``kind:`` in the YAML. Every kind implements the small
protocol of ``envs.kinds.base.StationKind``; the engine's event loop never looks inside.
"""

from envs.kinds.base import StationKind
from envs.kinds.cell import CellKind
from envs.kinds.fcfs import FcfsKind
from envs.kinds.ps import PsKind

KINDS: dict[str, type[StationKind]] = {"fcfs": FcfsKind, "ps": PsKind, "cell": CellKind}

__all__ = ["KINDS", "CellKind", "FcfsKind", "PsKind", "StationKind"]
