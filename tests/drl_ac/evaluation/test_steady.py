"""Steady-state evaluation and the stability verdict (drl_ac/evaluation/steady.py), against
exact queueing results: M/M/1 (FCFS), M/G/1-PS per server under redundancy with d = 1, and a
policy whose fluid limit is known to grow."""

import math

import numpy as np
import pytest
import yaml

from drl_ac.evaluation.metrics import format_metrics
from drl_ac.evaluation.steady import capped, stability, steady_state
from envs import NetworkSpec
from envs.rollout import accept_all, mser_cut
from envs.spec import SCENARIO_DIR

Z = 4.5


def redundancy_at(rate: float) -> NetworkSpec:
    cfg = yaml.safe_load((SCENARIO_DIR / "redundancy_ps.yaml").read_text())
    cfg["arrival"] = {"dist": "exponential", "rate": rate}
    return NetworkSpec.from_dict(cfg)


def d1(obs):
    return np.zeros(obs.shape[0], np.int64)


class MixD2:
    """d = 2 with probability 0.6, else d = 1: work per job 0.4 + 0.6 * 2 E[min of 2] = 1.15, so
    lambda* = 10 / 1.15 = 8.70 < 9 (fluid-unstable at load 0.9 of d = 1's limit)."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __call__(self, obs):
        return (self.rng.random(obs.shape[0]) < 0.6).astype(np.int64)


def test_mser_cut_by_hand():
    ramp = np.concatenate([np.linspace(0, 10, 10), np.full(30, 10.0)])
    assert 8 <= mser_cut(ramp) <= 10  # the cut lands where the ramp ends
    assert mser_cut(np.full(20, 3.0)) == 0  # nothing to cut
    assert mser_cut(np.arange(20.0)) == 10  # a trend: the cut hits the bound n/2 (not stationary)


def test_mm1_mean_sojourn_is_exact():
    spec = NetworkSpec.from_dict({"name": "mm1", "arrival": {"dist": "exponential", "rate": 0.8},
                                  "stations": [{"name": "s", "servers": 1,
                                                "service": {"dist": "exponential", "mean": 1.0}}],
                                  "d_ub": 10, "eps": 0.1})
    m = steady_state(accept_all, spec, seed=3, num_envs=64, min_steps=4_000, max_steps=4_000)
    assert m["stationary"] and m["acceptance"] == 1.0
    assert abs(m["mean_delay"] - 5.0) < Z * m["mean_delay_se"], m  # 1 / (mu - lambda)


def test_accept_all_runs_until_its_response_time_is_precise():
    """Accept-all's acceptance is 1 with no standard error: the run goes on until the mean
    response is known to ``rel_se`` (it once stopped at the first stationary check, after
    1,000 steps here, and an M/M/1 at load 0.95 read 10% low)."""
    spec = NetworkSpec.from_dict({"name": "mm1", "arrival": {"dist": "exponential", "rate": 0.95},
                                  "stations": [{"name": "s", "servers": 1,
                                                "service": {"dist": "exponential", "mean": 1.0}}],
                                  "d_ub": 10, "eps": 0.1})
    m = steady_state(accept_all, spec, seed=4, num_envs=128, min_steps=1_000, max_steps=32_000, rel_se=0.01)
    assert m["acceptance"] == 1.0 and m["acceptance_se"] == 0.0
    assert m["rel_se"] == pytest.approx(m["mean_delay_se"] / m["mean_delay"])
    assert m["warmup_steps"] + m["window_steps"] > 2_000, m  # past the first check
    assert m["stationary"] and abs(m["mean_delay"] - 20.0) < Z * m["mean_delay_se"], m  # 1 / (mu - lambda)


def test_redundancy_d1_is_m_g_1_ps_per_server():
    # rate 5 over 10 PS servers, one copy each: every server is an M/G/1-PS queue at load 0.5,
    # mean response E[X] / (1 - rho) = 2 whatever the size law (insensitivity)
    m = steady_state(d1, redundancy_at(5.0), seed=1, num_envs=64, max_steps=8_000, rel_se=0.02)
    assert m["stationary"] and m["rel_se"] <= 0.02
    assert abs(m["mean_delay"] - 2.0) < Z * m["mean_delay_se"], m


def test_start_state_is_used():
    spec = redundancy_at(5.0)
    from envs import Driver
    driver = Driver(spec, 16, seed=2)
    for _ in range(300):
        driver.step(np.zeros(16, np.int64))
    state = driver.engine.get_state()
    a = steady_state(d1, spec, seed=2, num_envs=16, min_steps=400, max_steps=400, start=state)
    b = steady_state(d1, spec, seed=2, num_envs=16, min_steps=400, max_steps=400)
    assert a["arrivals"] > 0 and a["mean_delay"] != b["mean_delay"]  # a different start, a different run


def test_stability_flags_d2_beyond_its_limit_and_passes_d1():
    # d = 2 at rate 9 > lambda*(2) = 8 (12% over its limit): drift +0.23 to +0.33 +- 0.04 on seeds 5-7
    spec = redundancy_at(9.0)
    d2 = lambda obs: np.ones(obs.shape[0], np.int64)  # noqa: E731
    grow = stability(d2, spec, seed=5, num_envs=32, build_steps=1_000, steps=3_000, doublings=0)
    assert grow.verdict == "unstable" and grow.drift > 0, grow.describe()
    calm = stability(d1, spec, seed=5, num_envs=32, build_steps=1_000, steps=3_000, doublings=0)
    assert calm.verdict == "stable" and calm.end < calm.backlog, calm.describe()


def test_an_admission_policy_drains_a_backlog_built_with_every_job_admitted():
    # mmc_c5_overload: 5 servers at load 1.1. Its own rejections would build no backlog (the
    # threshold rule never holds more than 12 jobs: undecided); the backlog is built with every
    # job admitted, and the rule then rejects until it drains: stable. Accepting every job grows
    # at 1.1 - 1 = 0.1 per unit time; a rule that admits again once 40 jobs are present (the
    # states a backlog reaches) grows too.
    from envs import load_spec

    spec = load_spec("mmc_c5_overload")
    threshold = lambda obs: (obs[:, 0] < 12).astype(np.int64)  # noqa: E731
    calm = stability(threshold, spec, seed=5, num_envs=32, build_steps=1_000, steps=3_000, doublings=0)
    assert calm.verdict == "stable" and calm.backlog > 100 and calm.end < 13, calm.describe()
    accept = lambda obs: np.ones(obs.shape[0], np.int64)  # noqa: E731
    extrapolates = lambda obs: ((obs[:, 0] < 12) | (obs[:, 0] >= 40)).astype(np.int64)  # noqa: E731
    for policy in (accept, extrapolates):
        grow = stability(policy, spec, seed=5, num_envs=32, build_steps=1_000, steps=3_000, doublings=0)
        assert grow.verdict == "unstable" and grow.drift > 0.05, grow.describe()


@pytest.mark.slow
def test_stability_flags_the_issues_random_policy_3_percent_over_its_limit():
    """The policy that passed the old protocol (d = 2 w.p. 0.6 at load 0.9, lambda* = 8.70):
    its number in system grows slowly, so it takes the long horizon and one doubling."""
    spec = redundancy_at(9.0)
    grow = stability(MixD2(), spec, seed=5, num_envs=32, build_steps=1_000, steps=8_000, doublings=1)
    assert grow.verdict == "unstable" and grow.drift > 0, grow.describe()


def test_capped_cuts_the_run_to_the_arrivals_asked_never_below_four_batches():
    quick = {"num_envs": 128, "min_steps": 1_000, "max_steps": 16_000, "rel_se": 0.01}
    assert capped(quick, 500) == {**quick, "min_steps": 400, "max_steps": 400}  # 4 batches of 100
    assert capped(quick, 1_280_000) == {**quick, "min_steps": 1_000, "max_steps": 10_000}
    smoke = {"num_envs": 8, "min_steps": 200, "max_steps": 200, "chunk": 50}
    assert capped(smoke, 10**9) == smoke and capped({}, 0) == {"min_steps": 400, "max_steps": 400}
    spec = redundancy_at(5.0)
    m = steady_state(d1, spec, seed=3, **capped({"num_envs": 16}, 16 * 400))
    assert m["warmup_steps"] + m["window_steps"] <= 400 and m["arrivals"] <= 16 * 400
    assert "NOT stationary" not in format_metrics(m, spec) or not m["stationary"]
    assert format_metrics({**m, "stationary": False}, spec).endswith("NOT stationary (the run ended drifting)")


def test_a_loss_system_is_stable_without_a_run():
    from envs import load_spec
    assert stability(d1, load_spec("cell_erlang")).verdict == "loss system"


@pytest.mark.slow
def test_redundancy_d1_at_load_09_reads_10():
    """The case a short window from an empty start got wrong (7.4): exactly 10 = 1 / (1 - 0.9)."""
    m = steady_state(d1, redundancy_at(9.0), seed=1, num_envs=256, max_steps=64_000)
    assert m["stationary"]
    assert abs(m["mean_delay"] - 10.0) < 0.02 * 10.0, m
    assert not math.isnan(m["rel_se"]) and m["rel_se"] <= 0.011


def test_a_run_too_short_for_its_load_gives_no_interval_and_no_verdict():
    """Redundancy d = 1 at load 0.9 relaxes over about 600 time units (5,000 decisions): a run of
    4,000 decisions per instance is no steady state. Its row says so and carries no interval,
    and a comparison with it has no verdict."""
    from drl_ac.study.compare import judge, table_cell
    spec = redundancy_at(9.0)
    m = steady_state(d1, spec, seed=2, num_envs=32, min_steps=2_000, max_steps=4_000)
    assert not m["stationary"] and m["steps_needed"] > 4_000  # what a run would need: more than it had
    row = {**m, "stability": {"verdict": "stable"}, "not_stationary": "no steady state within 4,000 decisions"}
    cell = table_cell(row, spec)
    assert cell.endswith(f"NOT stationary: no interval (needs at least {m['steps_needed']:,} decisions per instance)")
    assert "[" not in cell
    verdict = judge(spec, row, {"d = 1": {**row, "stationary": True}})
    assert verdict.outcome == "undecided" and verdict.difference is None
