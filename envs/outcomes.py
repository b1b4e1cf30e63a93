"""The outcome of decisions, one row per decision, as every system reports them.

``success`` is decided by the system (deadline met; later: not dropped); learners and
metrics read it and never re-derive it from a deadline. The 1-D columns are what users
see in ``info["completed"]``: ``env``, ``step``, ``accepted``, ``delay`` (contract) and
``action``, ``success`` plus the system's measures.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

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

    def __len__(self) -> int:
        return int(self.env.size)

    def info(self) -> dict[str, np.ndarray]:
        """The 1-D columns, as given to users in ``info["completed"]``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name).ndim == 1}

    def select(self, mask: np.ndarray) -> Outcomes:
        return Outcomes(*(getattr(self, f.name)[mask] for f in fields(self)))

    @staticmethod
    def empty(num_stations: int) -> Outcomes:
        i, f = np.empty(0, np.int64), np.empty(0)
        return Outcomes(i, i, i, np.empty(0, bool), np.empty(0, bool), f, f, f, f, i, f, i,
                        np.empty((0, num_stations)), np.empty((0, num_stations)))

    @staticmethod
    def concat(parts: list[Outcomes], num_stations: int) -> Outcomes:
        if not parts:
            return Outcomes.empty(num_stations)
        if len(parts) == 1:
            return parts[0]
        return Outcomes(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Outcomes)))
