"""Typed, validated description of a feed-forward queueing network with an admission
controller at its ingress (the paper's Section II), loadable from YAML.

A spec is plain data; the engine (`envs.engine`) turns it into arrays.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from envs.arrivals import ArrivalProcess, PoissonProfileArrivals, RenewalArrivals, make_arrivals
from envs.distributions import Distribution, make_distribution
from envs.errors import SpecError

SCENARIO_DIR = Path(__file__).parent / "scenarios"
DELAY_MEASURES = ("sojourn", "paper")
STATION_KINDS = ("fcfs", "ps")
OBJECTIVES = ("admission", "response_time", "deadline")
REJECT, ACCEPT = "reject", "accept"
EXIT = "exit"


@dataclass(frozen=True)
class StationSpec:
    """A multi-server station of a kind (``envs.kinds``): ``fcfs``, ``servers`` identical
    servers in front of one FIFO queue; ``ps``, their rate shared equally by all jobs present."""

    name: str
    servers: int
    service: Distribution
    kind: str = "fcfs"


@dataclass(frozen=True)
class JobClass:
    """A class of jobs with its own arrival process (renewal or a rate profile) and,
    optionally, its own deadline (default: the network's ``d_ub``)."""

    name: str
    arrival: ArrivalProcess
    d_ub: float | None = None


@dataclass(frozen=True)
class NetworkSpec:
    """The network, its traffic and the delay guarantee the controller must keep.

    ``routing[n][m]`` is the probability that a job leaving station n goes to station m;
    ``routing[n][N]`` (the last column) is the probability it leaves the network.
    ``entry[n]`` is the probability an admitted job starts at station n.
    ``lam`` is the Lagrange multiplier of eq. 7; ``None`` means "tune it automatically".
    ``actions`` are the controller's choices at an arrival: ``reject``, ``accept`` (enter as
    ``entry`` draws) or a station name (enter there). ``objective``: ``admission`` (eq. 7,
    action 0 must be ``reject``), or a control objective scored on each decision's own
    outcome: ``response_time`` (reward -delay) or ``deadline`` (reward 1{delay < d_ub}).
    ``classes`` (optional) replace ``arrival`` by one arrival process per job class.
    """

    name: str
    stations: tuple[StationSpec, ...]
    routing: tuple[tuple[float, ...], ...]
    entry: tuple[float, ...]
    arrival: Distribution | ArrivalProcess | None
    d_ub: float
    eps: float
    lam: float | None = None
    delay: str = "sojourn"
    actions: tuple[str, ...] = (REJECT, ACCEPT)
    objective: str = "admission"
    classes: tuple[JobClass, ...] = ()

    def __post_init__(self) -> None:
        _validate(self)

    # ----------------------------------------------------------------- derived facts
    @property
    def num_stations(self) -> int:
        return len(self.stations)

    @property
    def servers(self) -> np.ndarray:
        return np.array([s.servers for s in self.stations], dtype=np.int64)

    def arrival_processes(self) -> list[ArrivalProcess]:
        """One process per job class (a single renewal class when ``classes`` is empty)."""
        if self.classes:
            return [c.arrival for c in self.classes]
        return [RenewalArrivals(self.arrival) if isinstance(self.arrival, Distribution) else self.arrival]

    @property
    def arrival_rate(self) -> float:
        return float(sum(p.mean_rate for p in self.arrival_processes()))

    def class_deadlines(self) -> np.ndarray:
        """(classes,) deadline of each job class."""
        return np.array([c.d_ub if c.d_ub is not None else self.d_ub for c in self.classes] or [self.d_ub])

    @property
    def period(self) -> float | None:
        """The period of the arrival rate profile, if arrivals vary in time."""
        periods = {p.profile.period for p in self.arrival_processes() if isinstance(p, PoissonProfileArrivals)}
        return periods.pop() if periods else None

    @property
    def station_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stations)

    @property
    def num_classes(self) -> int:
        return max(1, len(self.classes))

    @property
    def num_actions(self) -> int:
        return len(self.actions)

    @property
    def admission(self) -> bool:
        """Action 0 rejects and rejected decisions are scored by a probe (eq. 7)."""
        return self.objective == "admission"

    def action_entries(self) -> list[int]:
        """Per action: the entry station it forces, -1 for the drawn entry (accept, reject)."""
        index = {name: i for i, name in enumerate(self.station_names)}
        return [index.get(a, -1) for a in self.actions]

    def visit_ratios(self) -> np.ndarray:
        """Expected visits per admitted job to each station (traffic equations v = e + R^T v)."""
        n = self.num_stations
        r = np.asarray(self.routing)[:, :n]
        return np.linalg.solve(np.eye(n) - r.T, np.asarray(self.entry))

    def utilization(self, admitted_fraction: float = 1.0) -> np.ndarray:
        """Per-station load rho_n = lambda * P(A) * v_n * E[S_n] / c_n."""
        means = np.array([s.service.mean for s in self.stations])
        return self.arrival_rate * admitted_fraction * self.visit_ratios() * means / self.servers

    def check_stable(self) -> None:
        """Raise if accepting every job overloads a station (matters for accept-all runs)."""
        rho = self.utilization()
        worst = int(np.argmax(rho))
        if rho[worst] >= 1.0:
            raise SpecError(f"stations[{worst}] ({self.stations[worst].name})",
                            f"load {rho[worst]:.3f} >= 1 when every job is accepted, so queues grow without bound",
                            "add servers, speed up service or lower the arrival rate")

    def with_overrides(self, **overrides: Any) -> NetworkSpec:
        """A copy with some top-level fields replaced (d_ub, eps, lam, delay, name)."""
        allowed = {"d_ub", "eps", "lam", "delay", "name"}
        unknown = set(overrides) - allowed
        if unknown:
            raise SpecError(", ".join(sorted(unknown)), "cannot be overridden",
                            f"override only {', '.join(sorted(allowed))}")
        clean = {k: v for k, v in overrides.items() if v is not None or k == "lam"}
        if clean.get("lam") == "auto":
            clean["lam"] = None
        return dataclasses.replace(self, **clean)

    def to_dict(self) -> dict[str, Any]:
        """A plain mapping that ``NetworkSpec.from_dict`` reads back (for checkpoints)."""
        def dist(d: Distribution) -> dict[str, Any]:
            cfg = {"dist": type(d).__name__.lower()}
            cfg.update({f.name if f.name != "cv2" else "scv": getattr(d, f.name)
                        for f in dataclasses.fields(d) if f.name != "source"})
            if "values" in cfg:
                cfg["values"] = list(cfg["values"])
            return cfg

        names = list(self.station_names) + [EXIT]
        def process(p: ArrivalProcess | Distribution) -> dict[str, Any]:
            if isinstance(p, Distribution):
                return dist(p)
            if isinstance(p, RenewalArrivals):
                return dist(p.dist)
            prof = p.profile
            if prof.table is not None:
                return {"dist": "poisson", "profile": {"period": prof.period, "table": list(prof.table)}}
            return {"dist": "poisson", "rate": prof.base,
                    "profile": {"period": prof.period, "sinusoid": {"amplitude": prof.amplitude,
                                                                    "phase": prof.phase_shift}}}

        out = {
            "name": self.name,
            "stations": [{"name": s.name, "servers": s.servers, "service": dist(s.service), "kind": s.kind}
                         for s in self.stations],
            "entry": {names[m]: p for m, p in enumerate(self.entry) if p > 0},
            "routing": {s.name: {names[m]: p for m, p in enumerate(row) if p > 0}
                        for s, row in zip(self.stations, self.routing, strict=True)},
            "d_ub": self.d_ub,
            "eps": self.eps,
            "lam": self.lam,
            "delay": self.delay,
            "actions": list(self.actions),
            "objective": self.objective,
        }
        if self.classes:
            out["classes"] = [{"name": c.name, "arrival": process(c.arrival)} | ({"d_ub": c.d_ub} if c.d_ub else {})
                              for c in self.classes]
        else:
            out["arrival"] = process(self.arrival)
        return out

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any], base_dir: Path | None = None) -> NetworkSpec:
        if not isinstance(cfg, Mapping):
            raise SpecError("<spec>", f"expected a mapping, got {type(cfg).__name__}",
                            "write the network as a YAML mapping with 'stations', 'arrival', 'd_ub', 'eps'")
        for key in ("stations", "d_ub", "eps"):
            if key not in cfg:
                raise SpecError(key, "missing", f"add '{key}' to the network description")
        if ("arrival" in cfg) == ("classes" in cfg):
            raise SpecError("arrival", "give exactly one of 'arrival' and 'classes'",
                            "describe the arrivals of a single class with 'arrival', or list 'classes'")
        raw_stations = cfg["stations"]
        if not isinstance(raw_stations, Sequence) or isinstance(raw_stations, str) or not raw_stations:
            raise SpecError("stations", "must be a non-empty list", "list each station with name, servers, service")
        stations = []
        for i, st in enumerate(raw_stations):
            field = f"stations[{i}]"
            if not isinstance(st, Mapping):
                raise SpecError(field, f"expected a mapping, got {st!r}", "give name, servers and service")
            name = str(st.get("name", f"s{i + 1}"))
            servers = st.get("servers", 1)
            if isinstance(servers, bool) or not isinstance(servers, (int, np.integer)) or servers < 1:
                raise SpecError(field + ".servers", f"must be a positive integer, got {servers!r}",
                                "give the number of identical servers (1 or more)")
            if "service" not in st:
                raise SpecError(field + ".service", "missing",
                                "give a service-time distribution, e.g. {dist: gamma, mean: 3, scv: 0.8}")
            stations.append(StationSpec(name, int(servers), make_distribution(st["service"], field + ".service", base_dir),
                                        str(st.get("kind", "fcfs"))))
        names = [s.name for s in stations]
        if len(set(names)) != len(names):
            raise SpecError("stations", f"duplicate station names {names}", "give every station a unique name")
        index = {name: i for i, name in enumerate(names)}
        index[EXIT] = len(names)

        def row(mapping: Any, field: str, allow_exit: bool) -> tuple[float, ...]:
            probs = [0.0] * (len(names) + 1)
            if isinstance(mapping, str):
                mapping = {mapping: 1.0}
            if not isinstance(mapping, Mapping):
                raise SpecError(field, f"expected a station name or a mapping name -> probability, got {mapping!r}",
                                "write e.g. {s2a: 0.67, s2b: 0.33}")
            for dest, p in mapping.items():
                if dest not in index or (dest == EXIT and not allow_exit):
                    raise SpecError(f"{field}.{dest}", "unknown station",
                                    f"route only to {', '.join(names)}" + (" or 'exit'" if allow_exit else ""))
                try:
                    pf = float(p)
                except (TypeError, ValueError):
                    raise SpecError(f"{field}.{dest}", f"probability is not a number: {p!r}",
                                    "give a number in [0, 1]") from None
                if not 0.0 <= pf <= 1.0:
                    raise SpecError(f"{field}.{dest}", f"probability {pf} outside [0, 1]", "give a number in [0, 1]")
                probs[index[dest]] += pf
            return tuple(probs)

        entry = row(cfg.get("entry", names[0]), "entry", allow_exit=False)[:-1]
        raw_routing = cfg.get("routing", {}) or {}
        if not isinstance(raw_routing, Mapping):
            raise SpecError("routing", "must map station names to their successors", "write e.g. {s1: s2, s2: exit}")
        for src in raw_routing:
            if src not in names:
                raise SpecError(f"routing.{src}", "unknown station", f"use one of {', '.join(names)}")
        routing = tuple(row(raw_routing.get(name, EXIT) or EXIT, f"routing.{name}", allow_exit=True)
                        for name in names)
        lam = cfg.get("lam")
        return cls(
            name=str(cfg.get("name", "custom")),
            stations=tuple(stations),
            routing=routing,
            entry=entry,
            arrival=_single_arrival(cfg["arrival"], base_dir) if "arrival" in cfg else None,
            d_ub=_number(cfg["d_ub"], "d_ub"),
            eps=_number(cfg["eps"], "eps"),
            lam=None if lam in (None, "auto") else _number(lam, "lam"),
            delay=str(cfg.get("delay", "sojourn")),
            actions=_actions(cfg.get("actions", [REJECT, ACCEPT])),
            objective=str(cfg.get("objective", "admission")),
            classes=_classes(cfg.get("classes"), base_dir),
        )

    @classmethod
    def tandem(cls, servers: Sequence[int], service: Sequence[Distribution], arrival: Distribution,
               d_ub: float, eps: float, lam: float | None = None, delay: str = "sojourn",
               name: str = "tandem", kind: str = "fcfs") -> NetworkSpec:
        """Stations 1 -> 2 -> ... -> N (all of one ``kind``), built in Python."""
        n = len(servers)
        if len(service) != n:
            raise SpecError("service", f"{len(service)} distributions for {n} stations", "give one per station")
        stations = tuple(StationSpec(f"s{i + 1}", int(c), d, kind) for i, (c, d) in enumerate(zip(servers, service, strict=True)))
        routing = tuple(tuple(1.0 if m == i + 1 else 0.0 for m in range(n + 1)) for i in range(n))
        entry = tuple(1.0 if m == 0 else 0.0 for m in range(n))
        return cls(name, stations, routing, entry, arrival, float(d_ub), float(eps), lam, delay)


def _single_arrival(cfg: Any, base_dir: Path | None) -> Distribution | ArrivalProcess:
    """A renewal process stays a plain inter-arrival distribution (``spec.arrival.mean``)."""
    proc = make_arrivals(cfg, "arrival", base_dir)
    return proc.dist if isinstance(proc, RenewalArrivals) else proc


def _classes(raw: Any, base_dir: Path | None) -> tuple[JobClass, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not raw:
        raise SpecError("classes", "must be a non-empty list", "list each class with name, arrival and optional d_ub")
    out = []
    for i, c in enumerate(raw):
        field = f"classes[{i}]"
        if not isinstance(c, Mapping) or "arrival" not in c:
            raise SpecError(field, f"expected a mapping with 'arrival', got {c!r}",
                            "give e.g. {name: gold, arrival: {dist: exponential, rate: 0.3}, d_ub: 20}")
        unknown = set(c) - {"name", "arrival", "d_ub"}
        if unknown:
            raise SpecError(f"{field}.{sorted(unknown)[0]}", "unknown key", "use name, arrival and d_ub")
        d_ub = c.get("d_ub")
        out.append(JobClass(str(c.get("name", f"class{i}")), make_arrivals(c["arrival"], f"{field}.arrival", base_dir),
                            None if d_ub is None else _number(d_ub, f"{field}.d_ub")))
    return tuple(out)


def _actions(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) < 2:
        raise SpecError("actions", f"must be a list of at least two choices, got {value!r}",
                        "list e.g. [reject, accept] or [reject, s1, s2] (station names)")
    return tuple(str(a) for a in value)


def _number(value: Any, field: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise SpecError(field, f"not a number: {value!r}", "give a number") from None
    return out


def _validate(spec: NetworkSpec) -> None:
    n = len(spec.stations)
    for i, st in enumerate(spec.stations):
        if st.servers < 1:
            raise SpecError(f"stations[{i}].servers", f"must be >= 1, got {st.servers}", "give 1 or more servers")
        if st.kind not in STATION_KINDS:
            raise SpecError(f"stations[{i}].kind", f"unknown station kind {st.kind!r}",
                            f"use one of {', '.join(STATION_KINDS)}")
    for i, c in enumerate(spec.classes):
        if c.d_ub is not None and not (math.isfinite(c.d_ub) and c.d_ub > 0):
            raise SpecError(f"classes[{i}].d_ub", f"must be a positive deadline, got {c.d_ub}",
                            "give the class's end-to-end deadline, or omit it to use d_ub")
    if not (math.isfinite(spec.d_ub) and spec.d_ub > 0):
        raise SpecError("d_ub", f"must be a positive deadline, got {spec.d_ub}", "give the end-to-end deadline")
    if not 0.0 < spec.eps < 1.0:
        raise SpecError("eps", f"must be in (0, 1), got {spec.eps}", "give the allowed violation probability")
    if spec.lam is not None and not (math.isfinite(spec.lam) and spec.lam >= 0):
        raise SpecError("lam", f"must be >= 0, got {spec.lam}", "give a non-negative multiplier or 'auto'")
    if spec.objective not in OBJECTIVES:
        raise SpecError("objective", f"unknown objective {spec.objective!r}", f"use one of {', '.join(OBJECTIVES)}")
    names = set(spec.station_names)
    for i, a in enumerate(spec.actions):
        if a not in (REJECT, ACCEPT) and a not in names:
            raise SpecError(f"actions[{i}]", f"unknown action {a!r}",
                            f"use reject, accept or a station name ({', '.join(spec.station_names)})")
    if len(set(spec.actions)) != len(spec.actions):
        raise SpecError("actions", f"repeated choices in {list(spec.actions)}", "list each choice once")
    if spec.admission and spec.actions[0] != REJECT:
        raise SpecError("actions[0]", f"is {spec.actions[0]!r} but admission control needs 'reject' first",
                        "put reject first, or set objective to response_time or deadline")
    if not spec.admission and REJECT in spec.actions:
        raise SpecError("actions", f"objective {spec.objective} scores every job it serves, so it cannot reject",
                        "drop 'reject' from actions, or use objective: admission")
    if spec.delay == "paper" and any(st.kind != "fcfs" for st in spec.stations):
        raise SpecError("delay", "the paper's measure (waits plus last service) needs FCFS stations",
                        "use delay: sojourn with processor-sharing stations")
    if spec.delay not in DELAY_MEASURES:
        raise SpecError("delay", f"unknown delay measure {spec.delay!r}",
                        "use 'sojourn' (departure minus arrival) or 'paper' (waits plus last service)")
    if len(spec.entry) != n or abs(sum(spec.entry) - 1.0) > 1e-9:
        raise SpecError("entry", f"probabilities sum to {sum(spec.entry):.6g}", "make them sum to 1")
    if len(spec.routing) != n:
        raise SpecError("routing", f"{len(spec.routing)} rows for {n} stations", "give one row per station")
    for i, r in enumerate(spec.routing):
        if len(r) != n + 1 or min(r) < 0 or abs(sum(r) - 1.0) > 1e-9:
            raise SpecError(f"routing.{spec.stations[i].name}", f"probabilities sum to {sum(r):.6g}",
                            "make the probabilities to the next stations and 'exit' sum to 1")
    # Feed-forward: Kahn's algorithm finds a cycle if one exists.
    adj = np.asarray(spec.routing)[:, :n] > 0
    indeg = adj.sum(0)
    ready = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while ready:
        i = ready.pop()
        seen += 1
        for m in np.flatnonzero(adj[i]):
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(int(m))
    if seen < n:
        cyc = [spec.stations[i].name for i in range(n) if indeg[i] > 0]
        raise SpecError("routing", f"has a cycle through {', '.join(cyc)}",
                        "the network must be feed-forward: remove the edge that leads back")


def available_scenarios() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


def load_spec(scenario: str | Path | NetworkSpec, **overrides: Any) -> NetworkSpec:
    """A registered scenario name, a YAML path, or a spec; ``overrides`` replace top-level fields."""
    if isinstance(scenario, NetworkSpec):
        spec = scenario
    else:
        path = Path(scenario)
        if path.suffix not in (".yaml", ".yml"):
            if str(scenario) not in available_scenarios():
                raise SpecError("scenario", f"unknown scenario {str(scenario)!r}",
                                f"use one of {', '.join(available_scenarios())} or the path of a YAML file")
            path = SCENARIO_DIR / f"{scenario}.yaml"
        try:
            cfg = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise SpecError("scenario", f"cannot read {str(path)!r} ({exc.strerror})",
                            "give a registered scenario name or an existing YAML file") from None
        except yaml.YAMLError as exc:
            raise SpecError("scenario", f"{str(path)!r} is not valid YAML ({exc})", "fix the YAML syntax") from None
        cfg = dict(cfg) if isinstance(cfg, Mapping) else cfg
        if isinstance(cfg, dict):
            cfg.setdefault("name", path.stem)
        spec = NetworkSpec.from_dict(cfg, base_dir=path.parent)
    return spec.with_overrides(**overrides) if overrides else spec
