"""Redundancy-d rules (envs/systems/redundancy/rules.py): decisions by hand, a fixed d is the same
run as the spec with that d forced, and the tuner's rows against the exact limits."""

import numpy as np
import pytest
import torch
import yaml

from drl_ac.evaluation.metrics import evaluate
from drl_ac.rules.tuning import ConstantAction
from envs import NetworkSpec
from envs.spec import SCENARIO_DIR
from envs.systems.redundancy.rules import (
    LoadThreshold,
    OwnServers,
    limits,
    own_server_rules,
    tuned_rules,
)


def spec_at(rate: float, d=(1, 2, 3, 4)) -> NetworkSpec:
    cfg = yaml.safe_load((SCENARIO_DIR / "redundancy_ps.yaml").read_text())
    cfg["arrival"] = {"dist": "exponential", "rate": rate}
    cfg["redundancy"]["d"] = list(d)
    return NetworkSpec.from_dict(cfg)


def test_load_threshold_by_hand():
    rule = LoadThreshold(k=3, high=3, low=0, column=2, labels=(1, 2, 3, 4))
    obs = np.array([[0, 0, 0], [1, 1, 2], [1, 2, 3], [5, 5, 10]], float)
    assert rule(obs).tolist() == [3, 3, 0, 0]
    assert rule.describe() == "d = 4 below 3 jobs in system, else 1"


def test_own_servers_by_hand():
    # columns 2..5: the jobs at the job's first four servers (its copies join a prefix of them)
    rule = OwnServers(d_max=4, m=1, column=2, actions=(0, 1, 2, 3))
    obs = np.array([[9, 9, 5, 0, 1, 0], [0, 0, 0, 2, 0, 0], [0, 0, 9, 1, 3, 0], [0, 0, 0, 0, 0, 0]], float)
    assert rule(obs).tolist() == [3, 0, 1, 3]  # the first server always; then while <= 1 job
    two = OwnServers(d_max=2, m=0, column=2, actions=(0, 1))
    assert two(obs).tolist() == [1, 0, 0, 1]
    assert rule.describe() == "copies on the job's next servers while they hold <= 1 jobs (d <= 4)"


def test_own_server_rules_read_the_candidates_and_map_counts_to_choices():
    from drl_ac.learning.qnet import RuleDefault, rule_of
    from envs import ObservationEncoding

    spec = spec_at(5.0, d=(1, 2, 4))
    enc = ObservationEncoding.for_spec(spec)
    rules = own_server_rules(spec, m_grid=(0, 3))
    assert {(r.d_max, r.m) for r in rules} == {(2, 0), (2, 3), (4, 0), (4, 3)}
    widest = next(r for r in rules if r.d_max == 4)
    assert widest.column == enc.width - enc.candidates == 11  # 10 sorted counts and the total first
    assert widest.actions == (0, 1, 1, 2)  # 3 free servers -> the largest choice <= 3, d = 2
    obs = np.random.default_rng(0).integers(0, 5, (500, enc.width)).astype(np.float32)
    for rule in rules:  # the exported default is the same rule
        assert (RuleDefault(rule_of(rule.guard_fields()))(torch.from_numpy(obs)).numpy() == rule(obs)).all()
    # the choices in any order: by value, not by position
    assert next(r for r in own_server_rules(spec_at(5.0, d=(4, 1, 2)), (0,)) if r.d_max == 4).actions == (1, 2, 2, 0)
    assert next(r for r in own_server_rules(spec_at(5.0, d=(2, 4)), (0,)) if r.d_max == 4).actions == (0, 0, 0, 1)


def test_fixed_d_equals_the_spec_with_that_d_forced():
    # copies, sizes and server orders are drawn at arrival whatever the action: same runs
    for action, d in ((0, 1), (2, 3)):
        a = evaluate(ConstantAction(action), spec_at(5.0), arrivals=4_000, seed=4, num_envs=20, warmup=50)
        b = evaluate(ConstantAction(0), spec_at(5.0, d=(d,)), arrivals=4_000, seed=4, num_envs=20, warmup=50)
        assert a["mean_delay"] == b["mean_delay"] and a["arrivals"] == b["arrivals"]


def test_limits_are_the_scenarios():
    lam = limits(spec_at(5.0))
    assert abs(lam[1] - 10.0) < 1e-9 and abs(lam[2] - 8.0) < 0.05 and lam[4] < lam[3] < lam[2]


TUNING = {"seed": 1, "num_envs": 4, "max_steps": 200, "k_grid": (2, 8), "m_grid": (0,)}  # small runs at rate 8.5


@pytest.fixture(scope="module")
def tuned_at_8_5() -> dict:
    """Every rule tuned at rate 8.5 (load 0.85 of d = 1's limit), shared by the tests below."""
    return tuned_rules(spec_at(8.5), **TUNING)


def test_tuner_marks_unstable_d_and_tunes_the_threshold(tuned_at_8_5):
    rows = tuned_at_8_5
    assert set(rows) == {"d = 1", "d = 2", "d = 3", "d = 4", "load threshold", "own-server threshold"}
    for d in (2, 3, 4):  # lambda*(2) = 8.0 < 8.5: every d >= 2 is unstable alone, not simulated
        assert "unstable" in rows[f"d = {d}"].metrics and "arrivals" not in rows[f"d = {d}"].metrics
    threshold = rows["load threshold"].rule
    assert threshold.low == 0 and threshold.high > 0  # falls back to the only stable d under load


def test_the_threshold_grid_grows_while_its_best_k_is_the_largest_tried():
    """With one k the best is at the grid's edge by construction: k doubles until the best
    lies inside the grid (or at K_MAX)."""
    import re

    from envs.systems.redundancy.rules import K_MAX

    result = tuned_rules(spec_at(8.5), **{**TUNING, "k_grid": (2,)})["load threshold"]
    tried = {int(m.group(1)) for label, *_ in result.trace if (m := re.search(r"below (\d+) jobs", label))}
    assert {2, 4} <= tried and tried <= {2 ** i for i in range(1, 11)}
    assert result.rule.k < max(tried) or result.rule.k == K_MAX


def test_the_two_chains_tuned_apart_give_the_rules_and_figures_of_one_tuning(tuned_at_8_5):
    """``CHAINS``: the fixed d with the load threshold, and the own-server threshold, tuned in
    separate processes (each settling on the same base) give what one tuning gives; a chain
    that does not exist is refused, naming the fix."""
    from drl_ac import rules

    spec, whole = spec_at(8.5), tuned_at_8_5
    first, second = tuned_rules(spec, chain=0, **TUNING), tuned_rules(spec, chain=1, **TUNING)
    assert rules.chains(spec) == 2 and list(second) == ["own-server threshold"]
    apart = {**first, **second}
    assert list(apart) == list(whole)
    for name, r in whole.items():
        assert apart[name].rule == r.rule
        assert apart[name].metrics.get("mean_delay") == r.metrics.get("mean_delay")
        assert apart[name].metrics.get("arrivals") == r.metrics.get("arrivals")
    with pytest.raises(ValueError, match="chain must be None or one of 0..1"):
        tuned_rules(spec, chain=2, **TUNING)
    assert tuned_rules(spec_at(100.0), chain=1, **TUNING) == {}  # every d unstable: nothing to tune
