"""envs/rollout.py: windows in time (collect_time) keep exactly the rows a run to the end
would keep, though instances done with their window are emptied and stop costing steps."""

import numpy as np

from drl_ac.evaluation.metrics import phase_offsets
from envs import Driver, NetworkSpec, Outcomes
from envs.rollout import collect_time


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
