"""The policies shipped in checkpoints/ load with this code and still do what their
metrics say (a short run on fresh arrivals, not the full evaluation)."""

from pathlib import Path

import numpy as np
import pytest

from drl_ac.checkpoint import load_policy
from drl_ac.evaluation.metrics import evaluate
from envs import NetworkSpec, load_spec
from envs.systems.cell import rules as cb

ROOT = Path(__file__).resolve().parents[2]


def test_cell_5g_policy_blocks_less_than_its_rivals_measured():
    policy = load_policy(ROOT / "checkpoints" / "cell_5g" / "policy.pt")
    spec = NetworkSpec.from_dict(policy.metadata["scenario"])
    assert spec.name == "cell_5g" and policy.num_actions == 2 and spec.eps == pytest.approx(0.02)
    shipped = policy.metadata["metrics"]
    assert shipped["dropping"] <= spec.eps
    # a short run on other arrivals: same regime as the shipped figures (blocking about 0.08)
    run = evaluate(policy, spec, arrivals=30_000, seed=4242, num_envs=100)
    assert abs(run["blocking"] - shipped["blocking"]) < 0.03
    accept_all = evaluate(cb.CellAcceptAll(cb.cell_layout(spec)), spec, arrivals=30_000, seed=4242, num_envs=100)
    assert run["dropping"] < accept_all["dropping"]  # it does control: it drops less than admitting all
    assert np.isfinite(run["dropping"])


CONTROL = sorted((ROOT / "checkpoints").glob("*/load-*/policy.pt"))  # the studies' policies, one per load


@pytest.mark.parametrize("path", CONTROL, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_a_shipped_control_policy_records_its_stability_and_holds_its_mean(path):
    import json

    from drl_ac import study
    from drl_ac.evaluation.steady import stability, steady_state

    comparison = json.loads((path.parent / "comparison.json").read_text())
    verdict = comparison["stability"]["learned"]  # drift of the number in system from a backlog, with its se
    assert verdict["verdict"] == "stable" and verdict["drift"] < 3 * verdict["drift_se"]
    assert comparison["verdict"]["outcome"] in ("better", "no worse", "no comparator")
    policy = load_policy(path)
    spec = NetworkSpec.from_dict(policy.metadata["scenario"])
    shipped = policy.metadata["metrics"]["mean_delay"]
    if comparison["load"] < 0.9:  # a short run on other arrivals: the shipped mean, within its regime
        run = steady_state(policy, spec, seed=4242, num_envs=32, min_steps=1_000, max_steps=1_000, rel_se=1.0)
        assert abs(run["mean_delay"] - shipped) < 0.15 * shipped
    short = stability(policy, spec, seed=4243, **study.BUDGETS["smoke"]["stability"])
    assert short.verdict != "unstable"


def test_a_per_load_policy_driven_at_another_load_is_judged_by_its_stability():
    # the shipped load-0.3 redundancy policy copies most jobs 4 times, which lambda*(4) = 6.2
    # cannot carry at load 0.9 (rate 9): from a backlog it grows, while d = 1 drains it
    from drl_ac.evaluation.steady import stability
    from drl_ac.rules.tuning import ConstantAction
    from drl_ac.study import at_load
    from envs import Driver, load_spec

    policy = load_policy(ROOT / "checkpoints" / "redundancy_ps" / "load-0.3" / "policy.pt")
    spec = at_load(load_spec("redundancy_ps"), 0.9)
    driver = Driver(spec, 16, seed=3, encoding=policy.encoding)
    obs, d4 = driver.observe(), 0
    for _ in range(200):
        action = policy(obs)
        d4 += int((action == 3).sum())
        obs, _ = driver.step(np.asarray(action, np.int64))
    assert d4 > 0.5 * 200 * 16 and spec.arrival_rate > spec.block.capacity(4)
    options = {"seed": 11, "num_envs": 16, "build_steps": 500, "steps": 1000, "doublings": 0}
    assert stability(policy, spec, **options).verdict == "unstable"
    assert stability(ConstantAction(0, "always d=1"), spec, **options).verdict == "stable"


def test_the_shipped_one_policy_for_redundancy_holds_at_every_load_against_the_rules_re_tuned_there():
    """checkpoints/redundancy_ps/policy.pt: one policy for loads 0.3, 0.6 and 0.9, observing its own
    estimate of the arrival rate; its table says no worse than every rule re-tuned at each load,
    stable at each; a short run at 0.3 on other arrivals reads its figure there."""
    import json

    from drl_ac.evaluation.steady import steady_state
    from drl_ac.study import at_load

    folder = ROOT / "checkpoints" / "redundancy_ps"
    saved = json.loads((folder / "one_policy.json").read_text())
    assert [r["load"] for r in saved["loads"]] == [0.3, 0.6, 0.9]
    for r in saved["loads"]:
        assert r["verdicts"]["re-tuned"]["outcome"] in ("better", "no worse")
        assert r["rows"]["learned"]["stability"]["verdict"] == "stable"
    policy = load_policy(folder / "policy.pt")
    assert policy.encoding.rate and policy.metadata["scenario"]["name"] == "redundancy_ps@0.3-0.9"
    base = load_spec("redundancy_ps")
    low = saved["loads"][0]["rows"]["learned"]["mean_delay"]
    run = steady_state(policy, at_load(base, 0.3), seed=4242, num_envs=32, min_steps=1_000, max_steps=1_000,
                       rel_se=1.0)
    assert abs(run["mean_delay"] - low) < 0.15 * low


def test_the_shipped_one_policy_for_the_paper_tandem_keeps_eps_through_the_step():
    """checkpoints/paper_tandem_poisson/policy.pt: one admission policy for loads 0.8 and 0.98, an
    operating point per load switched by its own arrival-rate estimate; its table: stable and
    within eps at both loads, better than the rule re-tuned at 0.98, and over paper_tandem_step
    within eps in every window and better than the rules switched by the hour. A short run at
    0.8 on other arrivals reads its acceptance there and a violation near eps."""
    import json

    from drl_ac.study import at_load
    from drl_ac.study.loads import load_base

    folder = ROOT / "checkpoints" / "paper_tandem_poisson"
    saved = json.loads((folder / "one_policy.json").read_text())
    assert [r["load"] for r in saved["loads"]] == [0.8, 0.98]
    for r in saved["loads"]:
        learned = r["rows"]["learned"]
        assert learned["stability"]["verdict"] == "stable" and learned["violation"] <= 0.1
    assert saved["loads"][1]["verdicts"]["re-tuned"]["outcome"] == "better"
    (day,) = saved["profiles"]
    assert day["scenario"] == "paper_tandem_step" and day["windows"]["learned"]["above_eps"] == []
    assert day["verdicts"]["per hour"]["outcome"] == "better"
    policy = load_policy(folder / "policy.pt")
    assert policy.encoding.rate and len(policy.bias) == 2 and policy.bias[0] < policy.bias[1]  # quiet band admits more
    assert 0.8 < policy.bias_edges[0] / 1.0 < 0.98  # between the loads' rates (the base's rate is 1)
    spec = at_load(load_base(policy.metadata, NetworkSpec.from_dict(policy.metadata["scenario"])), 0.8)
    assert spec.arrival_rate == pytest.approx(0.8) and spec.period is None  # the base's load, as evaluate --load
    run = evaluate(policy, spec, arrivals=60_000, seed=4242, num_envs=100)
    shipped = saved["loads"][0]["rows"]["learned"]
    assert abs(run["acceptance"] - shipped["acceptance"]) < 0.01 and 0.06 < run["violation"] < 0.13, run
