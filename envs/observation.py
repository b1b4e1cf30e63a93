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
With ``rate``, last of all, the arrival-rate estimate (``envs.engine.RATE_MEMORY``): what a
controller trained over a range of loads may read the load from.

A system whose observation is not made of stations (the cell: ``envs.systems.cell.observation``)
subclasses ``ObservationEncoding`` in its folder: ``from_dict`` finds the subclass that
``reads`` a saved encoding.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numba import njit

if TYPE_CHECKING:
    from envs.engine import Engine
    from envs.spec import NetworkSpec


def observed_period(spec: NetworkSpec) -> float | None:
    """The period of ``spec``'s arrival profile where a controller sees its phase
    (``RateProfile.observed``: a daily clock), else None (no profile, or one that only spreads
    the load over a range for training)."""
    seen = [getattr(p, "profile", None) for p in spec.arrival_processes()]
    return spec.period if any(prof is not None and prof.observed for prof in seen) else None


@dataclass(frozen=True)
class ObservationEncoding:
    num_stations: int
    include_in_service: bool = False
    num_classes: int = 1
    period: float | None = None
    pool: bool = False  # identical servers (redundancy): jobs per server sorted, then the total
    info_width: int = 0  # two pools: one-hot of the arriving job's type information (types + 1)
    candidates: int = 0  # redundancy: jobs at the arriving job's first servers in its random order (max d)
    rate: bool = False  # last: the arrival-rate estimate, 1 / Engine.gap_mean (rules never read it)

    _kinds: ClassVar[list[type[ObservationEncoding]]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ObservationEncoding._kinds.append(cls)

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
        n = self.num_stations + 1 if self.pool else self.num_stations * (2 if self.include_in_service else 1)
        return (n + (self.num_classes if self.num_classes > 1 else 0) + (2 if self.period else 0)
                + self.info_width + self.candidates + int(self.rate))

    @property
    def rule_columns(self) -> int | None:
        """The leading columns a tuned rule reads (all but the rate estimate), None for all: rules
        are tuned on the system's own encoding, which has no rate column."""
        return self.width - 1 if self.rate else None

    def phase_column(self) -> int:
        """The first of the two phase columns (1 + sin, 1 + cos) of an observed profile."""
        if not self.period:
            raise ValueError("phase_column: this encoding observes no phase (no observed arrival profile). Fix: use "
                             "the encoding of a scenario whose arrival profile is observed.")
        n = self.num_stations + 1 if self.pool else self.num_stations * (2 if self.include_in_service else 1)
        return n + (self.num_classes if self.num_classes > 1 else 0)

    def encode(self, eng: Engine) -> np.ndarray:
        """(B, width) float32 features of the current arrival in every instance."""
        if self.pool:  # the servers are exchangeable: their order carries no information
            present = eng.waiting() + eng.busy()
            if not (self.include_in_service or self.num_classes > 1 or self.period or self.info_width):
                # redundancy's layout, in one pass (the hot path of its every step; the same floats)
                order = eng.jobs.order if self.candidates else np.zeros((1, 1, 1), np.int64)
                return pool_features(present, eng.jobs_in_system(), order, eng.slot, self.candidates, eng.gap_mean,
                                     self.rate)
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
        if self.rate:
            parts.append(1.0 / eng.gap_mean[:, None])
        return parts[0].astype(np.float32) if len(parts) == 1 else np.concatenate(parts, 1).astype(np.float32)

    def _phase(self, eng: Engine) -> np.ndarray:
        """(B, 2) 1 + (sin, cos) of the phase of the period: shifted so features stay >= 0."""
        angle = 2 * np.pi * (eng.now % self.period) / self.period
        return 1.0 + np.stack([np.sin(angle), np.cos(angle)], 1)

    def scale(self, spec: NetworkSpec) -> np.ndarray:
        """Per-feature normaliser for the Q-network: a station's servers for its counts, 1 else."""
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
        if self.rate:  # arrivals per unit time, in units of the rate a load is a fraction of: the load
            parts.append(np.array([spec.system.reference_rate()], np.float32))
        return np.concatenate(parts)

    def high(self, spec: NetworkSpec, max_jobs: int) -> np.ndarray:
        """(width,) finite upper bounds of the features (``envs.bounds``): jobs by ``max_jobs``,
        busy servers by the servers, one-hots by 1, the phase by 2."""
        servers = spec.servers.astype(np.float64)
        jobs = np.full(spec.num_stations, float(max_jobs))
        parts = [jobs, [max_jobs]] if self.pool else [jobs]  # per server (sorted), then the total
        if self.include_in_service:
            parts.append(servers)
        if self.num_classes > 1:
            parts.append(np.ones(self.num_classes))
        if self.period:
            parts.append(np.full(2, 2.0))
        if self.info_width:
            parts.append(np.ones(self.info_width))
        if self.candidates:
            parts.append(np.full(self.candidates, float(max_jobs)))
        if self.rate:  # an estimate from a few short gaps can be large; finite all the same
            parts.append([1e9])
        return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)

    def check(self, spec: NetworkSpec) -> None:
        """Refuse a network this encoding does not fit (another number of stations or classes)."""
        mine = ObservationEncoding.for_spec(spec, self.include_in_service)
        if self.candidates == 0:  # saved before redundancy observed its job's servers: it reads the rest
            mine = replace(mine, candidates=0)
        mine = replace(mine, rate=self.rate)  # every engine keeps the estimate
        if mine != self:
            theirs, ours = self.to_dict(), mine.to_dict()
            differ = ", ".join(f"{k} {theirs.get(k)} (here {ours.get(k)})" for k in {**theirs, **ours}
                               if theirs.get(k) != ours.get(k))
            raise ValueError(f"observation: the policy reads {self.num_stations} stations and {self.num_classes} "
                             f"classes but {spec.name} has {spec.num_stations} and {spec.num_classes}; it differs "
                             f"in {differ}. Fix: use the network the policy was trained on.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def reads(cls, d: dict[str, Any]) -> bool:
        """Whether a saved encoding ``d`` is one of this class's (a subclass says)."""
        return False

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ObservationEncoding:
        kind = next((k for k in ObservationEncoding._kinds if k.reads(d)), None)
        if kind is not None and kind is not cls:
            return kind.from_dict(d)
        period = d.get("period")
        return cls(int(d["num_stations"]), bool(d.get("include_in_service", False)), int(d.get("num_classes", 1)),
                   None if period is None else float(period), bool(d.get("pool", False)), int(d.get("info_width", 0)),
                   int(d.get("candidates", 0)), bool(d.get("rate", False)))


@njit(cache=True)
def pool_features(present, in_system, order, slot, candidates, gap_mean, rate):
    """``ObservationEncoding.encode`` of a pool with no further parts: per instance the jobs per
    server, most first, the number in system, the jobs at the arriving job's first
    ``candidates`` servers and, with ``rate``, the arrival-rate estimate."""
    B, N = present.shape
    out = np.empty((B, N + 1 + candidates + (1 if rate else 0)), np.float32)
    for b in range(B):
        for i in range(N):  # insertion sort, most first: a handful of servers, no allocation per row
            x = present[b, i]
            k = i
            while k > 0 and out[b, k - 1] < x:
                out[b, k] = out[b, k - 1]
                k -= 1
            out[b, k] = x
        out[b, N] = in_system[b]
        for c in range(candidates):
            out[b, N + 1 + c] = present[b, order[b, slot[b], c]]
        if rate:
            out[b, N + 1 + candidates] = 1.0 / gap_mean[b]
    return out
