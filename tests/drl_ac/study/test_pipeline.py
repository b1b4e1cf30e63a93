"""The steps of one run (drl_ac/study/pipeline.py): each on its own seed (tuning, validation,
evaluation offsets of the run's seed), each what the harness it wraps gives on that seed, and
the same steps, on the same seeds, whichever entry point takes them (experiments/train.py and
a study calibrate on the validation seed)."""

import math
import sys
from pathlib import Path

import numpy as np

from drl_ac import study
from drl_ac.checkpoint import LoadedPolicy, load_file
from drl_ac.evaluation.metrics import evaluate
from drl_ac.evaluation.selection import EVALUATION, TUNING, VALIDATION
from drl_ac.evaluation.steady import steady_state
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.rules.tuning import ConstantAction
from drl_ac.study import Run
from envs import load_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "experiments"))
import train  # noqa: E402


def accept(obs: np.ndarray) -> np.ndarray:
    return np.ones(len(obs), np.int64)


def test_the_seeds_of_the_steps_are_offsets_of_the_runs_seed():
    run = Run(load_spec("mmc_c1"), seed=3)
    assert (run.tuning_seed, run.validation_seed, run.evaluation_seed) == (3 + TUNING, 3 + VALIDATION,
                                                                           3 + EVALUATION)
    assert len({TUNING, VALIDATION, EVALUATION}) == 3  # three streams, never one seen by two steps


def test_evaluate_is_the_harness_on_the_evaluation_seed():
    spec = load_spec("mmc_c1")
    got = Run(spec, seed=2).evaluate(accept, arrivals=4_000)
    want = evaluate(accept, spec, arrivals=4_000, seed=2 + EVALUATION)
    assert got["violation"] == want["violation"] and got["arrivals"] == want["arrivals"]
    red = load_spec("redundancy_ps")  # a control system: in steady state, at the run's budget
    d1 = ConstantAction(0)
    got = Run(red, seed=1, budget="smoke").evaluate(d1)
    want = steady_state(d1, red, seed=1 + EVALUATION, **study.BUDGETS["smoke"]["evaluation"])
    assert got["mean_delay"] == want["mean_delay"] and got["window_steps"] == want["window_steps"]


def test_calibrate_meets_eps_on_the_validation_seed_and_records_it():
    spec = load_spec("mmc_c1")
    trainer = Trainer(TrainConfig(scenario="mmc_c1", steps=4_000, num_envs=32, seed=0), spec=spec)
    trainer.train()
    policy = Run(spec, seed=0).calibrate(trainer.policy(), arrivals=20_000)
    cal = policy.section["calibration"]
    assert cal["seed"] == VALIDATION and cal["target"] == spec.eps
    assert cal["violation_upper"] <= spec.eps + 1e-12
    assert (policy.bias, policy.mix) == (policy.section["bias"], cal["mix"])
    again = Run(spec, seed=0).calibrate(trainer.policy(), arrivals=20_000)
    assert again.bias == policy.bias and again.mix == policy.mix  # same seed, same point
    assert again.module.qnet is not policy.module.qnet  # each trainer.policy() is loaded on its own
    assert policy.replace(bias=0.0).module.qnet is policy.module.qnet  # a change of settings shares the network


def test_base_rule_only_on_a_control_system():
    assert Run(load_spec("mmc_c1")).base_rule({"accept-all": None}) is None
    red = load_spec("redundancy_ps")
    run = Run(red, seed=0, budget="smoke")
    tuned = run.tune_rules()
    rule = run.base_rule(tuned)
    assert rule is not None and rule.describe()
    policy = run.guard(LoadedPolicy(train_section(red)), rule)
    assert policy(np.zeros((3, policy.encoding.width))).shape == (3,)
    # the share of decisions unlike the guard rule: none for the rule itself (the network never overrides it)
    itself = policy.replace(**rule.guard_fields(), bias=math.inf)
    unlike = run.unlike_rule(itself, tuned)
    assert unlike["share"] == 0.0 and unlike["rule"] == rule.describe() and unlike["states"] > 1000
    assert 0.0 <= run.unlike_rule(policy, tuned)["share"] <= 1.0
    assert Run(load_spec("mmc_c1")).unlike_rule(itself, {"accept-all": None}) is None


def train_section(spec) -> dict:
    trainer = Trainer(TrainConfig(scenario="redundancy_ps", steps=500, num_envs=8, seed=0), spec=spec)
    trainer.train()
    return trainer.policy_section()


def test_train_py_calibrates_on_the_validation_seed_like_a_study(tmp_path, capsys):
    out = tmp_path / "run"
    train.main(["--scenario", "mmc_c1", "--steps", "2000", "--num-envs", "32", "--seed", "4",
                "--eval-arrivals", "4000", "--compare", "off", "--quiet", "--export", "off", "--out", str(out)])
    cal = load_file(out / "policy.pt")["calibration"]
    assert cal["seed"] == 4 + VALIDATION  # the study's calibration seed (drl_ac.study.run.candidates)

