"""The delayed-completion store returns each decision's own state, action and next state."""

import numpy as np
import pytest

from drl_ac.learning.store import DelayedCompletionStore
from envs import make_vector


@pytest.mark.parametrize("horizon", [2, 64])
def test_every_completed_experience_is_its_own_decision(horizon):
    B, steps = 16, 400
    env = make_vector("paper_tandem", B, seed=4)
    obs, _ = env.reset(seed=4)
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
        obs, _, _, _, info = env.step(action)
        seen_obs.append(obs.copy())
        store.put_obs(t + 1, obs)
        exp = store.complete(info["completed"], t + 1, env.spec.d_ub)
        c = info["completed"]
        for i in range(len(exp)):
            e, s = c["env"][i], c["step"][i]
            np.testing.assert_array_equal(exp.obs[i], seen_obs[s][e])
            np.testing.assert_array_equal(exp.next_obs[i], seen_obs[s + 1][e])
            assert exp.action[i] == seen_act[s][0][e] == c["accepted"][i]
            assert exp.greedy[i] == seen_act[s][1][e]
            assert exp.met[i] == (c["delay"][i] < env.spec.d_ub)
        completed += len(exp)
    assert completed + store.pending_count() == B * steps
    if horizon == 2:
        assert store.horizon > 2  # grew to hold jobs that stay long


def test_completion_reported_twice_is_an_error():
    store = DelayedCompletionStore(1, 1, horizon=4)
    store.put_obs(0, np.zeros((1, 1)))
    store.record(0, np.array([1]), np.array([True]))
    store.put_obs(1, np.ones((1, 1)))
    row = {"env": np.array([0]), "step": np.array([0]), "delay": np.array([1.0])}
    store.complete(row, 1, 5.0)
    with pytest.raises(RuntimeError, match="not pending"):
        store.complete(row, 1, 5.0)
