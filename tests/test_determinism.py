import numpy as np

from envs import make_vector


def rollout(seed, num_envs=32, steps=120):
    env = make_vector("paper_acyclic", num_envs, seed=seed)
    obs, _ = env.reset(seed=seed)
    trace = []
    for _ in range(steps):
        action = (obs.sum(1) < 8).astype(np.int64)
        obs, reward, _, _, info = env.step(action)
        trace.append((obs.copy(), reward.copy(), info["completed"]["delay"].copy()))
    return trace


def test_same_seed_same_result_different_seed_differs():
    a, b, c = rollout(5), rollout(5), rollout(6)
    for (oa, ra, da), (ob, rb, db) in zip(a, b, strict=True):
        np.testing.assert_array_equal(oa, ob)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(da, db)
    assert any(not np.array_equal(x[0], y[0]) for x, y in zip(a, c, strict=True))


def test_job_table_growth_keeps_every_job():
    # A tiny table that must grow many times under accept-all at high load.
    from envs import QueueNetworkSim, load_spec
    spec = load_spec("paper_tandem")
    small = QueueNetworkSim(spec, 16, seed=2, capacity=2)
    big = QueueNetworkSim(spec, 16, seed=2, capacity=4096)
    for _ in range(1500):
        ds, db = small.step(np.ones(16, bool)), big.step(np.ones(16, bool))
        ks = np.lexsort((ds.step, ds.env))
        kb = np.lexsort((db.step, db.env))
        np.testing.assert_array_equal(ds.step[ks], db.step[kb])
        np.testing.assert_allclose(ds.delay[ks], db.delay[kb])
    assert small.capacity > 2
    np.testing.assert_array_equal(small.jobs_in_system(), big.jobs_in_system())


def test_capacity_limit_raises_instead_of_dropping_jobs():
    import pytest

    from envs import CapacityError, NetworkSpec, QueueNetworkSim
    from envs.distributions import Exponential
    overloaded = NetworkSpec.tandem([1], [Exponential(2.0)], Exponential(1.0), d_ub=5, eps=0.1)
    sim = QueueNetworkSim(overloaded, 4, seed=0, capacity=4, max_jobs=32)
    with pytest.raises(CapacityError, match="max_jobs=32.*unstable"):
        for _ in range(2000):
            sim.step(np.ones(4, bool))
