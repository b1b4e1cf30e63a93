"""One pipeline for every system: tuned rules, a learned controller, an honest steady-state
comparison with a verdict (``compare``), the steps of one run in order (``pipeline.Run``,
what ``experiments/train.py`` runs), and the study around it, loads x ``Run`` (``run``:
``StudyConfig``, ``run_study``)."""

from drl_ac.study.background import BackgroundRules, RuleRows
from drl_ac.study.compare import (
    BUDGETS,
    EVALUATION,
    FEASIBLE,
    TUNING,
    VALIDATION,
    Verdict,
    compare,
    feasible,
    guard,
    guard_candidates,
    guard_rule,
    json_rows,
    judge,
    measure,
    measure_row,
    measure_rules,
    no_interval,
    skips_steady_state,
    stability_first,
    table,
    table_cell,
    tune_rules,
    unstable_row,
)
from drl_ac.study.loads import across_loads, load_range
from drl_ac.study.pipeline import Run, RunOptions
from drl_ac.study.run import StudyConfig, at_load, reference_rate, run_study

__all__ = ["BUDGETS", "BackgroundRules", "RuleRows", "Run", "RunOptions", "EVALUATION", "TUNING", "VALIDATION", "StudyConfig", "Verdict", "at_load", "guard_rule",
           "FEASIBLE", "across_loads", "compare", "feasible", "guard", "guard_candidates", "json_rows", "judge", "load_range", "measure", "measure_row", "measure_rules", "no_interval", "reference_rate", "skips_steady_state", "stability_first", "unstable_row",
           "run_study", "table", "table_cell", "tune_rules"]
