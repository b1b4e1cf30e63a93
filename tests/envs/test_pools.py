"""Two server pools (systems.md B): the spec block, M/M/N reductions, reroute and replicate
hand traces, and per-pool server time against drl_ac.theory.pools where its formula is exact."""

import math

import numpy as np
import pytest

from drl_ac.theory.pools import PoolsModel, PoolsPolicy, server_time
from drl_ac.theory.queueing import mmc_mean_sojourn, mmc_mean_wait
from envs import Driver, Engine, NetworkSpec, SpecError
from envs.rollout import collect

UNBALANCED = ((1.0, 0.1), (0.1, 1.0))  # speeds[pool][type]


def pools_spec(rate=1.0, servers=(1, 1), p=(0.5, 0.5), speeds=UNBALANCED, arrival=None, **block):
    types = [{"p": pj, "speeds": [speeds[0][j], speeds[1][j]]} for j, pj in enumerate(p)]
    return NetworkSpec.from_dict({"name": "pools", "arrival": arrival or {"dist": "exponential", "rate": rate},
                                  "pools": {"servers": list(servers), "types": types, **block}})


def run(spec, B=100, steps=2000, warmup=500, action=0, seed=1):
    done, _ = collect(Driver(spec, B, seed=seed), lambda o: np.full(o.shape[0], action, np.int64), steps, warmup)
    return done


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


# ---------------------------------------------------------------- hand traces
def trace(spec, jobs):
    """Arrivals at t = 1, 2, ...: ``jobs`` = [(size, action)]; then drain. Rows by arrival index."""
    sim = Engine(spec, 1, seed=0)
    out, seen = [], []
    for size, action in jobs:
        sim.jobs.size[0, sim.slot[0]] = size
        out.append(sim.step(np.array([action])))
        seen.append((sim.waiting().tolist()[0], sim.busy().tolist()[0]))
    out.append(sim.drain())
    rows = {int(s): (d, w, c, tuple(np.nan_to_num(sv).tolist()), tuple(wt.tolist()))
            for o in out for s, d, w, c, sv, wt in zip(o.step, o.departure_time, o.work, o.copies, o.service, o.wait,
                                                       strict=True)}
    return rows, seen, sim


ONE_TYPE = {"p": (1.0,), "speeds": ((1.0,), (0.5,)), "arrival": {"dist": "deterministic", "mean": 1.0}}


def test_reroute_hand_trace_restarts_from_scratch_and_frees_the_server():
    # One server per pool, pool 1 twice as fast, reroute after tau = 1.5 in service, size kept.
    # A (X = 5) starts on pool 1 at 1; at 2.5 it stops there (1.5 used, lost) and restarts on
    # pool 2 with all of X: 5 / 0.5 = 10, leaving at 12.5. B (X = 1), queued behind A, starts
    # on pool 1 at 2.5, the same instant, and leaves at 3.5 (its timer, 4.0, never fires).
    # C (X = 0.5) arrives at 3, starts at 3.5, leaves at 4.
    spec = pools_spec(policy="reroute", tau=1.5, **ONE_TYPE)
    rows, seen, sim = trace(spec, [(5.0, 0), (1.0, 0), (0.5, 0)])
    assert seen[:2] == [([0, 0], [1, 0]), ([0, 0], [1, 1])]  # seen at t = 2 (A on pool 1), 3 (A moved, B on 1)
    assert rows[0] == (12.5, 11.5, 2, (1.5, 10.0), (0.0, 0.0))
    assert rows[1] == (3.5, 1.0, 1, (1.0, 0.0), (0.5, pytest.approx(np.nan, nan_ok=True)))
    assert rows[2][:4] == (4.0, 0.5, 1, (0.5, 0.0))
    assert sim.jobs_in_system().tolist() == [0] and sim.busy().tolist() == [[0, 0]]


def test_reroute_fresh_restart_uses_a_new_size():
    spec = pools_spec(policy="reroute", tau=1.5, restart="fresh", **ONE_TYPE)
    sim = Engine(spec, 1, seed=0)
    sim.jobs.size[0, sim.slot[0]], sim.jobs.size2[0, sim.slot[0]] = 5.0, 0.25
    out = [sim.step(np.array([0])), sim.drain()]
    done = [o for o in out if len(o)][0]
    assert done.departure_time.tolist() == [1 + 1.5 + 0.5] and done.service[0].tolist() == [1.5, 0.5]


def test_replicate_hand_trace_first_finish_cancels_the_other_copy_at_once():
    # Actions: 0 = pool 1 then replicate after 1.5 in service; 1 = pool 2, nothing else.
    # A (X = 5) on pool 1 at 1, copy on pool 2 at 2.5 (needs 10). D (X = 1, action 1) arrives
    # at 4 and queues on pool 2 behind A's copy. A ends on pool 1 at 6: its copy is cancelled
    # (3.5 used) and D starts on pool 2 at 6, the same instant, leaving at 8. B (X = 3) queued
    # on pool 1 since 2 starts at 6; its copy at 7.5 queues behind D, starts at 8, and is
    # cancelled at 9 when B ends on pool 1 (1 used). C (X = 0.2) then runs 9 to 9.2.
    spec = pools_spec(policy="replicate", tau=1.5, actions=[{"pool": 1}, {"pool": 2, "policy": "none"}], **ONE_TYPE)
    rows, seen, _ = trace(spec, [(5.0, 0), (3.0, 0), (0.2, 0), (1.0, 1)])
    assert seen[3] == ([2, 1], [1, 1])  # at t = 5: B and C queue on pool 1, D on pool 2
    assert rows[0][:4] == (6.0, 8.5, 2, (5.0, 3.5))
    assert rows[3][:4] == (8.0, 2.0, 1, (0.0, 2.0)) and rows[3][4][1] == 2.0  # D waited 4 -> 6
    assert rows[1][:4] == (9.0, 4.0, 2, (3.0, 1.0))
    assert rows[2][:4] == (pytest.approx(9.2), pytest.approx(0.2), 1, (pytest.approx(0.2), 0.0))


def test_replicate_on_arrival_places_both_copies():
    # tau = 0 from arrival: a copy enters each queue on arrival; the first to finish wins.
    spec = pools_spec(policy="replicate", tau=0, timer="arrival", **ONE_TYPE)
    rows, seen, _ = trace(spec, [(4.0, 0)])
    assert seen[0] == ([0, 0], [1, 1])  # at t = 2: a copy in service on each pool
    assert rows[0][:4] == (5.0, 8.0, 2, (4.0, 4.0))  # pool 1 takes 4; the copy used 4 of its 8


# ---------------------------------------------------------------- queueing theory
def per_pool(done, B, values, pool):
    """Per-instance mean of ``values`` over the jobs served (to the end) on ``pool``."""
    on = ~np.isnan(done.wait[:, pool])
    total = np.bincount(done.env[on], weights=values[on], minlength=B)
    return total / np.bincount(done.env[on], minlength=B)


def test_one_type_equal_speeds_is_two_mmn_queues(stats):
    # Split p = 0.4 of Poisson(2): pool 1 (2 servers) gets 0.8, pool 2 (3 servers) 1.2; X ~ Exp(1).
    spec = pools_spec(rate=2.0, servers=(2, 3), p=(1.0,), speeds=((1.0,), (1.0,)), assign={"split": 0.4})
    done = run(spec)
    share = (~np.isnan(done.wait[:, 0])).mean()
    assert abs(share - 0.4) < stats.Z * math.sqrt(0.24 / len(done))
    for pool, (n, lam) in enumerate(((2, 0.8), (3, 1.2))):
        stats.assert_close(per_pool(done, 100, done.wait[:, pool], pool), mmc_mean_wait(n, lam, 1.0),
                           f"Erlang C wait, pool {pool + 1}")


def test_full_knowledge_without_timer_is_one_mmn_queue_per_type(stats):
    # Type 0 (p 0.3) is faster on pool 1 (speed 1 vs 0.5), type 1 (p 0.7) on pool 2 (2 vs 0.4):
    # each pool an M/M/N with its type's arrival rate and speed.
    spec = pools_spec(rate=3.0, servers=(2, 2), p=(0.3, 0.7), speeds=((1.0, 0.4), (0.5, 2.0)))
    done = run(spec)
    for pool, (lam, mu) in enumerate(((0.9, 1.0), (2.1, 2.0))):
        stats.assert_close(per_pool(done, 100, done.sojourn, pool), mmc_mean_sojourn(2, lam, mu),
                           f"M/M/2 sojourn, pool {pool + 1}")


# ---------------------------------------------------------------- server time against the formula
def measured_server_time(done, B):
    """(2, B) per-instance mean server time per job on each pool (cancelled copies included)."""
    served = np.nan_to_num(done.service)
    count = np.bincount(done.env, minlength=B)
    return np.stack([np.bincount(done.env, weights=served[:, i], minlength=B) / count for i in range(2)])


CASES = [  # (policy, restart, tau, timer, knowledge): every policy, every knowledge level
    ("none", "same", math.inf, "service", "full"),
    ("reroute", "same", 0.5, "service", {"signal": 0.7}),
    ("reroute", "fresh", 0.5, "service", "none"),
    ("replicate", "same", 0.5, "service", {"revealed": 0.4}),
    ("replicate", "fresh", 0.5, "service", {"signal": 0.7}),
    ("replicate", "same", 0.0, "arrival", "none"),
]


@pytest.mark.parametrize("policy, restart, tau, timer, knowledge", CASES)
def test_server_time_per_pool_matches_the_formula_where_copies_start_at_once(policy, restart, tau, timer,
                                                                              knowledge, stats):
    # 10 servers per pool at effective load 0.3: a rerouted job or a copy waits w.p. ~1e-3, so
    # the formula's assumption holds; busy fraction = lam E[T_i] / N_i, so E[T_i] is compared.
    know = knowledge if isinstance(knowledge, str) else next(iter(knowledge))
    extra = {} if isinstance(knowledge, str) else {"q" if know == "signal" else "f": next(iter(knowledge.values()))}
    truth = server_time(PoolsModel((0.5, 0.5), UNBALANCED, (10, 10)),
                        PoolsPolicy(knowledge=know, action=policy, tau=tau, restart=restart, **extra))
    lam = 0.3 * 10 / max(truth)
    block = {"policy": policy, "restart": restart, "timer": timer, "knowledge": knowledge}
    if math.isfinite(tau):
        block["tau"] = tau
    done = run(pools_spec(rate=lam, servers=(10, 10), **block), B=64, steps=2000, warmup=300)
    per = measured_server_time(done, 64)
    for i in range(2):
        est, se = per[i].mean(), per[i].std(ddof=1) / 8
        assert abs(est - truth[i]) < 4 * se, f"E[T_{i + 1}] {policy} {restart} tau={tau} {knowledge}: " \
                                             f"{est:.4f} +- {se:.4f}, formula {truth[i]:.4f}"
    np.testing.assert_allclose(np.nansum(done.service, 1), done.work)


@pytest.mark.parametrize("speeds", [UNBALANCED, ((1.0, 0.8), (0.8, 1.0))])
def test_copies_placed_on_arrival_follow_the_formula_with_one_server_each(speeds, stats):
    # tau = 0 from arrival: every job is in both FIFO queues, so the two servers start it together
    truth = server_time(PoolsModel((0.5, 0.5), speeds, (1, 1)), PoolsPolicy(action="replicate", tau=0.0,
                                                                           restart="fresh"))
    done = run(pools_spec(rate=0.7 / max(truth), speeds=speeds, policy="replicate", tau=0, timer="arrival",
                          restart="fresh"), B=64, steps=2000, warmup=300)
    per = measured_server_time(done, 64)
    for i in range(2):
        stats.assert_close(per[i], truth[i], f"E[T_{i + 1}], copies on arrival")


# ---------------------------------------------------------------- observation and scenario
def test_observation_is_queues_busy_servers_and_the_type_signal_one_hot():
    from envs import ObservationEncoding, load_spec
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


def test_signal_equals_the_type_with_probability_q(stats):
    spec = pools_spec(knowledge={"signal": 0.8})
    eng = Engine(spec, 4000, seed=2)
    same = eng.jobs.info[np.arange(4000), eng.slot] == eng.jobs.ptype[np.arange(4000), eng.slot]
    assert abs(same.mean() - 0.8) < stats.Z * math.sqrt(0.16 / 4000)
