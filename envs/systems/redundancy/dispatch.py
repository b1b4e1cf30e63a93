"""Redundancy-d's dispatch: copy to d servers, cancel the others when one finishes (the
protocol of a dispatch rule: ``System.routing``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from envs.jobs import Column, SlotTable

if TYPE_CHECKING:
    from envs.spec import NetworkSpec


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
        self.red = spec.block
        self.N = spec.num_stations
        self.choices = np.asarray(self.red.choices, np.int64)  # d of each action
        self.columns = (Column("order", (self.N,), np.int64),)

    def draw(self, rng: np.random.Generator, jobs: SlotTable, slot: np.ndarray) -> None:
        fk = jobs.flat(np.arange(jobs.rows), slot)  # one flat index: faster than two
        jobs.order.reshape(-1, self.N)[fk] = rng.random((jobs.rows, self.N)).argsort(1)
        jobs.service.reshape(-1, self.N)[fk] = self.sizes(rng, jobs.rows)

    def sizes(self, rng: np.random.Generator, jobs: int) -> np.ndarray:
        """(jobs, N) copy sizes per server by the joint law (every column is a copy's size
        should that server get one; the columns are exchangeable)."""
        red, N = self.red, self.N
        if red.copies == "identical":
            return np.repeat(red.size.sample(rng, jobs)[:, None], N, axis=1)
        if red.copies == "iid":
            return red.size.sample(rng, (jobs, N))
        return red.scale.sample(rng, jobs)[:, None] * red.factor.sample(rng, (jobs, N))

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
