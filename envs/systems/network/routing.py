"""A network's dispatch: the spec's entry probabilities and routing matrix (the protocol of a
dispatch rule: ``System.routing``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from envs.jobs import Column, SlotTable

if TYPE_CHECKING:
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
        B, N = jobs.rows, self.N
        fk = jobs.flat(np.arange(B), slot)
        jobs.entry.reshape(-1)[fk] = (self._entry_fixed if self._entry_fixed >= 0
                                      else np.searchsorted(self._entry_cum, rng.random(B), side="right"))
        if min(self._route_fixed) >= 0:  # a fixed route (a tandem): the same for every job
            flat = jobs.route.reshape(-1)
            for n, fixed in enumerate(self._route_fixed):
                flat[fk * N + n] = fixed
            return
        route = [np.full(B, fixed) if fixed >= 0 else
                 np.minimum(np.searchsorted(self._route_cum[n], rng.random(B), side="right"), N)
                 for n, fixed in enumerate(self._route_fixed)]
        jobs.route.reshape(-1, N)[fk] = np.stack(route, axis=1)

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
