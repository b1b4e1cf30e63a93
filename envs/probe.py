"""Probes: score a decision not taken (the paper's fast-forward, its "simulated environment").

For the instances ``rows``, a copy of their dynamics only (``State.take``) gets the job
arriving now inserted under the alternative decision (admitted, entering as drawn), and
runs with no further arrivals until the job's outcome is decided. The job draws are
shared read-only with the real network, so the probe replays exactly the service times
and route the real network would have used; the real network is untouched.

Generic over station kinds: the probe follows its job through the observer hooks every
kind calls (``started``) and the exit handler of the loop, never by looking inside a
kind. A row stops as soon as the outcome is known:
* the job starts service at its last station with a fixed end (FCFS): its departure is
  then fixed;
* it leaves the network (any kind);
* unless exact: its deadline can no longer be met. The job misses iff its waits exceed
  d_ub minus the work its delay counts (all of it for the sojourn time, the last
  station's for the paper's measure), so the row runs only to a horizon that starts at
  ``arrival + d_ub - counted work`` and moves by each station's work when the job starts
  there (its delay is then reported as inf). Under processor sharing a job "starts" on
  arrival and its time there is at least its work, so the same bound holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from envs.outcomes import Outcomes

if TYPE_CHECKING:
    from envs.engine import Engine


class Follow:
    """Observer of a probe: tracks the one job it inserted in every row."""

    def __init__(self, eng: Engine, job: np.ndarray, horizon: np.ndarray):
        self.eng = eng
        self.job = job  # (R,) its id in each row of the probe
        self.horizon = horizon
        self.departure = np.full(horizon.size, np.inf)
        self.wait_sum = np.zeros(horizon.size)
        self.state = None  # the probe's copy of the rows, which this observer watches

    def started(self, st, rows, jid, at, when, wait, service, end) -> None:
        mine = jid == self.job[rows]
        if not np.count_nonzero(mine):
            return
        r = rows[mine]
        self.horizon[r] += service[mine]
        if end is None:
            return
        final = self.eng.routing.after(self.eng.jobs, at[mine]) >= self.eng.N
        if np.count_nonzero(final):
            rf = r[final]
            self.departure[rf] = end[mine][final]
            self.wait_sum[rf] = st.wait_sum[rf, self.job[rf]]
            self.horizon[rf] = -np.inf

    def on_exit(self, rows, jid, n, when) -> np.ndarray | None:
        mine = jid == self.job[rows]
        if not np.count_nonzero(mine):
            return None
        r = rows[mine]
        self.departure[r] = when[mine]
        self.wait_sum[r] = self.state.wait_sum[r, self.job[r]]
        return mine


class Probe:
    def __init__(self, eng: Engine, exact: bool = False, score: bool = True):
        self.eng = eng
        self.exact = exact
        self.score = score  # False: the system reports the rejections unscored (see Engine's probes)

    def run(self, rows: np.ndarray) -> Outcomes:
        eng = self.eng
        if eng.routing.reports:  # a system that scores its own decisions (the cell: CellDispatch.probe)
            return eng.routing.probe(eng, rows, self.score)
        R, slot, start = rows.size, eng.slot[rows], eng.now[rows]
        cls = eng.jobs.job_class[rows, slot]
        if self.score:
            success, delay, sojourn, done = self._follow(rows, slot, start, cls)
        else:  # not asked: reported at once as unscored (success False, delay NaN)
            success, delay, sojourn, done = np.zeros(R, bool), np.full(R, np.nan), np.full(R, np.nan), start.copy()
        nan = np.full((R, eng.N), np.nan)
        return Outcomes(rows.copy(), np.full(R, eng.t, np.int64), np.zeros(R, np.int64), np.zeros(R, bool),
                        success, delay, sojourn, start.copy(), done, cls, np.zeros(R), np.zeros(R, np.int64),
                        nan, nan.copy())

    def _follow(self, rows: np.ndarray, slot: np.ndarray, start: np.ndarray, cls: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Run a copy of ``rows`` with the job admitted until its outcome is known: (deadline
        met, delay, sojourn, departure)."""
        eng, jobs, R = self.eng, self.eng.jobs, rows.size
        entry = eng.routing.entry(jobs, rows, slot, None)
        total, last = eng.routing.path_service(jobs, rows, slot, entry)
        d_ub = eng.d_ub[cls]
        if self.exact:
            horizon = np.full(R, np.inf)
        else:  # the job misses iff its waits exceed d_ub minus the work its delay counts
            horizon = start + d_ub - (total if eng.spec.delay == "sojourn" else last)
        follow = Follow(eng, slot, horizon)
        clone = follow.state = eng.state.take(rows, follow, blank=eng.job_arrays)
        eng.insert(clone, rows, np.arange(R), None)
        eng.run(clone, rows, follow.horizon, follow.on_exit)
        done = follow.departure
        sojourn = done - start
        delay = np.where(np.isfinite(done), eng.job_delay(follow.wait_sum, sojourn, last), np.inf)
        return delay < d_ub, delay, sojourn, done
