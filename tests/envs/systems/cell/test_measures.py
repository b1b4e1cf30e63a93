"""A cell's own measures (envs/systems/cell/measures.py) in the evaluation harness: hand-computed
values on a tiny window of outcomes, and evaluation of a periodic cell on instances
started at spread-out phases (rows per phase bin follow the integrated rate profile; the
blocking of a loss cell with a daily profile is that of the periodic solution of its
forward equations)."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.linalg import expm

from drl_ac.evaluation.metrics import (
    Z95,
    evaluate,
    format_metrics,
    phase_offsets,
    ratio_estimate,
)
from envs import NetworkSpec, Outcomes
from envs.queueing import erlang_b
from envs.rollout import accept_all
from envs.systems.cell.measures import summary


def tiny_outcomes() -> Outcomes:
    # env, type, arrival time, blocked, dropped, handover
    rows = [(0, 0, 0.5, False, False, False),
            (0, 0, 1.5, True, False, False),
            (0, 1, 2.5, False, True, False),
            (0, 1, 3.5, True, False, True),   # a handover that could not be carried
            (1, 0, 0.2, False, False, False),
            (1, 1, 1.2, False, False, False),
            (1, 1, 2.2, True, False, False),
            (1, 0, 3.2, False, False, True)]  # a handover carried
    env, typ, at, blocked, dropped, hand = (np.array(c) for c in zip(*rows, strict=True))
    n = env.size
    out = Outcomes.empty(1)
    out = Outcomes(env, np.zeros(n, np.int64), np.ones(n, np.int64), ~(hand & blocked), ~(blocked | dropped),
                   np.zeros(n), np.zeros(n), at.astype(float), at + 1.0, typ, np.zeros(n), np.ones(n, np.int64),
                   np.full((n, 1), np.nan), np.full((n, 1), np.nan), decision=~hand,
                   measures={"blocked": blocked, "dropped": dropped, "type": typ, "handover": hand,
                             "session": np.ones(n)})
    return out


def test_cell_summary_matches_hand_computation():
    occupancy = (np.array([0, 0, 1, 1]), np.array([0.5, 2.5, 0.2, 3.2]), np.array([2.0, 4.0, 1.0, 5.0]))
    m = summary(tiny_outcomes(), 2, SimpleNamespace(num_classes=2), period=4.0, bins=2, occupancy=occupancy)
    assert m["blocking"] == pytest.approx(2 / 6)  # new UEs: 6, blocked: 2
    assert m["dropping"] == pytest.approx(1 / 4)  # admitted new UEs: 4, dropped: 1
    assert m["handover_dropping"] == pytest.approx(1 / 2)
    assert m["carried_load"] == pytest.approx(3.0)
    assert (m["new_ues"], m["handovers"]) == (6, 2)
    assert m["blocking_by_type"] == pytest.approx([1 / 3, 1 / 3])
    assert m["dropping_by_type"] == pytest.approx([0.0, 1 / 2])
    assert m["handover_dropping_by_type"] == pytest.approx([0.0, 1.0])
    # phase bins of 2 time units: [0, 2) holds rows at 0.5, 1.5, 0.2, 1.2; [2, 4) the rest
    assert m["blocking_by_phase"] == pytest.approx([1 / 4, 1 / 2])
    assert m["dropping_by_phase"] == pytest.approx([0.0, 1.0])
    assert m["new_ues_by_phase"] == [4, 2] and m["handovers_by_phase"] == [0, 2]
    assert m["carried_load_by_phase"] == pytest.approx([1.5, 4.5])
    # intervals: the delta-method standard error over instances (clusters), as summarize
    p, se = ratio_estimate(np.array([1.0, 0.0]), np.array([2.0, 2.0]))  # dropped / admitted per instance
    assert se > 0 and m["dropping_se"] == pytest.approx(se)
    assert m["dropping_ci"] == pytest.approx([p - 1.959964 * se, p + 1.959964 * se], rel=1e-6)
    assert m["dropping_upper"] == pytest.approx(m["dropping"] + 1.644854 * m["dropping_se"], rel=1e-6)
    assert len(m["dropping_by_type_ci"]) == 2 and len(m["dropping_by_phase_se"]) == 2


def test_ordered_clusters_take_their_variance_from_successive_differences():
    """Residuals -1.5, -0.5, 0.5, 1.5 (a trend): independent clusters see variance 4/3 * 5,
    ordered ones 4/6 * (1 + 1 + 1) from their successive differences."""
    num, den = np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4)
    assert ratio_estimate(num, den) == pytest.approx((2.5, math.sqrt(4 / 3 * 5) / 4))
    assert ratio_estimate(num, den, ordered=True) == pytest.approx((2.5, math.sqrt(2.0) / 4))


def test_phase_offsets_are_stratified():
    u = phase_offsets(1440.0, 48, seed=3)
    assert np.all((u >= 0) & (u < 1440.0))
    assert np.allclose(np.diff(u), 30.0)


TABLE = [1.0, 3.0, 0.5, 5.5]
HANDOVER = [0.5, 0.1, 1.0, 0.4]


def periodic_cell() -> NetworkSpec:
    return NetworkSpec.from_dict({"name": "day", "eps": 0.02, "cell": {"prbs": 8, "types": [
        {"name": "ue", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": TABLE}},
         "session": {"dist": "exponential", "mean": 0.5}, "prbs": 1,
         "handover": {"dist": "poisson", "profile": {"period": 40.0, "table": HANDOVER}}}]}})


@pytest.mark.parametrize("bins", [4, 8])
def test_rows_per_phase_bin_follow_the_rate_profile(bins):
    spec = periodic_cell()
    m = evaluate(accept_all, spec, arrivals=12_000, num_envs=60, seed=5, bins=bins)
    assert m["window_time"] * 60 / 40.0 == pytest.approx(round(m["window_time"] * 60 / 40.0))  # whole multiples
    for key, table in (("new_ues_by_phase", TABLE), ("handovers_by_phase", HANDOVER)):
        n = np.array(m[key], float)
        share = np.repeat(np.array(table) / sum(table), bins // 4) / (bins // 4)
        expected = n.sum() * share
        assert np.all(np.abs(n - expected) < 4 * np.sqrt(expected) + 1), (key, n, expected)
    assert m["new_ues"] == pytest.approx(12_000, rel=0.1)
    # lockstep instances started at 0 would have covered the first bin only
    assert min(m["new_ues_by_phase"]) > 0
    assert m["blocking_by_phase"][3 * bins // 4] > m["blocking_by_phase"][bins // 2]  # busy bin blocks more
    assert not math.isnan(m["carried_load"]) and len(m["carried_load_by_phase"]) == bins
    assert format_metrics(m).startswith(f"blocking {m['blocking']:.4f} [")  # what train.py prints for a cell


def periodic_erlang(table, prbs: int, period: float, mean: float = 1.0) -> tuple[float, np.ndarray]:
    """Blocking of an M(t)/M/C/C loss system whose arrival rate is ``table[j]`` on the j-th
    equal bin of the period: the periodic solution p(t) of the forward equations dp/dt = p Q_j
    (p(0) the fixed point of the period's transition matrix), P(full) averaged over each bin
    (the integral of expm(Q s) from the block matrix [[Q, I], [0, 0]]), and over the period
    weighted by the arrivals. Returns (blocking, per-bin blocking)."""
    width, n, C = period / len(table), np.arange(prbs + 1), prbs
    gens = []
    for rate in table:
        Q = np.zeros((C + 1, C + 1))
        Q[n[:-1], n[:-1] + 1] = rate
        Q[n[1:], n[1:] - 1] = n[1:] / mean
        gens.append(Q - np.diag(Q.sum(1)))
    whole = np.linalg.multi_dot([expm(Q * width) for Q in gens])
    p = np.full(C + 1, 1.0 / (C + 1)) @ np.linalg.matrix_power(whole, 4)  # e^-40 of the start is left
    per_bin = []
    for Q in gens:
        block = np.zeros((2 * (C + 1), 2 * (C + 1)))
        block[:C + 1, :C + 1], block[:C + 1, C + 1:] = Q, np.eye(C + 1)
        per_bin.append((p @ expm(block * width)[:C + 1, C + 1:])[C] / width)
        p = p @ expm(Q * width)
    rates, per_bin = np.asarray(table), np.asarray(per_bin)
    return float((rates * per_bin).sum() / rates.sum()), per_bin


def test_periodic_loss_cell_blocking_is_the_forward_equations():
    # 8 PRBs, one PRB per UE, sessions Exp(1), arrival rates 2, 9, 4, 1 on the quarters of a
    # period of 40: the busy quarter blocks 27%, the day 16%, arrival-weighted
    table = [2.0, 9.0, 4.0, 1.0]
    assert periodic_erlang([5.0] * 4, 8, 40.0)[0] == pytest.approx(erlang_b(8, 5.0), rel=1e-9)  # constant: Erlang B
    blocking, per_bin = periodic_erlang(table, 8, 40.0)
    assert blocking == pytest.approx(0.15978, abs=1e-5) and per_bin[1] == pytest.approx(0.26563, abs=1e-5)
    spec = NetworkSpec.from_dict({"name": "day", "eps": 0.02, "cell": {"prbs": 8, "types": [
        {"name": "ue", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": table}},
         "session": {"dist": "exponential", "mean": 1.0}, "prbs": 1}]}})
    m = evaluate(accept_all, spec, arrivals=30_000, num_envs=100, seed=5, bins=4)
    for est, ci, truth, label in ((m["blocking"], m["blocking_ci"], blocking, "the period"),
                                  (m["blocking_by_phase"][1], m["blocking_by_phase_ci"][1], per_bin[1], "busy quarter")):
        se = (ci[1] - ci[0]) / (2 * Z95)
        assert abs(est - truth) < 4 * se, f"{label}: simulated {est:.5f} +- {se:.5f}, exact {truth:.5f}"
