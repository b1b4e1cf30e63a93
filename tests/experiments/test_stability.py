"""experiments/stability.py, small: the bisection on the drift finds lambda* of i.i.d.
exponential copies (N mu, whatever d), the drift test tells a stable load from an
unstable one, and the backlog it starts from is the near-critical fluid state (remaining
sizes by the stationary excess law, jobs leaving at rate lambda* at once)."""

from types import SimpleNamespace

import numpy as np
import pytest

from envs import Engine
from envs.distributions import Exponential


def test_bisection_finds_lambda_star_of_iid_exponential_copies(experiment):
    stability = experiment("stability")
    args = SimpleNamespace(iterations=5, horizon=200.0, instances=64, seed=0, max_doublings=1, backlog=200)
    size = {"dist": "exponential", "mean": 1.0}
    measured = stability.measure(4, 2, "iid", size, 4.0, args)
    assert measured == pytest.approx(4.0, rel=0.03)


def test_drift_sign_separates_stable_and_unstable_loads(experiment):
    stability = experiment("stability")
    size = {"dist": "deterministic", "mean": 1.0}  # iid deterministic, d = 2: lambda* = N / 2 = 2
    low, se_low = stability.drift(stability.spec_for(4, 1.8, 2, "iid", size), 1.8, 200.0, 64, 1, backlog=200)
    high, se_high = stability.drift(stability.spec_for(4, 2.2, 2, "iid", size), 2.2, 200.0, 64, 2, backlog=200)
    assert low < -2 * se_low and high > 2 * se_high


def test_excess_sizes_follow_the_stationary_excess_law(experiment):
    stability = experiment("stability")
    rng = np.random.default_rng(0)
    # deterministic 1: the remaining size is uniform on (0, 1)
    det = stability.excess_sizes(rng, lambda r, n: np.ones((n, 4)), 2, 200_000)
    assert det[:, 0].mean() == pytest.approx(0.5, abs=0.005) and det[:, 0].var() == pytest.approx(1 / 12, abs=0.002)
    assert (det[:, 0] == det[:, 1]).all()  # one attained service for all copies
    # i.i.d. exponential copies, d = 2: memoryless, so the copies' remaining sizes are i.i.d. Exp(1)
    exp = stability.excess_sizes(rng, lambda r, n: Exponential(1.0).sample(r, (n, 4)), 2, 200_000)
    assert exp[:, :2].mean() == pytest.approx(1.0, abs=0.01)
    assert np.corrcoef(exp[:, 0], exp[:, 1])[0, 1] == pytest.approx(0.0, abs=0.01)


def test_excess_backlog_leaves_at_rate_lambda_star(experiment):
    """d = 1, balanced H2 with SCV 4, N = 4: from the excess backlog each PS server
    completes jobs at rate f_e(0) = 1 / E[X] = 1, so with arrivals at rate 1 the drift is
    1 - 4 = -3; a backlog of fresh jobs would leave at f(0) = p1 mu1 + p2 mu2 = 1.60 per
    server (drift -5.4)."""
    stability = experiment("stability")
    size = {"dist": "hyperexponential", "mean": 1.0, "scv": 4.0}
    mean, se = stability.drift(stability.spec_for(4, 1.0, 1, "identical", size), 1.0, 10.0, 64, 3, backlog=400)
    assert abs(mean + 3.0) < 4 * se + 0.05 and se < 0.2


def test_load_backlog_holds_the_asked_jobs(experiment):
    stability = experiment("stability")
    spec = stability.spec_for(4, 1.0, 2, "identical", {"dist": "deterministic", "mean": 1.0})
    eng = Engine(spec, 8, seed=0)
    first = eng.now.copy()
    stability.load_backlog(eng, 50)
    assert (eng.jobs_in_system() == 200).all()  # 50 per server, none left in the burst
    assert (eng.now - first).max() < 1e-8
