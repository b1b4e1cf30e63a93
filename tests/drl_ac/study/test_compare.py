"""The comparison of drl_ac/study/compare.py: the verdict by hand on synthetic rows (feasibility,
stability, paired intervals, the headline's direction), and the whole path on a control
system with a smoke budget."""

import numpy as np
import pytest

from drl_ac import study
from drl_ac.evaluation.metrics import Z95
from drl_ac.rules.tuning import ConstantAction
from drl_ac.study import report
from drl_ac.study.compare import table_cell
from envs import load_spec

STABLE = {"verdict": "stable"}


def control_row(delays, stable=True):
    """A control system's row: per-instance delay sums over 100 jobs per instance."""
    delay = np.asarray(delays, float) * 100
    accepted = np.full(delay.size, 100.0)
    mean = delay.sum() / accepted.sum()
    se = float(np.std(np.asarray(delays, float), ddof=1) / np.sqrt(delay.size))
    return {"rule": "r", "mean_delay": mean, "mean_delay_se": se, "mean_delay_ci": [mean - Z95 * se, mean + Z95 * se],
            "stationary": True, "stability": STABLE if stable else {"verdict": "unstable"},
            "per_instance": {"delay": delay, "accepted": accepted}}


def test_control_verdicts_by_hand():
    spec = load_spec("pools")
    best = control_row([2.0, 2.2, 1.8, 2.1])
    worse_rule = control_row([3.0, 3.1, 2.9, 3.2])
    better = control_row([1.5, 1.7, 1.3, 1.6])  # 0.5 below best in every instance
    v = study.judge(spec, better, {"full replication": best, "threshold": worse_rule})
    assert v.outcome == "better" and v.best_rule == "full replication" and v.difference["paired"]
    assert v.difference["difference"] == pytest.approx(-0.5)
    losing = control_row([2.5, 2.7, 2.3, 2.6])  # 0.5 above full replication: never "better"
    assert study.judge(spec, losing, {"full replication": best, "threshold": worse_rule}).outcome == "worse"
    noisy = control_row([1.9, 2.4, 1.7, 2.1])  # paired differences straddle 0
    assert study.judge(spec, noisy, {"full replication": best}).outcome == "no worse"
    # an unstable rule is never the comparator, and an unstable learner is worse whatever its mean
    fast_but_unstable = control_row([0.5, 0.5, 0.6, 0.4], stable=False)
    assert study.judge(spec, losing, {"a": fast_but_unstable, "b": best}).best_rule == "b"
    assert study.judge(spec, fast_but_unstable, {"b": best}).outcome == "worse"


def admission_row(acceptance, violation, se):
    return {"rule": "r", "acceptance": acceptance, "acceptance_se": 0.001, "violation": violation,
            "violation_se": se, "acceptance_ci": [acceptance - 0.002, acceptance + 0.002],
            "violation_ci": [violation - Z95 * se, violation + Z95 * se], "stationary": True, "stability": STABLE,
            "arrivals": 100_000}


def test_every_policy_is_judged_by_one_criterion_not_significantly_above_eps():
    spec = load_spec("paper_tandem")  # eps 0.1
    assert study.feasible(admission_row(0.9, 0.1030, 0.002), spec)  # lower bound 0.0997 <= 0.1
    assert not study.feasible(admission_row(0.9, 0.1035, 0.002), spec)  # lower bound 0.1002: significantly above
    learned = admission_row(0.90, 0.102, 0.002)  # the same test for the learned row as for the rules
    rules = {"greedy": admission_row(0.95, 0.2, 0.002),  # far above eps: never the comparator
             "total": admission_row(0.88, 0.099, 0.002)}
    v = study.judge(spec, learned, rules)
    assert v.best_rule == "total" and v.outcome == "better" and v.learned_feasible and not v.difference["paired"]
    assert not study.judge(spec, admission_row(0.9, 0.11, 0.002), rules).learned_feasible
    text = study.table({"learned": {**learned, "rule": "learned"}, **rules}, v, spec)
    assert f"constraint: every policy {study.FEASIBLE}" in text and "one-sided 95% upper bound <= eps" in text


def test_compare_on_pools_includes_every_constant_action():
    spec = load_spec("pools")
    policy = ConstantAction(2, "always pool1-replicate@0")
    rows, verdict = study.compare(policy, spec, seed=0, budget="smoke")
    assert {f"always {a.name}" for a in spec.block.actions} <= set(rows)
    assert all("stability" in m for m in rows.values() if "arrivals" in m)
    # the learned row is the constant action itself: same runs, so no better and no worse
    same = rows["always pool1-replicate@0"]
    assert rows["learned"]["mean_delay"] == same["mean_delay"]
    assert verdict.outcome != "better"  # (smoke runs are too short to be stationary: often "no comparator")
    text = study.table(rows, verdict, spec)
    assert "\nverdict: " in text and all(f"| {name} |" in text for name in rows)


def test_a_run_that_reached_no_steady_state_carries_no_interval_and_no_verdict():
    spec = load_spec("redundancy_ps")
    rules = {"d = 1": control_row([1.0, 1.1, 0.9, 1.0])}
    drifting = {**control_row([0.5, 0.6, 0.4, 0.5]), "stationary": False, "stability": {"verdict": "undecided"},
                "arrivals": 400,
                "not_stationary": "no steady state within 200 decisions per instance (budget smoke); budget quick "
                                  "runs up to 128,000"}
    v = study.judge(spec, drifting, rules)
    assert v.outcome == "undecided" and v.difference is None and v.best_rule is None
    assert v.line() == f"verdict: undecided, no interval: {drifting['not_stationary']}"
    cell = table_cell({**drifting, "rule": "learned"}, spec)
    assert "[" not in cell and cell.endswith("NOT stationary: no interval")
    shown = {**drifting, "rule": "learned", "stability": {"verdict": "undecided", "drift": 0.01, "drift_se": 0.01}}
    text = report.report(spec, {"learned": shown}, v, "a snapshot", 0.5)
    (row,) = [line for line in text.splitlines() if line.startswith("| learned |")]
    assert "NOT stationary: no interval" in row and "[" not in row  # the study's report.md alike
    # found unstable from a backlog is a decision: worse, whatever its window read
    assert study.judge(spec, {**drifting, "stability": {"verdict": "unstable"}}, rules).outcome == "worse"
    # stationary, but a stability test that decided neither way: no claim either way (not "worse")
    undecided = {**control_row([0.5, 0.6, 0.4, 0.5]), "arrivals": 400,
                 "stability": {"verdict": "undecided", "drift": 0.001, "drift_se": 0.0005}}
    v = study.judge(spec, undecided, rules)
    assert v.outcome == "undecided" and v.difference is None and "stability test" in v.reason and "+0.0010" in v.reason


def test_a_measure_too_short_for_its_load_says_what_budget_would_reach_it():
    spec = study.at_load(load_spec("redundancy_ps"), 0.95)  # d = 1 at load 0.95 relaxes over thousands of arrivals
    m = study.measure(ConstantAction(0, "always d=1"), spec, seed=3, budget="smoke")
    assert not m["stationary"]
    assert m["not_stationary"].startswith("no steady state within 200 decisions per instance (budget smoke): it "
                                          f"needs at least {m['steps_needed']:,} (a warm-up of 5 relaxation times")
    assert m["steps_needed"] >= 400 and m["not_stationary"].endswith("budget quick runs up to 128,000")


def test_a_control_policy_found_unstable_is_not_run_to_a_steady_state(monkeypatch):
    """pools' action 0 at its default load overloads pool 1: at the quick budget its
    steady-state run once grew a backlog for 30 minutes until the job table's bound stopped the
    whole command. The stability test runs first and the row says unstable, with no measures."""
    import importlib

    compare = importlib.import_module("drl_ac.study.compare")  # the module (drl_ac.study.compare is also a function)

    def never(*args, **kwargs):
        raise AssertionError("an unstable control policy was run to a steady state")

    monkeypatch.setattr(compare, "steady_state", never)
    m = study.measure(ConstantAction(0, "always pool1"), load_spec("pools"), seed=0, budget="quick")
    assert m["stability"]["verdict"] == "unstable" and m["stability"]["drift"] > 0
    assert m["arrivals"] == 0 and not m["stationary"] and np.isnan(m["mean_delay"])
    assert table_cell(m, load_spec("pools")).startswith("unstable (unstable: from a backlog of")
    best = control_row([2.0, 2.2, 1.8, 2.1])
    v = study.judge(load_spec("pools"), {**m, "rule": "learned"}, {"full replication": best, "always pool1": m})
    assert v.outcome == "worse" and v.best_rule == "full replication" and v.difference is None
    assert v.line().startswith("verdict: learned worse, no interval: the learned policy is unstable: from a backlog")


def test_a_control_run_whose_backlog_outgrows_the_job_table_is_a_row_not_a_crash(monkeypatch):
    """The bound that stops an unstable run (the engine's max_jobs) gives a row marked unstable
    on a control system, where nothing scores it; the tuner ranks it last."""
    from drl_ac.evaluation import steady
    from drl_ac.rules.tuning import ControlTuner

    monkeypatch.setattr(steady, "engine_options", lambda spec, max_jobs=None: {"max_jobs": 64})
    spec = load_spec("pools")
    m = steady.steady_state(ConstantAction(0, "always pool1"), spec, seed=0, num_envs=4, max_steps=20_000)
    assert not m["stationary"] and m["arrivals"] == 0 and np.isnan(m["mean_delay"])
    assert m["unstable"].startswith("an instance's backlog outgrew the job table (instance")
    tuner = ControlTuner(spec, seed=0, num_envs=4, max_steps=2_000)
    tuner.horizon = 4_000  # past the tuning run: the screen must skip the row without a mean
    stable = ConstantAction(2, "always pool1-replicate@0")
    chosen = tuner.best([ConstantAction(0, "always pool1"), stable])
    assert chosen.rule is stable and tuner.score(ConstantAction(0, "always pool1")) == float("inf")


def test_the_guard_does_not_run_an_unstable_candidate_to_a_steady_state(monkeypatch):
    """The guard's greedy candidate on pools was unstable and ran six minutes to its horizon."""
    import importlib
    from types import SimpleNamespace

    from drl_ac.learning.trainer import TrainConfig, Trainer

    compare = importlib.import_module("drl_ac.study.compare")
    trainer = Trainer(TrainConfig(scenario="pools", steps=500, num_envs=8, seed=0))
    trainer.train()
    ran = []

    def fake_steady(policy, spec, seed, **options):
        ran.append(policy.bias)
        return {"mean_delay": 2.0 + len(ran), "mean_delay_ci": [0.0, 9.0], "stationary": True}

    def fake_stability(policy, spec, seed, **options):
        verdict = "unstable" if policy.bias == 0 else "stable"  # the greedy network: bias 0
        return SimpleNamespace(verdict=verdict, to_dict=lambda: {"verdict": verdict}, describe=lambda: verdict)

    monkeypatch.setattr(compare, "steady_state", fake_steady)
    monkeypatch.setattr(compare, "stability", fake_stability)
    rule = ConstantAction(2, "always pool1-replicate@0")
    chosen, scored = study.guard(trainer.policy(), load_spec("pools"), rule, seed=0, budget="quick")
    assert scored[0]["label"] == "greedy" and scored[0]["unstable"] == "unstable"
    assert 0.0 not in ran and len(ran) == len(scored) - 1 and chosen.bias != 0
