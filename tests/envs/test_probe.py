"""The probe (fast-forward) equals what the real network does with the job admitted and no later arrivals."""

import numpy as np
import pytest

from envs import Engine, load_spec


def threshold(obs, k=6):
    return (obs.sum(1) < k).astype(np.int64)


@pytest.mark.parametrize("scenario", ["paper_acyclic", "tandem", "paper_tandem"])
def test_counterfactual_equals_admitted_delay_without_further_arrivals(scenario):
    spec = load_spec(scenario)
    B, warm = 256, 300
    real = Engine(spec, B, seed=7, exact_counterfactual=True)
    twin = Engine(spec, B, seed=7, exact_counterfactual=True)
    for _ in range(warm):
        a = threshold(real.observe())
        real.step(a == 1)
        twin.step(a == 1)
    np.testing.assert_array_equal(real.observe(), twin.observe())
    t = real.t
    cf = real.counterfactual(np.arange(B))
    twin.step(np.ones(B, bool))  # admit now...
    twin.now[:] = np.inf  # ...and no further arrivals
    outcome = twin.drain()
    mine = outcome.step == t
    assert mine.sum() == B
    order = np.argsort(outcome.env[mine])
    np.testing.assert_allclose(cf.delay, outcome.delay[mine][order], rtol=1e-12)
    np.testing.assert_allclose(cf.sojourn, outcome.sojourn[mine][order], rtol=1e-12)


def test_early_exit_agrees_with_exact_counterfactual():
    spec = load_spec("paper_tandem")
    fast = Engine(spec, 512, seed=3)
    exact = Engine(spec, 512, seed=3, exact_counterfactual=True)
    for _ in range(400):
        a = np.ones(512, bool)
        fast.step(a)
        exact.step(a)
    rows = np.arange(512)
    d_fast, d_exact = fast.counterfactual(rows).delay, exact.counterfactual(rows).delay
    known = np.isfinite(d_fast)
    np.testing.assert_allclose(d_fast[known], d_exact[known], rtol=1e-12)
    assert (d_exact[~known] >= spec.d_ub).all()
    assert (d_exact[known] < spec.d_ub + 1e-9).all() or (d_exact[known] <= spec.d_ub).all()
    assert (~known).any() and known.any()


def test_counterfactual_leaves_real_network_unchanged():
    spec = load_spec("paper_acyclic")
    a = Engine(spec, 64, seed=11)
    b = Engine(spec, 64, seed=11)
    for _ in range(200):
        a.step(np.ones(64, bool))
        b.step(np.ones(64, bool))
    a.counterfactual(np.arange(0, 64, 2))
    for _ in range(50):
        da, db = a.step(np.ones(64, bool)), b.step(np.ones(64, bool))
        np.testing.assert_array_equal(da.delay, db.delay)


def test_counterfactual_on_trace(overtaking_spec, set_service):
    # Same trace, but job2 (arriving at 3) is rejected. Had it been admitted with no later
    # arrivals it would do s1 [3, 4], wait at s2 until 5, [5, 7]: sojourn 4.
    sim = Engine(overtaking_spec, 1, seed=0, exact_counterfactual=True)
    set_service(sim, 5.0, 2.0)
    sim.step(np.array([True]))
    set_service(sim, 1.0, 2.0)
    sim.step(np.array([True]))
    set_service(sim, 1.0, 2.0)
    out = sim.step(np.array([False]))
    rejected = out.step == 2
    assert out.delay[rejected].tolist() == [4.0]
    assert not out.accepted[rejected].any()
    # ...and the real network is untouched: job0 leaves at 8 (no job2 ahead of it at s2, unlike 9)
    rest = sim.drain()
    assert dict(zip(rest.step.tolist(), rest.departure_time.tolist(), strict=True))[0] == 8.0


def test_early_exit_reports_inf_only_when_deadline_missed(overtaking_spec, set_service):
    spec = overtaking_spec.with_overrides(d_ub=3.5)
    sim = Engine(spec, 1, seed=0)
    for s1 in (5.0, 1.0):
        set_service(sim, s1, 2.0)
        sim.step(np.array([True]))
    set_service(sim, 1.0, 2.0)
    out = sim.step(np.array([False]))
    assert np.isinf(out.delay[out.step == 2]).all()  # true delay 4 > 3.5


def test_without_probes_a_network_runs_the_same_and_reports_rejections_at_once_unscored():
    """probes=False (a rule's tuning, a calibration) must not change the real network: the
    same admitted rows with the same delays and the same random stream; each rejection is
    reported in its own step, unscored (success False, delay NaN), where a probe scores it."""
    from envs import Outcomes

    spec, B = load_spec("paper_tandem"), 64
    runs, refused = [], 0
    for probes in (True, False):
        eng, rows = Engine(spec, B, seed=5, probes=probes), []
        for _ in range(300):
            a = threshold(eng.observe())
            refused += (a == 0).sum() * (not probes)
            rows.append(eng.step(a))
        runs.append((Outcomes.concat(rows, spec.num_stations), eng.get_state()["rng"]))
    (scored, rng_on), (unscored, rng_off) = runs
    assert rng_on == rng_off

    def admitted(o):
        key = np.lexsort((o.step[o.accepted], o.env[o.accepted]))
        return o.env[o.accepted][key], o.step[o.accepted][key], o.delay[o.accepted][key]

    for on, off in zip(admitted(scored), admitted(unscored), strict=True):
        np.testing.assert_array_equal(on, off)
    rejected = unscored.select(~unscored.accepted)
    assert rejected.success.sum() == 0 and np.isnan(rejected.delay).all()
    assert len(rejected) == refused > 0  # every rejection, none pending
    assert scored.select(~scored.accepted).success.any()  # with probes, some rejections would have met
