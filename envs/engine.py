"""Batched, job-tracking simulator of feed-forward networks of multi-server FCFS stations.

B independent network instances advance in lockstep, one decision (network arrival)
at a time. Between two arrivals each instance processes its own service completions in
time order; all instances do so together, one event per instance per NumPy operation,
so the hot path has no Python loop over instances or jobs.

Design, and why it is exact:
* The only events besides arrivals are service completions, one per busy server, so
  the pending-event set of an instance is a fixed (S,) array of completion times
  (S = total servers). The earliest is found with one argmin over (B, S).
* Waiting jobs sit in one FIFO ring buffer per station. A job that arrives at a
  station takes a free server if one exists, else joins the tail; a freed server takes
  the head. Events of one instance are processed in time order, so a job that overtakes
  another at a multi-server station also arrives (and is served) first downstream.
* Every job's randomness (entry station, service time at every station, route) is drawn
  when it arrives at the network, before the decision. The counterfactual of a rejected
  job therefore replays exactly the service draws the real network would have used.
* Jobs live in a table indexed by ``decision step % K``. If a slot is still occupied
  when its turn comes again, K doubles (ids keep their order); memory is bounded by the
  jobs present, never by the run length, and no job is ever dropped.

Adding a station type (processor sharing, loss stations, redundancy): a station type
owns how an arrival is placed (``_arrive``), what a completion frees (``_complete``) and
its next event time (the server completion array). Jobs' per-station draws already live
in the job table, so classes or replicas add columns there, not a new engine.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from envs.spec import NetworkSpec


class CapacityError(RuntimeError):
    """An instance holds more jobs than ``max_jobs``; raised instead of dropping any."""


@dataclass
class Completions:
    """Outcomes that became known during one step, one row per decision.

    ``delay`` uses the spec's delay measure; for a rejected job it is the counterfactual
    delay, ``inf`` when the fast-forward stopped early because the deadline was already
    missed. ``wait``/``service`` are (M, N) per-station times (NaN: not visited or rejected).
    """

    env: np.ndarray
    step: np.ndarray
    accepted: np.ndarray
    delay: np.ndarray
    sojourn: np.ndarray
    arrival_time: np.ndarray
    departure_time: np.ndarray
    wait: np.ndarray
    service: np.ndarray

    def __len__(self) -> int:
        return int(self.env.size)

    def info(self) -> dict[str, np.ndarray]:
        """The 1-D columns, as given to users in ``info["completed"]``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name).ndim == 1}

    @staticmethod
    def concat(parts: list[Completions], num_stations: int) -> Completions:
        if not parts:
            empty = np.empty(0)
            return Completions(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, bool),
                               empty, empty, empty, empty, np.empty((0, num_stations)), np.empty((0, num_stations)))
        return Completions(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Completions)))


@dataclass
class _Tag:
    """Book-keeping of a counterfactual: the job followed, each row's latest time at which
    the next event may still matter (tightened as the job starts its services), and the
    outcome once the job starts service at its last station."""

    job: int
    horizon: np.ndarray
    departure: np.ndarray
    wait_sum: np.ndarray


@dataclass
class _Dynamics:
    """The mutable state of some instances: servers, queues, and per-job timing.

    A counterfactual works on a copy of these rows only (``take``); the job draws are
    shared read-only with the real network.
    """

    server_done: np.ndarray  # (R, S) completion time, inf when idle
    server_job: np.ndarray  # (R, S) id of the job in service, -1 when idle
    q_buf: np.ndarray  # (R, N, Q) ring buffers of waiting job ids
    q_head: np.ndarray  # (R, N)
    q_len: np.ndarray  # (R, N)
    since: np.ndarray  # (R, K) time the job arrived at its current station
    wait_sum: np.ndarray  # (R, K) total wait so far
    tag: _Tag | None = None  # set on counterfactual copies only

    @classmethod
    def arrays(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name != "tag"]

    def take(self, rows: np.ndarray) -> _Dynamics:
        return _Dynamics(*(getattr(self, name)[rows] for name in self.arrays()))

    def grow_queues(self) -> None:
        """Double the ring buffers, unrolling each so that its head is at 0."""
        q = self.q_buf.shape[2]
        order = (self.q_head[:, :, None] + np.arange(q)) % q
        buf = np.full(self.q_buf.shape[:2] + (2 * q,), -1, dtype=self.q_buf.dtype)
        buf[:, :, :q] = np.take_along_axis(self.q_buf, order, axis=2)
        self.q_buf = buf
        self.q_head[:] = 0


class QueueNetworkSim:
    """B instances of one network, stepped from arrival to arrival.

    Use: ``reset(seed)``; then repeatedly ``observe()``, decide, ``step(accept)``.
    """

    def __init__(self, spec: NetworkSpec, num_envs: int, seed: int | None = None,
                 capacity: int = 64, max_jobs: int = 1 << 16, exact_counterfactual: bool = False):
        if num_envs < 1:
            raise ValueError(f"num_envs: must be >= 1, got {num_envs}. Fix: give a positive number of instances.")
        self.spec = spec
        self.B = int(num_envs)
        self.N = spec.num_stations
        self.server_station = np.repeat(np.arange(self.N), spec.servers)
        self.station_first_server = np.concatenate([[0], np.cumsum(spec.servers)[:-1]])
        self.S = int(self.server_station.size)
        self.max_jobs = int(max_jobs)
        self.exact_counterfactual = exact_counterfactual
        self._initial_capacity = int(capacity)
        routing = np.asarray(spec.routing)
        self._route_cum = np.cumsum(routing, axis=1)
        self._route_fixed = [int(np.argmax(r)) if r.max() == 1.0 else -1 for r in routing]
        self._entry_cum = np.cumsum(spec.entry)
        self._entry_fixed = int(np.argmax(spec.entry)) if max(spec.entry) == 1.0 else -1
        self._all = np.arange(self.B)
        self.reset(seed)

    # ------------------------------------------------------------------ public API
    @property
    def capacity(self) -> int:
        """Current job-table size K per instance (grows on demand)."""
        return self.job_id.shape[1]

    def reset(self, seed: int | None = None) -> None:
        """Empty network; the clock advances to the first arrival."""
        if seed is not None or not hasattr(self, "rng"):
            self.rng = np.random.default_rng(seed)
        B, N, K, S = self.B, self.N, self._initial_capacity, self.S
        self.state = _Dynamics(
            server_done=np.full((B, S), np.inf), server_job=np.full((B, S), -1, np.int64),
            q_buf=np.full((B, N, 16), -1, np.int64), q_head=np.zeros((B, N), np.int64),
            q_len=np.zeros((B, N), np.int64), since=np.zeros((B, K)), wait_sum=np.zeros((B, K)))
        self.job_id = np.tile(np.arange(K, dtype=np.int64) - K, (B, 1))
        self.arrival_time = np.zeros((B, K))
        self.entry = np.zeros((B, K), np.int64)
        self.service = np.zeros((B, K, N))
        self.route = np.zeros((B, K, N), np.int64)
        self.wait = np.full((B, K, N), np.nan)
        self.occupied = np.zeros((B, K), bool)
        self.t = 0
        self.now = self.spec.arrival.sample(self.rng, B)
        self._new_arrival()

    _JOB_ARRAYS = ("job_id", "arrival_time", "entry", "service", "route", "wait", "occupied", "now")

    def get_state(self) -> dict:
        """Everything the future depends on (arrays copied), for checkpoints and resume."""
        return {"t": self.t, "rng": self.rng.bit_generator.state,
                "jobs": {k: getattr(self, k).copy() for k in self._JOB_ARRAYS},
                "dynamics": {name: getattr(self.state, name).copy() for name in _Dynamics.arrays()}}

    def set_state(self, state: dict) -> None:
        if state["jobs"]["now"].shape != (self.B,) or state["dynamics"]["server_done"].shape[1] != self.S:
            raise ValueError("simulator state: saved for a different number of instances or servers. "
                             "Fix: resume with the same scenario and num_envs.")
        self.t = int(state["t"])
        self.rng.bit_generator.state = state["rng"]
        for k in self._JOB_ARRAYS:
            setattr(self, k, np.array(state["jobs"][k]))
        self.state = _Dynamics(**{k: np.array(v) for k, v in state["dynamics"].items()})

    def observe(self, include_in_service: bool = False) -> np.ndarray:
        """Jobs waiting (not in service) per station at the current arrival: the paper's state.

        With ``include_in_service`` the busy-server counts per station follow, (B, 2N).
        """
        waiting = self.state.q_len.astype(np.float32)
        if not include_in_service:
            return waiting
        busy = np.add.reduceat(np.isfinite(self.state.server_done), self.station_first_server, axis=1)
        return np.concatenate([waiting, busy.astype(np.float32)], axis=1)

    def jobs_in_system(self) -> np.ndarray:
        """(B,) number of admitted jobs still in the network."""
        return self.occupied.sum(1)

    def step(self, accept: np.ndarray) -> Completions:
        """Apply the decisions for the current arrivals, then advance every instance to its
        next arrival. Returns the outcomes that became known: the counterfactuals of the
        jobs rejected now and the departures of earlier accepted jobs."""
        accept = np.asarray(accept).astype(bool).reshape(self.B)
        parts: list[Completions] = []
        rejected = np.flatnonzero(~accept)
        if rejected.size:
            parts.append(self.counterfactual(rejected))
        admitted = np.flatnonzero(accept)
        if admitted.size:
            slot = self.t % self.capacity
            self.occupied[admitted, slot] = True
            self.state.wait_sum[admitted, slot] = 0.0
            self._arrive(self.state, self._all, admitted, np.full(admitted.size, self.t),
                         self.entry[admitted, slot], self.now[admitted])
        next_arrival = self.now + self.spec.arrival.sample(self.rng, self.B)
        exits: list = []
        self._run(self.state, self._all, next_arrival, self._depart(exits))
        if exits:
            parts.append(self._departures(exits))
        self.now = next_arrival
        self.t += 1
        self._new_arrival()
        return Completions.concat(parts, self.N)

    def drain(self) -> Completions:
        """Serve every job in the network with no further arrivals (for tests and evaluation)."""
        exits: list = []
        self._run(self.state, self._all, np.full(self.B, np.inf), self._depart(exits))
        return Completions.concat([self._departures(exits)] if exits else [], self.N)

    def counterfactual(self, rows: np.ndarray) -> Completions:
        """Fast-forward (the paper's simulated environment): for the instances ``rows``, the
        delay the current job would have had if admitted now with no further arrivals.

        Works on a copy of those rows' servers and queues only. An instance stops as soon as
        the outcome is known: when the job starts service at its last station (its departure
        is then fixed), or, unless built with ``exact_counterfactual=True``, when even serving
        it without any further wait could no longer meet the deadline (delay reported as inf).
        """
        rows = np.asarray(rows, np.int64)
        R, slot, t = rows.size, self.t % self.capacity, self.t
        local = np.arange(R)
        clone = self.state.take(rows)
        clone.wait_sum[local, slot] = 0.0
        start = self.now[rows]
        total, last = self._path_service(rows, slot)
        if self.exact_counterfactual:
            horizon = np.full(R, np.inf)
        else:  # the job misses iff its total wait exceeds d_ub minus the service the measure counts
            horizon = start + self.spec.d_ub - (total if self.spec.delay == "sojourn" else last)
        clone.tag = _Tag(t, horizon, np.full(R, np.inf), np.zeros(R))
        self._arrive(clone, rows, local, np.full(R, t), self.entry[rows, slot], start)
        self._run(clone, rows, horizon, lambda *_: None)
        done, sojourn = clone.tag.departure, clone.tag.departure - start
        delay = np.where(np.isfinite(done), sojourn if self.spec.delay == "sojourn" else clone.tag.wait_sum + last,
                         np.inf)
        nan = np.full((R, self.N), np.nan)
        return Completions(rows.copy(), np.full(R, t, np.int64), np.zeros(R, bool), delay,
                           sojourn, start.copy(), done, nan, nan.copy())

    # ------------------------------------------------------------------ internals
    def _delay(self, wait_sum, sojourn, inst, slot, last_station):
        if self.spec.delay == "paper":
            return wait_sum + self.service[inst, slot, last_station]
        return sojourn

    def _path_service(self, rows: np.ndarray, slot: int) -> tuple[np.ndarray, np.ndarray]:
        """The current job's total service along its drawn route, and its last station's."""
        total = np.zeros(rows.size)
        n = self.entry[rows, slot]
        active = np.ones(rows.size, bool)
        last = np.zeros(rows.size)
        for _ in range(self.N):
            s = self.service[rows, slot, n]
            total += np.where(active, s, 0.0)
            nxt = self.route[rows, slot, n]
            ending = active & (nxt >= self.N)
            last[ending] = s[ending]
            active &= nxt < self.N
            n = np.where(active, nxt, n)
        return total, last

    def _new_arrival(self) -> None:
        """Make room for and draw the attributes of the job arriving now in every instance."""
        while self.occupied[:, self.t % self.capacity].any():
            self._grow_jobs()
        B, N, slot, rng = self.B, self.N, self.t % self.capacity, self.rng
        self.job_id[:, slot] = self.t
        self.arrival_time[:, slot] = self.now
        self.wait[:, slot] = np.nan
        self.entry[:, slot] = (self._entry_fixed if self._entry_fixed >= 0
                               else np.searchsorted(self._entry_cum, rng.random(B), side="right"))
        for n, st in enumerate(self.spec.stations):
            self.service[:, slot, n] = st.service.sample(rng, B)
            fixed = self._route_fixed[n]
            self.route[:, slot, n] = (fixed if fixed >= 0 else
                                      np.minimum(np.searchsorted(self._route_cum[n], rng.random(B), side="right"), N))

    def _grow_jobs(self) -> None:
        old = self.capacity
        new = 2 * old
        if new > self.max_jobs:
            worst = int(np.argmax(self.occupied.sum(1)))
            raise CapacityError(
                f"instance {worst} holds {int(self.occupied[worst].sum())} jobs (oldest admitted "
                f"{old} decisions ago) and the job table may not grow past max_jobs={self.max_jobs}. "
                "Fix: the network is probably unstable under this policy (reject more, or check the "
                "spec's loads with spec.utilization()); or raise max_jobs.")
        pos = self.job_id % new  # distinct within an instance, since old slots are distinct mod old

        def remap(a: np.ndarray, fill) -> np.ndarray:
            out = np.full((a.shape[0], new) + a.shape[2:], fill, dtype=a.dtype)
            idx = pos.reshape(pos.shape + (1,) * (a.ndim - 2))
            np.put_along_axis(out, np.broadcast_to(idx, a.shape), a, axis=1)
            return out

        ids = remap(self.job_id, 0)
        # Slots no old job maps to get ids that are congruent to them and in the past.
        unused = ~remap(np.ones_like(self.occupied), False)
        ids[unused] = (np.arange(new) - 2 * new)[np.nonzero(unused)[1]]
        self.job_id = ids
        self.arrival_time = remap(self.arrival_time, 0.0)
        self.entry = remap(self.entry, 0)
        self.service = remap(self.service, 0.0)
        self.route = remap(self.route, 0)
        self.wait = remap(self.wait, np.nan)
        self.occupied = remap(self.occupied, False)
        self.state.since = remap(self.state.since, 0.0)
        self.state.wait_sum = remap(self.state.wait_sum, 0.0)

    def _run(self, st: _Dynamics, inst: np.ndarray, horizon: np.ndarray, on_exit) -> None:
        """Process, per row and in time order, every service completion at time <= horizon.

        ``on_exit(rows, job_ids, last_station, time)`` is told of jobs leaving the network
        and returns a mask of those rows to stop (or None).
        """
        first = st.server_done.min(1)
        rows = np.flatnonzero((first <= horizon) & np.isfinite(first))
        while rows.size:
            done = st.server_done[rows]
            srv = done.argmin(1)
            when = done[np.arange(rows.size), srv]
            due = (when <= horizon[rows]) & np.isfinite(when)
            if not due.all():
                rows, srv, when = rows[due], srv[due], when[due]
                if not rows.size:
                    break
            stopped = self._complete(st, inst, rows, srv, when, on_exit)
            if stopped is not None:
                rows = rows[~stopped]

    # The event handlers index with flat positions into reshaped views: NumPy gathers and
    # scatters with one index array are markedly faster than with two or three.
    def _complete(self, st, inst, rows, srv, when, on_exit):
        K, N, S = self.capacity, self.N, self.S
        fs = rows * S + srv
        done, jobs = st.server_done.reshape(-1), st.server_job.reshape(-1)
        jid = jobs[fs]
        n = self.server_station[srv]
        nxt = self.route.reshape(-1)[(inst[rows] * K + jid % K) * N + n]
        done[fs] = np.inf
        jobs[fs] = -1
        fq = rows * N + n
        queued = st.q_len.reshape(-1)[fq] > 0
        if queued.all():
            self._start(st, inst, rows, srv, self._pop(st, fq), n, when)
        elif queued.any():
            self._start(st, inst, rows[queued], srv[queued], self._pop(st, fq[queued]), n[queued], when[queued])
        moving = nxt < N
        if moving.all():
            self._arrive(st, inst, rows, jid, nxt, when)
            return None
        if moving.any():
            self._arrive(st, inst, rows[moving], jid[moving], nxt[moving], when[moving])
        leaving = np.flatnonzero(~moving)
        stop = on_exit(rows[leaving], jid[leaving], n[leaving], when[leaving])
        if stop is None:
            return None
        stopped = np.zeros(rows.size, bool)
        stopped[leaving[stop]] = True
        return stopped

    def _start(self, st, inst, rows, srv, jid, n, when) -> None:
        K, N = self.capacity, self.N
        fk = rows * K + jid % K
        fj = (inst[rows] * K + jid % K) * N + n
        w = when - st.since.reshape(-1)[fk]
        st.wait_sum.reshape(-1)[fk] += w
        if st is self.state:
            self.wait.reshape(-1)[fj] = w
        fs = rows * self.S + srv
        service = self.service.reshape(-1)[fj]
        st.server_done.reshape(-1)[fs] = when + service
        st.server_job.reshape(-1)[fs] = jid
        if st.tag is not None:
            self._tagged_started(st, inst, rows, jid, n, when, service)

    def _tagged_started(self, st: _Dynamics, inst, rows, jid, n, when, service) -> None:
        """The followed job starts a service: its deadline bound loosens by that service,
        and at its last station its departure is fixed, which ends the row's fast-forward."""
        tag = st.tag
        mine = jid == tag.job
        if not mine.any():
            return
        r = rows[mine]
        tag.horizon[r] += service[mine]
        final = self.route[inst[r], tag.job % self.capacity, n[mine]] >= self.N
        if final.any():
            rf = r[final]
            tag.departure[rf] = when[mine][final] + service[mine][final]
            tag.wait_sum[rf] = st.wait_sum[rf, tag.job % self.capacity]
            tag.horizon[rf] = -np.inf

    def _arrive(self, st, inst, rows, jid, n, when) -> None:
        st.since.reshape(-1)[rows * self.capacity + jid % self.capacity] = when
        free = np.isinf(st.server_done[rows]) & (self.server_station == n[:, None])
        srv = free.argmax(1)
        has_free = free[np.arange(rows.size), srv]
        if has_free.all():
            self._start(st, inst, rows, srv, jid, n, when)
            return
        if has_free.any():
            self._start(st, inst, rows[has_free], srv[has_free], jid[has_free], n[has_free], when[has_free])
        wait = ~has_free
        self._push(st, rows[wait] * self.N + n[wait], jid[wait])

    @staticmethod
    def _push(st: _Dynamics, fq, jid) -> None:
        length = st.q_len.reshape(-1)
        if (length[fq] >= st.q_buf.shape[2]).any():
            st.grow_queues()
        q = st.q_buf.shape[2]
        st.q_buf.reshape(-1)[fq * q + (st.q_head.reshape(-1)[fq] + length[fq]) % q] = jid
        length[fq] += 1

    @staticmethod
    def _pop(st: _Dynamics, fq) -> np.ndarray:
        q = st.q_buf.shape[2]
        heads = st.q_head.reshape(-1)
        head = heads[fq]
        jid = st.q_buf.reshape(-1)[fq * q + head]
        heads[fq] = (head + 1) % q
        st.q_len.reshape(-1)[fq] -= 1
        return jid

    def _depart(self, parts: list[Completions]):
        """An exit handler for the real network. It only notes who left when; the rows are
        built once per step by ``_departures`` (one vectorized pass instead of one per event)."""
        def on_exit(rows, jid, n, when):
            parts.append((rows, jid, n, when))
            return None
        return on_exit

    def _departures(self, exits: list) -> Completions:
        """Outcome rows of the jobs that left, and free their table slots."""
        rows, jid, n, when = (np.concatenate(col) for col in zip(*exits, strict=True))
        K, N = self.capacity, self.N
        slot = jid % K
        fk = rows * K + slot
        arrived = self.arrival_time.reshape(-1)[fk]
        sojourn = when - arrived
        delay = self._delay(self.state.wait_sum.reshape(-1)[fk], sojourn, rows, slot, n)
        wait = self.wait.reshape(-1, N)[fk]
        service = np.where(np.isnan(wait), np.nan, self.service.reshape(-1, N)[fk])
        self.occupied.reshape(-1)[fk] = False
        return Completions(rows, jid, np.ones(rows.size, bool), delay, sojourn, arrived, when, wait, service)
