"""Per-decision rewards, from a decision's outcome only (``success``, its ``cost``).

Admission (the paper's eq. 7): its long-run average is the Lagrangian

    r_lam(pi) = -P(R, success) + lam * P(A) * (P(success | A) - (1 - eps)).

A cell's goal is *min blocking* s.t. P(dropped | admitted) <= eps (docs/systems/cell.md, and the LP of
``envs.systems.cell.theory``). Its Lagrangian, blocking + lam (drops - eps admissions) per decision,
is paid per step (``blocking_reward``, with ``cell_charges``):

    r_lam = -1{the UE arriving now is blocked} + lam * (eps * 1{it is carried}
            - the admitted UEs dropped before the next arrival).

Why not eq. 7 (each decision paid its own UE's fate)? (a) A UE is dropped when *later*
admissions fill the cell, so its fate depends on decisions after its own: paid to its own
decision, the harm a new UE does to the UEs present is paid to nobody, and Q-learning
learns to admit UEs that are safe themselves but drop others (on ``cell_small``: the 2-PRB
UEs the exact LP rejects). Drops paid when they happen are a Markov reward with the same
long-run average. (b) Eq. 7 charges a rejection only when the probe says the UE would have
finished; it minimises *unnecessary* blocks and leaves out the blocks for lack of room,
which the goal (and the LP) counts. The probe's verdict is then not needed at all.
``reward_rule(spec)`` picks the rule of a system.

Control objectives are average-cost rewards on the decision's own outcome: ``response_time``
pays -delay, ``deadline`` pays 1{delay < d_ub}. All are plain arithmetic, so they work on
NumPy arrays and torch tensors alike (the learner recomputes rewards with the current lam
when it samples the replay).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from envs.outcomes import Outcomes


def reward(accepted, met, lam, eps: float):
    """accept: eps*lam if the deadline was met else -(1-eps)*lam; reject: -1 if it would
    have been met (an unnecessary rejection) else 0."""
    a = accepted * 1.0
    m = met * 1.0
    return a * lam * (m * eps - (1.0 - m) * (1.0 - eps)) - (1.0 - a) * m


def admission_reward(action, success, cost, lam, eps):
    return reward(action > 0, success, lam, eps)


def blocking_reward(action, success, cost, lam, eps):
    """A cell, per step: ``action`` the action in effect (0: the UE was blocked), ``cost`` the
    admitted UEs dropped during the step; ``success`` is not read."""
    a = (action > 0) * 1.0
    return a * lam * eps - (1.0 - a) - lam * cost


def cell_charges(done: Outcomes, action: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """What ``blocking_reward`` needs from a cell's step ``step`` (outcomes ``done``): per
    instance, was the UE arriving at ``step`` carried (``action`` admitted it and it fitted),
    and how many admitted UEs (decisions, not handover sessions) were dropped in the step."""
    dec = done.decisions()
    blocked = dec.measures["blocked"]
    carried = np.asarray(action) > 0
    carried[dec.env[(dec.step == step) & blocked]] = False
    drops = np.bincount(dec.env[dec.measures["dropped"]], minlength=carried.size)
    return carried, drops


def response_time_reward(action, success, cost, lam, eps):
    return -cost


def deadline_reward(action, success, cost, lam, eps):
    return success * 1.0


RewardRule = Callable[..., object]
REWARD_RULES: dict[str, RewardRule] = {"admission": admission_reward, "blocking": blocking_reward,
                                       "response_time": response_time_reward,
                                       "deadline": deadline_reward}


def met_deadline(delay, d_ub) -> np.ndarray:
    """The paper's event d < d_ub (a delay equal to the deadline counts as a miss)."""
    return np.asarray(delay) < d_ub


def reward_rule(spec) -> RewardRule:
    """The reward of ``spec``'s decisions, as its system says (``System.reward_rule``): a
    cell's ``blocking_reward``, else its objective's."""
    return REWARD_RULES[spec.system.reward_rule()]
