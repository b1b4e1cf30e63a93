"""Two pools' dispatch (docs/systems/pools.md): the signalled pool, reroute or replicate after
tau, and the timers that fire it (the protocol of a dispatch rule: ``System.routing``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from envs.jobs import Column, SlotTable

if TYPE_CHECKING:
    from envs.spec import NetworkSpec

NONE, REROUTE, REPLICATE = 0, 1, 2
_POLICY_CODE = {"none": NONE, "reroute": REROUTE, "replicate": REPLICATE}


class PoolsDispatch:
    """Two FCFS pools (stations 0 and 1), job types with pool-dependent speeds, a first pool
    chosen on arrival and, after tau in service there, reroute or replicate (docs/systems/pools.md).

    Draws per job at arrival (job-table columns): ``ptype`` (its type), ``info`` (what the
    dispatcher knows: the type, the signal, or ``J`` = nothing), ``size`` X, ``size2`` X' (the
    fresh size of a restart), ``u`` (the uniform of the split). The placement (the rule or the
    action) fixes ``first``, ``policy``, ``tau`` and the work on each pool in ``service``:
    X / s_first on the first pool, X / s_other (restart same) or X' / s_other (fresh) on the
    other one.

    Timers are pending events of ``PoolTimers``: one column per server, aligned with the FCFS
    servers. ``started`` (the engine's service-start hook) arms the column of a server that
    starts a job on its first pool with a finite tau; firing checks that the same job still
    holds that server (a server that started another job re-armed or disarmed the column, an
    idle one holds none) and then: reroute = cancel it there (the server takes the next
    queued job) and arrive at the other pool; replicate = arrive a copy at the other pool. At
    the first completion ``cancel_siblings`` removes the other copy (``StationKind.cancel``).
    The copy or the rerouted job joins the back of the other pool's queue, or its front with
    ``queue: front`` (next in line: it then overlaps its original far more, docs/systems/pools.md).
    A timer is an event: one due at the instant a server is freed fires after the freed servers
    have taken their queued jobs (a tau-0 copy made as its original starts waits behind the job
    that the cancellation of the previous copy let in).

    ``preempt`` (a rescue): making a copy re-arms the same timer at + preempt; if the job is
    still in service on its first pool then and its copy still queued, the copy takes the server
    of the other pool that holds a job of that pool's own with the most work left
    (``FcfsKind.preempt``). That job waits at the front with its work so far in ``held``
    (``paused``, since ``paused_at``; its wait there so far in ``waited``); when it resumes,
    its ``service`` there is its whole work again (so server time and cancellations count it
    all), its wait there and ``wait_sum`` add the pause, and its timers restart (a rescue at
    + preempt, a timer not yet fired at + tau). A rescue needs a copy: replicate only.
    Server time used on each pool is left in ``service`` (a cancelled copy's entry becomes
    what it used), so ``Outcomes.service`` holds the per-pool server time and ``work`` their sum.

    ``timer: arrival``: the timer fires at arrival + tau if the job is then in service on its
    first pool, at the start of service if that is later (a job still queued at arrival + tau
    acts when it starts); tau = 0 places on arrival: reroute enters the other pool, replicate
    enters both queues, with no time spent on the first pool (at their backs: ``queue`` is about
    what a timer sends on).
    """

    draws_service = True
    cancels = True
    reports = False

    def __init__(self, spec: NetworkSpec):
        self.pools = pools = spec.block
        self.N = spec.num_stations  # 2
        self.J = pools.num_types
        self.p_cum = np.cumsum(pools.p)
        self.speed = np.asarray(pools.speeds, float)  # (2, J)
        self.actions = pools.actions
        self.act_pool = np.array([a.pool for a in pools.actions], np.int64)
        self.act_policy = np.array([_POLICY_CODE[a.policy] for a in pools.actions], np.int64)
        self.act_tau = np.array([a.tau for a in pools.actions], float)  # (A, 2) by first pool
        self.act_front = np.array([a.queue == "front" for a in pools.actions], bool)
        self.act_preempt = np.array([a.preempt for a in pools.actions], float)
        self.rescues = bool(np.isfinite(self.act_preempt).any())
        self.p1 = self._pool1_given_info()  # (J + 1,) P(first = pool 1 | info)
        self.arrival_timer = pools.timer == "arrival"
        self.fresh = pools.restart == "fresh"
        self.timed = bool(((self.act_policy != NONE) & np.isfinite(self.act_tau).any(1)).any())
        self.timers = None
        self.fcfs = None  # the pools' FCFS kind (a timer's copy may join the front of a queue)
        self.columns = (Column("ptype", (), np.int64), Column("info", (), np.int64), Column("size"),
                        Column("size2"), Column("u"), Column("first", (), np.int64),
                        Column("policy", (), np.int64), Column("tau"), Column("copied", (), bool, False),
                        Column("front", (), bool, False), Column("preempt", (), float, np.inf),
                        Column("held"), Column("paused", (), bool, False), Column("paused_at"), Column("waited"))

    def _pool1_given_info(self) -> np.ndarray:
        """P(first pool = pool 1) given the dispatcher's information (``Pools.pool1_given_info``)."""
        return self.pools.pool1_given_info()

    # ------------------------------------------------------------------ arrival
    def event_kinds(self, kinds, offset: int) -> list:
        """The timer block (none when no choice has a finite tau)."""
        self.fcfs = kinds[0]
        self.timers = PoolTimers(kinds[0], offset) if self.timed else None
        return [self.timers] if self.timed else []

    def draw(self, rng: np.random.Generator, jobs: SlotTable, slot: np.ndarray) -> None:
        pools, B, J = self.pools, jobs.rows, self.J
        every = np.arange(B)
        ptype = np.minimum(np.searchsorted(self.p_cum, rng.random(B), side="right"), J - 1)
        if pools.knowledge == "full":
            info = ptype
        elif pools.knowledge == "none":
            info = np.full(B, J)
        elif pools.knowledge == "signal":  # the type w.p. q, else one of the others uniformly
            other = (ptype + 1 + rng.integers(0, max(J - 1, 1), B)) % J if J > 1 else ptype
            info = np.where(rng.random(B) < pools.q, ptype, other)
        else:  # revealed for a fraction f
            info = np.where(rng.random(B) < pools.f, ptype, J)
        jobs.ptype[every, slot] = ptype
        jobs.info[every, slot] = info
        jobs.size[every, slot] = pools.size.sample(rng, B)
        if self.fresh:
            jobs.size2[every, slot] = pools.size.sample(rng, B)
        jobs.u[every, slot] = rng.random(B)

    def placements(self, jobs: SlotTable, inst: np.ndarray, slot: np.ndarray, action: np.ndarray | None) -> np.ndarray:
        """(R, 2) pools receiving the job now (-1: none); fixes its first pool, policy, tau and work."""
        action = np.zeros(inst.size, np.int64) if action is None else action
        forced = self.act_pool[action]
        by_rule = np.where(jobs.u[inst, slot] < self.p1[jobs.info[inst, slot]], 0, 1)
        first = np.where(forced >= 0, forced, by_rule)
        other = 1 - first
        policy = self.act_policy[action]
        tau = self.act_tau[action, first]
        tau = np.where(policy == NONE, np.inf, tau)
        ptype = jobs.ptype[inst, slot]
        x = jobs.size[inst, slot]
        work = np.empty((inst.size, 2))
        r = np.arange(inst.size)
        work[r, first] = x / self.speed[first, ptype]
        work[r, other] = (jobs.size2[inst, slot] if self.fresh else x) / self.speed[other, ptype]
        jobs.service[inst, slot] = work
        jobs.first[inst, slot] = first
        jobs.policy[inst, slot] = policy
        jobs.tau[inst, slot] = tau
        jobs.front[inst, slot] = self.act_front[action]
        if self.rescues:
            jobs.preempt[inst, slot] = self.act_preempt[action]
            jobs.held[inst, slot] = 0.0
            jobs.paused[inst, slot] = False
        places = np.stack([first, np.full(inst.size, -1)], 1)
        if self.arrival_timer:  # tau = 0 from arrival: act on arrival
            now = tau == 0.0
            rer, rep = now & (policy == REROUTE), now & (policy == REPLICATE)
            places[rer, 0] = other[rer]
            places[rep, 1] = other[rep]
            jobs.copied[inst, slot] = rep
            jobs.policy[inst[now], slot[now]] = NONE
            jobs.tau[inst[now], slot[now]] = np.inf
            return places
        jobs.copied[inst, slot] = False
        return places[:, :1]

    def after(self, jobs: SlotTable, at: np.ndarray) -> np.ndarray:
        return np.full(at.shape, self.N)  # a pool's completion is the job's departure

    def entry(self, jobs: SlotTable, inst: np.ndarray, slot: np.ndarray, action: np.ndarray | None) -> np.ndarray:
        raise ValueError("pools: a probe scores admission decisions; the pools system is controlled. "
                         "Fix: use objective response_time or deadline (no counterfactual needed).")

    # ------------------------------------------------------------------ hooks
    def started(self, eng, st, rows, jid, at, when) -> None:
        """Service-start hook: arm the server's timer for a job on its first pool with a finite
        tau not yet fired, or a rescue for a preempted job that resumes there."""
        if self.timers is None:
            return
        jobs, N = eng.jobs, self.N
        fk, n = np.divmod(at, N)
        first = n == jobs.first.reshape(-1)[fk]
        tau = jobs.tau.reshape(-1)[fk]
        copied = jobs.copied.reshape(-1)[fk]
        resumed = np.zeros(fk.size, bool)
        if self.rescues:
            resumed = first & jobs.paused.reshape(-1)[fk]
            if resumed.any():  # its work there is whole again (its end is already set); it waited since the pause
                i = np.flatnonzero(resumed)
                jobs.service.reshape(-1)[at[i]] += jobs.held.reshape(-1)[fk[i]]
                jobs.paused.reshape(-1)[fk[i]] = False
                sk = rows[i] * jobs.capacity + jid[i]
                paused = when[i] - jobs.paused_at.reshape(-1)[fk[i]]
                st.wait_sum.reshape(-1)[sk] += paused - (when[i] - st.since.reshape(-1)[sk])
                jobs.wait.reshape(-1)[at[i]] = jobs.waited.reshape(-1)[fk[i]] + paused
        arm = first & np.isfinite(tau) & (~copied | (resumed & np.isfinite(jobs.preempt.reshape(-1)[fk])))
        if not arm.any():
            return
        i = np.flatnonzero(arm)
        r, j, fk = rows[i], jid[i], fk[i]
        timers = self.timers
        srv = ((st.fcfs_job[r] == j[:, None]) & (timers.server_pool == n[i][:, None])).argmax(1)
        fire = (np.maximum(when[i], jobs.arrival_time.reshape(-1)[fk] + tau[i]) if self.arrival_timer
                else when[i] + tau[i])
        if self.rescues:
            fire = np.where(copied[i], when[i] + jobs.preempt.reshape(-1)[fk], fire)
        st.next_event.reshape(-1)[r * eng.E + timers.offset + srv] = fire
        st.timer_owner.reshape(-1)[r * timers.slots + srv] = jobs.step.reshape(-1)[fk]

    def fire(self, eng, st, inst, rows, jid, pool, when, srv) -> None:
        """Timers that fired for jobs ``jid`` in service on their first pool ``pool`` (servers
        ``srv``): a reroute, a copy, or the rescue of a job already copied."""
        jobs = eng.jobs
        fk = inst[rows] * jobs.capacity + jid
        if self.rescues:
            copied = jobs.copied.reshape(-1)[fk]
            if copied.any():
                i = np.flatnonzero(copied)
                self._rescue(eng, st, inst, rows[i], jid[i], 1 - pool[i], when[i])
                keep = np.flatnonzero(~copied)
                rows, jid, pool, when, srv, fk = rows[keep], jid[keep], pool[keep], when[keep], srv[keep], fk[keep]
        policy = jobs.policy.reshape(-1)[fk]
        rer = np.flatnonzero(policy == REROUTE)
        if rer.size:
            self._cancel(eng, st, inst, rows[rer], jid[rer], pool[rer], when[rer])
        rep = np.flatnonzero(policy == REPLICATE)
        if rep.size:
            jobs.copied.reshape(-1)[fk[rep]] = True
        self.fcfs.arrive(eng, st, inst, rows, jid, 1 - pool, when, front=jobs.front.reshape(-1)[fk])
        if self.rescues and rep.size:  # the same timer, again at + preempt
            pre = jobs.preempt.reshape(-1)[fk[rep]]
            arm = np.isfinite(pre)
            st.next_event.reshape(-1)[rows[rep][arm] * eng.E + self.timers.offset + srv[rep][arm]] = \
                when[rep][arm] + pre[arm]

    def _rescue(self, eng, st, inst, rows, jid, other, when) -> None:
        """Copies of jobs ``jid`` still queued at pools ``other`` take the server there whose
        own job (first pool ``other``) has the most work left; that job pauses (``held``)."""
        jobs, fcfs = eng.jobs, self.fcfs
        K, S = jobs.capacity, fcfs.slots
        held_by = st.fcfs_job[rows]  # (R, S) the job on each server, -1 idle
        there = fcfs.slot_station[None, :] == other[:, None]
        first = jobs.first.reshape(-1)[inst[rows][:, None] * K + np.maximum(held_by, 0)]
        own = there & (held_by >= 0) & (first == other[:, None])
        queued = ~((held_by == jid[:, None]) & there).any(1)
        go = np.flatnonzero(queued & own.any(1))
        if not go.size:
            return
        r = rows[go]
        srv = np.where(own[go], st.next_event[r, fcfs.offset:fcfs.offset + S], -np.inf).argmax(1)
        victim = held_by[go, srv]
        vk = inst[r] * K + victim
        at = vk * self.N + other[go]
        total = jobs.service.reshape(-1)[at]
        jobs.paused.reshape(-1)[vk] = True
        jobs.paused_at.reshape(-1)[vk] = when[go]
        jobs.waited.reshape(-1)[vk] = jobs.wait.reshape(-1)[at]
        jobs.held.reshape(-1)[vk] = total - fcfs.preempt(eng, st, inst, r, srv, jid[go], when[go])

    def _cancel(self, eng, st, inst, rows, jid, n, when) -> None:
        """Cancel the copies at pools ``n``; what they used replaces their work in ``service``
        (a paused job's ``held`` work included)."""
        jobs = eng.jobs
        K = jobs.capacity
        sk, fk = rows * K + jid, inst[rows] * K + jid
        before = st.cancelled_work.reshape(-1)[sk]
        eng.cancel(st, inst, rows, jid, n, when)
        if self.rescues:
            paused = jobs.paused.reshape(-1)[fk] & (n == jobs.first.reshape(-1)[fk])
            if paused.any():
                st.cancelled_work.reshape(-1)[sk[paused]] += jobs.held.reshape(-1)[fk[paused]]
                st.cancelled_started.reshape(-1)[sk[paused]] += 1
                jobs.paused.reshape(-1)[fk[paused]] = False
        used = st.cancelled_work.reshape(-1)[sk] - before
        jobs.service.reshape(-1)[fk * self.N + n] = used

    def cancel_siblings(self, eng, st, inst, rows, jid, n, when) -> None:
        """The first copy to finish cancels the other one (replicated jobs only)."""
        fk = inst[rows] * eng.jobs.capacity + jid
        m = np.flatnonzero(eng.jobs.copied.reshape(-1)[fk])
        if m.size:
            self._cancel(eng, st, inst, rows[m], jid[m], 1 - n[m], when[m])


class PoolTimers:
    """Event columns of the pools' timers, one per FCFS server (same order). Not a station:
    it serves no station, so it reports no finished job; firing hands the job to the rule."""

    name = "timers"
    job_arrays: tuple[str, ...] = ()
    exogenous = np.empty(0, np.int64)

    def __init__(self, fcfs, offset: int):
        if fcfs.offset != 0 or fcfs.name != "fcfs":
            raise ValueError("pools: the timers follow the FCFS servers of the two pools")
        self.fcfs_slots = fcfs.slots
        self.server_pool = fcfs.slot_station  # pool of each server
        self.slots = fcfs.slots
        self.offset = int(offset)
        fcfs.align(self.offset, "timer_owner")  # a timer moves with its server's job
        self.stations = np.zeros(0, np.int64)
        self._none = np.zeros(0, np.int64)

    def init_state(self, rows: int) -> dict[str, np.ndarray]:
        return {"timer_owner": np.full((rows, self.slots), -1, np.int64)}

    def handle(self, eng, st, inst, rows, slot, when):
        srv = slot - self.offset
        st.next_event.reshape(-1)[rows * eng.E + slot] = np.inf
        jid = st.fcfs_job.reshape(-1)[rows * self.fcfs_slots + srv]
        owner = st.timer_owner.reshape(-1)[rows * self.slots + srv]
        K = eng.jobs.capacity
        same = (jid >= 0) & (eng.jobs.step.reshape(-1)[inst[rows] * K + np.maximum(jid, 0)] == owner)
        if same.any():
            i = np.flatnonzero(same)
            eng.routing.fire(eng, st, inst, rows[i], jid[i], self.server_pool[srv[i]], when[i], srv[i])
        return self._none, self._none, self._none

    def waiting(self, st) -> np.ndarray:
        return np.zeros((st.next_event.shape[0], 0), np.int64)

    busy = waiting

    def clear(self, st, rows: np.ndarray) -> None:
        st.timer_owner[rows] = -1

    def start(self, eng, st, rows: np.ndarray) -> None:
        """Nothing to schedule before the first job."""
