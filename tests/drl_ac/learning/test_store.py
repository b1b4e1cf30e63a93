"""The delayed-completion store returns each decision's own state, action and next state."""

import numpy as np
import pytest

from drl_ac.learning.store import DelayedCompletionStore
from envs import Driver, NetworkSpec, Outcomes, load_spec


@pytest.mark.parametrize("horizon", [2, 64])
def test_every_completed_experience_is_its_own_decision(horizon):
    B, steps = 16, 400
    driver = Driver(load_spec("paper_tandem"), B, seed=4)
    obs = driver.reset(4)
    store = DelayedCompletionStore(B, obs.shape[1], horizon=horizon)
    rng = np.random.default_rng(0)
    seen_obs, seen_act = [obs.copy()], []
    store.put_obs(0, obs)
    completed = 0
    for t in range(steps):
        action = rng.integers(0, 2, B)
        greedy = rng.random(B) < 0.5
        store.record(t, action, greedy)
        seen_act.append((action.copy(), greedy.copy()))
        obs, done = driver.step(action)
        seen_obs.append(obs.copy())
        store.put_obs(t + 1, obs)
        exp = store.complete(done, t + 1)
        c = done.info()
        for i in range(len(done)):
            e, s = c["env"][i], c["step"][i]
            np.testing.assert_array_equal(exp.obs[i], seen_obs[s][e])
            np.testing.assert_array_equal(exp.next_obs[i], seen_obs[s + 1][e])
            assert exp.action[i] == seen_act[s][0][e] == c["accepted"][i] == c["action"][i]
            assert exp.greedy[i] == seen_act[s][1][e]
            assert exp.success[i] == (c["delay"][i] < 15.0) == c["success"][i]
        completed += len(done)
    assert completed + store.pending_count() == B * steps
    if horizon == 2:
        assert store.horizon > 2  # grew to hold jobs that stay long


def test_completion_reported_twice_is_an_error():
    store = DelayedCompletionStore(1, 1, horizon=4)
    store.put_obs(0, np.zeros((1, 1)))
    store.record(0, np.array([1]), np.array([True]))
    store.put_obs(1, np.ones((1, 1)))
    row = Outcomes.empty(1)
    row.env, row.step, row.delay, row.success = np.array([0]), np.array([0]), np.array([1.0]), np.array([True])
    row.accepted = np.array([True])
    store.complete(row, 1)
    with pytest.raises(RuntimeError, match="not pending"):
        store.complete(row, 1)


def test_an_admission_the_system_did_not_carry_is_stored_as_a_rejection():
    """A cell of 1 PRB: the UE admitted while the first one holds it does not fit; it is blocked,
    its row says accepted False, and the learner sees a rejection (its transition is one)."""
    spec = NetworkSpec.from_dict({"name": "one", "eps": 0.05, "cell": {"prbs": 1, "types": [
        {"name": "ue", "arrival": {"dist": "deterministic", "mean": 1.0}, "prbs": 1,
         "session": {"dist": "deterministic", "mean": 10.0}}]}})
    driver = Driver(spec, 1, seed=0)
    store = DelayedCompletionStore(1, driver.encoding.width)
    store.put_obs(0, driver.observe())
    admit = np.ones(1, np.int64)
    for t in range(2):
        store.record(t, admit, np.ones(1, bool))
        obs, done = driver.step(admit)
        store.put_obs(t + 1, obs)
        exp = store.complete(done, t + 1)
    assert list(done.measures["blocked"]) == [True] and list(done.action) == [1] and not done.accepted.any()
    assert list(exp.action) == [0] and not exp.success.any()


def test_decisions_charged_per_step_complete_at_once_with_their_own_states():
    B = 4
    driver = Driver(load_spec("redundancy_ps"), B, seed=2)
    obs = driver.reset(2)
    store = DelayedCompletionStore(B, obs.shape[1], horizon=2)
    store.put_obs(0, obs)
    for t in range(50):
        action = np.full(B, t % 4)
        store.record(t, action, np.ones(B, bool))
        nxt, _ = driver.step(action)
        store.put_obs(t + 1, nxt)
        exp = store.complete_step(t, driver.holding)
        np.testing.assert_array_equal(exp.obs, obs)
        np.testing.assert_array_equal(exp.next_obs, nxt)
        assert (exp.action == t % 4).all() and store.pending_count() == 0
        np.testing.assert_allclose(exp.cost, driver.holding.astype(np.float32))
        obs = nxt
    with pytest.raises(ValueError, match="complete_step"):
        store.complete_step(10, driver.holding)
