"""Dispatch rules: where an admitted job starts and where it goes after each station.

Kept apart from station kinds (a kind serves whatever reaches it). A rule declares the
job-table columns it draws at arrival, so a probe replays the same route. The protocol:

* ``columns``: per-job draws (``envs.jobs.Column``);
* ``draw(rng, jobs, slot)``: fill them for the job arriving now in every instance (its
  slot per instance);
* ``placements(jobs, inst, slot, action)``: (R, m) stations that receive a copy of each
  admitted job under ``action`` (-1: none), m = 1 for routing;
* ``after(jobs, at)``: next station of jobs leaving a station (N = exit); ``at`` is the
  flat index of (instance, job slot, station) in the job table's per-station columns.

Copy-to-d with cancellation (``CopyToD``) places d copies and, through
``cancel_siblings``, has the kinds ``cancel`` the other copies when one finishes; timers
(reroute / replicate after tau) are extra event columns of a kind that report the job to
``after`` as if it left. Neither changes the event loop.
"""

from __future__ import annotations

import numpy as np

from envs.jobs import Column, SlotTable
from envs.spec import NetworkSpec


class ProbabilisticRouting:
    """The spec's entry probabilities and routing matrix (feed-forward), one draw per station
    at arrival. An action may name the entry station (``spec.actions``); "accept" keeps the
    drawn one."""

    draws_service = False  # the stations' own service laws give each job's work
    cancels = False
    reports = False  # the engine builds the outcome rows (a rule with reports=True builds its own)

    def __init__(self, spec: NetworkSpec):
        self.N = spec.num_stations
        routing = np.asarray(spec.routing)
        self._route_cum = np.cumsum(routing, axis=1)
        self._route_fixed = [int(np.argmax(r)) if r.max() == 1.0 else -1 for r in routing]
        self._entry_cum = np.cumsum(spec.entry)
        self._entry_fixed = int(np.argmax(spec.entry)) if max(spec.entry) == 1.0 else -1
        self.action_entry = np.asarray(spec.action_entries(), np.int64)  # -1: the drawn entry
        self.columns = (Column("entry", (), np.int64), Column("route", (self.N,), np.int64))

    def draw(self, rng: np.random.Generator, jobs: SlotTable, slot: np.ndarray) -> None:
        B, N, every = jobs.rows, self.N, np.arange(jobs.rows)
        jobs.entry[every, slot] = (self._entry_fixed if self._entry_fixed >= 0
                                   else np.searchsorted(self._entry_cum, rng.random(B), side="right"))
        for n in range(N):
            fixed = self._route_fixed[n]
            jobs.route[every, slot, n] = (fixed if fixed >= 0 else
                                      np.minimum(np.searchsorted(self._route_cum[n], rng.random(B), side="right"), N))

    def entry(self, jobs: SlotTable, inst: np.ndarray, slot: np.ndarray, action: np.ndarray | None) -> np.ndarray:
        drawn = jobs.entry[inst, slot]
        if action is None:
            return drawn
        chosen = self.action_entry[action]
        return np.where(chosen >= 0, chosen, drawn)

    def placements(self, jobs: SlotTable, inst: np.ndarray, slot: np.ndarray, action: np.ndarray | None) -> np.ndarray:
        """(R, 1) station each admitted job enters (one copy)."""
        return self.entry(jobs, inst, slot, action)[:, None]

    def after(self, jobs: SlotTable, at: np.ndarray) -> np.ndarray:
        return jobs.route.reshape(-1)[at]

    def path_service(self, jobs: SlotTable, inst: np.ndarray, slot: np.ndarray, start: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """A job's total work along its drawn route from ``start``, and its last station's."""
        total = np.zeros(inst.size)
        last = np.zeros(inst.size)
        n = start.copy()
        active = np.ones(inst.size, bool)
        for _ in range(self.N):
            s = jobs.service[inst, slot, n]
            total += np.where(active, s, 0.0)
            nxt = jobs.route[inst, slot, n]
            ending = active & (nxt >= self.N)
            last[ending] = s[ending]
            active &= nxt < self.N
            n = np.where(active, nxt, n)
        return total, last


class CopyToD:
    """Redundancy-d over N single-server stations: a job is copied to d distinct servers
    chosen uniformly at random (d = the action's choice), every copy leaves the system when
    done, and the first to finish cancels the others (``cancel_siblings``), freeing their
    servers at once.

    Draws per job at arrival: a random order of the servers (the first d get copies) and
    the copy sizes by the joint law (identical, iid, or scaled X_i = S * Y_i), written into
    the job table's per-station ``service`` column so that every kind serves them as work.
    """

    draws_service = True
    cancels = True
    reports = False

    def __init__(self, spec: NetworkSpec):
        self.red = spec.redundancy
        self.N = spec.num_stations
        self.choices = np.asarray(self.red.choices, np.int64)  # d of each action
        self.columns = (Column("order", (self.N,), np.int64),)

    def draw(self, rng: np.random.Generator, jobs: SlotTable, slot: np.ndarray) -> None:
        B, N, red, every = jobs.rows, self.N, self.red, np.arange(jobs.rows)
        jobs.order[every, slot] = rng.random((B, N)).argsort(1)
        if red.copies == "identical":
            jobs.service[every, slot] = red.size.sample(rng, B)[:, None]
        elif red.copies == "iid":
            jobs.service[every, slot] = red.size.sample(rng, (B, N))
        else:
            jobs.service[every, slot] = red.scale.sample(rng, B)[:, None] * red.factor.sample(rng, (B, N))

    def copies(self, jobs: SlotTable, inst: np.ndarray, slot: np.ndarray, action: np.ndarray) -> np.ndarray:
        """(R, max d) servers holding a copy, -1 past each job's d."""
        d = self.choices[action]
        order = jobs.order[inst, slot][:, : int(self.choices.max())]
        return np.where(np.arange(order.shape[1]) < d[:, None], order, -1)

    def placements(self, jobs: SlotTable, inst: np.ndarray, slot: np.ndarray, action: np.ndarray | None) -> np.ndarray:
        if action is None:
            raise ValueError("redundancy: a job needs its replication degree (an action) to be placed")
        return self.copies(jobs, inst, slot, action)

    def after(self, jobs: SlotTable, at: np.ndarray) -> np.ndarray:
        return np.full(at.shape, self.N)  # a finished copy is the job's departure

    def cancel_siblings(self, eng, st, inst, rows, jid, n, when) -> None:
        """Remove the other copies of the jobs that just finished at stations ``n``."""
        jobs = eng.jobs
        fk = inst[rows] * jobs.capacity + jid
        order = jobs.order.reshape(-1, self.N)[fk]
        d = self.choices[jobs.action.reshape(-1)[fk]]
        for j in range(int(self.choices.max())):
            s = order[:, j]
            m = np.flatnonzero((j < d) & (s != n))
            if m.size:
                eng.cancel(st, inst, rows[m], jid[m], s[m], when[m])


def make_routing(spec: NetworkSpec):
    """The dispatch rule a spec describes: a cell's, copy-to-d (redundancy), or routing."""
    if spec.cell is not None:
        from envs.kinds.cell import CellDispatch
        return CellDispatch(spec)
    return CopyToD(spec) if spec.redundancy is not None else ProbabilisticRouting(spec)
