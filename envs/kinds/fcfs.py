"""Multi-server FCFS stations: c identical servers in front of one FIFO queue.

Slots: one per server, holding its completion time (inf when idle). A station's busy
servers are kept in its first slots (``fcfs_busy`` of them): an arriving job takes the
slot after them if one is left, else joins the tail of the station's ring buffer; a freed
server takes the head, or with an empty queue the station's last busy server moves into
its slot. So no arrival scans the servers. Its service time is the one drawn for it at
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
        # the same per global station index (saves the ``local`` lookup on the hot path)
        self.first_at = np.zeros(num_stations, np.int64)
        self.first_at[self.stations] = self.first_server
        self.servers_at = np.zeros(num_stations, np.int64)
        self.servers_at[self.stations] = self.servers
        self.aligned: list[tuple[int, str]] = []  # others' per-server event blocks and arrays
        self.local_is_global = np.array_equal(self.stations, np.arange(num_stations))  # no lookup needed

    def align(self, event_offset: int, array: str) -> None:
        """Another kind keeps one event column (from ``event_offset``) and one entry of
        ``array`` per server of this kind (a timer per server): they move with the server."""
        self.aligned.append((int(event_offset), array))

    def init_state(self, rows: int) -> dict[str, np.ndarray]:
        n = self.stations.size
        return {"fcfs_job": np.full((rows, self.slots), -1, np.int64),
                "fcfs_q": np.full((rows, n, 16), -1, np.int64),
                "fcfs_head": np.zeros((rows, n), np.int64), "fcfs_len": np.zeros((rows, n), np.int64),
                "fcfs_busy": np.zeros((rows, n), np.int64)}

    # ------------------------------------------------------------------ events
    def arrive(self, eng: Engine, st: State, inst, rows, jid, n, when, front: np.ndarray | None = None) -> None:
        """Start the jobs on a free server, else queue them: at the back, or at the front where
        ``front`` says so (a dispatch rule's priority copies)."""
        K = eng.jobs.capacity
        st.since.reshape(-1)[rows * K + jid] = when
        fq = rows * self.stations.size + (n if self.local_is_global else self.local[n])
        busy = st.fcfs_busy.reshape(-1)
        b = busy[fq]
        has_free = b < self.servers_at[n]
        go = has_free.nonzero()[0]  # index arrays: cheaper than gathering with a mask many times
        if go.size == rows.size:
            busy[fq] = b + 1
            self._start(eng, st, inst, rows, self.first_at[n] + b, jid, n, when)
            return
        if go.size:
            b, ng = b[go], n[go]
            busy[fq[go]] = b + 1
            self._start(eng, st, inst, rows[go], self.first_at[ng] + b, jid[go], ng, when[go])
        wait = (~has_free).nonzero()[0]
        if front is None or not front[wait].any():
            self._push(st, fq[wait], jid[wait])
            return
        ahead = front[wait]
        self._push(st, fq[wait[~ahead]], jid[wait[~ahead]])
        self._push(st, fq[wait[ahead]], jid[wait[ahead]], at_front=True)

    def handle(self, eng: Engine, st: State, inst, rows, slot, when):
        srv = slot - self.offset
        jid = st.fcfs_job.reshape(-1)[rows * self.slots + srv]
        n = self.slot_station[srv]
        self._free(eng, st, inst, rows, srv, n, when)
        return None, jid, n

    def _free(self, eng: Engine, st: State, inst, rows, srv, n, when) -> None:
        """Servers ``srv`` finished (or lost) their job: take the queue's head, or let the
        station's last busy server move into the slot."""
        fq = rows * self.stations.size + (n if self.local_is_global else self.local[n])
        queued = st.fcfs_len.reshape(-1)[fq] > 0
        take = queued.nonzero()[0]
        if take.size == rows.size:
            self._start(eng, st, inst, rows, srv, self._pop(st, fq), n, when)
            return
        if take.size:
            self._start(eng, st, inst, rows[take], srv[take], self._pop(st, fq[take]), n[take], when[take])
        idle = (~queued).nonzero()[0]
        f, r = fq[idle], rows[idle]
        busy = st.fcfs_busy.reshape(-1)
        left = busy[f] - 1
        busy[f] = left
        last = r * self.slots + self.first_at[n[idle]] + left
        to = r * self.slots + srv[idle]
        jobs, events = st.fcfs_job.reshape(-1), st.next_event.reshape(-1)
        base = r * (eng.E - self.slots) + self.offset  # flat event index = row * E + offset + server
        jobs[to], events[base + to] = jobs[last], events[base + last]
        jobs[last], events[base + last] = -1, np.inf
        for offset, name in self.aligned:
            a, ev = getattr(st, name).reshape(-1), base + offset - self.offset
            a[to], events[ev + to] = a[last], events[ev + last]
            a[last], events[ev + last] = -1, np.inf

    def _start(self, eng: Engine, st: State, inst, rows, srv, jid, n, when) -> None:
        K = eng.jobs.capacity
        fk = rows * K + jid
        w = when - st.since.reshape(-1)[fk]
        st.wait_sum.reshape(-1)[fk] += w
        at = (fk if inst is eng.every else inst[rows] * K + jid) * eng.N + n
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
            self._free(eng, st, inst, r, srv, n[i], when[i])
        if not in_service.all():
            i = np.flatnonzero(~in_service)
            _remove_queued(st, rows[i] * self.stations.size + self.local[n[i]], jid[i])
        return work, in_service

    def preempt(self, eng: Engine, st: State, inst, rows, srv, jid, when) -> np.ndarray:
        """Servers ``srv`` stop their jobs, which rejoin the front of their queues with the work
        they have left as their ``service`` there; jobs ``jid``, queued at the same stations,
        take the servers (a dispatch rule's rescue). The stopped jobs' per-server timers are
        disarmed: their rule re-arms them when they resume. Their queue clocks (``since``) are
        left as they are (a copy of theirs may be waiting at another station on the same clock):
        the rule accounts for the time they wait from now. Returns the work they have left."""
        K, n = eng.jobs.capacity, self.slot_station[srv]
        flat = rows * self.slots + srv
        victim = st.fcfs_job.reshape(-1)[flat]
        events = st.next_event.reshape(-1)
        base = rows * (eng.E - self.slots) + self.offset  # flat event index = row * E + offset + server
        left = events[base + flat] - when
        eng.jobs.service.reshape(-1)[(inst[rows] * K + victim) * eng.N + n] = left
        for offset, name in self.aligned:
            getattr(st, name).reshape(-1)[flat] = -1
            events[base + offset - self.offset + flat] = np.inf
        fq = rows * self.stations.size + (n if self.local_is_global else self.local[n])
        _remove_queued(st, fq, jid)
        self._push(st, fq, victim, at_front=True)
        self._start(eng, st, inst, rows, srv, jid, n, when)
        return left

    # ------------------------------------------------------------------ queues
    @staticmethod
    def _push(st: State, fq, jid, at_front: bool = False) -> None:
        length = st.fcfs_len.reshape(-1)
        if (length[fq] >= st.fcfs_q.shape[2]).any():
            _grow_queues(st)
        q = st.fcfs_q.shape[2]
        heads = st.fcfs_head.reshape(-1)
        if at_front:  # the ring buffer's head moves back one place
            heads[fq] = (heads[fq] - 1) % q
            st.fcfs_q.reshape(-1)[fq * q + heads[fq]] = jid
        else:
            st.fcfs_q.reshape(-1)[fq * q + (heads[fq] + length[fq]) % q] = jid
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
        return st.fcfs_busy

    def clear(self, st: State, rows: np.ndarray) -> None:
        st.fcfs_job[rows] = -1
        st.fcfs_q[rows] = -1
        st.fcfs_head[rows] = 0
        st.fcfs_len[rows] = 0
        st.fcfs_busy[rows] = 0


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
