"""One comparison for every system: the learned controller against the best tuned rule, in
steady state, with stability verdicts and paired intervals, judged on the system's headline.

The path (the same for a network, a cell, redundancy-d and two pools):

1. ``drl_ac.rules.tune`` tunes every rule family of the system on the *tuning* seed;
2. ``measure`` evaluates each policy on the *evaluation* seed in steady state
   (``drl_ac.evaluation.steady``: every policy on the same instances and arrivals, so pairs of
   policies are compared on common random numbers) and gives it a stability verdict;
3. ``judge`` finds the best rule that is feasible (its constraint, e.g. violation <= eps, not
   significantly exceeded) and stable, and says whether the learned controller is
   ``better`` (the paired 95% interval of the difference on the headline is entirely on
   the good side), ``no worse`` (it contains 0) or ``worse``; a learned controller that is
   unstable, overloaded or significantly above eps (``FEASIBLE``, the test every row takes)
   is ``worse`` whatever its headline, and one whose run reached no steady state within the
   budget is ``undecided``.

Seeds: a run with seed s tunes on s + TUNING, chooses among learned candidates on
s + VALIDATION and compares on s + EVALUATION (``drl_ac.evaluation.selection``), so the
numbers that decide are never those a choice was made on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from drl_ac import rules
from drl_ac.checkpoint import LoadedPolicy, policy_encoding
from drl_ac.evaluation.metrics import Z95, Z95_ONE_SIDED, paired_difference, replay, undefined
from drl_ac.evaluation.selection import (
    EVALUATION,
    TUNING,
    VALIDATION,
    Candidate,
    choose,
    guarded,
    visited_states,
)
from drl_ac.evaluation.steady import Stability, stability, steady_state
from drl_ac.rules.tuning import TuningResult
from envs import NetworkSpec
from envs.observation import ObservationEncoding
from envs.rollout import WARMUP_RELAXATIONS

Policy = Callable[[np.ndarray], np.ndarray]
# How much a comparison may spend: "quick" ends a default training run (a minute or two on 2
# cores), "full" is a study's, "smoke" checks the wiring in seconds and decides nothing.
# "evaluation": options of steady_state; "stability": of stability. A system's tuner has its
# own budgets (``BUDGETS`` of its rules module, ``rule_budget``). Long runs: the warm-up each
# instance needs grows with the relaxation time (5 of them, in the first half of the run: at
# load 0.9 on redundancy_ps about 30,000 decisions of warm-up; quick's former 16,000 decisions
# per instance read that load as no steady state, and 64,000 left a quarter of the runs
# unsettled), and instances are nearly free beside a step's fixed cost (32 instances took 0.53
# ms a step there, 128 about 0.8) while their number is what makes the interval's normal
# approximation hold (32 instances covered the exact value in 25 of 40 runs).
BUDGETS: dict[str, dict[str, dict]] = {
    "smoke": {"evaluation": {"num_envs": 8, "min_steps": 200, "max_steps": 200, "chunk": 50, "rel_se": 1.0},
              "stability": {"num_envs": 8, "build_steps": 100, "steps": 200, "doublings": 0}},
    "quick": {"evaluation": {"num_envs": 128, "min_steps": 1_000, "max_steps": 128_000, "rel_se": 0.01},
              "stability": {"num_envs": 16, "build_steps": 1_000, "steps": 2_000}},
    "full": {"evaluation": {"num_envs": 256, "min_steps": 2_000, "max_steps": 256_000, "rel_se": 0.01},
             "stability": {"num_envs": 64, "build_steps": 2_000, "steps": 4_000}},
}



def measure(policy: Policy, spec: NetworkSpec, seed: int, budget: str = "quick") -> dict:
    """``policy``'s steady-state measures on ``seed`` (per-instance sums kept for pairing) and
    its stability verdict under ``stability``. A randomised policy (one with ``reset``) replays
    its uniforms in each, so measuring it again repeats its figures exactly.

    The stability test runs first: a policy it finds unstable on a control system is not run to
    a steady state (``skips_steady_state``); its row says so, with no measures (``undefined``)."""
    options = _budget(budget)
    verdict = stability_first(policy, spec, seed + 1, budget)
    unstable = unstable_row(verdict, spec, budget, options["evaluation"]["num_envs"])
    if unstable is not None:
        return unstable
    m = steady_state(policy, spec, seed=seed, per_instance=True, **options["evaluation"])
    if not m["stationary"] and not m.get("overloaded") and "unstable" not in m:
        longer = [b for b, o in BUDGETS.items() if o["evaluation"]["max_steps"] > options["evaluation"]["max_steps"]]
        then = (f"budget {longer[0]} runs up to {BUDGETS[longer[0]]['evaluation']['max_steps']:,}" if longer
                else "no budget here runs longer: steady_state(max_steps=...) does")
        m["not_stationary"] = (f"no steady state within {options['evaluation']['max_steps']:,} decisions per "
                               f"instance (budget {budget}): it needs at least {m['steps_needed']:,} (a warm-up of "
                               f"{WARMUP_RELAXATIONS:g} relaxation times in the first half); {then}")
    m["stability"] = verdict.to_dict()
    return m


def stability_first(policy: Policy, spec: NetworkSpec, seed: int, budget: str) -> Stability:
    """``policy``'s stability verdict at ``budget`` on ``seed``, its uniforms replayed first (a
    randomised policy), run before its steady state so that ``skips_steady_state`` can spare it."""
    replay(policy)
    return stability(policy, spec, seed=seed, **_budget(budget)["stability"])


def skips_steady_state(verdict: Stability, spec: NetworkSpec, budget: str) -> bool:
    """Whether a policy with stability ``verdict`` is not run to a steady state: on a control
    system (no overload score: ``System.hopeless_backlog`` None) an unstable policy's run only
    grows its backlog, each step dearer, until the job table's bound stops it (pools' action 0
    took 30 minutes at the quick budget; the greedy network of a pools learner 6 in the guard).
    Not at the smoke budget, whose stability test is too short to decide (a fresh PS backlog's
    make-up alone reads as growth there) and whose steady-state run is short anyway."""
    return verdict.verdict == "unstable" and spec.system.hopeless_backlog() is None and budget != "smoke"


def unstable_row(verdict: Stability, spec: NetworkSpec, budget: str, num_envs: int) -> dict | None:
    """The row of a policy that ``skips_steady_state``: no measures (``undefined``), ``unstable``
    saying why, and its ``stability``; None for a policy to run."""
    if not skips_steady_state(verdict, spec, budget):
        return None
    return {**undefined(num_envs, unstable=verdict.describe()), "stability": verdict.to_dict()}


def rule_budget(spec: NetworkSpec, budget: str) -> dict[str, Any]:
    """The options of ``spec``'s system's tuner at ``budget`` (its rules module's ``BUDGETS``)."""
    _budget(budget)
    return rules.rules_of(spec).BUDGETS[budget]


def _budget(name: str) -> dict[str, dict]:
    if name not in BUDGETS:
        raise ValueError(f"budget: unknown {name!r}. Fix: use one of {', '.join(BUDGETS)}.")
    return BUDGETS[name]


def _se(m: dict, key: str) -> float:
    if f"{key}_se" in m:
        return float(m[f"{key}_se"])
    lo, hi = m[f"{key}_ci"]
    return (hi - lo) / (2 * Z95)


FEASIBLE = ("tuned (a rule) or calibrated (the learned) to a one-sided 95% upper bound <= eps on its own seed; "
            "feasible here unless significantly above eps (one-sided 95% lower bound > eps)")


def feasible(m: dict, spec: NetworkSpec) -> bool:
    """The headline's constraint on a comparison's seed, one test for every policy (``FEASIBLE``):
    each reached eps the same way on its own seed, so here it passes unless significantly above
    eps (its one-sided 95% lower bound <= eps). A stricter test for one side only would decide
    verdicts by itself where both spend the budget alike. No constraint: always."""
    key = spec.system.headline.constraint
    if key is None:
        return True
    value = m[key]
    if math.isnan(value):  # nothing admitted: nothing violated
        return True
    return value - Z95_ONE_SIDED * _se(m, key) <= spec.eps


def _usable(m: dict) -> bool:
    return m.get("stationary", True) and m["stability"]["verdict"] in ("stable", "loss system")


def difference(a: dict, b: dict, measure_key: str) -> dict:
    """``a`` minus ``b`` on ``measure_key``: paired over instances where both runs kept their
    per-instance sums of that ratio (common random numbers), else with independent standard errors
    (a conservative interval: the runs share their seed, so their errors correlate positively)."""
    try:
        return {**paired_difference(a, b, measure_key), "paired": True}
    except (KeyError, TypeError):
        diff, se = float(a[measure_key] - b[measure_key]), math.hypot(_se(a, measure_key), _se(b, measure_key))
        return {"difference": diff, "se": se, "ci": [diff - Z95 * se, diff + Z95 * se], "paired": False}


@dataclass(frozen=True)
class Verdict:
    """``outcome``: ``better``, ``no worse``, ``worse``, ``no comparator`` (no rule is feasible
    and stable) or ``undecided`` (the learned run reached no steady state within the budget and
    was not found unstable: its mean is a transient's; or its stability test from a backlog
    decided neither way: so nothing is claimed; ``reason`` says why and what would decide);
    ``difference``: learned minus the best rule on the headline, with
    its 95% interval (``paired``: over instance pairs)."""

    outcome: str
    headline: str
    best_rule: str | None
    learned: float
    best: float | None
    difference: dict | None
    learned_feasible: bool
    learned_stable: bool  # stationary within the budget and stable from a backlog
    reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        if self.outcome == "undecided":
            return f"verdict: undecided, no interval: {self.reason}"
        if self.difference is None and self.reason:
            return f"verdict: learned {self.outcome}, no interval: {self.reason}"
        if self.best_rule is None:
            return f"verdict: no tuned rule is feasible and stable; learned {self.headline} {self.learned:.4f}"
        d = self.difference
        why = "" if self.learned_feasible and self.learned_stable else \
            f" ({'unstable or not stationary' if not self.learned_stable else 'significantly above eps'})"
        return (f"verdict: learned {self.outcome}{why} than the best tuned rule ({self.best_rule}): {self.headline} "
                f"{self.learned:.4f} vs {self.best:.4f}, difference {d['difference']:+.4f} "
                f"[{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}] (95%{', paired' if d['paired'] else ''})")


def judge(spec: NetworkSpec, learned: dict, rows: dict[str, dict]) -> Verdict:
    """The learned controller's metrics against every rule's (``measure`` results on the same seed)."""
    head = spec.system.headline
    sign = 1.0 if head.sense == "max" else -1.0
    ok = {name: m for name, m in rows.items() if "unstable" not in m and _usable(m) and feasible(m, spec)}
    l_feasible, l_stable = feasible(learned, spec), _usable(learned)
    if learned.get("overloaded"):  # scored violation 1: infeasible, a decision
        l_feasible = False
    elif "unstable" in learned and not learned.get("arrivals"):  # no measures: unstable, a decision
        best = max(ok, key=lambda name: sign * ok[name][head.measure]) if ok else None
        return Verdict("worse", head.measure, best, learned[head.measure], None if best is None else
                       ok[best][head.measure], None, l_feasible, False, f"the learned policy is {learned['unstable']}")
    elif not learned.get("stationary", True) and learned["stability"]["verdict"] != "unstable":
        return Verdict("undecided", head.measure, None, learned[head.measure], None, None, l_feasible, l_stable,
                       learned.get("not_stationary", "the learned policy's run reached no steady state"))
    elif learned["stability"]["verdict"] == "undecided":  # neither unstable nor shown stable: not "worse"
        s = learned["stability"]
        drift = f" (drift {s['drift']:+.4f} +- {s['drift_se']:.4f} jobs per unit time)" if "drift" in s else ""
        return Verdict("undecided", head.measure, None, learned[head.measure], None, None, l_feasible, l_stable,
                       f"the learned policy's stability test from a backlog decided neither way{drift}; a longer "
                       "test (a larger budget) decides")
    if not ok:
        return Verdict("no comparator", head.measure, None, learned[head.measure], None, None, l_feasible, l_stable)
    best = max(ok, key=lambda name: sign * ok[name][head.measure])
    d = difference(learned, ok[best], head.measure)
    lo, hi = sorted(sign * x for x in d["ci"])
    outcome = "better" if lo > 0 else ("worse" if hi < 0 else "no worse")
    if not (l_feasible and l_stable):
        outcome = "worse"
    return Verdict(outcome, head.measure, best, learned[head.measure], ok[best][head.measure], d, l_feasible,
                   l_stable)


def tune_rules(spec: NetworkSpec, seed: int = 0, budget: str = "quick", progress: Callable[[str], None] = lambda s: None,
               **tuning: Any) -> dict[str, TuningResult]:
    """Every rule of the system tuned on seed + TUNING with ``budget`` (``tuning``: options of
    the system's tuner replacing the budget's)."""
    progress(f"tuning the rules of {spec.name} ({budget})")
    options = {**rule_budget(spec, budget), **tuning}
    return rules.tune(spec, seed=seed + TUNING, progress=lambda s: progress("  " + s), **options)


def measure_rules(tuned: dict[str, TuningResult], spec: NetworkSpec, seed: int = 0, budget: str = "quick",
                  progress: Callable[[str], None] = lambda s: None) -> dict[str, dict]:
    """Every tuned rule measured on seed + EVALUATION (``measure_row``)."""
    rows = {}
    for name, result in tuned.items():
        rows[name] = measure_row(result, spec, seed, budget)
        progress(f"{name}: {table_cell(rows[name], spec)}")
    return rows


def measure_row(result: TuningResult, spec: NetworkSpec, seed: int = 0, budget: str = "quick") -> dict:
    """A tuned rule's row on seed + EVALUATION (``measure``; a rule unstable by theory is not
    simulated), with its ``rule`` description."""
    if "unstable" in result.metrics and "arrivals" not in result.metrics:  # unstable by theory
        return {"rule": result.rule.describe(), **result.metrics}
    return {"rule": result.rule.describe(), **measure(result.rule, spec, seed + EVALUATION, budget)}


def guard_rule(spec: NetworkSpec, tuned: dict[str, TuningResult], encoding: ObservationEncoding) -> Any | None:
    """The best tuned rule that can guard a learned policy (it has ``guard_fields``: a constant
    action, a load or own-server threshold, the signalled pool; stationary and feasible on the tuning seed)
    and reads the policy's observations (``encoding``: the rules' own, perhaps with an arrival-rate
    estimate after them, which the rule then skips: ``reading``), or None."""
    if replace(encoding, rate=False) != ObservationEncoding.for_spec(spec):
        return None
    best = best_tuned({f: r for f, r in tuned.items() if hasattr(r.rule, "guard_fields")}, spec)
    return None if best is None else reading(best.rule, encoding)


def best_tuned(tuned: dict[str, TuningResult], spec: NetworkSpec) -> TuningResult | None:
    """The best rule of ``tuned`` on its tuning seed among those measured there, stable and
    meeting the constraint (the one a comparison is expected to pick), or None."""
    head = spec.system.headline
    sign = 1.0 if head.sense == "max" else -1.0
    ok = [r for r in tuned.values() if "arrivals" in r.metrics and "unstable" not in r.metrics
          and math.isfinite(r.metrics[head.measure]) and feasible(r.metrics, spec)]
    return max(ok, key=lambda r: sign * r.metrics[head.measure]) if ok else None


def reading(rule: Any, encoding: ObservationEncoding) -> Any:
    """``rule`` acting on observations in a learned policy's ``encoding``: itself, or where the
    policy observes an arrival-rate estimate after the rule's features, ``LeadingColumns``."""
    if encoding.rule_columns is None or isinstance(rule, LeadingColumns) or getattr(rule, "reads_rate", False):
        return rule
    return LeadingColumns(rule, encoding.rule_columns)


class LeadingColumns:
    """``rule`` reading the first ``columns`` features of a learned policy's observation, the
    ones it was tuned on (the policy observes an arrival-rate estimate after them:
    ``ObservationEncoding.rate``); its description and guard fields are the rule's."""

    def __init__(self, rule: Any, columns: int):
        self.rule, self.columns = rule, columns

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.rule(obs[:, : self.columns])

    def describe(self) -> str:
        return self.rule.describe()

    def guard_fields(self) -> dict:
        return self.rule.guard_fields()


def guard_candidates(taken: list[Candidate], spec: NetworkSpec, default: Any, seed: int = 0,
                     quantiles: tuple[float, ...] = (0.5, 0.9, 0.99)) -> list[Candidate]:
    """Each of ``taken`` (learned policies in one encoding), then it guarded by the rule
    ``default`` (``guard_rule``) at bias ``quantiles`` of its positive advantages over the
    rule's action in the rule's states on seed + VALIDATION, and last the rule itself (bias
    infinite: the network never overrides it): the candidates of ``guard`` and of a study
    (``drl_ac.study.run``), which chooses among several learners' snapshots."""
    encoding = policy_encoding(taken[0].section)
    default = reading(default, encoding)
    states = visited_states(spec, default, encoding, seed + VALIDATION)
    out = [g for c in taken for g in (c, *guarded(c, default, states, quantiles))]
    return out + [Candidate(f"{default.describe()} (the guard's rule itself)",
                            {**taken[0].section, **default.guard_fields(), "bias": math.inf})]


def guard(policy: LoadedPolicy, spec: NetworkSpec, default: Any, seed: int = 0, budget: str = "quick",
          quantiles: tuple[float, ...] = (0.5, 0.9, 0.99), progress: Callable[[str], None] = lambda s: None
          ) -> tuple[LoadedPolicy, list[dict]]:
    """A control system's learned policy guarded by its best guarding rule (``guard_rule``:
    a constant action, a load or own-server threshold, the signalled pool): the greedy network, it guarded
    at bias ``quantiles`` of its positive advantages over the rule's action, and the rule
    itself (bias infinite); the one with the lowest mean response in
    steady state on seed + VALIDATION (never the evaluation seed), among the stationary ones
    (one found unstable from a backlog first, on seed + VALIDATION + 1, is not run: ``skips_steady_state``).
    Returns the chosen policy and every candidate's score.

    Why: a network's greedy rule leaves a good rule in states where its value differences are
    noise, and in steady state that costs more than its real gains; the guard keeps the
    rule's action there, and the rule itself is a candidate, so the choice is never worse
    than the rule on the validation seed."""
    candidates = guard_candidates([Candidate("greedy", policy.section)], spec, default, seed, quantiles)
    options = _budget(budget)["evaluation"]

    def score(policy: Policy) -> dict:
        verdict = stability_first(policy, spec, seed + VALIDATION + 1, budget)
        if skips_steady_state(verdict, spec, budget):
            progress(f"  {verdict.describe()}")
            return {"mean_response": math.inf, "unstable": verdict.describe()}
        m = steady_state(policy, spec, seed=seed + VALIDATION, **options)
        progress(f"  {m['mean_delay']:.4f} [{m['mean_delay_ci'][0]:.4f}, {m['mean_delay_ci'][1]:.4f}]"
                 f"{'' if m['stationary'] else ' NOT stationary'}")
        return {"mean_response": m["mean_delay"], **({} if m["stationary"] else {"unstable": "not stationary"})}

    progress(f"choosing among {len(candidates)} candidates on the validation seed: "
             + "; ".join(c.label for c in candidates))
    chosen, scored = choose(candidates, score)
    progress(f"chose {chosen.label}")
    return LoadedPolicy({**chosen.section, "selection": {"chosen": chosen.label, "scores": scored}},
                        policy.module.qnet), scored


def compare(policy: Policy, spec: NetworkSpec, seed: int = 0, budget: str = "quick",
            progress: Callable[[str], None] = lambda s: None, tuned: dict[str, TuningResult] | None = None,
            measured: dict[str, dict] | None = None, learned: dict | None = None,
            **tuning: Any) -> tuple[dict[str, dict], Verdict]:
    """Tune the rules (seed + TUNING; ``tuned``: already tuned), measure them (``measured``:
    already measured, ``measure_rules``) and ``policy`` (seed + EVALUATION; ``learned``: its
    row, already measured by ``measure`` there), judge. Returns every row (``learned`` first,
    then the rules with their ``rule`` description) and the verdict. ``tuning``: options of
    the system's tuner replacing the budget's."""
    if measured is None:
        tuned = tune_rules(spec, seed, budget, progress, **tuning) if tuned is None else tuned
    if learned is None:
        learned = measure(policy, spec, seed + EVALUATION, budget)
        progress(f"learned: {table_cell(learned, spec)}")
    rows = {"learned": {"rule": "learned", **learned}}
    rows.update(measure_rules(tuned, spec, seed, budget, progress) if measured is None else measured)
    verdict = judge(spec, rows["learned"], {k: v for k, v in rows.items() if k != "learned"})
    return rows, verdict


def table_cell(m: dict, spec: NetworkSpec) -> str:
    """The headline (and its constraint) with 95% intervals, and the stability verdict."""
    if "arrivals" not in m or ("unstable" in m and not m["arrivals"]):
        return f"unstable ({m['unstable']})"
    if m.get("overloaded"):
        return f"OVERLOADED (violation scored 1), {m['stability']['verdict']}"
    head = spec.system.headline
    stationary = m.get("stationary", True)
    parts = []
    for key in (head.measure, head.constraint):
        if key is not None:
            lo, hi = m[f"{key}_ci"]
            parts.append(f"{key} {m[key]:.4f}" + (f" [{lo:.4f}, {hi:.4f}]" if stationary else ""))
    stable = m["stability"]["verdict"]
    return ", ".join(parts) + f", {stable}" + ("" if stationary else f", {no_interval(m)}")


def no_interval(m: dict) -> str:
    """What a row that reached no steady state says in place of its interval, with what a run
    would need where the run could tell (``steady_state``'s ``steps_needed``)."""
    need = m.get("steps_needed")
    return "NOT stationary: no interval" + (f" (needs at least {need:,} decisions per instance)" if need else "")


def table(rows: dict[str, dict], verdict: Verdict, spec: NetworkSpec) -> str:
    """A markdown table of the rows and the verdict line."""
    lines = ["| policy | rule | result |", "|---|---|---|"]
    lines += [f"| {name} | {m['rule']} | {table_cell(m, spec)} |" for name, m in rows.items()]
    rule = "" if spec.system.headline.constraint is None else f"\nconstraint: every policy {FEASIBLE}\n"
    return "\n".join(lines) + "\n" + rule + "\n" + verdict.line()


def json_rows(rows: dict[str, dict]) -> dict[str, dict]:
    """The rows without their per-instance arrays (for JSON files)."""
    return {name: {k: v for k, v in m.items() if k != "per_instance"} for name, m in rows.items()}
