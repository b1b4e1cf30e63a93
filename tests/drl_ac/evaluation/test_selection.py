"""drl_ac/evaluation/selection.py on a hand-built Q-network whose advantages are known:
a guard at quantile q leaves the default in a fraction 1 - q of the states where plain
greedy leaves it (and only there, for the same action); ``choose`` never takes an unstable
candidate; ``deviation`` by hand; ``train_snapshots`` keeps copies and stops at a full job
table; ``visited_states`` are the observations arrivals see (PASTA on an M/M/1 queue)."""

import numpy as np
import pytest
import torch

import drl_ac.evaluation.selection as selection
from drl_ac.evaluation.selection import (
    Candidate,
    choose,
    deviation,
    guarded,
    train_snapshots,
    visited_states,
)
from drl_ac.learning.qnet import QNetwork
from drl_ac.learning.trainer import TrainConfig
from drl_ac.rules.tuning import ConstantAction
from envs import NetworkSpec, ObservationEncoding
from envs.distributions import Exponential
from envs.engine import CapacityError

C = 0.305  # Q(s) = (0, f - C, -1) with f = log1p(obs): action 1 beats the default 0 by f - C


def section(**extra) -> dict:
    """A policy section of a linear Q-network on one feature (no hidden layer)."""
    net = QNetwork(1, torch.ones(1), hidden=(), num_actions=3)
    with torch.no_grad():
        net.body[0].weight.copy_(torch.tensor([[0.0], [1.0], [0.0]]))
        net.body[0].bias.copy_(torch.tensor([0.0, -C, -1.0]))
    return {"obs_dim": 1, "num_actions": 3, "admission": False, "hidden": [], "scale": torch.ones(1),
            "state_dict": net.state_dict(), "encoding": ObservationEncoding(1).to_dict(), **extra}


# f = 0.01, 0.02, ..., 1.00: greedy leaves the default 0 (for action 1) where f > C, in 70
# states, with advantages f - C = 0.005, 0.015, ..., 0.695
STATES = np.expm1(np.arange(1, 101) / 100)[:, None].astype(np.float32)


def test_constant_action():
    out = ConstantAction(2)(np.zeros((5, 3), np.float32))
    assert out.dtype == np.int64 and out.tolist() == [2] * 5


def test_deviation_by_hand():
    obs = np.arange(10, dtype=np.float32)[:, None]
    assert deviation(ConstantAction(1), 1, obs) == 0.0 and deviation(ConstantAction(1), 0, obs) == 1.0
    assert deviation(lambda o: (o[:, 0] >= 7).astype(np.int64), 0, obs) == pytest.approx(0.3)


def test_plain_greedy_leaves_the_default_where_the_advantage_is_positive():
    plain = Candidate("plain", section()).policy()
    actions = plain(STATES)
    assert actions.tolist() == [0] * 30 + [1] * 70
    assert deviation(plain, 0, STATES) == pytest.approx(0.7)


@pytest.mark.parametrize("q, leaving", [(0.0, 70), (0.5, 35), (0.9, 7)])
def test_a_guard_at_quantile_q_leaves_the_default_in_1_minus_q_of_the_greedy_states(q, leaving):
    # 70 positive advantages: np.quantile at 0.5 lies between the 35th and 36th, at 0.9
    # between the 63rd and 64th, so 35 and 7 of them are at least the bias: 1 - q of 70
    plain = Candidate("plain", section())
    (variant,) = guarded(plain, 0, STATES, [q])
    assert variant.section["default_action"] == 0 and variant.label == f"plain, guarded by action 0 at q {q:g}"
    assert variant.section["bias"] == pytest.approx(np.quantile(np.arange(70) / 100 + 0.005, q), abs=1e-6)
    greedy, guard = plain.policy()(STATES), variant.policy()(STATES)
    leaves = guard != 0
    assert leaves.sum() == leaving and deviation(variant.policy(), 0, STATES) == pytest.approx(leaving / 100)
    assert leaves.sum() / (greedy != 0).sum() == pytest.approx(1 - q)
    assert (greedy[leaves] == guard[leaves]).all()  # only where greedy leaves, for the same action
    assert leaves[-leaving:].all()  # the states with the largest advantages
    assert "bias" not in plain.section  # the candidate itself is not changed


def test_no_guard_where_the_network_never_beats_the_default():
    assert guarded(Candidate("plain", section()), 0, STATES[:30], [0.5, 0.9]) == []  # f <= 0.30 < C


def test_choose_takes_the_lowest_mean_response_among_the_stable():
    scores = {0.1: {"mean_response": 3.0}, 0.2: {"mean_response": 0.5, "unstable": "job table full"},
              0.3: {"mean_response": 1.0}, 0.4: {"mean_response": 2.0}}
    candidates = [Candidate(f"b{b}", section(bias=b)) for b in scores]
    chosen, scored = choose(candidates, lambda policy: scores[policy.bias])
    assert chosen is candidates[2]  # 0.2 is lower but unstable
    assert [s["label"] for s in scored] == ["b0.1", "b0.2", "b0.3", "b0.4"]
    assert [s["mean_response"] for s in scored] == [3.0, 0.5, 1.0, 2.0] and "unstable" in scored[1]
    unstable = {b: {"mean_response": 1.0 / b, "unstable": "grows"} for b in scores}
    chosen, _ = choose(candidates, lambda policy: unstable[policy.bias])
    assert chosen is candidates[-1]  # all unstable: the last one


class FakeTrainer:
    """Trains by counting decisions; its job table fills past ``full`` decisions."""

    full = 250

    def __init__(self, config, spec):
        self.config, self.decisions, self.section = config, 0, {"decisions": 0}

    def train(self, until):
        if until > self.full:
            raise CapacityError("job table full")
        self.decisions = self.section["decisions"] = until

    def policy_section(self):
        return self.section  # the same dict every time: snapshots must be copies


def test_train_snapshots_are_copies_at_even_points_and_stop_at_a_full_job_table(monkeypatch):
    monkeypatch.setattr(selection, "Trainer", FakeTrainer)
    said = []
    configs = [TrainConfig(scenario="redundancy_ps", steps=400, seed=s, cost="own") for s in (0, 1)]
    out = train_snapshots(None, configs, 4, said.append)
    assert [c.label for c in out] == [f"seed {s}, cost own, {n} decisions" for s in (0, 1) for n in (100, 200)]
    assert [c.section["decisions"] for c in out] == [100, 200, 100, 200]
    assert sum("job table full after 200 decisions" in s for s in said) == 2


def test_visited_states_are_what_arrivals_see(stats):
    # M/M/1 at load 0.5 under accept-all: an arrival sees the time-stationary queue (PASTA),
    # on average rho^2 / (1 - rho) = 0.5 jobs waiting (the default encoding's feature)
    spec = NetworkSpec.tandem([1], [Exponential(1.0)], Exponential(2.0), d_ub=10, eps=0.1)
    B, steps = 64, 600
    seen = visited_states(spec, ConstantAction(1), ObservationEncoding.for_spec(spec), seed=3, num_envs=B, steps=steps,
                          warmup=300)
    assert seen.shape == (steps * B, 1)
    stats.assert_close(seen.reshape(steps, B).mean(0), 0.5, "jobs waiting seen by arrivals, M/M/1")
