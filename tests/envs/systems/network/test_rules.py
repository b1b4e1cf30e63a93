"""Tuned threshold rules and the paper's tabular R-learning."""

import pickle

import numpy as np
import pytest

from drl_ac.evaluation.metrics import evaluate
from drl_ac.evaluation.tabular import TabularRLearner, train_tabular
from drl_ac.learning.store import Experiences
from envs import NetworkSpec, load_spec
from envs.distributions import Exponential
from envs.systems.network.rules import (
    RandomisedThreshold,
    StationThresholds,
    TotalThreshold,
    WeightedThreshold,
    tune_randomised_total,
    tune_total,
    wait_weights,
)
from envs.systems.network.theory import randomised_threshold_policy, threshold_policy


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


def test_rules_read_the_stations_queues_and_never_the_phase_of_a_clock():
    """On a scenario with a clock (paper_tandem_step) the observation has the phase after the
    queues (1 + sin, 1 + cos, in [0, 2]); a queue threshold must act as on the queues alone."""
    rng = np.random.default_rng(0)
    queues = rng.integers(0, 8, (500, 3)).astype(np.float32)
    clocked = np.concatenate([queues, rng.uniform(0, 2, (500, 2)).astype(np.float32)], 1)
    for rule in (TotalThreshold(9, 3), StationThresholds((4, 3, 2)), WeightedThreshold((1.0, 1.0, 1.0), 8.5)):
        np.testing.assert_array_equal(rule(clocked), rule(queues))
    a, b = RandomisedThreshold(9, 0.5, 3, 3), RandomisedThreshold(9, 0.5, 3, 3)
    np.testing.assert_array_equal(a(clocked), b(queues))
    spec = load_spec("paper_tandem_step")
    assert spec.system.encoding().width == 5  # three queues and the phase
    total = tune_total(spec, arrivals=4_000, num_envs=40, warmup=50)
    assert total.rule.columns == 3 and total.rule.describe().startswith("sum q < ")


def test_randomised_threshold_acts_as_described_and_replays_its_uniforms():
    obs = np.array([[2, 1], [3, 0], [1, 1], [5, 0]] * 2000, np.float32)  # sums 3, 3, 2, 5 with k = 3
    rule = RandomisedThreshold(3, 0.25, seed=4)
    first = rule(obs)
    at_k = obs.sum(1) == 3
    assert (first[obs.sum(1) < 3] == 1).all() and (first[obs.sum(1) > 3] == 0).all()
    assert first[at_k].mean() == pytest.approx(0.25, abs=0.02)  # 4000 draws: se 0.007
    later = rule(obs)
    assert not np.array_equal(later, first)  # fresh uniforms on each call ...
    rule.reset()
    np.testing.assert_array_equal(rule(obs), first)  # ... and the same ones after a reset
    np.testing.assert_array_equal(RandomisedThreshold(3, 0.25, seed=4)(obs), first)  # the seed decides
    sent = pickle.loads(pickle.dumps(rule))  # a rule travels to another process mid-stream
    assert sent == rule
    np.testing.assert_array_equal(sent(obs), rule(obs))
    assert RandomisedThreshold(3, 0.0)(obs).tolist() == TotalThreshold(3)(obs).tolist()
    assert RandomisedThreshold(3, 1.0)(obs).tolist() == TotalThreshold(4)(obs).tolist()
    assert len({RandomisedThreshold(k, p).describe() for k in (6, 7) for p in (0.0, 0.4213, 0.42135)}) == 6


def test_randomised_threshold_simulated_matches_birth_death():
    # mmc_c1: "sum q < 6, at 6 w.p. 0.5" is "n < 7, at n = 7 w.p. 0.5"; its exact violation
    # (0.09) is far from both deterministic neighbours' (0.075 for n < 7, 0.107 for n < 8)
    spec = load_spec("mmc_c1")
    exact = randomised_threshold_policy(7, 0.5, 1, 1.0, 0.9, 8.0)
    m = evaluate(RandomisedThreshold(6, 0.5, seed=3), spec, arrivals=200_000, seed=33)
    assert abs(m["violation"] - exact.violation) < 4 * m["violation_se"]
    assert abs(m["acceptance"] - exact.acceptance) < 4 * m["acceptance_se"]
    assert abs(m["objective"] - exact.objective) < 4 * m["objective_se"]


def test_randomised_tuning_spends_the_budget_the_threshold_leaves():
    # mmc_c1 from the tuned total threshold k = 6 (n < 7: exact violation 0.075, objective
    # 0.0459): the tuned p must be feasible by the exact birth-death figures, within the
    # tuner's noise (se ~0.002 at its largest sample), and reject fewer jobs that would meet
    # the deadline than the deterministic threshold (the LP optimum: p 0.78, objective 0.0322)
    spec = load_spec("mmc_c1")
    result = tune_randomised_total(spec, 6, arrivals=20_000, warmup=100)  # at most 8 jobs: 100 steps mix
    rule = result.rule
    exact = randomised_threshold_policy(rule.k + 1, rule.p, 1, 1.0, 0.9, 8.0)
    assert rule.k == 6 and 0 < rule.p < 1
    assert exact.violation <= spec.eps + 0.006
    assert exact.objective < threshold_policy(7, 1, 1.0, 0.9, 8.0).objective - 0.005
    assert result.trace[0][0] == "sum q < 6, at 6 w.p. 1"  # k + 1 checked first: the bracket's top


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
