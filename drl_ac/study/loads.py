"""One policy for every load: trained over a range of loads, judged at each against the rules
re-tuned there.

A real system's load moves through the day; a rule's constants (a threshold's k, a timer's tau)
are tuned at one load and are wrong at others. So a single policy is worth shipping only if, at
each load of the range, it is no worse than every rule family re-tuned at that load (the
oracle, ``re-tuned``: the bar), and better than the rules a user would fix once, tuned at the
average load (``average``) or at the peak (``peak``). Constant actions are rules of every
system, so they are in all three.

* ``load_range``: the spec whose arrival rate is held at each load in turn (a Poisson rate
  profile whose phase the controller does not see: ``RateProfile.observed``), on which one
  policy is trained; training instances start spread over the period
  (``drl_ac.evaluation.metrics.phase_offsets``), so each learns at a load drawn from the range.
* ``choose_across_loads``: the learned candidate (snapshot x guard) whose worst ratio to the
  best rule re-tuned at each load is smallest, so that no load of the range is given up for the
  others (a mean over the range weighs a light load by its small share of the jobs).
* ``across_loads``: the policy at each load in steady state, on that load's seeds
  (``drl_ac.study.run.load_seed``), against the three comparators, with paired verdicts,
  the constants each comparator used, and the share of decisions unlike the policy's own guard
  rule (``unlike_own_rule``).
* ``table``: the one table of a study with ``--one-policy``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.calibration import calibrate_schedule
from drl_ac.evaluation.selection import EVALUATION, Candidate, visited_states
from drl_ac.rules.scheduled import ScheduledRule, scheduled
from drl_ac.rules.tuning import TuningResult
from drl_ac.study.compare import (
    best_tuned,
    feasible,
    guard_rule,
    json_rows,
    judge,
    measure,
    measure_rules,
    table_cell,
)
from drl_ac.study.pipeline import Run
from drl_ac.study.report import measures_cell
from envs import NetworkSpec, SpecError
from envs.distributions import Exponential
from envs.observation import ObservationEncoding, observed_period

Say = Callable[[str], None]
COMPARATORS = ("re-tuned", "average", "peak")  # the oracle (d), then (b) and (c) of the issue
SWITCHED = "re-tuned rules switched by the rate estimate"  # (e): across_loads' row with ``switched``
WEIGHTS = ("time", "arrivals")  # how a load range shares its period among its loads (load_range)


def default_hold(spec: NetworkSpec) -> float:
    """Time a load of a range is held: 10,000 arrivals at the reference rate (on redundancy_ps
    1,000 time units, a daily scenario's hour). About 2.6 relaxation times at load 0.9 there
    (about 380), but shorter than one at 0.95 (about 1,600): near the limit give ``hold``
    yourself (``--hold``) where the policy must see that load settle."""
    return 10_000.0 / spec.system.reference_rate()


def load_range(spec: NetworkSpec, loads: Sequence[float], hold: float | None = None, weight: str = "time"
               ) -> NetworkSpec:
    """``spec`` with Poisson arrivals whose rate is each of ``loads`` (fractions of the reference
    rate, ascending) in turn, the period repeating, the phase not observed by a controller; named
    ``name@lo-hi``. ``weight`` time: each load held ``hold`` time units (``default_hold``);
    arrivals: each load held ``hold`` x (peak / load), so that every load brings the same number
    of decisions (a light load's share of a learner's data is otherwise its share of the rate),
    to within the 1/12 steps of the table's bins. Refuses arrivals that are not Poisson (a rate
    profile is a Poisson process: the range would change the arrival law)."""
    from drl_ac.study.run import reference_rate

    loads = sorted(float(x) for x in loads)
    if len(loads) < 2 or any(not (math.isfinite(x) and x > 0) for x in loads):
        raise SpecError("loads", f"a load range needs at least two loads > 0, got {loads}",
                        "give e.g. --loads 0.3 0.6 0.9")
    hold = default_hold(spec) if hold is None else float(hold)
    if not (math.isfinite(hold) and hold > 0):
        raise SpecError("hold", f"must be a time > 0, got {hold!r}", "give the time each load is held, or leave it out")
    cfg = spec.to_dict()
    arrival = cfg.get("arrival")
    if arrival is None or "profile" in arrival or not isinstance(spec.arrival_processes()[0].dist, Exponential):
        law = "several streams" if arrival is None else arrival.get("dist")
        raise SpecError("arrival", f"{spec.name}: a load range is a Poisson rate profile, and these arrivals are "
                        f"{law}", "give one Poisson (exponential) arrival stream, or train one policy per load")
    if weight not in WEIGHTS:
        raise SpecError("hold_weight", f"unknown {weight!r}", f"use one of {', '.join(WEIGHTS)}")
    bins = [1] * len(loads) if weight == "time" else [max(1, round(12 * loads[-1] / x)) for x in loads]
    width = hold / bins[-1]  # the peak's bins make one hold
    rate = reference_rate(spec)
    table = [x * rate for x, n in zip(loads, bins, strict=True) for _ in range(n)]
    cfg["arrival"] = {"dist": "poisson", "profile": {"period": width * len(table), "table": table, "observed": False}}
    cfg["name"] = f"{spec.name.split('@')[0]}@{loads[0]:g}-{loads[-1]:g}"
    return NetworkSpec.from_dict(cfg)


def load_base(metadata: dict, spec: NetworkSpec) -> NetworkSpec:
    """The system a load is a fraction of for a policy (a ``policy.pt``'s ``metadata``) run on
    its own scenario ``spec``: for one trained over a load range (its ``load_range`` record)
    the range's base, so that load 0.8 is the base's load 0.8, not 0.8 of the range's average
    rate (a profile scaled, still moving between loads); ``spec`` otherwise. A range written
    without the record is refused with the fix."""
    record = metadata.get("load_range")
    if record is not None:
        return NetworkSpec.from_dict(record["base"])
    if spec.period is not None and observed_period(spec) is None:
        raise SpecError("load", f"{spec.name}: its arrival rate follows a profile whose phase the policy does not "
                        "see (a load range, or a day with its clock hidden): a load of it is no fixed load",
                        "give the stationary scenario to drive at that load with --scenario (for a load range, "
                        "its base), e.g. --scenario NAME --load 0.8")
    return spec


def comparator_loads(loads: Sequence[float]) -> dict[str, float | None]:
    """The load each comparator's rules are tuned at: ``average`` the loads' mean, ``peak`` their
    largest, ``re-tuned`` each load itself (None)."""
    return {"re-tuned": None, "average": sum(loads) / len(loads), "peak": max(loads)}


def tune_at(base: NetworkSpec, loads: Sequence[float], seed: int, budget: str, progress: Say,
            tuned_at: dict[float, dict] | None = None) -> dict[float, dict[str, TuningResult]]:
    """Every rule family tuned at each of ``loads`` on that load's own seed (``load_seed``),
    the loads already in ``tuned_at`` kept: the rules a one-policy study tunes once and judges
    with throughout (its choice, ``across_loads``, ``profiles.over_profile``)."""
    from drl_ac.study.run import at_load, load_seed

    tuned_at = {} if tuned_at is None else tuned_at
    for x in sorted(set(loads) - set(tuned_at)):
        tuned_at[x] = Run(at_load(base, x), load_seed(seed, x), budget, progress).tune_rules()
    return tuned_at


def schedule(base: NetworkSpec, loads: Sequence[float], seed: int, budget: str, say: Say,
             tuned_at: dict[float, dict]) -> ScheduledRule | None:
    """The best rule that can guard at each load (``guard_rule``, among those ``tune_at``
    tunes), switched by the arrival-rate estimate (``ScheduledRule``): the base and guard of
    a one-policy learner that observes the estimate, so that it improves on each load's own
    rule, not on one rule tuned over the range. None where a load has no such rule."""
    from drl_ac.study.run import at_load

    tune_at(base, loads, seed, budget, say, tuned_at)
    encoding = ObservationEncoding.for_spec(base)
    rules, rates = [], []
    for x in sorted(loads):
        spec = at_load(base, x)
        rule = guard_rule(spec, tuned_at[x], ObservationEncoding.for_spec(spec))
        if rule is None:
            say(f"no rule that can guard at load {x:g}: one rule over the range guards the learners")
            return None
        rules.append(rule)
        rates.append(spec.arrival_rate)
    return scheduled(rules, rates, encoding, sorted(loads))


def calibrate_across(policy: LoadedPolicy, base: NetworkSpec, loads: Sequence[float], seed: int, budget: str,
                     arrivals: int, say: Say) -> LoadedPolicy:
    """An admission policy that observes its arrival-rate estimate, one operating point per
    load (``calibrate_schedule``, each on that load's validation seed, mixing at the margin),
    with a record of each load's under ``calibration``."""
    from drl_ac.study.run import at_load, load_seed

    xs = sorted(loads)
    runs = [Run(at_load(base, x), load_seed(seed, x), budget, say) for x in xs]
    out, measured = calibrate_schedule(policy, [r.spec for r in runs], [r.validation_seed for r in runs], base.eps,
                                       arrivals=arrivals, progress=say, randomise=True)
    at = [{"load": x, "seed": r.validation_seed, "bias": b, "margin": g, "mix": p, "acceptance": m["acceptance"],
           "violation": m["violation"], "violation_upper": m["violation_upper"], "within": m["within"]}
          for x, r, b, g, p, m in zip(xs, runs, out.bias, out.margin, out.mix, measured, strict=True)]
    say("calibrated per load: " + "; ".join(f"{a['load']:g}: bias {a['bias']:+.4f} (w.p. {a['mix']:.4f} within "
                                            f"{a['margin']:.4f} below), violation upper bound "
                                            f"{a['violation_upper']:.4f}" for a in at))
    return out.replace(calibration={"target": base.eps, "confidence": 0.95, "arrivals": arrivals,
                                    "edges": list(out.bias_edges), "loads": at})


def worse_ratio(value: float, reference: float, sense: str) -> float:
    """How many times worse ``value`` is than ``reference`` (1: as good; below 1: better); a
    headline maximised (acceptance) reads reference / value. Infinite where undefined."""
    a, b = (value, reference) if sense == "min" else (reference, value)
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 and a >= 0 else math.inf


def choose_across_loads(cands: Sequence[Candidate], base: NetworkSpec, loads: Sequence[float], seed: int,
                        budget: str, say: Say, tuned_at: dict[float, dict]) -> tuple[Candidate, list[dict]]:
    """The candidate with the smallest worst ratio (``worse_ratio``) over ``loads`` to each
    load's best rule (``compare.best_tuned``), both in steady state on that load's validation
    seed (common random
    numbers), among those stationary, meeting the constraint and not ``unstable`` at every load
    (checked from the peak down: a candidate is dropped at its first failure); every
    candidate's scores. When none qualifies, the one usable at the most loads, then by its
    worst ratio, marked ``"fallback"``. ``tuned_at``: rules per load (``tune_at``), filled here."""
    from drl_ac.study.run import at_load, load_seed

    head = base.system.headline
    tune_at(base, loads, seed, budget, say, tuned_at)
    runs = {x: Run(at_load(base, x), load_seed(seed, x), budget, say) for x in sorted(loads, reverse=True)}
    bars = {}
    for x, run in runs.items():
        best = best_tuned(tuned_at[x], run.spec)
        bars[x] = math.nan if best is None else measure(best.rule, run.spec, run.validation_seed, budget)[head.measure]
        say(f"load {x:g}: the bar is {'none' if best is None else best.rule.describe()}: {bars[x]:.4f}")
    scored = []
    for c in cands:
        policy, at, ok = c.policy(), {}, True
        for x, run in runs.items():
            m = measure(policy, run.spec, run.validation_seed, budget)
            ratio = worse_ratio(m[head.measure], bars[x], head.sense) if math.isfinite(bars[x]) else 1.0
            ok = bool(m["stationary"]) and feasible(m, run.spec) and m["stability"]["verdict"] != "unstable"
            at[f"{x:g}"] = {head.measure: m[head.measure], "stationary": bool(m["stationary"]),
                            "feasible": feasible(m, run.spec), "stability": m["stability"]["verdict"],
                            "ratio": ratio}
            if not ok:
                break
        worst = max(a["ratio"] for a in at.values())
        scored.append({"label": c.label, "loads": at, "worst_ratio": worst, "usable": ok})
        say(f"validation: {c.label}: worst ratio to the bar {worst:.4f}"
            + ", ".join(f" {x}: {a[head.measure]:.4f}" for x, a in at.items()) + ("" if ok else ", NOT usable"))
    chosen = min(range(len(scored)), key=lambda i: (not scored[i]["usable"], -len(scored[i]["loads"]),
                                                    scored[i]["worst_ratio"]))
    if not scored[chosen]["usable"]:
        scored[chosen]["fallback"] = ("no candidate was stationary, met the constraint and was not unstable at "
                                      "every load: the one usable at the most loads, then by its worst ratio")
    scored[chosen]["chosen"] = True
    say(f"chose {cands[chosen].label}")
    return cands[chosen], scored


def across_loads(policy: Callable, base: NetworkSpec, loads: Sequence[float], seed: int = 0, budget: str = "quick",
                 progress: Say = lambda s: None, tuned_at: dict[float, dict] | None = None,
                 switched: ScheduledRule | None = None) -> list[dict[str, Any]]:
    """``policy`` at each of ``loads`` of ``base`` (``at_load``) against every rule re-tuned
    there, tuned at the average load and at the peak (``COMPARATORS``); per load: its rows
    (the learned policy, each rule with the constants it used), a ``Verdict`` against each
    comparator, the comparators' constants per family and the share of decisions unlike the
    policy's own guard rule (``unlike_own_rule``). Rules are tuned on each load's own seed;
    the ones tuned at the average or the peak are those of that load's run (``load_seed``),
    applied unchanged at the others. ``tuned_at``: rules already tuned per load, filled with
    the ones tuned here. ``switched``: the rules re-tuned at each load switched by the
    arrival-rate estimate (``schedule``), a comparator of its own (``SWITCHED``): what runs
    without an oracle of the load."""
    from drl_ac.study.run import at_load, load_seed

    fixed = comparator_loads(loads)
    tuned_at = tune_at(base, [*loads, fixed["average"], fixed["peak"]], seed, budget, progress, tuned_at)
    out = []
    for load in loads:
        run = Run(at_load(base, load), load_seed(seed, load), budget, progress)
        spec = run.spec
        progress(f"the policy at load {load:g} ({spec.arrival_rate:.4g} arrivals per unit time)")
        learned = {"rule": "learned", **measure(policy, spec, run.evaluation_seed, budget)}
        progress(f"learned: {table_cell(learned, spec)}")
        oracle = tuned_at[load]
        rows = {"learned": learned, **measure_rules(oracle, spec, run.seed, budget, progress)}
        constants, verdicts = {}, {}
        for name in COMPARATORS:
            tuned = oracle if fixed[name] is None else tuned_at[fixed[name]]
            constants[name] = {family: r.rule.describe() for family, r in tuned.items()}
            own = {}
            for family, result in tuned.items():
                if family in oracle and result.rule.describe() == oracle[family].rule.describe():
                    own[family] = rows[family]  # the same constants as re-tuned: the same row
                    continue
                label = f"{family} (tuned at {fixed[name]:g})"
                if label not in rows:
                    rows[label] = measure_rules({label: result}, spec, run.seed, budget, progress)[label]
                own[label] = rows[label]
            verdicts[name] = judge(spec, learned, own)
        if switched is not None:
            rows[SWITCHED] = {"rule": switched.describe(), **measure(switched, spec, run.evaluation_seed, budget)}
            progress(f"{SWITCHED}: {table_cell(rows[SWITCHED], spec)}")
            verdicts["switched"] = judge(spec, learned, {SWITCHED: rows[SWITCHED]})
        out.append({"load": load, "rate": spec.arrival_rate, "scenario": spec.name, "rows": json_rows(rows),
                    "verdicts": {k: v.to_dict() for k, v in verdicts.items()},
                    "lines": {k: v.line() for k, v in verdicts.items()}, "constants": constants,
                    "unlike_rule": unlike_own_rule(policy, spec, run.evaluation_seed),
                    "evaluation_seed": run.seed + EVALUATION})
        progress(f"load {load:g}: against the rules re-tuned there: {verdicts['re-tuned'].line()}")
    return out


def unlike_own_rule(policy: Callable, spec: NetworkSpec, seed: int) -> dict | None:
    """A guarded policy's share of decisions that differ from its own guard rule's (the rule it
    was trained and guarded with: the policy at bias infinite) in the states it visits on
    ``seed``: 0 is the rule itself at that load. None for a policy without a guard rule."""
    section = getattr(policy, "section", {})
    if not (section.get("default_rule") or int(section.get("default_action", -1)) >= 0):
        return None
    states = visited_states(spec, policy, policy.encoding, seed)
    share = float((np.asarray(policy(states)) != np.asarray(policy.replace(bias=math.inf)(states))).mean())
    return {"share": share, "states": int(states.shape[0])}


def _versus(v: dict) -> str:
    if v["difference"] is None:
        return v["outcome"]
    lo, hi = v["difference"]["ci"]
    return f"{v['outcome']}, {v['difference']['difference']:+.4f} [{lo:+.4f}, {hi:+.4f}]"


def table(results: list[dict[str, Any]], spec: NetworkSpec) -> str:
    """The markdown table of ``across_loads``: per load the learned headline, then per comparator
    its best rule's headline and the verdict with the paired 95% interval, and the share of
    decisions unlike the policy's own guard rule (``unlike_own_rule``)."""
    head = spec.system.headline
    fixed = comparator_loads([r["load"] for r in results])
    names = {"re-tuned": "re-tuned at each load (d)", "average": f"tuned at the average {fixed['average']:g} (b)",
             "peak": f"tuned at the peak {fixed['peak']:g} (c)", "switched": "switched by the rate estimate (e)"}
    shown = [*COMPARATORS, *(["switched"] if all("switched" in r["verdicts"] for r in results) else [])]
    lines = [f"| load | learned {head.measure} | " + " | ".join(f"best rule {names[c]} | learned vs it"
                                                             for c in shown) + " | unlike its guard rule |",
             "|---|---|" + "---|---|" * len(shown) + "---|"]
    for r in results:
        cells = [f"{r['load']:g}", measures_cell(r["rows"]["learned"], spec)]
        for c in shown:
            v = r["verdicts"][c]
            cells += ["none feasible and stable" if v["best_rule"] is None else
                      f"{v['best_rule']} ({r['rows'][v['best_rule']]['rule']}): {v['best']:.4f}", _versus(v)]
        u = r["unlike_rule"]
        cells.append("-" if u is None else f"{100 * u['share']:.1f}%")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["COMPARATORS", "SWITCHED", "across_loads", "choose_across_loads", "comparator_loads", "default_hold",
           "load_range", "schedule", "table", "tune_at", "worse_ratio"]
