"""Differential Q-learning: the TD update by hand, and rbar converging to a known gain."""

import numpy as np
import pytest
import torch

from drl_ac.learning.learner import DifferentialQLearner, LearnerConfig
from drl_ac.learning.qnet import RuleDefault
from drl_ac.learning.replay import Batch
from envs.reward import response_time_reward


def linear_learner(b0, b1, **kw):
    cfg = LearnerConfig(hidden=(), lr=0.01, beta=0.1, batch_size=1, target_every=10**9, **kw)
    learner = DifferentialQLearner(1, torch.ones(1), cfg, torch.device("cpu"))
    with torch.no_grad():
        for net in (learner.q, learner.target):
            net.body[0].weight.zero_()
            net.body[0].bias.copy_(torch.tensor([b0, b1]))
    return learner


def batch(action, met, greedy=True, cost=0.0):
    return Batch(torch.zeros(1, 1), torch.tensor([action]), torch.zeros(1, 1), torch.tensor([greedy]),
                 torch.tensor([met]), torch.tensor([cost]))


def test_td_update_by_hand():
    # Q(s, .) = (0.5, 2.0) everywhere; accept and meet: r = eps*lam = 0.1*8 = 0.8, rbar = 0.
    # delta = 0.8 - 0 + max(0.5, 2.0) - Q(s, accept)=2.0 = 0.8
    learner = linear_learner(0.5, 2.0)
    learner.update(batch(1, True), lam=8.0, eps=0.1)
    assert float(learner.rbar) == pytest.approx(0.1 * 0.8)  # beta * delta (greedy experience)
    b = learner.q.body[0].bias.detach()
    # Adam's first step moves a parameter by lr * sign(gradient): Q(s, accept) up, Q(s, reject) untouched
    assert b[1].item() == pytest.approx(2.0 + 0.01, abs=1e-6)
    assert b[0].item() == pytest.approx(0.5, abs=1e-7)


def test_rbar_update_only_from_greedy_experiences_unless_differential():
    # reject and meet: r = -1, delta = -1 + 2.0 - 0.5 = 0.5
    paper = linear_learner(0.5, 2.0)
    paper.update(batch(0, True, greedy=False), lam=8.0, eps=0.1)
    assert float(paper.rbar) == 0.0
    diff = linear_learner(0.5, 2.0, rbar_update="differential")
    diff.update(batch(0, True, greedy=False), lam=8.0, eps=0.1)
    assert float(diff.rbar) == pytest.approx(0.1 * 0.5)


def test_rbar_converges_to_gain_of_small_mdp():
    """Two states. In s0 accepting meets the deadline (r = eps*lam = 0.4) and leads to s1;
    rejecting there is an unnecessary rejection (r = -1) and stays in s0. In s1 accepting
    misses (r = -(1-eps)*lam = -3.6), rejecting is free (r = 0); both lead to s0.
    The optimal policy alternates accept / reject: gain (0.4 + 0) / 2 = 0.2."""
    lam, eps = 4.0, 0.1
    cfg = LearnerConfig(hidden=(16,), lr=3e-3, beta=0.02, batch_size=64, target_every=50)
    torch.manual_seed(0)
    learner = DifferentialQLearner(1, torch.ones(1), cfg, torch.device("cpu"))
    rng = np.random.default_rng(0)
    s = np.zeros(64, dtype=np.float32)
    for _ in range(3000):
        obs = torch.from_numpy(s[:, None])
        greedy_a = learner.greedy_actions(obs).numpy()
        a = np.where(rng.random(64) < 0.2, rng.integers(0, 2, 64), greedy_a)
        met = s == 0
        nxt = np.where((s == 0) & (a == 1), 1.0, 0.0).astype(np.float32)
        learner.update(Batch(obs, torch.from_numpy(a), torch.from_numpy(nxt[:, None]),
                             torch.from_numpy(a == greedy_a), torch.from_numpy(met), torch.zeros(64)), lam, eps)
        s = nxt
    assert float(learner.rbar) == pytest.approx(0.2, abs=0.03)
    policy = learner.greedy_actions(torch.tensor([[0.0], [1.0]])).tolist()
    assert policy == [1, 0]


def test_three_actions_and_a_control_reward():
    # K = 3, response-time objective: Q(s, .) = (1, 3, 2) everywhere; action 2 costs 4:
    # r = -4, delta = -4 - 0 + 3 - Q(s, 2) = -3; control systems take the argmax.
    cfg = LearnerConfig(hidden=(), lr=0.01, beta=0.1, batch_size=1, target_every=10**9)
    learner = DifferentialQLearner(1, torch.ones(1), cfg, torch.device("cpu"), num_actions=3,
                                   reward_rule=response_time_reward, admission=False)
    with torch.no_grad():
        for net in (learner.q, learner.target):
            net.body[0].weight.zero_()
            net.body[0].bias.copy_(torch.tensor([1.0, 3.0, 2.0]))
    assert learner.greedy_actions(torch.zeros(2, 1)).tolist() == [1, 1]
    learner.update(batch(2, True, cost=4.0), lam=0.0, eps=0.1)
    assert float(learner.rbar) == pytest.approx(0.1 * -3.0)
    b = learner.q.body[0].bias.detach()
    assert b[2].item() == pytest.approx(2.0 - 0.01, abs=1e-6) and b[0].item() == pytest.approx(1.0)


def control_learner(base=None, **kw):
    cfg = LearnerConfig(hidden=(), lr=0.01, beta=0.1, batch_size=1, target_every=10**9, **kw)
    learner = DifferentialQLearner(1, torch.ones(1), cfg, torch.device("cpu"), num_actions=3,
                                   reward_rule=response_time_reward, admission=False, base=base)
    with torch.no_grad():
        for net in (learner.q, learner.target):
            net.body[0].weight.zero_()
            net.body[0].bias.copy_(torch.tensor([1.0, 3.0, 2.0]))
    return learner


def test_a_base_rule_is_evaluated_not_maximised():
    # Q(s, .) = (1, 3, 2), the base rule takes action 2: the bootstrap is Q(s', 2) = 2, not 3.
    # r = -4, delta = -4 - 0 + 2 - Q(s, 2) = -4 (against -3 for Q-learning, above).
    learner = control_learner(RuleDefault({"kind": "constant", "action": 2}))
    learner.update(batch(2, True, cost=4.0), lam=0.0, eps=0.1)
    assert float(learner.rbar) == pytest.approx(0.1 * -4.0)


def test_rvi_rbar_is_the_mean_value_of_reference_states():
    # rbar = mean over the reference states of Q_target(s, base(s)) = 2 before the step, so
    # the target is r - 2 + 2 = -4 and no beta step moves rbar.
    learner = control_learner(RuleDefault({"kind": "constant", "action": 2}), rbar_update="rvi")
    learner.update(batch(2, True, cost=4.0), lam=0.0, eps=0.1)
    assert float(learner.rbar) == pytest.approx(2.0) and learner.reference.shape == (1, 1)
    state = learner.state_dict()
    other = control_learner(RuleDefault({"kind": "constant", "action": 2}), rbar_update="rvi")
    other.load_state_dict(state)
    assert torch.equal(other.reference, learner.reference)


@pytest.mark.parametrize("rbar_update", ["paper", "rvi"])
def test_base_rule_values_give_its_gain_and_the_improved_action(rbar_update):
    """One state, three actions costing 3, 1 and 2. Learning the values of the rule "always
    action 2" gives that rule's gain, -2 (rvi: Q(s, 2) = -2 - rbar + Q(s, 2), so rbar = -2
    too), not the optimal -1; its greedy action is the improvement, action 1; advantages
    Q(1) - Q(2) = +1 and Q(0) - Q(2) = -1."""
    torch.manual_seed(0)
    cfg = LearnerConfig(hidden=(8,), lr=3e-3, beta=0.02, batch_size=64, target_every=50, rbar_update=rbar_update)
    learner = DifferentialQLearner(1, torch.ones(1), cfg, torch.device("cpu"), num_actions=3,
                                   reward_rule=response_time_reward, admission=False,
                                   base=RuleDefault({"kind": "constant", "action": 2}))
    rng = np.random.default_rng(0)
    obs = torch.zeros(64, 1)
    for _ in range(3000):
        a = np.where(rng.random(64) < 0.5, rng.integers(0, 3, 64), 2)
        cost = np.array([3.0, 1.0, 2.0])[a]
        learner.update(Batch(obs, torch.from_numpy(a), obs, torch.from_numpy(a == 2), torch.ones(64, dtype=bool),
                             torch.from_numpy(cost).float()), 0.0, 0.1)
    q = learner.q(torch.zeros(1, 1))[0].detach()
    assert float(q[1] - q[2]) == pytest.approx(1.0, abs=0.05) and float(q[0] - q[2]) == pytest.approx(-1.0, abs=0.05)
    assert learner.greedy_actions(torch.zeros(1, 1)).tolist() == [1]
    assert float(learner.rbar) == pytest.approx(-2.0, abs=0.05)


def test_regress_fits_the_mean_of_skewed_rollout_labels():
    # one state, two actions; the labels of action 1 are skewed (0 w.p. 0.9, 10 w.p. 0.1): the
    # fit must be their mean 1 (what a policy improvement step needs), not their median 0
    cfg = LearnerConfig(hidden=(), lr=0.05, batch_size=200)
    learner = DifferentialQLearner(1, torch.ones(1), cfg, torch.device("cpu"), num_actions=2,
                                   reward_rule=response_time_reward, admission=False)
    rng = np.random.default_rng(0)
    for _ in range(400):
        action = torch.from_numpy(rng.integers(0, 2, 200))
        label = torch.where(action == 1, torch.from_numpy(10.0 * (rng.random(200) < 0.1)).float(), 0.0)
        learner.regress(Batch(torch.zeros(200, 1), action, torch.zeros(200, 1), action == 0,
                              torch.ones(200, dtype=torch.bool), label), lam=0.0, eps=0.1)
    q = learner.q(torch.zeros(1, 1))[0].detach()
    assert q[0].item() == pytest.approx(0.0, abs=0.1)  # minus the label: the reward of response_time
    assert q[1].item() == pytest.approx(-1.0, abs=0.15)
    assert float(learner.rbar) == 0.0  # the labels are relative: no gain to track
