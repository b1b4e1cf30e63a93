"""Adding a system is adding a folder (docs/architecture.md): the worked example,
docs/examples/choice/ (a dispatcher sending each job to one of two exponential FCFS servers of
different speeds), registered from outside the package, goes through everything a packaged
system does: its YAML block, the simulator (against the exact M/M/1 means of a random split),
its rules tuned by drl_ac, training, and a run's comparison with a verdict."""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from drl_ac import rules
from drl_ac.evaluation.steady import steady_state
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.rules.tuning import ConstantAction
from drl_ac.study import Run
from envs import NetworkSpec, SpecError, load_spec
from envs.systems import BLOCKS, SYSTEMS, register

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"

Z = 4.5
SPEEDS, RATE = (1.0, 0.5), 0.6
YAML = {"name": "two_speeds", "choice": {"speeds": list(SPEEDS)}, "arrival": {"dist": "exponential", "rate": RATE},
        "d_ub": 10.0, "eps": 0.1}


@pytest.fixture(scope="module", autouse=True)
def choice():
    """The example package imported (which registers it), and forgotten afterwards: the
    registry is this process's, and other test files check the packaged systems alone."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield importlib.import_module("choice")
    finally:
        SYSTEMS.pop("choice", None)
        BLOCKS.pop("choice", None)
        for name in [m for m in sys.modules if m == "choice" or m.startswith("choice.")]:
            del sys.modules[name]
        sys.path.remove(str(EXAMPLES))


@pytest.fixture(scope="module")
def spec(choice) -> NetworkSpec:
    return NetworkSpec.from_dict(YAML)


def random_split_mean_response(lam, speeds, split) -> float:
    return importlib.import_module("choice.theory").random_split_mean_response(lam, speeds, split)


def test_the_folder_registers_its_system_and_its_block_reads_back(choice, spec, tmp_path):
    ChoiceSystem = choice.ChoiceSystem  # noqa: N806
    assert SYSTEMS["choice"] is ChoiceSystem and BLOCKS["choice"] is ChoiceSystem
    assert isinstance(spec.system, ChoiceSystem) and spec.system.kind == "control"
    assert spec.actions == ("server1", "server2") and spec.block.speeds == SPEEDS
    assert NetworkSpec.from_dict(spec.to_dict()) == spec
    path = tmp_path / "two_speeds.yaml"
    path.write_text(yaml.safe_dump(YAML))
    assert load_spec(path) == spec  # a YAML file with the block is this system
    with pytest.raises(SpecError, match=r"^choice.speeds: must be two or more rates > 0"):
        NetworkSpec.from_dict({**YAML, "choice": {"speeds": [1.0]}})
    overloaded = NetworkSpec.from_dict({**YAML, "arrival": {"dist": "exponential", "rate": 2.0}})
    assert spec.system.stability_problem() is None
    assert overloaded.system.stability_problem().startswith("arrival: rate 2 is at least the servers' total speed 1.5")
    with pytest.raises(ValueError, match="is ChoiceSystem's"):
        register(type("Other", (ChoiceSystem,), {"name": "other"}))  # its block key is taken


def test_the_rule_reads_the_jobs_waiting_and_in_service(spec):
    """One job in service at the fast server: (1 + 1) / 1 = 2 > (0 + 1) / 0.6, so the next
    goes to the slow one (a rule blind to busy servers would send it to the fast one again)."""
    two = NetworkSpec.from_dict({**YAML, "choice": {"speeds": [1.0, 0.6]}})
    enc = two.system.encoding()
    assert enc.include_in_service and enc.width == 4  # waiting, then in service, per server
    rule = importlib.import_module("choice.rules").ShortestExpectedDelay((1.0, 0.6))
    assert rule(np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])).tolist() == [1, 0]


def random_split(p: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    return lambda obs: (rng.random(len(obs)) < p).astype(np.int64)  # server2 with probability p


@pytest.mark.parametrize(("name", "policy", "split"), [
    ("always the fast server", ConstantAction(0), (1.0, 0.0)),
    ("a random split 0.7 / 0.3", random_split(0.3), (0.7, 0.3)),
])
def test_the_simulator_gives_the_exact_mm1_means(spec, name, policy, split):
    exact = random_split_mean_response(RATE, SPEEDS, split)  # 2.5 and 0.7 / 0.58 + 0.3 / 0.32
    m = steady_state(policy, spec, seed=5, num_envs=64, max_steps=8_000, rel_se=0.005)
    se = m["mean_delay_se"]
    assert m["stationary"] and abs(m["mean_delay"] - exact) < Z * se, (name, m["mean_delay"], exact, se)


def test_its_rules_are_tuned_by_drl_ac_and_a_run_judges_a_learner(spec):
    tuned = rules.tune(spec, seed=1, num_envs=32, max_steps=4_000)
    assert list(tuned) == ["always server1", "always server2", "shortest expected delay"]
    assert type(tuned["shortest expected delay"].rule).__name__ == "ShortestExpectedDelay"
    assert "unstable" in tuned["always server2"].metrics  # 0.6 jobs per unit time on a server of speed 0.5
    fast, jsed = (tuned[k].metrics["mean_delay"] for k in ("always server1", "shortest expected delay"))
    assert jsed < fast < 1.2 * random_split_mean_response(RATE, SPEEDS, (1.0, 0.0))
    run = Run(spec, seed=0, budget="smoke")
    trainer = Trainer(TrainConfig(scenario="two_speeds", steps=2_000, num_envs=16, seed=0), spec=spec)
    trainer.train()
    rule = run.base_rule(tuned)
    assert isinstance(rule, ConstantAction)  # the best rule that can guard: the fast server
    rows, verdict = run.compare(run.guard(trainer.policy(), rule), tuned)
    assert {"learned", *tuned} <= set(rows) and verdict.outcome in ("better", "no worse", "worse")
