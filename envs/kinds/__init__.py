"""Station kinds: how a station places an arriving job and what its events do.

A kind is chosen per station by ``kind:`` in the YAML. Every kind implements the small
protocol of ``envs.kinds.base.StationKind``; the engine's event loop never looks inside.
The generic kinds are here; a system with a kind of its own (a cell) provides it
(``System.station_class``).
"""

from envs.kinds.base import StationKind
from envs.kinds.fcfs import FcfsKind
from envs.kinds.ps import PsKind

KINDS: dict[str, type[StationKind]] = {"fcfs": FcfsKind, "ps": PsKind}

__all__ = ["KINDS", "FcfsKind", "PsKind", "StationKind"]
