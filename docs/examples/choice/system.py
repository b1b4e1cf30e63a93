"""The ``choice`` block: ``speeds`` of the servers a job may be sent to, one action each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envs.errors import SpecError, brief, check_keys, is_list
from envs.observation import ObservationEncoding
from envs.systems import register
from envs.systems.base import ControlSystem
from envs.systems.network.routing import ProbabilisticRouting


@dataclass(frozen=True)
class Choice:
    """The block's parsed form (``spec.block``)."""

    speeds: tuple[float, ...]

    def to_dict(self, dist: Any) -> dict[str, Any]:
        return {"speeds": list(self.speeds)}


@register
class ChoiceSystem(ControlSystem):
    """Send each job to one of N exponential single-server FCFS queues; minimise the mean
    response time (``ControlSystem``'s goal)."""

    name = "choice"
    block = "choice"
    kinds = ("control",)
    generates_actions = True  # the block names the actions: one per server

    @classmethod
    def expand(cls, cfg: Mapping[str, Any], base_dir: Path | None) -> dict[str, Any]:
        raw = cfg["choice"]
        if not isinstance(raw, Mapping):
            raise SpecError("choice", f"expected a mapping, got {brief(raw)}", "give e.g. {speeds: [1.0, 0.5]}")
        check_keys(raw, ("speeds",), "choice", what="a choice block")
        speeds = raw.get("speeds")
        if not is_list(speeds) or len(speeds) < 2 or any(not isinstance(s, (int, float)) or s <= 0 for s in speeds):
            raise SpecError("choice.speeds", f"must be two or more rates > 0, got {brief(speeds)}",
                            "give the service rate of each server, e.g. [1.0, 0.5]")
        out = {k: v for k, v in cfg.items() if k != "choice"}
        out["stations"] = [{"name": f"server{i + 1}", "service": {"dist": "exponential", "rate": float(s)}}
                           for i, s in enumerate(speeds)]
        out["entry"] = "server1"  # replaced by the server each action names
        out["actions"] = [f"server{i + 1}" for i in range(len(speeds))]
        out.setdefault("objective", "response_time")
        out["choice"] = Choice(tuple(float(s) for s in speeds))
        return out

    def describe(self) -> str:
        spec = self.spec
        return (f"{spec.name}: each job to one of {len(spec.block.speeds)} FCFS servers of speeds "
                f"{', '.join(f'{s:g}' for s in spec.block.speeds)}, arrival rate {spec.arrival_rate:.4g}: "
                f"{self.headline.text(spec.eps)}")

    def reference_rate(self) -> float:
        return float(sum(self.spec.block.speeds))  # the servers' total capacity

    def stability_error(self) -> SpecError | None:
        if self.spec.arrival_rate < self.reference_rate():
            return None
        return SpecError("arrival", f"rate {self.spec.arrival_rate:.4g} is at least the servers' total speed "
                         f"{self.reference_rate():.4g}", "lower the arrival rate or add servers")

    def routing(self) -> ProbabilisticRouting:
        return ProbabilisticRouting(self.spec)  # an action names the server a job enters

    def encoding(self, include_in_service: bool = False) -> ObservationEncoding:
        """Jobs waiting, then jobs in service, per server: whether a server is busy is what a
        dispatcher decides on (``include_in_service`` is always on)."""
        spec = self.spec
        return ObservationEncoding(spec.num_stations, True, spec.num_classes, spec.period, False)
