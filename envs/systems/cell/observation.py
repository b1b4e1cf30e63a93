"""What a controller of a cell sees: UEs per type, PRBs in use, the arriving UE's type
(one-hot, with several types), its PRB demand, the phase of the period (with a profile) and,
when the cell block lists ``cqi_bands``, UEs per (type, CQI band).

``CellEncoding`` is the cell's ``ObservationEncoding`` (saved with a policy like any other);
``CellLayout`` is the one place rules, metrics and the exact chain learn its column numbers from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from envs.observation import ObservationEncoding
from envs.systems.cell.spec import NEVER

if TYPE_CHECKING:
    from envs.engine import Engine
    from envs.spec import NetworkSpec


@dataclass(frozen=True)
class CellLayout:
    """Columns of a cell's observation (``CellEncoding.cell_layout``) and readers of the
    quantities rules use, each (B,) from an observation batch (B, width)."""

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
class CellEncoding(ObservationEncoding):
    """A cell's observation (the module's text); ``cell_bands``: CQI bands observed per type
    (0: none)."""

    cell_bands: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rate:
            raise ValueError("rate: a cell's controller sees its daily profile's phase, not an arrival-rate "
                             "estimate. Fix: leave rate_estimate off on a cell.")
        if self.cell_bands < 0:
            raise ValueError(f"cell_bands: CQI bands observed per type, 0 or more, got {self.cell_bands}. Fix: 0 "
                             "observes no bands.")

    @classmethod
    def reads(cls, d: dict[str, Any]) -> bool:
        return int(d.get("cell_bands", -1)) >= 0  # what every saved cell policy holds

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CellEncoding:
        period = d.get("period")
        return cls(int(d["num_stations"]), False, int(d.get("num_classes", 1)),
                   None if period is None else float(period), cell_bands=int(d["cell_bands"]))

    @property
    def width(self) -> int:
        K = self.num_classes
        return K * (1 + self.cell_bands) + 2 + (K if K > 1 else 0) + (2 if self.period else 0)

    def phase_column(self) -> int:
        """The first phase column: after the arriving UE's demand, before the CQI bands (without
        the two, the observation of the same cell at a fixed load)."""
        if not self.period:
            return super().phase_column()  # which says there is none
        return self.cell_layout().phase.start

    def encode(self, eng: Engine) -> np.ndarray:
        ues, used, demand, *bands = eng.kinds[0].features(eng, self.cell_bands > 0)
        parts = [ues, used]
        if self.num_classes > 1:
            parts.append(np.eye(self.num_classes)[eng.arriving])
        parts.append(demand)
        if self.period:
            parts.append(self._phase(eng))
        return np.concatenate(parts + bands, 1).astype(np.float32)

    def cell_layout(self) -> CellLayout:
        """Where the features lie in the observation (see the module text)."""
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

    def _parts(self, ues: np.ndarray, prbs: float, demand: float, phase: float) -> list:
        """The features' per-column values in their order, from one value per kind of feature."""
        K = self.num_classes
        parts = [ues, [prbs]] + ([np.ones(K)] if K > 1 else []) + [[demand]]
        parts += [np.full(2, phase)] if self.period else []
        return parts + ([np.repeat(ues, self.cell_bands)] if self.cell_bands else [])

    def scale(self, spec: NetworkSpec) -> np.ndarray:
        """The most UEs of a type the cell can hold for UE counts, its PRBs for PRBs and the
        demand, 1 else."""
        C = spec.block.prbs
        most = (C // spec.block.demand_table().min(1)).astype(np.float32)
        return np.concatenate([np.asarray(p, np.float32) for p in self._parts(most, C, C, 1.0)])

    def high(self, spec: NetworkSpec, max_jobs: int) -> np.ndarray:
        """A UE holds at least its type's least demand; the arriving UE's demand is at most the
        table's largest at a CQI in its range."""
        cell = spec.block
        table = cell.demand_table()
        ues = (cell.prbs // table.min(1)).astype(np.float64)
        parts = self._parts(ues, cell.prbs, float(table[table < NEVER].max()), 2.0)
        return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)
