"""Two server pools (systems.md B): the spec block, M/M/N reductions, reroute and replicate
hand traces, and per-pool server time against drl_ac.theory.pools where its formula is exact."""

import pytest

from envs import NetworkSpec, SpecError

UNBALANCED = ((1.0, 0.1), (0.1, 1.0))  # speeds[pool][type]


def pools_spec(rate=1.0, servers=(1, 1), p=(0.5, 0.5), speeds=UNBALANCED, arrival=None, **block):
    types = [{"p": pj, "speeds": [speeds[0][j], speeds[1][j]]} for j, pj in enumerate(p)]
    return NetworkSpec.from_dict({"name": "pools", "arrival": arrival or {"dist": "exponential", "rate": rate},
                                  "pools": {"servers": list(servers), "types": types, **block}})


# ---------------------------------------------------------------- spec
def test_pools_block_becomes_two_fcfs_stations_and_actions():
    spec = pools_spec(servers=(2, 3), policy="reroute", tau=[1.0, 2.0], knowledge={"signal": 0.8},
                      actions=[{"pool": 1}, {"pool": 2, "policy": "none"}, {"policy": "replicate", "tau": 0.5}])
    assert spec.station_names == ("pool1", "pool2") and spec.servers.tolist() == [2, 3]
    assert spec.actions == ("pool1-reroute@1,2", "pool2", "auto-replicate@0.5")
    assert not spec.admission and spec.objective == "response_time"
    pools = spec.pools
    assert pools.knowledge == "signal" and pools.q == 0.8 and pools.speeds == ((1.0, 0.1), (0.1, 1.0))
    back = NetworkSpec.from_dict(spec.to_dict())
    assert back.pools == pools and back.actions == spec.actions


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
    ({"actions": [{"pool": 1}, {"pool": 1}]}, "pools.actions", "repeated"),
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
