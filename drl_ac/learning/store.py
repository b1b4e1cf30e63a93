"""Delayed-completion store (the paper's buffer of incomplete experiences, Fig. 2).

At decision step t every instance leaves an incomplete experience (s_t, a_t, s_{t+1},
greedy, outcome = ?). The outcome arrives later, in the driver's ``Outcomes``: when an
admitted job leaves, or at once for a rejected job (its probe). ``complete`` then returns
the finished experiences, each with its *own* decision's state, action and next state:
rows are looked up by (instance, decision step), never by "current" state.

Storage is one ``envs.jobs.StepRing`` keyed by the step: observations and decisions. An
observation serves as s of one decision and s' of the previous one, so it is stored once.
A slot is live while its decision is pending; memory is bounded by the age of the oldest
job in the system, never by run length.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from envs.jobs import Column, StepRing
from envs.outcomes import Outcomes


class Experiences(NamedTuple):
    """Completed transitions (M rows)."""

    obs: np.ndarray  # (M, D) state at the decision
    action: np.ndarray  # (M,) the action taken (admission: 0 reject)
    next_obs: np.ndarray  # (M, D) state at the next decision of the same instance
    greedy: np.ndarray  # (M,) the action was the greedy one (paper eq. 6 updates rbar only then)
    success: np.ndarray  # (M,) decided by the system (probe for rejected jobs)
    cost: np.ndarray  # (M,) the decision's measured cost (delay), for control rewards


class DelayedCompletionStore:
    def __init__(self, num_envs: int, obs_dim: int, horizon: int = 64):
        self.B, self.D = num_envs, obs_dim
        self.ring = StepRing(num_envs, (Column("obs", (obs_dim,), np.float32), Column("action", (), np.int16),
                                        Column("greedy", (), bool)), horizon)

    @property
    def horizon(self) -> int:
        return self.ring.capacity

    def put_obs(self, step: int, obs: np.ndarray) -> None:
        """The observation at decision ``step`` (the s' of decision step - 1)."""
        slot = self.ring.claim(step)
        self.ring.obs[:, slot] = obs

    def record(self, step: int, action: np.ndarray, greedy: np.ndarray) -> None:
        """Decision ``step`` of every instance; its observation must already be stored."""
        ring = self.ring
        slot = step % ring.capacity
        if ring.slot_step[slot] != step:
            raise ValueError(f"step {step}: put_obs(step, obs) must come before record(step, ...)")
        ring.action[:, slot] = action
        ring.greedy[:, slot] = greedy
        ring.live[:, slot] = True

    def complete(self, done: Outcomes, now: int) -> Experiences:
        """Finish the experiences whose outcome is in ``done``. ``now`` is the latest step
        whose observation is stored (every completed step must be < now)."""
        env, step = done.env, done.step
        if step.size and step.max() >= now:
            raise ValueError("a completion arrived before the next state of its decision was stored")
        ring = self.ring
        slot = step % ring.capacity
        if not (ring.live[env, slot].all() and (ring.slot_step[slot] == step).all()):
            raise RuntimeError("completion for a decision that is not pending (reported twice, or overwritten)")
        ring.live[env, slot] = False
        nxt = (step + 1) % ring.capacity
        return Experiences(ring.obs[env, slot], ring.action[env, slot].astype(np.int64), ring.obs[env, nxt],
                           ring.greedy[env, slot], done.success, done.delay.astype(np.float32))

    def pending_count(self) -> int:
        return int(self.ring.live.sum())

    def get_state(self) -> dict[str, np.ndarray]:
        return self.ring.get_state()

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self.ring.set_state(state)
