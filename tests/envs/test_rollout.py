"""envs/rollout.py: windows in time (collect_time) keep exactly the rows a run to the end
would keep, though instances done with their window are emptied and stop costing steps."""

import numpy as np

from drl_ac.evaluation.metrics import phase_offsets
from envs import Driver, NetworkSpec, Outcomes
from envs.rollout import collect_time, relaxation_batches, settled


def _day_cell() -> NetworkSpec:
    """Periodic, long-tailed sessions, a moving channel: a window's last UE leaves long after it."""
    return NetworkSpec.from_dict({"name": "day", "eps": 0.05, "cell": {"prbs": 12, "drop": "lowest_priority", "types": [
        {"name": "video", "arrival": {"dist": "poisson", "profile": {"period": 60.0, "table": [1.0, 6.0, 2.0]}},
         "session": {"dist": "lognormal", "mean": 2.0, "scv": 3.0}, "gbr": 1.0,
         "cqi": {"up": 2.0, "down": 2.0, "range": [5, 10]}, "priority": 1},
        {"name": "voice", "arrival": {"dist": "poisson", "rate": 2.0}, "session": {"dist": "exponential", "mean": 1.0},
         "prbs": 1, "priority": 2}]}})


def _key(done: Outcomes) -> np.ndarray:
    cols = (done.env, done.arrival_time, done.departure_time, done.measures["blocked"], done.measures["dropped"])
    rows = np.stack([np.asarray(c, float) for c in cols], 1)
    return rows[np.lexsort(rows.T[::-1])]


def test_emptied_instances_change_no_window_row():
    spec, B = _day_cell(), 40
    start = phase_offsets(spec.period, B, seed=2)
    begin, end = start + 10.0, start + 16.0

    def policy(obs):
        return (obs[:, 2] < 10).astype(np.int64)  # PRBs in use below 10

    driver = Driver(spec, B, seed=7, start=start, probes=False)
    fast, _, _ = collect_time(driver, policy, begin, end)
    emptied = driver.jobs_in_system() == 0
    # the plain way: every instance runs until the last window UE has left
    driver = Driver(spec, B, seed=7, start=start, probes=False)
    eng, parts, obs = driver.engine, [], driver.observe()
    while (eng.now < end).any() or (eng.jobs.live & (eng.jobs.arrival_time < end[:, None])).any():
        obs, done = driver.step(policy(obs))
        parts.append(done)
    done = Outcomes.concat(parts, 1)
    slow = done.select((done.arrival_time >= begin[done.env]) & (done.arrival_time < end[done.env]))
    assert len(fast) > 1000 and fast.measures["dropped"].sum() > 10
    np.testing.assert_array_equal(_key(fast), _key(slow))
    assert emptied.sum() > (driver.jobs_in_system() == 0).sum() + B // 2  # most had nothing more to run


def _ar1(phi: float, batches: int, instances: int, seed: int = 0) -> np.ndarray:
    """Independent stationary AR(1) series x_t = phi x_{t-1} + e_t, one per instance."""
    rng = np.random.default_rng(seed)
    x = np.empty((batches, instances))
    x[0] = rng.normal(size=instances) / np.sqrt(1 - phi**2)
    for t in range(1, batches):
        x[t] = phi * x[t - 1] + rng.normal(size=instances)
    return x


def test_relaxation_batches_reads_an_ar1_series_and_ignores_a_common_drift():
    # autocorrelation phi^k: 1/2 + sum_k phi^k = 1/2 + phi / (1 - phi) = 9.5 at phi = 0.9 (e-fold time 9.5)
    x = _ar1(0.9, 2_000, 64)
    assert abs(relaxation_batches(x) - 9.5) < 0.8
    assert abs(relaxation_batches(_ar1(0.0, 2_000, 64)) - 0.5) < 0.1
    drift = np.linspace(0.0, 50.0, 2_000)[:, None]  # the same transient in every instance
    assert abs(relaxation_batches(x + drift) - relaxation_batches(x)) < 1e-9


def test_a_series_short_against_its_relaxation_time_is_not_settled():
    slow = _ar1(0.995, 60, 64)  # e-fold time about 200 batches: 60 are no steady state
    cut, stationary = settled(slow)
    assert not stationary and cut == 30
    fast = _ar1(0.5, 60, 64)  # relaxation time 1.5 batches: settled, its warm-up about 5 of them
    cut, stationary = settled(fast)
    assert stationary and 6 <= cut < 15
