"""Typed, validated description of a feed-forward queueing network with an admission
controller at its ingress (the paper's Section II), loadable from YAML.

A spec is plain data; the engine (`envs.engine`) turns it into arrays.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from envs.arrivals import ArrivalProcess, PoissonProfileArrivals, RenewalArrivals, make_arrivals
from envs.distributions import Distribution, make_distribution, read_text_file
from envs.errors import (
    SpecError,
    as_number,
    brief,
    check_distinct,
    check_keys,
    did_you_mean,
    is_list,
)
from envs.systems import BLOCKS, SYSTEMS, system_class, system_of
from envs.systems.base import ACCEPT, REJECT, System

SCENARIO_DIR = Path(__file__).parent / "scenarios"
DELAY_MEASURES = ("sojourn", "paper")
OBJECTIVES = ("admission", "response_time", "deadline")
EXIT = "exit"
RESERVED_NAMES = (EXIT, REJECT, ACCEPT)  # the routing sink and the controller's own actions
TOP_KEYS = ("name", "arrival", "classes", "stations", "entry", "routing", "d_ub", "eps", "lam", "delay",
            "actions", "objective", "training")  # and the block keys of the systems (envs.systems.BLOCKS)
TRAINING_KEYS = ("steps", "num_envs", "updates_per_step", "targets", "rollout_horizon", "rollout_every",
                 "rollout_start")  # train.py defaults a scenario may set (TrainConfig fields)
TRAINING_TARGETS = ("td", "rollout")  # training.targets: how the learner's targets are made
STATION_KEYS = ("name", "servers", "service", "kind")
CLASS_KEYS = ("name", "arrival", "d_ub")
_TOP_ALIASES = {"deadline": "d_ub", "dub": "d_ub", "epsilon": "eps", "lambda": "lam", "arrivals": "arrival",
                "station": "stations", "route": "routing", "routes": "routing", "action": "actions"}
_STATION_ALIASES = {"c": "servers", "server": "servers", "dist": "service", "distribution": "service",
                    "type": "kind", "discipline": "kind"}
_INT64_MAX = int(np.iinfo(np.int64).max)


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
    ``system`` (``envs.systems``) is a network, or the system whose YAML key is
    ``system_block``, its parsed form in ``block`` (what stations and actions expand from).
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
    system_block: str | None = None  # the YAML key of the system's block (None: a network, the top-level keys)
    block: Any = None  # that block's parsed form, owned by its system's plugin (e.g. envs.systems.cell.spec.CellSpec)
    training: tuple[tuple[str, int | str], ...] = ()  # train.py's defaults for this scenario (TRAINING_KEYS), tuned once

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def system(self) -> System:
        """The plugin of this spec's system, bound to it (``envs.systems.system_of``): ask it
        for the system's name, kind, headline, stability, dispatch rule, observation, reward."""
        return system_of(self)

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
        """Raise if the system cannot be stable whatever its controller chooses (a network:
        if accepting every job overloads a station; ``System.stability_error``)."""
        err = self.system.stability_error()
        if err is not None:
            raise err

    def stability_warning(self) -> str | None:
        """The one-line text ``check_stable`` would raise, or None (``System.stability_problem``).

        For callers that should warn at start rather than refuse (admission control can keep
        an overloaded network stable by rejecting jobs)."""
        return self.system.stability_problem()

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
        for key in ("d_ub", "eps", "lam"):
            if clean.get(key) is not None:
                clean[key] = _number(clean[key], key)
        for key in ("name", "delay"):
            if key in clean:
                clean[key] = str(clean[key])
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
            return p.profile.to_dict()

        out: dict[str, Any] = {
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
        if self.training:
            out["training"] = dict(self.training)
        return self.system.write(out, dist, process)

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any], base_dir: Path | None = None) -> NetworkSpec:
        """Read a network description (the YAML form); every problem is a SpecError naming
        the field, including keys this reader does not know."""
        if not isinstance(cfg, Mapping):
            raise SpecError("<spec>", f"expected a mapping, got {type(cfg).__name__}",
                            "write the network as a YAML mapping with 'stations', 'arrival', 'd_ub', 'eps'")
        check_keys(cfg, (*TOP_KEYS, *BLOCKS), "", what="a network description", aliases=_TOP_ALIASES)
        system = system_class(cfg)
        cfg = system.expand(cfg, base_dir)
        for key in ("stations", "d_ub", "eps"):
            if key not in cfg:
                raise SpecError(key, "missing", f"add '{key}' to the network description")
        if ("arrival" in cfg) == ("classes" in cfg):
            raise SpecError("arrival", "give exactly one of 'arrival' and 'classes'",
                            "describe the arrivals of a single class with 'arrival', or list 'classes'")
        stations = _stations(cfg["stations"], system, base_dir)
        entry, routing = _routes(cfg, [s.name for s in stations])
        lam = cfg.get("lam")
        return cls(
            name=_text(cfg.get("name", "custom"), "name"),
            stations=tuple(stations),
            routing=routing,
            entry=entry,
            arrival=_single_arrival(cfg["arrival"], base_dir) if "arrival" in cfg else None,
            d_ub=_number(cfg["d_ub"], "d_ub"),
            eps=_number(cfg["eps"], "eps"),
            lam=None if lam is None or (isinstance(lam, str) and lam.strip().lower() == "auto") else _number(lam, "lam"),
            delay=_text(cfg.get("delay", "sojourn"), "delay"),
            actions=(tuple(cfg["actions"]) if system.generates_actions
                     else _actions(cfg.get("actions", [REJECT, ACCEPT]))),
            objective=_text(cfg.get("objective", "admission"), "objective"),
            classes=_classes(cfg["classes"], base_dir) if "classes" in cfg else (),
            system_block=system.block,
            block=None if system.block is None else cfg[system.block],
            training=_training(cfg.get("training", {})),
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


def _key_name(key: Any) -> Any:
    """Station names are text; a YAML key like ``1`` (an int) names station '1'."""
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key)
    return key


def _or_exit(dests: Any) -> Any:
    """An empty routing entry (``s3:`` in YAML) means the job leaves the network."""
    return EXIT if dests is None or (isinstance(dests, (Mapping, str)) and not dests) else dests


def _station_name(value: Any, field: str) -> str:
    fix = "give each station a short unique name, e.g. s1"
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SpecError(field, f"expected a name, got {brief(value)}", fix)
    name = str(value)
    if not name.strip():
        raise SpecError(field, "the name is empty", fix)
    if name in RESERVED_NAMES:
        what = "the routing sink (jobs routed there leave the network)" if name == EXIT else "a controller action"
        raise SpecError(field, f"{name!r} is reserved for {what}, so the station could never be reached",
                        f"rename the station (reserved names: {', '.join(RESERVED_NAMES)})")
    return name


def _text(value: Any, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SpecError(field, f"expected a word, got {brief(value)}", f"give {field} as plain text")
    return str(value)


def _classes(raw: Any, base_dir: Path | None) -> tuple[JobClass, ...]:
    if not is_list(raw) or not raw:
        raise SpecError("classes", "must be a non-empty list", "list each class with name, arrival and optional d_ub")
    out = []
    for i, c in enumerate(raw):
        field = f"classes[{i}]"
        if not isinstance(c, Mapping):
            raise SpecError(field, f"expected a mapping with 'arrival', got {brief(c)}",
                            "give e.g. {name: gold, arrival: {dist: exponential, rate: 0.3}, d_ub: 20}")
        check_keys(c, CLASS_KEYS, field, what="a job class", aliases={"deadline": "d_ub"})
        if "arrival" not in c:
            raise SpecError(field + ".arrival", "missing",
                            "give e.g. {name: gold, arrival: {dist: exponential, rate: 0.3}, d_ub: 20}")
        d_ub = c.get("d_ub")
        out.append(JobClass(_text(c.get("name", f"class{i}"), field + ".name"),
                            make_arrivals(c["arrival"], f"{field}.arrival", base_dir),
                            None if d_ub is None else _number(d_ub, f"{field}.d_ub")))
    return tuple(out)


def _actions(value: Any) -> tuple[str, ...]:
    if not is_list(value) or len(value) < 2:
        raise SpecError("actions", f"must be a list of at least two choices, got {brief(value)}",
                        "list e.g. [reject, accept] or [reject, s1, s2] (station names)")
    out = []
    for i, a in enumerate(value):
        if isinstance(a, bool) or not isinstance(a, (str, int)):
            raise SpecError(f"actions[{i}]", f"expected reject, accept or a station name, got {brief(a)}",
                            "list e.g. [reject, accept] or [reject, s1, s2] (station names)")
        out.append(str(a))
    return tuple(out)


def _number(value: Any, field: str) -> float:
    return as_number(value, field, "give a number")


def _training(cfg: Any) -> tuple[tuple[str, int | str], ...]:
    """The ``training`` block: train.py's defaults for the scenario (a flag given wins)."""
    if not isinstance(cfg, Mapping):
        raise SpecError("training", f"expected a mapping, got {brief(cfg)}",
                        "give train.py defaults such as {num_envs: 512, updates_per_step: 4}")
    check_keys(cfg, TRAINING_KEYS, "training", what="training defaults")
    out = []
    for key, value in cfg.items():
        if key == "targets":
            if value not in TRAINING_TARGETS:
                raise SpecError("training.targets", f"unknown {brief(value)}",
                                f"use one of {', '.join(TRAINING_TARGETS)}")
            out.append((key, str(value)))
            continue
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
            raise SpecError(f"training.{key}", f"must be a positive integer, got {brief(value)}",
                            "give a whole number >= 1")
        out.append((str(key), int(value)))
    return tuple(out)


def _stations(raw: Any, system: type[System], base_dir: Path | None) -> tuple[StationSpec, ...]:
    """The ``stations`` list read, each checked by name."""
    if not is_list(raw) or not raw:
        raise SpecError("stations", "must be a non-empty list", "list each station with name, servers, service")
    stations = []
    seen: dict[str, int] = {}
    for i, st in enumerate(raw):
        field = f"stations[{i}]"
        if not isinstance(st, Mapping):
            raise SpecError(field, f"expected a mapping, got {brief(st)}", "give name, servers and service")
        check_keys(st, STATION_KEYS, field, what="a station", aliases=_STATION_ALIASES)
        name = _station_name(st.get("name", f"s{i + 1}"), field + ".name")
        if name in seen:
            raise SpecError(field + ".name", f"duplicate station name {name!r} (also stations[{seen[name]}])",
                            "give every station a unique name")
        seen[name] = i
        servers = st.get("servers", 1)
        if isinstance(servers, (bool, np.bool_)):
            raise SpecError(field + ".servers", f"expected a number, got the boolean {servers!r}",
                            "give the number of identical servers (1 or more)")
        if not isinstance(servers, (int, np.integer)) or servers < 1:
            raise SpecError(field + ".servers", f"must be a positive integer, got {brief(servers)}",
                            "give the number of identical servers (1 or more)")
        if servers > _INT64_MAX:
            raise SpecError(field + ".servers", f"{servers} servers is too many", "give a realistic server count")
        if "service" not in st:
            raise SpecError(field + ".service", "missing",
                            "give a service-time distribution, e.g. {dist: gamma, mean: 3, scv: 0.8}")
        kind = st.get("kind", "fcfs")
        if not isinstance(kind, str):
            raise SpecError(field + ".kind", f"expected a station kind, got {brief(kind)}",
                            f"use one of {', '.join(system.station_kinds)}")
        stations.append(StationSpec(name, int(servers), make_distribution(st["service"], field + ".service", base_dir),
                                    kind))
    return tuple(stations)


def _routes(cfg: Mapping[str, Any], names: list[str]) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...]]:
    """``entry`` and ``routing`` as probability rows over the stations (and the exit)."""
    index = {name: i for i, name in enumerate(names)}
    index[EXIT] = len(names)

    def row(mapping: Any, field: str, allow_exit: bool) -> tuple[float, ...]:
        probs = [0.0] * (len(names) + 1)
        if isinstance(mapping, (str, int)) and not isinstance(mapping, bool):
            mapping = {mapping: 1.0}
        if not isinstance(mapping, Mapping):
            raise SpecError(field, f"expected a station name or a mapping name -> probability, got {brief(mapping)}",
                            "write e.g. {s2a: 0.67, s2b: 0.33}")
        for raw_dest, p in mapping.items():
            dest = _key_name(raw_dest)
            if dest not in index or (dest == EXIT and not allow_exit):
                known = names + ([EXIT] if allow_exit else [])
                guess = did_you_mean(dest, known)
                raise SpecError(f"{field}.{dest}", "unknown station",
                                (f"did you mean '{guess}'? " if guess else "")
                                + f"route only to {', '.join(names)}" + (" or 'exit'" if allow_exit else ""))
            pf = as_number(p, f"{field}.{dest}", "give a number in [0, 1]")
            if not 0.0 <= pf <= 1.0:
                raise SpecError(f"{field}.{dest}", f"probability {pf} outside [0, 1]", "give a number in [0, 1]")
            probs[index[dest]] += pf
        return tuple(probs)

    entry = row(cfg.get("entry", names[0]), "entry", allow_exit=False)[:-1]
    raw_routing = cfg.get("routing")
    raw_routing = {} if raw_routing is None else raw_routing  # 'routing:' left empty: every station exits
    if not isinstance(raw_routing, Mapping):
        raise SpecError("routing", "must map station names to their successors", "write e.g. {s1: s2, s2: exit}")
    routing_by_name = {}
    for src, dests in raw_routing.items():
        name = _key_name(src)
        if name not in index or name == EXIT:
            guess = did_you_mean(name, names)
            raise SpecError(f"routing.{name}", "unknown station",
                            (f"did you mean '{guess}'? " if guess else "") + f"use one of {', '.join(names)}")
        routing_by_name[name] = dests
    routing = tuple(row(_or_exit(routing_by_name.get(name)), f"routing.{name}", allow_exit=True)
                    for name in names)
    return entry, routing


def _validate(spec: NetworkSpec) -> None:
    n = len(spec.stations)
    system = spec.system
    for i, st in enumerate(spec.stations):
        if not isinstance(st.name, str):
            raise SpecError(f"stations[{i}].name", f"expected a name, got {brief(st.name)}",
                            "give each station a short unique name, e.g. s1")
        _station_name(st.name, f"stations[{i}].name")
        if st.servers < 1:
            raise SpecError(f"stations[{i}].servers", f"must be >= 1, got {st.servers}", "give 1 or more servers")
        owner = next((cls for cls in SYSTEMS.values() if st.kind in cls.station_kinds), None)
        if owner is not None and owner.block is not None and st.kind not in system.station_kinds:
            raise SpecError(f"stations[{i}].kind", f"a {owner.name} is described by a '{owner.block}:' block, "
                            "not a station", f"write the {owner.name} as a top-level '{owner.block}:' block "
                            f"(docs/systems/{owner.name}.md)")
        if owner is None:
            guess = did_you_mean(st.kind, system.station_kinds)
            raise SpecError(f"stations[{i}].kind", f"unknown station kind {brief(st.kind)}",
                            (f"did you mean '{guess}'? " if guess else "")
                            + f"use one of {', '.join(system.station_kinds)}")
    if not spec.classes and not isinstance(spec.arrival, (Distribution, ArrivalProcess)):
        raise SpecError("arrival", f"expected an arrival process, got {brief(spec.arrival)}",
                        "give 'arrival' (e.g. {dist: exponential, rate: 0.5}) or list 'classes'")
    for i, c in enumerate(spec.classes):
        if c.d_ub is not None and not (math.isfinite(c.d_ub) and c.d_ub > 0):
            raise SpecError(f"classes[{i}].d_ub", f"must be a positive deadline, got {c.d_ub}",
                            "give the class's end-to-end deadline, or omit it to use d_ub")
    if not ((math.isfinite(spec.d_ub) or not system.needs_deadline) and spec.d_ub > 0):
        raise SpecError("d_ub", f"must be a positive deadline, got {spec.d_ub}", "give the end-to-end deadline")
    if not 0.0 < spec.eps < 1.0:
        raise SpecError("eps", f"must be in (0, 1), got {spec.eps}", "give the allowed violation probability")
    if spec.lam is not None and not (math.isfinite(spec.lam) and spec.lam >= 0):
        raise SpecError("lam", f"must be >= 0, got {spec.lam}", "give a non-negative multiplier or 'auto'")
    if spec.objective not in OBJECTIVES:
        guess = did_you_mean(spec.objective, OBJECTIVES)
        raise SpecError("objective", f"unknown objective {brief(spec.objective)}",
                        (f"did you mean '{guess}'? " if guess else "") + f"use one of {', '.join(OBJECTIVES)}")
    names = set(spec.station_names)
    if len(names) != n:
        raise SpecError("stations", f"duplicate station names {list(spec.station_names)}",
                        "give every station a unique name")
    system.validate()
    system.check_actions()
    check_distinct(spec.actions, "actions", "list each choice once")
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
        raise SpecError("delay", f"unknown delay measure {brief(spec.delay)}",
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
        if not isinstance(scenario, (str, os.PathLike)):
            raise SpecError("scenario", f"expected a scenario name or a YAML path, got {brief(scenario)}",
                            f"use one of {', '.join(available_scenarios())} or the path of a YAML file")
        path = Path(scenario)
        if path.suffix not in (".yaml", ".yml"):
            if str(scenario) not in available_scenarios():
                raise SpecError("scenario", f"unknown scenario {str(scenario)!r}",
                                f"use one of {', '.join(available_scenarios())} or the path of a YAML file")
            path = SCENARIO_DIR / f"{scenario}.yaml"
        text = read_text_file(path, "scenario", "give a registered scenario name or an existing UTF-8 YAML file")
        try:
            cfg = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecError("scenario", f"{str(path)!r} is not valid YAML ({exc})", "fix the YAML syntax") from None
        except RecursionError:
            raise SpecError("scenario", f"{str(path)!r} nests too deeply to read", "flatten the YAML") from None
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. a date like 2001-13-01 or `!!int abc`
            raise SpecError("scenario", f"{str(path)!r} is not valid YAML ({exc})", "fix the value") from None
        if cfg is None:
            raise SpecError("scenario", f"{str(path)!r} is empty",
                            "describe the network: a mapping with 'stations', 'arrival', 'd_ub' and 'eps'")
        if not isinstance(cfg, Mapping):
            raise SpecError("scenario", f"the top level of {str(path)!r} is a {type(cfg).__name__}, not a mapping",
                            "describe the network as a mapping with 'stations', 'arrival', 'd_ub' and 'eps'")
        cfg = dict(cfg)
        cfg.setdefault("name", path.stem)
        spec = NetworkSpec.from_dict(cfg, base_dir=path.parent)
    return spec.with_overrides(**overrides) if overrides else spec
