"""experiments/redundancy.py: every part runs at tiny sizes and writes its JSON; the load is
the fraction of lambda*(d = 1) asked for, and d = 1 has the exact M/G/1-PS mean response; the
claim is read from the paired intervals (a hand-built case). What the script calls is tested
where it lives: evaluate and paired_difference in tests/drl_ac/evaluation/test_metrics.py,
guards, choice and deviation in test_selection.py."""

import json

import pytest

from drl_ac.evaluation.metrics import Z95


def test_quick_run_compares_learned_with_every_rule_on_the_same_arrivals(experiment, tmp_path):
    out = experiment("redundancy").main(["--quick", "--out", str(tmp_path / "r.json")])
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["verdict"] == json.loads(json.dumps(out["verdict"]))
    rows = out["rows"]
    learned = next(r for r in rows if r.get("learned"))
    rules = [r for r in rows if r.get("rule")]
    assert {r["policy"] for r in rules} >= {"d = 1", "d = 2", "d = 3", "d = 4"}
    assert len(learned["validation"]) >= 2  # snapshots (and guarded variants) were compared
    # load 0.5 of lambda*(d = 1) = N / (E[S] E[Y]) = 10: rate 5, every d stable (lambda*(4) = 6.2)
    assert all(r["rate"] == pytest.approx(5.0) for r in rows) and not any("unstable" in r for r in rows)
    # d = 1: each of the 10 PS servers an M/G/1-PS queue at load 0.5, E[T] = E[X] / (1 - 0.5) = 2
    d1 = next(r for r in rules if r["policy"] == "d = 1")
    se = (d1["ci"][1] - d1["ci"][0]) / (2 * Z95)
    assert abs(d1["mean_response"] - 2.0) < 4 * se, d1
    for r in rules:  # paired on the evaluation seed's arrivals: the same runs as the rows
        d = learned["versus"][r["policy"]]
        assert d["difference"] == pytest.approx(learned["mean_response"] - r["mean_response"])


def test_verdict_needs_no_worse_everywhere_and_better_than_every_d_somewhere(experiment):
    verdict = experiment("redundancy").verdict

    def load(at, best, vs):
        fixed = [{"policy": "d = 1", "mean_response": 2.0, "load": at},
                 {"policy": "d = 2", "mean_response": best, "load": at}]
        return fixed + [{"policy": "learned", "learned": True, "load": at, "mean_response": best,
                         "versus": {"d = 1": {"ci": vs[0]}, "d = 2": {"ci": vs[1]}}}]

    better = load(0.3, 1.0, ([-1.1, -0.9], [-0.05, -0.01]))
    tie = load(0.5, 1.0, ([-1.1, -0.9], [-0.02, 0.03]))
    worse = load(0.7, 1.0, ([-1.1, -0.9], [0.01, 0.05]))
    assert verdict(better + tie)["holds"]
    assert not verdict(tie)["holds"]                      # never better than every d
    assert not verdict(better + worse)["holds"]           # worse than the best d at 0.7
    assert verdict(better + worse)["per_load"][0.7]["no_worse"] is False
