"""Rollout targets (drl_ac/learning/lookahead.py): the rollouts leave the simulator as it was,
share their random numbers, and the base action's rollout is the real future under the rule."""

import numpy as np
import pytest

from drl_ac.learning.lookahead import action_costs, advantage_labels, labels_by_state
from envs import Driver, NetworkSpec, load_spec
from envs.systems.redundancy.rules import own_server_rules

B, H = 16, 40


def warm(seed: int = 3, steps: int = 200):
    spec = load_spec("redundancy_ps")
    rule = own_server_rules(spec)[2]  # copies on servers holding <= 2 jobs, d <= 2
    driver = Driver(spec, B, seed=seed)
    obs = driver.observe()
    for _ in range(steps):
        obs, _ = driver.step(rule(obs))
    return spec, rule, driver


def test_the_rollouts_leave_the_simulator_as_it_was():
    _, rule, rolled = warm()
    _, _, untouched = warm()
    action_costs(rolled, rule, H)
    for driver in (rolled, untouched):  # the same future for both: the rollouts changed nothing
        obs = driver.observe()
        for _ in range(50):
            obs, _ = driver.step(rule(obs))
    np.testing.assert_array_equal(rolled.observe(), untouched.observe())
    assert np.array_equal(rolled.engine.now, untouched.engine.now)


def test_the_base_action_costs_what_the_rule_costs_on_the_real_path():
    # common random numbers: the rollout of the rule's own action is the real future under the
    # rule, step for step, so its cost is the holding cost the real path then pays
    _, rule, driver = warm()
    cost = action_costs(driver, rule, H)
    first = rule(driver.observe())
    real = np.zeros(B)
    obs = driver.observe()
    for _ in range(H):
        obs, _ = driver.step(rule(obs))
        real += driver.holding
    np.testing.assert_allclose(cost[np.arange(B), first], real, rtol=1e-12)


def test_labels_are_costs_relative_to_the_rule_one_row_per_action():
    spec, rule, driver = warm()
    obs, first = driver.observe(), rule(driver.observe())
    cost = action_costs(driver, rule, H)
    labels = advantage_labels(driver, rule, H)
    K = spec.num_actions
    assert labels.obs.shape == (B * K, obs.shape[1]) and np.array_equal(labels.obs[::K], obs)
    assert np.array_equal(labels.action, np.tile(np.arange(K), B))
    np.testing.assert_allclose(labels.cost.reshape(B, K), cost - cost[np.arange(B), first][:, None], rtol=1e-5,
                               atol=1e-5)
    assert labels.greedy.reshape(B, K)[np.arange(B), first].all() and labels.greedy.sum() == B
    assert not labels.cost.reshape(B, K)[np.arange(B), first].any()  # the rule's own action: 0


def test_labels_by_state_group_the_rules_states_and_follow_the_real_path():
    spec, rule, driver = warm()
    _, _, twin = warm()
    every, labelled = 4, 3
    rows = labels_by_state(driver, rule, 10, labelled, every=every, cap=2, top=1000)
    assert sum(r["count"] for r in rows) == B * labelled  # every labelled state in one class
    assert [r["count"] for r in rows] == sorted((r["count"] for r in rows), reverse=True)
    assert all(max(r["state"]) <= 2 and len(r["mean"]) == len(r["se"]) == spec.num_actions for r in rows)
    exact = [r for r in rows if max(r["state"]) < 2]  # nothing capped: one observation, one rule action
    assert exact and all(r["mean"][int(rule(np.asarray([r["state"]]))[0])] == 0.0 for r in exact)
    with pytest.raises(ValueError, match="labelled"):
        labels_by_state(twin, rule, 10, 0)
    obs = twin.observe()  # the labelling left the rule's real path as it was
    for _ in range(labelled * every):
        obs, _ = twin.step(rule(obs))
    np.testing.assert_array_equal(driver.observe(), twin.observe())


def test_labels_by_state_average_the_advantage_labels_of_each_class():
    spec, rule, driver = warm()
    _, _, twin = warm()
    rows = labels_by_state(driver, rule, 10, 1, every=1, cap=2, top=1000)  # one decision, labelled
    obs, K = np.minimum(twin.observe(), 2), spec.num_actions
    labels = advantage_labels(twin, rule, 10).cost.reshape(B, K)
    for r in rows:
        members = (obs == np.asarray(r["state"])).all(1)
        assert members.sum() == r["count"]
        np.testing.assert_allclose(r["mean"], labels[members].mean(0), rtol=1e-5, atol=1e-4)
        if r["count"] > 1:
            np.testing.assert_allclose(r["se"], labels[members].std(0, ddof=1) / np.sqrt(r["count"]), rtol=1e-4,
                                       atol=1e-4)


def test_with_no_load_a_copy_changes_nothing_when_sizes_are_identical():
    # identical copies on idle PS servers: the first copy finishes at X whatever d, so the
    # jobs-in-system area until the next arrival does not depend on the action (hand-computed)
    spec = NetworkSpec.from_dict({"name": "identical", "arrival": {"dist": "exponential", "rate": 5.0}, "d_ub": 10, "eps": 0.1,
                                  "redundancy": {"servers": 10, "kind": "ps", "copies": "identical",
                                                 "size": {"dist": "exponential", "mean": 1.0}, "d": [1, 2, 3, 4]}})
    driver = Driver(spec, B, seed=5)  # every instance empty, its first job arriving
    cost = action_costs(driver, lambda o: np.zeros(len(o), np.int64), 1)
    np.testing.assert_allclose(cost, cost[:, :1].repeat(4, 1), rtol=1e-12)
    assert (cost > 0).all()


def test_with_no_load_more_iid_copies_finish_sooner_on_every_path():
    # i.i.d. copies on idle PS servers: d copies finish at the least of the first d sizes, so on
    # common random numbers the area until the next arrival cannot grow with d and falls on
    # average (each action is really applied: the rule's d = 1 would give equal columns)
    spec = NetworkSpec.from_dict({"name": "iid", "arrival": {"dist": "exponential", "rate": 0.5}, "d_ub": 10,
                                  "eps": 0.1, "redundancy": {"servers": 10, "kind": "ps", "copies": "iid",
                                                             "size": {"dist": "exponential", "mean": 1.0},
                                                             "d": [1, 2, 3, 4]}})
    driver = Driver(spec, 64, seed=6)
    cost = action_costs(driver, lambda o: np.zeros(len(o), np.int64), 1)
    assert (np.diff(cost, axis=1) <= 1e-12).all()
    mean = cost.mean(0)
    assert mean[0] > mean[1] > mean[3]
    np.testing.assert_array_equal(driver.holding, np.zeros(64))  # restored: the real path took no step


def test_a_horizon_below_one_is_refused():
    _, rule, driver = warm(steps=1)
    with pytest.raises(ValueError, match="horizon.*Fix"):
        action_costs(driver, rule, 0)
