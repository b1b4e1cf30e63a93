"""One policy through a day (drl_ac/study/profiles.py): the oracle rule switches by the hour it
reads from the phase, the rules blind to the hour read what they read at a fixed load, and a
verdict never rests on a rule above eps."""

from argparse import Namespace

import numpy as np
import pytest

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.metrics import evaluate, undefined
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.rules.tuning import ConstantAction, TuningResult
from drl_ac.study import StudyConfig, at_load, profiles
from drl_ac.study.loads import load_range
from drl_ac.study.profiles import (
    COMPARATORS,
    HourlyRule,
    by_hour_table,
    day,
    day_verdict,
    hidden_clock,
    hour_jobs,
    hour_loads,
    hour_spec,
    over_profile,
    per_hour_rules,
    table,
    table_hours,
    tune_many,
    unstable_at,
    window_cell,
    within,
    worst_window,
)
from envs import Driver, NetworkSpec, SpecError, load_spec
from envs.systems.cell.rules import CellAcceptAll, PRBThreshold, TypeThresholds, cell_layout

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


def cell_day(table=(1.0, 5.0, 1.0, 0.5)) -> NetworkSpec:
    """A small cell through a day of four hours: data UEs (and their handovers) by the hour,
    voice at a constant rate."""
    return NetworkSpec.from_dict({"name": "cell_day", "eps": 0.05, "cell": {"prbs": 8, "drop": "lowest_priority",
                                                                            "types": [
        {"name": "data", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": list(table)}},
         "session": {"dist": "exponential", "mean": 1.0}, "gbr": 0.4, "priority": 0,
         "cqi": {"up": 1.0, "down": 1.0, "range": [7, 9], "init": [0] * 6 + [0.3, 0.4, 0.3] + [0] * 6},
         "handover": {"dist": "poisson", "profile": {"period": 40.0, "table": [0.1 * x for x in table]}}},
        {"name": "voice", "arrival": {"dist": "poisson", "rate": 1.5}, "session": {"dist": "exponential", "mean": 1.0},
         "prbs": 1, "priority": 1}]}})


def test_an_hour_of_a_day_holds_every_rate_table_at_that_hour():
    day_5g = load_spec("cell_5g")
    h = hour_spec(day_5g, 18)
    assert h.name == "cell_5g@h18" and h.period is None and h.system.encoding().period is None
    assert [1 / p.dist.mean for p in h.arrival_processes()] == [3.0, 6.0, 4.0]  # video, voice, vehicular at 18:00
    assert h.to_dict()["cell"]["types"][2]["handover"] == {"dist": "exponential", "mean": 1.0}
    assert table_hours(day_5g) == 24
    daily = load_spec("redundancy_ps_daily")
    assert hour_spec(daily, 14).arrival_rate == pytest.approx(10 * hour_loads(daily, 10.0)[14]) == 9.5
    assert hour_spec(cell_day(), 3).to_dict()["cell"]["types"][1]["arrival"] == {"dist": "exponential",
                                                                                  "mean": 1 / 1.5}
    with pytest.raises(ValueError, match="hour must be in 0..3"):
        hour_spec(cell_day(), 4)
    with pytest.raises(SpecError, match="it has none"):
        table_hours(load_spec("cell_small"))
    cfg = cell_day().to_dict()
    cfg["cell"]["types"][0]["handover"]["profile"]["table"] = [0.1, 0.2]
    with pytest.raises(SpecError, match="lengths differ"):
        table_hours(NetworkSpec.from_dict(cfg))
    cfg["cell"]["types"][0]["handover"] = {"dist": "poisson", "rate": 0.3,
                                           "profile": {"period": 40.0, "sinusoid": {"amplitude": 0.5}}}
    with pytest.raises(SpecError, match=r"cell\.types\[0\]\.handover\.profile: .*not a table"):
        table_hours(NetworkSpec.from_dict(cfg))


def test_a_cells_hourly_rule_reads_the_columns_of_the_cell_at_a_fixed_load():
    """Without its two phase columns a cell's observation is that of the cell at a fixed load
    (the CQI bands after them included), so the rules tuned for an hour read what they were tuned on."""
    cfg = cell_day().to_dict()
    cfg["cell"]["cqi_bands"] = [8]  # two bands: CQI 7 and 8-9
    spec = NetworkSpec.from_dict(cfg)
    encoding = spec.system.encoding()
    driver = Driver(spec, 16, seed=1, encoding=encoding)
    obs, seen = driver.reset(), []
    for _ in range(300):
        seen.append(obs)
        obs = driver.step(np.ones(16, np.int64))[0]
    obs = np.concatenate(seen)
    c = encoding.phase_column()
    plain = np.delete(obs, [c, c + 1], axis=1)
    at, here = cell_layout(hour_spec(spec, 1)), cell_layout(spec)
    assert plain.shape[1] == hour_spec(spec, 1).system.encoding().width
    for read in ("prbs_in_use", "ue_type", "ue_demand"):
        np.testing.assert_array_equal(getattr(at, read)(plain), getattr(here, read)(obs))
    np.testing.assert_array_equal(plain[:, at.bands], obs[:, here.bands])
    thresholds = [(1, 8), (6, 2), (3, 3), (8, 0)]
    rule = HourlyRule([TypeThresholds(at, t) for t in thresholds], encoding, "by the hour")
    limit = np.asarray(thresholds)[here.phase_bin(obs, 4), here.ue_type(obs)]
    np.testing.assert_array_equal(rule(obs), (here.prbs_in_use(obs) < limit).astype(np.int64))
    assert len(set(here.phase_bin(obs, 4))) == 4


def by_rate(calls: list):
    """A stand-in for ``tune_rules`` (the cell's tuner is tested where it lives): a PRB threshold
    at twice the data UEs' rate of the spec's hour, and accept-all."""

    def tune(spec, seed, budget, progress=None, **options):
        calls.append((spec.name, seed, options))
        rate = 1 / spec.arrival_processes()[0].dist.mean if spec.period is None else 8.0
        return {"PRB threshold": TuningResult(PRBThreshold(cell_layout(spec), int(2 * rate)), {}),
                "accept-all": TuningResult(CellAcceptAll(cell_layout(spec)), {})}
    return tune


def test_each_distinct_hour_is_tuned_once_and_its_rules_switch_by_the_hour(monkeypatch):
    calls = []
    monkeypatch.setattr(profiles, "tune_rules", by_rate(calls))
    got = per_hour_rules(cell_day((1.0, 5.0, 1.0, 0.5)), seed=7, budget="smoke", arrivals=100)
    # hours 0 and 2 have the same rates: tuned once, on the seed of hour 0
    assert calls == [(f"cell_day@h{h}", 7 + 7_919 * (h + 1), {"arrivals": 100}) for h in (0, 1, 3)]
    assert list(got) == ["PRB threshold per hour"]  # accept-all, one rule at every hour, is the day's own row
    assert [r.T for r in got["PRB threshold per hour"].rule.rules] == [2, 10, 2, 1]
    assert got["PRB threshold per hour"].rule.describe() == "PRB threshold re-tuned for each hour's load"
    cfg = cell_day((1.0, 5.0, 1.0, 0.5)).to_dict()  # hours 0 and 2 now differ in their handovers only
    cfg["cell"]["types"][0]["handover"]["profile"]["table"] = [0.1, 0.5, 0.3, 0.05]
    calls.clear()
    per_hour_rules(NetworkSpec.from_dict(cfg), seed=7, budget="smoke")
    assert [c[0] for c in calls] == [f"cell_day@h{h}" for h in range(4)]


def test_a_day_without_hours_to_tune_for_is_refused_naming_the_stream():
    cfg = cell_day().to_dict()
    cfg["cell"]["types"][0]["arrival"]["profile"]["table"] = [1.0, 0.0, 2.0, 0.5]
    with pytest.raises(SpecError, match=r"cell\.types\[0\]\.arrival\.profile\.table\[1\]: .*no arrivals"):
        hour_spec(NetworkSpec.from_dict(cfg), 1)
    cfg = cell_day().to_dict()
    cfg["cell"]["types"][0]["handover"]["profile"]["period"] = 80.0
    with pytest.raises(SpecError, match="periods differ"):
        table_hours(NetworkSpec.from_dict(cfg))
    with pytest.raises(SpecError, match="clock is hidden"):  # what a --one-policy study trains on
        table_hours(load_range(load_spec("mmc_c1"), [0.5, 0.9], hold=HOLD))


def hour_row(blocking: list[float], dropping: float, half: float = 0.01) -> dict:
    """A cell's row over a day of len(blocking) bins with intervals of half-width ``half``."""
    return {"rule": "r", "blocking": float(np.mean(blocking)), "blocking_ci": [0, 1], "dropping": dropping,
            "dropping_se": 0.0005, "dropping_ci": [dropping - 0.001, dropping + 0.001], "phase_bins": len(blocking),
            "blocking_by_phase": blocking, "blocking_by_phase_ci": [[b - half, b + half] for b in blocking],
            "dropping_by_phase": [dropping] * len(blocking),
            "dropping_by_phase_ci": [[dropping - half, dropping + half]] * len(blocking)}


def test_the_hour_by_hour_table_takes_the_best_oracle_that_keeps_eps():
    spec = load_spec("cell_5g")  # eps 0.02
    rows = {"learned": hour_row([0.1] * 24, 0.018), "types per hour": hour_row([0.15] * 24, 0.019, 0.03),
            "guard per hour": hour_row([0.05] * 24, 0.03)}  # blocks least, but drops above eps
    rules = {"types per hour": [f"T{h}" for h in range(24)], "guard per hour": ["G"] * 24}
    text = by_hour_table(rows, spec, rules)
    assert text.startswith("By hour: learned against types per hour")
    # learned 0.1 +- 0.01, the rule 0.15 +- 0.03: difference -0.05, half-width hypot(0.02, 0.06) / 2
    half = float(np.hypot(0.02, 0.06) / 2)
    assert "| 3 | 0.1000 [0.0900, 0.1100] | 0.1500 [0.1200, 0.1800] |" in text
    assert f"| -0.0500 [{-0.05 - half:+.4f}, {-0.05 + half:+.4f}] | T3 |" in text
    assert text.count("\n| ") == 25
    assert by_hour_table(rows, spec, {"guard per hour": ["G"] * 24}).startswith(
        "No hour-by-hour table: no rule re-tuned per hour meets eps")
    windows = {"learned": hour_row([0.1] * 12, 0.018), "types per hour": hour_row([0.15] * 12, 0.019)}
    assert by_hour_table(windows, spec, {"types per hour": rules["types per hour"]}).startswith("By window")  # 12 bins of a 24-hour table


def test_evaluate_per_hour_adds_the_oracle_to_the_comparison_and_tables_it_hour_by_hour(experiment, monkeypatch):
    evaluate_cli = experiment("evaluate")
    calls = []
    monkeypatch.setattr(profiles, "tune_rules", by_rate(calls))  # the day's tuning too
    spec = cell_day((1.0, 5.0, 1.0, 0.5))
    args = Namespace(seed=3, budget="smoke", tune_arrivals=2_000, cell_measure="dropping", quiet=True, per_hour=True,
                     cell_rules="thresholds")
    rows, verdict, hourly = evaluate_cli.compare_with_baselines(CellAcceptAll(cell_layout(spec)), spec, args)
    assert [c[0] for c in calls] == ["cell_day", "cell_day@h0", "cell_day@h1", "cell_day@h3"]
    # the day's tuning options, the thresholds' chain of the cell's tuner only (--cell-rules thresholds)
    assert all(c[2] == {"arrivals": 2_000, "measure": "dropping", "chain": 0} for c in calls)
    assert hourly == {"PRB threshold per hour": ["PRBs < 2", "PRBs < 10", "PRBs < 2", "PRBs < 1"]}
    assert list(rows) == ["learned", "PRB threshold", "accept-all", *hourly]  # the day's rules stay beside them
    assert rows["PRB threshold"]["rule"] == "PRBs < 16"
    assert rows["PRB threshold per hour"]["rule"] == "PRB threshold re-tuned for each hour's load"
    # the busy hour's threshold (PRBs < 10: all 8) blocks nothing there; the quiet hour's (< 1) blocks more
    busy, quiet = (rows["PRB threshold per hour"]["blocking_by_phase"][j] for j in (9, 21))
    assert busy < quiet
    text = by_hour_table(rows, spec, hourly)
    assert text.count("\n| ") == rows["learned"]["phase_bins"] + 1 and "learned blocking | rule blocking" in text
    with pytest.raises(SystemExit, match="--per-hour adds rules"):
        evaluate_cli.main(["--checkpoint", "checkpoints/cell_5g/policy.pt", "--per-hour"])
    with pytest.raises(SystemExit, match="it has none"):
        evaluate_cli.main(["--checkpoint", "checkpoints/paper_tandem/policy.pt", "--per-hour", "--baselines"])


def test_hours_tuned_in_other_processes_get_the_same_rules():
    jobs, index = hour_jobs(two_hours(), seed=4)
    rate = load_spec("mmc_c1").arrival_rate
    assert index == [0, 1] and [spec.arrival_rate for spec, _ in jobs] == pytest.approx([0.5 * rate, 0.95 * rate])
    here, there = tune_many(jobs, "smoke"), tune_many(jobs, "smoke", workers=2)
    assert [{f: r.rule.describe() for f, r in t.items()} for t in here] == \
        [{f: r.rule.describe() for f, r in t.items()} for t in there]
    assert here[0]["total threshold"].rule.describe() != here[1]["total threshold"].rule.describe()
