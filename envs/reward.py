"""The paper's per-decision reward (eq. 7): its long-run average is the Lagrangian

    r_lam(pi) = -P(R, d < d_ub) + lam * P(A) * (P(d < d_ub | A) - (1 - eps)).
"""

from __future__ import annotations

import numpy as np


def reward(accepted, met, lam, eps: float):
    """accept: eps*lam if the deadline was met else -(1-eps)*lam; reject: -1 if it would
    have been met (an unnecessary rejection) else 0.

    Plain arithmetic on 0/1 values, so it works on NumPy arrays and torch tensors alike
    (the learner recomputes rewards with the current lam when it samples the replay).
    """
    a = accepted * 1.0
    m = met * 1.0
    return a * lam * (m * eps - (1.0 - m) * (1.0 - eps)) - (1.0 - a) * m


def met_deadline(delay, d_ub: float) -> np.ndarray:
    """The paper's event d < d_ub (a delay equal to the deadline counts as a miss)."""
    return np.asarray(delay) < d_ub
