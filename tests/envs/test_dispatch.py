"""Dispatch: probabilistic routing frequencies, and actions that choose the entry station."""

import numpy as np
import pytest

from envs import Driver, Engine, NetworkSpec, load_spec
from envs.rollout import accept_all, collect

TOY = {"name": "two_ways", "arrival": {"dist": "exponential", "rate": 0.5},
       "stations": [{"name": "fast", "servers": 1, "service": {"dist": "deterministic", "mean": 1.0}},
                    {"name": "slow", "servers": 1, "service": {"dist": "deterministic", "mean": 4.0}}],
       "routing": {"fast": "exit", "slow": "exit"}, "d_ub": 3.0, "eps": 0.1, "lam": 2.0,
       "actions": ["reject", "fast", "slow"]}


def test_branching_frequencies_follow_routing(stats):
    done, _ = collect(Driver(load_spec("paper_acyclic"), 200, seed=1), accept_all, 1000, 200)
    visited_a = ~np.isnan(done.wait[:, 1])
    visited_b = ~np.isnan(done.wait[:, 2])
    assert not (visited_a & visited_b).any()
    assert (visited_a | visited_b).all() and (~np.isnan(done.wait[:, [0, 3]])).all()
    p = visited_a.mean()
    assert abs(p - 0.67) < stats.Z * np.sqrt(0.67 * 0.33 / visited_a.size)


def test_action_chooses_the_entry_station():
    spec = NetworkSpec.from_dict(TOY)
    assert spec.num_actions == 3 and spec.action_entries() == [-1, 0, 1]
    sim = Engine(spec, 6, seed=0)
    out = [sim.step(np.array([0, 1, 2, 0, 1, 2])) for _ in range(40)] + [sim.drain()]
    rows = {(int(e), int(s)): (a, d) for o in out for e, s, a, d in zip(o.env, o.step, o.action, o.sojourn,
                                                                          strict=True)}
    assert len(rows) == 6 * 40
    for (e, _), (a, d) in rows.items():
        assert a == [0, 1, 2][e % 3]
        assert d >= {0: 1.0, 1: 1.0, 2: 4.0}[a] - 1e-9  # the slow station takes 4
    # a rejected decision is scored as admitted by the drawn entry (the fast station here)
    rejected = [d for (e, _), (a, d) in rows.items() if a == 0]
    assert min(rejected) == pytest.approx(1.0)
