"""Random feed-forward networks (``envs.systems.network.generate``): valid, reproducible, at
their drawn load, with a deadline that is reachable and binds."""

from __future__ import annotations

import numpy as np
import pytest

from envs import Driver, NetworkSpec
from envs.rollout import accept_all, collect
from envs.systems.network.generate import path_service, random_network


@pytest.fixture(scope="module")
def networks() -> dict[int, dict]:
    return {seed: random_network(seed) for seed in (0, 1, 2)}


def test_a_seed_gives_the_same_network_and_seeds_differ(networks):
    assert random_network(1) == networks[1]
    assert len({repr(n) for n in networks.values()}) == 3


def test_a_network_is_feed_forward_reaches_every_station_and_sits_at_its_load(networks):
    for cfg in networks.values():
        spec = NetworkSpec.from_dict(cfg)
        routing = np.asarray(spec.routing)[:, : spec.num_stations]
        assert np.all(np.tril(routing) == 0)  # only forward: the stations' order is topological
        assert 2 <= spec.num_stations <= 6 and np.all(spec.visit_ratios() > 0)
        assert 0.8 - 1e-3 <= spec.utilization().max() <= 0.95 + 1e-3  # the rate is rounded to 4 digits
        assert spec.delay == "sojourn" and spec.eps == 0.1


def test_the_deadline_is_reachable_and_binds(networks):
    """On fresh random numbers: the service times alone exceed d_ub with probability below
    eps (a job that never waits meets it), and accepting every job violates eps."""
    for seed, cfg in networks.items():
        spec = NetworkSpec.from_dict(cfg)
        alone = (path_service(cfg, np.random.default_rng(seed + 100), 100_000) > spec.d_ub).mean()
        assert alone < spec.eps / 2 + 0.005, (seed, alone)
        done, _ = collect(Driver(spec, 64, seed=seed + 200), accept_all, 3_000, 3_000)
        violation = (done.sojourn[done.accepted] > spec.d_ub).mean()
        assert violation > spec.eps, (seed, violation)


def test_path_service_sums_the_services_of_a_tandem():
    """Two deterministic stations in tandem: every path takes 1 + 2 = 3."""
    cfg = {"name": "t", "arrival": {"dist": "exponential", "rate": 0.1}, "d_ub": 10, "eps": 0.1,
           "stations": [{"name": "a", "service": {"dist": "deterministic", "mean": 1.0}},
                        {"name": "b", "service": {"dist": "deterministic", "mean": 2.0}}],
           "entry": "a", "routing": {"a": "b", "b": "exit"}}
    assert np.all(path_service(cfg, np.random.default_rng(0), 100) == 3.0)
    cfg["routing"] = {"a": {"b": 0.25, "exit": 0.75}, "b": "exit"}
    total = path_service(cfg, np.random.default_rng(0), 100_000)
    assert set(np.unique(total)) == {1.0, 3.0} and abs((total == 3.0).mean() - 0.25) < 0.005


def test_loads_out_of_range_are_refused():
    with pytest.raises(ValueError, match="loads: want 0 < low <= high < 1"):
        random_network(0, loads=(0.9, 1.2))


def test_path_service_refuses_stations_out_of_the_routing_order():
    cfg = {"name": "t", "arrival": {"dist": "exponential", "rate": 0.1}, "d_ub": 10, "eps": 0.1,
           "stations": [{"name": "a", "service": {"dist": "deterministic", "mean": 1.0}},
                        {"name": "b", "service": {"dist": "deterministic", "mean": 2.0}}],
           "entry": "b", "routing": {"b": "a", "a": "exit"}}  # feed-forward, but not in the stations' order
    with pytest.raises(ValueError, match="routing goes back to an earlier station"):
        path_service(cfg, np.random.default_rng(0), 10)
