"""experiments/stability.py, small: the bisection on the drift finds lambda* of i.i.d.
exponential copies (N mu, whatever d) and the drift test tells a stable load from an
unstable one."""

from types import SimpleNamespace

import pytest


def test_bisection_finds_lambda_star_of_iid_exponential_copies(experiment):
    stability = experiment("stability")
    args = SimpleNamespace(iterations=5, horizon=200.0, instances=64, seed=0, max_doublings=1, backlog=0)
    size = {"dist": "exponential", "mean": 1.0}
    measured = stability.measure(4, 2, "iid", size, 4.0, args)
    assert measured == pytest.approx(4.0, rel=0.03)


def test_drift_sign_separates_stable_and_unstable_loads(experiment):
    stability = experiment("stability")
    size = {"dist": "deterministic", "mean": 1.0}  # iid deterministic, d = 2: lambda* = N / 2 = 2
    low, se_low = stability.drift(stability.spec_for(4, 1.6, 2, "iid", size), 1.6, 3.0, 200.0, 64, 1)
    high, se_high = stability.drift(stability.spec_for(4, 2.4, 2, "iid", size), 2.4, 3.0, 200.0, 64, 2)
    assert low < -2 * se_low and high > 2 * se_high
