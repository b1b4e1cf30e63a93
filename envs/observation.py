"""What a controller sees at an arrival, resolved in one place.

The encoding is part of a trained policy (it is saved with it), so evaluation, the
Gymnasium adapter and users' scripts all observe exactly what the policy was trained on.
Features, in order: jobs waiting per station (the paper's state); with
``include_in_service`` the busy servers per station; with several job classes the
arriving job's class, one-hot; with a periodic arrival profile the phase of the period
(1 + sin, 1 + cos: shifted so that every feature is >= 0, which the Q-network's log1p
input transform needs), so a controller can anticipate the busy hours. Two pools
(docs/systems/pools.md): jobs waiting per pool, busy servers per pool, then the arriving job's type
information one-hot (``info_width`` = types + 1: the type or signal, last = nothing known).

A cell (``spec.block``, its ``CellSpec``) is observed as: UEs per type, PRBs in use, the arriving UE's type
(one-hot, with several types), its PRB demand, the phase of the period (with a profile)
and, when the cell block lists ``cqi_bands``, UEs per (type, CQI band).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from envs.engine import Engine
    from envs.spec import NetworkSpec


@dataclass(frozen=True)
class CellLayout:
    """Columns of a cell's observation (``ObservationEncoding.cell_layout``) and readers of
    the quantities rules use, each (B,) from an observation batch (B, width)."""

    types: int
    ues: slice  # UEs per type
    used: int  # PRBs in use
    onehot: slice | None  # the arriving UE's type, one-hot (several types only)
    demand: int  # the arriving UE's PRB demand
    phase: slice | None  # 1 + sin, 1 + cos of the phase (with a profile)
    period: float | None
    bands: slice | None  # UEs per (type, CQI band)

    def prbs_in_use(self, obs: np.ndarray) -> np.ndarray:
        return obs[:, self.used]

    def ue_type(self, obs: np.ndarray) -> np.ndarray:
        """Type of the arriving UE (0 with one type)."""
        if self.onehot is None:
            return np.zeros(obs.shape[0], np.int64)
        return obs[:, self.onehot].argmax(1)

    def ue_demand(self, obs: np.ndarray) -> np.ndarray:
        return obs[:, self.demand]

    def time_of_day(self, obs: np.ndarray) -> np.ndarray:
        """The arrival time modulo the period, recovered from (1 + sin, 1 + cos)."""
        if self.phase is None:
            raise ValueError("time_of_day: the observation has no phase (no periodic arrival profile)")
        s, c = obs[:, self.phase.start] - 1.0, obs[:, self.phase.start + 1] - 1.0
        return (np.arctan2(s, c) % (2 * np.pi)) / (2 * np.pi) * self.period

    def phase_bin(self, obs: np.ndarray, bins: int) -> np.ndarray:
        """Which of ``bins`` equal bins of the period the arrival falls in (from float32
        features: an arrival within ~1e-4 of the period's length of a bin edge may land in the
        neighbouring bin)."""
        t = self.time_of_day(obs) / self.period
        return np.minimum((t * bins).astype(np.int64), bins - 1)


@dataclass(frozen=True)
class ObservationEncoding:
    num_stations: int
    include_in_service: bool = False
    num_classes: int = 1
    period: float | None = None
    pool: bool = False  # identical servers (redundancy): jobs per server sorted, then the total
    info_width: int = 0  # two pools: one-hot of the arriving job's type information (types + 1)
    cell_bands: int = -1  # a cell: CQI bands observed per type (0: none); -1: not a cell
    candidates: int = 0  # redundancy: jobs at the arriving job's first servers in its random order (max d)

    def __post_init__(self):
        if self.candidates and not self.pool:
            raise ValueError("candidates: the jobs at a job's own servers are counted over a pool of identical "
                             "servers. Fix: set pool=True, or candidates=0.")

    @classmethod
    def for_spec(cls, spec: NetworkSpec, include_in_service: bool = False) -> ObservationEncoding:
        """The encoding ``spec``'s system chooses (``System.encoding``; redundancy, pools and a
        cell decide ``include_in_service`` themselves)."""
        return spec.system.encoding(include_in_service)

    @property
    def width(self) -> int:
        if self.cell_bands >= 0:  # UEs per type, PRBs in use, demand (+ per band)
            n = self.num_classes * (1 + self.cell_bands) + 2
        else:
            n = self.num_stations + 1 if self.pool else self.num_stations * (2 if self.include_in_service else 1)
        return (n + (self.num_classes if self.num_classes > 1 else 0) + (2 if self.period else 0)
                + self.info_width + self.candidates)

    def encode(self, eng: Engine) -> np.ndarray:
        """(B, width) float32 features of the current arrival in every instance."""
        if self.cell_bands >= 0:
            return self._encode_cell(eng)
        if self.pool:  # the servers are exchangeable: their order carries no information
            present = eng.waiting() + eng.busy()
            parts = [-np.sort(-present, axis=1), eng.jobs_in_system()[:, None]]
        else:
            parts = [eng.waiting()]
        if self.include_in_service:
            parts.append(eng.busy())
        if self.num_classes > 1:
            parts.append(np.eye(self.num_classes)[eng.arriving])
        if self.period:
            parts.append(self._phase(eng))
        if self.info_width:
            parts.append(np.eye(self.info_width)[eng.jobs.info[eng.every, eng.slot]])
        if self.candidates:  # the servers its d copies would join, first to last: d is a prefix of them
            order = eng.jobs.order[eng.every, eng.slot][:, : self.candidates]
            parts.append(np.take_along_axis(present, order, 1))
        return parts[0].astype(np.float32) if len(parts) == 1 else np.concatenate(parts, 1).astype(np.float32)

    def _phase(self, eng: Engine) -> np.ndarray:
        """(B, 2) 1 + (sin, cos) of the phase of the period: shifted so features stay >= 0."""
        angle = 2 * np.pi * (eng.now % self.period) / self.period
        return 1.0 + np.stack([np.sin(angle), np.cos(angle)], 1)

    def _encode_cell(self, eng: Engine) -> np.ndarray:
        ues, used, demand, *bands = eng.kinds[0].features(eng, self.cell_bands > 0)
        parts = [ues, used]
        if self.num_classes > 1:
            parts.append(np.eye(self.num_classes)[eng.arriving])
        parts.append(demand)
        if self.period:
            parts.append(self._phase(eng))
        return np.concatenate(parts + bands, 1).astype(np.float32)

    def cell_layout(self) -> CellLayout:
        """Where a cell's features lie in the observation (see the module text): the one
        place rules and metrics learn the column numbers from."""
        if self.cell_bands < 0:
            raise ValueError("cell_layout: this encoding does not observe a cell. Fix: use a spec with a 'cell:' block.")
        K = self.num_classes
        at = K + 1  # after UEs per type and PRBs in use
        onehot = None
        if K > 1:
            onehot, at = slice(at, at + K), at + K
        demand, at = at, at + 1
        phase = None
        if self.period:
            phase, at = slice(at, at + 2), at + 2
        bands = slice(at, at + K * self.cell_bands) if self.cell_bands else None
        return CellLayout(K, slice(0, K), K, onehot, demand, phase, self.period, bands)

    def scale(self, spec: NetworkSpec) -> np.ndarray:
        """Per-feature normaliser for the Q-network: a station's servers for its counts, 1 else
        (a cell: the most UEs of a type it can hold for UE counts, its PRBs for PRBs)."""
        if self.cell_bands >= 0:
            C = spec.block.prbs
            most = (C // spec.block.demand_table().min(1)).astype(np.float32)
            parts = [most, np.array([C], np.float32)]
            if self.num_classes > 1:
                parts.append(np.ones(self.num_classes, np.float32))
            parts.append(np.array([C], np.float32))
            if self.period:
                parts.append(np.ones(2, np.float32))
            if self.cell_bands:
                parts.append(np.repeat(most, self.cell_bands))
            return np.concatenate(parts)
        servers = spec.servers.astype(np.float32)
        if self.pool:
            parts = [servers, np.array([servers.sum()], np.float32)]
        else:
            parts = [servers] + ([servers] if self.include_in_service else [])
        if self.num_classes > 1:
            parts.append(np.ones(self.num_classes, np.float32))
        if self.period:
            parts.append(np.ones(2, np.float32))
        if self.info_width:
            parts.append(np.ones(self.info_width, np.float32))
        if self.candidates:
            parts.append(servers[: self.candidates])
        return np.concatenate(parts)

    def check(self, spec: NetworkSpec) -> None:
        """Refuse a network this encoding does not fit (another number of stations or classes)."""
        mine = ObservationEncoding.for_spec(spec, self.include_in_service)
        if self.candidates == 0:  # saved before redundancy observed its job's servers: it reads the rest
            mine = replace(mine, candidates=0)
        if mine != self:
            theirs, ours = self.to_dict(), mine.to_dict()
            differ = ", ".join(f"{k} {theirs[k]} (here {ours[k]})" for k in theirs if theirs[k] != ours[k])
            raise ValueError(f"observation: the policy reads {self.num_stations} stations and {self.num_classes} "
                             f"classes but {spec.name} has {spec.num_stations} and {spec.num_classes}; it differs "
                             f"in {differ}. Fix: use the network the policy was trained on.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ObservationEncoding:
        period = d.get("period")
        return cls(int(d["num_stations"]), bool(d.get("include_in_service", False)), int(d.get("num_classes", 1)),
                   None if period is None else float(period), bool(d.get("pool", False)), int(d.get("info_width", 0)),
                   int(d.get("cell_bands", -1)), int(d.get("candidates", 0)))
