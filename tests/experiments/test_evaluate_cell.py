"""experiments/evaluate.py --baselines on a cell: every cell rule tuned and tabulated (tiny
budgets: a smoke test of the wiring, not of the rules' quality)."""

import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))

from evaluate import cell_baseline_rows, format_cell_table  # noqa: E402

from envs import NetworkSpec  # noqa: E402


def test_cell_baselines_table():
    spec = NetworkSpec.from_dict({"name": "day", "eps": 0.05, "cell": {"prbs": 6, "drop": "grown", "types": [
        {"name": "a", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": [2.0, 5.0]}},
         "session": {"dist": "exponential", "mean": 1.0}, "gbr": 0.4,
         "cqi": {"up": 1.0, "down": 1.0, "range": [8, 9], "init": [0] * 7 + [0.5, 0.5] + [0] * 6}},
        {"name": "b", "arrival": {"dist": "poisson", "rate": 1.0}, "session": {"dist": "exponential", "mean": 1.0},
         "prbs": 1}]}})
    args = types.SimpleNamespace(tune_arrivals=5000, arrivals=5000, quiet=True, cell_measure="dropping")
    rows = cell_baseline_rows(spec, args, {"arrivals": 5000, "seed": 1, "num_envs": 50}, lambda text: None)
    assert [r["policy"] for r in rows] == ["accept-all", "PRB threshold", "per-type thresholds", "guard channel",
                                           "fractional guard channel", "per-type thresholds per phase"]
    assert all(len(r["blocking_by_type"]) == 2 and len(r["dropping_by_phase"]) == 24 for r in rows)
    assert rows[0]["dropping"] > spec.eps > rows[1]["dropping"]  # accept-all drops too much here
    table = format_cell_table(rows, spec)
    assert "| PRB threshold | PRBs < " in table and "a: blocking, dropping" in table
