"""The compiled event loop of two server pools (``PoolsDispatch`` over FCFS pools, with its timers).

``Engine.run`` hands its loop here for the pools system (``PoolsSystem.kernel``). Per row, in
time order, it does what ``envs.kinds.fcfs.FcfsKind``, ``PoolTimers`` and ``PoolsDispatch`` do:
a freed server takes its queue's head (or the pool's last busy server moves into its slot, its
timer with it); a timer whose server still holds the job that armed it reroutes the job
(cancels it there, it joins the other pool), copies it to the other pool (back or front of the
queue) or rescues a copy still queued there (it takes the server of that pool's own job with
the most work left, which waits at the front with its work so far held); a service start arms
the server's timer; the first copy to finish cancels the other. The arithmetic is the NumPy
loop's, in the same order (each step's docstring names the method it follows), so both
engines give the same floats and the same outcome rows (``envs.kernels``). A queue's ring
buffer may be laid out differently (it grows here before an event that might need room),
never its contents.

A control system has no probes: this loop serves the real network and the rollouts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from envs.kernels import DONE, EXITS_FULL, QUEUE_FULL, CompiledLoop, earliest, note_exit
from envs.kinds.fcfs import _grow_queues
from envs.systems.pools.dispatch import REPLICATE, REROUTE

if TYPE_CHECKING:
    from envs.engine import Engine
    from envs.kinds.base import State

# S: the state's arrays (per row); J: the job table's columns (per instance); C: the constants.
# S = (next_event, fcfs_job, fcfs_q, fcfs_head, fcfs_len, fcfs_busy, since, wait_sum, cancelled_work,
#      cancelled_started, timer_owner)
# J = (service, wait, step, arrival_time, first, policy, tau, copied, front, preempt, held, paused, paused_at,
#      waited)
# C = (slot_station, first_at, servers_at, timer offset (-1: no timers), timer from arrival, rescues)


@njit(cache=True, inline="always")
def _push(S, r, n, jid, at_front):
    """``FcfsKind._push`` (the caller made sure there is room)."""
    q, head, length = S[2], S[3], S[4]
    Q = q.shape[2]
    if at_front:
        head[r, n] = (head[r, n] - 1) % Q
        q[r, n, head[r, n]] = jid
    else:
        q[r, n, (head[r, n] + length[r, n]) % Q] = jid
    length[r, n] += 1


@njit(cache=True, inline="always")
def _pop(S, r, n):
    q, head, length = S[2], S[3], S[4]
    h = head[r, n]
    jid = q[r, n, h]
    head[r, n] = (h + 1) % q.shape[2]
    length[r, n] -= 1
    return jid


@njit(cache=True)
def _remove_queued(S, r, n, jid):
    """``envs.kinds.fcfs._remove_queued``: the queue unrolled head first without ``jid``."""
    q, head, length = S[2], S[3], S[4]
    Q = q.shape[2]
    unrolled = np.empty(Q, np.int64)
    for i in range(Q):
        unrolled[i] = q[r, n, (head[r, n] + i) % Q]
    pos = 0
    for i in range(Q):
        if unrolled[i] == jid:
            pos = i
            break
    for i in range(Q - 1):
        q[r, n, i] = unrolled[i + (1 if i >= pos else 0)]
    q[r, n, Q - 1] = -1
    head[r, n] = 0
    length[r, n] -= 1


@njit(cache=True)
def _start(S, J, C, r, b, srv, jid, n, when):
    """``FcfsKind._start`` and the service-start hook ``PoolsDispatch.started``."""
    next_event, fcfs_job, since, wait_sum, timer_owner = S[0], S[1], S[6], S[7], S[10]
    service, wait, step, arrival_time, first, tau, copied = J[0], J[1], J[2], J[3], J[4], J[6], J[7]
    preempt, held, paused, paused_at, waited = J[9], J[10], J[11], J[12], J[13]
    slot_station, timer_offset, arrival_timer, rescues = C[0], C[3], C[4], C[5]
    w = when - since[r, jid]
    wait_sum[r, jid] += w
    next_event[r, srv] = when + service[b, jid, n]
    fcfs_job[r, srv] = jid
    wait[b, jid, n] = w
    if timer_offset < 0:
        return
    on_first = n == first[b, jid]
    resumed = False
    if rescues and on_first and paused[b, jid]:  # its work there whole again; it waited since the pause
        resumed = True
        service[b, jid, n] += held[b, jid]
        paused[b, jid] = False
        pause = when - paused_at[b, jid]
        wait_sum[r, jid] += pause - (when - since[r, jid])
        wait[b, jid, n] = waited[b, jid] + pause
    if not (on_first and np.isfinite(tau[b, jid])
            and (not copied[b, jid] or (resumed and np.isfinite(preempt[b, jid])))):
        return
    s = 0
    while not (fcfs_job[r, s] == jid and slot_station[s] == n):
        s += 1
    if rescues and copied[b, jid]:
        fire = when + preempt[b, jid]
    elif arrival_timer:
        fire = max(when, arrival_time[b, jid] + tau[b, jid])
    else:
        fire = when + tau[b, jid]
    next_event[r, timer_offset + s] = fire
    timer_owner[r, s] = step[b, jid]


@njit(cache=True)
def _arrive(S, J, C, r, b, jid, n, when, at_front):
    """``FcfsKind.arrive``: a free server of pool ``n``, else its queue (back or front)."""
    busy = S[5]
    S[6][r, jid] = when
    k = busy[r, n]
    if k < C[2][n]:
        busy[r, n] = k + 1
        _start(S, J, C, r, b, C[1][n] + k, jid, n, when)
    else:
        _push(S, r, n, jid, at_front)


@njit(cache=True)
def _free(S, J, C, r, b, srv, n, when):
    """``FcfsKind._free``: the queue's head takes the server, else the pool's last busy server
    (and its timer) moves into its slot."""
    next_event, fcfs_job, busy, timer_owner = S[0], S[1], S[5], S[10]
    if S[4][r, n] > 0:
        _start(S, J, C, r, b, srv, _pop(S, r, n), n, when)
        return
    left = busy[r, n] - 1
    busy[r, n] = left
    last = C[1][n] + left
    fcfs_job[r, srv] = fcfs_job[r, last]
    next_event[r, srv] = next_event[r, last]
    fcfs_job[r, last] = -1
    next_event[r, last] = np.inf
    t = C[3]
    if t >= 0:
        timer_owner[r, srv] = timer_owner[r, last]
        next_event[r, t + srv] = next_event[r, t + last]
        timer_owner[r, last] = -1
        next_event[r, t + last] = np.inf


@njit(cache=True)
def _cancel(S, J, C, r, b, jid, n, when):
    """``PoolsDispatch._cancel`` through ``Engine.cancel`` and ``FcfsKind.cancel``: the copy at
    pool ``n`` leaves its server (or its queue); what it used replaces its work there."""
    next_event, fcfs_job, cancelled_work, cancelled_started = S[0], S[1], S[8], S[9]
    service, first, held, paused = J[0], J[4], J[10], J[11]
    slot_station = C[0]
    before = cancelled_work[r, jid]
    srv = -1
    for s in range(fcfs_job.shape[1]):
        if fcfs_job[r, s] == jid and slot_station[s] == n:
            srv = s
            break
    work = 0.0
    if srv >= 0:
        work = when - (next_event[r, srv] - service[b, jid, n])
        _free(S, J, C, r, b, srv, n, when)
    else:
        _remove_queued(S, r, n, jid)
    cancelled_work[r, jid] += work
    cancelled_started[r, jid] += 1.0 if srv >= 0 else 0.0
    if C[5] and paused[b, jid] and n == first[b, jid]:
        cancelled_work[r, jid] += held[b, jid]
        cancelled_started[r, jid] += 1
        paused[b, jid] = False
    service[b, jid, n] = cancelled_work[r, jid] - before


@njit(cache=True)
def _rescue(S, J, C, r, b, jid, other, when):
    """``PoolsDispatch._rescue`` and ``FcfsKind.preempt``: the copy still queued at ``other``
    takes the server there whose own job has the most work left; that job waits at the front."""
    next_event, fcfs_job = S[0], S[1]
    service, wait, first, held, paused, paused_at, waited = J[0], J[1], J[4], J[10], J[11], J[12], J[13]
    slot_station = C[0]
    srv, best = -1, -np.inf
    for s in range(fcfs_job.shape[1]):
        if slot_station[s] != other:
            continue
        h = fcfs_job[r, s]
        if h == jid:
            return  # the copy is in service there already
        if h >= 0 and first[b, h] == other and (srv < 0 or next_event[r, s] > best):
            srv, best = s, next_event[r, s]
    if srv < 0:
        return
    victim = fcfs_job[r, srv]
    total = service[b, victim, other]
    paused[b, victim] = True
    paused_at[b, victim] = when
    waited[b, victim] = wait[b, victim, other]
    left = next_event[r, srv] - when
    service[b, victim, other] = left
    t = C[3]
    S[10][r, srv] = -1
    next_event[r, t + srv] = np.inf
    _remove_queued(S, r, other, jid)
    _push(S, r, other, victim, True)
    _start(S, J, C, r, b, srv, jid, other, when)
    held[b, victim] = total - left


@njit(cache=True)
def _fire(S, J, C, r, b, srv, when):
    """``PoolTimers.handle`` and ``PoolsDispatch.fire``: the timer of server ``srv``."""
    next_event, fcfs_job, timer_owner = S[0], S[1], S[10]
    step, policy, copied, front, preempt = J[2], J[5], J[7], J[8], J[9]
    t = C[3]
    next_event[r, t + srv] = np.inf
    jid = fcfs_job[r, srv]
    if jid < 0 or step[b, jid] != timer_owner[r, srv]:
        return
    pool = C[0][srv]
    if C[5] and copied[b, jid]:
        _rescue(S, J, C, r, b, jid, 1 - pool, when)
        return
    p = policy[b, jid]
    if p == REROUTE:
        _cancel(S, J, C, r, b, jid, pool, when)
    elif p == REPLICATE:
        copied[b, jid] = True
    _arrive(S, J, C, r, b, jid, 1 - pool, when, front[b, jid])
    if C[5] and p == REPLICATE and np.isfinite(preempt[b, jid]):  # the same timer, again at + preempt
        next_event[r, t + srv] = when + preempt[b, jid]


@njit(parallel=True, cache=True)
def run_rows(S, J, C, inst, horizon, status, rounds, exit_jid, exit_n, exit_when, exit_round, exits):
    """Run every row's events at times <= its horizon. A row stops, before touching its state,
    with ``status`` QUEUE_FULL (a full queue: an event pushes at most one job) or EXITS_FULL."""
    next_event, fcfs_job, length = S[0], S[1], S[4]
    R = next_event.shape[0]
    servers = fcfs_job.shape[1]
    Q = S[2].shape[2]
    for r in prange(R):
        if status[r] == DONE:
            continue
        status[r] = DONE
        b = inst[r]
        while True:
            when, slot = earliest(next_event, r)  # the first on ties, as NumPy's argmin
            if slot < 0 or when > horizon[r]:
                break
            if length[r, 0] >= Q or length[r, 1] >= Q:
                status[r] = QUEUE_FULL
                break
            if slot < servers and exits[r] >= exit_jid.shape[1]:
                status[r] = EXITS_FULL
                break
            k = rounds[r]
            rounds[r] = k + 1
            if slot >= servers:
                _fire(S, J, C, r, b, slot - servers, when)
                continue
            jid = fcfs_job[r, slot]
            n = C[0][slot]
            _free(S, J, C, r, b, slot, n, when)
            if J[7][b, jid]:  # the first copy to finish cancels the other
                _cancel(S, J, C, r, b, jid, 1 - n, when)
            note_exit(r, jid, n, when, k, exit_jid, exit_n, exit_when, exit_round, exits)


@njit(cache=True)
def arrive_rows(S, J, C, rows, inst, jid, n, when):
    """Jobs ``jid`` (one per row) arrive at pools ``n``, at the back of the queue (as
    ``Engine.arrive``). Returns False, having changed nothing, where a queue has no room."""
    Q = S[2].shape[2]
    for i in range(rows.size):
        if S[4][rows[i], n[i]] >= Q:
            return False
    for i in range(rows.size):
        _arrive(S, J, C, rows[i], inst[rows[i]], jid[i], n[i], when[i], False)
    return True


class PoolsKernel(CompiledLoop):
    """``Engine.run`` for the pools system."""

    def __init__(self, eng: Engine):
        super().__init__(eng)
        routing, fcfs = eng.routing, eng.kinds[0]
        timers = routing.timers
        self.constants = (fcfs.slot_station, fcfs.first_at, fcfs.servers_at,
                          -1 if timers is None else int(timers.offset), bool(routing.arrival_timer),
                          bool(routing.rescues))

    @staticmethod
    def _arrays(eng: Engine, st: State) -> tuple[tuple, tuple]:
        j = eng.jobs
        timer_owner = st.timer_owner if hasattr(st, "timer_owner") else np.zeros((0, 0), np.int64)
        state = (st.next_event, st.fcfs_job, st.fcfs_q, st.fcfs_head, st.fcfs_len, st.fcfs_busy, st.since,
                 st.wait_sum, st.cancelled_work, st.cancelled_started, timer_owner)
        jobs = (j.service, j.wait, j.step, j.arrival_time, j.first, j.policy, j.tau, j.copied, j.front, j.preempt,
                j.held, j.paused, j.paused_at, j.waited)
        return state, jobs

    def arrive(self, eng: Engine, st: State, inst: np.ndarray, rows: np.ndarray, jid: np.ndarray, n: np.ndarray,
               when: np.ndarray) -> None:
        """As ``FcfsKind.arrive`` (``Engine.arrive``), for rows that each get one job."""
        inst = np.asarray(inst, np.int64)
        while not arrive_rows(*self._arrays(eng, st), self.constants, rows, inst, jid, n, when):
            _grow_queues(st)

    def run(self, eng: Engine, st: State, inst: np.ndarray, horizon: np.ndarray, on_exit) -> None:
        """As ``Engine.run``: every row's events up to its horizon; the exits go to ``on_exit``
        at the end, in one call."""
        horizon = np.asarray(horizon, np.float64)
        inst = np.asarray(inst, np.int64)

        def launch(status, rounds, *buffers_and_exits):
            run_rows(*self._arrays(eng, st), self.constants, inst, horizon, status, rounds, *buffers_and_exits)

        self.drive(launch, st.next_event.shape[0], True, on_exit, lambda: _grow_queues(st))
