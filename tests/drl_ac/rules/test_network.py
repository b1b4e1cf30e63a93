"""Tuned threshold rules and the paper's tabular R-learning."""

import numpy as np
import pytest

from drl_ac.evaluation.tabular import TabularRLearner, train_tabular
from drl_ac.learning.store import Experiences
from drl_ac.rules.network import (
    StationThresholds,
    TotalThreshold,
    WeightedThreshold,
    tune_total,
    wait_weights,
)
from drl_ac.theory.mmc_admission import threshold_policy
from envs import NetworkSpec, load_spec
from envs.distributions import Exponential


def test_tuning_finds_the_known_best_threshold():
    # M/M/1, mu = 1, arrival rate 0.9, sojourn deadline 8, eps 0.09. "accept iff waiting < k"
    # admits iff fewer than k + 1 jobs are present; the birth-death chain gives the violation
    # of each: the largest feasible is n < 7 (violation 0.075; n < 8 gives 0.107), so k = 6.
    K = max(K for K in range(1, 30) if threshold_policy(K, 1, 1.0, 0.9, 8.0).violation <= 0.09)
    assert K == 7
    spec = NetworkSpec.tandem([1], [Exponential(1.0)], Exponential(1 / 0.9), d_ub=8.0, eps=0.09)
    result = tune_total(spec, arrivals=60_000)
    assert result.rule.k == K - 1
    exact = threshold_policy(K, 1, 1.0, 0.9, 8.0)
    assert result.metrics["violation"] == pytest.approx(exact.violation, abs=0.015)
    assert result.metrics["acceptance"] == pytest.approx(exact.acceptance, abs=0.01)
    assert [t[0] for t in result.trace][:2] == ["sum q < 1", "sum q < 2"]


def test_undecided_candidates_get_larger_samples():
    # eps 0.001 above the exact violation of "accept iff n < 7": a 60k sample cannot tell
    # (its 95% half-width is ~0.006), so the tuner doubles it up to the cap, then decides;
    # "n < 2" is far below eps and is settled by the first sample.
    from drl_ac.rules.tuning import Tuner
    exact = threshold_policy(7, 1, 1.0, 0.9, 8.0)
    spec = NetworkSpec.tandem([1], [Exponential(1.0)], Exponential(1 / 0.9), d_ub=8.0, eps=exact.violation + 0.001)
    tuner = Tuner(spec, 60_000, 777, 400, max_arrivals=240_000)
    tuner.feasible(TotalThreshold(6))
    assert [t[1] for t in tuner.trace] == [60_000, 120_000, 240_000]
    tuner.feasible(TotalThreshold(1))
    assert tuner.trace[-1][:2] == ("sum q < 1", 60_000)


def test_rules_act_as_described():
    obs = np.array([[0, 0, 0], [3, 2, 1], [5, 0, 0]], np.float32)
    assert TotalThreshold(6).__call__(obs).tolist() == [1, 0, 1]
    assert StationThresholds((4, 3, 2))(obs).tolist() == [1, 1, 0]
    w = wait_weights(load_spec("paper_tandem"))
    assert w == pytest.approx((1.0, 1.0, 1.0))  # E[S]/c = 3/3, 5/5, 2/2
    assert WeightedThreshold(w, 5.5)(obs).tolist() == [1, 0, 1]


def test_tabular_update_matches_eq5_and_eq6_by_hand():
    learner = TabularRLearner(2, cap=3, alpha=0.5, beta=0.1)
    s, s2 = np.array([[1, 2]], np.float32), np.array([[0, 9]], np.float32)  # 9 is capped at 3
    i, j = learner.index(s)[0], learner.index(s2)[0]
    assert j == learner.index(np.array([[0, 3]]))[0]
    learner.q[i] = [0.2, 0.4]
    learner.q[j] = [1.0, -1.0]
    learner.rbar = 0.3
    exp = Experiences(s, np.array([1]), s2, np.array([True]), np.array([False]), np.zeros(1))
    learner.learn(exp, lam=8.0, eps=0.1)
    delta = -(1 - 0.1) * 8.0 - 0.3 + 1.0 - 0.4  # accepted, missed: r = -(1-eps) lam
    assert learner.q[i, 1] == pytest.approx(0.4 + 0.5 * delta)
    assert learner.q[i, 0] == pytest.approx(0.2)
    assert learner.rbar == pytest.approx(0.3 + 0.1 * delta)
    learner.learn(Experiences(s, np.array([0]), s2, np.array([False]), np.array([True]), np.zeros(1)),
                  lam=8.0, eps=0.1)
    assert learner.rbar == pytest.approx(0.3 + 0.1 * delta)  # not greedy: rbar unchanged
    assert TabularRLearner.exploration(0) == 0.5 and TabularRLearner.exploration(10**7) == 0.01


def test_tabular_training_runs_in_the_vector_env():
    spec = NetworkSpec.tandem([1], [Exponential(1.0)], Exponential(1 / 0.9), d_ub=8.0, eps=0.1, lam=2.0)
    learner = train_tabular(spec, 40_000, num_envs=16, seed=0)
    assert learner.greedy_actions(np.array([[0.0]]))[0] == 1  # an empty station: accept
    assert np.count_nonzero(learner.q) > 10
