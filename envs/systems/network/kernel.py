"""The compiled event loop of a network of FCFS stations (the paper's system).

``Engine.run`` hands its loop here when every station is FCFS (``NetworkSystem.kernel``).
Each instance runs its events in time order, sequentially, in a thread of its own group
(``prange``); the NumPy loop runs the k-th event of every instance in one operation. The
arithmetic per job is the same, in the same order (wait = start - since, wait_sum += wait,
end = start + service), so both give the same floats, and the exits are handed back in the
NumPy loop's order (by event round, then instance), so the outcome rows match row for row.
What may differ is only the raw layout of the FCFS queues' ring buffers (this loop grows
them a little earlier: before the event that might need room), never their contents.

Two modes, one loop: the real network (waits recorded in the job table, exits collected)
and a probe (``envs.probe``: one followed job per row, whose start at its last station or
exit ends the row, and whose starts move the row's horizon).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from envs.kernels import DONE, EXITS_FULL, QUEUE_FULL, CompiledLoop, earliest, note_exit
from envs.kinds.fcfs import _grow_queues
from envs.probe import Follow

if TYPE_CHECKING:
    from envs.engine import Engine
    from envs.kinds.base import State


@njit(cache=True, inline="always")
def _start(r, srv, jid, n, when, next_event, fcfs_job, since, wait_sum, row_job, service, route, wait, probe,
           follow_job, horizon, departure, follow_wait, N):
    """Job ``jid`` takes server ``srv`` of station ``n`` of row ``r`` at ``when``."""
    w = when - since[r, jid]
    wait_sum[r, jid] += w
    s = service[row_job, jid, n]
    end = when + s
    next_event[r, srv] = end
    fcfs_job[r, srv] = jid
    if not probe:
        wait[row_job, jid, n] = w
    elif jid == follow_job[r]:
        horizon[r] += s
        if route[row_job, jid, n] >= N:  # its departure is fixed now
            departure[r] = end
            follow_wait[r] = wait_sum[r, jid]
            horizon[r] = -np.inf


@njit(cache=True, inline="always")
def _place(r, jid, n, when, next_event, fcfs_job, fcfs_q, fcfs_head, fcfs_len, fcfs_busy, since, wait_sum, row_job,
           service, route, wait, probe, follow_job, horizon, departure, follow_wait, first_at, servers_at):
    """Job ``jid`` arrives at station ``n`` of row ``r``: a free server, else the queue's tail."""
    since[r, jid] = when
    b = fcfs_busy[r, n]
    if b < servers_at[n]:
        fcfs_busy[r, n] = b + 1
        _start(r, first_at[n] + b, jid, n, when, next_event, fcfs_job, since, wait_sum, row_job, service, route,
               wait, probe, follow_job, horizon, departure, follow_wait, service.shape[2])
    else:
        Q = fcfs_q.shape[2]
        fcfs_q[r, n, (fcfs_head[r, n] + fcfs_len[r, n]) % Q] = jid
        fcfs_len[r, n] += 1


@njit(parallel=True, cache=True)
def run_rows(next_event, fcfs_job, fcfs_q, fcfs_head, fcfs_len, fcfs_busy, since, wait_sum, inst, horizon,
             service, route, wait, probe, follow_job, departure, follow_wait, slot_station, first_at, servers_at,
             status, rounds, exit_jid, exit_n, exit_when, exit_round, exits):
    """Run every row's events at times <= its horizon. A row stops early with ``status``
    QUEUE_FULL (a queue may need more room) or EXITS_FULL (its exit buffer is full) before
    touching its state, so that the caller can make room and call again."""
    R = next_event.shape[0]
    N = service.shape[2]
    Q = fcfs_q.shape[2]
    for r in prange(R):
        if status[r] == DONE:
            continue
        status[r] = DONE
        row_job = inst[r]
        while True:
            when, srv = earliest(next_event, r)  # the first on ties, as NumPy's argmin
            if srv < 0 or when > horizon[r]:
                break
            jid = fcfs_job[r, srv]
            n = slot_station[srv]
            nxt = route[row_job, jid, n]
            if nxt < N and fcfs_busy[r, nxt] >= servers_at[nxt] and fcfs_len[r, nxt] >= Q:
                status[r] = QUEUE_FULL
                break
            if nxt >= N and not probe and exits[r] >= exit_jid.shape[1]:
                status[r] = EXITS_FULL
                break
            # the server is free: it takes the queue's head, or the station's last busy server moves in
            if fcfs_len[r, n] > 0:
                head = fcfs_head[r, n]
                nxt_job = fcfs_q[r, n, head]
                fcfs_head[r, n] = (head + 1) % Q
                fcfs_len[r, n] -= 1
                _start(r, srv, nxt_job, n, when, next_event, fcfs_job, since, wait_sum, row_job, service, route,
                       wait, probe, follow_job, horizon, departure, follow_wait, N)
            else:
                left = fcfs_busy[r, n] - 1
                fcfs_busy[r, n] = left
                last = first_at[n] + left
                fcfs_job[r, srv] = fcfs_job[r, last]
                next_event[r, srv] = next_event[r, last]
                fcfs_job[r, last] = -1
                next_event[r, last] = np.inf
            k = rounds[r]
            rounds[r] = k + 1
            if nxt < N:  # on to the next station: a free server, else the queue's tail
                _place(r, jid, nxt, when, next_event, fcfs_job, fcfs_q, fcfs_head, fcfs_len, fcfs_busy, since,
                       wait_sum, row_job, service, route, wait, probe, follow_job, horizon, departure, follow_wait,
                       first_at, servers_at)
            elif not probe:
                note_exit(r, jid, n, when, k, exit_jid, exit_n, exit_when, exit_round, exits)
            elif jid == follow_job[r]:
                departure[r] = when
                follow_wait[r] = wait_sum[r, jid]
                break


@njit(cache=True)
def arrive_rows(rows, jid, n, when, next_event, fcfs_job, fcfs_q, fcfs_head, fcfs_len, fcfs_busy, since, wait_sum,
                inst, service, route, wait, probe, follow_job, horizon, departure, follow_wait, first_at, servers_at):
    """Jobs ``jid`` (one per row, rows distinct) arrive at stations ``n``: a free server, else
    the queue's tail. Returns False, having changed nothing, where a queue has no room left."""
    Q = fcfs_q.shape[2]
    for i in range(rows.size):
        r, m = rows[i], n[i]
        if fcfs_busy[r, m] >= servers_at[m] and fcfs_len[r, m] >= Q:
            return False
    for i in range(rows.size):
        _place(rows[i], jid[i], n[i], when[i], next_event, fcfs_job, fcfs_q, fcfs_head, fcfs_len, fcfs_busy, since,
               wait_sum, inst[rows[i]], service, route, wait, probe, follow_job, horizon, departure, follow_wait,
               first_at, servers_at)
    return True


class FcfsNetworkKernel(CompiledLoop):
    """``Engine.run`` for a network whose stations are all FCFS, with the spec's routing."""

    def __init__(self, eng: Engine):
        super().__init__(eng)
        self.kind = eng.single_kind

    def arrive(self, eng: Engine, st: State, inst: np.ndarray, rows: np.ndarray, jid: np.ndarray, n: np.ndarray,
               when: np.ndarray) -> None:
        """As ``FcfsKind.arrive`` (``Engine.arrive``), for rows that each get one job."""
        follow, job, horizon, departure, follow_wait = _observer(st)
        kind = self.kind
        while not arrive_rows(rows, jid, n, when, st.next_event, st.fcfs_job, st.fcfs_q, st.fcfs_head, st.fcfs_len,
                              st.fcfs_busy, st.since, st.wait_sum, inst, eng.jobs.service, eng.jobs.route,
                              eng.jobs.wait, follow, job, horizon, departure, follow_wait, kind.first_at,
                              kind.servers_at):
            _grow_queues(st)

    def run(self, eng: Engine, st: State, inst: np.ndarray, horizon: np.ndarray, on_exit) -> None:
        """As ``Engine.run``: every row's events up to its horizon; the real network's exits go to
        ``on_exit`` at the end, in one call (a probe's observer is told its job's fate instead)."""
        kind = self.kind
        follow, job, _, departure, follow_wait = _observer(st)
        horizon = np.asarray(horizon, np.float64)
        inst = np.asarray(inst, np.int64)

        def launch(status, rounds, *buffers_and_exits):
            run_rows(st.next_event, st.fcfs_job, st.fcfs_q, st.fcfs_head, st.fcfs_len, st.fcfs_busy, st.since,
                     st.wait_sum, inst, horizon, eng.jobs.service, eng.jobs.route, eng.jobs.wait, follow, job,
                     departure, follow_wait, kind.slot_station, kind.first_at, kind.servers_at, status, rounds,
                     *buffers_and_exits)

        self.drive(launch, st.next_event.shape[0], not follow, on_exit, lambda: _grow_queues(st))


def _observer(st: State) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(is a probe, its followed jobs, horizon, departure and wait_sum per row): what the
    compiled loop does in place of the state's observer (``envs.probe.Follow`` or the real
    network's ``RecordWaits``)."""
    follow = st.observer
    if isinstance(follow, Follow):
        return True, follow.job, follow.horizon, follow.departure, follow.wait_sum
    empty = np.empty(0)
    return False, np.empty(0, np.int64), empty, empty, empty
