"""Multi-server FCFS stations: c identical servers in front of one FIFO queue.

Slots: one per server, holding its completion time (inf when idle). A job arriving at a
station takes a free server if one exists, else joins the tail of the station's ring
buffer; a freed server takes the head. Its service time is the one drawn for it at
arrival to the network (job table column ``service``), so a probe replays it exactly.

The handlers index with flat positions into reshaped views: NumPy gathers and scatters
with one index array are markedly faster than with two or three.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from envs.kinds.base import State, StationGroup

if TYPE_CHECKING:
    from envs.engine import Engine


class FcfsKind(StationGroup):
    name = "fcfs"

    def __init__(self, stations: Sequence[int], servers: Sequence[int], offset: int, num_stations: int):
        super().__init__(stations, servers, offset, num_stations)
        self.slot_station = np.repeat(self.stations, self.servers)  # global station of each server
        self.slots = int(self.servers.sum())
        self.first_server = np.concatenate([[0], np.cumsum(self.servers)[:-1]])

    def init_state(self, rows: int) -> dict[str, np.ndarray]:
        n = self.stations.size
        return {"fcfs_job": np.full((rows, self.slots), -1, np.int64),
                "fcfs_q": np.full((rows, n, 16), -1, np.int64),
                "fcfs_head": np.zeros((rows, n), np.int64), "fcfs_len": np.zeros((rows, n), np.int64)}

    # ------------------------------------------------------------------ events
    def arrive(self, eng: Engine, st: State, inst, rows, jid, n, when) -> None:
        K = eng.jobs.capacity
        st.since.reshape(-1)[rows * K + jid] = when
        ev = st.next_event[rows] if self.slots == eng.E else st.next_event[rows, self.offset:self.offset + self.slots]
        free = np.isinf(ev) & (self.slot_station == n[:, None])
        srv = free.argmax(1)
        has_free = free[np.arange(rows.size), srv]
        if has_free.all():
            self._start(eng, st, inst, rows, srv, jid, n, when)
            return
        if has_free.any():
            self._start(eng, st, inst, rows[has_free], srv[has_free], jid[has_free], n[has_free], when[has_free])
        wait = ~has_free
        self._push(st, rows[wait] * self.stations.size + self.local[n[wait]], jid[wait])

    def handle(self, eng: Engine, st: State, inst, rows, slot, when):
        srv = slot - self.offset
        fs = rows * self.slots + srv
        jobs = st.fcfs_job.reshape(-1)
        jid = jobs[fs]
        n = self.slot_station[srv]
        st.next_event.reshape(-1)[rows * eng.E + slot] = np.inf
        jobs[fs] = -1
        fq = rows * self.stations.size + self.local[n]
        queued = st.fcfs_len.reshape(-1)[fq] > 0
        if queued.all():
            self._start(eng, st, inst, rows, srv, self._pop(st, fq), n, when)
        elif queued.any():
            self._start(eng, st, inst, rows[queued], srv[queued], self._pop(st, fq[queued]), n[queued],
                        when[queued])
        return None, jid, n

    def _start(self, eng: Engine, st: State, inst, rows, srv, jid, n, when) -> None:
        K = eng.jobs.capacity
        fk = rows * K + jid
        w = when - st.since.reshape(-1)[fk]
        st.wait_sum.reshape(-1)[fk] += w
        at = (inst[rows] * K + jid) * eng.N + n
        service = eng.jobs.service.reshape(-1)[at]
        end = when + service
        st.next_event.reshape(-1)[rows * eng.E + self.offset + srv] = end
        st.fcfs_job.reshape(-1)[rows * self.slots + srv] = jid
        st.observer.started(st, rows, jid, at, when, w, service, end)

    def cancel(self, eng: Engine, st: State, inst, rows, jid, n, when):
        """A copy in service frees its server (which takes the head of its queue); a queued
        copy leaves the queue, the jobs behind it moving up."""
        serving = (st.fcfs_job[rows] == jid[:, None]) & (self.slot_station == n[:, None])
        in_service = serving.any(1)
        work = np.zeros(rows.size)
        if in_service.any():
            i = np.flatnonzero(in_service)
            r, srv = rows[i], serving[i].argmax(1)
            fe = r * eng.E + self.offset + srv
            K = eng.jobs.capacity
            service = eng.jobs.service.reshape(-1)[(inst[r] * K + jid[i]) * eng.N + n[i]]
            work[i] = when[i] - (st.next_event.reshape(-1)[fe] - service)
            st.next_event.reshape(-1)[fe] = np.inf
            st.fcfs_job.reshape(-1)[r * self.slots + srv] = -1
            fq = r * self.stations.size + self.local[n[i]]
            queued = st.fcfs_len.reshape(-1)[fq] > 0
            if queued.any():
                self._start(eng, st, inst, r[queued], srv[queued], self._pop(st, fq[queued]), n[i][queued],
                            when[i][queued])
        if not in_service.all():
            i = np.flatnonzero(~in_service)
            _remove_queued(st, rows[i] * self.stations.size + self.local[n[i]], jid[i])
        return work, in_service

    # ------------------------------------------------------------------ queues
    @staticmethod
    def _push(st: State, fq, jid) -> None:
        length = st.fcfs_len.reshape(-1)
        if (length[fq] >= st.fcfs_q.shape[2]).any():
            _grow_queues(st)
        q = st.fcfs_q.shape[2]
        st.fcfs_q.reshape(-1)[fq * q + (st.fcfs_head.reshape(-1)[fq] + length[fq]) % q] = jid
        length[fq] += 1

    @staticmethod
    def _pop(st: State, fq) -> np.ndarray:
        q = st.fcfs_q.shape[2]
        heads = st.fcfs_head.reshape(-1)
        head = heads[fq]
        jid = st.fcfs_q.reshape(-1)[fq * q + head]
        heads[fq] = (head + 1) % q
        st.fcfs_len.reshape(-1)[fq] -= 1
        return jid

    # ------------------------------------------------------------------ views
    def waiting(self, st: State) -> np.ndarray:
        return st.fcfs_len

    def busy(self, st: State) -> np.ndarray:
        idle = np.isinf(st.next_event[:, self.offset:self.offset + self.slots])
        return np.add.reduceat(~idle, self.first_server, axis=1)

    def clear(self, st: State, rows: np.ndarray) -> None:
        st.fcfs_job[rows] = -1
        st.fcfs_q[rows] = -1
        st.fcfs_head[rows] = 0
        st.fcfs_len[rows] = 0


def _grow_queues(st: State) -> None:
    """Double the ring buffers, unrolling each so that its head is at 0."""
    q = st.fcfs_q.shape[2]
    order = (st.fcfs_head[:, :, None] + np.arange(q)) % q
    buf = np.full(st.fcfs_q.shape[:2] + (2 * q,), -1, dtype=st.fcfs_q.dtype)
    buf[:, :, :q] = np.take_along_axis(st.fcfs_q, order, axis=2)
    st.fcfs_q = buf
    st.fcfs_head[:] = 0


def _remove_queued(st: State, fq: np.ndarray, jid: np.ndarray) -> None:
    """Take jobs out of the middle of their queues (``fq``: flat queue index per job)."""
    q = st.fcfs_q.shape[2]
    buf = st.fcfs_q.reshape(-1, q)
    heads = st.fcfs_head.reshape(-1)
    order = (heads[fq][:, None] + np.arange(q)) % q
    unrolled = np.take_along_axis(buf[fq], order, axis=1)  # head first
    pos = (unrolled == jid[:, None]).argmax(1)
    keep = np.arange(q - 1) + (np.arange(q - 1) >= pos[:, None])  # skip the removed position
    shifted = np.full((fq.size, q), -1, buf.dtype)
    shifted[:, : q - 1] = np.take_along_axis(unrolled, keep, axis=1)
    buf[fq] = shifted
    heads[fq] = 0
    st.fcfs_len.reshape(-1)[fq] -= 1
