"""The engine against queueing theory. Tolerances are 4.5 standard errors computed from
independent instances (B replications), so a correct engine fails with probability ~1e-5."""

import numpy as np
import pytest

from drl_ac.theory.queueing import mmc_mean_wait, mmc_wait_tail, pk_mean_wait
from envs import NetworkSpec, QueueNetworkSim
from envs.distributions import Deterministic, Exponential, Gamma
from envs.rollout import accept_all, collect

Z = 4.5


def per_instance_mean(done, values, num_envs):
    total = np.bincount(done.env, weights=values, minlength=num_envs)
    count = np.bincount(done.env, minlength=num_envs)
    return total / count


def assert_close(instance_means, truth, label):
    est = instance_means.mean()
    se = instance_means.std(ddof=1) / np.sqrt(instance_means.size)
    assert abs(est - truth) < Z * se, f"{label}: simulated {est:.4f} +- {se:.4f}, theory {truth:.4f}"


def run(spec, num_envs=400, warmup=1500, steps=2500, seed=1):
    sim = QueueNetworkSim(spec, num_envs, seed=seed)
    return collect(sim, accept_all, steps, warmup, record_obs=True)


@pytest.mark.parametrize("c, mu", [(1, 1.0), (3, 1 / 3)])
def test_mmc_mean_wait_and_erlang_c_tail(c, mu):
    lam = 0.75
    spec = NetworkSpec.tandem([c], [Exponential(1 / mu)], Exponential(1 / lam), d_ub=10, eps=0.1)
    done, _ = run(spec)
    w = done.wait[:, 0]
    assert_close(per_instance_mean(done, w, 400), mmc_mean_wait(c, lam, mu), "mean wait")
    for t in (0.0, 2.0, 6.0):
        assert_close(per_instance_mean(done, (w > t) * 1.0, 400), mmc_wait_tail(c, lam, mu, t), f"P(W>{t})")


@pytest.mark.parametrize("service", [Deterministic(1.0), Gamma(1.0, 0.5), Gamma(1.0, 2.0)])
def test_mg1_mean_wait_pollaczek_khinchine(service):
    lam = 0.7
    spec = NetworkSpec.tandem([1], [service], Exponential(1 / lam), d_ub=10, eps=0.1)
    done, _ = run(spec, steps=3000)
    truth = pk_mean_wait(lam, service.mean, service.second_moment)
    assert_close(per_instance_mean(done, done.wait[:, 0], 400), truth, f"M/G/1 scv={service.scv}")


def test_tandem_of_mmc_stations_each_behaves_as_mmc_and_obeys_littles_law():
    lam = 0.8
    servers, mus = [2, 3, 1], [0.5, 0.4, 1.0]
    spec = NetworkSpec.tandem(servers, [Exponential(1 / m) for m in mus], Exponential(1 / lam),
                              d_ub=30, eps=0.1)
    done, obs = run(spec)
    for n, (c, mu) in enumerate(zip(servers, mus, strict=True)):
        wait = per_instance_mean(done, done.wait[:, n], 400)
        assert_close(wait, mmc_mean_wait(c, lam, mu), f"station {n} mean wait")
        # Little's law for the queue, with the time-average queue length read at Poisson
        # arrivals (PASTA): Lq = lam * Wq, and both against Erlang C.
        queue = obs[:, :, n].mean(0)
        assert_close(queue, lam * mmc_mean_wait(c, lam, mu), f"station {n} queue length")
        assert_close(queue - lam * wait, 0.0, f"station {n} Little's law")
    # end-to-end sojourn is the sum of waits and services
    total = np.nansum(done.wait, 1) + np.nansum(done.service, 1)
    np.testing.assert_allclose(done.sojourn, total, rtol=1e-9, atol=1e-9)


def test_branching_frequencies_follow_routing():
    from envs import load_spec
    spec = load_spec("paper_acyclic")
    done, _ = run(spec, num_envs=200, warmup=200, steps=1000)
    visited_a = ~np.isnan(done.wait[:, 1])
    visited_b = ~np.isnan(done.wait[:, 2])
    assert not (visited_a & visited_b).any()
    assert (visited_a | visited_b).all() and (~np.isnan(done.wait[:, [0, 3]])).all()
    p = visited_a.mean()
    se = np.sqrt(0.67 * 0.33 / visited_a.size)
    assert abs(p - 0.67) < Z * se
