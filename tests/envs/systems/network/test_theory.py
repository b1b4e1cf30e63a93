"""Exact M/M/c admission optimum: closed form vs the engine, the LP vs hand and vs birth-death."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from envs import Driver, NetworkSpec, ObservationEncoding
from envs.distributions import Exponential
from envs.rollout import accept_all, collect
from envs.systems.network.theory import (
    best_threshold,
    meet_probability,
    randomised_threshold_policy,
    solve,
    solve_lp,
    threshold_policy,
)


@pytest.mark.parametrize("c, mu", [(1, 1.0), (3, 1 / 3)])
def test_meet_probability_matches_engine(c, mu):
    lam, d_ub = 0.8 * c * mu, 6.0
    spec = NetworkSpec.tandem([c], [Exponential(1 / mu)], Exponential(1 / lam), d_ub=d_ub, eps=0.1)
    B = 200
    driver = Driver(spec, B, seed=5, encoding=ObservationEncoding.for_spec(spec, include_in_service=True))
    done, obs = collect(driver, accept_all, 2500, 500, record_obs=True)
    n_seen = (obs[:, :, 0] + obs[:, :, 1]).astype(int)  # (steps, B): waiting + in service
    order = np.lexsort((done.step, done.env))
    met = (done.sojourn[order] <= d_ub).reshape(B, -1).T  # aligned with obs: (steps, B)
    for n in range(0, c + 6):
        mask = n_seen == n
        if mask.sum() < 2000:
            continue
        p = meet_probability(n, c, mu, d_ub)[0]
        # per-instance clusters for the standard error
        hits = (met & mask).sum(0)
        count = mask.sum(0)
        resid = hits - p * count
        se = math.sqrt((resid**2).sum()) / count.sum()
        assert abs(hits.sum() / count.sum() - p) < 4.5 * se + 1e-3, f"n={n}"


def test_meet_probability_closed_forms():
    # n < c: exponential service only; c = 1: Erlang(n + 1, mu)
    assert meet_probability(0, 2, 0.5, 3.0)[0] == pytest.approx(1 - math.exp(-1.5))
    assert meet_probability(2, 1, 1.0, 3.0)[0] == pytest.approx(1 - math.exp(-3) * (1 + 3 + 4.5))
    # c = 2, n = 2: W ~ Exp(2 mu), S ~ Exp(mu): P(W + S <= t) = 1 - 2 e^{-mu t} + e^{-2 mu t}
    mu, t = 0.7, 2.5
    assert meet_probability(2, 2, mu, t)[0] == pytest.approx(1 - 2 * math.exp(-mu * t) + math.exp(-2 * mu * t))


def test_lp_by_hand_single_server_tiny_truncation():
    # c = 1, mu = lam = 1, d = 3, eps = 0.1, states 0..2. Accept always in state 0;
    # in state 1 with probability a. Then p = (1, 1, a) / (2 + a), the constraint
    # (1 - P0 - eps) + a (1 - P1 - eps) <= 0 binds at a = (P0 + eps - 1) / (1 - P1 - eps),
    # and the objective is ((1 - a) P1 + a P2) / (2 + a), decreasing in a.
    e = math.exp(-3)
    P0, P1, P2 = 1 - e, 1 - e * 4, 1 - e * 8.5
    a = (P0 + 0.1 - 1) / (1 - P1 - 0.1)
    sol = solve_lp(1, 1.0, 1.0, 3.0, 0.1, truncation=2)
    np.testing.assert_allclose(sol.accept[:2], [1.0, a], atol=1e-7)
    np.testing.assert_allclose(sol.stationary, np.array([1, 1, a]) / (2 + a), atol=1e-9)
    assert sol.objective == pytest.approx(((1 - a) * P1 + a * P2) / (2 + a), abs=1e-9)
    assert sol.violation == pytest.approx(0.1, abs=1e-9)


@pytest.mark.parametrize("c, K", [(1, 4), (3, 7), (5, 12)])
def test_lp_stationary_distribution_equals_birth_death_for_fixed_threshold(c, K):
    mu, lam, L = 0.5, 0.45 * c, 20
    pinned = np.where(np.arange(L + 1) < K, 1.0, 0.0)
    sol = solve_lp(c, mu, lam, 10.0, 0.1, truncation=L, fixed_accept=pinned)
    weights = [1.0]
    for n in range(1, K + 1):
        weights.append(weights[-1] * lam / (min(n, c) * mu))
    expected = np.zeros(L + 1)
    expected[: K + 1] = np.array(weights) / sum(weights)
    np.testing.assert_allclose(sol.stationary, expected, atol=1e-9)
    np.testing.assert_allclose(threshold_policy(K, c, mu, lam, 10.0, truncation=L).stationary, expected, atol=1e-12)


def test_optimum_is_at_least_as_good_as_best_threshold_and_binds():
    for c, mu, lam, d in [(1, 1.0, 0.9, 8.0), (3, 1 / 3, 0.95, 10.0), (5, 0.2, 1.1, 15.0)]:
        opt, det = solve(c, mu, lam, d, 0.1), best_threshold(c, mu, lam, d, 0.1)
        assert opt.objective <= det.objective + 1e-12
        assert opt.violation == pytest.approx(0.1, abs=1e-7)  # the constraint binds (lam* > 0)
        assert det.violation <= 0.1 and det.threshold is not None
        # no threshold one step higher is feasible
        assert threshold_policy(det.threshold + 1, c, mu, lam, d).violation > 0.1


@pytest.mark.parametrize("c, mu, lam, d, K", [(1, 1.0, 0.9, 8.0, 7), (3, 1 / 3, 0.95, 10.0, 8)])
def test_randomised_threshold_is_the_lp_evaluation_of_its_policy(c, mu, lam, d, K):
    # the LP's balance equations with the policy pinned (x_n = a_n p_n) are an independent
    # evaluation of the closed form; p = 0 and p = 1 are the thresholds K and K + 1
    L = K + 4
    for p in (0.0, 0.3, 0.8, 1.0):
        pinned = np.where(np.arange(L + 1) < K, 1.0, 0.0)
        pinned[K] = p
        lp = solve_lp(c, mu, lam, d, 0.1, truncation=L, fixed_accept=pinned)
        mine = randomised_threshold_policy(K, p, c, mu, lam, d, truncation=L)
        np.testing.assert_allclose(mine.stationary, lp.stationary, atol=1e-9)
        assert (mine.violation, mine.objective, mine.acceptance) == pytest.approx(
            (lp.violation, lp.objective, lp.acceptance), abs=1e-9)
    for p, det in ((0.0, K), (1.0, K + 1)):
        mine, exact = randomised_threshold_policy(K, p, c, mu, lam, d), threshold_policy(det, c, mu, lam, d)
        assert mine.truncation == exact.truncation and mine.threshold == det
        assert (mine.violation, mine.objective, mine.acceptance) == (exact.violation, exact.objective, exact.acceptance)


def test_randomised_violation_is_continuous_and_increasing_in_p():
    ps = np.linspace(0, 1, 201)
    v = np.array([randomised_threshold_policy(7, p, 1, 1.0, 0.9, 8.0).violation for p in ps])
    steps = np.diff(v)
    assert (steps > 0).all()
    assert steps.max() < 2 * (v[-1] - v[0]) / (ps.size - 1)  # no jump: steps of the order of the mean slope


@pytest.mark.parametrize("c, mu, lam, d", [(1, 1.0, 0.9, 8.0), (3, 1 / 3, 0.95, 10.0)])  # mmc_c1, mmc_c3
def test_the_lp_optimum_is_the_best_threshold_randomised_at_its_margin(c, mu, lam, d):
    # a birth-death chain with one constraint: the optimum accepts below K, randomises at K
    # (the best deterministic threshold), rejects above, and spends eps exactly
    opt, det = solve(c, mu, lam, d, 0.1), best_threshold(c, mu, lam, d, 0.1)
    K = det.threshold
    p = brentq(lambda q: randomised_threshold_policy(K, q, c, mu, lam, d).violation - 0.1, 0.0, 1.0, xtol=1e-14)
    best = randomised_threshold_policy(K, p, c, mu, lam, d)
    assert best.objective == pytest.approx(opt.objective, abs=1e-9)
    assert best.acceptance == pytest.approx(opt.acceptance, abs=1e-9)
    np.testing.assert_allclose(opt.accept[:K], 1.0, atol=1e-7)
    assert opt.accept[K] == pytest.approx(p, abs=1e-6)
    np.testing.assert_allclose(opt.accept[K + 1:][opt.stationary[K + 1:] > 0], 0.0, atol=1e-7)
    assert best.objective < det.objective
