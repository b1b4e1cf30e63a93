"""envs/driver.py: the one path that steps a simulator. A hand trace of a D/D/1 queue
(observations, outcomes, holding areas, jobs in system); actions are validated before
anything moves; the same seed gives the same run; resets; the encoding is checked; and a
cell's steps without rows still carry its measures, so they join with the others."""

import numpy as np
import pytest

from envs import Driver, NetworkSpec, ObservationEncoding, Outcomes, load_spec
from envs.distributions import Deterministic


def dd1(service=1.5):
    """One server, a deterministic service, arrivals every 1.0 from t = 1; deadline 2."""
    return NetworkSpec.tandem([1], [Deterministic(service)], Deterministic(1.0), d_ub=2.0, eps=0.1)


def test_hand_trace_of_a_deterministic_queue():
    # Instance 0 accepts every job: job k arrives at 1 + k and needs 1.5, so the server is
    # busy from 1 on and job k leaves at 2.5 + 1.5 k (sojourns 1.5, 2, 2.5, ...).
    # Instance 1 rejects at even steps: a rejected job is scored by the probe (the delay it
    # would have had) at once; the accepted jobs 1 and 3 leave 1.5 after arriving.
    driver = Driver(dd1(), 2, seed=0)
    assert (driver.num_envs, driver.num_actions, driver.t) == (2, 2, 0)
    assert driver.observe().tolist() == [[0.0], [0.0]]
    expected = [  # per step: waiting seen at the next arrival, holding, jobs in system, rows (env, step, accepted, delay)
        ([0, 0], [1.0, 0.0], [1, 0], [(1, 0, False, 1.5)]),
        ([0, 0], [1.5, 1.0], [1, 1], [(0, 0, True, 1.5)]),
        ([0, 0], [2.0, 0.5], [1, 0], [(1, 2, False, 2.0), (0, 1, True, 2.0), (1, 1, True, 1.5)]),
        ([1, 0], [2.0, 1.0], [2, 1], []),
        ([1, 0], [2.5, 0.5], [2, 0], [(1, 4, False, 2.0), (0, 2, True, 2.5), (1, 3, True, 1.5)]),
    ]
    for t, (waiting, holding, present, rows) in enumerate(expected):
        obs, done = driver.step(np.array([1, t % 2]))
        assert driver.t == t + 1
        assert obs.tolist() == [[w] for w in waiting], t
        np.testing.assert_allclose(driver.holding, holding, err_msg=f"step {t}")
        assert driver.jobs_in_system().tolist() == present, t
        got = sorted(zip(done.env.tolist(), done.step.tolist(), done.accepted.tolist(), done.delay.tolist(),
                         strict=True))
        assert got == sorted(rows), t
        np.testing.assert_array_equal(done.success, done.delay < 2.0)  # a delay of exactly d_ub misses
        np.testing.assert_array_equal(obs, driver.observe())


@pytest.mark.parametrize("actions, words", [
    (np.array([1, 1, 1]), r"shape \(3,\)"),
    (np.array([1.0, 0.0]), "dtype float64"),
    (np.array([1, -1]), r"action -1 at instance 1 is not in \[0, 2\)"),
    (np.array([2, 0]), r"action 2 at instance 0 is not in \[0, 2\)"),
    (np.array([[1, 1]]), r"shape \(1, 2\)"),
])
def test_bad_actions_are_refused_before_anything_moves(actions, words):
    driver = Driver(dd1(), 2, seed=0)
    driver.step(np.array([1, 1]))
    now = driver.engine.now.copy()
    with pytest.raises(ValueError, match=words) as err:
        driver.step(actions)
    assert "0 reject, 1 accept" in str(err.value)  # the fix names the actions
    assert driver.t == 1 and (driver.engine.now == now).all()


def run(driver, steps=60, seed=0):
    rng = np.random.default_rng(seed)
    out, seen = [], []
    for _ in range(steps):
        obs, done = driver.step(rng.integers(0, driver.num_actions, driver.num_envs))
        out.append(done)
        seen.append(obs)
    return Outcomes.concat(out, driver.engine.N), np.stack(seen)


def test_same_seed_same_run_and_reset_replays_it():
    spec = load_spec("paper_acyclic")
    a, obs_a = run(Driver(spec, 8, seed=5))
    b, obs_b = run(Driver(spec, 8, seed=5))
    np.testing.assert_array_equal(obs_a, obs_b)
    for name in ("env", "step", "accepted", "delay", "sojourn", "departure_time"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    c, _ = run(Driver(spec, 8, seed=6))
    assert not np.array_equal(a.departure_time[:50], c.departure_time[:50])
    # reset(seed) starts the same run again from an empty system
    driver = Driver(spec, 8, seed=9)
    run(driver)
    first = driver.reset(seed=5)
    assert driver.t == 0 and (first == 0).all() and (driver.jobs_in_system() == 0).all()
    again, obs_again = run(driver)
    np.testing.assert_array_equal(obs_again, obs_a)
    np.testing.assert_array_equal(again.departure_time, a.departure_time)


def test_reset_instances_takes_a_mask_and_empties_only_those():
    driver = Driver(load_spec("paper_tandem"), 6, seed=2)
    for _ in range(200):
        driver.step(np.ones(6, np.int64))
    before = driver.jobs_in_system().copy()
    assert (before > 0).all()
    mask = np.array([False, True, False, False, True, False])
    obs = driver.reset_instances(mask)
    assert (driver.jobs_in_system()[mask] == 0).all() and (obs[mask] == 0).all()
    np.testing.assert_array_equal(driver.jobs_in_system()[~mask], before[~mask])
    np.testing.assert_array_equal(obs, driver.observe())


def test_the_encoding_given_is_used_and_checked():
    spec = load_spec("paper_tandem")
    wide = ObservationEncoding.for_spec(spec, include_in_service=True)
    driver = Driver(spec, 4, seed=0, encoding=wide)
    for _ in range(50):
        obs, _ = driver.step(np.ones(4, np.int64))
    assert obs.shape == (4, 2 * spec.num_stations)
    np.testing.assert_array_equal(obs, np.concatenate([driver.engine.waiting(), driver.engine.busy()], 1))
    with pytest.raises(ValueError, match="the policy reads 2 stations"):
        Driver(spec, 4, seed=0, encoding=ObservationEncoding(2))


def test_a_cells_steps_without_rows_still_carry_its_measures():
    driver = Driver(load_spec("cell_small"), 4, seed=0)
    parts, empty = [], 0
    for _ in range(100):
        _, done = driver.step(np.ones(4, np.int64))
        assert {"blocked", "dropped", "type"} <= set(done.measures), len(done)
        empty += len(done) == 0
        parts.append(done)
    assert empty > 0  # some steps had no rows
    joined = Outcomes.concat(parts, driver.engine.N)
    assert len(joined) == sum(len(p) for p in parts)
    assert joined.measures["blocked"].size == len(joined)
