"""The pools plugin's capacity against envs.systems.pools.theory (closed forms and quadrature of
the server time per job) and against hand values; the pools block as written (stations,
actions, round trip) and every bad block naming its field and the fix."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import yaml

from envs import NetworkSpec, SpecError, load_spec
from envs.spec import SCENARIO_DIR
from envs.systems.pools import theory
from envs.systems.pools.system import capacity, server_times

BASE = yaml.safe_load((SCENARIO_DIR / "pools.yaml").read_text())


def _spec(rate: float = 0.5, **block) -> NetworkSpec:
    cfg = copy.deepcopy(BASE)
    cfg["arrival"]["rate"] = rate
    cfg["pools"].update(block)
    return NetworkSpec.from_dict(cfg)


def _theory_bound(spec: NetworkSpec) -> float:
    p = spec.block
    (act,) = p.actions
    model = theory.PoolsModel(p.p, p.speeds, p.servers)
    policy = theory.PoolsPolicy(knowledge=p.knowledge, q=p.q, f=p.f, assignment=p.assign, p_split=p.p_split,
                                action=act.policy, tau=act.tau, restart=p.restart)
    return theory.stability_bound(model, policy, p.size)


CASES = [
    ({"knowledge": "full"}, {"pool": "auto"}),
    ({"knowledge": {"signal": 0.8}}, {"pool": "auto", "policy": "replicate", "tau": 2.0}),
    ({"knowledge": {"signal": 0.8}, "restart": "fresh"}, {"pool": "auto", "policy": "replicate", "tau": 0.5}),
    ({"knowledge": {"revealed": 0.5}}, {"pool": "auto", "policy": "reroute", "tau": 6.0}),
    ({"knowledge": "none", "restart": "fresh"}, {"pool": "auto", "policy": "reroute", "tau": [1.0, 3.0]}),
    ({"knowledge": "none", "assign": {"split": 0.3}}, {"pool": "auto", "policy": "replicate", "tau": 0.0}),
    ({"servers": [2, 3], "size": {"dist": "gamma", "mean": 1.0, "scv": 2.0},
      "types": [{"p": 0.3, "speeds": [1.0, 0.2]}, {"p": 0.5, "speeds": [0.5, 1.0]}, {"p": 0.2, "speeds": [1.0, 1.0]}],
      "knowledge": {"signal": 0.7}}, {"pool": "auto", "policy": "reroute", "tau": 2.0}),
]


@pytest.mark.parametrize(("block", "action"), CASES)
def test_one_choice_gives_the_theory_bound(block, action):
    spec = _spec(**block, actions=[action])
    assert spec.system.capacity() == pytest.approx(_theory_bound(spec), rel=1e-2)


def test_server_time_by_information_matches_the_theory_per_policy():
    """The signal rule's pool choice per type information, averaged back, is the rule's."""
    spec = _spec(knowledge={"signal": 0.8}, actions=[{"pool": "auto", "policy": "replicate", "tau": 2.0}])
    pk, T, first = server_times(spec.block)
    p = spec.block
    model = theory.PoolsModel(p.p, p.speeds, p.servers)
    policy = theory.PoolsPolicy(knowledge="signal", q=0.8, action="replicate", tau=2.0)
    np.testing.assert_allclose(pk @ T[:, 0, :], theory.server_time(model, policy, p.size), rtol=1e-2)
    np.testing.assert_allclose(pk, [0.5, 0.5, 0.0])
    np.testing.assert_allclose(first[:2, 0], [1.0, 0.0])  # signal 1 -> pool 1, signal 2 -> pool 2


def test_pools_scenario_mixes_its_choices_per_signal():
    """Choosing pool k on signal k with replicate after 2 is the signal rule with that action
    (theory bound 1.2026); by symmetry no mix uses less server time per job."""
    cap = load_spec("pools").system.capacity()
    spec = _spec(actions=[{"pool": "auto", "policy": "replicate", "tau": 2.0}])
    assert cap == pytest.approx(_theory_bound(spec), rel=1e-2)
    assert cap == pytest.approx(1.2026, rel=1e-2)
    assert load_spec("pools").system.stability_problem() is None


def test_a_single_forced_pool_overloads_it():
    """Every job on pool 1: E[server time] = 0.5 / 1 + 0.5 / 0.1 = 5.5, so at most 1 / 5.5."""
    spec = _spec(0.5, actions=[{"pool": 1}])
    assert spec.system.capacity() == pytest.approx(1 / 5.5, rel=1e-2)
    problem = spec.system.stability_problem()
    assert problem.startswith("pools: arrivals at rate 0.5 exceed what the pools can serve")
    assert "at most 0.182 per unit time" in problem
    assert not any(w in problem.lower() for w in ("reject", "violation", "lam", "accept"))
    with pytest.raises(SpecError, match="^pools: arrivals at rate 0.5"):
        spec.check_stable()
    # with both pools to choose from, the signal is enough: pool k on signal k (0.71)
    both = _spec(0.5, actions=[{"pool": 1}, {"pool": 2}])
    assert both.system.capacity() == pytest.approx(1 / 1.4, rel=1e-2)
    assert both.system.stability_problem() is None
    assert _spec(0.75, actions=[{"pool": 1}, {"pool": 2}]).system.stability_problem() is not None


def test_capacity_reads_only_the_information_that_occurs():
    """Full knowledge never shows "nothing known": that value is left out of the min-max.
    Pool k for type k: E[server time] = 0.5 per pool, so at most 2."""
    spec = _spec(actions=[{"pool": "auto"}], knowledge="full")
    assert server_times(spec.block)[0][-1] == 0.0
    assert math.isfinite(capacity(spec.block)) and capacity(spec.block) == pytest.approx(2.0, rel=1e-2)


def test_pools_refuse_admission_through_the_plugin():
    cfg = copy.deepcopy(BASE) | {"objective": "admission"}
    with pytest.raises(SpecError, match="^objective: the pools system is controlled"):
        NetworkSpec.from_dict(cfg)


def test_observation_and_reward():
    spec = load_spec("pools")
    enc = spec.system.encoding(False)
    assert enc.include_in_service and enc.info_width == 3 and enc.width == 2 + 2 + 3
    assert spec.system.reward_rule() == "response_time"
    assert type(spec.system.routing()).__name__ == "PoolsDispatch"


# ---------------------------------------------------------------- the block as written
UNBALANCED = ((1.0, 0.1), (0.1, 1.0))  # speeds[pool][type]


def pools_spec(rate=1.0, servers=(1, 1), p=(0.5, 0.5), speeds=UNBALANCED, arrival=None, **block):
    types = [{"p": pj, "speeds": [speeds[0][j], speeds[1][j]]} for j, pj in enumerate(p)]
    return NetworkSpec.from_dict({"name": "pools", "arrival": arrival or {"dist": "exponential", "rate": rate},
                                  "pools": {"servers": list(servers), "types": types, **block}})


def test_pools_block_becomes_two_fcfs_stations_and_actions():
    spec = pools_spec(servers=(2, 3), policy="reroute", tau=[1.0, 2.0], knowledge={"signal": 0.8},
                      actions=[{"pool": 1}, {"pool": 2, "policy": "none"}, {"policy": "replicate", "tau": 0.5},
                               {"pool": 2, "queue": "front"}])
    assert spec.station_names == ("pool1", "pool2") and spec.servers.tolist() == [2, 3]
    assert spec.actions == ("pool1-reroute@1,2", "pool2", "auto-replicate@0.5", "pool2-reroute@1,2-front")
    assert not spec.admission and spec.objective == "response_time"
    pools = spec.block
    assert pools.knowledge == "signal" and pools.q == 0.8 and pools.speeds == ((1.0, 0.1), (0.1, 1.0))
    back = NetworkSpec.from_dict(spec.to_dict())
    assert back.block == pools and back.actions == spec.actions


def test_a_rescue_is_named_kept_through_to_dict_and_dropped_by_actions_that_make_no_copy():
    cfg = {"servers": [1, 1], "types": [{"p": 0.5, "speeds": [1, 0.1]}, {"p": 0.5, "speeds": [0.1, 1]}],
           "policy": "replicate", "tau": 0.0, "queue": "front", "preempt": 2,
           "actions": [{"pool": 1}, {"pool": 2, "preempt": "inf"}, {"pool": 1, "policy": "none"}]}
    spec = NetworkSpec.from_dict({"arrival": {"dist": "exponential", "rate": 0.5}, "pools": cfg})
    assert list(spec.actions) == ["pool1-replicate@0-front-preempt@2", "pool2-replicate@0-front", "pool1"]
    back = NetworkSpec.from_dict(spec.to_dict())
    assert back.block == spec.block and back.actions == spec.actions


@pytest.mark.parametrize("block, field, words", [
    ({"types": [{"p": 0.5, "speeds": [1, -1]}, {"p": 0.5, "speeds": [1, 1]}]}, "pools.types[0].speeds[1]", "> 0"),
    ({"types": [{"p": 0.5, "speeds": [1, 1]}, {"p": 0.6, "speeds": [1, 1]}]}, "pools.types", "sum to 1.1"),
    ({"knowledge": "partial"}, "pools.knowledge", "signal: q"),
    ({"knowledge": {"signal": 1.5}}, "pools.knowledge.signal", "probability"),
    ({"policy": "reroute"}, "pools.tau", "missing"),
    ({"policy": "reroot", "tau": 1}, "pools.policy", "did you mean 'reroute'"),
    ({"tau": -1, "policy": "replicate"}, "pools.tau", ">= 0"),
    ({"restart": "again"}, "pools.restart", "same, fresh"),
    ({"timer": "start"}, "pools.timer", "service, arrival"),
    ({"servers": [2]}, "pools.servers", "two positive integers"),
    ({"speeds": [[1, 0.1], [0.1, 1]]}, "pools.speeds", "did you mean 'types'"),
    ({"actions": [{"pool": 3}]}, "pools.actions[0].pool", "1, 2 or auto"),
    ({"actions": [{"pool": 1}, {"pool": 1}]}, "pools.actions[1]", "repeats pools.actions[0] (both are 'pool1')"),
    ({"queue": "head"}, "pools.queue", "back, front"),
    ({"actions": [{"pool": 1, "policy": "replicate", "tau": 0, "queue": "first"}]}, "pools.actions[0].queue",
     "did you mean 'front'"),
    ({"policy": "replicate", "tau": 0, "preempt": -1}, "pools.preempt", ">= 0"),
    ({"policy": "reroute", "tau": 6, "preempt": 2}, "pools.preempt", "only a copy preempts"),
    ({"actions": [{"pool": 1, "policy": "none", "preempt": 2}]}, "pools.actions[0].preempt", "policy: replicate"),
    ({"policy": "replicate", "tau": 0, "preempt": 2, "timer": "arrival"}, "pools.timer", "timer: service"),
])
def test_bad_pools_blocks_name_the_field_and_the_fix(block, field, words):
    cfg = {"servers": [1, 1], "types": [{"p": 0.5, "speeds": [1, 0.1]}, {"p": 0.5, "speeds": [0.1, 1]}]}
    cfg.update(block)
    with pytest.raises(SpecError) as err:
        NetworkSpec.from_dict({"arrival": {"dist": "exponential", "rate": 1.0}, "pools": cfg})
    assert err.value.field == field and words in str(err.value)


def test_pools_refuse_admission_and_explicit_stations():
    cfg = {"servers": [1, 1], "types": [{"p": 1.0, "speeds": [1, 1]}]}
    with pytest.raises(SpecError, match="objective"):
        NetworkSpec.from_dict({"arrival": {"dist": "exponential", "rate": 1.0}, "pools": cfg,
                               "objective": "admission"})
    with pytest.raises(SpecError, match="stations: cannot be given with 'pools'"):
        NetworkSpec.from_dict({"arrival": {"dist": "exponential", "rate": 1.0}, "pools": cfg, "stations": []})
