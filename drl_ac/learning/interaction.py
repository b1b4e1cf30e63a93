"""The acting half of Algorithm 1, shared by every learner: choose epsilon-greedy actions,
step the driver, and turn the outcomes that became known into complete experiences."""

from __future__ import annotations

import numpy as np

from drl_ac.learning.store import DelayedCompletionStore, Experiences
from envs.driver import Driver
from envs.reward import cell_charges


def epsilon_greedy(greedy: np.ndarray, exploration: float, num_actions: int, rng: np.random.Generator
                   ) -> np.ndarray:
    explore = rng.random(greedy.size) < exploration
    return np.where(explore, rng.integers(0, num_actions, greedy.size), greedy)


def act(driver: Driver, store: DelayedCompletionStore, t: int, action: np.ndarray,
        greedy: np.ndarray, charge: str | None = None) -> tuple[np.ndarray, Experiences]:
    """Take decision ``t`` in every instance; returns the next observation and the
    experiences completed in this step. ``charge`` None: each decision completes when its
    own outcome is known (any earlier decisions, each with its own s, a, s'). Otherwise
    decision t completes now, charged what happened during the step: ``"holding"`` the jobs
    in system integrated over it, ``"drops"`` (a cell) the admitted UEs dropped in it, its
    action in effect being a rejection where the UE was blocked (``envs.reward.cell_charges``).
    Rows that are not decisions (a cell's handover sessions) never reach the store."""
    store.record(t, action, action == greedy)
    obs, done = driver.step(action)
    store.put_obs(t + 1, obs)
    if charge == "holding":
        return obs, store.complete_step(t, driver.holding)
    if charge == "drops":
        accepted, drops = cell_charges(done, action, t)
        return obs, store.complete_step(t, drops, accepted)
    return obs, store.complete(done.decisions(), t + 1)
