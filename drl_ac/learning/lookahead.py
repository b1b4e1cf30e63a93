"""Rollout targets: score every action of the current decision by simulating it (the paper's
"simulated environment", applied to decisions not taken by a control system).

For each action a of the decision now, a copy of the simulator takes a, then follows the base
rule for ``horizon - 1`` more decisions; its cost is the jobs-in-system area over those
``horizon`` decisions, a's and the rule's (the holding cost: by Little's law its long-run
average is the mean response time). All copies start from the same saved state, generator included, so they see
the same later arrivals and job sizes (common random numbers): the difference of two
actions' costs is the effect of the decision alone, with little noise. The advantage label
of a is its cost minus the base action's; the simulator is then restored, as if nothing had
run.

Why: a copy started on a busy server slows the jobs there *later*. A one-step, bootstrapped
target sees that cost only through the next state's value, where it is a small difference
between nearby states, and a network's error there ranks the actions wrongly (measured on
redundancy_ps at loads 0.7 and 0.9: the greedy network over the own-server rule was not
stationary). The rollout pays the cost inside the label. Fitting the Q-network to the labels
is one step of policy improvement over the base rule (Bertsekas' rollout algorithm, with the
network generalising the labels to states never rolled out).

The labels use the simulator's hidden state (the work left of jobs in service, the sizes
of jobs to come): fitted by least squares to the observation, they estimate the expected
advantage given what the controller sees.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from drl_ac.learning.store import Experiences
from envs.driver import Driver

Rule = Callable[[np.ndarray], np.ndarray]


def action_costs(driver: Driver, base: Rule, horizon: int) -> np.ndarray:
    """(B, K) holding cost over ``horizon`` decisions of each action now, followed by ``base``,
    on common random numbers; the driver's simulator is left as it was."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}. Fix: give the decisions a rollout follows, e.g. 100.")
    eng = driver.engine
    saved, holding = eng.get_state(), eng.holding.copy()
    B, K = driver.num_envs, driver.num_actions
    cost = np.zeros((B, K))
    try:
        for a in range(K):
            eng.set_state(saved)
            obs, _ = driver.step(np.full(B, a, np.int64))
            cost[:, a] = driver.holding
            for _ in range(horizon - 1):
                obs, _ = driver.step(np.asarray(base(obs), np.int64))
                cost[:, a] += driver.holding
    finally:  # the real path goes on as if nothing had run, whatever stopped a rollout
        eng.set_state(saved)
        eng.holding = holding
    return cost


def advantage_labels(driver: Driver, base: Rule, horizon: int) -> Experiences:
    """One experience per (instance, action) of the decision now: its observation, the action
    and, as ``cost``, the action's rollout cost minus the base action's (``action_costs``);
    ``greedy`` marks the base action's rows (their label is 0)."""
    obs = driver.observe()
    first = np.asarray(base(obs), np.int64)
    cost = action_costs(driver, base, horizon)
    B, K = cost.shape
    label = cost - cost[np.arange(B), first][:, None]
    action = np.tile(np.arange(K), B)
    rows = np.repeat(obs, K, axis=0)
    return Experiences(rows, action, rows, action == np.repeat(first, K), np.ones(B * K, bool),
                       label.reshape(-1).astype(np.float32))


def labels_by_state(driver: Driver, base: Rule, horizon: int, labelled: int, every: int = 8, cap: int = 3,
                    top: int = 14) -> list[dict]:
    """Where a rule could be improved: from the driver's state, follow ``base`` and label every
    action (``advantage_labels``) at ``labelled`` of its decisions, one in ``every``; group the
    instances' states by their observation capped at ``cap`` and return the ``top`` most
    frequent classes, each with its ``count`` and every action's mean label and standard
    error (``mean``, ``se``: the rule's action reads 0; one below 0 by several standard errors
    is a one-step improvement the rollout learner can find). The standard error treats the
    labels as independent; those of one instance overlap when ``every`` < ``horizon``, so it
    understates the noise: a label not below 0 by it is not below 0 at all."""
    if labelled < 1 or every < 1:
        raise ValueError(f"labelled and every must be >= 1, got {labelled} and {every}. Fix: label at least one "
                         "decision, e.g. labelled=40, every=8.")
    B, K = driver.num_envs, driver.num_actions
    obs_rows, label_rows = [], []
    for i in range(labelled * every):
        if i % every == every - 1:
            rows = advantage_labels(driver, base, horizon)
            obs_rows.append(rows.obs[::K])
            label_rows.append(rows.cost.reshape(B, K).astype(float))
        driver.step(np.asarray(base(driver.observe()), np.int64))
    states, labels = np.minimum(np.concatenate(obs_rows), cap), np.concatenate(label_rows)
    classes, which, counts = np.unique(states, axis=0, return_inverse=True, return_counts=True)
    out = []
    for c in np.argsort(-counts, kind="stable")[:top]:
        group = labels[which.reshape(-1) == c]
        se = group.std(0, ddof=1) / np.sqrt(len(group)) if len(group) > 1 else np.full(group.shape[1], np.nan)
        out.append({"state": classes[c].tolist(), "count": int(counts[c]), "mean": group.mean(0).tolist(),
                    "se": se.tolist()})
    return out
