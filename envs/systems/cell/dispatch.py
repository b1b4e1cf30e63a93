"""The dispatch rule of a cell (``CellDispatch``): every admitted UE enters the cell and
leaves at its session's end, when dropped, or at once when it does not fit; its probes stop
as soon as the UE is safe."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from envs.jobs import Column, SlotTable
from envs.outcomes import Outcomes
from envs.probe import Follow
from envs.systems.cell.channel import UEDraws
from envs.systems.cell.station import BLOCKED, DROPPED, FINISHED

if TYPE_CHECKING:
    from envs.engine import Engine
    from envs.spec import NetworkSpec


class SafeStop(Follow):
    """A probe's observer that also stops a row as soon as its UE is safe: whenever a UE
    leaves, if all present could need their most PRBs at once and still fit, nobody is
    dropped any more (no arrivals in a probe), so the UE finishes at its end."""

    def __init__(self, eng, job, horizon, most, C, end):
        super().__init__(eng, job, horizon)
        self.most, self.C, self.end = most, C, end

    def on_exit(self, rows, jid, n, when):
        mine = super().on_exit(rows, jid, n, when)
        safe = self.state.cell_ues[rows] @ self.most <= self.C
        if mine is not None:  # a row whose UE left in this event (several may leave at once) is decided
            safe &= ~np.isin(rows, rows[mine])
        if not safe.any():
            return mine
        self.departure[rows[safe]] = self.end[rows[safe]]
        return safe if mine is None else (safe | mine)


MEASURES = (("blocked", bool), ("dropped", bool), ("type", np.int64), ("handover", bool), ("session", np.float64))


class CellDispatch:
    """The dispatch rule of a cell: every admitted UE enters the cell (station 0) and leaves
    it at the end of its session, when dropped, or at once when it does not fit. Draws per
    UE at arrival: session length, initial CQI, channel key (job columns). Builds the
    cell's outcome rows (``reports``): success = the UE finished its session undropped;
    ``accepted`` = the UE was carried (admitted and it fitted): an admitted UE that does not
    fit is blocked, so its decision acted as a rejection."""

    draws_service = True
    cancels = False
    reports = True

    def __init__(self, spec: NetworkSpec):
        self.cell = spec.block
        self.N = spec.num_stations
        self.draws = UEDraws(self.cell)
        self.columns = (Column("cqi0", (), np.int64), Column("cqi_key", (), np.uint64),
                        Column("handover", (), bool))
        dyn = np.array([t.dynamic for t in self.cell.types])
        # can a UE of each type be dropped once admitted? only by CQI moves (its own under 'grown')
        self.can_drop = dyn if self.cell.drop == "grown" else np.full(dyn.size, dyn.any())
        table = self.cell.demand_table()
        self.most = np.where(table < (1 << 40), table, 0).max(1)  # the most PRBs a UE of each type can need

    def draw(self, rng: np.random.Generator, jobs: SlotTable, slot: np.ndarray) -> None:
        every = np.arange(jobs.rows)
        session, cqi, key = self.draws.sample(rng, jobs.job_class[every, slot])
        jobs.service[every, slot, 0] = session
        jobs.cqi0[every, slot] = cqi
        if key is not None:
            jobs.cqi_key[every, slot] = key
        jobs.handover[every, slot] = False

    def entry(self, jobs, inst, slot, action) -> np.ndarray:
        return np.zeros(inst.size, np.int64)

    def placements(self, jobs, inst, slot, action) -> np.ndarray:
        return np.zeros((inst.size, 1), np.int64)

    def after(self, jobs, at: np.ndarray) -> np.ndarray:
        return np.full(at.shape, self.N)  # leaving the cell is leaving the system

    @staticmethod
    def empty(num_stations: int = 1) -> Outcomes:
        out = Outcomes.empty(num_stations)
        out.decision = np.empty(0, bool)
        out.measures = {k: np.empty(0, t) for k, t in MEASURES}
        return out

    def departures(self, eng: Engine, rows, jid, n, when) -> Outcomes:
        jobs = eng.jobs
        fk = rows * jobs.capacity + jid
        arrived = jobs.arrival_time.reshape(-1)[fk]
        typ = jobs.job_class.reshape(-1)[fk]
        session = jobs.service.reshape(-1, self.N)[fk, 0]
        handover = jobs.handover.reshape(-1)[fk]
        fate = eng.state.cell_fate.reshape(-1)[fk]
        step = jobs.step.reshape(-1)[fk]
        action = jobs.action.reshape(-1)[fk]
        jobs.release(rows, jid)
        blocked = fate == BLOCKED
        held = when - arrived
        nan = np.full((rows.size, self.N), np.nan)
        return Outcomes(rows, step, action, ~blocked, fate == FINISHED, held, held.copy(), arrived, when,
                        typ, np.zeros(rows.size), (~blocked).astype(np.int64), nan, session[:, None],
                        decision=~handover, measures={"blocked": blocked, "dropped": fate == DROPPED, "type": typ,
                                                      "handover": handover, "session": session})

    def probe(self, eng: Engine, rows: np.ndarray, score: bool = True) -> Outcomes:
        """Would the UE blocked now at ``rows`` have finished its session undropped, had it
        been admitted, with no further arrivals (handovers included)? Decided at once when
        it does not fit or can never be dropped (its type cannot be, or all present could
        need their most PRBs at once and still fit); else by a copy of those rows run until
        it leaves (its channel and everyone's replay their keys, so this is exact).
        ``score`` False: not asked; reported as not finished."""
        jobs, st = eng.jobs, eng.state
        slot = eng.slot[rows]
        typ = jobs.job_class[rows, slot]
        session = jobs.service[rows, slot, 0]
        start = eng.now[rows]
        kind = eng.kinds[0]
        fits = st.cell_used[rows] + kind.table[typ, jobs.cqi0[rows, slot]] <= kind.C
        if not score:  # reported at once as not finished, like a UE without room
            fits = np.zeros(rows.size, bool)
        fate = np.where(fits, FINISHED, BLOCKED)
        departure = np.where(fits, start + session, start)
        # no arrivals in a probe: if every UE present and this one could all need their most
        # PRBs at once and still fit, nobody is ever dropped
        safe = st.cell_ues[rows] @ self.most + self.most[typ] <= kind.C
        run = np.flatnonzero(fits & self.can_drop[typ] & ~safe)
        if run.size:
            r = rows[run]
            # runs to the UE's end at most: its horizon, from its arrival, grows by its session
            # when it is placed (``Follow.started``); a cell in bulk then takes it in few rounds
            follow = SafeStop(eng, slot[run], start[run].copy(), self.most, kind.C, (start + session)[run])
            clone = follow.state = st.take(r, follow)
            clone.next_event[:, eng.exogenous] = np.inf
            local = np.arange(run.size)
            eng.insert(clone, r, local, None)
            eng.run(clone, r, follow.horizon, follow.on_exit)
            departure[run] = follow.departure
            fate[run] = clone.cell_fate[local, slot[run]]
        R = rows.size
        held = departure - start
        false = np.zeros(R, bool)
        return Outcomes(rows.copy(), np.full(R, eng.t, np.int64), np.zeros(R, np.int64), false, fate == FINISHED,
                        held, held.copy(), start.copy(), departure, typ, np.zeros(R), np.zeros(R, np.int64),
                        np.full((R, self.N), np.nan), session[:, None], decision=np.ones(R, bool),
                        measures={"blocked": np.ones(R, bool), "dropped": false.copy(), "type": typ.copy(),
                                  "handover": false.copy(), "session": session.copy()})
