"""experiments/cell.py at tiny sizes on a small cell with a daily profile: every part runs and
writes its files, the tuned rules and the chosen learner keep dropping <= eps with their margin
on their own seeds, the verdict follows from the rows, and a saved policy evaluates the same."""

import json
import math

import yaml

TINY = {"name": "tiny_day", "eps": 0.02, "cell": {"prbs": 8, "drop": "lowest_priority", "types": [
    {"name": "data", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": [1.0, 5.0, 2.0, 0.5]}},
     "session": {"dist": "exponential", "mean": 1.0}, "gbr": 0.4, "priority": 0,
     "cqi": {"up": 1.0, "down": 1.0, "range": [7, 9], "init": [0] * 6 + [0.3, 0.4, 0.3] + [0] * 6}},
    {"name": "voice", "arrival": {"dist": "poisson", "rate": 1.5}, "session": {"dist": "exponential", "mean": 1.0},
     "prbs": 1, "priority": 1, "handover": {"dist": "poisson", "rate": 0.3}}]}}


def test_quick_run_tunes_trains_evaluates_and_judges(experiment, tmp_path):
    cell = experiment("cell")
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(yaml.safe_dump(TINY))
    out = cell.main(["--quick", "--quiet", "--scenario", str(scenario), "--out", str(tmp_path / "out")])
    eps = TINY["eps"]
    assert not out["errors"], out["errors"]
    saved = json.loads((tmp_path / "out" / "cell.json").read_text())
    assert saved["verdict"] == json.loads(json.dumps(out["verdict"]))
    rows = out["rows"]
    assert list(rows) == ["accept-all", *cell.STATIC, cell.PER_HOUR, cell.LEARNED]
    for row in rows.values():
        assert len(row["blocking_by_type_ci"]) == 2 and len(row["dropping_by_phase"]) == row["phase_bins"] == 24
        assert row["blocking_ci"][0] <= row["blocking"] <= row["blocking_ci"][1]
    assert rows["accept-all"]["dropping_upper"] > eps  # control is needed here
    for name, rule in out["rules"].items():  # tuned with the margin, on the tuning seed
        assert rule["tuning"]["dropping_upper"] <= eps, name
    (learner,) = out["learners"]
    assert out["chosen"]["seed"] == learner["seed"] == 0 and learner["validation"]["dropping_upper"] <= eps
    verdict = out["verdict"]
    meeting = {n: rows[n] for n in cell.STATIC if rows[n]["dropping"] <= eps}
    best = min(meeting, key=lambda n: meeting[n]["blocking"])
    assert verdict["best_static"] == best and sorted(meeting) == verdict["static_meeting_eps"]
    apart = rows["learned"]["blocking_ci"][1] < rows[best]["blocking_ci"][0]
    assert verdict["holds"] == (apart and rows["learned"]["dropping"] <= eps)
    assert verdict["per_hour"]["blocking"] == rows[cell.PER_HOUR]["blocking"]
    for key in ("blocking", "dropping"):
        assert (tmp_path / "out" / f"cell_{key}.png").stat().st_size > 5000
    folder = tmp_path / "out" / "policy"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["blocking"] == rows["learned"]["blocking"] and math.isfinite(metrics["bias"])
    # --policy evaluates a saved policy in the same place: the same rows
    again = cell.final_evaluation(str(scenario), None, str(folder / "policy.pt"), 6000, 60)
    assert again["blocking"] == rows["learned"]["blocking"] and again["dropping"] == rows["learned"]["dropping"]
