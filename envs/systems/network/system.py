"""A feed-forward network of queues (the paper's system; no YAML block: the top-level keys
``stations``, ``entry``, ``routing``, ``actions`` describe it).

Its controller either admits (``objective: admission``: reject or accept each job, maybe
choosing its entry station) or controls (``response_time`` / ``deadline``: every job is
served, the controller picks its entry station among ``actions``).

Stability: a network is stable when every station's load is below 1. The loads are those
of the traffic equations under the controller's choices; with several entry choices the
controller may mix them, so the system can be stable iff the smallest achievable largest
load (a small linear programme) is below 1. An admission network that cannot carry every
job can still be kept stable by rejecting: ``stability_problem`` then says that accepting
every job overloads a station, which its controller has to avoid.
"""

from __future__ import annotations

import math

import numpy as np

from envs.errors import SpecError
from envs.kinds.fcfs import FcfsKind
from envs.observation import ObservationEncoding, observed_period
from envs.systems.base import REJECT, Headline, System, control_headline, control_measures
from envs.systems.network.kernel import FcfsNetworkKernel
from envs.systems.network.routing import ProbabilisticRouting

BACKLOG_MARGIN = 32  # see NetworkSystem.hopeless_backlog
ENGINE_MAX_JOBS = 1 << 16  # envs.engine.Engine's default max_jobs
ADMISSION = Headline("acceptance", "max", "violation", "acceptance", "P(deadline missed | accepted)")


def min_max_load(loads: np.ndarray) -> tuple[float, np.ndarray]:
    """min over mixtures w of the choices of max_n (loads @ w)_n, and the best w.

    ``loads``: (stations, choices) load of each station when every job takes that choice.
    One choice: its largest load. Several: a linear programme in (w, t): minimise t s.t.
    loads @ w <= t, sum(w) = 1, w >= 0."""
    n, k = loads.shape
    if k == 1:
        return float(loads[:, 0].max()), np.ones(1)
    from scipy.optimize import linprog
    c = np.zeros(k + 1)
    c[-1] = 1.0
    a_ub = np.hstack([loads, -np.ones((n, 1))])
    a_eq = np.concatenate([np.ones(k), [0.0]])[None, :]
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=[1.0], bounds=[(0, None)] * (k + 1),
                  method="highs")
    if not res.success:  # cannot happen for a finite feasible programme; fall back on the pure choices
        best = int(np.argmin(loads.max(0)))
        w = np.zeros(k)
        w[best] = 1.0
        return float(loads[:, best].max()), w
    w = np.clip(res.x[:k], 0.0, None)
    w /= w.sum()
    return float((loads @ w).max()), w


class NetworkSystem(System):
    name = "network"
    block = None
    kinds = ("admission", "control")

    # ------------------------------------------------------------------ the goal
    @property
    def kind(self) -> str:
        return "admission" if self.spec.admission else "control"

    @property
    def headline(self) -> Headline:
        return ADMISSION if self.spec.admission else control_headline(self.spec)

    @property
    def measures(self) -> dict[str, str]:
        if not self.spec.admission:
            return control_measures(self.spec)
        return {"acceptance": "P(accepted)", "violation": "P(deadline missed | accepted)",
                "throughput": "P(accepted and on time)", "objective": "P(rejected but would have been on time)",
                "mean_delay": "mean response time of the accepted jobs"}

    def describe(self) -> str:
        spec = self.spec
        what = "admission control" if spec.admission else "entry control"
        stations = f"{spec.num_stations} station{'s' if spec.num_stations > 1 else ''} ({', '.join(spec.station_names)})"
        goal = self.headline.text(spec.eps)
        deadline = f", deadline {spec.d_ub:g}" if spec.admission else ""
        return f"{spec.name}: {what} of a network of {stations}, arrival rate {spec.arrival_rate:.4g}{deadline}: {goal}"

    @property
    def overload_fix(self) -> str:
        return "reject more jobs" if self.spec.admission else "spread the jobs over the entry stations"

    def hopeless_backlog(self) -> int | None:
        """Admission: a power of two at least ``BACKLOG_MARGIN`` times the jobs the stations can
        finish within the deadline (sum of servers x d_ub / mean service, the largest class
        deadline), at least 2,048 and at most the engine's own bound. A policy that lets an
        instance hold that many admits jobs that all miss the deadline; stopping there bounds the memory and time of judging
        it (an overloaded system fills the engine's 65,536-slot table only after minutes)."""
        spec = self.spec
        if not spec.admission:
            return None
        d_ub = float(np.max(spec.class_deadlines()))
        servable = sum(s.servers * d_ub / s.service.mean for s in spec.stations)
        return min(ENGINE_MAX_JOBS, max(2048, 1 << math.ceil(math.log2(max(BACKLOG_MARGIN * servable, 1.0)))))

    # ------------------------------------------------------------------ stability
    def entry_loads(self) -> tuple[list[str], np.ndarray]:
        """The controller's serving choices (every action but ``reject``) and the (stations,
        choices) load of each station when every job takes that choice."""
        spec = self.spec
        n = spec.num_stations
        r = np.asarray(spec.routing)[:, :n]
        means = np.array([s.service.mean for s in spec.stations])
        names, cols = [], []
        for a, forced in zip(spec.actions, spec.action_entries(), strict=True):
            if a == REJECT:
                continue
            entry = np.asarray(spec.entry, float) if forced < 0 else np.eye(n)[forced]
            names.append(a)
            visits = np.linalg.solve(np.eye(n) - r.T, entry)
            cols.append(spec.arrival_rate * visits * means / spec.servers)  # as NetworkSpec.utilization
        return names, np.stack(cols, 1)

    def stability_error(self) -> SpecError | None:
        spec = self.spec
        names, loads = self.entry_loads()
        if len(names) == 1:
            rho = loads[:, 0]
            chosen = ""
        else:
            _, w = min_max_load(loads)
            rho = loads @ w
            chosen = f" with the entry stations chosen at best (among {', '.join(names)})"
        worst = int(np.argmax(rho))
        if rho[worst] < 1.0:
            return None
        where = f"stations[{worst}] ({spec.stations[worst].name})"
        fix = "add servers, speed up service or lower the arrival rate"
        if spec.admission:
            return SpecError(where, f"load {rho[worst]:.3f} >= 1 when every job is accepted{chosen}, so queues grow "
                             "without bound", fix)
        return SpecError(where, f"load {rho[worst]:.3f} >= 1 whatever the controller chooses{chosen}, so the queue "
                         "grows without bound", fix)

    # ------------------------------------------------------------------ simulation
    def routing(self):
        return ProbabilisticRouting(self.spec)

    def kernel(self, eng):
        """Compiled where every station is FCFS (a network with processor sharing runs the NumPy loop)."""
        return FcfsNetworkKernel(eng) if isinstance(eng.single_kind, FcfsKind) else None

    def encoding(self, include_in_service: bool = False):
        spec = self.spec
        return ObservationEncoding(spec.num_stations, include_in_service, spec.num_classes, observed_period(spec),
                                   False)
