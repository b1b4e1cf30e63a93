"""experiments/cell.py at tiny sizes on a small cell with a daily profile: every part runs and
writes its files, the tuned rules and the chosen learner keep dropping <= eps with their margin
on their own seeds, voice (the higher priority, 1 PRB) is never dropped under any policy, and
a saved policy evaluates the same; the verdict on hand-built rows. What the script calls is
tested where it lives: evaluate's cell measures (a periodic loss cell against its forward
equations) in tests/drl_ac/evaluation/test_cell_metrics.py, calibration in test_calibration.py."""

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
        # drop: lowest_priority takes data UEs (the only ones whose demand moves) until the rest
        # fit, and the voice UEs present fitted before: a voice UE is never dropped
        assert row["dropping_by_type"][1] == 0 and row["new_ues_by_type"][1] > 0
    assert rows["accept-all"]["dropping_upper"] > eps  # control is needed here
    for name, rule in out["rules"].items():  # tuned with the margin, on the tuning seed
        assert rule["tuning"]["dropping_upper"] <= eps, name
    (learner,) = out["learners"]
    # the quick run trains for one second of wall time: on a loaded machine the learner may
    # still block every new UE, and then none is dropped (NaN: the constraint holds)
    upper, blocking = learner["validation"]["dropping_upper"], learner["validation"]["blocking"]
    assert out["chosen"]["seed"] == learner["seed"] == 0
    assert upper <= eps or (math.isnan(upper) and blocking == 1.0), (upper, blocking)
    verdict = out["verdict"]
    assert verdict["eps"] == eps and verdict["per_hour"]["blocking"] == rows[cell.PER_HOUR]["blocking"]
    for key in ("blocking", "dropping"):
        assert (tmp_path / "out" / f"cell_{key}.png").stat().st_size > 5000
    folder = tmp_path / "out" / "policy"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["blocking"] == rows["learned"]["blocking"] and math.isfinite(metrics["bias"])
    # --policy evaluates a saved policy in the same place: the same rows
    again = cell.final_evaluation(str(scenario), None, str(folder / "policy.pt"), 6000, 60)
    assert again["blocking"] == rows["learned"]["blocking"] and again["dropping"] == rows["learned"]["dropping"]


def rule(blocking, ci, dropping):
    return {"blocking": blocking, "blocking_ci": ci, "dropping": dropping}


def test_verdict_on_hand_built_rows(experiment):
    cell = experiment("cell")
    verdict = cell.verdict
    eps = 0.02
    # of the static rules, PRB threshold and guard channel meet eps (0.02 itself meets it);
    # per-type thresholds block least but drop too much, fractional guard was never measured
    static = {"PRB threshold": rule(0.30, [0.28, 0.32], 0.01), "per-type thresholds": rule(0.10, [0.09, 0.11], 0.03),
              "guard channel": rule(0.25, [0.24, 0.26], 0.02),
              "fractional guard channel": rule(0.05, [0.04, 0.06], float("nan"))}
    hour = {cell.PER_HOUR: rule(0.22, [0.215, 0.225], 0.01)}
    apart = verdict({**static, **hour, cell.LEARNED: rule(0.20, [0.19, 0.21], 0.015)}, eps)
    assert apart["static_meeting_eps"] == ["PRB threshold", "guard channel"]
    assert apart["best_static"] == "guard channel" and apart["best_static_blocking"] == 0.25
    assert apart["intervals_apart"] and apart["learned_meets_eps"] and apart["holds"] is True
    assert apart["per_hour"]["learned_vs_per_hour"] == "learned lower, intervals apart"
    assert apart["per_hour"]["meets_eps"] is True
    overlap = verdict({**static, cell.LEARNED: rule(0.23, [0.215, 0.245], 0.015)}, eps)
    assert not overlap["intervals_apart"] and overlap["holds"] is False and "per_hour" not in overlap
    dropping = verdict({**static, cell.LEARNED: rule(0.20, [0.19, 0.21], 0.021)}, eps)
    assert dropping["intervals_apart"] and dropping["holds"] is False  # lower blocking by dropping more
    hour_lower = verdict({**static, **hour, cell.LEARNED: rule(0.24, [0.235, 0.245], 0.015)}, eps)
    assert hour_lower["per_hour"]["learned_vs_per_hour"] == "per-hour rule lower, intervals apart"
    none_meet = {n: {**r, "dropping": 0.05} for n, r in static.items()}
    assert verdict({**none_meet, cell.LEARNED: rule(0.2, [0.19, 0.21], 0.01)}, eps) == \
        {"eps": eps, "static_meeting_eps": [], "holds": None, "why": "no static rule meets eps"}
    assert verdict(static, eps)["why"] == "no learned policy evaluated"
