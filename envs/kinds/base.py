"""The protocol every station kind implements, and the mutable state it lives in.

Pending events of an instance are one fixed-width array ``next_event`` (R, E): each kind
owns a contiguous block of E's columns (its *slots*: one per FCFS server, one per PS
station, one per cell session or timer...). The loop takes the earliest slot of every
row at once and hands each row to the kind owning that slot; the kind updates its own
arrays and reports which jobs finished at which station. Where a job goes next is the
dispatch rule's business (``System.routing``), not the kind's.

Kinds tell the state's ``observer`` when a job begins service (``started``): the real
network records waits there, a probe (``envs.probe``) follows its job there. That is how
the loop stays free of "is this the real run or a counterfactual" checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from envs.engine import Engine


class Observer(Protocol):
    def started(self, st: State, rows: np.ndarray, jid: np.ndarray, at: np.ndarray, when: np.ndarray,
                wait: np.ndarray, service: np.ndarray, end: np.ndarray | None) -> None:
        """Jobs ``jid`` of rows ``rows`` begin service at ``when`` after waiting ``wait``;
        ``at`` is the flat index of (instance, job slot, station) in the job table's
        per-station columns, ``service`` their work there, ``end`` their completion time
        when it is already fixed (FCFS), else None (processor sharing)."""


class State:
    """Mutable dynamics of some instances: the event array, per-job clocks, kinds' arrays.

    A probe works on ``take(rows)``: a copy of those rows only. Job-indexed arrays (second
    axis = job slot) are listed in the engine's ``job_arrays`` so it can regrow them with the
    job table.
    """

    def __init__(self, arrays: dict[str, np.ndarray], observer: Observer):
        self.names = tuple(arrays)
        self.observer = observer
        for k, v in arrays.items():
            setattr(self, k, v)

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in self.names}

    def take(self, rows: np.ndarray, observer: Observer, blank: tuple[str, ...] = ()) -> State:
        """A copy of ``rows``; the arrays named in ``blank`` start at zero instead (a probe's
        per-job clocks: it reads only those of the job it follows, which it sets itself)."""
        def part(k: str) -> np.ndarray:
            a = getattr(self, k)
            return np.zeros((rows.size,) + a.shape[1:], a.dtype) if k in blank else a[rows]
        return State({k: part(k) for k in self.names}, observer)


class StationGroup:
    """What every kind keeps of the stations it serves: their global indices, the map from
    a global station index to its position among them (``local``), their servers, and the
    first event column it owns."""

    def __init__(self, stations, servers, offset: int, num_stations: int):
        self.stations = np.asarray(stations, np.int64)
        self.local = np.full(num_stations, -1, np.int64)
        self.local[self.stations] = np.arange(self.stations.size)
        self.servers = np.asarray(servers, np.int64)
        self.offset = int(offset)

    # Optional parts of the protocol, with the defaults of a plain station kind:
    job_arrays: tuple[str, ...] = ()  # per-job arrays of the state (engine-grown with the job table)
    exogenous = np.empty(0, np.int64)  # event columns of arrivals made inside the kind (off in probes)

    @classmethod
    def build(cls, spec, stations, servers, offset: int, num_stations: int):
        """The kind's object for ``spec``'s stations of this kind (a kind that needs more of
        the spec than its servers, like the cell, reads it here)."""
        return cls(stations, servers, offset, num_stations)

    def start(self, eng, st: State, rows: np.ndarray) -> None:
        """Schedule the kind's own first events in (re)started instances ``rows``."""


class StationKind(Protocol):
    """One object per kind in a network, serving all stations of that kind (vectorised
    over the station index ``n``, global numbering)."""

    name: str
    offset: int  # first column of next_event owned by this kind
    slots: int  # number of columns it owns

    def init_state(self, rows: int) -> dict[str, np.ndarray]:
        """The kind's arrays for ``rows`` empty instances (names prefixed by the kind)."""

    def arrive(self, eng: Engine, st: State, inst: np.ndarray, rows: np.ndarray, jid: np.ndarray,
               n: np.ndarray, when: np.ndarray) -> None:
        """Place jobs arriving at stations ``n`` (serve at once, or queue)."""

    def handle(self, eng: Engine, st: State, inst: np.ndarray, rows: np.ndarray, slot: np.ndarray,
               when: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """Process the event of each row at ``slot`` (time ``when``). Returns the jobs that
        finished at their station: (indices into rows or None for all, job ids, stations).
        A kind may take further events of a row at once, in time order and never past the
        state's ``horizon`` (per row); it then appends the finishing times as a fourth array."""

    def waiting(self, st: State) -> np.ndarray:
        """(R, stations of this kind) jobs present but not in service."""

    def busy(self, st: State) -> np.ndarray:
        """(R, stations of this kind) servers' worth of capacity in use."""

    def clear(self, st: State, rows: np.ndarray) -> None:
        """Empty the stations of ``rows`` (reset of some instances)."""

    def cancel(self, eng: Engine, st: State, inst: np.ndarray, rows: np.ndarray, jid: np.ndarray, n: np.ndarray,
               when: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Remove the copy of job ``jid`` at station ``n`` (redundancy). Returns the work it
        received and whether it had begun service."""
