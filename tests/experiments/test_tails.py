"""Tail index of the response time of redundancy-d with Lomax sizes (slow statistical test):
nu for identical copies, d * nu for i.i.d. copies, by Hill's estimator."""


import numpy as np
import pytest


def test_hill_estimator_on_an_exact_pareto_sample(experiment):
    tails = experiment("tails")
    x = np.random.default_rng(0).pareto(3.0, 200_000) + 1.0  # tail index 3 exactly
    assert tails.hill(x, 2000) == pytest.approx(3.0, rel=0.07)


@pytest.mark.slow
def test_identical_copies_keep_nu_and_iid_copies_multiply_it_by_d(experiment):
    tails = experiment("tails")
    nu, d = 2.5, 2
    ident = tails.response_times("identical", nu, d, 4, 0.8, 600_000, 3)
    iid = tails.response_times("iid", nu, d, 4, 0.8, 600_000, 4)
    h_ident = np.mean([tails.hill(ident, k) for k in (100, 200, 400)])
    h_iid = np.mean([tails.hill(iid, k) for k in (100, 200, 400)])
    assert h_ident == pytest.approx(nu, rel=0.2)
    assert h_iid == pytest.approx(d * nu, rel=0.2)
    assert h_iid / h_ident > 1.6
