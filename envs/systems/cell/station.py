"""A 5G cell (docs/systems/cell.md): a loss system of C PRBs, no queue; UEs of several
types hold PRBs for their session, their demand following their channel (CQI).

Event columns (``next_event``), in this order:
* the *session* columns. Each of the S session slots (C / the smallest demand of any type:
  the most UEs the cell can hold) has a next event, the earlier of the session's end and
  its next CQI move. A small cell gives each its own column; a cell run in bulk (below)
  keeps them in ``cell_event`` (R x S) and gives the engine one column, the earliest: the
  engine then looks for a row's next event among a few columns, not among C;
* one per type with handover arrivals: the next handover (arrivals generated here, not
  decisions; ``exogenous``: a probe or ``drain`` turns them off);
* one *refusal* column: an admitted new UE that does not fit leaves at once through it.

A UE's channel path is its own draws' (``envs.systems.cell.channel``), so a probe replays it
exactly. CQI moves are simulated only for types whose demand depends on the CQI.

Session events in bulk (``CellKind._bulk``): a row takes at once all its sessions' CQI moves
and ends up to its next other event (after a handover or a refusal, in the same round),
with the drops of the moves that push the PRBs in use above C, taken in time order with the
UEs present then (``_overflows``, ``_victims``). The paths are the keys' either way, so the
process is the same as one event at a time; only the number of passes falls (most of a busy
cell's events are CQI moves between two arrivals). ``_recount`` keeps UEs per (type, CQI band).

A CQI move that makes the PRBs in use exceed C drops UEs by ``cell.drop``: ``grown``, the
UE whose demand grew; ``lowest_priority``, UEs of the lowest priority first (among them the
grown one first, then the latest admitted) until the rest fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from envs.kinds.base import State, StationGroup
from envs.systems.cell.channel import UEDraws, channel_uniform
from envs.systems.cell.spec import CQI_LEVELS, CellSpec

if TYPE_CHECKING:
    from envs.engine import Engine
    from envs.spec import NetworkSpec

FINISHED, DROPPED, BLOCKED = 0.0, 1.0, 2.0  # a job's fate (``cell_fate``); blocked: it did not fit
_EMPTY = np.empty(0, np.int64)
_NO_VICTIMS = (_EMPTY, _EMPTY, np.empty(0))  # victims outside a pass (row, flat session, time)
_CHUNK = 4  # CQI moves of a session drawn at once when applying many
_BULK_SESSIONS = 16  # session slots from which a cell takes session events in bulk
_GATHER = 4  # a pass of fewer than 1 / _GATHER of the rows gathers their sessions, else scans all
_LEVELS = CQI_LEVELS + 1  # a session's channel as one index: type * _LEVELS + CQI


def _by_row(f, a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``f`` (row by row) of the ``rows`` of ``a``: a pass of most rows applies it to all,
    cheaper than gathering theirs."""
    return f(a[rows]) if rows.size * _GATHER < a.shape[0] else f(a)[rows]


def _lowest_priority_victim(occupied, priority, start, grown) -> np.ndarray:
    """``lowest_priority``'s next victim per row, a slot (arrays R x S): among the UEs present
    of the lowest priority, the one whose demand grew (slot ``grown``), else the latest admitted."""
    p = np.where(occupied, priority, np.iinfo(np.int64).max)
    candidate = p == p.min(1)[:, None]
    at = np.arange(p.shape[0])
    first = candidate[at, grown] & occupied[at, grown]
    return np.where(first, grown, np.where(candidate, start, -np.inf).argmax(1))


class _Exits:
    """The UEs leaving in one event round: their rows' positions in the round, job ids and
    times (the round's event time unless given: a row may take several events at once)."""

    def __init__(self, when: np.ndarray):
        self.when = when
        self.idx: list[np.ndarray] = []
        self.jid: list[np.ndarray] = []
        self.at: list[np.ndarray] = []

    def add(self, idx: np.ndarray, jid: np.ndarray, at: np.ndarray | None = None) -> None:
        self.idx.append(idx)
        self.jid.append(jid)
        self.at.append(self.when[idx] if at is None else at)

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.idx:
            return _EMPTY, _EMPTY, _EMPTY, np.empty(0)
        idx = np.concatenate(self.idx)
        return idx, np.concatenate(self.jid), np.zeros(idx.size, np.int64), np.concatenate(self.at)


class CellKind(StationGroup):
    name = "cell"
    job_arrays = ("cell_fate",)

    @classmethod
    def build(cls, spec: NetworkSpec, stations, servers, offset: int, num_stations: int) -> CellKind:
        return cls(stations, servers, offset, num_stations, spec.block)

    def __init__(self, stations: Sequence[int], servers: Sequence[int], offset: int, num_stations: int,
                 cell: CellSpec | None = None):
        super().__init__(stations, servers, offset, num_stations)
        if cell is None or self.stations.size != 1:
            raise ValueError("the cell kind serves exactly one station described by a 'cell:' block")
        self.cell = cell
        self.C = cell.prbs
        self.T = len(cell.types)
        self.S = cell.sessions
        self.table = cell.demand_table()  # (T, 16)
        levels = np.arange(CQI_LEVELS + 1)
        lo = np.array([t.cqi_range[0] for t in cell.types])[:, None]
        hi = np.array([t.cqi_range[1] for t in cell.types])[:, None]
        dyn = np.array([t.dynamic for t in cell.types])
        self.any_dynamic = bool(dyn.any())
        # Session events in bulk (``_bulk``) cost more numpy passes per round of the event
        # loop than one event each; they pay where a row has many sessions moving between two
        # arrivals (cell_5g: 1.5x), not in a small cell (cell_small, cell_guard: 3-10% slower
        # in bulk, measured in turn with this rule). Exact either way.
        self.bulk = self.any_dynamic and self.S >= _BULK_SESSIONS
        up = np.where(dyn[:, None] & (levels < hi), [[t.cqi_up] for t in cell.types], 0.0)  # (T, 16)
        down = np.where(dyn[:, None] & (levels > lo), [[t.cqi_down] for t in cell.types], 0.0)
        total = up + down
        # tables of a move from each channel (type * 16 + CQI): the channel it leads to, up
        # (index + 16 * channels) with probability up / total, else down (itself where it
        # cannot move); the mean stay before it (inf where it cannot move)
        channel = np.arange(self.T)[:, None] * _LEVELS + levels
        self.p_up = np.divide(up, total, out=np.zeros_like(total), where=total > 0).ravel()
        self.turn = np.concatenate([channel + np.where(down > 0, -1, 0), channel + 1]).ravel()
        self.mean_stay = np.divide(1.0, total, out=np.full_like(total, np.inf), where=total > 0).ravel()
        self.priority = np.array([t.priority for t in cell.types], np.int64)
        # per type: a move that overflows C drops the UE that grew, by either rule (under
        # 'lowest_priority': its type has the lowest priority of all): bulk needs no search
        # among the UEs present (``_victims``)
        self.drops_itself = np.full(self.T, cell.drop == "grown") | (self.priority == self.priority.min())
        self.handover_types = np.array([k for k, t in enumerate(cell.types) if t.handover is not None], np.int64)
        self.handovers = [cell.types[k].handover for k in self.handover_types]
        self.H = self.handover_types.size
        self.session_columns = 1 if self.bulk else self.S
        self.refuse_col = self.session_columns + self.H
        self.slots = self.refuse_col + 1
        self.exogenous = self.offset + self.session_columns + np.arange(self.H)
        self.draws = UEDraws(cell)
        bands = np.zeros(CQI_LEVELS + 1, np.int64)
        for edge in cell.cqi_bands:
            bands[edge:] += 1
        self.bands = len(cell.cqi_bands) + 1 if cell.cqi_bands else 0
        # UEs per (type, CQI band) are counted as channels change (``_recount``), not from
        # the C slots at every decision; a channel's count: type * bands + its CQI's band
        self.channel_band = (np.arange(self.T)[:, None] * self.bands + bands).ravel()

    # ------------------------------------------------------------------ state
    def init_state(self, rows: int) -> dict[str, np.ndarray]:
        S = self.S
        return {"cell_job": np.full((rows, S), -1, np.int64), "cell_type": np.zeros((rows, S), np.int64),
                "cell_cqi": np.zeros((rows, S), np.int64), "cell_demand": np.zeros((rows, S), np.int64),
                "cell_end": np.full((rows, S), np.inf), "cell_next": np.full((rows, S), np.inf),
                "cell_start": np.zeros((rows, S)), "cell_moves": np.zeros((rows, S), np.int64),
                "cell_key": np.zeros((rows, S), np.uint64), "cell_used": np.zeros(rows, np.int64),
                "cell_ues": np.zeros((rows, self.T), np.int64), "cell_refused": np.full(rows, -1, np.int64),
                "cell_bands": np.zeros((rows, self.T * self.bands), np.int64),
                **({"cell_event": np.full((rows, S), np.inf)} if self.bulk else {})}

    def start(self, eng: Engine, st: State, rows: np.ndarray) -> None:
        """First handover of every type with handovers (instances start at ``eng.start``)."""
        for j, proc in enumerate(self.handovers):
            st.next_event[rows, self.offset + self.session_columns + j] = proc.next_after(eng.rng, eng.start[rows])

    def clear(self, st: State, rows: np.ndarray) -> None:
        fresh = self.init_state(rows.size)
        for name, value in fresh.items():
            getattr(st, name)[rows] = value

    # ------------------------------------------------------------------ views
    def waiting(self, st: State) -> np.ndarray:
        return np.zeros((st.cell_used.size, 1), np.int64)  # a loss system: nothing waits

    def busy(self, st: State) -> np.ndarray:
        return st.cell_used[:, None]

    def features(self, eng: Engine, bands: bool):
        """UEs per type (R, T), PRBs in use (R, 1), the arriving UE's demand (R, 1) and, with
        ``bands``, UEs per (type, CQI band) (R, T * bands)."""
        st, jobs = eng.state, eng.jobs
        every = np.arange(eng.B)
        demand = self.table[jobs.job_class[every, eng.slot], jobs.cqi0[every, eng.slot]]
        out = [st.cell_ues, st.cell_used[:, None], demand[:, None]]
        if bands:
            out.append(st.cell_bands)
        return out

    def _recount(self, st: State, rows, old, new) -> None:
        """UEs per (type, CQI band) of ``rows`` (repeats allowed) after channels ``old`` became
        ``new`` (type * 16 + CQI; None: a UE enters or leaves). Only where bands are observed."""
        flat, base = st.cell_bands.reshape(-1), rows * (self.T * self.bands)
        if old is not None and new is not None:
            old, new = self.channel_band[old], self.channel_band[new]
            moved = np.flatnonzero(old != new)
            base, old, new = base[moved], old[moved], new[moved]
        else:
            old, new = (None, self.channel_band[new]) if old is None else (self.channel_band[old], None)
        if old is not None:
            np.subtract.at(flat, base + old, 1)
        if new is not None:
            np.add.at(flat, base + new, 1)

    # ------------------------------------------------------------------ events
    def arrive(self, eng: Engine, st: State, inst, rows, jid, n, when) -> None:
        """An admitted new UE takes a session slot if its demand fits, else leaves through the
        refusal column (blocked)."""
        if not rows.size:
            return
        jobs, K = eng.jobs, eng.jobs.capacity
        fj = inst[rows] * K + jid
        typ = jobs.job_class.reshape(-1)[fj]
        key = jobs.cqi_key.reshape(-1)[fj]
        session = jobs.service.reshape(-1)[fj * eng.N + n]
        fits = self._place(eng, st, inst, rows, jid, typ, jobs.cqi0.reshape(-1)[fj], key, session, when)
        if not fits.all():
            out = np.flatnonzero(~fits)
            r = rows[out]
            st.cell_refused[r] = jid[out]
            st.next_event.reshape(-1)[r * eng.E + self.offset + self.refuse_col] = when[out]
            st.cell_fate.reshape(-1)[r * K + jid[out]] = BLOCKED

    def _place(self, eng: Engine, st: State, inst, rows, jid, typ, cqi, key, session, when) -> np.ndarray:
        d = self.table[typ, cqi]
        fits = st.cell_used[rows] + d <= self.C
        if not fits.all():
            keep = np.flatnonzero(fits)
            rows, jid, typ, cqi, key, session, when, d = (a[keep] for a in (rows, jid, typ, cqi, key, session, when, d))
        if not rows.size:
            return fits
        s = _by_row(lambda job: (job < 0).argmax(1), st.cell_job, rows)  # the first free slot
        q = rows * self.S + s
        st.cell_job.reshape(-1)[q] = jid
        st.cell_type.reshape(-1)[q] = typ
        st.cell_cqi.reshape(-1)[q] = cqi
        st.cell_demand.reshape(-1)[q] = d
        end = when + session
        st.cell_end.reshape(-1)[q] = end
        st.cell_start.reshape(-1)[q] = when
        event = end
        if self.any_dynamic:
            st.cell_moves.reshape(-1)[q] = 0
            st.cell_key.reshape(-1)[q] = key
            stay = self.mean_stay[typ * _LEVELS + cqi]  # inf: this UE's channel never moves
            nxt = when - np.log(channel_uniform(key, np.ones(rows.size, np.uint64))) * stay
            st.cell_next.reshape(-1)[q] = nxt
            event = np.minimum(end, nxt)
        self._schedule(eng, st, rows, q, event)
        if self.bulk:  # rows are distinct
            at = rows * eng.E + self.offset
            st.next_event.reshape(-1)[at] = np.minimum(st.next_event.reshape(-1)[at], event)
        st.cell_used[rows] += d
        st.cell_ues.reshape(-1)[rows * self.T + typ] += 1
        if self.bands:
            self._recount(st, rows, None, typ * _LEVELS + cqi)
        K = eng.jobs.capacity
        st.observer.started(st, rows, jid, (inst[rows] * K + jid) * eng.N + self.stations[0], when,
                            np.zeros(rows.size), session, None)
        return fits

    def _schedule(self, eng: Engine, st: State, rows, q, event) -> None:
        """The next event of sessions ``q`` (flat) of ``rows``: a small cell's own columns; in
        bulk, ``cell_event`` (the session column is set by ``_next_session``)."""
        if self.bulk:
            st.cell_event.reshape(-1)[q] = event
        else:
            st.next_event.reshape(-1)[rows * eng.E + self.offset + q - rows * self.S] = event

    def _next_session(self, st: State, rows) -> None:
        """The session column of ``rows`` in bulk: their earliest session event."""
        st.next_event[rows, self.offset] = _by_row(lambda event: event.min(1), st.cell_event, rows)

    def handle(self, eng: Engine, st: State, inst, rows, slot, when):
        """Returns the UEs that left, with their times: a row may take several events at once.
        In bulk, every row of the round then goes on with its session events (``_sessions``)."""
        col = slot - self.offset
        out = _Exits(when)
        session = col < self.session_columns
        if session.all():
            p = np.arange(rows.size)
        else:
            p = np.flatnonzero(col == self.refuse_col)
            if p.size:
                r = rows[p]
                out.add(p, st.cell_refused[r].copy())
                st.next_event.reshape(-1)[r * eng.E + self.offset + self.refuse_col] = np.inf
            p = np.flatnonzero(~session & (col < self.refuse_col))
            if p.size:
                self._handovers(eng, st, inst, p, rows[p], col[p] - self.session_columns, when[p], out)
            p = np.arange(rows.size) if self.bulk else np.flatnonzero(session)
        if p.size:
            self._sessions(eng, st, p, rows[p], col[p], when[p], out)
        return out.result()

    def _sessions(self, eng, st, p, rows, s, when, out: _Exits) -> None:
        """Session events (an end or a CQI move). In bulk (``_bulk``): every event of the rows
        before their next other event, drops included. Else the one event due now, of session
        ``s``."""
        if self.bulk:
            self._bulk(eng, st, p, rows, when, out)
            return
        q = rows * self.S + s
        ending = st.cell_end.reshape(-1)[q] <= when
        if ending.any():
            e = np.flatnonzero(ending)
            self._leave(eng, st, out, p[e], rows[e], q[e], None, False)
        m = np.flatnonzero(~ending)
        if m.size:
            self._move(eng, st, p[m], rows[m], s[m], q[m], when[m], out)

    def _bulk(self, eng, st, p, rows, when, out: _Exits) -> None:
        """Rows (distinct) take at once every session event (CQI moves and ends) from ``when``
        to their next other event, up to the horizon, and the drops when a move pushes the
        PRBs in use above C. Sessions' channels are independent, so the order of their moves
        matters only through drops, which ``_overflows`` takes in time order: applying the
        moves together is exact. With no horizon (a drain) a row goes only to its next end."""
        horizon = st.horizon[rows]
        other = st.next_event[rows, self.offset + self.session_columns:self.offset + self.slots].min(1)
        endless = np.flatnonzero(np.isinf(horizon))
        if endless.size:
            other[endless] = np.minimum(other[endless], st.cell_end[rows[endless]].min(1))
        until = np.minimum(np.maximum(other, np.nextafter(when, np.inf)),  # the event due now goes (ties)
                           np.nextafter(horizon, np.inf))  # events at times < until
        i, q = self._due(st, rows, until)
        end = st.cell_end.reshape(-1)[q]
        tc0 = st.cell_type.reshape(-1)[q] * _LEVELS + st.cell_cqi.reshape(-1)[q]
        moves0 = st.cell_moves.reshape(-1)[q]
        table = self.table.reshape(-1)
        j, t, before, after, tc, moves, nxt = self._paths(tc0, moves0, st.cell_next.reshape(-1)[q],
                                                          st.cell_key.reshape(-1)[q], np.minimum(until[i], end))
        delta = table[after] - table[before]
        dropped, others = self._overflows(st, rows, q, until, i, j, t, delta, after, end, table[tc],
                                          table[before], tc0 // _LEVELS)
        if np.isfinite(dropped).any():  # a dropped UE's moves from then on are not applied
            late = np.flatnonzero(t >= dropped[j])
            first = np.full(q.size, j.size)
            np.minimum.at(first, j[late], late)  # a session's moves come in time order
            held = np.flatnonzero(first < j.size)
            tc[held], nxt[held] = before[first[held]], t[first[held]]
            moves -= np.bincount(j[late], minlength=q.size)
        r = rows[i]
        new = table[tc]
        if self.bands:
            self._recount(st, r, tc0, tc)
        st.cell_cqi.reshape(-1)[q] = tc % _LEVELS
        st.cell_moves.reshape(-1)[q] = moves
        st.cell_next.reshape(-1)[q] = nxt
        st.cell_used[rows] += np.bincount(i, new - table[tc0], rows.size).astype(np.int64)
        st.cell_demand.reshape(-1)[q] = new
        self._schedule(eng, st, r, q, np.minimum(end, nxt))
        gone = np.isfinite(dropped)
        e = np.flatnonzero(gone | (end < until[i]))  # ended or dropped
        vi, vq, vt = others  # victims with no event in the pass
        leaving = np.concatenate([i[e], vi])
        if leaving.size:
            self._leave(eng, st, out, p[leaving], rows[leaving], np.concatenate([q[e], vq]),
                        np.concatenate([np.where(gone[e], dropped[e], end[e]), vt]),
                        np.concatenate([gone[e], np.ones(vi.size, bool)]))
        self._next_session(st, rows)

    def _due(self, st, rows, until):
        """The sessions of ``rows`` (distinct) with events before ``until``: their
        rows' positions and flat slots, row by row. A pass of most rows compares every row
        (others against -inf): cheaper than gathering theirs."""
        S, B = self.S, st.cell_event.shape[0]
        if rows.size * _GATHER < B:
            k = np.flatnonzero(st.cell_event[rows] < until[:, None])
            i = k // S
            return i, rows[i] * S + (k - i * S)
        bound = np.full(B, -np.inf)
        bound[rows] = until
        q = np.flatnonzero(st.cell_event < bound[:, None])
        at = np.empty(B, np.int64)
        at[rows] = np.arange(rows.size)
        return at[q // S], q

    def _overflows(self, st, rows, q, until, i, j, t, delta, after, end, gone, held, typ):
        """The moves that push the PRBs in use of rows above C, in time order, and their drops.
        Events: the moves (session ``j``, time ``t``, demand change ``delta``, channel
        ``after``, the session's demand ``held`` before) and the ends before ``until`` (of
        sessions ``q`` of rows ``i``, of type ``typ``, freeing ``gone`` PRBs), on top of the
        PRBs in use. Where the rule drops the UE that grew (``drops_itself``), it leaves with
        what it held; else (``lowest_priority``) the victims are chosen among the UEs present
        then, as ``_drop`` does. Victims' later moves and ends go with them; the row goes on.
        Returns per session the time it is dropped (inf if not), and the victims with no event
        in the pass (row, flat session, time). Only rows whose every increase together
        could exceed C are put in time order."""
        used = st.cell_used[rows]
        dropped = np.full(i.size, np.inf)
        risky = used + np.bincount(i[j], np.maximum(delta, 0), until.size) > self.C
        if not risky.any():
            return dropped, _NO_VICTIMS
        m = np.flatnonzero(risky[i[j]])
        e = np.flatnonzero(risky[i] & (end < until[i]))
        row = np.concatenate([i[j[m]], i[e]])
        order = np.lexsort((np.concatenate([t[m], end[e]]), row))
        row, owner = row[order], np.concatenate([j[m], e])[order]
        time = np.concatenate([t[m], end[e]])[order]
        step = np.concatenate([delta[m], -gone[e]])[order]
        before = np.concatenate([held[m], np.zeros(e.size, np.int64)])[order]
        start = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
        length = np.diff(np.append(start, row.size))
        base = used[row]
        others: list[tuple[np.ndarray, ...]] = []
        gone_too = None  # (rows, S): victims with no event in the pass, once there are any
        while True:
            level = np.cumsum(step)
            level -= np.repeat(np.r_[0, level[start[1:] - 1]], length)
            high = np.flatnonzero(base + level > self.C)
            if not high.size:
                break
            firsts = high[np.r_[True, row[high[1:]] != row[high[:-1]]]]  # a move: ends never overflow
            itself = self.drops_itself[typ[owner[firsts]]]
            drop = firsts[itself]
            dropped[owner[drop]] = time[drop]
            step[drop] = -before[drop]  # the UE leaves with what it held
            f = firsts[~itself]
            if f.size:
                gone_too = np.zeros((rows.size, self.S), bool) if gone_too is None else gone_too
                freed = self._victims(st, rows, q, i, j, t, after, end, dropped, gone_too, others,
                                      row[f], time[f], owner[f], (base + level)[f])
                step[f] -= freed
            step[time > dropped[owner]] = 0  # victims' later moves and ends go with them
        if not others:
            return dropped, _NO_VICTIMS
        return dropped, tuple(np.concatenate(x) for x in zip(*others, strict=True))

    def _victims(self, st, rows, q, i, j, t, after, end, dropped, gone_too, others, ri, tau, g, level):
        """``lowest_priority``'s victims in rows ``ri`` (local) at the moves of sessions ``g``
        at ``tau`` that take them to ``level`` > C, among the UEs present then, one per row
        and round until the rest fit (as ``_drop``); sets ``dropped`` (sessions of the pass),
        ``gone_too`` and ``others`` (the rest). Returns the PRBs freed per row."""
        S = self.S
        r = rows[ri]
        occupied = (st.cell_job[r] >= 0) & ~gone_too[ri]
        demand = st.cell_demand[r]
        local = np.full((ri.size, S), -1)  # each slot's session in the pass
        at = np.full(rows.size, -1)
        at[ri] = np.arange(ri.size)
        mine = np.flatnonzero(at[i] >= 0)
        slot = q[mine] % S
        local[at[i[mine]], slot] = mine
        left = (end[mine] < tau[at[i[mine]]]) | (dropped[mine] < tau[at[i[mine]]])
        occupied[at[i[mine]][left], slot[left]] = False
        moved = np.flatnonzero(at[i[j]] >= 0)
        moved = moved[t[moved] <= tau[at[i[j[moved]]]]]
        last = np.full(i.size, -1)
        np.maximum.at(last, j[moved], moved)  # the channel each has at tau
        has = mine[last[mine] >= 0]
        demand[at[i[has]], q[has] % S] = self.table.reshape(-1)[after[last[has]]]
        pri = self.priority[st.cell_type[r]]
        start = st.cell_start[r]
        gs = q[g] % S
        freed = np.zeros(ri.size, np.int64)
        todo = np.arange(ri.size)
        while todo.size:
            v = _lowest_priority_victim(occupied[todo], pri[todo], start[todo], gs[todo])
            occupied[todo, v] = False
            freed[todo] += demand[todo, v]
            sess = local[todo, v]
            inside = sess >= 0
            dropped[sess[inside]] = tau[todo[inside]]
            out = todo[~inside]
            if out.size:
                gone_too[ri[out], v[~inside]] = True
                others.append((ri[out], r[out] * S + v[~inside], tau[out]))
            todo = todo[level[todo] - freed[todo] > self.C]
        return freed

    def _paths(self, tc, moves, nxt, key, until):
        """Every CQI move of sessions at times < ``until``: flat arrays (session, time, channel
        before, channel after), each session's moves in time order; and per session its
        channel after them, its moves so far and the time of its next move."""
        tc, moves, nxt = tc.copy(), moves.copy(), nxt.copy()
        found: list[tuple[np.ndarray, ...]] = []
        todo, k = np.flatnonzero(nxt < until), _CHUNK  # not those that only end
        while todo.size:
            path, times = self._chunk(tc[todo], moves[todo], nxt[todo], key[todo], k)
            take = times[:k] < until[todo]  # a prefix of each column: times increase
            n = take.sum(0)
            c, a = np.nonzero(take)  # move by move: a session's moves stay in time order
            found.append((todo[a], times[c, a], path[c, a], path[c + 1, a]))
            at = np.arange(todo.size)
            tc[todo] = path[n, at]
            moves[todo] += n
            nxt[todo] = times[n, at]
            todo, k = todo[n == k], 2 * k  # fewer sessions with more moves left
        if not found:
            return _EMPTY, np.empty(0), _EMPTY, _EMPTY, tc, moves, nxt
        j, t, before, after = (np.concatenate(x) for x in zip(*found, strict=True))
        return j, t, before, after, tc, moves, nxt

    def _chunk(self, tc, moves, nxt, key, k: int):
        """The next ``k`` moves of sessions' channels (``tc``: type * 16 + CQI), wherever they
        fall: the channel before them and after each (k + 1, n), and the times of these moves
        and of the one after (k + 1, n). Move j of a UE draws its direction from output 2j of
        its key and, after it, its wait from output 2j + 1."""
        u = channel_uniform(key, (2 * moves + np.arange(2, 2 * k + 2)[:, None]).astype(np.uint64))
        path = np.empty((k + 1, tc.size), np.int64)
        path[0] = tc
        for c in range(k):
            tc = self.turn[(u[2 * c] < self.p_up[tc]) * self.p_up.size + tc]
            path[c + 1] = tc
        times = np.empty((k + 1, tc.size))
        times[0] = nxt
        np.log(u[1::2], out=times[1:])
        times[1:] *= -self.mean_stay[path[1:]]
        return path, np.cumsum(times, 0, out=times)

    def _move(self, eng, st, p, rows, s, q, when, out: _Exits) -> None:
        """One CQI move of sessions ``q``; drops if the PRBs in use exceed C (a small cell)."""
        typ = st.cell_type.reshape(-1)[q]
        moves = st.cell_moves.reshape(-1)[q] + 1
        path, times = self._chunk(typ * _LEVELS + st.cell_cqi.reshape(-1)[q], moves - 1, when,
                                  st.cell_key.reshape(-1)[q], 1)
        cqi, nxt = path[1] % _LEVELS, times[1]
        if self.bands:
            self._recount(st, rows, path[0], path[1])
        st.cell_cqi.reshape(-1)[q] = cqi
        st.cell_moves.reshape(-1)[q] = moves
        st.cell_next.reshape(-1)[q] = nxt
        self._schedule(eng, st, rows, q, np.minimum(st.cell_end.reshape(-1)[q], nxt))
        demand = st.cell_demand.reshape(-1)
        new = self.table[typ, cqi]
        st.cell_used[rows] += new - demand[q]
        demand[q] = new
        over = np.flatnonzero(st.cell_used[rows] > self.C)
        if over.size:
            self._drop(eng, st, p, rows, s, q, when, over, out)

    def _drop(self, eng, st, p, rows, s, q, when, todo, out: _Exits) -> None:
        """Rows ``todo`` of a CQI move (of sessions ``s``) exceed C: drop by the cell's rule."""
        if self.cell.drop == "grown":
            self._leave(eng, st, out, p[todo], rows[todo], q[todo], when[todo], True)
            return
        while todo.size:  # lowest_priority: one victim per row and round until the rest fit
            r = rows[todo]
            v = r * self.S + _lowest_priority_victim(st.cell_job[r] >= 0, self.priority[st.cell_type[r]],
                                                     st.cell_start[r], s[todo])
            self._leave(eng, st, out, p[todo], r, v, when[todo], True)
            todo = todo[st.cell_used[r] > self.C]

    def _leave(self, eng, st, out: _Exits, p, rows, q, when, dropped) -> None:
        """The UEs of sessions ``q`` (flat) of ``rows`` (repeats allowed) leave at ``when``
        (None: the round's times), dropped where ``dropped`` (else their session ended), and
        free their slots."""
        jid = st.cell_job.reshape(-1)[q]
        out.add(p, jid, when)
        dropped = np.broadcast_to(dropped, jid.shape)
        st.cell_fate.reshape(-1)[rows[dropped] * eng.jobs.capacity + jid[dropped]] = DROPPED
        typ = st.cell_type.reshape(-1)[q]
        np.subtract.at(st.cell_used, rows, st.cell_demand.reshape(-1)[q])
        np.subtract.at(st.cell_ues.reshape(-1), rows * self.T + typ, 1)
        if self.bands:
            self._recount(st, rows, typ * _LEVELS + st.cell_cqi.reshape(-1)[q], None)
        st.cell_job.reshape(-1)[q] = -1
        st.cell_end.reshape(-1)[q] = np.inf
        st.cell_next.reshape(-1)[q] = np.inf
        self._schedule(eng, st, rows, q, np.inf)

    def _handovers(self, eng, st, inst, p, rows, h, when, out: _Exits) -> None:
        """Handover arrivals (real run only: a probe turns them off): the next one is drawn,
        the UE gets a job slot (not a decision) and is carried if it fits, else blocked."""
        rng = eng.rng
        for j, proc in enumerate(self.handovers):
            sel = np.flatnonzero(h == j)
            if sel.size:
                col = self.offset + self.session_columns + j
                st.next_event.reshape(-1)[rows[sel] * eng.E + col] = proc.next_after(rng, when[sel])
        typ = self.handover_types[h]
        session, cqi, key = self.draws.sample(rng, typ)
        jobs = eng.jobs
        i = inst[rows]
        if not jobs.free_count[i].all():
            jobs.grow()  # and the per-job arrays: an instance has no free slot
        jid = jobs.take(i)
        jobs.step[i, jid] = eng.t
        jobs.arrival_time[i, jid] = when
        jobs.job_class[i, jid] = typ
        jobs.action[i, jid] = 1
        jobs.service[i, jid, 0] = session
        jobs.wait[i, jid] = np.nan
        jobs.cqi0[i, jid] = cqi
        jobs.handover[i, jid] = True
        if key is not None:
            jobs.cqi_key[i, jid] = key
        else:
            key = np.zeros(rows.size, np.uint64)
        K = jobs.capacity
        st.cell_fate.reshape(-1)[rows * K + jid] = FINISHED
        fits = self._place(eng, st, inst, rows, jid, typ, cqi, key, session, when)
        if not fits.all():
            blocked = np.flatnonzero(~fits)
            st.cell_fate.reshape(-1)[rows[blocked] * K + jid[blocked]] = BLOCKED
            out.add(p[blocked], jid[blocked])

    def cancel(self, eng, st, inst, rows, jid, n, when):
        raise NotImplementedError("a cell holds no copies to cancel")
