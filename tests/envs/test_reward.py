"""envs/reward.py: every reward rule on hand-computed outcomes; the averages are the
Lagrangians the module text states; ``cell_charges`` reads a cell's step by hand; NumPy and
torch give the same numbers; and the holding cost of ``response_time_reward`` averages to the
mean response time (Little's law) on an M/M/1 queue."""

import numpy as np
import pytest
import torch

from envs import Driver, NetworkSpec, Outcomes, load_spec, met_deadline
from envs.distributions import Exponential
from envs.reward import (
    REWARD_RULES,
    admission_reward,
    blocking_reward,
    cell_charges,
    deadline_reward,
    response_time_reward,
    reward,
    reward_rule,
)
from envs.rollout import accept_all, collect

LAM, EPS = 8.0, 0.1


def test_admission_reward_table():
    # accept & met: eps lam; accept & missed: -(1 - eps) lam; reject & would have met: -1; else 0
    accepted = np.array([True, True, False, False])
    met = np.array([True, False, True, False])
    expected = [0.1 * 8, -0.9 * 8, -1.0, 0.0]
    np.testing.assert_allclose(reward(accepted, met, LAM, EPS), expected)
    np.testing.assert_allclose(admission_reward(np.array([1, 2, 0, 0]), met, None, LAM, EPS), expected)


def test_admission_reward_averages_to_the_lagrangian_of_eq7():
    # 10 decisions: 4 accepted and met, 2 accepted and missed, 3 rejected that would have met, 1 neither
    accepted = np.array([1] * 6 + [0] * 4, bool)
    met = np.array([1, 1, 1, 1, 0, 0, 1, 1, 1, 0], bool)
    mean = reward(accepted, met, LAM, EPS).mean()
    assert mean == pytest.approx((4 * 0.8 + 2 * -7.2 + 3 * -1.0) / 10)  # -1.42
    # -P(R, success) + lam P(A) (P(success | A) - (1 - eps))
    assert mean == pytest.approx(-0.3 + LAM * 0.6 * (4 / 6 - (1 - EPS)))


def test_blocking_reward_table_and_its_lagrangian():
    # carried: +lam eps; blocked: -1; each drop in the step: -lam
    action = np.array([1, 1, 0, 0, 2])
    drops = np.array([0, 2, 0, 1, 1])
    lam, eps = 5.0, 0.02
    r = blocking_reward(action, None, drops, lam, eps)
    np.testing.assert_allclose(r, [0.1, 0.1 - 10, -1.0, -1.0 - 5, 0.1 - 5])
    # per decision: -(blocking) + lam (eps P(carried) - drops per decision)
    assert r.mean() == pytest.approx(-2 / 5 + lam * (eps * 3 / 5 - 4 / 5))


def test_control_rewards_read_their_own_outcome():
    cost = np.array([0.5, 3.0, 0.0])
    success = np.array([True, False, True])
    np.testing.assert_array_equal(response_time_reward(None, success, cost, None, None), -cost)
    np.testing.assert_array_equal(deadline_reward(None, success, cost, None, None), [1.0, 0.0, 1.0])


def test_rules_give_the_same_numbers_on_torch_tensors():
    # the learner recomputes rewards with the current lam on sampled tensors
    action, success, cost = [0, 1, 2, 1], [True, False, True, True], [0.0, 2.0, 1.5, 0.25]
    for name, rule in REWARD_RULES.items():
        a = rule(np.array(action), np.array(success), np.array(cost), LAM, EPS)
        t = rule(torch.tensor(action), torch.tensor(success), torch.tensor(cost), torch.tensor(LAM), EPS)
        np.testing.assert_allclose(t.numpy(), a, rtol=1e-6, err_msg=name)


def test_a_delay_equal_to_the_deadline_is_a_miss():
    assert met_deadline([4.999, 5.0, 5.001, np.inf], 5.0).tolist() == [True, False, False, False]


def test_reward_rule_of_each_system():
    assert reward_rule(load_spec("paper_tandem")) is admission_reward
    assert reward_rule(load_spec("redundancy_ps")) is response_time_reward
    assert reward_rule(load_spec("cell_small")) is blocking_reward
    station = {"servers": 1, "service": {"dist": "exponential", "mean": 1.0}}
    deadline = NetworkSpec.from_dict({"arrival": {"dist": "exponential", "rate": 0.5}, "objective": "deadline",
                                      "stations": [{"name": "a", **station}, {"name": "b", **station}],
                                      "routing": {"a": "exit", "b": "exit"}, "d_ub": 5, "eps": 0.1,
                                      "actions": ["a", "b"]})
    assert reward_rule(deadline) is deadline_reward


def cell_step(env, step, blocked, dropped, decision) -> Outcomes:
    env = np.asarray(env, np.int64)
    n = env.size
    f, i = np.zeros(n), np.zeros(n, np.int64)
    return Outcomes(env, np.asarray(step, np.int64), i, ~np.asarray(blocked), ~np.asarray(dropped), f, f, f, f, i, f,
                    i, np.full((n, 1), np.nan), np.full((n, 1), np.nan), decision=np.asarray(decision),
                    measures={"blocked": np.asarray(blocked), "dropped": np.asarray(dropped), "type": i})


def test_cell_charges_by_hand():
    # step 7, five instances, actions (1, 1, 0, 1, 1):
    # env 0: the UE of step 7 admitted but did not fit (blocked) -> not carried; one drop
    # env 1: the UE of step 7 fitted; two admitted UEs of earlier steps dropped
    # env 2: refused by the action -> not carried
    # env 3: a row of step 5 blocked (a handover's): the UE of step 7 is still carried;
    #        a dropped handover session is no decision and not charged
    # env 4: nothing happened
    done = cell_step(env=[0, 0, 1, 1, 1, 2, 3, 3],
                     step=[7, 3, 7, 2, 4, 7, 5, 6],
                     blocked=[True, False, False, False, False, True, True, False],
                     dropped=[False, True, False, True, True, False, False, True],
                     decision=[True, True, True, True, True, True, False, False])
    action = np.array([1, 1, 0, 1, 1])
    carried, drops = cell_charges(done, action, 7)
    assert carried.tolist() == [False, True, False, True, True]
    assert drops.tolist() == [1, 2, 0, 0, 0]
    assert action.tolist() == [1, 1, 0, 1, 1]  # the caller's actions are not changed
    np.testing.assert_allclose(blocking_reward(carried, None, drops, 5.0, 0.02), [-6.0, 0.1 - 10, -1.0, 0.1, 0.1])


def test_holding_cost_averages_to_the_mean_response_time(stats):
    # M/M/1, lam 0.5, mu 1: E[T] = 1 / (mu - lam) = 2. The holding cost of a step is the area
    # under the number in system until the next arrival; per decision its mean is
    # E[N] / lam = E[T] (Little), so -response_time_reward averages to E[T], and to the mean
    # response time of the same decisions measured one by one.
    spec = NetworkSpec.tandem([1], [Exponential(1.0)], Exponential(2.0), d_ub=10, eps=0.1)
    B, steps, warmup = 64, 1000, 300
    driver = Driver(spec, B, seed=7)
    for _ in range(warmup):
        driver.step(np.ones(B, np.int64))
    cost = np.zeros(B)
    for _ in range(steps):
        driver.step(np.ones(B, np.int64))
        cost -= response_time_reward(None, None, driver.holding, None, None)
    stats.assert_close(cost / steps, 2.0, "mean holding cost per decision, M/M/1")
    done, _ = collect(Driver(spec, B, seed=7), accept_all, steps, warmup)
    sojourn = stats.per_instance_mean(done, done.sojourn, B)
    stats.assert_close(cost / steps - sojourn, 0.0, "holding cost - measured response time, same arrivals")
