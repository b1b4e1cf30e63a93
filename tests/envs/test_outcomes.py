"""envs/outcomes.py: rows of decisions, by hand. ``select`` keeps whole rows (every column,
``decision`` and ``measures`` alike), ``concat`` joins in order and is the inverse of a split,
``decisions`` drops the rows that are not the controller's, ``info`` shows the 1-D columns."""

import numpy as np
import pytest

from envs import Outcomes

M = 2  # stations


def rows(env, decision=None, measures=None, start=0) -> Outcomes:
    """Outcomes with one row per entry of ``env``; every column a distinct function of the row
    number ``start + i``, so a row that moves or is lost shows in every column."""
    env = np.asarray(env, np.int64)
    k = np.arange(start, start + env.size)
    return Outcomes(env=env, step=10 + k, action=k % 3, accepted=k % 2 == 0, success=k % 3 != 1,
                    delay=0.5 * k, sojourn=0.25 * k, arrival_time=1.0 * k, departure_time=2.0 * k,
                    job_class=k % 2, work=3.0 * k, copies=k % 4,
                    wait=np.stack([k, -k], 1).astype(float), service=np.stack([2 * k, k + 0.5], 1).astype(float),
                    decision=None if decision is None else np.asarray(decision, bool),
                    measures={} if measures is None else {name: np.asarray(v) for name, v in measures.items()})


def same(a: Outcomes, b: Outcomes) -> None:
    for name in ("env", "step", "action", "accepted", "success", "delay", "sojourn", "arrival_time",
                 "departure_time", "job_class", "work", "copies", "wait", "service"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.decision is None) == (b.decision is None)
    if a.decision is not None:
        np.testing.assert_array_equal(a.decision, b.decision)
    assert a.measures.keys() == b.measures.keys()
    for name in a.measures:
        np.testing.assert_array_equal(a.measures[name], b.measures[name], err_msg=name)


def test_select_keeps_whole_rows():
    out = rows([0, 1, 2, 3], decision=[True, False, True, True], measures={"blocked": [0, 1, 0, 1]})
    part = out.select(np.array([False, True, False, True]))
    assert len(part) == 2
    assert part.step.tolist() == [11, 13] and part.env.tolist() == [1, 3]
    assert part.accepted.tolist() == [False, False] and part.success.tolist() == [False, True]
    assert part.delay.tolist() == [0.5, 1.5] and part.copies.tolist() == [1, 3]
    assert part.wait.tolist() == [[1.0, -1.0], [3.0, -3.0]] and part.service.tolist() == [[2.0, 1.5], [6.0, 3.5]]
    assert part.decision.tolist() == [False, True] and part.measures["blocked"].tolist() == [1, 1]
    # an index array selects too, in its order
    assert out.select(np.array([3, 0])).step.tolist() == [13, 10]


def test_empty_has_every_column_and_the_stations():
    e = Outcomes.empty(3)
    assert len(e) == 0 and e.wait.shape == (0, 3) and e.service.shape == (0, 3)
    assert e.decision is None and e.measures == {}
    assert e.accepted.dtype == bool and e.success.dtype == bool and e.env.dtype == np.int64
    assert set(e.info()) == {"env", "step", "action", "accepted", "success", "delay", "sojourn", "arrival_time",
                             "departure_time", "job_class", "work", "copies"}


def test_concat_of_a_split_is_the_original():
    out = rows([0, 1, 0, 1, 2], decision=[True, False, True, True, False], measures={"dropped": [0, 0, 1, 0, 1]})
    mask = np.array([True, False, False, True, True])
    joined = Outcomes.concat([out.select(mask), out.select(~mask)], M)
    order = np.argsort(joined.step)  # the step column is distinct per row: it restores the order
    same(joined.select(order), out)
    # in the order given
    assert joined.step.tolist() == [10, 13, 14, 11, 12]


def test_concat_edge_cases():
    a = rows([0, 1])
    assert len(Outcomes.concat([], M)) == 0 and Outcomes.concat([], M).wait.shape == (0, M)
    assert Outcomes.concat([a], M) is a
    # an empty part lacks the system's measures: it is skipped, not an error
    cell = rows([0, 1], measures={"blocked": [True, False]})
    assert Outcomes.concat([Outcomes.empty(M), cell, Outcomes.empty(M)], M) is cell
    empties = [Outcomes.empty(M), Outcomes.empty(M)]
    assert len(Outcomes.concat(empties, M)) == 0
    with pytest.raises(ValueError, match="different measures"):
        Outcomes.concat([cell, rows([2])], M)


def test_concat_fills_decision_for_parts_without_one():
    plain, marked = rows([0, 1]), rows([2, 3], decision=[False, True], start=2)
    both = Outcomes.concat([plain, marked], M)
    assert both.decision.tolist() == [True, True, False, True]
    assert Outcomes.concat([plain, rows([5], start=2)], M).decision is None


def test_decisions_drops_only_rows_that_are_not_decisions():
    plain = rows([0, 1, 2])
    assert plain.decisions() is plain
    all_marked = rows([0, 1], decision=[True, True])
    assert all_marked.decisions() is all_marked
    mixed = rows([0, 1, 2, 3], decision=[True, False, False, True], measures={"handover": [0, 1, 1, 0]})
    dec = mixed.decisions()
    assert dec.step.tolist() == [10, 13] and dec.measures["handover"].tolist() == [0, 0]
    assert dec.decision.all()


def test_info_shows_the_one_dimensional_columns_and_the_measures():
    out = rows([0, 1], decision=[True, False], measures={"blocked": [True, False], "type": [1, 0]})
    info = out.info()
    assert "wait" not in info and "service" not in info  # (M, N) per station, not shown
    assert info["decision"].tolist() == [True, False]
    assert info["blocked"].tolist() == [True, False] and info["type"].tolist() == [1, 0]
    assert info["delay"] is out.delay and info["env"].tolist() == [0, 1]
    assert "decision" not in rows([0]).info()
