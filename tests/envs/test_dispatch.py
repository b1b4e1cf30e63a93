"""Dispatch: probabilistic routing frequencies, and actions that choose the entry station."""

import numpy as np
import pytest

from envs import Driver, Engine, NetworkSpec, load_spec
from envs.rollout import accept_all, collect

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


def mean_response(spec, B=200, steps=2000, warmup=1000, action=0, seed=1):
    done, _ = collect(Driver(spec, B, seed=seed), lambda o: np.full(o.shape[0], action, np.int64), steps, warmup)
    return done, np.bincount(done.env, weights=done.sojourn, minlength=B) / np.bincount(done.env, minlength=B)


@pytest.mark.parametrize("k, lam, truth", [(3, 2.4, 1.944), (5, 4.0, 1.604)])
def test_fcfs_redundancy_iid_exponential_matches_gardner(k, lam, truth, stats):
    from drl_ac.theory.redundancy import gardner_fcfs_mean_response
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
    from drl_ac.theory.redundancy import fluid_growth_rate, stability_threshold
    from envs.distributions import Exponential
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
