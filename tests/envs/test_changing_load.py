"""The scenarios whose load changes (redundancy_ps_daily, pools_daily, paper_tandem_step): each
hour's arrival rate is the documented load times its system's reference rate, the peak sits
where the rules tuned for the average load fail (redundancy: every fixed d >= 2 unstable), a
controller observes the phase, and a simulated day follows the table."""

from __future__ import annotations

import numpy as np
import pytest

from envs import Driver, load_spec

DAY = [0.3] * 6 + [0.5, 0.7, 0.8, 0.8, 0.8, 0.8, 0.9, 0.95, 0.95, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.3]
CASES = {"redundancy_ps_daily": ("redundancy_ps", DAY, 24_000.0), "pools_daily": ("pools", DAY, 24_000.0),
         "paper_tandem_step": ("paper_tandem", [0.8 / 0.95, 0.98 / 0.95], 20_000.0)}


@pytest.mark.parametrize("name", list(CASES))
def test_each_hours_rate_is_its_load_of_the_reference_rate(name):
    base, loads, period = CASES[name]
    spec, ref = load_spec(name), load_spec(base).system.reference_rate()
    (process,) = spec.arrival_processes()
    assert spec.period == period and spec.system.name == load_spec(base).system.name
    np.testing.assert_allclose(process.profile.table, ref * np.array(loads), rtol=1e-3)
    assert spec.arrival_rate == pytest.approx(ref * np.mean(loads), rel=1e-3)
    assert spec.system.encoding().period == period  # the controller sees the time of day


def test_the_redundancy_peak_overloads_every_fixed_degree_above_one():
    spec = load_spec("redundancy_ps_daily")
    peak, red = max(spec.arrival_processes()[0].profile.table), spec.block
    assert red.capacity(1) > peak > max(red.capacity(d) for d in (2, 3, 4))  # only d = 1 carries the peak
    assert min(spec.arrival_processes()[0].profile.table) < 0.5 * red.capacity(4)  # the night is light


def test_a_simulated_day_of_pools_follows_the_table():
    spec = load_spec("pools_daily")
    driver, table = Driver(spec, 32, seed=5), np.asarray(spec.arrival_processes()[0].profile.table)
    driver.reset()
    times = []
    while driver.engine.now.min() < spec.period:
        times.append(driver.engine.now.copy())
        driver.step(np.zeros(32, np.int64))
    t = np.concatenate(times)
    t = t[t < spec.period]
    counts = np.bincount((t // (spec.period / 24)).astype(int), minlength=24) / 32
    expected = table * spec.period / 24
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected / 32)), (counts, expected)
