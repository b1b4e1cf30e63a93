"""The one path by which anything steps a simulator: the trainer, the evaluation harness
and the Gymnasium adapter all call ``Driver.step`` and get the same ``Outcomes``."""

from __future__ import annotations

import numpy as np

from envs.engine import Engine
from envs.errors import check_actions
from envs.observation import ObservationEncoding
from envs.outcomes import Outcomes
from envs.spec import NetworkSpec


class Driver:
    """B instances of a system, observed through an encoding, stepped with validated actions."""

    def __init__(self, spec: NetworkSpec, num_envs: int, seed: int | None = None,
                 encoding: ObservationEncoding | None = None, **engine_options):
        self.spec = spec
        self.encoding = encoding or ObservationEncoding.for_spec(spec)
        self.encoding.check(spec)
        self.engine = Engine(spec, num_envs, seed=seed, **engine_options)
        self.num_envs = self.engine.B
        self.num_actions = spec.num_actions
        self._empty = getattr(self.engine.routing, "empty", None)  # a step without rows, with the system's measures

    @property
    def t(self) -> int:
        """Decision steps taken since the last reset."""
        return self.engine.t

    @property
    def holding(self) -> np.ndarray:
        """(B,) integral of the number of jobs in system over the last step."""
        return self.engine.holding

    def jobs_in_system(self) -> np.ndarray:
        """(B,) admitted jobs still in each instance."""
        return self.engine.jobs_in_system()

    def reset(self, seed: int | None = None) -> np.ndarray:
        self.engine.reset(seed)
        return self.observe()

    def reset_instances(self, mask: np.ndarray) -> np.ndarray:
        self.engine.reset_instances(np.flatnonzero(mask))
        return self.observe()

    def observe(self) -> np.ndarray:
        return self.encoding.encode(self.engine)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, Outcomes]:
        actions = check_actions(actions, (self.num_envs,), self.spec.actions)
        done = self.engine.step(actions)
        if self._empty is not None and not len(done):
            done = self._empty(self.engine.N)
        return self.observe(), done
