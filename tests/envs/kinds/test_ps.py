"""Processor-sharing stations against theory (4.5 standard errors over independent
instances) and a hand trace."""

import numpy as np
import pytest

from envs import Driver, Engine, NetworkSpec
from envs.distributions import Deterministic, Exponential, HyperExponential
from envs.queueing import (
    mg1_ps_mean_sojourn,
    mgc_ps_mean_sojourn,
    mmc_mean_sojourn,
    mmc_mean_wait,
)
from envs.rollout import accept_all, collect


def run(spec, num_envs=300, warmup=300, steps=1200, seed=2):
    """Loads of 0.5-0.8 relax within a few hundred arrivals; PS stations run the NumPy loop,
    whose cost is per step: many instances, few steps."""
    done, _ = collect(Driver(spec, num_envs, seed=seed), accept_all, steps, warmup)
    return done, num_envs


@pytest.mark.parametrize("size", [Exponential(1.0), Deterministic(1.0), HyperExponential(1.0, 4.0)])
def test_mg1_ps_mean_sojourn_is_insensitive(size, stats):
    lam = 0.7
    spec = NetworkSpec.tandem([1], [size], Exponential(1 / lam), d_ub=50, eps=0.1, kind="ps")
    done, B = run(spec)
    stats.assert_close(stats.per_instance_mean(done, done.sojourn, B), mg1_ps_mean_sojourn(lam, 1.0),
                       f"M/G/1-PS scv={size.scv}")


def test_mg1_ps_sojourn_of_a_job_of_size_x_is_x_over_one_minus_rho(stats):
    lam = 0.6
    spec = NetworkSpec.tandem([1], [HyperExponential(1.0, 3.0)], Exponential(1 / lam), d_ub=50, eps=0.1, kind="ps")
    done, B = run(spec)
    x = done.service[:, 0]
    for lo, hi in ((0.0, 0.3), (0.3, 1.5), (1.5, np.inf)):
        m = (x >= lo) & (x < hi)
        resid = np.where(m, done.sojourn - x / (1 - lam), 0.0)
        share = stats.per_instance_mean(done, m * 1.0, B)
        stats.assert_close(stats.per_instance_mean(done, resid, B) / share.mean(), 0.0, f"E[T - x/(1-rho) | x in [{lo}, {hi})]")


def test_mgc_ps_equals_mmc_mean_sojourn_for_any_size_law(stats):
    lam, c = 2.1, 3
    spec = NetworkSpec.tandem([c], [HyperExponential(1.0, 5.0)], Exponential(1 / lam), d_ub=50, eps=0.1, kind="ps")
    done, B = run(spec)
    truth = mgc_ps_mean_sojourn(c, lam, 1.0)
    assert truth == pytest.approx(mmc_mean_sojourn(c, lam, 1.0))
    stats.assert_close(stats.per_instance_mean(done, done.sojourn, B), truth, "M/G/3-PS")


def test_tandem_of_ps_stations_has_product_form(stats):
    lam, means = 0.5, [1.2, 0.8, 1.6]
    spec = NetworkSpec.tandem([1, 1, 1], [Exponential(m) for m in means], Exponential(1 / lam), d_ub=50, eps=0.1,
                              kind="ps")
    done, B = run(spec)
    stats.assert_close(stats.per_instance_mean(done, done.sojourn, B),
                       sum(mg1_ps_mean_sojourn(lam, m) for m in means), "PS tandem end to end")


def test_mixed_kinds_fcfs_then_ps(stats):
    # Burke: the FCFS M/M/2 station's departures are Poisson, so the PS station sees M/M/1-PS.
    lam = 0.6
    fcfs = NetworkSpec.tandem([2, 1], [Exponential(2.5), Exponential(1.0)], Exponential(1 / lam), d_ub=50, eps=0.1)
    stations = (fcfs.stations[0], fcfs.stations[1].__class__("s2", 1, Exponential(1.0), "ps"))
    spec = NetworkSpec(fcfs.name, stations, fcfs.routing, fcfs.entry, fcfs.arrival, 50.0, 0.1)
    done, B = run(spec)
    truth = mmc_mean_wait(2, lam, 0.4) + 2.5 + mg1_ps_mean_sojourn(lam, 1.0)
    stats.assert_close(stats.per_instance_mean(done, done.sojourn, B), truth, "FCFS M/M/2 then M/M/1-PS")


def test_ps_hand_trace(set_service):
    # Arrivals at t = 1, 2, 3 (only the first two admitted). Job A: work 3 at t = 1; job B:
    # work 1 at t = 2. From 2 they share the server (rate 1/2 each): B needs 2 more time
    # units and leaves at 4, when A has 3 - 1 - 1 = 1 left; alone again, A leaves at 5.
    spec = NetworkSpec.tandem([1], [Deterministic(1.0)], Deterministic(1.0), d_ub=50, eps=0.1, kind="ps")
    sim = Engine(spec, 1, seed=0)
    set_service(sim, 3.0)
    sim.step(np.array([1]))
    set_service(sim, 1.0)
    sim.step(np.array([1]))
    assert sim.waiting().tolist() == [[1]] and sim.busy().tolist() == [[1]]
    out = [sim.step(np.array([0])), sim.drain()]
    left = {int(s): (d, a) for o in out for s, d, a in zip(o.step, o.departure_time, o.accepted, strict=True) if a}
    assert left == {0: (5.0, True), 1: (4.0, True)}
    probe = out[0]
    # the probe of the job rejected at t = 3 (work 1): shares with A (1 left) and B (0.5 left)
    # at rate 1/3: B leaves at 4.5; then 1/2 each: the probe job (0.5 left) and A (0.5 left)
    # both finish at 5.5: sojourn 2.5.
    assert probe.sojourn[probe.step == 2].tolist() == [pytest.approx(2.5)]
