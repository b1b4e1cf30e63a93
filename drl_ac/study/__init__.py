"""One pipeline for every system: tuned rules, a learned controller, an honest steady-state
comparison with a verdict (``compare``), and the study around it."""

from drl_ac.study.compare import (
    BUDGETS,
    EVALUATION,
    TUNING,
    VALIDATION,
    Verdict,
    best_constant,
    compare,
    feasible,
    guard,
    json_rows,
    judge,
    measure,
    table,
    tune_rules,
)

__all__ = ["BUDGETS", "EVALUATION", "TUNING", "VALIDATION", "Verdict", "best_constant", "compare", "feasible",
           "guard", "json_rows", "judge", "measure", "table", "tune_rules"]
