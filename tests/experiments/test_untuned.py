"""experiments/untuned.py's table (its command runs in tests/test_docs.py): every verdict
prints, those without an interval too, and the tally counts each outcome once; a count
below one is refused before anything runs."""

import pytest


def verdict(outcome: str, diff: float | None, reason: str | None = None) -> dict:
    return {"outcome": outcome, "learned": 0.9, "best_rule": None if diff is None else "total threshold",
            "best": None if diff is None else 0.9 - diff, "reason": reason,
            "difference": None if diff is None else {"difference": diff, "ci": [diff - 0.01, diff + 0.01]}}


def test_the_table_prints_every_verdict_and_counts_them(experiment):
    untuned = experiment("untuned")
    results = [{"seed": s, "network": "n", "learned_violation": 0.1, "verdict": v}
               for s, v in enumerate([verdict("better", 0.02), verdict("worse", -0.01), verdict("no worse", 0.0),
                                      verdict("undecided", None, "no steady state")])]
    lines = untuned.table(results)
    assert len(lines) == 2 + 4 + 2
    assert "+0.0200 [+0.0100, +0.0300] | better |" in lines[2]
    assert lines[5].endswith("| - | - | undecided (no steady state) |")
    assert lines[-1] == "learned better on 1 of 4, no worse on 1, worse on 1, undecided on 1"


def test_no_networks_is_refused_before_anything_runs(experiment, tmp_path, capsys):
    untuned = experiment("untuned")
    with pytest.raises(SystemExit):
        untuned.main(["--networks", "0", "--out", str(tmp_path)])
    assert "--networks must be >= 1" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())

