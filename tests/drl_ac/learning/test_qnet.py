"""The greedy rule: admission bias, control argmax, and the guard of a default action."""

import numpy as np
import torch

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.learning.qnet import GreedyPolicy, QNetwork, RuleDefault, greedy

Q = torch.tensor([[0.0, 1.0, 3.0],    # best 2, +3 over action 0, +2 over action 1
                  [2.0, 2.5, 1.0],    # best 1, +0.5 over 0
                  [1.0, 0.0, 0.5]])   # best 0


def test_admission_compares_best_admitting_action_with_reject():
    assert greedy(Q, True).tolist() == [2, 1, 0]  # row 3: 0.5 - 1.0 < 0 -> reject
    assert greedy(Q, True, bias=1.0).tolist() == [2, 0, 0]
    assert greedy(Q, True, bias=-0.6).tolist() == [2, 1, 2]


def test_control_is_argmax_without_default():
    assert greedy(Q, False).tolist() == [2, 1, 0]
    assert greedy(Q, False, bias=10.0).tolist() == [2, 1, 0]  # a bias alone does not guard
    assert greedy(Q, False, 5.0, default=-1).tolist() == [2, 1, 0]


def test_guard_leaves_the_default_only_by_the_bias():
    assert greedy(Q, False, 0.0, default=1).tolist() == [2, 1, 0]
    assert greedy(Q, False, 1.0, default=1).tolist() == [2, 1, 0]   # +2 >= 1; +1 >= 1 (row 3: 1 - 0)
    assert greedy(Q, False, 1.5, default=1).tolist() == [2, 1, 1]
    assert greedy(Q, False, 2.5, default=1).tolist() == [1, 1, 1]
    assert greedy(Q, False, 0.6, default=0).tolist() == [2, 0, 0]   # row 2: +0.5 < 0.6


def test_loaded_policy_applies_the_sections_default_and_bias():
    torch.manual_seed(0)
    net = QNetwork(3, None, (8,), 4)
    section = {"obs_dim": 3, "num_actions": 4, "admission": False, "hidden": [8], "scale": torch.ones(3),
               "state_dict": net.state_dict(), "scenario": {"stations": [{}, {}, {}]}}
    obs = np.random.default_rng(0).random((200, 3)).astype(np.float32) * 5
    q = net(torch.from_numpy(obs))
    plain = LoadedPolicy(section)(obs)
    assert (plain == q.argmax(1).numpy()).all()
    adv = (q.max(1).values - q[:, 2]).detach().numpy()
    bias = float(np.median(adv[adv > 0]))
    guarded = LoadedPolicy({**section, "default_action": 2, "bias": bias})(obs)
    assert (guarded == np.where(adv >= bias, plain, 2)).all()
    assert 0 < (guarded != plain).sum() < len(obs)
    module = GreedyPolicy(net, bias, False, 2)  # what is exported
    assert (module(torch.from_numpy(obs)).numpy() == guarded).all()


def test_a_rule_as_the_default_per_row():
    threshold = RuleDefault({"kind": "threshold", "column": 1, "k": 3, "below": 3, "above": 0})
    obs = torch.tensor([[9.0, 0.0], [9.0, 2.0], [0.0, 3.0], [0.0, 7.0]])
    assert threshold(obs).tolist() == [3, 3, 0, 0]  # d = 4 below 3 jobs, else d = 1
    table = RuleDefault({"kind": "table", "actions": [2, 3, 2]})  # the last 3 features: a one-hot
    info = torch.eye(3)[[1, 0, 2]]
    assert table(torch.cat([torch.zeros(3, 4), info], 1)).tolist() == [3, 2, 2]
    prefix = RuleDefault({"kind": "prefix", "column": 1, "m": 1, "actions": [0, 1, 1, 2]})  # d in (1, 2, 4)
    own = torch.tensor([[7.0, 9.0, 0.0, 1.0, 0.0], [0.0, 0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 5.0, 0.0],
                        [0.0, 0.0, 0.0, 1.0, 3.0]])
    assert prefix(own).tolist() == [2, 0, 1, 1]  # 3, 0, 1, 2 of the job's next servers hold <= 1 job
    # the guard keeps each row's rule action unless the advantage over it reaches the bias
    rows = torch.tensor([[0.0, 5.0], [0.0, 0.0], [0.0, 1.0]])  # the rule: action 0 in every row
    guard = RuleDefault({"kind": "threshold", "column": 1, "k": 10, "below": 0, "above": 2})
    assert greedy(Q, False, 1.5, default=guard(rows)).tolist() == [2, 0, 0]  # +3 >= 1.5; +0.5, +0 < 1.5


def test_loaded_policy_with_a_rule_and_infinite_bias_is_the_rule():
    torch.manual_seed(1)
    net = QNetwork(3, None, (8,), 4)
    section = {"obs_dim": 3, "num_actions": 4, "admission": False, "hidden": [8], "scale": torch.ones(3),
               "state_dict": net.state_dict(), "scenario": {"stations": [{}, {}, {}]}, "bias": float("inf"),
               "default_rule": {"kind": "threshold", "column": 2, "k": 4, "below": 3, "above": 1}}
    obs = np.random.default_rng(1).integers(0, 8, (100, 3)).astype(np.float32)
    assert (LoadedPolicy(section)(obs) == np.where(obs[:, 2] < 4, 3, 1)).all()


def test_rule_of_a_constant_action_and_of_a_rule():
    from drl_ac.learning.qnet import rule_of
    from drl_ac.rules.tuning import ConstantAction
    from envs.systems.redundancy.rules import LoadThreshold
    obs = torch.tensor([[0.0, 2.0], [0.0, 7.0]])
    assert RuleDefault(rule_of(ConstantAction(2).guard_fields()))(obs).tolist() == [2, 2]
    threshold = LoadThreshold(k=4, high=3, low=1, column=1, labels=(1, 2, 3, 4))
    assert RuleDefault(rule_of(threshold.guard_fields()))(obs).tolist() == [3, 1]
    assert threshold(obs.numpy()).tolist() == [3, 1]
