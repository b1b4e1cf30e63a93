"""Dispatch: probabilistic routing frequencies, and actions that choose the entry station;
redundancy-d (CopyToD); two pools (PoolsDispatch, PoolTimers; docs/systems/pools.md): reroute and
replicate hand traces, M/M/N reductions, per-pool server time against envs.systems.pools.theory
where its formula is exact, and the type signal."""

import math

import numpy as np
import pytest

from envs import Driver, Engine, NetworkSpec, load_spec
from envs.queueing import mmc_mean_sojourn, mmc_mean_wait
from envs.rollout import accept_all, collect
from envs.systems.pools.theory import PoolsModel, PoolsPolicy, server_time

TOY = {"name": "two_ways", "arrival": {"dist": "exponential", "rate": 0.5},
       "stations": [{"name": "fast", "servers": 1, "service": {"dist": "deterministic", "mean": 1.0}},
                    {"name": "slow", "servers": 1, "service": {"dist": "deterministic", "mean": 4.0}}],
       "routing": {"fast": "exit", "slow": "exit"}, "d_ub": 3.0, "eps": 0.1, "lam": 2.0,
       "actions": ["reject", "fast", "slow"]}


def test_branching_frequencies_follow_routing(stats):
    done, _ = collect(Driver(load_spec("paper_acyclic"), 200, seed=1), accept_all, 1000, 200)
    visited_a = ~np.isnan(done.wait[:, 1])
    visited_b = ~np.isnan(done.wait[:, 2])
    assert not (visited_a & visited_b).any()
    assert (visited_a | visited_b).all() and (~np.isnan(done.wait[:, [0, 3]])).all()
    p = visited_a.mean()
    assert abs(p - 0.67) < stats.Z * np.sqrt(0.67 * 0.33 / visited_a.size)


def test_action_chooses_the_entry_station():
    spec = NetworkSpec.from_dict(TOY)
    assert spec.num_actions == 3 and spec.action_entries() == [-1, 0, 1]
    sim = Engine(spec, 6, seed=0)
    out = [sim.step(np.array([0, 1, 2, 0, 1, 2])) for _ in range(40)] + [sim.drain()]
    rows = {(int(e), int(s)): (a, d) for o in out for e, s, a, d in zip(o.env, o.step, o.action, o.sojourn,
                                                                          strict=True)}
    assert len(rows) == 6 * 40
    for (e, _), (a, d) in rows.items():
        assert a == [0, 1, 2][e % 3]
        assert d >= {0: 1.0, 1: 1.0, 2: 4.0}[a] - 1e-9  # the slow station takes 4
    # a rejected decision is scored as admitted by the drawn entry (the fast station here)
    rejected = [d for (e, _), (a, d) in rows.items() if a == 0]
    assert min(rejected) == pytest.approx(1.0)


# ---------------------------------------------------------------- redundancy-d (CopyToD)
def redundancy(servers, rate, d, kind="fcfs", copies="iid", size=None, arrival=None):
    return NetworkSpec.from_dict({
        "arrival": arrival or {"dist": "exponential", "rate": rate}, "d_ub": 10, "eps": 0.1,
        "redundancy": {"servers": servers, "kind": kind, "copies": copies,
                       "size": size or {"dist": "exponential", "mean": 1.0}, "d": d}})


def mean_response(spec, B=300, steps=1500, warmup=400, action=0, seed=1):
    done, _ = collect(Driver(spec, B, seed=seed), lambda o: np.full(o.shape[0], action, np.int64), steps, warmup)
    return done, np.bincount(done.env, weights=done.sojourn, minlength=B) / np.bincount(done.env, minlength=B)


@pytest.mark.parametrize("k, lam, truth", [(3, 2.4, 1.944), (5, 4.0, 1.604)])
def test_fcfs_redundancy_iid_exponential_matches_gardner(k, lam, truth, stats):
    from envs.systems.redundancy.theory import gardner_fcfs_mean_response
    assert gardner_fcfs_mean_response(k, 2, lam) == pytest.approx(truth, abs=5e-4)
    _, m = mean_response(redundancy(k, lam, [2]))
    stats.assert_close(m, gardner_fcfs_mean_response(k, 2, lam), f"Gardner k={k}")


@pytest.mark.parametrize("kind", ["fcfs", "ps"])
def test_d1_is_n_independent_queues(kind, stats):
    # random splitting of Poisson(2.4) over 4 servers: each an M/M/1 with rate 0.6, mean 2.5
    done, m = mean_response(redundancy(4, 2.4, [1], kind=kind))
    stats.assert_close(m, 1 / (1 - 0.6), f"d = 1, {kind}")
    assert (done.copies == 1).all()
    np.testing.assert_allclose(done.work, done.service[~np.isnan(done.service)])


def test_identical_copies_on_every_ps_server_act_as_one_mg1_ps(stats):
    # d = N, identical sizes: every server holds the same jobs; E[T] = E[X] / (1 - lam E[X])
    spec = redundancy(3, 0.6, [3], kind="ps", copies="identical", size={"dist": "hyperexponential", "mean": 1.0,
                                                                           "scv": 4.0})
    done, m = mean_response(spec)
    stats.assert_close(m, 1.0 / (1 - 0.6), "identical copies, d = N, PS")
    assert (done.copies == 3).all()
    np.testing.assert_allclose(done.work, 3 * np.nanmax(done.service, 1), rtol=1e-6)  # all three ran to the end


def test_cancellation_frees_servers_and_queues_hand_trace():
    # FCFS, 2 servers, arrivals at t = 1, 2, 3. A: d = 1 on server 0, size 10 (busy to 11).
    # B: d = 2, sizes (1, 3): its copy queues behind A at server 0, its other copy runs on
    # server 1 from 2 to 5; at 5 B leaves and its queued copy leaves server 0's queue.
    # C: d = 1 on server 0, size 1: starts when A leaves at 11 (B's copy no longer ahead).
    spec = redundancy(2, 1.0, [1, 2], arrival={"dist": "deterministic", "mean": 1.0},
                      size={"dist": "deterministic", "mean": 1.0})
    sim = Engine(spec, 1, seed=0)

    def arrive(sizes, action):
        sim.jobs.service[0, sim.slot[0]] = sizes
        sim.jobs.order[0, sim.slot[0]] = [0, 1]
        return sim.step(np.array([action]))

    out = [arrive([10.0, 10.0], 0), arrive([1.0, 3.0], 1)]
    assert sim.waiting().tolist() == [[1, 0]]  # B's copy queues at server 0
    out.append(arrive([1.0, 1.0], 0))
    assert sim.waiting().tolist() == [[2, 0]]  # at t = 4: B's copy and C queue at server 0
    out.append(sim.drain())  # no further arrivals
    rows = {int(s): (t, w, c) for o in out for s, t, w, c, a in
            zip(o.step, o.departure_time, o.work, o.copies, o.accepted, strict=True) if a}
    assert rows[0] == (11.0, 10.0, 1)
    assert rows[1] == (5.0, 3.0, 1)  # the queued copy never started and used nothing
    assert rows[2] == (12.0, 1.0, 1)


def test_cancelling_a_copy_in_service_counts_its_work():
    # PS, 2 servers, d = 2, sizes (3, 1) at t = 1: the copy on server 1 ends at 2 and cancels
    # the one on server 0 after 1 unit of work: server time used 2, copies started 2.
    spec = redundancy(2, 1.0, [2], kind="ps", arrival={"dist": "deterministic", "mean": 1.0})
    sim = Engine(spec, 1, seed=0)
    sim.jobs.service[0, sim.slot[0]] = [3.0, 1.0]
    done = sim.step(np.array([0]))  # runs to the next arrival at 2, the departure included
    assert done.departure_time.tolist() == [2.0] and done.work.tolist() == [2.0] and done.copies.tolist() == [2]
    assert sim.busy().tolist() == [[0, 0]] and sim.jobs_in_system().tolist() == [0]  # both servers free


def test_stable_load_is_bounded_and_unstable_grows_at_the_fluid_rate():
    # N = 4, d = 2, i.i.d. exponential copies: lambda* = N mu = 4 for every d, and above it
    # the number in system grows at lambda - N mu (every busy server completes at rate mu).
    from envs.distributions import Exponential
    from envs.systems.redundancy.theory import fluid_growth_rate, stability_threshold
    assert stability_threshold(4, 2, "iid", size=Exponential(1.0)) == pytest.approx(4.0)
    for lam, growing in ((2.8, False), (5.2, True)):
        sim = Engine(redundancy(4, lam, [2], kind="ps"), 200, seed=3)
        level = []
        for _ in range(6):
            for _ in range(int(lam * 100)):
                sim.step(np.zeros(200, np.int64))
            level.append((sim.now.mean(), sim.jobs_in_system().mean()))
        (t0, n0), (t1, n1) = level[1], level[-1]
        slope = (n1 - n0) / (t1 - t0)
        if growing:
            assert slope == pytest.approx(fluid_growth_rate(4, 2, lam, "iid", size=Exponential(1.0)), rel=0.05)
        else:
            assert abs(slope) < 0.01 and n1 < 10


# ---------------------------------------------------------------- two pools (docs/systems/pools.md)
UNBALANCED = ((1.0, 0.1), (0.1, 1.0))  # speeds[pool][type]


def pools_spec(rate=1.0, servers=(1, 1), p=(0.5, 0.5), speeds=UNBALANCED, arrival=None, **block):
    types = [{"p": pj, "speeds": [speeds[0][j], speeds[1][j]]} for j, pj in enumerate(p)]
    return NetworkSpec.from_dict({"name": "pools", "arrival": arrival or {"dist": "exponential", "rate": rate},
                                  "pools": {"servers": list(servers), "types": types, **block}})


def run(spec, B=100, steps=2000, warmup=500, action=0, seed=1):
    done, _ = collect(Driver(spec, B, seed=seed), lambda o: np.full(o.shape[0], action, np.int64), steps, warmup)
    return done


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


@pytest.mark.parametrize("queue", ["back", "front"])
def test_a_timers_copy_joins_the_back_or_the_front_of_the_other_queue(queue):
    # The trace above plus E (X = 1, action 1) at 5, queued on pool 2 behind D. B's copy
    # (made at 7.5, D in service on pool 2 until 8):
    # back: behind E. E runs 8 to 10; B ends on pool 1 at 9 and its queued copy leaves unserved.
    # front: ahead of E. It runs 8 to 9 (1 of its 6 used) until B ends on pool 1; E runs 9 to 11.
    spec = pools_spec(policy="replicate", tau=1.5, actions=[{"pool": 1, "queue": queue}, {"pool": 2, "policy": "none"}],
                      **ONE_TYPE)
    assert spec.actions == ("pool1-replicate@1.5" + ("-front" if queue == "front" else ""), "pool2")
    rows, seen, _ = trace(spec, [(5.0, 0), (3.0, 0), (0.2, 0), (1.0, 1), (1.0, 1)])
    assert seen[4] == ([1, 1], [1, 1])  # at t = 6: C on pool 1, E on pool 2 queued
    assert rows[0][:4] == (6.0, 8.5, 2, (5.0, 3.5)) and rows[3][:4] == (8.0, 2.0, 1, (0.0, 2.0))
    if queue == "back":
        assert rows[1][:4] == (9.0, 3.0, 1, (3.0, 0.0))
        assert rows[4][0] == 10.0 and rows[4][4][1] == 3.0  # E waited 5 -> 8
    else:
        assert rows[1][:4] == (9.0, 4.0, 2, (3.0, 1.0)) and rows[1][4][1] == 0.5  # the copy waited 7.5 -> 8
        assert rows[4][0] == 11.0 and rows[4][4][1] == 4.0  # E waited 5 -> 9


def test_a_copy_made_at_an_instant_queues_after_the_servers_freed_then_take_their_jobs():
    # Front copies after 0 (action 0) and pool 2 alone (action 1). A (X = 2.5) starts on pool 1
    # at 1 and its copy on idle pool 2 (needs 5). B (X = 1, action 1) queues on pool 2 at 2, C
    # (X = 1) on pool 1 at 3. At 3.5 A ends on pool 1 and its copy is cancelled (2.5 used): pool
    # 2 takes B (3.5 to 5.5), pool 1 takes C, and only then C's copy joins pool 2's queue, at
    # its front but behind B in service; C ends on pool 1 at 4.5 and its copy leaves unserved.
    spec = pools_spec(policy="replicate", tau=0.0, actions=[{"pool": 1, "queue": "front"}, {"pool": 2, "policy": "none"}],
                      **ONE_TYPE)
    rows, _, _ = trace(spec, [(2.5, 0), (1.0, 1), (1.0, 0)])
    assert rows[0][:4] == (3.5, 5.0, 2, (2.5, 2.5))
    assert rows[1][:4] == (5.5, 2.0, 1, (0.0, 2.0)) and rows[1][4][1] == 1.5  # B waited 2 -> 3.5
    assert rows[2][:4] == (4.5, 1.0, 1, (1.0, 0.0))


def test_a_rescue_preempts_the_other_pools_own_job_which_resumes_with_its_work_left():
    # Pool 2 alone (action 0) and pool 1 with a front copy after 0 and a rescue after 1.5
    # (action 1). B (X = 3, action 0) starts on pool 2 at 1 (needs 6). A (X = 4) starts on pool
    # 1 at 2 (needs 4, to 6); its copy queues at pool 2's front, behind B. At 3.5 A is still in
    # service and its copy still queued: the copy takes pool 2's server from B (2.5 of 6 done).
    # A ends on pool 1 at 6 and its copy stops (2.5 used on pool 2); B resumes at 6 with 3.5
    # left and leaves at 9.5, its whole 6 counted on pool 2 and its wait there 2.5.
    spec = pools_spec(policy="replicate", tau=0.0, queue="front", preempt=1.5,
                      actions=[{"pool": 2, "policy": "none"}, {"pool": 1}], **ONE_TYPE)
    assert [a.name for a in spec.block.actions] == ["pool2", "pool1-replicate@0-front-preempt@1.5"]
    rows, seen, sim = trace(spec, [(3.0, 0), (4.0, 1)])
    assert seen[1] == ([0, 1], [1, 1])  # at t = 3: A in service on pool 1, its copy queued on pool 2
    assert rows[1][:4] == (6.0, 6.5, 2, (4.0, 2.5))
    assert rows[0][:4] == (9.5, 6.0, 1, (0.0, 6.0)) and rows[0][4][1] == 2.5
    assert sim.jobs_in_system().tolist() == [0] and sim.busy().tolist() == [[0, 0]]


def test_a_paused_job_cancelled_in_its_queue_counts_the_work_it_did():
    # Pool 1 has two servers. V (X = 3, action 0: pool 2, front copy, no rescue) starts on pool
    # 2 at 1 (needs 6) and its copy on pool 1 (needs 3, to 4). A (X = 4, action 1: pool 1, front
    # copy, rescue after 1) starts on pool 1's other server at 2 (to 6); its copy queues on pool
    # 2. At 3 the copy takes pool 2 from V (2 done). At 4 V's copy ends on pool 1: V leaves, and
    # its original, paused in pool 2's queue, is cancelled there with the 2 it did counted (and
    # as a copy that began). At 6 A ends on pool 1, its copy stopped on pool 2 after 3.
    spec = pools_spec(servers=(2, 1), policy="replicate", tau=0.0, queue="front",
                      actions=[{"pool": 2}, {"pool": 1, "preempt": 1.0}], **ONE_TYPE)
    rows, _, sim = trace(spec, [(3.0, 0), (4.0, 1)])
    assert rows[0][:4] == (4.0, 5.0, 2, (3.0, 2.0))
    assert rows[1][:4] == (6.0, 7.0, 2, (4.0, 3.0))
    assert sim.jobs_in_system().tolist() == [0] and sim.busy().tolist() == [[0, 0]]


def test_a_paused_job_adds_its_pause_to_its_waits_and_leaves_its_copys_wait_alone():
    # Pool 2 alone (action 0) and pool 1 with a front copy and a rescue after 1 (action 1).
    # B (X = 1) runs on pool 2 from 1 to 3; C (X = 2) waits there from 2 to 3 and starts; A (X =
    # 5) starts on pool 1 at 3 and at 4 its copy stops C (1 of 4 done). A ends at 8, C resumes
    # and leaves at 11: it waited 1 + 4 on pool 2 (its sojourn 9 = 5 + 4).
    spec = pools_spec(policy="replicate", tau=0.0, queue="front", preempt=1.0,
                      actions=[{"pool": 2, "policy": "none"}, {"pool": 1}], **ONE_TYPE)
    rows, _, _ = trace(spec, [(1.0, 0), (2.0, 0), (5.0, 1)])
    assert rows[1][:4] == (11.0, 4.0, 1, (0.0, 4.0)) and rows[1][4][1] == 5.0
    assert rows[2][:4] == (8.0, 5.0 + 4.0, 2, (5.0, 4.0))
    # V (X = 2.8, action 0: pool 2, a front copy after 1.5) starts on pool 2 at 1 (needs 5.6); its
    # copy queues on pool 1 at 2.5, behind A (X = 5, action 1, from 2 to 7). At 4 A's copy stops
    # V (3 done). At 7 pool 1 takes V's copy (it waited 4.5 since 2.5) and V resumes on pool 2
    # (waited 3 since 4) and leaves at 9.6; the copy used 2.6.
    spec = pools_spec(policy="replicate", tau=0.0, queue="front",
                      actions=[{"pool": 2, "tau": 1.5}, {"pool": 1, "preempt": 2.0}], **ONE_TYPE)
    rows, _, _ = trace(spec, [(2.8, 0), (5.0, 1)])
    assert rows[0][0] == pytest.approx(9.6) and rows[0][2] == 2
    assert rows[0][1] == pytest.approx(8.2) and rows[0][3] == pytest.approx((2.6, 5.6))
    assert rows[0][4] == pytest.approx((4.5, 3.0))
    assert rows[1][:4] == (7.0, 8.0, 2, (5.0, 3.0)) and rows[1][4] == (0.0, 2.0)


def test_replicate_on_arrival_places_both_copies():
    # tau = 0 from arrival: a copy enters each queue on arrival; the first to finish wins.
    spec = pools_spec(policy="replicate", tau=0, timer="arrival", **ONE_TYPE)
    rows, seen, _ = trace(spec, [(4.0, 0)])
    assert seen[0] == ([0, 0], [1, 1])  # at t = 2: a copy in service on each pool
    assert rows[0][:4] == (5.0, 8.0, 2, (4.0, 4.0))  # pool 1 takes 4; the copy used 4 of its 8


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


def test_signal_equals_the_type_with_probability_q(stats):
    spec = pools_spec(knowledge={"signal": 0.8})
    eng = Engine(spec, 4000, seed=2)
    same = eng.jobs.info[np.arange(4000), eng.slot] == eng.jobs.ptype[np.arange(4000), eng.slot]
    assert abs(same.mean() - 0.8) < stats.Z * math.sqrt(0.16 / 4000)


def reference_signalled_copies(rate, queue, jobs, seed, q=0.8, warmup=1_000, preempt=math.inf):
    """An independent event simulation (heap and deques, written apart from the engine) of
    the pools scenario's servers under the signalled-pool rule: a job starts on the fast pool of
    its signalled type and, when its service starts there, a copy joins the other pool's queue
    at its back or front, after every server freed at that instant has taken its next job (an
    event at the same time, as the engine's timer); the first to finish cancels the other.
    With a finite ``preempt``, a job still in service on its first pool ``preempt`` after its
    copy was made, its copy still queued, has the copy take the other server from a job of that
    pool's own, which waits at the front with the work it has left and, when it resumes, arms
    its own rescue again. Mean response after warm-up."""
    import heapq
    import random
    from collections import deque

    rng, speed = random.Random(seed), UNBALANCED
    queues, serving, since, version = [deque(), deque()], [None, None], [0.0, 0.0], [0, 0]
    live, events, total, count, made = {}, [(rng.expovariate(rate), 0, -1, 0)], 0.0, 0, 0

    def begin(p, now, jid):
        version[p] += 1
        serving[p], since[p] = jid, now
        heapq.heappush(events, (now + live[jid]["work"][p], 1, p, version[p]))
        job = live[jid]
        if p == job["first"] and not job["copied"]:  # the copy: an event now, after this one
            heapq.heappush(events, (now, 2, p, jid))
        elif p == job["first"] and math.isfinite(preempt):  # resumed after a rescue took its server
            arm(jid, now)

    def arm(jid, now):
        live[jid]["token"] += 1
        heapq.heappush(events, (now + preempt, 3, live[jid]["token"], jid))

    def start(p, now):
        while serving[p] is None and queues[p]:
            jid = queues[p].popleft()
            if jid in live:
                begin(p, now, jid)

    while count < jobs:
        now, kind, p, v = heapq.heappop(events)
        if kind == 2:  # the copy of job v, in service on its first pool p since now
            if v in live and serving[p] == v:
                live[v]["copied"] = True
                (queues[1 - p].appendleft if queue == "front" else queues[1 - p].append)(v)
                start(1 - p, now)
                if math.isfinite(preempt):
                    arm(v, now)
        elif kind == 3:  # a rescue of job v (token p)
            job = live.get(v)
            if job is None or job["token"] != p or serving[job["first"]] != v:
                continue
            o = 1 - job["first"]
            held = serving[o]
            if held is not None and held != v and live[held]["first"] == o:
                live[held]["work"][o] -= now - since[o]
                live[held]["token"] += 1  # its own rescue waits until it resumes
                queues[o].remove(v)
                queues[o].appendleft(held)
                begin(o, now, v)
        elif kind == 0:
            heapq.heappush(events, (now + rng.expovariate(rate), 0, -1, 0))
            ptype = int(rng.random() < 0.5)
            signal = ptype if rng.random() < q else 1 - ptype
            x = rng.expovariate(1.0)
            live[made] = {"arrival": now, "first": signal, "copied": False, "token": 0,
                          "work": [x / speed[0][ptype], x / speed[1][ptype]]}
            queues[signal].append(made)
            made += 1
            start(signal, now)
        elif version[p] == v:
            jid = serving[p]
            job = live.pop(jid)
            serving[p] = None
            if serving[1 - p] == jid:  # its copy in service on the other pool stops
                serving[1 - p] = None
                version[1 - p] += 1
            if jid >= warmup:
                total += now - job["arrival"]
                count += 1
            start(p, now)
            start(1 - p, now)
    return total / count


def signalled_pool(obs: np.ndarray) -> np.ndarray:
    """Action 0 (pool 1) for type information 0, action 1 (pool 2) for 1: the signalled pool."""
    return obs[:, -3:-1].argmax(1)


def signalled_means(stats, rate, B, steps, warmup, **variants) -> dict:
    """Per-instance mean response of the signalled-pool rule with a copy after 0, for each
    ``name=pools-block-keys`` variant, on the same draws (seed 3)."""
    means = {}
    for name, keys in variants.items():
        spec = pools_spec(rate=rate, knowledge={"signal": 0.8}, policy="replicate", tau=0.0,
                          actions=[{"pool": 1}, {"pool": 2}], **keys)
        done, _ = collect(Driver(spec, B, seed=3), signalled_pool, steps, warmup)
        means[name] = stats.per_instance_mean(done, done.sojourn, B)
    return means


def assert_matches_and_saves(stats, engine, runs, gain, what):
    """The engine's instances against the reference's runs (Z standard errors), and ``gain``
    (per instance, same draws) positive by more than 3 standard errors."""
    diff = engine.mean() - runs.mean()
    se = math.hypot(engine.std(ddof=1) / math.sqrt(engine.size), runs.std(ddof=1) / math.sqrt(runs.size))
    assert abs(diff) < stats.Z * se, f"engine {engine.mean():.4f}, reference {runs.mean():.4f}, se {se:.4f}"
    assert gain.mean() > 3 * gain.std(ddof=1) / math.sqrt(gain.size), f"{what} saves {gain.mean():.4f}"


def test_front_copies_match_an_independent_simulation_and_beat_back_ones(stats):
    # The scenario's servers at rate 0.5 under the signalled-pool rule (one copy at the start of
    # service): the engine against reference_signalled_copies (8 runs of 10,000 jobs), and
    # front copies against back ones in the engine (about 1.99 and 2.19 here).
    means = signalled_means(stats, 0.5, 200, 2000, 500, back={"queue": "back"}, front={"queue": "front"})
    runs = np.array([reference_signalled_copies(0.5, "front", 10_000, seed) for seed in range(8)])
    assert_matches_and_saves(stats, means["front"], runs, means["back"] - means["front"], "front")


def test_a_rescue_matches_an_independent_simulation_and_beats_front_copies_alone(stats):
    # Rate 0.8, front copies alone and with a rescue after 2 (about 4.5 and 3.5 here,
    # docs/systems/pools.md): the rescue against reference_signalled_copies (8 runs of 10,000
    # jobs), and against the copies alone on the same draws.
    means = signalled_means(stats, 0.8, 100, 1200, 300, front={"queue": "front"},
                            rescue={"queue": "front", "preempt": 2.0})
    runs = np.array([reference_signalled_copies(0.8, "front", 10_000, seed, preempt=2.0) for seed in range(8)])
    assert_matches_and_saves(stats, means["rescue"], runs, means["front"] - means["rescue"], "the rescue")
