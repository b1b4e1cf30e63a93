"""Dispatch rules: where an admitted job starts and where it goes after each station.

Kept apart from station kinds (a kind serves whatever reaches it). A rule declares the
job-table columns it draws at arrival, so a probe replays the same route. The protocol:

* ``columns``: per-job draws (``envs.jobs.Column``);
* ``draw(rng, jobs, slot)``: fill them for the job arriving now in every instance;
* ``entry(jobs, inst, slot, action)``: first station of admitted jobs under ``action``;
* ``after(jobs, at)``: next station of jobs leaving a station (N = exit); ``at`` is the
  flat index of (instance, job slot, station) in the job table's per-station columns.

Copy-to-d with cancellation fits as ``entry`` returning d stations per job (the engine
places each copy) and ``after`` cancelling siblings through the kinds' ``clear``-style
hooks; timers (reroute / replicate after tau) are extra event slots of a kind that
report the job to ``after`` as if it left. Neither changes the event loop.
"""

from __future__ import annotations

import numpy as np

from envs.jobs import Column, StepRing
from envs.spec import NetworkSpec


class ProbabilisticRouting:
    """The spec's entry probabilities and routing matrix (feed-forward), one draw per station
    at arrival. An action may name the entry station (``spec.actions``); "accept" keeps the
    drawn one."""

    def __init__(self, spec: NetworkSpec):
        self.N = spec.num_stations
        routing = np.asarray(spec.routing)
        self._route_cum = np.cumsum(routing, axis=1)
        self._route_fixed = [int(np.argmax(r)) if r.max() == 1.0 else -1 for r in routing]
        self._entry_cum = np.cumsum(spec.entry)
        self._entry_fixed = int(np.argmax(spec.entry)) if max(spec.entry) == 1.0 else -1
        self.action_entry = np.asarray(spec.action_entries(), np.int64)  # -1: the drawn entry
        self.columns = (Column("entry", (), np.int64), Column("route", (self.N,), np.int64))

    def draw(self, rng: np.random.Generator, jobs: StepRing, slot: int) -> None:
        B, N = jobs.rows, self.N
        jobs.entry[:, slot] = (self._entry_fixed if self._entry_fixed >= 0
                               else np.searchsorted(self._entry_cum, rng.random(B), side="right"))
        for n in range(N):
            fixed = self._route_fixed[n]
            jobs.route[:, slot, n] = (fixed if fixed >= 0 else
                                      np.minimum(np.searchsorted(self._route_cum[n], rng.random(B), side="right"), N))

    def entry(self, jobs: StepRing, inst: np.ndarray, slot: int, action: np.ndarray | None) -> np.ndarray:
        drawn = jobs.entry[inst, slot]
        if action is None:
            return drawn
        chosen = self.action_entry[action]
        return np.where(chosen >= 0, chosen, drawn)

    def after(self, jobs: StepRing, at: np.ndarray) -> np.ndarray:
        return jobs.route.reshape(-1)[at]

    def path_service(self, jobs: StepRing, inst: np.ndarray, slot: int, start: np.ndarray
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
