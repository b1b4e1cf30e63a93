"""What every system plugin provides (``System``) and how a system states its goal (``Headline``).

A system is one kind of model the engine simulates: a network of queues, a 5G cell,
redundancy-d, two server pools. Its plugin (``envs.systems.<name>``) owns everything that
depends on which system a spec describes:

* its YAML block (``block``; None for a network, which is described by the top-level keys)
  and the block's expansion into stations and the controller's choices (``expand``), and
  writing it back (``write``);
* the checks only it makes (``validate``);
* the dispatch rule the engine runs (``routing``), the observation a controller sees
  (``encoding``), the reward the learner is paid (``reward_rule``, ``step_rewards``) and the
  engine settings it needs (``engine_options``);
* whether the system can be stable at all under its controller's best choices
  (``stability_problem``), in the system's own words;
* its goal (``kind``, ``headline``), the measures it reports (``measures``) and a one-line
  description (``describe``).

A plugin instance is bound to one spec: ``spec.system`` (``envs.systems.system_of``) returns
one, so ``spec.system.kind``, ``spec.system.headline`` and ``spec.system.stability_problem()``
need no further argument. The classes (``envs.systems.SYSTEMS``) hold what does not depend on
a spec (``name``, ``block``, ``kinds``) and read blocks (``expand``), since a block is read
before its spec exists.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from envs.errors import SpecError
from envs.kinds import KINDS as STATION_KINDS
from envs.kinds.base import StationKind

if TYPE_CHECKING:
    from envs.compiled import Kernel
    from envs.engine import Engine
    from envs.observation import ObservationEncoding
    from envs.outcomes import Outcomes
    from envs.spec import NetworkSpec

KINDS = ("admission", "loss", "control")
REJECT, ACCEPT = "reject", "accept"  # the controller's own actions besides a station's name
SENSES = ("max", "min")


@dataclass(frozen=True)
class Headline:
    """A system's goal: optimise ``measure`` in direction ``sense`` subject to
    ``constraint`` <= spec.eps (None: unconstrained).

    ``measure`` and ``constraint`` are keys of the metrics ``drl_ac.evaluation.metrics``
    reports (``summarize``, and a system's own measures, ``System.own_measures``): ``acceptance``, ``blocking``,
    ``mean_delay`` (mean response time of the served jobs), ``throughput`` (P(served and on
    time)); ``violation`` (P(deadline missed | accepted)), ``dropping`` (P(dropped | admitted)).
    ``label`` and ``constraint_label`` say them in words.
    """

    measure: str
    sense: str
    constraint: str | None
    label: str
    constraint_label: str | None = None

    def __post_init__(self) -> None:
        if self.sense not in SENSES:
            raise ValueError(f"Headline.sense must be one of {SENSES}, got {self.sense!r}")
        if (self.constraint is None) != (self.constraint_label is None):
            raise ValueError("Headline: give constraint and constraint_label together")

    def better(self, a: float, b: float) -> bool:
        """Is value ``a`` of the measure strictly better than ``b``?"""
        return a > b if self.sense == "max" else a < b

    def text(self, eps: float | None = None) -> str:
        """E.g. "minimise blocking s.t. P(dropped | admitted) <= 0.01"."""
        goal = f"{'maximise' if self.sense == 'max' else 'minimise'} {self.label}"
        if self.constraint is None:
            return goal
        return f"{goal} s.t. {self.constraint_label} <= {'eps' if eps is None else f'{eps:g}'}"


RESPONSE_TIME = Headline("mean_delay", "min", None, "mean response time")


class System:
    """The plugin of one system, bound to a spec (see the module text).

    Subclasses set ``name``, ``block``, ``kinds`` and override what differs; the defaults
    here are those of a network of queues.
    """

    name: ClassVar[str] = ""
    block: ClassVar[str | None] = None  # the YAML key that describes the system (None: the top-level keys)
    kinds: ClassVar[tuple[str, ...]] = ()  # the kinds ``kind`` can take for this system
    station_kinds: ClassVar[tuple[str, ...]] = ("fcfs", "ps")  # station kinds its stations may have
    generates_actions: ClassVar[bool] = False  # the block lists the controller's choices (not 'actions')
    needs_deadline: ClassVar[bool] = True  # d_ub must be finite

    def __init__(self, spec: NetworkSpec):
        self.spec = spec

    def __repr__(self) -> str:
        return f"<system {self.name} of {self.spec.name!r}>"

    # ------------------------------------------------------------------ the YAML block
    @classmethod
    def expand(cls, cfg: Mapping[str, Any], base_dir: Path | None) -> dict[str, Any]:
        """The top-level mapping with the block replaced by stations, actions and defaults;
        the block's parsed form stays under its key. A network has nothing to expand."""
        return dict(cfg)

    def write(self, out: dict[str, Any], dist: Callable[[Any], dict], process: Callable[[Any], dict]
              ) -> dict[str, Any]:
        """Finish ``NetworkSpec.to_dict``'s mapping ``out`` (stations, routing, actions and the
        scalars are there): the system's block in place of what it expands into, and the arrivals."""
        spec = self.spec
        if spec.classes:
            out["classes"] = [{"name": c.name, "arrival": process(c.arrival)} | ({"d_ub": c.d_ub} if c.d_ub else {})
                              for c in spec.classes]
        else:
            out["arrival"] = process(spec.arrival)
        return out

    def validate(self) -> None:
        """Checks of the spec only this system makes (``NetworkSpec`` runs them on creation)."""

    def check_actions(self) -> None:
        """The controller's choices must be reject, accept or a station name."""
        spec = self.spec
        for i, a in enumerate(spec.actions):
            if a not in (REJECT, ACCEPT) and a not in spec.station_names:
                raise SpecError(f"actions[{i}]", f"unknown action {a!r}",
                                f"use reject, accept or a station name ({', '.join(spec.station_names)})")

    # ------------------------------------------------------------------ the goal
    @property
    def kind(self) -> str:
        """``admission`` (accept or reject each job), ``loss`` (admit or block each arrival
        of a system that queues nothing) or ``control`` (every job is served; the controller
        chooses how)."""
        raise NotImplementedError

    @property
    def headline(self) -> Headline:
        raise NotImplementedError

    @property
    def measures(self) -> dict[str, str]:
        """The metrics keys the system reports, the headline's first, with their meaning."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line in the system's language, e.g. for "training on ..." messages."""
        raise NotImplementedError

    @property
    def overload_fix(self) -> str:
        """What a policy under which the jobs pile up should do instead, in the system's words
        (for the engine's messages when its job table overflows)."""
        return "serve jobs with choices that use less server time"

    def hopeless_backlog(self) -> int | None:
        """Jobs per instance past which an evaluation stops and scores the policy as overloaded
        (``drl_ac.evaluation.metrics.overloaded``), or None: the engine's own bound applies."""
        return None

    # ------------------------------------------------------------------ stability
    def stability_error(self) -> SpecError | None:
        """Why the system cannot be stable whatever its controller chooses (None: it can be
        or nothing queues), as a SpecError naming the field."""
        return None

    def stability_problem(self) -> str | None:
        """One line (no newline) saying why the system cannot be stable, or None."""
        err = self.stability_error()
        return None if err is None else str(err)

    # ------------------------------------------------------------------ simulation
    def routing(self) -> Any:
        """The dispatch rule the engine runs: where an admitted job starts and where it goes
        after each station.

        Kept apart from station kinds (a kind serves whatever reaches it). A rule declares the
        job-table columns it draws at arrival, so a probe replays the same route. The protocol:

        * ``columns``: per-job draws (``envs.jobs.Column``);
        * ``draw(rng, jobs, slot)``: fill them for the job arriving now in every instance (its
          slot per instance);
        * ``placements(jobs, inst, slot, action)``: (R, m) stations that receive a copy of each
          admitted job under ``action`` (-1: none), m = 1 for routing;
        * ``after(jobs, at)``: next station of jobs leaving a station (N = exit); ``at`` is the
          flat index of (instance, job slot, station) in the job table's per-station columns.

        Copy-to-d with cancellation (redundancy's ``CopyToD``) places d copies and, through
        ``cancel_siblings``, has the kinds ``cancel`` the other copies when one finishes; timers
        (reroute / replicate after tau) are extra event columns of a kind that report the job to
        ``after`` as if it left. Neither changes the event loop.
        """
        raise NotImplementedError

    def station_class(self, kind: str) -> type[StationKind]:
        """The class of the station kind ``kind`` (a station's ``kind:``): the generic kinds of
        ``envs.kinds``; a system with its own kind (a cell) adds it."""
        return STATION_KINDS[kind]

    def kernel(self, eng: Engine) -> Kernel | None:
        """The compiled event loop of ``eng`` (an object with ``run``, as ``Engine.run``), or
        None where this system has none for it: the engine then runs its NumPy loop."""
        return None

    @classmethod
    def part(cls, name: str) -> ModuleType:
        """The module ``name`` of this system's folder (``rules``, ``measures``, ``theory``),
        loaded when first asked for: the parts that tune or measure build on ``drl_ac``, which
        the simulator itself never imports."""
        return importlib.import_module(f"{cls.__module__.rpartition('.')[0]}.{name}")

    def encoding(self, include_in_service: bool = False) -> ObservationEncoding:
        """What a controller of this system observes (``envs.observation``)."""
        raise NotImplementedError

    def reward_rule(self) -> str:
        """The key of the decisions' reward in ``envs.reward.REWARD_RULES``."""
        return self.spec.objective

    def step_rewards(self, done: Outcomes, actions: np.ndarray, step: int, rule: Callable[..., Any], lam: float,
                     num_envs: int) -> np.ndarray:
        """(num_envs,) rewards of one vector step: the sum over the decisions whose outcome
        became known in it (``done``) of ``rule``'s reward."""
        done = done.decisions()
        r = rule(done.action, done.success, done.delay, lam, self.spec.eps)
        return np.bincount(done.env, weights=r, minlength=num_envs)

    def reference_rate(self) -> float:
        """The arrival rate a study's load is a fraction of: a network's or a cell's own (load 1
        is the scenario as it is); a system with a stability limit says which."""
        return self.spec.arrival_rate

    def holding_time(self) -> float:
        """The longest mean time a job holds the system from an empty start: its mean
        end-to-end service time (a periodic system's warm-up is 10 of them)."""
        spec = self.spec
        return float(spec.visit_ratios() @ np.array([s.service.mean for s in spec.stations]))

    def own_measures(self) -> ModuleType | None:
        """The module of measures this system adds to every evaluation's, or None. It has
        ``summary(done, num_envs, spec, period=None, bins=24, occupancy=None, ordered=False)``
        (a dict of measures), ``in_use(driver)`` (the resources in use per instance now) and
        ``in_use_seen(encoding, obs)`` (those that observations show), and ``table(rows, spec)``
        (rows of policies' measures as a markdown table)."""
        return None

    def engine_options(self) -> dict[str, Any]:
        """Engine settings this system needs in training and evaluation (``envs.engine.Engine``)."""
        return {}


def on_time(d_ub: float) -> Headline:
    """A control objective ``deadline``: the fraction of jobs served within ``d_ub``."""
    return Headline("throughput", "max", None, f"P(response time < {d_ub:g})")


def control_headline(spec: NetworkSpec) -> Headline:
    return on_time(spec.d_ub) if spec.objective == "deadline" else RESPONSE_TIME


def control_measures(spec: NetworkSpec) -> dict[str, str]:
    out = {"mean_delay": "mean response time", "throughput": f"P(response time < {spec.d_ub:g})"}
    return out if spec.objective != "deadline" else {"throughput": out["throughput"], "mean_delay": out["mean_delay"]}


class ControlSystem(System):
    """A system whose controller serves every job and chooses how (redundancy, pools): its
    goal is the response time (objective ``response_time``) or the on-time fraction (``deadline``)."""

    @property
    def kind(self) -> str:
        return "control"

    @property
    def headline(self) -> Headline:
        return control_headline(self.spec)

    @property
    def measures(self) -> dict[str, str]:
        return control_measures(self.spec)

    def write(self, out: dict[str, Any], dist: Callable[[Any], dict], process: Callable[[Any], dict]
              ) -> dict[str, Any]:
        """The system's block (the spec's attribute of the system's ``name``) in place of the
        stations, routing and actions it expands into."""
        for key in ("stations", "entry", "routing", "actions"):
            del out[key]
        out[self.block] = self.spec.block.to_dict(dist)
        return super().write(out, dist, process)
