"""Coverage of the steady-state intervals on exact cases (``drl_ac.evaluation.coverage``).

The slow test runs every case on 40 seeds: its 95% interval must cover the exact value on at
least 90% of them and the seeds' mean lie within 2 of its standard errors of it (a low bias
fails the second check long before the first)::

    python -m pytest -m slow tests/drl_ac/evaluation/test_coverage.py

The others check the verdict's arithmetic and the runner's bookkeeping on tiny runs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from drl_ac.evaluation import coverage
from drl_ac.study import BUDGETS
from envs.queueing import mmc_mean_sojourn


def record(seed: int, estimate: float, covered: bool, case: str = "mm1_0.95", exact: float = 20.0) -> dict:
    return {"case": case, "seed": seed, "exact": exact, "mean_delay": estimate, "covered": covered}


def test_the_verdict_counts_coverage_and_bias():
    rs = [record(s, 20.0 + (0.5 if s % 2 else -0.5), covered=s != 3) for s in range(10)]
    v = coverage.judge(rs)
    assert (v.seeds, v.covered, v.mean) == (10, 9, 20.0)
    assert v.se == pytest.approx(np.std([19.5, 20.5] * 5, ddof=1) / math.sqrt(10))
    assert v.covers and v.unbiased and v.passes  # 9 of 10 is 90%
    low = coverage.judge([record(s, 19.0 + 0.1 * (s % 2), covered=True) for s in range(10)])
    assert low.covers and not low.unbiased and not low.passes  # every interval covers, all on one side: a bias
    assert not coverage.judge([record(s, 20.0 + s % 2, covered=s > 1) for s in range(10)]).covers  # 8 of 10
    assert "fails" in low.describe() and "8 of 10" in coverage.judge(
        [record(s, 20.0 + s % 2, covered=s > 1) for s in range(10)]).describe()


def test_the_verdict_refuses_mixed_cases_and_one_seed():
    with pytest.raises(ValueError, match="one case"):
        coverage.judge([record(0, 1.0, True), record(1, 1.0, True, case="mm3_0.95")])
    with pytest.raises(ValueError, match="two seeds"):
        coverage.judge([record(0, 1.0, True), record(0, 2.0, True)])  # the same seed twice counts once


def test_an_unknown_case_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown coverage case 'mm9'.*'mm1_0.95'"):
        coverage.run("mm9", seeds=2)


def test_the_cases_hold_their_exact_values_and_budgets():
    assert coverage.CASES["mm1_0.95"].exact == pytest.approx(20.0)
    assert coverage.CASES["redundancy_d1_0.9"].exact == pytest.approx(10.0)
    assert coverage.CASES["pools_replication_0.9436"].exact == pytest.approx(1 / (1 - 0.9436))
    assert coverage.CASES["mm3_0.95"].exact == pytest.approx(mmc_mean_sojourn(3, 2.85, 1.0))
    assert coverage.CASES["redundancy_d1_0.9"].options == BUDGETS["quick"]["evaluation"]  # what a comparison runs
    spec = coverage.CASES["redundancy_d1_0.95"].spec()
    assert spec.arrival_rate == pytest.approx(9.5) and spec.num_stations == 10


def test_a_rerun_reads_the_seeds_already_run(tmp_path, monkeypatch):
    """Real tiny runs (M/M/1 at 0.95, 400 decisions: far too short, so not stationary and no
    seed covers), appended to ``out``; a rerun with the same options runs only the new seeds,
    one with other options runs them all again."""
    out, tiny = tmp_path / "c.jsonl", {"max_steps": 400, "min_steps": 400}
    first = coverage.run("mm1_0.95", seeds=2, out=out, options=tiny)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["seed"] for r in lines] == [1000, 1001] and first.seeds == 2
    assert all(not r["stationary"] and not r["covered"] for r in lines) and first.covered == 0 and not first.passes
    assert lines[0]["options"] == {**coverage.OPTIONS, **tiny}
    ran = []
    real = coverage.run_seed
    monkeypatch.setattr(coverage, "run_seed", lambda job: ran.append(job["seed"]) or real(job))
    again = coverage.run("mm1_0.95", seeds=3, out=out, options=tiny)
    assert ran == [1002] and again.seeds == 3 and again.mean == pytest.approx(
        np.mean([r["mean_delay"] for r in lines] + [json.loads(out.read_text().splitlines()[-1])["mean_delay"]]))
    ran.clear()
    coverage.run("mm1_0.95", seeds=2, out=out, options={"max_steps": 500, "min_steps": 500})
    assert ran == [1000, 1001] and len(out.read_text().splitlines()) == 5


@pytest.mark.slow
@pytest.mark.parametrize("case", list(coverage.CASES))
def test_the_intervals_cover_the_exact_mean_response(case):
    verdict = coverage.run(case)
    assert verdict.passes, verdict.describe()


def test_a_rerun_skips_broken_lines_and_records_of_another_exact_value(tmp_path):
    """A line cut short by a stopped run is skipped, not fatal; a record whose exact value is
    not the case's today (a case redefined) is not reused."""
    out, options = tmp_path / "c.jsonl", coverage.CASES["mm1_0.95"].options
    good = {**record(1000, 20.1, True, exact=coverage.CASES["mm1_0.95"].exact), "options": options}
    stale = {**record(1001, 20.1, True, exact=19.0), "options": options}
    out.write_text(json.dumps(good) + "\n" + json.dumps(stale) + "\n" + '{"case": "mm1_0.95", "se')
    assert [r["seed"] for r in coverage.read(out, "mm1_0.95", options)] == [1000]


def test_the_shipped_record_of_the_long_case_passes():
    """docs/coverage.jsonl holds the 40 seeds of redundancy d = 1 at load 0.95 (hours of
    simulation, run with experiments/coverage.py over several sittings): read as a rerun would
    read them (a record of another exact value or other options is not theirs), they pass."""
    from pathlib import Path

    name = "redundancy_d1_0.95"
    shipped = Path(__file__).resolve().parents[3] / "docs" / "coverage.jsonl"
    records = coverage.read(shipped, name, coverage.case_named(name).options)
    assert sorted(r["seed"] for r in records) == list(range(1000, 1040))
    verdict = coverage.judge(records)
    assert verdict.passes, verdict.describe()
