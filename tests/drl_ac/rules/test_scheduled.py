"""Rules switched by the arrival-rate estimate (drl_ac/rules/scheduled.py): each rule acts where
the estimate lies nearest (geometrically) its own rate, in NumPy and in the exported torch
module alike, and a policy that does not observe the estimate cannot carry one."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from drl_ac.learning.qnet import RuleDefault
from drl_ac.rules.scheduled import ScheduledRule, scheduled
from drl_ac.rules.tuning import ConstantAction
from envs.observation import ObservationEncoding
from envs.systems.redundancy.rules import LoadThreshold, OwnServers


def rated(columns: int) -> ObservationEncoding:
    """An encoding of ``columns`` rule features (one station's counts), the rate estimate after them."""
    return ObservationEncoding(num_stations=columns, rate=True)


def test_each_rule_acts_between_the_geometric_midpoints_of_the_rates():
    low, high = ConstantAction(3, "d = 4"), LoadThreshold(k=5, high=1, low=0, column=0, labels=(1, 2, 3, 4))
    rule = ScheduledRule((low, high), (3.0, 12.0), rated(2), loads=(0.3, 0.9))
    assert rule.edges.tolist() == [6.0]  # sqrt(3 x 12)
    obs = np.array([[9, 0, 5.99], [9, 0, 6.0], [2, 0, 6.0], [2, 0, 100.0], [9, 0, 0.5]], np.float32)
    assert rule(obs).tolist() == [3, 0, 1, 1, 3]  # below 6: d = 4; at or above: the threshold on column 0
    assert "switched by the arrival-rate estimate" in rule.describe() and "d = 4 at 0.3" in rule.describe()


def test_the_torch_rule_acts_as_the_numpy_rule_on_random_observations():
    rules = (ConstantAction(3), OwnServers(d_max=4, m=2, column=1, actions=(0, 1, 2, 3)),
             LoadThreshold(k=4, high=1, low=0, column=0, labels=(1, 2, 3, 4)))
    rule = ScheduledRule(rules, (3.0, 6.0, 9.0), rated(5))
    rng = np.random.default_rng(0)
    obs = np.concatenate([rng.integers(0, 6, (4000, 5)), rng.uniform(1.0, 12.0, (4000, 1))], 1).astype(np.float32)
    module = RuleDefault(rule.guard_fields()["default_rule"], columns=5)
    got = module(torch.as_tensor(obs)).numpy()
    np.testing.assert_array_equal(got, rule(obs))
    assert len(set(got.tolist())) == 4  # every branch of every rule taken


def test_a_scheduled_rule_needs_the_rate_estimate_and_rules_that_can_guard():
    fields = ScheduledRule((ConstantAction(0), ConstantAction(1)), (1.0, 2.0), rated(3)).guard_fields()
    with pytest.raises(ValueError, match="rate_estimate"):
        RuleDefault(fields["default_rule"], columns=None)
    with pytest.raises(ValueError, match="ascending"):
        ScheduledRule((ConstantAction(0), ConstantAction(1)), (2.0, 1.0), rated(3))
    with pytest.raises(ValueError, match="arrival-rate estimate"):
        ScheduledRule((ConstantAction(0), ConstantAction(1)), (1.0, 2.0), replace(rated(3), rate=False))
    assert scheduled([ConstantAction(0), lambda obs: obs[:, 0]], [1.0, 2.0], rated(3)) is None
