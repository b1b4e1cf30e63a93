"""Delayed-completion store (the paper's buffer of incomplete experiences, Fig. 2).

At decision step t every instance leaves an incomplete experience (s_t, a_t, s_{t+1},
greedy, outcome = ?). The outcome arrives later, in the driver's ``Outcomes``: when an
admitted job leaves, or at once for a rejected job (its probe). ``complete`` then returns
the finished experiences, each with its *own* decision's state, action and next state:
rows are looked up by (instance, decision step), never by "current" state.

Storage: pending decisions (s, a, s', greedy) in an ``envs.jobs.SlotTable`` (memory
bounded by the decisions pending at once), found by their step through a ``StepRing`` of
slot numbers (8 bytes per step of the oldest pending decision's age, per instance).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from envs.jobs import Column, SlotTable, StepRing
from envs.outcomes import Outcomes


class Experiences(NamedTuple):
    """Completed transitions (M rows)."""

    obs: np.ndarray  # (M, D) state at the decision
    action: np.ndarray  # (M,) the action in effect (admission: 0 reject; see ``complete``)
    next_obs: np.ndarray  # (M, D) state at the next decision of the same instance
    greedy: np.ndarray  # (M,) the action was the greedy one (paper eq. 6 updates rbar only then)
    success: np.ndarray  # (M,) decided by the system (probe for rejected jobs)
    cost: np.ndarray  # (M,) the decision's measured cost (delay), for control rewards


class _StepOutcome(NamedTuple):
    """What ``complete`` reads of an outcome, for decisions charged per step."""

    env: np.ndarray
    step: np.ndarray
    accepted: np.ndarray
    success: np.ndarray
    delay: np.ndarray


class DelayedCompletionStore:
    def __init__(self, num_envs: int, obs_dim: int, horizon: int = 64):
        self.B, self.D = num_envs, obs_dim
        self.table = SlotTable(num_envs, (Column("obs", (obs_dim,), np.float32),
                                          Column("next_obs", (obs_dim,), np.float32),
                                          Column("action", (), np.int16), Column("greedy", (), bool)), horizon)
        self.index = StepRing(num_envs, (Column("slot", (), np.int64),), horizon)
        self.obs = np.zeros((num_envs, obs_dim), np.float32)  # the latest observation
        self.last = np.full(num_envs, -1, np.int64)  # slots of the latest decisions, awaiting s'
        self.step = -1  # the latest observation's step
        self._all = np.arange(num_envs)

    @property
    def horizon(self) -> int:
        """Decision steps the index spans (grows with the age of the oldest pending decision)."""
        return self.index.capacity

    def put_obs(self, step: int, obs: np.ndarray) -> None:
        """The observation at decision ``step``: the s' of decision step - 1, the s of step."""
        if self.step == step - 1 and (self.last >= 0).all():
            self.table.next_obs[self._all, self.last] = obs
        self.obs[:] = obs
        self.step = step
        self.last[:] = -1

    def record(self, step: int, action: np.ndarray, greedy: np.ndarray) -> None:
        """Decision ``step`` of every instance; its observation must already be stored."""
        if step != self.step:
            raise ValueError(f"step {step}: put_obs(step, obs) must come before record(step, ...)")
        table = self.table
        table.next_free()  # grow if needed
        slot = table.take(self._all)
        table.obs[self._all, slot] = self.obs
        table.action[self._all, slot] = action
        table.greedy[self._all, slot] = greedy
        at = self.index.claim(step)
        self.index.slot[:, at] = slot
        self.index.live[:, at] = True
        self.last = slot

    def complete(self, done: Outcomes | _StepOutcome, now: int) -> Experiences:
        """Finish the experiences whose outcome is in ``done``. ``now`` is the latest step
        whose observation is stored (every completed step must be < now).

        A decision the system did not accept is stored as a rejection (action 0): a cell's UE
        admitted without room is blocked, and its transition is the rejection's, so it must
        neither earn an admission's reward nor count as a dropped admission."""
        env, step = done.env, done.step
        if step.size and step.max() >= now:
            raise ValueError("a completion arrived before the next state of its decision was stored")
        index, table = self.index, self.table
        at = step % index.capacity
        if not (index.live[env, at].all() and (index.slot_step[at] == step).all()):
            raise RuntimeError("completion for a decision that is not pending (reported twice, or overwritten)")
        index.live[env, at] = False
        slot = index.slot[env, at]
        action = np.where(done.accepted, table.action[env, slot], 0).astype(np.int64)
        out = Experiences(table.obs[env, slot], action, table.next_obs[env, slot],
                          table.greedy[env, slot], done.success, done.delay.astype(np.float32))
        table.release(env, slot)
        return out

    def complete_step(self, step: int, cost: np.ndarray, accepted: np.ndarray | None = None) -> Experiences:
        """Finish decision ``step`` of every instance at once with its ``cost`` (a per-step
        charge such as the holding cost); its s' must be stored. ``accepted`` False: the
        system did not accept the decision's job (see ``complete``)."""
        if step != self.step - 1:
            raise ValueError(f"step {step}: complete_step needs the observation of step {step + 1} stored last")
        every = np.ones(self.B, bool)
        return self.complete(_StepOutcome(self._all, np.full(self.B, step, np.int64),
                                          every if accepted is None else np.asarray(accepted, bool), every,
                                          np.asarray(cost, np.float64)), self.step)

    def pending_count(self) -> int:
        return int(self.table.live.sum())

    def get_state(self) -> dict[str, Any]:
        state = {f"table.{k}": v for k, v in self.table.get_state().items()}
        state.update({f"index.{k}": v for k, v in self.index.get_state().items()})
        return state | {"obs": self.obs.copy(), "last": self.last.copy(), "step": self.step}

    def set_state(self, state: dict[str, Any]) -> None:
        self.table.set_state({k[6:]: v for k, v in state.items() if k.startswith("table.")})
        self.index.set_state({k[6:]: v for k, v in state.items() if k.startswith("index.")})
        self.obs, self.last, self.step = np.array(state["obs"]), np.array(state["last"]), int(state["step"])
