"""The cell kind (envs/kinds/cell.py) against exact loss-system results: Erlang B (also with
lognormal sessions: insensitivity), Kaufman-Roberts and the guard channel, each within 4
standard errors (instances as independent clusters); spec errors name their field."""

import numpy as np
import pytest

from drl_ac.evaluation.metrics import ratio_estimate
from drl_ac.theory.cell import erlang_b, guard_channel, kaufman_roberts
from envs import Driver, NetworkSpec, SpecError, load_spec
from envs.rollout import accept_all, collect

Z = 4.0


def _blocking(done, mask, num_envs):
    """P(blocked) over the rows of ``mask`` and its standard error (clusters = instances)."""
    num = np.bincount(done.env[mask], weights=done.measures["blocked"][mask].astype(float), minlength=num_envs)
    den = np.bincount(done.env[mask], minlength=num_envs).astype(float)
    return ratio_estimate(num, den)


def _run(spec, policy=accept_all, num_envs=256, steps=400, warmup=100, seed=1):
    driver = Driver(spec, num_envs, seed=seed)
    done, _ = collect(driver, policy, steps, warmup)
    return done


def _close(est, se, truth, label):
    assert abs(est - truth) < Z * se, f"{label}: simulated {est:.5f} +- {se:.5f}, exact {truth:.6f}"


def cell_spec(session, types=None, prbs=10, **extra):
    types = types or [{"name": "ue", "arrival": {"dist": "poisson", "rate": 7.0}, "session": session, "prbs": 1}]
    return NetworkSpec.from_dict({"name": "c", "cell": {"prbs": prbs, "types": types, **extra}, "eps": 0.02})


def test_exact_values_quoted_in_the_scenarios():
    assert erlang_b(10, 7.0) == pytest.approx(0.078741, abs=1e-6)
    assert kaufman_roberts(10, [1, 2], [4.0, 1.0]) == pytest.approx([0.049689, 0.123262], abs=1e-6)
    assert guard_channel(10, 2, 6.0, 2.0) == pytest.approx((0.280752, 0.009851), abs=1e-6)
    assert guard_channel(10, 0, 6.0, 2.0)[0] == pytest.approx(0.121661, abs=1e-6)


@pytest.mark.parametrize("session", [{"dist": "lognormal", "mean": 1.0, "scv": 2.0},
                                     {"dist": "exponential", "mean": 1.0}], ids=["lognormal", "exponential"])
def test_erlang_b(session):
    spec = load_spec("cell_erlang") if session["dist"] == "lognormal" else cell_spec(session)
    done = _run(spec)
    est, se = _blocking(done, np.ones(len(done), bool), 256)
    _close(est, se, erlang_b(10, 7.0), f"Erlang B, {session['dist']} sessions")
    assert not done.measures["dropped"].any() and (done.success == ~done.measures["blocked"]).all()
    kept = ~done.measures["blocked"]
    assert np.allclose(done.delay[kept], done.measures["session"][kept])  # delay = time held = the session


def test_kaufman_roberts():
    done = _run(load_spec("cell_multirate"))
    truth = kaufman_roberts(10, [1, 2], [4.0, 1.0])
    for k in (0, 1):
        est, se = _blocking(done, done.measures["type"] == k, 256)
        _close(est, se, truth[k], f"Kaufman-Roberts type {k}")


@pytest.mark.parametrize("g", [2, 0])
def test_guard_channel(g):
    spec = load_spec("cell_guard")

    def guard(obs):  # obs: UEs, PRBs in use, demand
        return (obs[:, 1] < 10 - g).astype(np.int64)

    done = _run(spec, guard)
    new, hand = _blocking(done, done.decision, 256), _blocking(done, done.measures["handover"], 256)
    exact = guard_channel(10, g, 6.0, 2.0)
    _close(*new, exact[0], f"new-call blocking, g = {g}")
    _close(*hand, exact[1], f"handover dropping, g = {g}")
    assert (done.decision == ~done.measures["handover"]).all() and done.measures["handover"].any()


def test_handover_rows_never_reach_the_learner():
    from drl_ac.learning.interaction import act
    from drl_ac.learning.store import DelayedCompletionStore

    driver = Driver(load_spec("cell_guard"), 16, seed=3)
    store = DelayedCompletionStore(16, driver.encoding.width)
    store.put_obs(0, driver.observe())
    completed = 0
    for t in range(300):
        action = np.ones(16, np.int64)
        _, exp = act(driver, store, t, action, action)
        completed += exp.success.size
    assert completed + store.pending_count() == 300 * 16  # every decision once, no handover row


@pytest.mark.parametrize("change, field", [
    ({"drop": "newest"}, "cell.drop"),
    ({"prbs": 0}, "cell.prbs"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "prbs": 11}]}, "cell.types[0].prbs"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "gbr": 20.0}]}, "cell.types[0].gbr"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": -1}, "session": {"dist": "exponential", "mean": 1},
                 "prbs": 1}]}, "cell.types[0].arrival.rate"),
    ({"types": [{"arrival": {"dist": "poisson", "profile": {"period": 24, "table": [1, -2]}},
                 "session": {"dist": "exponential", "mean": 1}, "prbs": 1}]}, "cell.types[0].arrival.profile.table[1]"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "gbr": 0.5, "cqi": {"init": 16}}]}, "cell.types[0].cqi.init"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "gbr": 0.5, "cqi": {"range": [0, 9]}}]}, "cell.types[0].cqi.range[0]"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "gbr": 0.5, "cqi": {"up": 0}}]}, "cell.types[0].cqi.up"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "prbs": 1, "handover": {"dist": "poisson", "rate": 0}}]}, "cell.types[0].handover.rate"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "prbs": 1, "colour": 2}]}, "cell.types[0].colour"),
])
def test_bad_cells_name_the_field(change, field):
    cfg = {"name": "c", "cell": {"prbs": 10, "types": [{"arrival": {"dist": "poisson", "rate": 1},
                                                       "session": {"dist": "exponential", "mean": 1}, "prbs": 1}]},
           "eps": 0.02}
    cfg["cell"].update(change)
    with pytest.raises(SpecError) as err:
        NetworkSpec.from_dict(cfg)
    assert err.value.field == field, str(err.value)


def test_cell_spec_round_trip():
    for name in ("cell_erlang", "cell_multirate", "cell_guard"):
        spec = load_spec(name)
        again = NetworkSpec.from_dict(spec.to_dict())
        assert again.cell == spec.cell and again.classes == spec.classes
