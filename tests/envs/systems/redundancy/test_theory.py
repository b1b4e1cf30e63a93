"""Redundancy-d results against docs/systems/redundancy.md, closed forms derived here, Monte Carlo
of E[min], and the samplers of envs.distributions (so the survival dispatch cannot drift)."""

import math

import numpy as np
import pytest
from scipy.special import lambertw

from envs.distributions import (
    Deterministic,
    Empirical,
    Exponential,
    Gamma,
    HyperExponential,
    LogNormal,
    Lomax,
)
from envs.systems.redundancy.theory import (
    PhaseMixture,
    expected_min,
    fluid_growth_rate,
    gardner_fcfs_mean_response,
    stability_threshold,
    survival,
)

H2_EXAMPLE = PhaseMixture((0.1, 0.9), (0.19, 1.9))
ALL = [Exponential(1.5), Deterministic(2.0), Gamma(1.0, 0.5), Gamma(2.0, 3.0), LogNormal(1.0, 2.0),
       HyperExponential(1.0, 4.0), Lomax(3.0, 2.0), Empirical((1.0, 2.0, 2.0, 5.0)), H2_EXAMPLE]


def test_systems_md_example():
    assert H2_EXAMPLE.mean == pytest.approx(1.0)
    # by hand: 0.01 / 0.38 + 2 * 0.09 / 2.09 + 0.81 / 3.8
    assert expected_min(2, "iid", H2_EXAMPLE) == pytest.approx(0.01 / 0.38 + 0.18 / 2.09 + 0.81 / 3.8, rel=1e-12)
    assert round(expected_min(2, "iid", H2_EXAMPLE), 4) == 0.3256
    assert round(stability_threshold(1, 2, "iid", H2_EXAMPLE), 3) == 1.536
    assert stability_threshold(7, 2, "iid", H2_EXAMPLE) == pytest.approx(7 * stability_threshold(1, 2, "iid", H2_EXAMPLE))


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_iid_exponential_threshold_is_n_mu_for_every_d(d):
    mu, N = 0.8, 6
    assert stability_threshold(N, d, "iid", Exponential(1 / mu)) == pytest.approx(N * mu, rel=1e-12)
    assert stability_threshold(N, d, "iid", Exponential(1 / mu), method="quad") == pytest.approx(N * mu, rel=1e-8)


@pytest.mark.parametrize("dist", ALL, ids=lambda D: type(D).__name__)
def test_identical_copies_depend_on_the_mean_only(dist):
    for d in (1, 2, 4):
        assert stability_threshold(5, d, "identical", dist) == pytest.approx(5 / (d * dist.mean), rel=1e-12)


def test_iid_deterministic_threshold_falls_with_d():
    thresholds = [stability_threshold(4, d, "iid", Deterministic(2.0)) for d in (1, 2, 3)]
    np.testing.assert_allclose(thresholds, [4 / (d * 2.0) for d in (1, 2, 3)], rtol=1e-12)


def test_nbu_falls_nwu_rises():
    """Erlang-2 (NBU) loses capacity to copies; a variable hyperexponential (NWU) gains."""
    erl = [stability_threshold(1, d, "iid", Gamma(1.0, 0.5)) for d in (1, 2, 3, 4)]
    h2 = [stability_threshold(1, d, "iid", HyperExponential(1.0, 4.0)) for d in (1, 2, 3, 4)]
    assert np.all(np.diff(erl) < 0) and np.all(np.diff(h2) > 0)


@pytest.mark.parametrize("d", [1, 2, 3, 6])
def test_erlang2_closed_form(d):
    """Gamma(mean m, SCV 1/2) is Erlang-2 with rate r = 2/m: P(X > x) = e^{-rx}(1 + rx), so
    int P(X > x)^d dx = sum_j C(d, j) r^j int x^j e^{-d r x} dx = sum_j C(d, j) j! / (r d^{j+1})."""
    m = 1.7
    r = 2 / m
    closed = sum(math.comb(d, j) * math.factorial(j) / (r * d ** (j + 1)) for j in range(d + 1))
    assert expected_min(d, "iid", Gamma(m, 0.5)) == pytest.approx(closed, rel=1e-9)
    if d == 2:
        assert closed == pytest.approx(1.25 / r)


@pytest.mark.parametrize("dist", ALL, ids=lambda D: type(D).__name__)
def test_quadrature_agrees_with_closed_forms(dist):
    for d in (1, 2, 3):
        assert expected_min(d, "iid", dist, method="quad") == pytest.approx(expected_min(d, "iid", dist), rel=1e-7)


def test_closed_forms_by_hand():
    assert expected_min(3, "iid", Exponential(1.5)) == pytest.approx(0.5)
    assert expected_min(3, "iid", Lomax(3.0, 2.0)) == pytest.approx(2.0 / 8.0)  # Lomax(3 d, scale)
    # empirical resampling of (1, 2, 3): mean of min over the 9 ordered pairs = 14 / 9
    assert expected_min(2, "iid", Empirical((1.0, 2.0, 3.0))) == pytest.approx(14 / 9)
    assert expected_min(1, "iid", Lomax(1.2, 1.0)) == pytest.approx(5.0)


@pytest.mark.parametrize("dist", [LogNormal(1.0, 2.0), Gamma(2.0, 3.0), HyperExponential(1.0, 4.0)],
                         ids=lambda D: type(D).__name__)
def test_expected_min_monte_carlo(dist):
    rng = np.random.default_rng(3)
    for d in (2, 3):
        m = dist.sample(rng, (200_000, d)).min(1)
        se = m.std() / math.sqrt(m.size)
        assert abs(m.mean() - expected_min(d, "iid", dist)) < 4.5 * se


@pytest.mark.parametrize("dist", ALL, ids=lambda D: type(D).__name__)
def test_survival_matches_the_sampler(dist):
    """The survival dispatch against the empirical survival of envs' own sampler."""
    rng = np.random.default_rng(11)
    x = dist.sample(rng, 100_000)
    for q in np.quantile(x, [0.1, 0.3, 0.5, 0.8, 0.95]):
        emp = (x > q).mean()
        se = math.sqrt(max(emp * (1 - emp), 1e-4) / x.size)
        assert abs(survival(dist, q) - emp) < 4.5 * se + 1e-12, (q, emp)


def test_scaled_law():
    Y, S = Gamma(1.0, 0.5), Gamma(3.0, 0.2)
    assert expected_min(2, "scaled", scale=S, factor=Y) == pytest.approx(3.0 * expected_min(2, "iid", Y))
    # a deterministic scale of 1 is the i.i.d. law
    assert expected_min(3, "scaled", scale=Deterministic(1.0), factor=Y) == pytest.approx(expected_min(3, "iid", Y))
    rng = np.random.default_rng(5)
    m = S.sample(rng, 200_000) * Y.sample(rng, (200_000, 2)).min(1)
    assert abs(m.mean() - expected_min(2, "scaled", scale=S, factor=Y)) < 4.5 * m.std() / math.sqrt(m.size)


def test_bad_inputs_raise():
    class Weird:
        mean = 1.0

    with pytest.raises(ValueError, match="no survival function"):
        expected_min(2, "iid", Weird())
    with pytest.raises(ValueError, match="joint law"):
        expected_min(2, "copula", Exponential(1.0))
    with pytest.raises(ValueError, match="scale="):
        expected_min(2, "scaled", Exponential(1.0))
    with pytest.raises(ValueError):
        PhaseMixture((0.5, 0.4), (1.0, 2.0))


def test_gardner_values():
    assert round(gardner_fcfs_mean_response(3, 2, 2.4), 3) == 1.944
    assert round(gardner_fcfs_mean_response(5, 2, 4.0), 3) == 1.604


@pytest.mark.parametrize("k, lam", [(1, 0.5), (4, 3.0), (10, 9.5)])
def test_gardner_limits(k, lam):
    # d = 1: k independent M/M/1 queues, each fed lam / k
    assert gardner_fcfs_mean_response(k, 1, lam) == pytest.approx(1 / (1 - lam / k), rel=1e-12)
    # d = k: every job on every server, one M/M/1 with rate k mu
    assert gardner_fcfs_mean_response(k, k, lam) == pytest.approx(1 / (k - lam), rel=1e-12)
    with pytest.raises(ValueError, match="unstable"):
        gardner_fcfs_mean_response(k, 1, float(k))


def test_gardner_mu_scales_time():
    assert gardner_fcfs_mean_response(5, 3, 4.0, mu=2.0) == pytest.approx(gardner_fcfs_mean_response(5, 3, 2.0) / 2)


@pytest.mark.parametrize("N, d", [(1, 1), (4, 2), (6, 3)])
def test_fluid_growth_exponential_is_lambda_minus_capacity(N, d):
    """I.i.d. exponential copies: every busy server completes a copy, hence a job, at rate mu."""
    mu = 1.3
    for lam in (1.1 * N * mu, 2 * N * mu):
        assert fluid_growth_rate(N, d, lam, "iid", Exponential(1 / mu)) == pytest.approx(lam - N * mu, rel=1e-9)
    assert fluid_growth_rate(N, d, 0.9 * N * mu, "iid", Exponential(1 / mu)) == 0.0


@pytest.mark.parametrize("lam", [1.2, 2.0, 5.0])
def test_fluid_growth_md1_ps_lambert(lam):
    """N = d = 1, size x: alpha = lam (1 - e^{-alpha x}) has the root
    alpha = lam + W0(-lam x e^{-lam x}) / x (Lambert W, principal branch)."""
    x = 1.0
    truth = lam + lambertw(-lam * x * math.exp(-lam * x)).real / x
    assert fluid_growth_rate(1, 1, lam, "iid", Deterministic(x)) == pytest.approx(truth, rel=1e-9)
    # PS leaves work in partly served jobs: the number grows faster than lam - lambda*
    assert truth > lam - 1 / x


def test_fluid_growth_properties():
    N, d = 4, 2
    for law, D in [("iid", Deterministic(1.0)), ("iid", H2_EXAMPLE), ("identical", HyperExponential(1.0, 4.0)),
                   ("iid", Gamma(1.0, 0.5))]:
        ls = stability_threshold(N, d, law, D)
        rates = [fluid_growth_rate(N, d, f * ls, law, D) for f in (1.0, 1.01, 1.3, 2.0)]
        assert rates[0] == 0.0 and 0 < rates[1] < rates[2] < rates[3] < 2.0 * ls
    # high variability: small jobs still leave, so growth is below lam - lambda*
    ls = stability_threshold(N, d, "identical", HyperExponential(1.0, 4.0))
    assert fluid_growth_rate(N, d, 1.3 * ls, "identical", HyperExponential(1.0, 4.0)) < 0.3 * ls
    # a deterministic scale only rescales time
    a = fluid_growth_rate(N, d, 3.0, "scaled", scale=Deterministic(2.0), factor=Gamma(0.5, 0.5))
    assert a == pytest.approx(fluid_growth_rate(N, d, 3.0, "iid", Gamma(1.0, 0.5)), rel=1e-7)
    with pytest.raises(ValueError, match="scale"):
        fluid_growth_rate(N, d, 9.0, "scaled", scale=Gamma(1.0, 0.5), factor=Gamma(1.0, 0.5))
