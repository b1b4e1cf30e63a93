"""The network plugin: loads by hand, the min-max load over mixed entry choices, kinds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from envs import NetworkSpec, ObservationEncoding, SpecError, load_spec
from envs.distributions import Exponential
from envs.systems.network.system import min_max_load


def _two_stations(rate: float, actions: list[str], objective: str, means=(1.0, 2.0), servers=(1, 2),
                  entry=None) -> NetworkSpec:
    return NetworkSpec.from_dict({
        "name": "two", "arrival": {"dist": "exponential", "rate": rate},
        "stations": [{"name": "a", "servers": servers[0], "service": {"dist": "exponential", "mean": means[0]}},
                     {"name": "b", "servers": servers[1], "service": {"dist": "exponential", "mean": means[1]}}],
        "entry": entry or {"a": 0.5, "b": 0.5}, "routing": {"a": "exit", "b": "exit"},
        "d_ub": 10, "eps": 0.1, "actions": actions, "objective": objective})


def test_overloaded_station_is_named_in_the_network_language():
    # tandem s1 -> s2 -> s3 at rate 0.5: loads 0.5 * (1, 3, 1.5) / (1, 1, 2) = 0.5, 1.5, 0.375
    spec = NetworkSpec.tandem([1, 1, 2], [Exponential(1.0), Exponential(3.0), Exponential(1.5)], Exponential(2.0),
                              d_ub=10, eps=0.1)
    problem = spec.system.stability_problem()
    assert problem.startswith("stations[1] (s2): load 1.500 >= 1 when every job is accepted")
    with pytest.raises(SpecError, match=r"^stations\[1\] \(s2\)"):
        spec.check_stable()
    stable = NetworkSpec.tandem([1, 1, 2], [Exponential(1.0), Exponential(1.8), Exponential(1.5)], Exponential(2.0),
                                d_ub=10, eps=0.1)
    assert stable.system.stability_problem() is None


def test_accept_all_loads_follow_the_routing():
    spec = load_spec("paper_acyclic")
    names, loads = spec.system.entry_loads()
    assert names == ["accept"]
    np.testing.assert_allclose(loads[:, 0], spec.utilization(), rtol=0, atol=0)


def test_control_network_may_mix_its_entries():
    # rate 1: a alone (1 server, mean 1) has load 1; b alone (2 servers, mean 2) load 1: each alone
    # is unstable, half and half gives 0.5 each
    spec = _two_stations(1.0, ["a", "b"], "response_time")
    assert spec.system.kind == "control" and spec.system.headline.measure == "mean_delay"
    assert spec.system.stability_problem() is None
    worst, w = min_max_load(spec.system.entry_loads()[1])
    assert worst == pytest.approx(0.5) and w == pytest.approx([0.5, 0.5])
    # rate 2.2: the best mix gives both 1.1
    problem = _two_stations(2.2, ["a", "b"], "response_time").system.stability_problem()
    assert "load 1.100 >= 1 whatever the controller chooses" in problem
    assert not any(w in problem.lower() for w in ("reject", "violation", "lam", "accept"))


def test_admission_network_with_entry_choices_is_judged_at_its_best_mix():
    spec = _two_stations(1.8, ["reject", "a", "b"], "admission", entry={"a": 1.0})
    assert spec.system.kind == "admission"
    assert spec.system.stability_problem() is None  # 0.9 each when split evenly
    over = _two_stations(1.8, ["reject", "accept"], "admission", entry={"a": 1.0})
    assert over.system.stability_problem().startswith("stations[0] (a): load 1.800 >= 1 when every job is accepted")


def test_deadline_objective_heads_for_the_on_time_fraction():
    spec = _two_stations(0.5, ["a", "b"], "deadline")
    h = spec.system.headline
    assert (h.measure, h.sense, h.constraint) == ("throughput", "max", None)
    assert spec.system.reward_rule() == "deadline"


def test_min_max_load_matches_a_grid_search():
    rng = np.random.default_rng(3)
    for _ in range(20):
        loads = rng.uniform(0.1, 2.0, (3, 3))
        best, w = min_max_load(loads)
        grid = [np.array(c) / 20 for c in itertools.product(range(21), repeat=3) if sum(c) == 20]
        brute = min((loads @ g).max() for g in grid)
        assert best <= brute + 1e-9 and best >= brute - 0.1
        assert w.sum() == pytest.approx(1.0) and (loads @ w).max() == pytest.approx(best)


def test_network_encoding_and_rewards_are_the_papers():
    spec = load_spec("paper_tandem")
    enc = spec.system.encoding(True)
    assert type(enc) is ObservationEncoding
    assert (enc.num_stations, enc.include_in_service, enc.pool, enc.info_width, enc.candidates) == (3, True, False, 0, 0)
    assert spec.system.reward_rule() == "admission" and spec.system.engine_options() == {}
    assert type(spec.system.routing()).__name__ == "ProbabilisticRouting"
