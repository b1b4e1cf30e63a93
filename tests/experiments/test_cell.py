"""experiments/cell.py (a study preset) at the smoke budget on a small cell with a daily
profile: every cell rule is tuned and compared, the learner is calibrated to the constraint on
its own seed, voice (the higher priority, 1 PRB) is never dropped under any policy, and the
load folder holds the per-type table and the per-hour plot. What the study calls is tested
where it lives: the cell's measures (a periodic loss cell against its forward equations) in
tests/drl_ac/evaluation/test_cell_metrics.py, calibration in test_calibration.py, the study in
tests/drl_ac/study/."""

import json
import math

import torch
import yaml

TINY = {"name": "tiny_day", "eps": 0.02, "cell": {"prbs": 8, "drop": "lowest_priority", "types": [
    {"name": "data", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": [1.0, 5.0, 2.0, 0.5]}},
     "session": {"dist": "exponential", "mean": 1.0}, "gbr": 0.4, "priority": 0,
     "cqi": {"up": 1.0, "down": 1.0, "range": [7, 9], "init": [0] * 6 + [0.3, 0.4, 0.3] + [0] * 6}},
    {"name": "voice", "arrival": {"dist": "poisson", "rate": 1.5}, "session": {"dist": "exponential", "mean": 1.0},
     "prbs": 1, "priority": 1, "handover": {"dist": "poisson", "rate": 0.3}}]}}
RULES = ["accept-all", "PRB threshold", "per-type thresholds", "per-type thresholds per phase", "guard channel",
         "fractional guard channel"]


def test_the_preset_study_tunes_every_rule_calibrates_and_writes_the_cells_tables(experiment, tmp_path):
    cell = experiment("cell")
    assert cell.PRESET.scenario == "cell_5g"
    scenario, out = tmp_path / "tiny.yaml", tmp_path / "out"
    scenario.write_text(yaml.safe_dump(TINY))
    cell.main(["--scenario", str(scenario), "--budget", "smoke", "--steps", "3000", "--num-envs", "16",
               "--hidden", "16", "16", "--snapshots", "1", "--seeds", "0", "--out", str(out), "--quiet",
               "--export", "off"])
    eps = TINY["eps"]
    comparison = json.loads((out / "comparison.json").read_text())
    rows = comparison["rows"]
    assert sorted(rows) == sorted(["learned", *RULES])
    for row in rows.values():
        assert len(row["blocking_by_type_ci"]) == 2 and len(row["dropping_by_phase"]) == row["phase_bins"] == 24
        # drop: lowest_priority takes data UEs (the only ones whose demand moves) until the rest
        # fit, and the voice UEs present fitted before: a voice UE is never dropped
        assert row["dropping_by_type"][1] == 0 and row["new_ues_by_type"][1] > 0
    assert rows["accept-all"]["dropping_upper"] > eps  # control is needed here
    section = torch.load(out / "policy.pt", weights_only=True)
    calibration = section["calibration"]  # on its own (validation) seed, to the one-sided bound
    assert calibration["seed"] == 555 and calibration["target"] == eps
    assert calibration["violation_upper"] <= eps or math.isnan(calibration["violation_upper"])
    assert json.loads((out / "metrics.json").read_text())["blocking"] == rows["learned"]["blocking"]
    report = (out / "report.md").read_text()
    assert "data: blocking, dropping | voice: blocking, dropping" in report  # the cell's own table
    assert (out / "by_phase.png").stat().st_size > 5000 and (out / "study.md").exists()
