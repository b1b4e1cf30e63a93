"""Cell admission rules and their tuners (envs/systems/cell/rules.py): decisions on
hand-made observations (columns placed through the encoding's layout), the guard channel
tuned on cell_guard against the exact birth-death results, a PRB threshold on cell_small
respecting eps with its margin."""

import numpy as np
import pytest

from drl_ac.evaluation.metrics import Z95_ONE_SIDED
from envs import load_spec
from envs.observation import ObservationEncoding
from envs.systems.cell.rules import (
    CellAcceptAll,
    FractionalGuardChannel,
    GuardChannel,
    PhaseTypeThresholds,
    PRBThreshold,
    TypeThresholds,
    cell_layout,
    tune_fractional_guard,
    tune_guard,
    tune_prb_threshold,
)
from envs.systems.cell.theory import fractional_guard_channel, guard_channel

SMALL = {"arrivals": 20_000, "num_envs": 100, "max_arrivals": 40_000}


def observations(layout, used, typ=None, demand=None, minute=None, width=None):
    """A batch with PRBs in use ``used``, arriving type, demand and time of day placed by ``layout``."""
    used = np.asarray(used, float)
    obs = np.zeros((used.size, width), np.float32)
    obs[:, layout.used] = used
    if layout.onehot is not None:
        obs[np.arange(used.size), layout.onehot.start + np.asarray(typ)] = 1.0
    obs[:, layout.demand] = 1.0 if demand is None else np.asarray(demand)
    if layout.phase is not None:
        angle = 2 * np.pi * np.asarray(0.0 if minute is None else minute, float) / layout.period
        obs[:, layout.phase] = 1.0 + np.stack(np.broadcast_arrays(np.sin(angle), np.cos(angle)), 1)
    return obs


def test_layout_matches_the_encoding():
    spec = load_spec("cell_5g")
    enc = ObservationEncoding.for_spec(spec)
    lay = enc.cell_layout()
    assert (lay.ues, lay.used, lay.onehot, lay.demand, lay.phase, lay.bands) == (
        slice(0, 3), 3, slice(4, 7), 7, slice(8, 10), slice(10, 19))
    assert lay.bands.stop == enc.width
    one = cell_layout(load_spec("cell_guard"))
    assert (one.used, one.onehot, one.demand, one.phase) == (1, None, 2, None)


def test_rules_on_hand_made_observations():
    spec = load_spec("cell_5g")
    lay, w = cell_layout(spec), ObservationEncoding.for_spec(spec).width
    obs = observations(lay, [49, 50, 15, 15, 100], typ=[0, 0, 0, 1, 2], demand=[5, 5, 5, 1, 3],
                       minute=[30, 30, 610, 610, 1430], width=w)
    assert CellAcceptAll(lay)(obs).tolist() == [1, 1, 1, 1, 1]
    assert PRBThreshold(lay, 50)(obs).tolist() == [1, 0, 1, 1, 0]
    assert TypeThresholds(lay, (10, 20, 101))(obs).tolist() == [0, 0, 0, 1, 1]
    assert GuardChannel(lay, 106, 2)(obs).tolist() == [1, 1, 1, 1, 1]  # 100 + 3 <= 104
    assert GuardChannel(lay, 106, 4)(obs).tolist() == [1, 1, 1, 1, 0]
    table = np.full((3, 24), 200)
    table[0, 0], table[0, 10], table[1, 10], table[2, 23] = 50, 10, 16, 100  # bins: 00:30 -> 0, 10:10 -> 10, 23:50 -> 23
    assert PhaseTypeThresholds(lay, tuple(map(tuple, table.tolist())))(obs).tolist() == [1, 0, 0, 1, 0]
    assert lay.phase_bin(obs, 24).tolist() == [0, 0, 10, 10, 23]
    assert lay.time_of_day(obs) == pytest.approx([30, 30, 610, 610, 1430], abs=1e-3)


def test_guard_and_fractional_guard_on_one_prb_ues():
    spec = load_spec("cell_guard")
    lay, w = cell_layout(spec), ObservationEncoding.for_spec(spec).width
    obs = observations(lay, [7, 8, 9, 10], width=w)
    assert GuardChannel(lay, 10, 2)(obs).tolist() == [1, 0, 0, 0]  # fewer than C - g = 8 busy
    rule = FractionalGuardChannel(lay, 8.3, seed=4)
    many = observations(lay, np.repeat([7, 8, 9], 4000), width=w)
    first = rule(many)
    assert first[:4000].all() and not first[8000:].any()
    assert first[4000:8000].mean() == pytest.approx(0.3, abs=0.03)  # admitted w.p. 0.3 at 8 busy
    rule.reset()
    assert (rule(many) == first).all()  # reset replays the uniforms (common random numbers)


def test_guard_tuned_on_cell_guard_matches_the_exact_chain():
    """Handover dropping <= 0.02 with its margin: g = 1 drops 0.0335, g = 2 0.0099 (exact)."""
    spec = load_spec("cell_guard")
    tuned = tune_guard(spec, measure="handover_dropping", **SMALL)
    assert tuned.rule.g == 2
    m = tuned.metrics
    truth = guard_channel(10, 2, 6.0, 2.0)
    se = (m["blocking_ci"][1] - m["blocking_ci"][0]) / (2 * 1.959964)
    assert abs(m["blocking"] - truth[0]) < 4 * se
    assert abs(m["handover_dropping"] - truth[1]) < 4 * m["handover_dropping_se"]
    assert m["handover_dropping"] + Z95_ONE_SIDED * m["handover_dropping_se"] <= spec.eps


def test_fractional_guard_tuned_on_cell_guard():
    spec = load_spec("cell_guard")
    tuned = tune_fractional_guard(spec, measure="handover_dropping", iterations=3, **SMALL)
    level = tuned.rule.level
    assert 8 <= level < 9  # between g = 2 (feasible) and g = 1 (not)
    m = tuned.metrics
    assert m["handover_dropping"] + Z95_ONE_SIDED * m["handover_dropping_se"] <= spec.eps
    blocking, dropping = fractional_guard_channel(10, 6.0, 2.0, [1.0] * 8 + [level - 8, 0.0])
    se = (m["blocking_ci"][1] - m["blocking_ci"][0]) / (2 * 1.959964)
    assert abs(m["blocking"] - blocking) < 4 * se and abs(m["handover_dropping"] - dropping) < 4 * m["handover_dropping_se"]
    assert blocking < guard_channel(10, 2, 6.0, 2.0)[0]  # the fraction buys blocking


def test_prb_threshold_tuned_on_cell_small_respects_eps_with_margin():
    spec = load_spec("cell_small")  # eps 0.05; accept-all drops ~0.097
    tuned = tune_prb_threshold(spec, **SMALL)
    T = tuned.rule.T
    assert 0 < T < spec.block.prbs
    assert tuned.metrics["dropping_upper"] <= spec.eps
    above = [row for row in tuned.trace if row[0] == f"PRBs < {T + 1}"]
    assert above and above[-1][2] > spec.eps - 0.01  # the next threshold was tried and is not within the margin


def test_a_search_past_its_deadline_returns_the_best_found_and_says_so():
    import time

    spec = load_spec("cell_small")
    done = tune_prb_threshold(spec, arrivals=5000, num_envs=50)
    cut = tune_prb_threshold(spec, arrivals=5000, num_envs=50, deadline=time.time() - 1)
    assert done.complete and not cut.complete
    assert cut.rule.T == 0 < done.rule.T  # only the search's first feasible point: admit nothing


def test_per_hour_table_meets_the_period_constraint_and_uses_its_slack():
    """Per-bin shapes first (each bin <= eps), then one common raise while the period's
    dropping stays <= eps with its margin: the table is feasible for the period, and one PRB
    more everywhere was tried and is not."""
    from envs import NetworkSpec
    from envs.systems.cell.rules import tune_phase_thresholds

    spec = NetworkSpec.from_dict({"name": "day", "eps": 0.02, "cell": {"prbs": 8, "drop": "grown", "types": [
        {"name": "data", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": [1.0, 5.0, 2.0, 0.5]}},
         "session": {"dist": "exponential", "mean": 1.0}, "gbr": 0.4,
         "cqi": {"up": 1.0, "down": 1.0, "range": [7, 9], "init": [0] * 6 + [0.3, 0.4, 0.3] + [0] * 6}}]}})
    tuned = tune_phase_thresholds(spec, (6,), bins=4, arrivals=8000, num_envs=80)
    assert tuned.complete and tuned.metrics["dropping_upper"] <= spec.eps
    table = tuned.rule.table[0]
    assert min(table) < 8  # control where it is needed
    higher = "PRBs < per type and phase bin [" + " ".join(str(min(t + 1, 8)) for t in table) + "]"
    tried = [row for row in tuned.trace if row[0] == higher]
    assert tried and tried[-1][2] > spec.eps - 0.01


def test_per_hour_table_blocks_less_than_the_static_per_type_rule_at_the_same_eps():
    """A busy hour needs control, the quiet ones do not: the per-bin allocation admits more
    where drops are rare and stays within eps for the period, with its margin."""
    from envs import NetworkSpec
    from envs.systems.cell.rules import tune_phase_thresholds, tune_type_thresholds

    spec = NetworkSpec.from_dict({"name": "day", "eps": 0.02, "cell": {"prbs": 8, "drop": "grown", "types": [
        {"name": "data", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": [1.0, 5.0, 2.0, 0.5]}},
         "session": {"dist": "exponential", "mean": 1.0}, "gbr": 0.4,
         "cqi": {"up": 1.0, "down": 1.0, "range": [7, 9], "init": [0] * 6 + [0.3, 0.4, 0.3] + [0] * 6}}]}})
    run = {"arrivals": 8000, "num_envs": 80}
    static = tune_type_thresholds(spec, tune_prb_threshold(spec, **run).rule.T, **run)
    hourly = tune_phase_thresholds(spec, static.rule.Ts, bins=4, step=1, **run)
    assert hourly.metrics["dropping_upper"] <= spec.eps
    assert hourly.metrics["blocking"] < static.metrics["blocking"]  # same seed: common random numbers
    assert hourly.rule.table[0][1] == static.rule.Ts[0] < max(hourly.rule.table[0])  # busy bin kept, others raised
