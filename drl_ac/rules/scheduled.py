"""Rules re-tuned at several loads, switched by the arrival-rate estimate a controller keeps
(gain scheduling). What a careful engineer without an oracle of the load runs when the load
moves, and the base a one-policy learner improves on (``drl_ac.study.loads``): one rule tuned
over a range of loads is wrong at its ends (on redundancy_ps, d = 4 at load 0.3, at most 2
copies at 0.9), each load's own rule is not."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from drl_ac.learning.qnet import rule_of
from envs.observation import ObservationEncoding


def switch_rates(rates: Sequence[float]) -> np.ndarray:
    """Where a schedule over ascending arrival ``rates`` switches on the rate estimate: the
    geometric midpoints (the estimate's error is about proportional to the rate)."""
    r = np.asarray(rates, float)
    return np.sqrt(r[:-1] * r[1:])


@dataclass(frozen=True)
class ScheduledRule:
    """``rules[i]`` where the arrival-rate estimate lies between the geometric midpoints of
    ``rates`` around ``rates[i]``, the rate it was tuned at. ``encoding``: what it observes, a
    rule's own observation with the estimate after it (``ObservationEncoding.rate``; each rule
    reads the leading ``rule_columns``), so that it runs as a policy does. ``loads``: ``rates``
    as loads, for the description."""

    rules: tuple[Callable, ...]
    rates: tuple[float, ...]
    encoding: ObservationEncoding
    loads: tuple[float, ...] = ()
    reads_rate = True  # it reads the whole observation: not wrapped by ``compare.reading``

    def __post_init__(self) -> None:
        if len(self.rules) != len(self.rates) or len(self.rules) < 2:
            raise ValueError(f"ScheduledRule: {len(self.rules)} rules for {len(self.rates)} rates. Fix: give one "
                             "rule per rate, at least two.")
        if any(not (math.isfinite(r) and r > 0) for r in self.rates) or list(self.rates) != sorted(set(self.rates)):
            raise ValueError(f"ScheduledRule: rates {list(self.rates)} must be > 0 and ascending. Fix: give the "
                             "rate each rule was tuned at, lowest first, each once.")
        if not self.encoding.rate:
            raise ValueError("ScheduledRule: its encoding does not observe the arrival-rate estimate. Fix: give "
                             "replace(encoding, rate=True).")

    @property
    def edges(self) -> np.ndarray:
        """The rates where the rule switches (``switch_rates``)."""
        return switch_rates(self.rates)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        which = np.searchsorted(self.edges, obs[:, -1], side="right")  # as RuleDefault: edges <= the rate
        head = obs[:, : self.encoding.rule_columns]
        out = np.empty(obs.shape[0], np.int64)
        for i, rule in enumerate(self.rules):
            rows = which == i
            if rows.any():
                out[rows] = rule(head[rows])
        return out

    def describe(self) -> str:
        at = ", ".join(f"{x:g}" for x in self.loads) if self.loads else ", ".join(f"{r:.4g}" for r in self.rates)
        parts = "; ".join(f"{r.describe()} at {x}" for r, x in
                          zip(self.rules, self.loads or [f"{r:.4g}" for r in self.rates], strict=True))
        return f"re-tuned at loads {at}, switched by the arrival-rate estimate ({parts})"

    def guard_fields(self) -> dict[str, Any]:
        """A learned policy's default: ``RuleDefault`` of kind ``scheduled`` (exported with it)."""
        return {"default_rule": {"kind": "scheduled", "edges": [float(e) for e in self.edges],
                                 "rules": [rule_of(r.guard_fields()) for r in self.rules]}}


def scheduled(rules: Sequence[Callable], rates: Sequence[float], encoding: ObservationEncoding,
              loads: Sequence[float] = ()) -> ScheduledRule | None:
    """A ``ScheduledRule`` of ``rules`` reading ``encoding`` with the estimate where each rule
    can guard (it has ``guard_fields``), else None."""
    if not all(hasattr(r, "guard_fields") for r in rules):
        return None
    return ScheduledRule(tuple(rules), tuple(float(r) for r in rates), replace(encoding, rate=True),
                         tuple(float(x) for x in loads))


__all__ = ["ScheduledRule", "scheduled", "switch_rates"]
