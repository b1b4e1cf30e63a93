"""Closed-form queueing results against independent routes: published values, the factorial
forms, and stationary laws of birth-death chains summed directly."""

import math

import numpy as np
import pytest

from envs.queueing import (
    TandemStation,
    erlang_b,
    erlang_c,
    mg1_ps_conditional_sojourn,
    mg1_ps_mean_sojourn,
    mgc_ps_mean_sojourn,
    mmc_mean_sojourn,
    mmc_mean_wait,
    product_form_tandem_mean_sojourn,
)


def birth_death_mean(c: int, lam: float, mu: float, L: int = 4000) -> float:
    """E[number in system] of M/M/c by summing the truncated stationary law (log space)."""
    n = np.arange(L + 1)
    log_p = np.concatenate([[0.0], np.cumsum(np.log(lam / (np.minimum(n[1:], c) * mu)))])
    p = np.exp(log_p - log_p.max())
    return float((n * p).sum() / p.sum())


def erlang_b_factorial(c: int, a: float) -> float:
    terms = [a**k / math.factorial(k) for k in range(c + 1)]
    return terms[-1] / sum(terms)


def erlang_c_factorial(c: int, lam: float, mu: float) -> float:
    a, rho = lam / mu, lam / (c * mu)
    tail = a**c / math.factorial(c) / (1 - rho)
    return tail / (sum(a**k / math.factorial(k) for k in range(c)) + tail)


def test_erlang_b_published_values():
    assert round(erlang_b(10, 7.0), 6) == 0.078741
    assert round(erlang_b(10, 8.0), 6) == 0.121661


@pytest.mark.parametrize("c, a", [(1, 0.5), (3, 2.0), (10, 7.0), (25, 30.0), (60, 40.0)])
def test_erlang_b_matches_factorial_form(c, a):
    assert erlang_b(c, a) == pytest.approx(erlang_b_factorial(c, a), rel=1e-12)


def test_erlang_b_edges_and_large_cell():
    assert erlang_b(0, 3.0) == 1.0
    assert erlang_b(5, 0.0) == 0.0
    b = erlang_b(2000, 1900.0)  # a^c / c! overflows here; the recursion does not
    assert 0.0 < b < 0.05
    with pytest.raises(ValueError):
        erlang_b(-1, 1.0)


@pytest.mark.parametrize("c, lam, mu", [(1, 0.5, 1.0), (3, 2.4, 1.0), (8, 5.0, 0.9), (20, 15.0, 1.0)])
def test_erlang_c_matches_factorial_form(c, lam, mu):
    assert erlang_c(c, lam, mu) == pytest.approx(erlang_c_factorial(c, lam, mu), rel=1e-12)


def test_erlang_c_large_c_is_finite():
    assert 0.0 < erlang_c(300, 290.0, 1.0) < 1.0


@pytest.mark.parametrize("c, lam, mu", [(1, 0.7, 1.0), (2, 1.5, 1.0), (5, 4.0, 1.0), (4, 1.0, 0.3)])
def test_mmc_mean_sojourn_is_littles_law(c, lam, mu):
    """E[T] = E[N] / lam with E[N] from the birth-death chain; and wait + 1/mu."""
    assert mmc_mean_sojourn(c, lam, mu) == pytest.approx(birth_death_mean(c, lam, mu) / lam, rel=1e-9)
    assert mmc_mean_sojourn(c, lam, mu) == pytest.approx(mmc_mean_wait(c, lam, mu) + 1 / mu, rel=1e-12)
    # Little for the queue alone: E[waiting] = lam E[W] = C(c, a) rho / (1 - rho)
    rho = lam / (c * mu)
    assert lam * mmc_mean_wait(c, lam, mu) == pytest.approx(erlang_c(c, lam, mu) * rho / (1 - rho), rel=1e-12)


@pytest.mark.parametrize("lam, mu", [(0.3, 1.0), (0.9, 1.0), (2.0, 2.5)])
def test_mm1_sojourn(lam, mu):
    assert mmc_mean_sojourn(1, lam, mu) == pytest.approx(1 / (mu - lam), rel=1e-12)
    assert mg1_ps_mean_sojourn(lam, 1 / mu) == pytest.approx(1 / (mu - lam), rel=1e-12)


def test_mg1_ps():
    lam, mean = 0.6, 1.25  # rho = 0.75
    assert mg1_ps_mean_sojourn(lam, mean) == pytest.approx(5.0)
    assert mg1_ps_conditional_sojourn(2.0, lam, mean) == pytest.approx(8.0)
    # averaging the conditional sojourn over the sizes gives the mean (linear in x)
    xs = np.array([0.5, 1.0, 2.25])
    assert np.mean([mg1_ps_conditional_sojourn(x, lam, mean) for x in xs]) == pytest.approx(
        mg1_ps_mean_sojourn(lam, xs.mean()))


@pytest.mark.parametrize("c, lam, mean", [(1, 0.5, 1.0), (2, 1.2, 1.0), (4, 2.0, 1.5), (6, 1.0, 0.5)])
def test_mgc_ps_mean_sojourn(c, lam, mean):
    """Number in system = birth-death with rates lam, min(n, c) / mean; then Little."""
    assert mgc_ps_mean_sojourn(c, lam, mean) == pytest.approx(birth_death_mean(c, lam, 1 / mean) / lam, rel=1e-9)
    if c == 1:
        assert mgc_ps_mean_sojourn(1, lam, mean) == pytest.approx(mg1_ps_mean_sojourn(lam, mean), rel=1e-12)


def test_product_form_tandem():
    lam = 0.8
    stations = [TandemStation(1, 1.0), TandemStation(3, 2.0), TandemStation(2, 1.5, "ps"), (1, 0.5, "ps")]
    expected = 1 / (1.0 - lam) + mmc_mean_sojourn(3, lam, 0.5) + birth_death_mean(2, lam, 1 / 1.5) / lam \
        + 0.5 / (1 - 0.4)
    assert product_form_tandem_mean_sojourn(lam, stations) == pytest.approx(expected, rel=1e-9)
    assert product_form_tandem_mean_sojourn(lam, [(2, 1.0)]) == pytest.approx(mmc_mean_sojourn(2, lam, 1.0))
    with pytest.raises(ValueError, match="discipline"):
        product_form_tandem_mean_sojourn(lam, [(1, 1.0, "lifo")])
    with pytest.raises(ValueError, match="unstable"):
        product_form_tandem_mean_sojourn(lam, [(1, 1.0), (1, 1.3)])


def test_unstable_raises():
    for call in (lambda: erlang_c(2, 2.0, 1.0), lambda: mmc_mean_sojourn(1, 1.0, 1.0),
                 lambda: mg1_ps_mean_sojourn(1.0, 1.0), lambda: mgc_ps_mean_sojourn(2, 3.0, 1.0)):
        with pytest.raises(ValueError, match="unstable"):
            call()
