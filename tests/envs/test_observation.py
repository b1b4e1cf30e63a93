"""The observation encoding: layout, class one-hot, phase features, and its round trip."""

import numpy as np
import pytest

from envs import Driver, Engine, NetworkSpec, ObservationEncoding, load_spec

CLASSES = {"classes": [{"name": "a", "arrival": {"dist": "poisson", "rate": 0.3,
                                                 "profile": {"period": 24, "sinusoid": {"amplitude": 0.5}}}},
                       {"name": "b", "arrival": {"dist": "poisson", "rate": 0.2,
                                                 "profile": {"period": 24, "sinusoid": {"amplitude": 0.9,
                                                                                        "phase": 3.0}}}}],
           "stations": [{"name": "s1", "servers": 2, "service": {"dist": "exponential", "mean": 1.0}},
                        {"name": "s2", "servers": 1, "service": {"dist": "exponential", "mean": 0.5}}],
           "d_ub": 10, "eps": 0.1}


def test_default_is_the_papers_state():
    spec = load_spec("paper_tandem")
    enc = ObservationEncoding.for_spec(spec)
    assert enc.width == 3 and enc.scale(spec).tolist() == [3, 5, 2]
    sim = Engine(spec, 4, seed=0)
    for _ in range(50):
        sim.step(np.ones(4, np.int64))
    np.testing.assert_array_equal(enc.encode(sim), sim.waiting())
    both = ObservationEncoding.for_spec(spec, include_in_service=True)
    np.testing.assert_array_equal(both.encode(sim)[:, 3:], sim.busy())


def test_classes_and_phase_features():
    spec = NetworkSpec.from_dict(CLASSES)
    enc = ObservationEncoding.for_spec(spec)
    assert (enc.num_classes, enc.period, enc.width) == (2, 24.0, 2 + 2 + 2)
    sim = Engine(spec, 16, seed=1)
    for _ in range(30):
        obs = enc.encode(sim)
        np.testing.assert_array_equal(obs[:, 2:4], np.eye(2)[sim.arriving])
        angle = 2 * np.pi * (sim.now % 24) / 24
        np.testing.assert_allclose(obs[:, 4:], 1 + np.stack([np.sin(angle), np.cos(angle)], 1), atol=1e-6)
        assert (obs >= 0).all()
        sim.step(np.ones(16, np.int64))
    assert ObservationEncoding.from_dict(enc.to_dict()) == enc
    with pytest.raises(ValueError, match="observation"):
        enc.check(load_spec("paper_tandem"))


def test_spec_with_classes_round_trips():
    spec = NetworkSpec.from_dict(CLASSES)
    again = NetworkSpec.from_dict(spec.to_dict())
    assert again == spec


def test_pool_of_servers_is_seen_sorted_with_the_total_then_the_jobs_at_the_arriving_jobs_servers():
    spec = load_spec("redundancy_ps")
    enc = ObservationEncoding.for_spec(spec)
    assert enc.pool and enc.candidates == 4 and enc.width == 15
    assert enc.scale(spec).tolist() == [1.0] * 10 + [10.0] + [1.0] * 4
    sim = Engine(spec, 8, seed=0)
    for _ in range(100):
        sim.step(np.full(8, 1, np.int64))
    obs = enc.encode(sim)
    present = sim.waiting() + sim.busy()
    np.testing.assert_array_equal(obs[:, :10], -np.sort(-present, axis=1))
    assert (np.diff(obs[:, :10], axis=1) <= 0).all()
    np.testing.assert_array_equal(obs[:, 10], sim.jobs_in_system())
    # a job has d copies: the servers hold more copies than there are jobs
    assert (obs[:, :10].sum(1) >= obs[:, 10]).all()
    # the arriving job's d copies (d = 4 here) join exactly the servers whose counts come last
    every = np.arange(8)
    servers = sim.routing.copies(sim.jobs, every, sim.slot, np.full(8, 3))
    np.testing.assert_array_equal(obs[:, 11:], present[every[:, None], servers])
    assert len({tuple(row) for row in obs[:, 11:]}) > 1  # not a constant column
    # a policy saved before this feature reads its own (narrower) observation back
    old = {k: v for k, v in enc.to_dict().items() if k != "candidates"}
    assert ObservationEncoding.from_dict(old).width == 11


@pytest.mark.parametrize("candidates", [0, 2, 4])
def test_the_pools_one_pass_encoding_gives_the_floats_of_its_parts(candidates):
    """``pool_features`` (redundancy's hot path) against the features built part by part, the
    rate estimate included: float32 of the same float64 values."""
    spec = load_spec("redundancy_ps")
    enc = ObservationEncoding(10, pool=True, candidates=candidates, rate=True)
    sim = Engine(spec, 16, seed=5)
    for i in range(200):
        sim.step(np.arange(16) % 4 if i % 2 else np.zeros(16, np.int64))
    present = sim.waiting() + sim.busy()
    order = sim.jobs.order[np.arange(16), sim.slot][:, :candidates]
    parts = [-np.sort(-present, axis=1), sim.jobs_in_system()[:, None], np.take_along_axis(present, order, 1),
             1.0 / sim.gap_mean[:, None]]
    obs = enc.encode(sim)
    assert obs.dtype == np.float32 and obs.shape == (16, enc.width)
    np.testing.assert_array_equal(obs, np.concatenate(parts, 1).astype(np.float32))
    assert len(np.unique(obs[:, -1])) > 1


def test_observation_is_queues_busy_servers_and_the_type_signal_one_hot():
    spec = load_spec("pools")
    enc = ObservationEncoding.for_spec(spec)
    assert enc.width == 2 + 2 + 3 and ObservationEncoding.from_dict(enc.to_dict()) == enc
    driver = Driver(spec, 8, seed=0)
    obs = driver.reset(0)
    for _ in range(30):
        obs, _ = driver.step(np.arange(8) % spec.num_actions)
    eng = driver.engine
    np.testing.assert_array_equal(obs[:, :2], eng.waiting())
    np.testing.assert_array_equal(obs[:, 2:4], eng.busy())
    info = eng.jobs.info[np.arange(8), eng.slot]
    np.testing.assert_array_equal(obs[:, 4:], np.eye(3)[info])
    assert (info < 2).all()  # a signal is always shown under knowledge {signal: q}


def test_candidates_need_a_pool_of_identical_servers():
    with pytest.raises(ValueError, match="candidates.*pool=True"):
        ObservationEncoding(3, candidates=2)
