"""One policy through a day (drl_ac/study/profiles.py): the oracle rule switches by the hour it
reads from the phase, the rules blind to the hour read what they read at a fixed load, and a
verdict never rests on a rule above eps."""

import numpy as np
import pytest

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.metrics import evaluate, undefined
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.rules.tuning import ConstantAction
from drl_ac.study import StudyConfig, at_load
from drl_ac.study.loads import load_range
from drl_ac.study.profiles import (
    COMPARATORS,
    HourlyRule,
    day,
    day_verdict,
    hidden_clock,
    hour_loads,
    over_profile,
    table,
    unstable_at,
    window_cell,
    within,
    worst_window,
)
from envs import Driver, NetworkSpec, SpecError, load_spec

HOLD = 300.0


def two_hours(name: str = "mmc_c1", loads=(0.5, 0.95)) -> NetworkSpec:
    """A day of two hours of ``name``'s system, at ``loads``, whose clock a controller sees."""
    cfg = load_range(load_spec(name), loads, hold=HOLD).to_dict()
    cfg["arrival"]["profile"]["observed"] = True
    cfg["name"] = f"{name}_two_hours"
    return NetworkSpec.from_dict(cfg)


class Width:
    """A rule that records the width of what it reads and always admits."""

    def __init__(self):
        self.widths = set()

    def __call__(self, obs):
        self.widths.add(obs.shape[1])
        return np.ones(len(obs), np.int64)


def test_the_hourly_rule_acts_by_the_hour_it_reads_from_the_phase():
    spec = two_hours()
    encoding = spec.system.encoding()
    rule = HourlyRule([ConstantAction(0), ConstantAction(1)], encoding, "reject, then admit")
    driver = Driver(spec, 8, seed=2, encoding=encoding)
    obs, times, actions = driver.reset(), [], []
    while driver.engine.now.min() < 3 * spec.period:
        times.append(driver.engine.now.copy())
        actions.append(rule(obs))
        obs = driver.step(actions[-1])[0]
    t, a = np.concatenate(times), np.concatenate(actions)
    hour = (t // HOLD).astype(int) % 2
    away = np.abs(t / HOLD - np.round(t / HOLD)) > 1e-4  # float32 phase: a hair's width at a boundary
    assert away.mean() > 0.99 and t.size > 1_000
    np.testing.assert_array_equal(a[away], hour[away])
    plain = Width()  # the rules read the observation of a fixed load: no phase columns
    HourlyRule([plain], encoding, "plain")(obs)
    assert plain.widths == {encoding.width - 2} == {load_spec("mmc_c1").system.encoding().width}
    with pytest.raises(ValueError, match="phase"):
        HourlyRule([plain], load_spec("mmc_c1").system.encoding(), "no clock")


def test_over_a_day_every_comparator_is_judged_and_an_infeasible_policy_is_worse():
    base, day = load_spec("mmc_c1"), two_hours()
    tuned_at: dict = {}
    result = over_profile(ConstantAction(1, "always accept"), base, day, tuned_at, seed=0, budget="smoke")
    assert result["hours"] == [0.5, 0.95] and (result["average"], result["peak"]) == (0.725, 0.95)
    assert set(tuned_at) == {0.5, 0.725, 0.95}  # every hour's load and the average's, tuned once
    rows = result["rows"]
    hourly = rows["total threshold per hour"]["rule"]
    assert hourly == "total threshold re-tuned for each hour's load"
    assert tuned_at[0.5]["total threshold"].rule.describe() != tuned_at[0.95]["total threshold"].rule.describe()
    # switched by the hour, the rule admits more than the peak's rule kept all day (the low hour's is looser)
    assert rows["total threshold (tuned at 0.95)"]["acceptance"] < rows["total threshold per hour"]["acceptance"]
    assert rows["learned"]["acceptance"] == 1.0 and rows["learned"]["violation"] > day.eps
    for name in COMPARATORS:
        v = result["verdicts"][name]
        assert v["outcome"] == "worse" and v["best_rule"] is not None
        assert rows[v["best_rule"]]["violation"] <= day.eps + 0.05  # only rules that meet the constraint
    text = table(result, base)
    assert all(f"| {name} |" in text for name in COMPARATORS)
    worst = result["windows"]["learned"]  # accept-all's worst window is in the busy hour, the day's second half
    assert worst["value"] == max(rows["learned"]["violation_by_phase"]) and worst["window"] >= worst["bins"] // 2
    assert "Its worst window: violation" in text


def test_a_window_above_eps_is_significant_over_the_days_windows_together():
    """24 windows with standard error 0.01: at eps 0.1 a window reading 0.12 is not above eps
    once the 24 tests count together (z = 2.86 for 1 - 0.05 / 24: 0.12 - 0.0286 < 0.1), though a
    single 95% test would say so (0.12 - 0.0164 > 0.1); 0.13 is. A row above eps in a window does
    not meet the constraint, whatever its day's mean."""
    spec = load_spec("mmc_c1")
    values = [0.05] * 24
    values[5], values[20] = 0.12, 0.13
    row = {"violation": 0.06, "violation_se": 0.001, "violation_ci": [0.058, 0.062], "phase_bins": 24,
           "violation_by_phase": values, "violation_by_phase_se": [0.01] * 24,
           "violation_by_phase_ci": [[v - 0.0196, v + 0.0196] for v in values]}
    w = worst_window(row, spec)
    assert (w["window"], w["value"], w["above_eps"]) == (20, 0.13, [20])
    assert "above eps in window(s) 21" in window_cell(w, spec.eps)
    assert not within(row, spec)
    values[20] = 0.12
    assert worst_window(row, spec)["above_eps"] == [] and within(row, spec)


def test_a_day_must_be_of_the_same_system_with_a_clock():
    base = load_spec("mmc_c1")
    with pytest.raises(SpecError, match="profiles"):
        over_profile(ConstantAction(1), base, load_range(base, [0.5, 0.9]), {}, budget="smoke")  # no clock
    with pytest.raises(SpecError, match="profiles"):
        over_profile(ConstantAction(0), base, load_spec("redundancy_ps_daily"), {}, budget="smoke")
    assert hour_loads(load_spec("redundancy_ps_daily"), 10.0)[13:16] == [0.95, 0.95, 0.95]
    with pytest.raises(ValueError, match="--one-policy"):
        StudyConfig(scenario="redundancy_ps", profiles=("redundancy_ps_daily",))
    with pytest.raises(ValueError, match="not a scenario of"):
        StudyConfig(scenario="redundancy_ps", loads=(0.3, 0.9), one_policy=True, profiles=("pools_daily",))


def test_a_policy_blind_to_the_clock_runs_the_day_with_its_phase_hidden():
    range_spec = load_range(load_spec("mmc_c1"), [0.5, 0.95], hold=HOLD)  # what a --one-policy study trains on
    trainer = Trainer(TrainConfig(scenario="mmc_c1", steps=1_000, num_envs=16, seed=0), spec=range_spec)
    trainer.train()
    policy = LoadedPolicy(trainer.policy_section())
    assert policy.encoding.period is None
    spec = two_hours()
    got = day(policy, spec, seed=5, budget="smoke")  # the day's clock is observed; the policy's is not
    hidden = hidden_clock(spec)
    assert hidden.period == spec.period and hidden.system.encoding().period is None
    want = evaluate(policy, hidden, arrivals=8 * 400, seed=5, num_envs=8, per_instance=True)
    assert got["acceptance"] == want["acceptance"] and got["arrivals"] == want["arrivals"]


def test_a_policy_whose_backlog_outgrew_the_table_over_a_day_is_worse():
    spec = load_spec("redundancy_ps_daily")
    rule = {"mean_delay": 3.0, "mean_delay_ci": [2.9, 3.1], "arrivals": 1000, "stationary": True}
    rows = {"learned": undefined(8, unstable="an instance's backlog outgrew the job table"), "d = 1": rule}
    v = day_verdict(rows, ["d = 1"], spec)
    assert v["outcome"] == "worse" and v["difference"] is None and "backlog" in v["why"]
    assert day_verdict({"learned": rows["learned"]}, [], spec)["outcome"] == "no comparator"


def test_a_rule_unstable_at_the_peak_is_not_run_over_the_day():
    peak = at_load(load_spec("redundancy_ps"), 0.95)  # 9.5 arrivals per unit time: lambda*(4) is 6.2
    assert "unstable" in unstable_at(ConstantAction(3), peak, seed=3, budget="quick")
    assert unstable_at(ConstantAction(0), at_load(load_spec("redundancy_ps"), 0.5), seed=3, budget="quick") is None
    assert unstable_at(ConstantAction(3), peak, seed=3, budget="smoke") is None  # smoke decides nothing
