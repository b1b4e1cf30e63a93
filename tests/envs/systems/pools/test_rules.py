"""Two-pool rules (envs/systems/pools/rules.py): the signalled pool by hand, every constant action
(full replication in effect among them) in the tuned set."""

import numpy as np

from drl_ac.rules.tuning import ConstantAction
from envs import load_spec
from envs.systems.pools.rules import SignalledPool, signalled_rules, tuned_rules


def test_signalled_pool_reads_the_type_information():
    rule = SignalledPool("replicate", 0.0, by_type=(2, 3, 2))
    info = np.eye(3)[[0, 1, 2, 1]]
    obs = np.concatenate([np.zeros((4, 4)), info], 1)
    assert rule(obs).tolist() == [2, 3, 2, 3]  # type 1 -> pool 1, type 2 -> pool 2, unknown -> pool 1


def test_signalled_rules_of_the_scenario():
    spec = load_spec("pools")  # type 1 is fast on pool 1, type 2 on pool 2
    rules = {(r.policy, r.tau, r.queue): r.by_type for r in signalled_rules(spec)}
    names = [a.name for a in spec.block.actions]
    assert rules[("replicate", 0.0, "back")] == (names.index("pool1-replicate@0"), names.index("pool2-replicate@0"),
                                                  names.index("pool1-replicate@0"))
    assert rules[("replicate", 0.0, "front")] == (names.index("pool1-replicate@0-front"),
                                                   names.index("pool2-replicate@0-front"),
                                                   names.index("pool1-replicate@0-front"))
    assert set(rules) == {("none", float("inf"), "back"), ("replicate", 0.0, "back"), ("replicate", 0.0, "front"),
                          ("replicate", 2.0, "back"), ("reroute", 6.0, "back"), ("reroute", 8.0, "back")}


def test_tuned_set_holds_every_constant_action():
    spec = load_spec("pools")
    rows = tuned_rules(spec, seed=1, num_envs=4, max_steps=400)
    constant = [r.rule for r in rows.values() if isinstance(r.rule, ConstantAction)]
    assert [r.action for r in constant] == list(range(spec.num_actions))
    assert "always pool1-replicate@0" in rows  # a copy on the other pool as service starts: full replication
    assert isinstance(rows["signalled pool (tuned policy and tau)"].rule, SignalledPool)
