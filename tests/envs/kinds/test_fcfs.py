"""FCFS stations against queueing theory (tolerances: 4.5 standard errors over independent
instances), and hand-computed traces."""

import numpy as np
import pytest

from envs import Driver, Engine, NetworkSpec
from envs.distributions import Deterministic, Exponential, Gamma
from envs.queueing import mmc_mean_wait, mmc_wait_tail, pk_mean_wait
from envs.rollout import accept_all, collect


def run(spec, num_envs=400, warmup=1500, steps=2500, seed=1):
    return collect(Driver(spec, num_envs, seed=seed), accept_all, steps, warmup, record_obs=True)


@pytest.mark.parametrize("c, mu", [(1, 1.0), (3, 1 / 3)])
def test_mmc_mean_wait_and_erlang_c_tail(c, mu, stats):
    lam = 0.75
    spec = NetworkSpec.tandem([c], [Exponential(1 / mu)], Exponential(1 / lam), d_ub=10, eps=0.1)
    done, _ = run(spec)
    w = done.wait[:, 0]
    stats.assert_close(stats.per_instance_mean(done, w, 400), mmc_mean_wait(c, lam, mu), "mean wait")
    for t in (0.0, 2.0, 6.0):
        stats.assert_close(stats.per_instance_mean(done, (w > t) * 1.0, 400), mmc_wait_tail(c, lam, mu, t), f"P(W>{t})")


@pytest.mark.parametrize("service", [Deterministic(1.0), Gamma(1.0, 0.5), Gamma(1.0, 2.0)])
def test_mg1_mean_wait_pollaczek_khinchine(service, stats):
    lam = 0.7
    spec = NetworkSpec.tandem([1], [service], Exponential(1 / lam), d_ub=10, eps=0.1)
    done, _ = run(spec, steps=3000)
    truth = pk_mean_wait(lam, service.mean, service.second_moment)
    stats.assert_close(stats.per_instance_mean(done, done.wait[:, 0], 400), truth, f"M/G/1 scv={service.scv}")


def test_tandem_of_mmc_stations_each_behaves_as_mmc_and_obeys_littles_law(stats):
    lam = 0.8
    servers, mus = [2, 3, 1], [0.5, 0.4, 1.0]
    spec = NetworkSpec.tandem(servers, [Exponential(1 / m) for m in mus], Exponential(1 / lam),
                              d_ub=30, eps=0.1)
    done, obs = run(spec)
    for n, (c, mu) in enumerate(zip(servers, mus, strict=True)):
        wait = stats.per_instance_mean(done, done.wait[:, n], 400)
        stats.assert_close(wait, mmc_mean_wait(c, lam, mu), f"station {n} mean wait")
        # Little's law for the queue, with the time-average queue length read at Poisson
        # arrivals (PASTA): Lq = lam * Wq, and both against Erlang C.
        queue = obs[:, :, n].mean(0)
        stats.assert_close(queue, lam * mmc_mean_wait(c, lam, mu), f"station {n} queue length")
        stats.assert_close(queue - lam * wait, 0.0, f"station {n} Little's law")
    # end-to-end sojourn is the sum of waits and services
    total = np.nansum(done.wait, 1) + np.nansum(done.service, 1)
    np.testing.assert_allclose(done.sojourn, total, rtol=1e-9, atol=1e-9)


def test_overtaking_job_is_served_first_downstream(overtaking_spec, set_service):
    # Arrivals at t = 1, 2, 3, 4. s1 services 5, 1, 1; s2 service 2 for all.
    # s1: job0 [1, 6], job1 [2, 3], job2 [3, 4] (server freed at 3 exactly).
    # s2: job1 [3, 5], job2 waits 4 -> [5, 7], job0 (overtaken) waits 6 -> [7, 9].
    sim = Engine(overtaking_spec, 1, seed=0)
    assert sim.now[0] == 1.0
    outs = []
    for s1 in (5.0, 1.0, 1.0):
        set_service(sim, s1, 2.0)
        outs.append(sim.step(np.array([True])))
    assert sim.observe().tolist() == [[0.0, 1.0]]  # at t = 4: job2 waits at s2
    assert sim.observe(include_in_service=True).tolist() == [[0.0, 1.0, 1.0, 1.0]]
    set_service(sim, 1.0, 2.0)
    outs.append(sim.step(np.array([False])))
    outs.append(sim.drain())
    rows = {}
    for o in outs:
        for i in range(len(o)):
            if o.accepted[i]:
                rows[int(o.step[i])] = (o.sojourn[i], o.delay[i], o.departure_time[i], o.wait[i].tolist())
    assert rows.keys() == {0, 1, 2}
    assert rows[0] == (8.0, 8.0, 9.0, [0.0, 1.0])
    assert rows[1] == (3.0, 3.0, 5.0, [0.0, 0.0])
    assert rows[2] == (4.0, 4.0, 7.0, [0.0, 1.0])
    # departures are reported in the step whose interval contains them
    order = [sorted(int(s) for s, a in zip(o.step, o.accepted, strict=True) if a) for o in outs]
    assert order[:4] == [[], [], [], [1]]


def test_paper_measure_is_waits_plus_last_service(overtaking_spec, set_service):
    spec = overtaking_spec.with_overrides(delay="paper")
    sim = Engine(spec, 1, seed=0)
    outs = []
    for s1 in (5.0, 1.0, 1.0):
        set_service(sim, s1, 2.0)
        outs.append(sim.step(np.array([True])))
    outs.append(sim.drain())
    delay = {int(s): d for o in outs for s, d in zip(o.step, o.delay, strict=True)}
    # job0: waits 0 + 1, last service 2; job1: 0 + 0 + 2; job2: 0 + 1 + 2
    assert delay == {0: 3.0, 1: 2.0, 2: 3.0}
