"""Delayed-completion store (the paper's buffer of incomplete experiences, Fig. 2).

At decision step t every instance leaves an incomplete experience (s_t, a_t, s_{t+1},
greedy, r = ?). The outcome arrives later, in ``info["completed"]``: when an accepted job
leaves the network, or at once for a rejected job (its counterfactual). ``complete``
then returns the finished experiences, each with its *own* decision's state, action and
next state: rows are looked up by (instance, decision step), never by "current" state.

Storage is two rings indexed by ``step % H``: observations (H, B, D) and decisions
(H, B). An observation serves as s of one decision and s' of the previous one, so it is
stored once. If a decision is still pending when its slot comes round again, H doubles;
memory is bounded by the age of the oldest job in the network, never by run length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.reward import met_deadline


@dataclass
class Experiences:
    """Completed transitions (M rows)."""

    obs: np.ndarray  # (M, D) state at the decision
    action: np.ndarray  # (M,) 1 accept, 0 reject
    next_obs: np.ndarray  # (M, D) state at the next decision of the same instance
    greedy: np.ndarray  # (M,) the action was the greedy one (paper eq. 6 updates rbar only then)
    met: np.ndarray  # (M,) d < d_ub (counterfactually for rejected jobs)

    def __len__(self) -> int:
        return int(self.action.size)


class DelayedCompletionStore:
    def __init__(self, num_envs: int, obs_dim: int, horizon: int = 64):
        self.B, self.D = num_envs, obs_dim
        self.obs = np.zeros((horizon, num_envs, obs_dim), np.float32)
        self.action = np.zeros((horizon, num_envs), np.int8)
        self.greedy = np.zeros((horizon, num_envs), bool)
        self.pending = np.zeros((horizon, num_envs), bool)
        self.slot_step = np.full(horizon, -1, np.int64)

    @property
    def horizon(self) -> int:
        return self.slot_step.size

    def put_obs(self, step: int, obs: np.ndarray) -> None:
        """The observation at decision ``step`` (the s' of decision step - 1)."""
        self._make_room(step)
        self.obs[step % self.horizon] = obs

    def record(self, step: int, action: np.ndarray, greedy: np.ndarray) -> None:
        """Decision ``step`` of every instance; its observation must already be stored."""
        slot = step % self.horizon
        if self.slot_step[slot] != step:
            raise ValueError(f"step {step}: put_obs(step, obs) must come before record(step, ...)")
        self.action[slot] = action
        self.greedy[slot] = greedy
        self.pending[slot] = True

    def complete(self, completed: dict[str, np.ndarray], now: int, d_ub: float) -> Experiences:
        """Finish the experiences whose outcome is in ``completed``. ``now`` is the latest
        step whose observation is stored (every completed step must be < now)."""
        env, step = completed["env"], completed["step"]
        if step.size and step.max() >= now:
            raise ValueError("a completion arrived before the next state of its decision was stored")
        slot = step % self.horizon
        if not (self.pending[slot, env].all() and (self.slot_step[slot] == step).all()):
            raise RuntimeError("completion for a decision that is not pending (reported twice, or overwritten)")
        self.pending[slot, env] = False
        nxt = (step + 1) % self.horizon
        return Experiences(self.obs[slot, env], self.action[slot, env].astype(np.int64), self.obs[nxt, env],
                           self.greedy[slot, env], met_deadline(completed["delay"], d_ub))

    def pending_count(self) -> int:
        return int(self.pending.sum())

    def _make_room(self, step: int) -> None:
        """Storing step u overwrites step u - H, which decisions u - H (as s) and u - H - 1
        (as s') need; the latter was checked when step u - 1 was stored."""
        while self.pending[step % self.horizon].any() and self.slot_step[step % self.horizon] != step:
            self._grow()
        self.slot_step[step % self.horizon] = step

    def _grow(self) -> None:
        old, new = self.horizon, 2 * self.horizon
        pos = np.where(self.slot_step >= 0, self.slot_step % new, np.arange(old) + old)
        for name in ("obs", "action", "greedy", "pending"):
            a = getattr(self, name)
            out = np.zeros((new,) + a.shape[1:], a.dtype)
            out[pos] = a
            setattr(self, name, out)
        steps = np.full(new, -1, np.int64)
        steps[pos] = self.slot_step
        self.slot_step = steps
