"""The study runner of drl_ac/study/run.py: the spec at a load against the exact rates (and an
exact mean response there), the choice on the validation seed by hand, and a smoke study on
redundancy_ps that writes every file it says, records the chosen candidate's validation score
(recomputed here on that seed), and gives the same numbers in this process as in two spawned
processes."""

import importlib
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import yaml

from drl_ac import study
from drl_ac.checkpoint import LoadedPolicy, load_file
from drl_ac.cli import field_docs
from drl_ac.evaluation.selection import VALIDATION
from drl_ac.evaluation.steady import steady_state
from drl_ac.rules.tuning import ConstantAction
from drl_ac.study import report, run
from envs import NetworkSpec, SpecError, load_spec
from envs.spec import SCENARIO_DIR
from envs.systems.pools.theory import PoolsModel, PoolsPolicy, stability_bound

Z = 4.5
TINY = {"scenario": "redundancy_ps", "budget": "smoke", "steps": 2000, "num_envs": 16, "snapshots": 1,
        "quiet": True}
POLICY_FILES = {"policy.pt", "policy.pt2", "policy.onnx", "metrics.json", "comparison.json", "report.md"}
STUDY_FILES = {"study.json", "study.md", "study.png"}


def test_at_load_sets_the_rate_the_system_defines():
    red = load_spec("redundancy_ps")  # lambda*(d = 1) = N / (E[S] E[Y]) = 10
    at = run.at_load(red, 0.9)
    assert at.arrival_rate == pytest.approx(9.0, rel=1e-12) and at.name == "redundancy_ps@0.9"
    assert at.to_dict()["arrival"]["dist"] == "exponential" and at.block == red.block
    pools = load_spec("pools")  # the best reroute threshold's exact bound, 0.9932 (not capacity(), 1.2026)
    assert run.reference_rate(pools) == pytest.approx(0.99322, abs=1e-5)
    assert run.at_load(pools, 0.5).arrival_rate == pytest.approx(0.5 * run.reference_rate(pools), rel=1e-12)
    tandem = run.at_load(load_spec("paper_tandem"), 0.5)  # a network: its own rate, the gaps' shape kept
    assert tandem.arrival_rate == pytest.approx(0.475) and tandem.to_dict()["arrival"]["scv"] == 0.7
    with pytest.raises(SpecError, match="one stream per job class"):
        run.at_load(load_spec("cell_5g"), 0.5)
    with pytest.raises(SpecError, match="loads"):
        run.at_load(red, 0.0)


def test_full_replication_at_a_load_is_the_mm1_queue_it_is():
    # copies in both pools' queues on arrival (one server each), size kept: the copy on the fast
    # pool ends the job after X ~ Exp(1), so the pools are one M/M/1 queue, E[T] = 1 / (1 - lambda)
    cfg = yaml.safe_load((SCENARIO_DIR / "pools.yaml").read_text())
    cfg["pools"].update(actions=[{"pool": "auto", "policy": "replicate", "tau": 0.0}], timer="arrival")
    spec = run.at_load(NetworkSpec.from_dict(cfg), 0.5)
    p = spec.block  # its stability bound: the M/M/1's service rate, 1
    full = PoolsPolicy(knowledge="signal", q=p.q, action="replicate", tau=0.0)
    assert stability_bound(PoolsModel(p.p, p.speeds, p.servers), full, p.size) == pytest.approx(1.0, rel=1e-9)
    m = steady_state(ConstantAction(0), spec, seed=4, num_envs=64, min_steps=3_000, max_steps=3_000)
    assert m["stationary"]
    assert abs(m["mean_delay"] - 1 / (1 - spec.arrival_rate)) < Z * m["mean_delay_se"], m


def test_config_names_the_field_and_the_fix():
    with pytest.raises(ValueError, match=r"loads \(--loads\)"):
        run.StudyConfig(loads=(0.5, -1.0))
    with pytest.raises(ValueError, match=r"budget \(--budget\)"):
        run.StudyConfig(budget="huge")
    with pytest.raises(ValueError, match=r"steps \(--steps\)"):  # the learners' settings, checked at once
        run.StudyConfig(steps=0)
    with pytest.raises(ValueError, match=r"export \(--export\): unknown 'no'\. Fix: use on or off"):
        run.StudyConfig(export="no")
    config = run.StudyConfig(scenario="pools", loads=(0.5, 0.8), seeds=(0, 1), steps=1000)
    assert config.command() == ("python experiments/study.py --scenario pools --loads 0.5 0.8 --seeds 0 1 "
                                "--steps 1000")
    assert run.StudyConfig(**config.to_dict()) == config
    assert "lambda*(d) of its first choice" in field_docs(run.StudyConfig)["loads"]


def test_the_learners_take_the_scenarios_training_block_unless_the_study_sets_a_field():
    base = {"kind": "constant", "action": 1}
    config = run.StudyConfig(scenario="redundancy_ps", steps=5000)
    learner = config.train_config(0, "holding", base)
    block = dict(load_spec("redundancy_ps").training)
    assert (learner.targets, learner.num_envs, learner.rollout_start) == ("rollout", 256, block["rollout_start"])
    assert learner.steps == 5000  # the study's own field wins
    assert config.train_config(0, "holding").targets == "td"  # no base rule: nothing to roll out
    assert config.train_config(0, "own", base).targets == "td"  # rollouts charge the holding cost
    assert run.StudyConfig(scenario="redundancy_ps", targets="td").train_config(0, "holding", base).targets == "td"
    with pytest.raises(ValueError, match=r"targets \(--targets\) rollout.*Fix"):  # refused before any tuning
        run.StudyConfig(scenario="redundancy_ps", targets="rollout", costs=("holding", "own"))


def test_a_folder_holding_a_policy_is_kept_unless_forced(tmp_path):
    (tmp_path / "load-0.8").mkdir()
    (tmp_path / "load-0.8" / "policy.pt").write_bytes(b"shipped")
    with pytest.raises(ValueError, match=r"out \(--out\): .*load-0.8 already holds a policy.*--force"):
        run.run_study(run.StudyConfig(**TINY, loads=(0.5, 0.8), out=tmp_path))
    assert (tmp_path / "load-0.8" / "policy.pt").read_bytes() == b"shipped" and not (tmp_path / "load-0.5").exists()


def test_choice_skips_the_unstable_the_drifting_and_the_infeasible(monkeypatch):
    """By hand: fake steady-state scores and stability verdicts per candidate."""
    spec = load_spec("paper_tandem")  # maximise acceptance s.t. violation <= eps (0.1)
    scores = {"best but unstable": (0.95, 0.05, True), "drifting": (0.99, 0.05, False),
              "violates": (0.97, 0.2, True), "chosen": (0.90, 0.05, True), "worse": (0.80, 0.01, True)}
    seen = []

    def fake_steady(policy, spec, seed, **options):
        seen.append(seed)
        acc, viol, stationary = scores[policy.name]
        return {"acceptance": acc, "acceptance_ci": [acc - 0.01, acc + 0.01], "violation": viol,
                "violation_se": 0.001, "stationary": stationary}

    def fake_stability(policy, spec, seed, **options):
        verdict = "unstable" if policy.name == "best but unstable" else "stable"
        return SimpleNamespace(verdict=verdict, to_dict=lambda: {"verdict": verdict}, describe=lambda: verdict)

    monkeypatch.setattr("drl_ac.evaluation.steady.steady_state", fake_steady)
    monkeypatch.setattr("drl_ac.evaluation.steady.stability", fake_stability)
    cands = [SimpleNamespace(label=name, policy=lambda name=name: SimpleNamespace(name=name)) for name in scores]
    chosen, scored = run.choose(cands, spec, seed=3, budget="smoke", say=lambda s: None)
    assert chosen.label == "chosen" and set(seen) == {3 + VALIDATION}
    by = {s["label"]: s for s in scored}
    assert by["best but unstable"]["stability"]["verdict"] == "unstable" and by["chosen"]["chosen"]
    assert not by["drifting"]["stationary"] and not by["violates"]["feasible"]
    assert "stability" not in by["worse"]  # checked best first, stopped at the first stable one


@pytest.fixture(scope="module")
def two_loads(tmp_path_factory):
    """A smoke study at loads 0.5 and 0.9 in two spawned processes (seed 2: at load 0.5 a rule
    that can guard is stationary in the smoke budget's short tuning runs, so the learner learns
    its values; that is chance at this budget, seed 0 has none)."""
    out = tmp_path_factory.mktemp("study")
    return run.run_study(run.StudyConfig(**TINY, seed=2, loads=(0.5, 0.9), workers=2, out=out)), out


def test_a_smoke_study_writes_every_file_it_says(two_loads):
    result, out = two_loads
    assert {p.name for p in out.iterdir()} == STUDY_FILES | {"load-0.5", "load-0.9", ".drl_ac.lock"}
    assert {Path(f).name for f in result["files"]} == STUDY_FILES
    for entry, load in zip(result["loads"], (0.5, 0.9), strict=True):
        folder = out / f"load-{load:g}"
        assert entry["folder"] == str(folder) and {Path(f).name for f in entry["files"]} == POLICY_FILES
        assert {p.name for p in folder.iterdir()} == POLICY_FILES
        assert all(Path(f).stat().st_size > 0 for f in entry["files"])
        comparison = json.loads((folder / "comparison.json").read_text())
        assert comparison["rate"] == pytest.approx(10.0 * load)
        assert comparison["verdict"]["outcome"] in ("better", "no worse", "worse", "no comparator", "undecided")
        assert set(comparison["stability"]) == set(comparison["rows"]) >= {"learned", "d = 1", "load threshold"}
        assert all(s["verdict"] in ("stable", "unstable", "undecided") for s in comparison["stability"].values())
        assert comparison["command"].startswith("python experiments/study.py --scenario redundancy_ps")
        assert "\nverdict: " in (folder / "report.md").read_text()
        assert json.loads((folder / "metrics.json").read_text())["verdict"] == comparison["verdict"]["outcome"]
    # at 0.9, d = 2..4 cannot be stable (lambda*(2) = 8 < 9): reported so, not simulated
    at09 = json.loads((out / "load-0.9" / "comparison.json").read_text())
    assert "lambda*(d=2)" in at09["rows"]["d = 2"]["unstable"] and at09["stability"]["d = 2"]["verdict"] == "unstable"
    assert "| 0.5 |" in (out / "study.md").read_text()


def test_the_chosen_candidate_was_chosen_on_the_validation_seed(two_loads):
    _, out = two_loads
    folder = out / "load-0.5"
    comparison = json.loads((folder / "comparison.json").read_text())
    chosen = [s for s in comparison["validation"] if s.get("chosen")]
    assert len(chosen) == 1 and chosen[0]["label"] == comparison["chosen"]
    section = load_file(folder / "policy.pt")
    assert section["selection"]["chosen"] == comparison["chosen"]
    # the learner learned the values of the best rule that can guard (its RuleDefault), the
    # rule every guarded candidate keeps by default
    guards = [s["label"] for s in comparison["validation"] if "guarded by" in s["label"]]
    base = section["config"]["base_rule"]
    assert base is not None and base["kind"] in ("constant", "threshold")
    rule_label = guards[0].split("guarded by ")[1].rsplit(" at q", 1)[0] if guards else None
    assert rule_label is None or f"{rule_label} (the guard's rule itself)" in [s["label"] for s in
                                                                               comparison["validation"]]
    torch.set_num_threads(1)
    spec = run.at_load(load_spec("redundancy_ps"), 0.5)
    seed = run.load_seed(2, 0.5) + VALIDATION  # the load's own seed
    again = steady_state(LoadedPolicy(section), spec, seed=seed, **study.BUDGETS["smoke"]["evaluation"])
    assert again["mean_delay"] == chosen[0]["mean_delay"]  # its recorded score: that seed's run


def test_each_load_has_its_own_seeds_far_from_the_others():
    seeds = [run.load_seed(3, load) for load in (0.3, 0.5, 0.7, 0.9, 0.95)]
    assert run.load_seed(3, None) == 3 and len(set(seeds)) == 5
    offsets = (0, study.TUNING, study.VALIDATION, study.EVALUATION)
    used = sorted(s + o for s in seeds for o in offsets)
    assert min(np.diff(used)) > 0  # no seed of one load is a seed of another


def numbers(comparison: dict) -> dict:
    """What a comparison measured (not when, where or how long)."""
    return {k: v for k, v in comparison.items() if k not in ("seconds", "config", "command", "commit")}


def test_same_seed_same_numbers_in_this_process_and_in_two(two_loads, tmp_path):
    """Also: a load run alone into a study's folder joins the loads held there (study.md)."""
    import shutil

    _, out = two_loads
    shutil.copytree(out / "load-0.9", tmp_path / "load-0.9")  # an earlier run's load
    result = run.run_study(run.StudyConfig(**TINY, seed=2, loads=(0.5,), workers=1, out=tmp_path, export="off"))
    table = (tmp_path / "study.md").read_text()
    assert table.index("| 0.5 |") < table.index("| 0.9 |") and "of 2 load(s)" in table
    assert table.count("`python experiments/study.py") == 2 and "--loads 0.5 0.9" in table  # each row's command
    assert len(result["loads"]) == 1 and result["held_loads"] == [0.5, 0.9]
    assert result["loads"][0]["folder"] == str(tmp_path / "load-0.5")
    assert not (tmp_path / "load-0.5" / "policy.onnx").exists()  # --export off: policy.pt and metrics.json only
    here = json.loads((tmp_path / "load-0.5" / "comparison.json").read_text())
    spawned = json.loads((out / "load-0.5" / "comparison.json").read_text())
    assert numbers(here) == numbers(spawned)
    a, b = load_file(tmp_path / "load-0.5" / "policy.pt"), load_file(out / "load-0.5" / "policy.pt")
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    assert not math.isnan(np.sum([s["mean_delay"] for s in here["validation"]]))


def test_held_results_are_this_scenarios_study_comparisons_and_a_corrupt_one_is_named(tmp_path):
    def write(folder, data):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "comparison.json").write_text(json.dumps(data) if isinstance(data, dict) else data)

    row = {"base": "redundancy_ps", "verdict": {"outcome": "better"}}
    write(".", {"base": "redundancy_ps", "verdict": {}, "rows": {}})  # train.py's comparison: no load
    write("load-0.9", {**row, "load": 0.9})
    write("load-0.5", {**row, "load": 0.5})
    write("load-0.7", {**row, "base": "pools", "load": 0.7})  # another scenario's
    assert [r["load"] for r in report.held_results(tmp_path, "redundancy_ps")] == [0.5, 0.9]
    write("load-0.3", '{"base": "redundancy_ps", "lo')
    with pytest.raises(ValueError, match=r"load-0.3/comparison.json is not readable JSON.*Fix"):
        report.held_results(tmp_path, "redundancy_ps")


def test_on_a_control_system_an_unstable_candidate_is_not_run_to_a_steady_state(monkeypatch):
    """Its stability verdict comes first (drl_ac.study.skips_steady_state): the greedy network
    of a pools learner, unstable, once ran six minutes to its steady-state horizon."""
    spec = load_spec("pools")
    run_ = []

    def fake_steady(policy, spec, seed, **options):
        run_.append(policy.name)
        return {"mean_delay": {"stable": 2.0, "also stable": 2.5}[policy.name], "mean_delay_ci": [0, 9],
                "stationary": True}

    def fake_stability(policy, spec, seed, **options):
        verdict = "unstable" if policy.name == "unstable" else "stable"
        return SimpleNamespace(verdict=verdict, to_dict=lambda: {"verdict": verdict}, describe=lambda: verdict)

    monkeypatch.setattr("drl_ac.evaluation.steady.steady_state", fake_steady)
    monkeypatch.setattr(importlib.import_module("drl_ac.study.compare"), "stability", fake_stability)
    cands = [SimpleNamespace(label=name, policy=lambda name=name: SimpleNamespace(name=name))
             for name in ("unstable", "stable", "also stable")]
    chosen, scored = run.choose(cands, spec, seed=3, budget="quick", say=lambda s: None)
    assert run_ == ["stable", "also stable"] and chosen.label == "stable"
    assert not scored[0]["stationary"] and scored[0]["stability"]["verdict"] == "unstable"
