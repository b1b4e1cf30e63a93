"""The paper's tabular R-learning (Algorithm 1), as a baseline in the same vectorized harness.

A table over queue lengths capped at ``cap`` (60 in the paper), alpha = beta = 0.01, and
exploration 0.5 decayed by 0.98 per 1000 decisions down to 0.01. Unlike the original code,
every experience is completed with its own decision's state, action and next state (the
delayed-completion store), and rewards use the counterfactual for rejected jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drl_ac.learning.interaction import act, epsilon_greedy
from drl_ac.learning.store import DelayedCompletionStore, Experiences
from envs import Driver, NetworkSpec
from envs.reward import reward


@dataclass
class TabularRLearner:
    num_features: int
    cap: int = 60
    alpha: float = 0.01
    beta: float = 0.01

    def __post_init__(self) -> None:
        self.q = np.zeros(((self.cap + 1) ** self.num_features, 2), np.float64)
        self.rbar = 0.0

    def index(self, obs: np.ndarray) -> np.ndarray:
        q = np.clip(obs.astype(np.int64), 0, self.cap)
        return np.ravel_multi_index(tuple(q.T), (self.cap + 1,) * self.num_features)

    def greedy_actions(self, obs: np.ndarray) -> np.ndarray:
        v = self.q[self.index(obs)]
        return (v[:, 1] >= v[:, 0]).astype(np.int64)

    __call__ = greedy_actions

    def learn(self, exp: Experiences, lam: float, eps: float) -> None:
        """Eq. 5 for every completed experience, eq. 6 for the greedy ones (applied as a batch)."""
        if exp.action.size == 0:
            return
        s, s2, a = self.index(exp.obs), self.index(exp.next_obs), exp.action
        r = reward(a, exp.success, lam, eps)
        delta = r - self.rbar + self.q[s2].max(1) - self.q[s, a]
        np.add.at(self.q, (s, a), self.alpha * delta)
        self.rbar += self.beta * float(delta[exp.greedy].sum())

    @staticmethod
    def exploration(decisions: int) -> float:
        return max(0.01, 0.5 * 0.98 ** (decisions / 1000))


def train_tabular(spec: NetworkSpec, decisions: int, num_envs: int = 16, seed: int = 0,
                  lam: float | None = None) -> TabularRLearner:
    """Train Algorithm 1 on ``decisions`` arrivals spread over ``num_envs`` instances."""
    lam = spec.lam if lam is None else lam
    if lam is None:
        raise ValueError("lam: the tabular baseline needs a fixed multiplier. Fix: pass lam or use a scenario "
                         "that fixes one.")
    if spec.num_actions != 2:
        raise ValueError(f"actions: the tabular baseline is the paper's accept/reject learner, {spec.name} has "
                         f"{spec.num_actions} actions. Fix: use it on admission scenarios with [reject, accept].")
    driver = Driver(spec, num_envs, seed=seed)
    obs = driver.reset(seed)
    learner = TabularRLearner(obs.shape[1])
    store = DelayedCompletionStore(num_envs, obs.shape[1])
    store.put_obs(0, obs)
    rng = np.random.default_rng([seed, 2])
    for t in range(max(1, decisions // num_envs)):
        greedy = learner.greedy_actions(obs)
        action = epsilon_greedy(greedy, learner.exploration(t * num_envs), 2, rng)
        obs, exp = act(driver, store, t, action, greedy)
        learner.learn(exp, lam, spec.eps)
    return learner
