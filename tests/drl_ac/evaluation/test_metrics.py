"""evaluate() against exact mean response times (each server of redundancy d = 1 on PS
servers an M/G/1-PS queue; full replication on two pools an M/M/1 queue), and the paired
comparison of two policies on common random numbers (metrics.paired_difference)."""

import math

import numpy as np
import pytest
import yaml

from drl_ac.evaluation.metrics import Z95, evaluate, paired_difference
from drl_ac.rules.tuning import ConstantAction
from envs import NetworkSpec
from envs.spec import SCENARIO_DIR
from envs.systems.pools.theory import PoolsModel, PoolsPolicy, server_time, stability_bound
from envs.systems.redundancy.theory import gardner_fcfs_mean_response, stability_threshold


def scenario(name: str, **changes) -> NetworkSpec:
    cfg = yaml.safe_load((SCENARIO_DIR / f"{name}.yaml").read_text())
    for key, value in changes.items():
        block, _, field = key.rpartition("__")
        (cfg[block] if block else cfg)[field] = value
    return NetworkSpec.from_dict(cfg)


def assert_mean_delay(m: dict, truth: float, label: str) -> None:
    se = (m["mean_delay_ci"][1] - m["mean_delay_ci"][0]) / (2 * Z95)
    assert abs(m["mean_delay"] - truth) < 4 * se, f"{label}: {m['mean_delay']:.4f} +- {se:.4f}, exact {truth:.4f}"


def test_redundancy_d1_on_ps_servers_is_n_mg1_ps_queues():
    # redundancy_ps with d = 1 at rate 5: each of the 10 PS servers gets Poisson(0.5) jobs
    # of size S Y (E[S] = E[Y] = 1, scv 4 and 0.5: far from exponential); an M/G/1-PS
    # queue's mean response is E[X] / (1 - rho) whatever the law (insensitivity): 2
    spec = scenario("redundancy_ps", redundancy__d=[1])
    red = spec.block
    assert stability_threshold(10, 1, red.copies, size=red.size, scale=red.scale, factor=red.factor) == \
        pytest.approx(10.0)  # lambda*(d = 1) = N / E[X]: rate 5 is load 0.5
    m = evaluate(ConstantAction(0), spec, arrivals=20_000, num_envs=100, warmup=500, seed=1)
    assert_mean_delay(m, 1.0 / (1 - 0.5), "d = 1, M/G/1-PS per server")


@pytest.mark.parametrize("rate", [0.5, 0.8])
def test_full_replication_on_two_pools_is_one_mm1_queue(rate):
    # pools: one server per pool, sizes X ~ Exp(1) kept on a restart, each type at speed 1
    # on one pool and 0.1 on the other. Full replication (a copy in both queues on arrival):
    # both FIFO queues hold the same jobs in the same order, both servers start a job
    # together and the fast copy ends it after X: an M/M/1 queue with mu = 1, whatever the
    # signal says; E[T] = 1 / (1 - lam). The formula's bound is then mu = 1.
    spec = scenario("pools", arrival={"dist": "exponential", "rate": rate}, pools__timer="arrival",
                    pools__actions=[{"pool": "auto", "policy": "replicate", "tau": 0.0}])
    pools = spec.block
    policy = PoolsPolicy(knowledge=pools.knowledge, q=pools.q, f=pools.f, assignment=pools.assign,
                         p_split=pools.p_split, action="replicate", tau=0.0, restart=pools.restart)
    model = PoolsModel(pools.p, pools.speeds, pools.servers)
    assert stability_bound(model, policy, pools.size) == pytest.approx(1.0)
    assert server_time(model, policy, pools.size) == pytest.approx([1.0, 1.0])  # both busy for all of X
    m = evaluate(ConstantAction(0), spec, arrivals=20_000, num_envs=100, warmup=500, seed=2)
    assert_mean_delay(m, 1.0 / (1 - rate), f"full replication at rate {rate}, M/M/1")


def _run(delay, accepted):
    return {"per_instance": {"delay": np.asarray(delay, float), "accepted": np.asarray(accepted, float)}}


def test_paired_difference_by_hand():
    # a: 12 / 6 = 2 with residuals 0; b: 7 / 6, residuals (b - 7/6 n) / 2 = (-1/12, -1/6, 1/4)
    d = paired_difference(_run([2, 4, 6], [1, 2, 3]), _run([1, 2, 4], [1, 2, 3]))
    se = math.sqrt((1 / 144 + 4 / 144 + 9 / 144) / 2 / 3)
    assert d["difference"] == pytest.approx(5 / 6)
    assert d["se"] == pytest.approx(se)
    assert d["ci"] == pytest.approx([5 / 6 - Z95 * se, 5 / 6 + Z95 * se])
    same = paired_difference(_run([2, 4, 6], [1, 2, 3]), _run([2, 4, 6], [1, 2, 3]))
    assert same["difference"] == 0 and same["se"] == 0
    with pytest.raises(ValueError, match="same seed"):
        paired_difference(_run([1, 2], [1, 1]), _run([1, 2, 3], [1, 1, 1]))


def test_paired_difference_of_d1_and_d2_matches_theory_and_is_tighter():
    # FCFS redundancy, 3 servers, i.i.d. exponential copies, lambda 2.4: d = 1 is three M/M/1
    # queues at load 0.8 (mean 5), d = 2 Gardner et al.'s 1.944
    spec = NetworkSpec.from_dict({
        "arrival": {"dist": "exponential", "rate": 2.4}, "d_ub": 10, "eps": 0.1,
        "redundancy": {"servers": 3, "kind": "fcfs", "copies": "iid", "size": {"dist": "exponential", "mean": 1.0},
                       "d": [1, 2]}})
    runs = [evaluate(lambda o, a=a: np.full(o.shape[0], a, np.int64), spec, arrivals=300_000, num_envs=200,
                     warmup=1500, seed=3, per_instance=True) for a in (0, 1)]
    d = paired_difference(*runs)
    truth = 1 / (1 - 0.8) - gardner_fcfs_mean_response(3, 2, 2.4)
    assert abs(d["difference"] - truth) < 4 * d["se"], (d, truth)
    assert d["difference"] == pytest.approx(runs[0]["mean_delay"] - runs[1]["mean_delay"])
    separate = [(m["mean_delay_ci"][1] - m["mean_delay_ci"][0]) / (2 * Z95) for m in runs]
    assert d["se"] < math.hypot(*separate)  # the same arrivals: positively correlated, the noise partly cancels


def test_an_evaluation_without_probes_has_the_same_acceptance_and_violation_and_no_objective():
    """Rule tuning evaluates without probes (most of a network's simulation time): a probe
    never touches the real network, so only the objective (which scores rejections) is lost."""
    from envs import load_spec
    from envs.systems.network.rules import StationThresholds

    spec, rule = load_spec("paper_tandem"), StationThresholds((6, 7, 9))
    probed, unprobed = (evaluate(rule, spec, arrivals=4_000, seed=3, num_envs=40, probes=p) for p in (True, False))
    for key in ("acceptance", "violation", "mean_delay", "warmup_steps"):
        assert probed[key] == unprobed[key], key
    assert 0 < probed["objective"] < 1 and math.isnan(unprobed["objective"])


def test_by_phase_bins_jobs_by_arrival_time_and_the_bins_add_up_to_the_whole():
    """A day of two hours of one M/M/1 queue, at loads 0.5 then 0.95 (Poisson, each hour 300):
    the first 12 of 24 phase bins hold the quiet hour's arrivals, the last 12 the busy hour's, in
    the ratio of the rates (0.95 / 0.5) within 4 standard errors of a Poisson count; the mean
    response of the whole is the bins' mean weighted by their jobs, to rounding; and the busy
    hour's jobs wait longer."""
    from drl_ac.study.loads import load_range
    from envs import load_spec

    spec = load_range(load_spec("mmc_c1"), [0.5, 0.95], hold=300.0)
    m = evaluate(ConstantAction(1, "always accept"), spec, arrivals=30_000, seed=3, num_envs=32, bins=24)
    rows = np.array(m["rows_by_phase"], float)
    assert m["phase_bins"] == 24 and rows.sum() == m["arrivals"]
    quiet, busy = rows[:12].sum(), rows[12:].sum()
    assert abs(math.log(busy / quiet) - math.log(0.95 / 0.5)) < 4 * math.sqrt(1 / busy + 1 / quiet)
    delays = np.array(m["mean_delay_by_phase"])
    assert np.average(delays, weights=rows) == pytest.approx(m["mean_delay"], rel=1e-9)
    assert delays[12:].mean() > 2 * delays[:12].mean()
    assert all(lo <= d <= hi for d, (lo, hi) in zip(delays, m["mean_delay_by_phase_ci"], strict=True))
