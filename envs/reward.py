"""Per-decision rewards, from a decision's outcome only (``success``, its ``cost``).

Admission (the paper's eq. 7): its long-run average is the Lagrangian

    r_lam(pi) = -P(R, success) + lam * P(A) * (P(success | A) - (1 - eps)).

Control objectives are average-cost rewards on the decision's own outcome: ``response_time``
pays -delay, ``deadline`` pays 1{delay < d_ub}. All are plain arithmetic, so they work on
NumPy arrays and torch tensors alike (the learner recomputes rewards with the current lam
when it samples the replay).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def reward(accepted, met, lam, eps: float):
    """accept: eps*lam if the deadline was met else -(1-eps)*lam; reject: -1 if it would
    have been met (an unnecessary rejection) else 0."""
    a = accepted * 1.0
    m = met * 1.0
    return a * lam * (m * eps - (1.0 - m) * (1.0 - eps)) - (1.0 - a) * m


def admission_reward(action, success, cost, lam, eps):
    return reward(action > 0, success, lam, eps)


def response_time_reward(action, success, cost, lam, eps):
    return -cost


def deadline_reward(action, success, cost, lam, eps):
    return success * 1.0


RewardRule = Callable[..., object]
REWARD_RULES: dict[str, RewardRule] = {"admission": admission_reward, "response_time": response_time_reward,
                                       "deadline": deadline_reward}


def met_deadline(delay, d_ub) -> np.ndarray:
    """The paper's event d < d_ub (a delay equal to the deadline counts as a miss)."""
    return np.asarray(delay) < d_ub
