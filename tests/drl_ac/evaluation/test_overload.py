"""An admission policy on an overloaded network: scored as overloaded in seconds and bounded
memory, never a CapacityError after minutes; calibration steps past it to a feasible bias."""

import math
import time

import pytest

from drl_ac import TrainConfig, Trainer
from drl_ac.evaluation.calibration import calibrate_bias
from drl_ac.evaluation.metrics import SharedStart, evaluate, format_metrics
from drl_ac.evaluation.steady import steady_state
from envs import NetworkSpec, load_spec
from envs.engine import CapacityError
from envs.rollout import accept_all

TANDEM = {"name": "overloaded", "arrival": {"dist": "exponential", "rate": 5.0},
          "stations": [{"name": "s1", "servers": 1, "service": {"dist": "exponential", "mean": 1.0}},
                       {"name": "s2", "servers": 2, "service": {"dist": "exponential", "mean": 1.5}}],
          "d_ub": 10.0, "eps": 0.1, "delay": "sojourn"}


@pytest.fixture(scope="module")
def overloaded() -> NetworkSpec:
    return NetworkSpec.from_dict(TANDEM)


def test_the_hopeless_backlog_is_a_power_of_two_32_times_what_the_stations_finish_in_time():
    # 1 x 10 / 1 + 2 x 10 / 1.5 = 23.3 jobs finish within the deadline: 32 x 23.3 = 747 -> floor 2048
    assert NetworkSpec.from_dict(TANDEM).system.hopeless_backlog() == 2048
    # d_ub 100: 233.3 x 32 = 7467 -> 8192
    assert NetworkSpec.from_dict({**TANDEM, "d_ub": 100.0}).system.hopeless_backlog() == 8192
    # paper_tandem: 3 x 15/3 + 5 x 15/5 + 2 x 15/2 = 45 -> 1440 -> 2048; control systems keep the engine's bound
    assert load_spec("paper_tandem").system.hopeless_backlog() == 2048
    assert load_spec("redundancy_ps").system.hopeless_backlog() is None
    assert load_spec("cell_small").system.hopeless_backlog() is None


@pytest.mark.parametrize("measure", ["evaluate", "steady_state"])
def test_accepting_everything_is_scored_overloaded_in_seconds(overloaded, measure):
    t0 = time.perf_counter()
    if measure == "evaluate":
        m = evaluate(accept_all, overloaded, arrivals=4_000, seed=3)
    else:
        m = steady_state(accept_all, overloaded, num_envs=16, seed=3)
    assert time.perf_counter() - t0 < 60
    assert m["violation"] == 1.0 and m["violation_se"] == 0.0 and m["stationary"] is False
    assert math.isnan(m["acceptance"]) and "2048 jobs" in m["overloaded"]
    assert format_metrics(m, overloaded).startswith("OVERLOADED, violation scored 1: the policy admits more")


def test_a_bound_the_caller_sets_still_raises(overloaded):
    with pytest.raises(CapacityError, match="max_jobs=256"):
        evaluate(accept_all, overloaded, arrivals=2_000, seed=3, max_jobs=256)


def test_a_stable_admission_policy_is_measured_as_before(overloaded):
    m = evaluate(lambda obs: (obs.sum(1) < 5).astype(int), overloaded, arrivals=4_000, seed=3)
    assert "overloaded" not in m and 0 < m["acceptance"] < 1 and m["violation"] < 1


def test_a_shared_start_whose_first_policy_overloads_warms_up_with_the_candidate(overloaded):
    threshold = lambda obs: (obs.sum(1) < 5).astype(int)  # noqa: E731
    shared = SharedStart(overloaded, seed=4, first=accept_all, min_warmup=400)
    m = shared(threshold, 2_000, 20)
    assert "overloaded" not in m and 0 < m["acceptance"] < 1
    # a candidate that overloads is scored so (3,000 steps per instance: ~2,400 jobs more)
    assert shared(accept_all, 60_000, 20)["overloaded"]
    again = shared(threshold, 2_000, 20)  # the warmed state is kept: the same figures again
    assert again["acceptance"] == m["acceptance"] and again["violation"] == m["violation"]


def test_calibration_of_an_untrained_policy_on_an_overloaded_system_ends_feasible(overloaded):
    trainer = Trainer(TrainConfig(scenario="paper_tandem", num_envs=16, steps=16, device="cpu"), spec=overloaded)
    lines: list[str] = []
    t0 = time.perf_counter()
    bias, m = calibrate_bias(trainer.policy(), overloaded, 0.1, arrivals=2_000, num_envs=20,
                             progress=lines.append)
    assert time.perf_counter() - t0 < 120
    assert m["violation_upper"] <= 0.1 and "overloaded" not in m
    assert lines and all(line.startswith("calibration: bias ") for line in lines)


def test_the_memory_bound_of_many_instances_is_not_an_overload(overloaded):
    # a stable policy whose table outgrows max_bytes: the engine's own error (use fewer instances), not "overloaded"
    from drl_ac.evaluation.metrics import unless_overloaded
    from envs import Driver
    from envs.rollout import collect
    driver = Driver(overloaded, 64, seed=3, max_bytes=1 << 14, max_jobs=overloaded.system.hopeless_backlog())
    with pytest.raises(CapacityError, match="max_bytes"):
        unless_overloaded(overloaded, None, 64, lambda: collect(driver, lambda obs: (obs.sum(1) < 200).astype(int),
                                                                400))
    assert NetworkSpec.from_dict({**TANDEM, "d_ub": 1e6}).system.hopeless_backlog() == 1 << 16  # the engine's bound
