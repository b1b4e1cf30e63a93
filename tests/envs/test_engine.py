"""The engine: same seed same result, job-table growth, capacity limit, reset of some instances."""

import numpy as np
import pytest

from envs import Engine, load_spec, make_vector


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
    from envs import Engine, load_spec
    spec = load_spec("paper_tandem")
    small = Engine(spec, 16, seed=2, capacity=2)
    big = Engine(spec, 16, seed=2, capacity=4096)
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

    from envs import CapacityError, Engine, NetworkSpec
    from envs.distributions import Exponential
    overloaded = NetworkSpec.tandem([1], [Exponential(2.0)], Exponential(1.0), d_ub=5, eps=0.1)
    sim = Engine(overloaded, 4, seed=0, capacity=4, max_jobs=32)
    with pytest.raises(CapacityError, match="max_jobs=32.*unstable"):
        for _ in range(2000):
            sim.step(np.ones(4, bool))


def test_reset_instances_empties_only_those():
    from envs import Engine, load_spec
    spec = load_spec("paper_acyclic")
    sim = Engine(spec, 8, seed=3)
    for _ in range(300):
        sim.step(np.ones(8, np.int64))
    before = sim.jobs_in_system().copy()
    assert (before[[1, 5]] > 0).all()
    sim.reset_instances(np.array([1, 5]))
    after = sim.jobs_in_system()
    assert after[[1, 5]].tolist() == [0, 0] and (sim.waiting()[[1, 5]] == 0).all()
    np.testing.assert_array_equal(np.delete(after, [1, 5]), np.delete(before, [1, 5]))
    done = [sim.step(np.ones(8, np.int64)) for _ in range(50)]
    # the reset instances only ever report jobs that arrived after the reset
    steps = np.concatenate([d.step[np.isin(d.env, [1, 5])] for d in done])
    assert steps.size and steps.min() >= 300


def test_nonhomogeneous_poisson_counts_per_phase_bin(stats):
    from envs import Engine, NetworkSpec
    spec = NetworkSpec.from_dict({
        "arrival": {"dist": "poisson", "profile": {"period": 10.0, "table": [0.2, 0.8, 0.5, 0.1]}},
        "stations": [{"name": "s", "servers": 2, "service": {"dist": "exponential", "mean": 1.0}}],
        "d_ub": 10, "eps": 0.1})
    assert spec.arrival_rate == pytest.approx(0.4) and spec.period == 10.0
    B, horizon = 100, 400.0
    sim = Engine(spec, B, seed=4)
    times = []
    while sim.now.min() < horizon:
        times.append(sim.now.copy())
        sim.step(np.ones(B, np.int64))
    t = np.stack(times)  # (steps, B)
    counted = t < horizon
    bins = np.floor((t % 10.0) / 2.5).astype(int)
    for j, rate in enumerate([0.2, 0.8, 0.5, 0.1]):
        per_instance = ((bins == j) & counted).sum(0).astype(float)
        stats.assert_close(per_instance, rate * 2.5 * horizon / 10.0, f"bin {j}")


def test_two_classes_with_their_own_deadlines(stats):
    # M/M/1 FCFS at load 0.8: the sojourn time is Exp(mu - lam) for every Poisson class
    # (PASTA), so P(T >= d) = exp(-0.2 d): gold (d_ub 8) 0.2019, silver (d_ub 14) 0.0608.
    from envs import Driver, NetworkSpec
    from envs.rollout import accept_all, collect
    spec = NetworkSpec.from_dict({
        "classes": [{"name": "gold", "arrival": {"dist": "exponential", "rate": 0.3}, "d_ub": 8},
                    {"name": "silver", "arrival": {"dist": "exponential", "rate": 0.5}}],
        "stations": [{"name": "s", "servers": 1, "service": {"dist": "exponential", "mean": 1.0}}],
        "d_ub": 14, "eps": 0.1})
    assert spec.num_classes == 2 and spec.class_deadlines().tolist() == [8.0, 14.0]
    B = 300
    done, obs = collect(Driver(spec, B, seed=6), accept_all, 2000, 1000, record_obs=True)
    assert obs.shape[2] == 3  # queue length, then the arriving job's class one-hot
    for c, d in enumerate((8.0, 14.0)):
        mine = done.job_class == c
        share = stats.per_instance_mean(done, mine * 1.0, B)
        stats.assert_close(share, (0.3, 0.5)[c] / 0.8, f"class {c} share")
        miss = np.bincount(done.env, weights=mine & ~done.success, minlength=B)
        count = np.bincount(done.env, weights=mine * 1.0, minlength=B)
        stats.assert_close(miss / count, np.exp(-0.2 * d), f"class {c} violation")
        np.testing.assert_array_equal(done.success[mine], done.delay[mine] < d)


def test_memory_bound_in_bytes_raises_before_memory_runs_out():
    from envs import CapacityError, Engine, NetworkSpec
    from envs.distributions import Exponential
    overloaded = NetworkSpec.tandem([1], [Exponential(2.0)], Exponential(1.0), d_ub=5, eps=0.1)
    sim = Engine(overloaded, 64, seed=0, capacity=4, max_bytes=200_000)
    assert sim.job_bytes(4) < 200_000 < sim.job_bytes(256)
    with pytest.raises(CapacityError, match="max_bytes=200000"):
        for _ in range(4000):
            sim.step(np.ones(64, np.int64))
    assert sim.job_bytes(sim.capacity) <= 200_000


@pytest.mark.parametrize("scenario", ["paper_tandem", "redundancy_ps"])
def test_holding_integrates_the_jobs_in_system(scenario):
    # Little's law, pathwise: the areas summed over the steps equal the time in system of
    # every admitted job up to the last arrival (all of it for those that left).
    spec = load_spec(scenario)
    sim = Engine(spec, 8, seed=3)
    rng = np.random.default_rng(0)
    area, total = np.zeros(8), np.zeros(8)
    for _ in range(300):
        done = sim.step(rng.integers(1 if spec.admission else 0, spec.num_actions, 8))
        area += sim.holding
        left = done.select(done.accepted)
        np.add.at(total, left.env, left.sojourn)
    live = sim.jobs.live
    still = np.where(live, sim.now[:, None] - sim.jobs.arrival_time, 0.0).sum(1)
    np.testing.assert_allclose(area, total + still, rtol=1e-9)
    assert (sim.holding >= 0).all() and area.min() > 0


def test_state_resumes_the_same_run_and_refuses_a_foreign_one():
    """``get_state``/``set_state`` continue a run exactly; a state of another scenario or
    another layout of the arrays is refused, naming the arrays, before anything is set."""
    spec = load_spec("cell_5g")
    eng = Engine(spec, 16, seed=3)
    for _ in range(50):
        eng.step(np.ones(16, np.int64))
    saved = eng.get_state()
    ahead = [eng.step(np.ones(16, np.int64)).departure_time for _ in range(20)]
    twin = Engine(spec, 16, seed=99)
    twin.set_state(saved)
    for expected in ahead:
        np.testing.assert_array_equal(twin.step(np.ones(16, np.int64)).departure_time, expected)
    del saved["dynamics"]["cell_bands"]
    with pytest.raises(ValueError, match=r"\['cell_bands'\].*same scenario and version"):
        twin.set_state(saved)
    with pytest.raises(ValueError, match="cell_"):
        Engine(load_spec("paper_tandem"), 16, seed=0).set_state(eng.get_state())
    with pytest.raises(ValueError, match="16 instances, not 8"):
        Engine(spec, 8, seed=0).set_state(eng.get_state())
