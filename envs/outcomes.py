"""The outcome of decisions, one row per decision, as every system reports them.

``success`` is decided by the system (deadline met; later: not dropped); learners and
metrics read it and never re-derive it from a deadline. The 1-D columns are what users
see in ``info["completed"]``: ``env``, ``step``, ``accepted``, ``delay`` (contract) and
``action``, ``success`` plus the system's measures.

Two optional parts serve systems beyond networks of queues: ``measures``, further 1-D
columns a system reports (the cell: ``blocked``, ``dropped``, ``type``, ``handover``,
``session``), and ``decision``, False on rows that are not the controller's decisions
(the cell's handover sessions: uncontrolled arrivals). Whatever learns from decisions
reads ``decisions()``: the learner's store, rewards, metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np


@dataclass
class Outcomes:
    """Outcomes that became known during one step.

    ``delay`` uses the spec's delay measure; for a rejected job it is the probe's delay,
    ``inf`` when the probe stopped early because the deadline was already missed.
    ``wait``/``service`` are (M, N) per-station times (NaN: not visited, or rejected).
    """

    env: np.ndarray
    step: np.ndarray
    action: np.ndarray
    accepted: np.ndarray
    success: np.ndarray
    delay: np.ndarray
    sojourn: np.ndarray
    arrival_time: np.ndarray
    departure_time: np.ndarray
    job_class: np.ndarray
    work: np.ndarray  # server time used by the job, cancelled copies included
    copies: np.ndarray  # copies that began service (1 for a network job, 0 if rejected)
    wait: np.ndarray
    service: np.ndarray
    decision: np.ndarray | None = None  # False: not a decision (e.g. a handover session); None: all are
    measures: dict[str, np.ndarray] = field(default_factory=dict)  # the system's further 1-D columns

    def __len__(self) -> int:
        return int(self.env.size)

    def info(self) -> dict[str, np.ndarray]:
        """The 1-D columns, as given to users in ``info["completed"]``."""
        out = {f.name: getattr(self, f.name) for f in _ARRAYS if getattr(self, f.name).ndim == 1}
        if self.decision is not None:
            out["decision"] = self.decision
        out.update(self.measures)
        return out

    def select(self, mask: np.ndarray) -> Outcomes:
        return Outcomes(*(getattr(self, f.name)[mask] for f in _ARRAYS),
                        decision=None if self.decision is None else self.decision[mask],
                        measures={k: v[mask] for k, v in self.measures.items()})

    def decisions(self) -> Outcomes:
        """The rows that are decisions of the controller (all of them for a network of queues)."""
        if self.decision is None or self.decision.all():
            return self
        return self.select(self.decision)

    @staticmethod
    def empty(num_stations: int) -> Outcomes:
        i, f = np.empty(0, np.int64), np.empty(0)
        return Outcomes(i, i, i, np.empty(0, bool), np.empty(0, bool), f, f, f, f, i, f, i,
                        np.empty((0, num_stations)), np.empty((0, num_stations)))

    @staticmethod
    def concat(parts: list[Outcomes], num_stations: int) -> Outcomes:
        if not parts:
            return Outcomes.empty(num_stations)
        if len(parts) > 1:
            parts = [p for p in parts if len(p)] or parts[:1]  # an empty part may lack a system's measures
        if len(parts) == 1:
            return parts[0]
        keys = set(parts[0].measures)
        if any(set(p.measures) != keys for p in parts):
            raise ValueError("outcomes: parts with different measures cannot be joined")
        decision = None
        if any(p.decision is not None for p in parts):
            decision = np.concatenate([np.ones(len(p), bool) if p.decision is None else p.decision for p in parts])
        return Outcomes(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in _ARRAYS), decision=decision,
                        measures={k: np.concatenate([p.measures[k] for p in parts]) for k in parts[0].measures})


_ARRAYS = tuple(f for f in fields(Outcomes) if f.name not in ("decision", "measures"))
