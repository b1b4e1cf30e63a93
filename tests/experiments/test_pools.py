"""experiments/pools.py and pools_control.py, small: every part runs and writes its files;
the measured busy fractions agree with the formula where it is exact, the simulated limit of
'none' (two M/M/1 queues) is near the formula's bound, and full replication has the mean
response of the M/M/1 queue it is. What the scripts call is tested where it lives: evaluate
and paired_difference in tests/drl_ac/evaluation/test_metrics.py, guards, choice and
deviation in test_selection.py."""

import json

from drl_ac.evaluation.metrics import Z95


def test_quick_run_writes_tables_and_the_figure(experiment, tmp_path):
    pools = experiment("pools")
    out = pools.main(["--quick", "--policies", "none", "full replication", "--out", str(tmp_path)])
    assert (tmp_path / "latency_vs_tau.png").stat().st_size > 1000
    assert json.loads((tmp_path / "pools.json").read_text()).keys() == {"loads", "stability", "curves"}
    for row in out["loads"]:
        assert max(row["z"]) < 4, row
    none = next(r for r in out["stability"] if r["policy"] == "none")
    assert 0.75 < none["simulated"] / none["formula"] < 1.3  # 3 bisection steps: a coarse bracket
    assert len(out["curves"]) == 2 and all(len(c["mean"]) == 3 for c in out["curves"])


def test_control_comparison_runs_and_reports_every_policy(experiment, tmp_path):
    control = experiment("pools_control")
    out = control.main(["--quick", "--out", str(tmp_path / "control.json")])
    saved = json.loads((tmp_path / "control.json").read_text())
    assert saved["verdict"] == json.loads(json.dumps(out["verdict"]))
    bounds = out["bounds"]
    assert abs(bounds["none"]["bound"] - 1 / 1.4) < 1e-9  # two M/M/1 queues: 0.8 + 0.2 x 10 slow = 1.4 per job
    assert bounds["threshold"]["policy"] == "reroute"  # replicate's simulated limit is far below 0.99
    rows = out["rows"]
    assert [r["policy"].split()[0] for r in rows] == ["none", "full", "threshold:", "learned"] and rows[3]["learned"]
    # full replication: both servers start each job together and the fast copy ends it after
    # X ~ Exp(1) (size kept, speed 1 on one pool): an M/M/1 queue, E[T] = 1 / (1 - lam)
    full = rows[1]
    se = (full["ci"][1] - full["ci"][0]) / (2 * Z95)
    assert abs(full["mean_response"] - 1 / (1 - full["rate"])) < 4 * se, full
    assert abs(bounds["full replication"]["bound"] - 1.0) < 1e-9  # mu of that M/M/1 queue
    tuned = rows[2]
    assert tuned["tuned"] and "unstable" not in tuned
    assert set(out["verdict"]["per_load"]) == {0.5}
    learned = rows[3]
    assert learned["default"] in learned["actions"]
    for r in rows[:3]:  # paired on the evaluation seed's arrivals: the same runs as the rows
        if "unstable" not in r and "unstable" not in learned:
            d = learned["versus"][r["policy"]]
            assert abs(d["difference"] - (learned["mean_response"] - r["mean_response"])) < 1e-9
