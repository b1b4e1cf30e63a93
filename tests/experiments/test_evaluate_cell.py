"""experiments/evaluate.py --baselines on a cell: every cell rule tuned, compared by the study
and tabulated per UE type (tiny budgets: a smoke test of the wiring, not of the rules' quality)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))

from drl_ac import study  # noqa: E402
from envs import NetworkSpec  # noqa: E402
from envs.systems.cell.measures import table as format_cell_table  # noqa: E402
from envs.systems.cell.rules import CellAcceptAll, cell_layout  # noqa: E402


def test_cell_baselines_table():
    spec = NetworkSpec.from_dict({"name": "day", "eps": 0.05, "cell": {"prbs": 6, "drop": "grown", "types": [
        {"name": "a", "arrival": {"dist": "poisson", "profile": {"period": 40.0, "table": [2.0, 5.0]}},
         "session": {"dist": "exponential", "mean": 1.0}, "gbr": 0.4,
         "cqi": {"up": 1.0, "down": 1.0, "range": [8, 9], "init": [0] * 7 + [0.5, 0.5] + [0] * 6}},
        {"name": "b", "arrival": {"dist": "poisson", "rate": 1.0}, "session": {"dist": "exponential", "mean": 1.0},
         "prbs": 1}]}})
    rows, verdict = study.compare(CellAcceptAll(cell_layout(spec)), spec, seed=1, budget="smoke")
    assert list(rows) == ["learned", "accept-all", "PRB threshold", "per-type thresholds",
                          "per-type thresholds per phase", "guard channel", "fractional guard channel"]
    assert all(len(r["blocking_by_type"]) == 2 and len(r["dropping_by_phase"]) == 24 for r in rows.values())
    assert rows["learned"]["dropping"] > spec.eps > rows["PRB threshold"]["dropping"]  # accept-all drops too much
    assert verdict.outcome == "worse" and not verdict.learned_feasible  # accept-all breaks the constraint
    table = format_cell_table([{"policy": k, **v} for k, v in rows.items()], spec)
    assert "| PRB threshold | PRBs < " in table and "a: blocking, dropping" in table
