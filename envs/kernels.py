"""What every compiled event loop shares (``System.kernel``): the exit buffers, the driver that
launches a loop until every row is done, and the outcome rows of the jobs that left.

A compiled loop runs each row's events in time order; the NumPy loop runs the k-th event of
every row in one operation, so it reports exits by event round, then row. The loops here note
each exit's round and hand the exits back in that order (``gather_exits``), so that both
engines give the same outcome rows, row for row. A row stops early, before touching its state,
when its exit buffer is full (``EXITS_FULL``) or a queue may need more room (``QUEUE_FULL``);
the driver makes room and launches again.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
from numba import njit

from envs.compiled import LAUNCH, threads
from envs.outcomes import Outcomes

RUNNING, DONE, QUEUE_FULL, EXITS_FULL = 0, 1, 2, 3


def exit_buffers(rows: int, width: int) -> tuple[np.ndarray, ...]:
    """Per row, room for ``width`` exits: (job id, last station, time, event round)."""
    return (np.zeros((rows, width), np.int64), np.zeros((rows, width), np.int64), np.zeros((rows, width)),
            np.zeros((rows, width), np.int64))


def grow_exits(buffers: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    rows, width = buffers[0].shape
    grown = exit_buffers(rows, 2 * width)
    for old, new in zip(buffers, grown, strict=True):
        new[:, :width] = old
    return grown


class CompiledLoop:
    """Base of a system's compiled loop: the real network's exit buffers, kept between steps
    (they grow), and the launch-until-done driver. A loop that also admits a job in one pass
    (``Engine.insert``: its totals zeroed, its copies placed) defines ``insert``."""

    insert = None

    def __init__(self, eng):
        self.exit_buffers = exit_buffers(eng.B, 8)
        numba.set_num_threads(min(threads(), numba.config.NUMBA_NUM_THREADS))

    def drive(self, launch: Callable, rows: int, collect: bool, on_exit: Callable,
              make_room: Callable[[], None] | None = None) -> None:
        """Call ``launch(status, rounds, *exit buffers, exits)`` until every row is DONE, making
        room where a row stopped for it; with ``collect``, hand the exits to ``on_exit`` at the
        end, in one call, in the NumPy loop's order."""
        status = np.full(rows, RUNNING, np.int8)
        rounds = np.zeros(rows, np.int64)
        exits = np.zeros(rows, np.int64)
        buffers = self.exit_buffers if collect else exit_buffers(rows, 0)
        while True:
            with LAUNCH:
                launch(status, rounds, *buffers, exits)
            if (status == DONE).all():
                break
            if make_room is not None and (status == QUEUE_FULL).any():
                make_room()
            if (status == EXITS_FULL).any():
                buffers = self.exit_buffers = grow_exits(buffers)
            status[status != DONE] = RUNNING
        if collect and exits.any():
            on_exit(*gather_exits(exits, *buffers))

    @staticmethod
    def departures(eng, rows: np.ndarray, jid: np.ndarray, n: np.ndarray, when: np.ndarray) -> Outcomes:
        """As ``Engine._departures``: the outcome rows of the jobs that left, their slots freed.
        A job's work is what its stations served; where copies are cancelled (``routing.cancels``),
        the copy that finished plus what the cancelled ones used, and the copies that started."""
        jobs, st = eng.jobs, eng.state
        cancels = eng.routing.cancels
        none = np.zeros((0, 0))
        arrived, sojourn, delay, wait, served, cls, step, action, success, work, copies = departure_rows(
            rows, jid, n, when, jobs.arrival_time, jobs.service, jobs.wait, st.wait_sum, jobs.job_class, jobs.step,
            jobs.action, jobs.live, jobs.free, jobs.free_count, eng.spec.delay == "paper", eng.d_ub, cancels,
            st.cancelled_work if cancels else none, st.cancelled_started if cancels else none)
        if not cancels:  # NumPy's own (pairwise) sum, as the reference loop adds
            work = np.nansum(served, 1)
        return Outcomes(rows, step, action, np.ones(rows.size, bool), success, delay, sojourn, arrived, when, cls, work,
                        copies, wait, served)


@njit(cache=True)
def gather_exits(exits, jid, n, when, rnd):
    """The exits of every row, flat, in the NumPy loop's order: by event round, then row (a
    counting sort on the round)."""
    R = exits.size
    total = 0
    rounds = 0
    for r in range(R):
        total += exits[r]
        if exits[r]:
            rounds = max(rounds, rnd[r, exits[r] - 1] + 1)
    start = np.zeros(rounds + 1, np.int64)
    for r in range(R):
        for e in range(exits[r]):
            start[rnd[r, e] + 1] += 1
    for k in range(rounds):
        start[k + 1] += start[k]
    rows = np.empty(total, np.int64)
    out_jid = np.empty(total, np.int64)
    out_n = np.empty(total, np.int64)
    out_when = np.empty(total)
    for r in range(R):  # rows ascending: within a round, in row order
        for e in range(exits[r]):
            i = start[rnd[r, e]]
            start[rnd[r, e]] += 1
            rows[i], out_jid[i], out_n[i], out_when[i] = r, jid[r, e], n[r, e], when[r, e]
    return rows, out_jid, out_n, out_when


@njit(cache=True, inline="always")
def earliest(next_event, r):
    """(time, column) of row ``r``'s earliest pending event, the first on ties (as NumPy's
    argmin); column -1 when none is pending."""
    when = np.inf
    slot = -1
    for j in range(next_event.shape[1]):
        if next_event[r, j] < when:
            when = next_event[r, j]
            slot = j
    return when, slot


@njit(cache=True, inline="always")
def note_exit(r, jid, n, when, k, exit_jid, exit_n, exit_when, exit_round, exits):
    """Row ``r``'s job ``jid`` left from station ``n`` at ``when``, in its event round ``k``."""
    e = exits[r]
    exit_jid[r, e] = jid
    exit_n[r, e] = n
    exit_when[r, e] = when
    exit_round[r, e] = k
    exits[r] = e + 1


@njit(cache=True)
def departure_rows(rows, jid, n, when, arrival_time, service, wait, wait_sum, job_class, step, action, live, free,
                   free_count, paper, d_ub, cancels, cancelled_work, cancelled_started):
    """The outcome columns of the jobs that left (as ``Engine._departures``), and their slots
    freed in the order they left (as ``SlotTable.release``). ``served`` is the service where
    the job was served (NaN elsewhere); where copies are cancelled (``cancels``), a job's
    ``work`` is the copy that finished plus what the cancelled ones used, and ``copies`` the
    copies that started (else ``work`` is left to the caller's sum of ``served``)."""
    R, N = rows.size, service.shape[2]
    arrived, sojourn, delay, work = np.empty(R), np.empty(R), np.empty(R), np.empty(R)
    raw, served, waited = np.empty((R, N)), np.empty((R, N)), np.empty((R, N))
    cls, stp, act, copies = np.empty(R, np.int64), np.empty(R, np.int64), np.empty(R, np.int64), np.ones(R, np.int64)
    success = np.empty(R, np.bool_)
    for i in range(R):
        r, j = rows[i], jid[i]
        arrived[i] = arrival_time[r, j]
        sojourn[i] = when[i] - arrived[i]
        for m in range(N):
            raw[i, m] = service[r, j, m]
            waited[i, m] = wait[r, j, m]
            served[i, m] = np.nan if np.isnan(waited[i, m]) else raw[i, m]
        delay[i] = wait_sum[r, j] + raw[i, n[i]] if paper else sojourn[i]
        cls[i], stp[i], act[i] = job_class[r, j], step[r, j], action[r, j]
        success[i] = delay[i] < d_ub[cls[i]]
        if cancels:
            work[i] = raw[i, n[i]] + cancelled_work[r, j]
            copies[i] = 1 + np.int64(cancelled_started[r, j])
        live[r, j] = False
        free[r, free_count[r]] = j
        free_count[r] += 1
    return arrived, sojourn, delay, waited, served, cls, stp, act, success, work, copies
