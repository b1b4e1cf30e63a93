"""Processor-sharing stations: c servers' worth of rate shared equally by the jobs present.

With n jobs at a station each is served at rate min(1, c / n) (a job cannot use more
than one server; c = 1 is the classic M/G/1-PS). Exact without touching every job at
every event: the station keeps one *attained-service clock* V, the service each present
job has received since V = 0, advancing at the per-job rate. A job arriving with work x
gets the finish tag V + x; jobs leave in tag order, and the next completion is at
``(min tag - V) / rate`` from now. An event changes only that station's clock, count and
one tag; the smallest tag is cached, so only a departure scans the station's jobs for the
next one. Slots: one per station.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from envs.kinds.base import State, StationGroup

if TYPE_CHECKING:
    from envs.engine import Engine


class PsKind(StationGroup):
    name = "ps"

    def __init__(self, stations: Sequence[int], servers: Sequence[int], offset: int, num_stations: int):
        super().__init__(stations, servers, offset, num_stations)
        self.capacity = self.servers.astype(np.float64)  # servers' worth of rate
        self.slots = int(self.stations.size)

    def init_state(self, rows: int) -> dict[str, np.ndarray]:
        n = self.stations.size
        return {"ps_clock": np.zeros((rows, n)), "ps_last": np.zeros((rows, n)),
                "ps_count": np.zeros((rows, n), np.int64), "ps_tag": np.full((rows, n, 8), np.inf),
                "ps_job": np.full((rows, n, 8), -1, np.int64), "ps_first": np.full((rows, n), np.inf),
                "ps_first_at": np.zeros((rows, n), np.int64)}

    def _rate(self, lp: np.ndarray, count: np.ndarray) -> np.ndarray:
        return np.minimum(1.0, self.capacity[lp] / np.maximum(count, 1))

    def _advance(self, st: State, fp: np.ndarray, lp: np.ndarray, when: np.ndarray) -> None:
        clock, last, count = st.ps_clock.reshape(-1), st.ps_last.reshape(-1), st.ps_count.reshape(-1)
        c = count[fp]
        clock[fp] += np.where(c > 0, (when - last[fp]) * self._rate(lp, c), 0.0)
        last[fp] = when

    def _reschedule(self, eng: Engine, st: State, rows, lp, fp, when) -> None:
        count = st.ps_count.reshape(-1)[fp]
        gap = np.maximum(st.ps_first.reshape(-1)[fp] - st.ps_clock.reshape(-1)[fp], 0.0) / self._rate(lp, count)
        st.next_event.reshape(-1)[rows * eng.E + self.offset + lp] = np.where(count > 0, when + gap, np.inf)

    def arrive(self, eng: Engine, st: State, inst, rows, jid, n, when) -> None:
        """Jobs sit in positions [0, count) of their station's row: the newcomer at ``count``.
        The smallest tag is kept (``ps_first``), so an arrival scans nothing."""
        lp = self.local[n]
        fp = rows * self.stations.size + lp
        self._advance(st, fp, lp, when)
        count = st.ps_count.reshape(-1)
        pos = count[fp]
        if (pos >= st.ps_tag.shape[2]).any():
            self._grow(st)
        flat = fp * st.ps_tag.shape[2] + pos
        K = eng.jobs.capacity
        at = (inst[rows] * K + jid) * eng.N + n
        work = eng.jobs.service.reshape(-1)[at]
        tag = st.ps_clock.reshape(-1)[fp] + work
        st.ps_tag.reshape(-1)[flat] = tag
        st.ps_job.reshape(-1)[flat] = jid
        count[fp] = pos + 1
        first = st.ps_first.reshape(-1)
        better = tag < first[fp]
        first[fp[better]] = tag[better]
        st.ps_first_at.reshape(-1)[fp[better]] = pos[better]
        self._reschedule(eng, st, rows, lp, fp, when)
        st.observer.started(st, rows, jid, at, when, np.zeros(rows.size), work, None)

    def handle(self, eng: Engine, st: State, inst, rows, slot, when):
        lp = slot - self.offset
        fp = rows * self.stations.size + lp
        self._advance(st, fp, lp, when)
        pos = st.ps_first_at.reshape(-1)[fp]
        jid = st.ps_job.reshape(-1)[fp * st.ps_tag.shape[2] + pos]
        self._remove(eng, st, rows, lp, fp, pos, when)
        return None, jid, self.stations[lp]

    def cancel(self, eng: Engine, st: State, inst, rows, jid, n, when):
        """Remove a copy; the work it received is the clock's advance since it arrived."""
        lp = self.local[n]
        fp = rows * self.stations.size + lp
        self._advance(st, fp, lp, when)
        width = st.ps_tag.shape[2]
        pos = (st.ps_job.reshape(-1, width)[fp] == jid[:, None]).argmax(1)
        K = eng.jobs.capacity
        size = eng.jobs.service.reshape(-1)[(inst[rows] * K + jid) * eng.N + n]
        work = st.ps_clock.reshape(-1)[fp] - (st.ps_tag.reshape(-1)[fp * width + pos] - size)
        self._remove(eng, st, rows, lp, fp, pos, when)
        return work, np.ones(rows.size, bool)

    def _remove(self, eng: Engine, st: State, rows, lp, fp, pos, when) -> None:
        """Take the job at ``pos`` out: the last one moves into its place (rows stay compact),
        then the smallest tag is found again over the occupied positions only."""
        width = st.ps_tag.shape[2]
        tags, jobs = st.ps_tag.reshape(-1), st.ps_job.reshape(-1)
        count = st.ps_count.reshape(-1)
        last = fp * width + count[fp] - 1
        hole = fp * width + pos
        tags[hole], jobs[hole] = tags[last], jobs[last]
        tags[last], jobs[last] = np.inf, -1
        count[fp] -= 1
        st.ps_clock.reshape(-1)[fp[count[fp] == 0]] = 0.0  # an empty station restarts its clock: no drift
        used = max(1, int(count[fp].max()))
        window = st.ps_tag.reshape(-1, width)[fp, :used]
        at = window.argmin(1)
        st.ps_first_at.reshape(-1)[fp] = at
        st.ps_first.reshape(-1)[fp] = window[np.arange(fp.size), at]
        self._reschedule(eng, st, rows, lp, fp, when)

    @staticmethod
    def _grow(st: State) -> None:
        rows, n, w = st.ps_tag.shape
        st.ps_tag = np.concatenate([st.ps_tag, np.full((rows, n, w), np.inf)], axis=2)
        st.ps_job = np.concatenate([st.ps_job, np.full((rows, n, w), -1, np.int64)], axis=2)

    def waiting(self, st: State) -> np.ndarray:
        """Jobs beyond the first c share a server with others: the PS analogue of a queue."""
        return np.maximum(st.ps_count - self.servers, 0)

    def busy(self, st: State) -> np.ndarray:
        return np.minimum(st.ps_count, self.servers)

    def clear(self, st: State, rows: np.ndarray) -> None:
        st.ps_clock[rows] = 0.0
        st.ps_last[rows] = 0.0
        st.ps_count[rows] = 0
        st.ps_tag[rows] = np.inf
        st.ps_job[rows] = -1
        st.ps_first[rows] = np.inf
        st.ps_first_at[rows] = 0
