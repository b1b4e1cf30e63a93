"""The compiled event loop of redundancy-d over processor-sharing servers.

``Engine.run`` hands its loop here when the servers are PS (``RedundancySystem.kernel``). It
does what ``envs.kinds.ps.PsKind`` and ``CopyToD`` do, per row in time order: a server's
attained-service clock advances at the per-job rate min(1, c / n), a copy's finish tag is the
clock at its arrival plus its size, the smallest tag is the server's next completion; the
first copy of a job to finish cancels its siblings (in the order of the job's servers), whose
work so far (the clock's advance since they arrived) is added to the job's cancelled work.
The arithmetic is the NumPy loop's, in the same order, so both engines give the same floats;
the exits come back by event round, then row (``envs.kernels``), as the NumPy loop reports them.

A control system has no probes: this loop serves the real network (and the rollouts, which
step copies of it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from envs.kernels import DONE, EXITS_FULL, CompiledLoop, earliest, note_exit
from envs.kinds.ps import PsKind

if TYPE_CHECKING:
    from envs.engine import Engine
    from envs.kinds.base import State


@njit(cache=True, inline="always")
def _advance(r, s, when, clock, last, count, capacity):
    """Server ``s``'s clock moves on to ``when`` at the per-job rate of its present jobs."""
    c = count[r, s]
    if c > 0:
        clock[r, s] += (when - last[r, s]) * min(1.0, capacity[s] / c)
    last[r, s] = when


@njit(cache=True, inline="always")
def _reschedule(r, s, when, clock, count, first, capacity, next_event):
    c = count[r, s]
    if c > 0:
        next_event[r, s] = when + max(first[r, s] - clock[r, s], 0.0) / min(1.0, capacity[s] / c)
    else:
        next_event[r, s] = np.inf


@njit(cache=True, inline="always")
def _remove(r, s, pos, when, clock, count, tag, job, first, first_at, capacity, next_event):
    """Take the copy at ``pos`` out (the last one moves into its place), find the smallest tag
    again, reschedule; an emptied server restarts its clock."""
    c = count[r, s] - 1
    tag[r, s, pos] = tag[r, s, c]
    job[r, s, pos] = job[r, s, c]
    tag[r, s, c] = np.inf
    job[r, s, c] = -1
    count[r, s] = c
    if c == 0:
        clock[r, s] = 0.0
    at = 0
    best = tag[r, s, 0]
    for i in range(1, c):
        if tag[r, s, i] < best:
            best = tag[r, s, i]
            at = i
    first[r, s] = best
    first_at[r, s] = at
    _reschedule(r, s, when, clock, count, first, capacity, next_event)


@njit(parallel=True, cache=True)
def run_rows(next_event, clock, last, count, tag, job, first, first_at, capacity, inst, horizon, order, action, choices,
             service, cancelled_work, cancelled_started, status, rounds, exit_jid, exit_n, exit_when, exit_round, exits):
    """Run every row's events at times <= its horizon: a completion ends its job (an exit) and
    cancels the job's other copies. A row stops, before touching its state, with ``status``
    EXITS_FULL when its exit buffer is full."""
    R = next_event.shape[0]
    for r in prange(R):
        if status[r] == DONE:
            continue
        status[r] = DONE
        row_job = inst[r]
        while True:
            when, s = earliest(next_event, r)  # the first on ties, as NumPy's argmin
            if s < 0 or when > horizon[r]:
                break
            if exits[r] >= exit_jid.shape[1]:
                status[r] = EXITS_FULL
                break
            _advance(r, s, when, clock, last, count, capacity)
            jid = job[r, s, first_at[r, s]]
            _remove(r, s, first_at[r, s], when, clock, count, tag, job, first, first_at, capacity, next_event)
            for j in range(choices[action[row_job, jid]]):  # its siblings, in the order of its servers
                o = order[row_job, jid, j]
                if o == s:
                    continue
                _advance(r, o, when, clock, last, count, capacity)
                pos = 0
                while job[r, o, pos] != jid:
                    pos += 1
                cancelled_work[r, jid] += clock[r, o] - (tag[r, o, pos] - service[row_job, jid, o])
                cancelled_started[r, jid] += 1.0
                _remove(r, o, pos, when, clock, count, tag, job, first, first_at, capacity, next_event)
            k = rounds[r]
            rounds[r] = k + 1
            note_exit(r, jid, s, when, k, exit_jid, exit_n, exit_when, exit_round, exits)


@njit(cache=True, inline="always")
def _arrive_one(r, s, j, t, clock, last, count, tag, job, first, first_at, capacity, inst, service, wait, next_event):
    """A copy of job ``j`` arrives at server ``s`` of row ``r`` at ``t`` (there is room)."""
    _advance(r, s, t, clock, last, count, capacity)
    pos = count[r, s]
    x = clock[r, s] + service[inst[r], j, s]
    tag[r, s, pos] = x
    job[r, s, pos] = j
    count[r, s] = pos + 1
    if x < first[r, s]:
        first[r, s] = x
        first_at[r, s] = pos
    _reschedule(r, s, t, clock, count, first, capacity, next_event)
    wait[inst[r], j, s] = 0.0


@njit(cache=True)
def admit_rows(rows, jid, action, choices, order, now, next_event, clock, last, count, tag, job, first, first_at,
               capacity, inst, service, wait, wait_sum, cancelled_work, cancelled_started):
    """``Engine.insert`` in one pass: the jobs ``jid`` arriving now in ``rows`` (distinct) start
    with zero totals and send a copy to each of their first d servers (d = ``choices[action]``),
    in the order of their servers, as the NumPy loop's columns of placements do (a row's copies
    touch only its own servers, so row by row is the same arithmetic). Returns False, having
    changed nothing, where a server has no room left for another tag."""
    width = tag.shape[2]
    for i in range(rows.size):
        r = rows[i]
        for c in range(choices[action[i]]):
            if count[r, order[inst[r], jid[i], c]] >= width:
                return False
    for i in range(rows.size):
        r, j = rows[i], jid[i]
        wait_sum[r, j] = 0.0
        cancelled_work[r, j] = 0.0
        cancelled_started[r, j] = 0.0
        t = now[inst[r]]
        for c in range(choices[action[i]]):
            _arrive_one(r, order[inst[r], j, c], j, t, clock, last, count, tag, job, first, first_at, capacity, inst,
                        service, wait, next_event)
    return True


class PsRedundancyKernel(CompiledLoop):
    """``Engine.run`` for redundancy-d over PS servers (one PS kind serving every station)."""

    def __init__(self, eng: Engine):
        super().__init__(eng)
        self.kind: PsKind = eng.single_kind
        self.choices = eng.routing.choices

    def insert(self, eng: Engine, st: State, inst: np.ndarray, rows: np.ndarray, action: np.ndarray | None) -> None:
        """As ``Engine.insert``: admit the jobs arriving now in ``rows``, their copies placed."""
        if action is None:
            eng.routing.placements(eng.jobs, inst[rows], eng.slot[inst[rows]], action)  # refuses, saying why
        inst = np.asarray(inst, np.int64)
        rows = np.asarray(rows, np.int64)
        action = np.asarray(action, np.int64)
        jid = eng.slot[inst[rows]]
        while not admit_rows(rows, jid, action, self.choices, eng.jobs.order, eng.now, st.next_event, st.ps_clock,
                             st.ps_last, st.ps_count, st.ps_tag, st.ps_job, st.ps_first, st.ps_first_at,
                             self.kind.capacity, inst, eng.jobs.service, eng.jobs.wait, st.wait_sum,
                             st.cancelled_work, st.cancelled_started):
            PsKind._grow(st)

    def run(self, eng: Engine, st: State, inst: np.ndarray, horizon: np.ndarray, on_exit) -> None:
        """As ``Engine.run``: every row's events up to its horizon; the exits go to ``on_exit``
        at the end, in one call."""
        horizon = np.asarray(horizon, np.float64)
        inst = np.asarray(inst, np.int64)
        jobs = eng.jobs

        def launch(status, rounds, *buffers_and_exits):
            run_rows(st.next_event, st.ps_clock, st.ps_last, st.ps_count, st.ps_tag, st.ps_job, st.ps_first,
                     st.ps_first_at, self.kind.capacity, inst, horizon, jobs.order, jobs.action, self.choices,
                     jobs.service, st.cancelled_work, st.cancelled_started, status, rounds, *buffers_and_exits)

        self.drive(launch, st.next_event.shape[0], True, on_exit)
