"""Training end to end on a tiny network, checkpoints, resume, and the entry points."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from drl_ac import CheckpointError, TrainConfig, Trainer, load_policy
from drl_ac.learning.learner import LearnerConfig

ROOT = Path(__file__).resolve().parents[3]

MM1 = {"name": "mm1", "arrival": {"dist": "exponential", "rate": 0.9},
       "stations": [{"name": "s", "servers": 1, "service": {"dist": "exponential", "mean": 1.0}}],
       "d_ub": 5.0, "eps": 0.1, "lam": 2.0, "delay": "sojourn"}


@pytest.fixture
def mm1_yaml(tmp_path):
    path = tmp_path / "mm1.yaml"
    path.write_text(yaml.safe_dump(MM1))
    return str(path)


def small_config(scenario, **kw):
    # lam="scenario": these tests use the YAML's fixed lam (2.0); TrainConfig's default is "auto"
    base = dict(scenario=scenario, lam="scenario", steps=60_000, num_envs=256, learning_starts=2_000, replay_size=50_000,
                exploration_fraction=0.5, learner=LearnerConfig(hidden=(32, 32), batch_size=256))
    base.update(kw)
    return TrainConfig(**base)


def test_short_training_accepts_empty_and_rejects_long_queues(mm1_yaml):
    # M/M/1, deadline 5: a job finding n waiting (plus one in service) meets it with
    # probability P(Erlang(n + 2, 1) < 5): 0.96 for n = 0, below 0.001 for n = 12.
    trainer = Trainer(small_config(mm1_yaml, steps=150_000))
    trainer.train()
    policy = load_policy_from(trainer)
    actions = policy(np.array([[0.0], [1.0], [12.0], [20.0]], np.float32))
    assert actions.tolist()[:2] == [1, 1] and actions.tolist()[2:] == [0, 0]
    # rbar tracks the average eq. 7 reward actually earned recently
    c, lam, eps = trainer.stats.counts, 2.0, 0.1
    met_acc = c["accepted"] - c["violations"]
    earned = (lam * (eps * met_acc - (1 - eps) * c["violations"]) - c["unnecessary"]) / c["rows"]
    assert abs(trainer.learner.rbar.item() - earned) < 0.05


def load_policy_from(trainer):
    return trainer.policy()


def test_a_policy_taken_from_a_trainer_keeps_its_weights_while_training_goes_on(mm1_yaml):
    trainer = Trainer(small_config(mm1_yaml, steps=12_000, num_envs=64, learning_starts=500))
    trainer.train(until=6_000)
    policy, x = trainer.policy(), torch.arange(8, dtype=torch.float32)[:, None]
    with torch.no_grad():
        before = policy.module.qnet(x).clone()
    trainer.train()
    with torch.no_grad():
        assert not torch.equal(trainer.learner.q(x), before)  # the learner moved on
        assert torch.equal(policy.module.qnet(x), before)  # the policy taken did not
    live = trainer.learner.q.state_dict()
    for key, value in policy.section["state_dict"].items():  # nor do the weights it would save share memory
        assert value.data_ptr() != live[key].data_ptr(), key
    with pytest.raises(ValueError, match="state_dict belong to the network"):
        policy.replace(state_dict={})
    assert policy.replace(bias=1.0).module.qnet is policy.module.qnet


def test_resume_matches_uninterrupted_run(mm1_yaml, tmp_path):
    cfg = small_config(mm1_yaml, steps=2 * 256 * 30, learning_starts=1000)
    straight = Trainer(cfg)
    straight.train()
    first = Trainer(cfg)
    first.train(until=256 * 30)
    first.save(tmp_path / "checkpoint.pt")
    state = first.state_dict()
    assert "config" not in state and state["policy"]["config"] == cfg.to_dict()  # the settings once
    older = {**state, "config": state["policy"]["config"],  # the layout before: a copy at the top
             "policy": {k: v for k, v in state["policy"].items() if k != "config"}}
    for resumed in (Trainer.resume(tmp_path / "checkpoint.pt"), Trainer.from_state(older)):
        resumed.train()
        assert resumed.decisions == straight.decisions
        for a, b in zip(straight.learner.q.parameters(), resumed.learner.q.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
        assert straight.learner.rbar.item() == resumed.learner.rbar.item()
        np.testing.assert_array_equal(straight.obs, resumed.obs)


def test_checkpoint_round_trip_gives_same_greedy_actions(mm1_yaml, tmp_path):
    trainer = Trainer(small_config(mm1_yaml, steps=20_000))
    trainer.train()
    trainer.save(tmp_path / "checkpoint.pt")
    policy = load_policy(tmp_path / "checkpoint.pt")
    obs = np.arange(30, dtype=np.float32)[:, None]
    expected = trainer.learner.greedy_actions(torch.from_numpy(obs)).numpy()
    np.testing.assert_array_equal(policy(obs), expected)
    assert policy.metadata["scenario"]["name"] == "mm1"
    with pytest.raises(ValueError, match="obs"):
        policy(np.zeros((3, 2), np.float32))


def test_bad_checkpoints_give_clear_errors(tmp_path, mm1_yaml):
    with pytest.raises(CheckpointError, match="no such file"):
        load_policy(tmp_path / "missing.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="corrupt, truncated"):
        load_policy(junk)
    trainer = Trainer(small_config(mm1_yaml, steps=512))
    trainer.save(tmp_path / "good.pt")
    data = (tmp_path / "good.pt").read_bytes()
    (tmp_path / "truncated.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt, truncated"):
        load_policy(tmp_path / "truncated.pt")
    torch.save({"format": "something.else"}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="format"):
        load_policy(tmp_path / "other.pt")
    state = torch.load(tmp_path / "good.pt", weights_only=True)
    state["version"] = 99
    torch.save(state, tmp_path / "future.pt")
    with pytest.raises(CheckpointError, match="version 99"):
        load_policy(tmp_path / "future.pt")

    class Evil:
        def __reduce__(self):
            return (print, ("code ran",))
    torch.save({"format": "drl_ac.policy", "x": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError):
        load_policy(tmp_path / "evil.pt")


def test_train_and_evaluate_entry_points(mm1_yaml, tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, str(ROOT / "experiments/train.py"), "--scenario", mm1_yaml, "--steps", "20000",
           "--num-envs", "128", "--out", str(out), "--eval-arrivals", "5000", "--quiet", "--device", "cpu",
           "--lam", "scenario", "--compare", "smoke"]  # the YAML's fixed lam: a 20k-decision run has nothing to calibrate
    subprocess.run(cmd, check=True, cwd=tmp_path, capture_output=True, text=True)
    for name in ("policy.pt", "policy.pt2", "policy.onnx", "metrics.json", "checkpoint.pt"):
        assert (out / name).is_file()
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0 <= metrics["violation"] <= 1 and 0 <= metrics["acceptance"] <= 1
    res = subprocess.run([sys.executable, str(ROOT / "experiments/evaluate.py"), "--checkpoint", str(out / "policy.pt"),
                          "--arrivals", "4000", "--json"], check=True, capture_output=True, text=True)
    report = json.loads(res.stdout)
    assert {"violation", "acceptance", "throughput", "objective", "mean_delay", "arrivals"} <= report.keys()
    assert report["arrivals"] >= 4000
    assert abs(report["acceptance"] - report["throughput"] - (report["violation"] * report["acceptance"])) < 1e-9
    program = torch.export.load(str(out / "policy.pt2")).module()
    obs = np.array([[0.0], [3.0], [30.0]], np.float32)
    u = torch.full((3,), 0.5)  # an admission graph takes one uniform per row; this policy does not mix
    np.testing.assert_array_equal(program(torch.from_numpy(obs), u).numpy(), load_policy(out / "policy.pt")(obs))
    bad = subprocess.run([sys.executable, str(ROOT / "experiments/evaluate.py"), "--checkpoint",
                          str(tmp_path / "nope.pt")], capture_output=True, text=True)
    assert bad.returncode != 0 and "no such file" in bad.stderr


def test_calibrated_bias_meets_target_and_moves_operating_point(mm1_yaml):
    from drl_ac.checkpoint import LoadedPolicy
    from drl_ac.evaluation.calibration import calibrate_bias
    from drl_ac.evaluation.metrics import evaluate

    trainer = Trainer(small_config(mm1_yaml, steps=20_000))
    trainer.train()
    section = trainer.policy_section()
    bias, m = calibrate_bias(LoadedPolicy(section), trainer.spec, target=0.05, arrivals=10_000, iterations=4)
    assert m["violation"] <= 0.05
    looser = evaluate(LoadedPolicy({**section, "bias": bias - 1.0}), trainer.spec, arrivals=10_000, seed=555)
    assert looser["acceptance"] >= m["acceptance"]
    obs = np.array([[0.0], [40.0]], np.float32)
    assert LoadedPolicy({**section, "bias": -1e9})(obs).tolist() == [1, 1]
    assert LoadedPolicy({**section, "bias": 1e9})(obs).tolist() == [0, 0]


def test_wandb_logger_runs_offline_without_account(tmp_path, monkeypatch):
    from drl_ac.tracking import WandbLogger
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    logger = WandbLogger(True, {"scenario": "mm1"}, directory=tmp_path)
    logger.log({"violation": 0.1, "loss": 1.0, "nan": float("nan")}, step=10)
    logger.finish({"acceptance": 0.9})
    assert list((tmp_path / "wandb").glob("offline-run-*"))
    assert WandbLogger(False, {}).run is None


def test_three_actions_end_to_end(tmp_path):
    # [reject, fast, slow]: the slow station (service 4) always misses d_ub = 3; the fast one
    # (service 1) meets it when empty. The learner must never route to the slow station,
    # must admit to the fast one when it is empty, and the file must keep all three actions.
    toy = {"name": "two_ways", "arrival": {"dist": "exponential", "rate": 0.5},
           "stations": [{"name": "fast", "servers": 1, "service": {"dist": "deterministic", "mean": 1.0}},
                        {"name": "slow", "servers": 1, "service": {"dist": "deterministic", "mean": 4.0}}],
           "routing": {"fast": "exit", "slow": "exit"}, "d_ub": 3.0, "eps": 0.1, "lam": 2.0,
           "actions": ["reject", "fast", "slow"]}
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(toy))
    trainer = Trainer(small_config(str(path), steps=80_000))
    assert trainer.learner.q.body[-1].out_features == 3
    trainer.train()
    trainer.save(tmp_path / "checkpoint.pt")
    policy = load_policy(tmp_path / "checkpoint.pt")
    assert policy.num_actions == 3
    states = np.array([[q1, q2] for q1 in range(4) for q2 in range(4)], np.float32)
    actions = policy(states)
    assert (actions != 2).all()
    assert actions[0] == 1  # both empty: the fast station
    resumed = Trainer.resume(tmp_path / "checkpoint.pt")
    assert resumed.spec.actions == ("reject", "fast", "slow")


def test_congested_training_instances_restart_and_steps_are_charged_at_once():
    # redundancy_ps above lambda*(d = 1) = 10: always d = 1 (greedy or not) overloads, the
    # backlog passes 30 and the instance restarts empty; every decision is completed in its
    # own step (holding cost), so nothing stays pending.
    from envs import NetworkSpec, load_spec
    cfg = load_spec("redundancy_ps").to_dict()
    cfg["arrival"] = {"dist": "exponential", "rate": 14.0}
    trainer = Trainer(TrainConfig(scenario="redundancy_ps", num_envs=16, steps=16 * 400, learning_starts=10**9,
                                  exploration_start=0.01, exploration_end=0.01, reset_backlog=30),
                      spec=NetworkSpec.from_dict(cfg))
    for _ in range(400):
        trainer.step()
        assert (trainer.driver.jobs_in_system() <= 30).all() and trainer.store.pending_count() == 0
    assert trainer.resets > 0 and len(trainer.replay) == 16 * 400
    with pytest.raises(ValueError, match="reset_backlog"):
        TrainConfig(reset_backlog=-1)
    with pytest.raises(ValueError, match="reset_backlog"):
        Trainer(TrainConfig(scenario="paper_tandem", num_envs=4, reset_backlog=10))


DAY_CELL = {"name": "day", "eps": 0.05, "cell": {"prbs": 6, "drop": "grown", "types": [
    {"name": "ue", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": [2.0, 6.0]}},
     "session": {"dist": "exponential", "mean": 1.0}, "gbr": 0.4,
     "cqi": {"up": 1.0, "down": 1.0, "range": [8, 9], "init": [0] * 7 + [0.5, 0.5] + [0] * 6}}]}}


def test_a_periodic_cell_trains_spread_over_the_day_paid_per_step():
    """Instances start at stratified phases, without probes; every decision completes in its
    own step (blocks and drops are paid when they happen); the multiplier reads drops per
    carried UE."""
    from drl_ac.evaluation.metrics import phase_offsets
    from envs import NetworkSpec
    spec = NetworkSpec.from_dict(DAY_CELL)
    trainer = Trainer(TrainConfig(scenario="day", num_envs=32, steps=32 * 300, learning_starts=10**9,
                                  exploration_start=0.3, exploration_end=0.3), spec=spec)
    eng = trainer.driver.engine
    np.testing.assert_allclose(eng.start, phase_offsets(40.0, 32, 0))
    assert not eng.probe.score
    for _ in range(300):
        trainer.step()
        assert trainer.store.pending_count() == 0
    c = trainer.stats.counts
    assert len(trainer.replay) == 32 * 300 and c["charged"] > 10
    assert trainer.violation == pytest.approx(c["charged"] / c["accepted"])
    assert 0 < trainer.progress()["violation"] < 0.5


def test_calibration_of_a_periodic_cell_holds_dropping_with_its_margin():
    from drl_ac.checkpoint import LoadedPolicy
    from drl_ac.evaluation.calibration import calibrate_bias
    from drl_ac.evaluation.metrics import evaluate
    from envs import NetworkSpec
    spec = NetworkSpec.from_dict(DAY_CELL)
    trainer = Trainer(TrainConfig(scenario="day", num_envs=64, steps=64 * 200, learning_starts=2000), spec=spec)
    trainer.train()
    section = trainer.policy_section()
    bias, m = calibrate_bias(LoadedPolicy(section), spec, target=0.03, arrivals=6000, num_envs=60, iterations=3)
    again = evaluate(LoadedPolicy({**section, "bias": bias}), spec, arrivals=6000, seed=555, num_envs=60)
    assert m["dropping"] == m["violation"] == again["dropping"]  # the evaluation itself, on its seed
    assert m["violation_upper"] == pytest.approx(m["dropping_upper"]) and m["dropping_upper"] <= 0.03
    looser = evaluate(LoadedPolicy({**section, "bias": bias - 1.0}), spec, arrivals=6000, seed=555, num_envs=60)
    assert looser["dropping"] > 0.03 > m["dropping"] and looser["blocking"] < m["blocking"]


def test_training_until_a_deadline_fits_its_schedules_to_the_slot(mm1_yaml):
    import time
    trainer = Trainer(small_config(mm1_yaml, steps=10**9, num_envs=32, learning_starts=500))
    t0 = time.time()
    trainer.train_until(t0 + 1.5, replan_every=5)
    assert 1.5 <= time.time() - t0 < 3.0 and trainer.decisions > 32 * 20
    assert trainer.config.steps <= trainer.decisions + 32 * 5  # the run's length is what the slot reached
    assert trainer.exploration() == pytest.approx(trainer.config.exploration_end, rel=0.2)


def test_a_base_rule_is_followed_with_constant_exploration_and_marks_the_experiences():
    # redundancy_ps, rule "d = 4 below 4 jobs in system, else d = 3" (column 10: the number in
    # system): the behaviour is the rule except a random action with probability 0.2 (a
    # different one in 3 of 4 of those), and an experience counts as following the rule (the
    # rbar update's mask) exactly when its action is the rule's.
    rule = {"kind": "threshold", "column": 10, "k": 4, "below": 3, "above": 2}
    trainer = Trainer(TrainConfig(scenario="redundancy_ps", num_envs=256, steps=256 * 50, learning_starts=10**9,
                                  base_rule=rule, base_exploration=0.2))
    assert trainer.exploration() == 0.2
    followed = []
    for _ in range(50):
        expected = np.where(trainer.obs[:, 10] < 4, 3, 2)
        trainer.step()  # the holding cost completes each step's decisions at once, in instance order
        followed.append(expected)
    replay = trainer.replay.state_dict()
    taken, greedy_col = replay["action"].numpy(), replay["greedy"].numpy().astype(bool)
    assert len(taken) == 256 * 50 and np.array_equal(greedy_col, taken == np.concatenate(followed))
    assert (~greedy_col).mean() == pytest.approx(0.2 * 3 / 4, abs=0.01)
    with pytest.raises(ValueError, match="base_rule: only a control system"):
        Trainer(TrainConfig(scenario="paper_tandem", num_envs=4, base_rule=rule))
    with pytest.raises(ValueError, match="base_rule: not a rule description"):
        TrainConfig(base_rule={"kind": "nonsense"})


def test_rollout_targets_label_every_action_in_the_rules_states_and_fit_them():
    """targets rollout: the instances follow the base rule exactly; from rollout_start on,
    every rollout_every-th step adds one labelled row per (instance, action), the rule's own
    action labelled 0; the network is fitted once a batch is there."""
    from drl_ac.learning.qnet import RuleDefault
    from envs import load_spec
    from envs.systems.redundancy.rules import own_server_rules
    rule = own_server_rules(load_spec("redundancy_ps"))[2]
    fields = rule.guard_fields()["default_rule"]
    cfg = TrainConfig(scenario="redundancy_ps", num_envs=8, steps=8 * 40, base_rule=fields, targets="rollout",
                      rollout_horizon=5, rollout_every=3, rollout_start=8 * 10,
                      learner=LearnerConfig(hidden=(16,), batch_size=32))
    trainer = Trainer(cfg)
    base = RuleDefault(fields)
    for t in range(40):
        obs = trainer.obs.copy()
        trainer.step()
        labelled = t >= 10 and t % 3 == 0
        assert trainer.exploration() == 0.0  # the rule's own actions, none random
        if labelled:
            rows = trainer.replay.size
            assert rows % 32 == 0 and torch.equal(trainer.replay.obs[rows - 32:rows:4], torch.from_numpy(obs))
    assert trainer.replay.size == 10 * 8 * 4  # labelled at t = 12, 15, ..., 39: ten steps of 8 x 4 rows
    first = base(trainer.replay.obs[:trainer.replay.size:4])
    own = trainer.replay.cost[:trainer.replay.size].reshape(-1, 4).gather(1, first[:, None])
    assert not own.any() and trainer.learner.updates > 0
    with pytest.raises(ValueError, match="targets.*base rule"):
        Trainer(TrainConfig(scenario="redundancy_ps", num_envs=4, targets="rollout"))
    with pytest.raises(ValueError, match="targets.*Fix"):
        TrainConfig(targets="mc")
    with pytest.raises(ValueError, match="rollout_horizon"):
        TrainConfig(rollout_horizon=0)
