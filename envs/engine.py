"""Batched, job-tracking simulator of feed-forward networks of stations of any kind.

B independent instances advance in lockstep, one decision (network arrival) at a time.
Between two arrivals each instance processes its own events in time order; all instances
do so together, one event per instance per NumPy operation, so the hot path has no Python
loop over instances or jobs.

* Pending events: one array ``next_event`` (B, E); each station kind (``envs.kinds``) owns
  a block of its columns. The earliest event of every instance is one argmin; the kind
  owning it handles it and reports jobs that finished at a station; the dispatch rule
  (``System.routing``) says where they go next.
* Every job's randomness (class, service at every station, route) is drawn when it
  arrives at the network, before the decision, into the job table (``envs.jobs``): a probe
  (``envs.probe``) therefore replays exactly what the real network would have drawn.
* Jobs live in the table (``envs.jobs.SlotTable``) at a slot of their instance taken from
  a free list: the slot is the job's id (``jid``) for life, its decision step a column.
  K doubles when an instance has no free slot. Memory is bounded by the jobs present,
  never by the run length or by how long a job stays, and no job is ever dropped.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from envs.arrivals import ClassArrivals
from envs.compiled import check_engine, default_engine
from envs.jobs import Column, SlotTable, extend
from envs.kinds.base import State
from envs.outcomes import Outcomes
from envs.probe import Probe

if TYPE_CHECKING:
    from envs.spec import NetworkSpec

# Arrivals the running mean of the gaps between them (``Engine.gap_mean``) remembers: an
# exponentially weighted mean, weight 1 / RATE_MEMORY on the newest gap. Its inverse is the
# arrival-rate estimate a controller may observe (``ObservationEncoding.rate``): what a real
# controller can compute from the arrivals it has seen, no oracle of the load.
RATE_MEMORY = 64


class CapacityError(RuntimeError):
    """The job table would outgrow its bound (``max_jobs`` per instance, or ``max_bytes`` for
    the table and the per-job clocks of all instances); raised instead of dropping any job."""


class JobsBoundError(CapacityError):
    """An instance would hold more than ``max_jobs`` jobs (a backlog, not the memory of many
    instances: what an evaluation may score as an overloaded policy)."""


class RecordWaits:
    """Observer of the real network: per-station waits go to the job table."""

    def __init__(self, eng: Engine):
        self.eng = eng

    def started(self, st, rows, jid, at, when, wait, service, end) -> None:
        self.eng.jobs.wait.reshape(-1)[at] = wait
        if self.eng.on_start is not None:
            self.eng.on_start(self.eng, st, rows, jid, at, when)


class Engine:
    """B instances of one network, stepped from arrival to arrival.

    Use: ``reset(seed)``; then repeatedly ``observe()``, decide, ``step(actions)``.
    """

    def __init__(self, spec: NetworkSpec, num_envs: int, seed: int | None = None,
                 capacity: int = 64, max_jobs: int = 1 << 16, max_bytes: int = 4 << 30,
                 exact_counterfactual: bool = False, start: float | np.ndarray = 0.0, probes: bool = True,
                 engine: str | None = None):
        """``probes`` False: a rejected job is reported at once, unscored (``success`` False), for
        users that never read a rejection's success (a cell's blocking reward and measures, a
        rule's tuning that reads acceptance and the constraint only); the probes are most of
        the simulation time (a cell in busy hours, a network at its thresholds).

        ``engine``: ``compiled`` runs the system's compiled event loop where it has one,
        ``numpy`` this module's loop (the reference); None: ``envs.compiled.default_engine()``.
        ``self.engine`` says which one runs."""
        if num_envs < 1:
            raise ValueError(f"num_envs: must be >= 1, got {num_envs}. Fix: give a positive number of instances.")
        self.spec = spec
        self.B = int(num_envs)
        self.N = spec.num_stations
        self.max_jobs = int(max_jobs)
        self.max_bytes = int(max_bytes)
        self._initial_capacity = int(capacity)
        self.routing = spec.system.routing()
        # generic hooks of a dispatch rule: its own event columns (timers) and service starts
        self.on_start = getattr(self.routing, "started", None)
        self.kinds = []
        self.station_kind = np.zeros(self.N, np.int64)
        offset = 0
        for name in dict.fromkeys(st.kind for st in spec.stations):
            members = [n for n, st in enumerate(spec.stations) if st.kind == name]
            kind = spec.system.station_class(name).build(spec, members, [spec.stations[n].servers for n in members], offset, self.N)
            self.station_kind[members] = len(self.kinds)
            self.kinds.append(kind)
            offset += kind.slots
        for kind in getattr(self.routing, "event_kinds", lambda kinds, offset: [])(list(self.kinds), offset):
            self.kinds.append(kind)  # serves no station: its handle reports no finished job
            offset += kind.slots
        self.E = offset
        self.slot_kind = np.concatenate([np.full(k.slots, i) for i, k in enumerate(self.kinds)])
        self.single_kind = self.kinds[0] if len(self.kinds) == 1 else None
        if self.single_kind is not None:  # one call less per event on the hot path
            self._single_arrive = functools.partial(self.single_kind.arrive, self)
        wanted = default_engine() if engine is None else check_engine(engine)
        self.kernel = spec.system.kernel(self) if wanted == "compiled" else None
        self.engine = "numpy" if self.kernel is None else "compiled"
        # per-job clocks that a probe must copy: waits, and with cancellation what the copies used
        self.job_arrays = ("since", "wait_sum") + (("cancelled_work", "cancelled_started") if self.routing.cancels
                                                   else ())
        self.job_arrays += tuple(a for kind in self.kinds for a in kind.job_arrays)  # e.g. a cell UE's fate
        self.exogenous = np.concatenate([kind.exogenous for kind in self.kinds])  # off in probes and drain
        self.d_ub = spec.class_deadlines()  # per job class
        self.columns = (Column("step", (), np.int64), Column("arrival_time"), Column("job_class", (), np.int64),
                        Column("action", (), np.int64),
                        Column("service", (self.N,)), Column("wait", (self.N,), np.float64, np.nan),
                        *self.routing.columns)
        self.probe = Probe(self, exact=exact_counterfactual, score=probes)
        self.every = np.arange(self.B)  # the identity map of instances (the real network's rows)
        # per-instance start times (e.g. spread over the period of an arrival profile, so that
        # instances are not in phase: drl_ac.evaluation.metrics.phase_offsets)
        self.start = np.broadcast_to(np.asarray(start, dtype=float), (self.B,)).copy()
        self.reset(seed)

    # ------------------------------------------------------------------ public API
    @property
    def capacity(self) -> int:
        """Current job-table size K per instance (grows on demand)."""
        return self.jobs.capacity

    def reset(self, seed: int | None = None) -> None:
        """Empty network; the clock advances to the first arrival."""
        if seed is not None or not hasattr(self, "rng"):
            self.rng = np.random.default_rng(seed)
        B, K = self.B, self._initial_capacity
        self.jobs = SlotTable(B, self.columns, K, on_grow=self._on_grow)
        arrays = {"next_event": np.full((B, self.E), np.inf)}
        arrays.update({name: np.zeros((B, K)) for name in self.job_arrays})
        for kind in self.kinds:
            arrays.update(kind.init_state(B))
        self.state = State(arrays, RecordWaits(self))
        for kind in self.kinds:
            kind.start(self, self.state, self.every)
        self.t = 0
        self.holding = np.zeros(B)  # jobs-in-system area over the last step
        self.arrivals = ClassArrivals(self.spec.arrival_processes())
        self.arrivals.reset(self.rng, B, self.start)
        self.now, self.arriving = self.arrivals.pop(self.rng)
        self.gap_mean = np.full(B, 1.0 / self.spec.arrival_rate)  # what a controller may estimate: RATE_MEMORY
        self._new_arrival()

    def empty_instances(self, rows: np.ndarray) -> None:
        """Empty the instances ``rows`` where they are: their jobs vanish unreported and their
        events stop (arrivals made inside a kind, a cell's handovers, too); the job arriving
        now keeps its slot and its draws, and arrivals go on."""
        rows = np.asarray(rows, np.int64)
        self.state.next_event[rows] = np.inf
        for kind in self.kinds:
            kind.clear(self.state, rows)
        self.jobs.clear(rows, keep=self.slot[rows])

    def reset_instances(self, rows: np.ndarray) -> None:
        """Empty the instances ``rows`` (their jobs vanish unreported); they restart at their
        start time (``start``, zero by default) with a fresh arrival, in step with the others."""
        rows = np.asarray(rows, np.int64)
        st = self.state
        self.empty_instances(rows)
        for kind in self.kinds:
            kind.start(self, st, rows)
        slot = self.slot[rows]
        fresh = ClassArrivals(self.arrivals.processes)
        fresh.reset(self.rng, rows.size, self.start[rows])
        self.now[rows], self.arriving[rows] = fresh.pop(self.rng)
        self.gap_mean[rows] = 1.0 / self.spec.arrival_rate
        self.arrivals.next_time[rows] = fresh.next_time
        self.jobs.arrival_time[rows, slot] = self.now[rows]
        self.jobs.job_class[rows, slot] = self.arriving[rows]

    def get_state(self) -> dict:
        """Everything the future depends on (arrays copied), for checkpoints and resume."""
        return {"t": self.t, "rng": self.rng.bit_generator.state, "now": self.now.copy(),
                "arriving": self.arriving.copy(), "arrivals": self.arrivals.get_state(), "gap_mean": self.gap_mean.copy(),
                "jobs": self.jobs.get_state(), "dynamics": {k: v.copy() for k, v in self.state.arrays().items()}}

    def set_state(self, state: dict) -> None:
        if state["now"].shape != (self.B,):
            raise ValueError(f"simulator state: saved for {state['now'].shape[0]} instances, not {self.B}. "
                             "Fix: resume with the same num_envs.")
        saved, fresh = state["dynamics"], self.state.arrays()  # some arrays grow (queues, job clocks)
        differ = sorted(saved.keys() ^ fresh.keys())
        if not differ and saved["next_event"].shape[1] != self.E:
            differ = ["next_event"]
        if differ:
            raise ValueError(f"simulator state: arrays {differ} are missing, extra or of another width here: "
                             "saved for another scenario or by another version of envs. Fix: resume with the "
                             "same scenario and version (a checkpoint's policy loads and runs without it).")
        self.t = int(state["t"])
        self.rng.bit_generator.state = state["rng"]
        self.now = np.array(state["now"])
        self.arriving = np.array(state["arriving"])
        self.arrivals.set_state(state["arrivals"])
        self.gap_mean = np.array(state.get("gap_mean", np.full(self.B, 1.0 / self.spec.arrival_rate)))  # older saves
        self.jobs.set_state(state["jobs"])
        self.slot = self.jobs.next_free()  # saved after the arrival's slot was chosen: no growth here
        self.state = State({k: np.array(v) for k, v in state["dynamics"].items()}, RecordWaits(self))

    def waiting(self) -> np.ndarray:
        """(B, N) jobs waiting (not in service) per station: the paper's state."""
        if self.single_kind is not None:  # it serves every station, in order
            return self.single_kind.waiting(self.state)
        return self._per_station("waiting")

    def busy(self) -> np.ndarray:
        """(B, N) servers in use per station."""
        return self._per_station("busy")

    def _per_station(self, what: str) -> np.ndarray:
        out = np.zeros((self.B, self.N), np.int64)
        for kind in self.kinds:
            out[:, kind.stations] = getattr(kind, what)(self.state)
        return out

    def observe(self, include_in_service: bool = False) -> np.ndarray:
        """Jobs waiting per station at the current arrival, float32 (B, N); with
        ``include_in_service`` the busy servers per station follow, (B, 2N)."""
        waiting = self.waiting().astype(np.float32)
        if not include_in_service:
            return waiting
        return np.concatenate([waiting, self.busy().astype(np.float32)], axis=1)

    def jobs_in_system(self) -> np.ndarray:
        """(B,) number of admitted jobs still in the network."""
        return self.jobs.capacity - self.jobs.free_count

    def step(self, action: np.ndarray) -> Outcomes:
        """Apply the decisions for the current arrivals, then advance every instance to its
        next arrival. Returns the outcomes that became known: the probes of the jobs rejected
        now and the departures of earlier admitted jobs. Sets ``holding``: the integral of
        the number of jobs in system over the step (Little's law: summed over steps, the jobs'
        total time in system)."""
        action = np.asarray(action, np.int64).reshape(self.B)
        parts: list[Outcomes] = []
        if self.spec.admission:
            rejected = np.flatnonzero(action == 0)
            if rejected.size:
                parts.append(self.probe.run(rejected))
            admitted = np.flatnonzero(action != 0)
        else:
            admitted = self.every
        if admitted.size:
            slot = self.jobs.take(admitted)
            self.jobs.action[admitted, slot] = action[admitted]
            self.insert(self.state, self.every, admitted, action[admitted])
        present = self.jobs_in_system()
        next_arrival, self.arriving = self.arrivals.pop(self.rng)
        exits: list = []
        self.run(self.state, self.every, next_arrival, self._depart(exits))
        self.holding = present * (next_arrival - self.now)
        self.gap_mean += (next_arrival - self.now - self.gap_mean) / RATE_MEMORY
        if exits:
            left = self._departures(exits)
            self.holding -= np.bincount(left.env, next_arrival[left.env] - left.departure_time, self.B)
            parts.append(left)
        self.now = next_arrival
        self.t += 1
        self._new_arrival()
        return Outcomes.concat(parts, self.N)

    def drain(self) -> Outcomes:
        """Serve every job in the network with no further arrivals (for tests and evaluation);
        arrivals made inside a kind (a cell's handovers) stop for good."""
        self.state.next_event[:, self.exogenous] = np.inf
        exits: list = []
        self.run(self.state, self.every, np.full(self.B, np.inf), self._depart(exits))
        return self._departures(exits) if exits else Outcomes.empty(self.N)

    def counterfactual(self, rows: np.ndarray) -> Outcomes:
        """The probe's outcome for the job arriving now at instances ``rows``, had it been
        admitted with no further arrivals (see ``envs.probe``)."""
        return self.probe.run(np.asarray(rows, np.int64))

    # ------------------------------------------------------------------ the loop
    def insert(self, st: State, inst: np.ndarray, rows: np.ndarray, action: np.ndarray | None) -> None:
        """Admit the job arriving now in ``rows`` of ``st`` (``action`` None: the drawn entry)."""
        if self.kernel is not None and self.kernel.insert is not None:
            self.kernel.insert(self, st, inst, rows, action)
            return
        jid = self.slot[inst[rows]]
        for name in self.job_arrays[1:]:  # totals start at zero; "since" is set on arrival
            getattr(st, name)[rows, jid] = 0.0
        places = self.routing.placements(self.jobs, inst[rows], jid, action)
        when = self.now[inst[rows]]
        if places.shape[1] == 1:
            self.arrive(st, inst, rows, jid, places[:, 0], when)
            return
        for j in range(places.shape[1]):
            m = np.flatnonzero(places[:, j] >= 0)
            if m.size:
                self.arrive(st, inst, rows[m], jid[m], places[m, j], when[m])

    def cancel(self, st: State, inst, rows, jid, n, when) -> None:
        """Remove the copies of jobs ``jid`` at stations ``n``; their work so far is counted."""
        kind_of = self.station_kind[n]
        K = self.jobs.capacity
        for i, kind in enumerate(self.kinds):
            m = np.flatnonzero(kind_of == i)
            if m.size:
                work, started = kind.cancel(self, st, inst, rows[m], jid[m], n[m], when[m])
                fk = rows[m] * K + jid[m]
                st.cancelled_work.reshape(-1)[fk] += work
                st.cancelled_started.reshape(-1)[fk] += started

    def arrive(self, st: State, inst, rows, jid, n, when) -> None:
        if self.kernel is not None:
            self.kernel.arrive(self, st, inst, rows, jid, n, when)
            return
        if self.single_kind is not None:
            self.single_kind.arrive(self, st, inst, rows, jid, n, when)
            return
        kind_of = self.station_kind[n]
        for i, kind in enumerate(self.kinds):
            m = np.flatnonzero(kind_of == i)
            if m.size:
                kind.arrive(self, st, inst, rows[m], jid[m], n[m], when[m])

    def run(self, st: State, inst: np.ndarray, horizon: np.ndarray, on_exit) -> None:
        """Process, per row and in time order, every event at time <= horizon.

        ``on_exit(rows, job_ids, last_station, time)`` is told of jobs leaving the network
        and returns a mask of those rows to stop (or None).
        """
        if self.kernel is not None:
            self.kernel.run(self, st, inst, horizon, on_exit)
            return
        # A finite horizon (the next arrival; a probe's deadline bound, which only moves by
        # finite amounts) already excludes idle rows (event time inf): one comparison less per event.
        bounded = not np.isinf(horizon).any()
        st.horizon = horizon  # kinds may apply several events of a row at once, never past it (a cell's CQI moves)
        first = st.next_event.min(1)
        rows = np.flatnonzero((first <= horizon) & np.isfinite(first))
        E = st.next_event.shape[1]
        while rows.size:
            ev = st.next_event[rows]
            slot = ev.argmin(1)
            when = ev.ravel()[np.arange(0, rows.size * E, E) + slot]
            due = when <= horizon[rows]
            if not bounded:
                due &= np.isfinite(when)
            if np.count_nonzero(due) < due.size:
                due = due.nonzero()[0]
                rows, slot, when = rows[due], slot[due], when[due]
                if not rows.size:
                    break
            stopped = self._event(st, inst, rows, slot, when, on_exit)
            if stopped is not None:
                rows = rows[~stopped]

    def _event(self, st: State, inst, rows, slot, when, on_exit):
        if self.single_kind is not None:
            idx, jid, n, w = _timed(self.single_kind.handle(self, st, inst, rows, slot, when), when)
        else:
            found = []
            kind_of = self.slot_kind[slot]
            for i, kind in enumerate(self.kinds):
                m = np.flatnonzero(kind_of == i)
                if m.size:
                    k_idx, k_jid, k_n, k_w = _timed(kind.handle(self, st, inst, rows[m], slot[m], when[m]), when[m])
                    found.append((m if k_idx is None else m[k_idx], k_jid, k_n, k_w))
            idx, jid, n, w = (np.concatenate(col) for col in zip(*found, strict=True))
        r = rows if idx is None else rows[idx]
        K = self.jobs.capacity
        nxt = self.routing.after(self.jobs, ((r if inst is self.every else inst[r]) * K + jid) * self.N + n)
        moving = nxt < self.N
        arrive = self.arrive if self.single_kind is None else self._single_arrive
        going = moving.nonzero()[0]
        if going.size == moving.size:
            arrive(st, inst, r, jid, nxt, w)
            return None
        if going.size:
            arrive(st, inst, r[going], jid[going], nxt[going], w[going])
        leaving = (~moving).nonzero()[0]
        if self.routing.cancels:
            self.routing.cancel_siblings(self, st, inst, r[leaving], jid[leaving], n[leaving], w[leaving])
        stop = on_exit(r[leaving], jid[leaving], n[leaving], w[leaving])
        if stop is None:
            return None
        stopped = np.zeros(rows.size, bool)
        stopped[(leaving if idx is None else idx[leaving])[stop]] = True
        return stopped

    # ------------------------------------------------------------------ jobs
    def _new_arrival(self) -> None:
        """Make room for and draw the attributes of the job arriving now in every instance."""
        jobs, rng, B, every = self.jobs, self.rng, self.B, self.every
        self.slot = slot = jobs.next_free()
        fk = jobs.flat(every, slot)
        jobs.step.reshape(-1)[fk] = self.t
        jobs.arrival_time.reshape(-1)[fk] = self.now
        jobs.job_class.reshape(-1)[fk] = self.arriving
        jobs.wait.reshape(-1, self.N)[fk] = np.nan
        if not self.routing.draws_service:
            jobs.service.reshape(-1, self.N)[fk] = np.stack([st.service.sample(rng, B) for st in self.spec.stations],
                                                            axis=1)
        self.routing.draw(rng, jobs, slot)

    def job_bytes(self, capacity: int) -> int:
        """Memory of the job table and the per-job clocks at ``capacity`` slots per instance."""
        per_slot = sum(np.dtype(c.dtype).itemsize * int(np.prod(c.shape, dtype=np.int64)) for c in self.columns)
        per_slot += 1 + 8 + 8 * len(self.job_arrays)  # live flag, free list, clocks
        return self.B * capacity * per_slot

    def _on_grow(self, new: int) -> None:
        if self.job_bytes(new) > self.max_bytes:
            live = self.jobs.live.sum(1)
            raise CapacityError(
                f"the job table would need {self.job_bytes(new) / 2**20:.0f} MiB for {self.B} instances (the "
                f"fullest holds {int(live.max())} jobs), above max_bytes={self.max_bytes}. Fix: the system is "
                f"probably unstable under this policy ({self.spec.system.overload_fix}, or check "
                "spec.stability_warning()); or use fewer instances, or raise max_bytes.")
        if new > self.max_jobs:
            live = self.jobs.live
            worst = int(np.argmax(live.sum(1)))
            raise JobsBoundError(
                f"instance {worst} holds {int(live[worst].sum())} jobs and the job table may not grow past "
                f"max_jobs={self.max_jobs}. Fix: the system is probably unstable under this policy "
                f"({self.spec.system.overload_fix}, or check spec.stability_warning()); or raise max_jobs.")
        for name in self.job_arrays:
            setattr(self.state, name, extend(getattr(self.state, name), new, 0.0))

    def job_delay(self, wait_sum: np.ndarray, sojourn: np.ndarray, last_service: np.ndarray) -> np.ndarray:
        """The spec's delay measure: the sojourn time, or the paper's waits plus last service."""
        return wait_sum + last_service if self.spec.delay == "paper" else sojourn

    def _depart(self, exits: list):
        """An exit handler for the real network. It only notes who left when; the rows are
        built once per step by ``_departures`` (one vectorized pass instead of one per event)."""
        def on_exit(rows, jid, n, when):
            exits.append((rows, jid, n, when))
            return None
        return on_exit

    def _departures(self, exits: list) -> Outcomes:
        """Outcome rows of the jobs that left, and free their table slots."""
        rows, jid, n, when = (np.concatenate(col) for col in zip(*exits, strict=True))
        if self.routing.reports:  # the system's own rows (a cell: success = not dropped)
            return self.routing.departures(self, rows, jid, n, when)
        if self.kernel is not None:
            return self.kernel.departures(self, rows, jid, n, when)
        jobs, N = self.jobs, self.N
        K = jobs.capacity
        fk = rows * K + jid
        arrived = jobs.arrival_time.reshape(-1)[fk]
        sojourn = when - arrived
        service = jobs.service.reshape(-1, N)[fk]
        delay = self.job_delay(self.state.wait_sum.reshape(-1)[fk], sojourn, service[np.arange(rows.size), n])
        wait = jobs.wait.reshape(-1, N)[fk]
        cls = jobs.job_class.reshape(-1)[fk]
        step = jobs.step.reshape(-1)[fk]
        jobs.release(rows, jid)
        served = np.where(np.isnan(wait), np.nan, service)
        if self.routing.cancels:  # the copy that finished, and what the cancelled ones used
            work = service[np.arange(rows.size), n] + self.state.cancelled_work.reshape(-1)[fk]
            copies = 1 + self.state.cancelled_started.reshape(-1)[fk].astype(np.int64)
        else:
            work, copies = np.nansum(served, 1), np.ones(rows.size, np.int64)
        return Outcomes(rows, step, jobs.action.reshape(-1)[fk], np.ones(rows.size, bool), delay < self.d_ub[cls],
                        delay, sojourn, arrived, when, cls, work, copies, wait, served)


def _timed(found: tuple, when: np.ndarray) -> tuple:
    """A kind's finished jobs (idx, jid, n) with their times: the event's, unless the kind
    gives them as a fourth array (it took several events of a row at once)."""
    if len(found) == 4:
        return found
    idx, jid, n = found
    return idx, jid, n, (when if idx is None else when[idx])

