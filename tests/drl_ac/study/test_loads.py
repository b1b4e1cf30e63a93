"""One policy for every load (drl_ac/study/loads.py): the training range holds each load in turn
with its phase hidden, the oracle comparator is re-tuned at every load while the average and
peak comparators keep their constants, every policy at a load is measured on that load's seeds,
and ``--one-policy`` writes one policy and one table. The arrival-rate estimate a policy may
observe follows the load, and the rules never read it."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import yaml

from drl_ac.checkpoint import LoadedPolicy, load_file
from drl_ac.evaluation.metrics import phase_offsets
from drl_ac.evaluation.selection import EVALUATION, visited_states
from drl_ac.learning.qnet import RuleDefault
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.rules.scheduled import ScheduledRule
from drl_ac.rules.tuning import ConstantAction, TuningResult
from drl_ac.study import Run, StudyConfig, at_load, run
from drl_ac.study import loads as loads_module
from drl_ac.study.compare import reading
from drl_ac.study.loads import (
    across_loads,
    choose_across_loads,
    comparator_loads,
    default_hold,
    load_base,
    load_range,
    schedule,
    table,
    unlike_own_rule,
    worse_ratio,
)
from envs import Driver, NetworkSpec, SpecError, load_spec
from envs.systems.pools.rules import SignalledPool


def test_a_load_range_holds_each_load_in_turn_and_hides_its_phase():
    base = load_spec("redundancy_ps")  # reference rate lambda*(1) = 10
    spec = load_range(base, [0.9, 0.3, 0.6])
    (process,) = spec.arrival_processes()
    hold = default_hold(base)
    assert hold == pytest.approx(1_000.0)  # 10,000 arrivals at the reference rate
    np.testing.assert_allclose(process.profile.table, [3.0, 6.0, 9.0])  # ascending, each a load of 10
    assert spec.period == pytest.approx(3 * hold) and spec.name == "redundancy_ps@0.3-0.9"
    assert not process.profile.observed
    # the controller sees no phase: a policy trained on the range reads a fixed load's observations
    assert spec.system.encoding() == at_load(base, 0.6).system.encoding()
    assert spec.system.encoding().period is None
    assert load_spec("redundancy_ps_daily").system.encoding().period == 24_000.0  # a daily clock is seen
    again = NetworkSpec.from_dict(spec.to_dict())  # the YAML form keeps it hidden
    assert not again.arrival_processes()[0].profile.observed and again.system.encoding().period is None


def test_a_range_weighted_by_arrivals_gives_every_load_the_same_decisions():
    base = load_spec("redundancy_ps")
    spec = load_range(base, [0.9, 0.3, 0.6], weight="arrivals")
    profile = spec.arrival_processes()[0].profile
    table, width = np.asarray(profile.table), profile.period / len(profile.table)
    held = {x: (table == x * 10.0).sum() * width for x in (0.3, 0.6, 0.9)}
    assert held[0.9] == pytest.approx(default_hold(base))  # the peak is held one hold
    arrivals = {x: held[x] * x * 10.0 for x in held}
    assert arrivals[0.3] == pytest.approx(arrivals[0.6]) == pytest.approx(arrivals[0.9])
    assert spec.system.encoding().period is None
    with pytest.raises(SpecError, match="hold_weight"):
        load_range(base, [0.3, 0.9], weight="load")
    with pytest.raises(ValueError, match=r"--hold-weight"):
        StudyConfig(scenario="pools", loads=(0.5, 0.9), one_policy=True, hold_weight="load")


def test_a_simulated_range_spends_each_hold_at_its_load():
    spec = load_range(load_spec("pools"), [0.3, 0.9], hold=200.0)
    rate = spec.system.reference_rate()
    driver = Driver(spec, 16, seed=3)
    driver.reset()
    times = []
    while driver.engine.now.min() < 2 * spec.period:
        times.append(driver.engine.now.copy())
        driver.step(np.zeros(16, np.int64))
    t = np.concatenate(times)
    t = t[t < 2 * spec.period]
    held = (t // 200.0).astype(int) % 2  # 0: the low load's hold, 1: the high one's
    counts = np.bincount(held, minlength=2) / (16 * 2)  # per instance and period
    expected = np.array([0.3, 0.9]) * rate * 200.0
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected / 32)), (counts, expected)


def test_a_load_range_refuses_what_it_cannot_be():
    with pytest.raises(SpecError, match="arrival.*Poisson"):
        load_range(load_spec("paper_tandem"), [0.5, 0.9])  # gamma arrivals: a profile would make them Poisson
    with pytest.raises(SpecError, match="at least two loads"):
        load_range(load_spec("pools"), [0.5])
    with pytest.raises(SpecError, match="hold"):
        load_range(load_spec("pools"), [0.5, 0.9], hold=0.0)
    bad = load_spec("redundancy_ps_daily").to_dict()
    bad["arrival"]["profile"]["observed"] = "no"
    with pytest.raises(SpecError, match=r"profile\.observed"):
        NetworkSpec.from_dict(bad)


def test_one_policy_needs_loads_and_a_positive_hold():
    with pytest.raises(ValueError, match=r"--one-policy.*at least two"):
        StudyConfig(scenario="pools", one_policy=True)
    with pytest.raises(ValueError, match=r"--one-policy"):
        StudyConfig(scenario="pools", loads=(0.5,), one_policy=True)
    with pytest.raises(ValueError, match=r"hold \(--hold\)"):
        StudyConfig(scenario="pools", loads=(0.5, 0.9), one_policy=True, hold=-1.0)


def test_the_oracle_is_re_tuned_at_each_load_and_the_fixed_comparators_are_not():
    base, loads = load_spec("mmc_c1"), [0.5, 0.95]
    accept = ConstantAction(1, "always accept")
    results = across_loads(accept, base, loads, seed=0, budget="smoke")
    assert [r["load"] for r in results] == loads
    low, high = (r["constants"] for r in results)
    assert low["re-tuned"]["total threshold"] != high["re-tuned"]["total threshold"]  # re-tuned per load
    for fixed in ("average", "peak"):  # tuned once, applied unchanged at every load
        assert low[fixed] == high[fixed]
    assert comparator_loads(loads) == {"re-tuned": None, "average": 0.725, "peak": 0.95}
    rows_low, rows_high = results[0]["rows"], results[1]["rows"]
    assert "total threshold (tuned at 0.95)" in rows_low and "total threshold (tuned at 0.725)" in rows_high
    assert not any("tuned at 0.95" in name for name in rows_high)  # the same constants: the same row, not again
    for r, load in zip(results, loads, strict=True):
        # the policy and the rules on the load's own evaluation seed: accept-all reads as its rule, to the digit
        assert r["rows"]["learned"]["acceptance"] == r["rows"]["always accept"]["acceptance"] == 1.0
        assert r["evaluation_seed"] == run.load_seed(0, load) + EVALUATION
        assert set(r["verdicts"]) == {"re-tuned", "average", "peak"}
    text = table(results, base)
    assert text.count("\n| 0.5 |") == 1 and "tuned at the peak 0.95 (c)" in text


def test_worse_ratio_reads_how_many_times_worse_on_either_sense():
    assert worse_ratio(3.0, 2.0, "min") == 1.5 and worse_ratio(1.0, 2.0, "min") == 0.5
    assert worse_ratio(0.8, 0.9, "max") == pytest.approx(1.125)  # acceptance 0.8 against 0.9
    assert worse_ratio(math.nan, 1.0, "min") == math.inf and worse_ratio(0.0, 0.9, "max") == math.inf


def test_the_choice_across_loads_takes_the_smallest_worst_ratio_not_the_best_pooled_mean(monkeypatch):
    """Scripted measures (mean response) at loads 0.3 and 0.9 against bars 1.0 and 1.6. A is
    12.5% above the bar at its worst load, B 30%: the worst ratio takes A, though B's mean over
    the range, the load 0.9 weighing 3/4 of the jobs, is lower (1.5625 against 1.6). C is best
    at both loads but unstable at 0.9 (the peak, checked first): dropped, never run at 0.3."""
    base = load_spec("redundancy_ps")
    rate = {x: at_load(base, x).arrival_rate for x in (0.3, 0.9)}
    script = {"bar": {0.3: 1.0, 0.9: 1.6}, "A": {0.3: 1.0, 0.9: 1.8}, "B": {0.3: 1.3, 0.9: 1.65},
              "C": {0.3: 0.9, 0.9: 1.5}}
    calls = []

    class Scripted:
        def __init__(self, label):
            self.label = label

        def __call__(self, obs):
            raise AssertionError("measured by script only")

        def describe(self):
            return self.label

        def policy(self):
            return self

    def measure(policy, spec, seed, budget):
        load = next(x for x, r in rate.items() if math.isclose(r, spec.arrival_rate))
        calls.append((policy.label, load))
        verdict = "unstable" if (policy.label, load) == ("C", 0.9) else "stable"
        return {"mean_delay": script[policy.label][load], "stationary": True, "stability": {"verdict": verdict}}

    monkeypatch.setattr(loads_module, "measure", measure)
    tuned = {x: {"own": TuningResult(Scripted("bar"), {"arrivals": 1, "mean_delay": script["bar"][x]}),
                 "worse": TuningResult(Scripted("worse"), {"arrivals": 1, "mean_delay": 9.0})} for x in rate}
    cands = [Scripted(n) for n in "ABC"]
    chosen, scored = choose_across_loads(cands, base, [0.3, 0.9], 0, "smoke", lambda s: None, tuned)
    assert chosen.label == "A"
    by = {s["label"]: s for s in scored}
    assert by["A"]["worst_ratio"] == pytest.approx(1.125) and by["B"]["worst_ratio"] == pytest.approx(1.3)
    assert by["A"]["chosen"] and by["A"]["usable"] and not by["C"]["usable"]
    assert ("C", 0.3) not in calls and ("C", 0.9) in calls and ("worse", 0.9) not in calls  # one bar per load
    assert 0.25 * 1.3 + 0.75 * 1.65 < 0.25 * 1.0 + 0.75 * 1.8  # what a pooled mean would have chosen: B


def test_unlike_own_rule_is_zero_for_the_guard_rule_itself():
    spec = load_spec("redundancy_ps")
    trainer = Trainer(TrainConfig(scenario="redundancy_ps", steps=500, num_envs=8, seed=0), spec=spec)
    trainer.train()
    policy = LoadedPolicy(trainer.policy_section()).replace(default_action=0, bias=0.0)
    assert unlike_own_rule(policy.replace(bias=-math.inf), spec, seed=7)["share"] > 0.0  # the network's own choice
    assert unlike_own_rule(policy.replace(bias=math.inf), spec, seed=7)["share"] == 0.0
    assert unlike_own_rule(policy.replace(default_action=-1), spec, seed=7) is None  # no guard rule
    assert unlike_own_rule(ConstantAction(0), spec, seed=7) is None


def test_a_one_policy_study_writes_one_policy_and_one_table(tmp_path):
    out, day = tmp_path / "one", tmp_path / "mmc_day.yaml"
    cfg = load_range(load_spec("mmc_c1"), [0.5, 0.95], hold=300.0).to_dict()
    cfg["arrival"]["profile"]["observed"] = True  # a day of two hours whose clock a controller sees
    day.write_text(yaml.safe_dump({**cfg, "name": "mmc_day"}))
    result = run.main(["--scenario", "mmc_c1", "--loads", "0.5", "0.95", "--one-policy", "--budget", "smoke",
                       "--steps", "2000", "--num-envs", "16", "--snapshots", "1", "--workers", "1", "--quiet", "--export", "off",
                       "--out", str(out), "--profiles", str(day)])
    section = load_file(out / "policy.pt")
    assert section["scenario"]["name"] == "mmc_c1@0.5-0.95"  # trained on the range
    assert section["load_range"] == {"base": load_spec("mmc_c1").to_dict(), "loads": [0.5, 0.95]}  # and its base
    assert LoadedPolicy(section).encoding.period is None
    saved = json.loads((out / "one_policy.json").read_text())
    assert [r["load"] for r in saved["loads"]] == [0.5, 0.95]
    assert result["one_policy"]["table"] == saved["table"]
    md = (out / "one_policy.md").read_text()
    assert "| 0.5 |" in md and "| 0.95 |" in md and "phase not observed" in md
    assert [d["scenario"] for d in saved["profiles"]] == ["mmc_day"] and "| per hour |" in md  # the day's table
    assert (out / "mmc_day.png").read_bytes()[:4] == b"\x89PNG"  # the acceptance through the day
    assert section["selection"]["scores"][0]["loads"].keys() == {"0.5", "0.95"}  # chosen by each load's ratio
    again = run.main(["--scenario", "mmc_c1", "--loads", "0.5", "0.95", "--one-policy", "--budget", "smoke",
                      "--policy", str(out / "policy.pt"), "--out", str(tmp_path / "again"), "--quiet",
                      "--profiles", str(day)])  # the saved policy judged again: the same seeds, the same table
    assert again["table"] == saved["table"] and not (tmp_path / "again" / "policy.pt").exists()
    assert "The saved policy" in (tmp_path / "again" / "one_policy.md").read_text()


def test_a_saved_policy_is_judged_only_by_a_one_policy_study_of_its_system(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"policy \(--policy\).*--one-policy"):
        StudyConfig(scenario="redundancy_ps", policy="checkpoints/redundancy_ps/load-0.3/policy.pt")
    with pytest.raises(SystemExit):
        run.main(["--scenario", "mmc_c1", "--loads", "0.5", "0.9", "--one-policy", "--budget", "smoke", "--quiet",
                  "--policy", "checkpoints/redundancy_ps/load-0.3/policy.pt", "--out", str(tmp_path / "x")])
    assert "policy (--policy): a policy of redundancy_ps" in capsys.readouterr().err


def test_the_rate_estimate_follows_the_load_of_each_hold():
    spec = load_range(load_spec("pools"), [0.3, 0.9], hold=2_000.0)
    encoding = replace(spec.system.encoding(), rate=True)
    assert encoding.width == spec.system.encoding().width + 1 and encoding.rule_columns == encoding.width - 1
    start = phase_offsets(spec.period, 64, seed=1)
    driver = Driver(spec, 64, seed=1, encoding=encoding, start=start)
    obs, seen = driver.reset(), []
    for step in range(4_000):
        obs = driver.step(np.zeros(64, np.int64))[0]
        if step % 50 == 0:
            now = driver.engine.now
            high = (now % spec.period) >= 2_000.0
            seen.append((obs[:, -1], now % 2_000.0 > 1_500.0, high))  # past 7 memories (64 gaps) at either load
    np.testing.assert_allclose(obs[:, -1], 1.0 / driver.engine.gap_mean, rtol=1e-6)  # last: the estimate
    estimate, settled, high = (np.concatenate(x) for x in zip(*seen, strict=True))
    rate = spec.system.reference_rate() * np.where(high, 0.9, 0.3)
    for side in (high, ~high):
        rows = settled & side
        assert rows.sum() >= 200
        assert np.mean(estimate[rows] / rate[rows]) == pytest.approx(1.0, abs=0.05)
    state = driver.engine.get_state()
    state.pop("gap_mean")  # a state saved before the estimate: the mean gap of the arrivals
    driver.engine.set_state(state)
    np.testing.assert_allclose(driver.engine.gap_mean, 1.0 / spec.arrival_rate)


def test_rules_skip_the_rate_estimate_and_a_cell_refuses_it():
    rule = SignalledPool("none", 0.0, (1, 0, 1))  # reads the one-hot block at the end of its observation
    spec = load_spec("pools")
    plain = spec.system.encoding()
    encoding = replace(plain, rate=True)
    obs = Driver(spec, 32, seed=4, encoding=encoding).reset()
    wrapped = reading(rule, encoding)
    assert wrapped(obs).tolist() == rule(obs[:, :-1]).tolist() and reading(rule, plain) is rule
    assert reading(wrapped, encoding) is wrapped and wrapped.guard_fields() == rule.guard_fields()
    torch_rule = RuleDefault(rule.guard_fields()["default_rule"], encoding.rule_columns)
    assert torch_rule(torch.from_numpy(obs)).tolist() == rule(obs[:, :-1]).tolist()
    with pytest.raises(ValueError, match="rate_estimate"):
        replace(load_spec("cell_small").system.encoding(), rate=True)


def test_a_learner_with_the_rate_estimate_saves_it_and_its_guard_rule_skips_it():
    spec = load_spec("pools")
    rule = SignalledPool("none", 0.0, (1, 0, 1))  # a table rule: it reads the one-hot block at the end
    trainer = Trainer(TrainConfig(scenario="pools", steps=500, num_envs=8, seed=0, rate_estimate=True,
                                  base_rule=rule.guard_fields()["default_rule"]), spec=spec)
    trainer.train()
    policy = LoadedPolicy({**trainer.policy_section(), **rule.guard_fields()})
    assert policy.encoding.rate and policy.obs_dim == spec.system.encoding().width + 1
    policy.encoding.check(at_load(spec, 0.9))  # runs at any load of its system
    states = visited_states(spec, policy, policy.encoding, seed=3)
    assert len(set(states[:, -1].tolist())) > 100  # the estimate, last, moves with the arrivals
    wanted = rule(states[:, :-1])
    assert set(wanted.tolist()) == {0, 1}
    assert policy.replace(bias=math.inf)(states).tolist() == wanted.tolist()  # LoadedPolicy's RuleDefault
    assert trainer.base(torch.from_numpy(states)).tolist() == wanted.tolist()  # the trainer's base rule


def test_the_schedule_takes_each_loads_best_rule_that_can_guard_at_that_loads_rate():
    base = load_spec("redundancy_ps")
    fast = ConstantAction(3, "d = 4")
    tuned = {0.3: {"d = 4": TuningResult(fast, {"arrivals": 1, "mean_delay": 0.61}),
                   "d = 1": TuningResult(ConstantAction(0), {"arrivals": 1, "mean_delay": 1.4})},
             0.9: {"d = 4": TuningResult(fast, {"arrivals": 1, "mean_delay": 9.0, "unstable": "drift"}),
                   "best, cannot guard": TuningResult(lambda obs: obs[:, 0], {"arrivals": 1, "mean_delay": 3.0}),
                   "d = 1": TuningResult(ConstantAction(0), {"arrivals": 1, "mean_delay": 9.6}),
                   "d = 2": TuningResult(ConstantAction(1), {"arrivals": 1, "mean_delay": 4.8})}}
    rule = schedule(base, [0.9, 0.3], 0, "smoke", lambda s: None, tuned)
    assert isinstance(rule, ScheduledRule) and [r.describe() for r in rule.rules] == ["d = 4", "always action 1"]
    assert rule.rates == (at_load(base, 0.3).arrival_rate, at_load(base, 0.9).arrival_rate)
    assert rule.encoding == replace(base.system.encoding(), rate=True) and rule.loads == (0.3, 0.9)


def test_a_one_policy_learner_with_the_rate_estimate_learns_on_the_rules_switched_by_it():
    """The study's learners (``run.candidates``) given the schedule: they learn its values, each
    snapshot is guarded by it, and the guard's rule itself acts as the schedule does on the
    learner's observations (the rate estimate last)."""
    config = StudyConfig(scenario="redundancy_ps", loads=(0.3, 0.9), one_policy=True, rate_estimate=True,
                         budget="smoke", steps=1000, num_envs=8, snapshots=1)
    base, spec = run.study_spec(config, None)
    rule = ScheduledRule((ConstantAction(3, "d = 4"), ConstantAction(1, "d = 2")),
                         (at_load(base, 0.3).arrival_rate, at_load(base, 0.9).arrival_rate),
                         replace(base.system.encoding(), rate=True), (0.3, 0.9))
    cands, _ = run.candidates(config, Run(spec, 0, "smoke"), {}, rule)
    assert cands[0].section["config"]["base_rule"]["kind"] == "scheduled"  # what the learner learned the values of
    assert all(rule.describe() in c.label for c in cands[1:])
    itself = cands[-1].policy()
    states = np.concatenate([visited_states(at_load(base, x), rule, itself.encoding, seed=3) for x in (0.3, 0.9)])
    assert itself.encoding.rate and set(rule(states).tolist()) == {1, 3}  # both loads' rules act
    np.testing.assert_array_equal(itself(states), rule(states))


def test_the_rules_switched_by_the_rate_estimate_are_a_comparator_of_their_own():
    """Judged against itself, the schedule reads as its own comparator (e) to the digit: the same
    seed, the same arrivals, the same estimate; at load 0.3 it acts as that load's rule (the smoke
    budget reaches no steady state, so no verdict has a rule to compare with)."""
    base = load_spec("redundancy_ps")
    rule = ScheduledRule((ConstantAction(3, "d = 4"), ConstantAction(0, "d = 1")),
                         (at_load(base, 0.3).arrival_rate, at_load(base, 0.9).arrival_rate),
                         replace(base.system.encoding(), rate=True), (0.3, 0.9))
    tuned = {x: {"d = 4": TuningResult(ConstantAction(3, "d = 4"), {"arrivals": 1, "mean_delay": 1.0})}
             for x in (0.3, 0.6, 0.9)}  # the rules as tuned (no tuning here): d = 4 at every load and the average
    results = across_loads(rule, base, [0.3, 0.9], seed=0, budget="smoke", tuned_at=tuned, switched=rule)
    for r in results:
        assert "switched" in r["verdicts"]
        assert r["rows"]["learned"]["mean_delay"] == r["rows"][loads_module.SWITCHED]["mean_delay"]
    low, high = (r["rows"] for r in results)
    assert abs(low["learned"]["mean_delay"] - low["d = 4"]["mean_delay"]) < 0.1 * low["d = 4"]["mean_delay"]
    assert "switched by the rate estimate (e)" in table(results, base)


def test_a_load_of_a_policy_trained_over_a_range_is_a_load_of_the_ranges_base():
    # mmc_c1 is at rate 0.9; its range 0.5-0.95 averages 0.6525. Load 0.8 of the range itself
    # would scale the profile (rates 0.36 and 0.684, still moving): the base's load 0.8 is 0.72
    base = load_spec("mmc_c1")
    spec = load_range(base, [0.5, 0.95], hold=300.0)
    record = {"load_range": {"base": base.to_dict(), "loads": [0.5, 0.95]}}
    driven = at_load(load_base(record, spec), 0.8)
    assert driven.arrival_rate == pytest.approx(0.72) and driven.period is None
    assert load_base({}, base) is base  # a policy of one load: its own system
    with pytest.raises(SpecError, match=r"load: .*a load range.*--scenario NAME --load"):
        load_base({}, spec)  # a range written without the record: refused, not scaled
