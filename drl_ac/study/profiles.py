"""One policy through a day: on a scenario whose load changes with the hour (redundancy_ps_daily,
pools_daily), the policy of a ``--one-policy`` study against the rules that know the hour and
those that do not.

Comparators, each a rule family of the system (constant actions included):

* ``per hour`` (the oracle, the bar): switched at each hour of the profile to the rule re-tuned
  for that hour's load (``HourlyRule``; it reads the hour from the observation's phase);
* ``the day``: tuned once over the whole day (the best a rule that does not know the hour can
  do with the day's mix);
* ``average`` and ``peak``: tuned at the day's average load and at its peak load, as a user who
  sizes a rule once would.

Every row runs whole days on common random numbers: instance b starts at phase b / B of the
day, runs one whole period first (an hour is shorter than the relaxation time near the peak,
so the backlog of the busy hours is carried in from the hours before, not started empty), then
is measured over a window (``drl_ac.evaluation.metrics.evaluate``, arrival-weighted). Paired
differences are over instances of the same phase.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from drl_ac.evaluation.metrics import evaluate, paired_difference, undefined
from drl_ac.evaluation.selection import EVALUATION
from drl_ac.rules.tuning import TuningResult
from drl_ac.study.compare import (
    BUDGETS,
    feasible,
    json_rows,
    skips_steady_state,
    stability_first,
    tune_rules,
)
from drl_ac.study.loads import tune_at
from drl_ac.study.pipeline import Run
from drl_ac.study.report import measures_cell, phase_plot
from envs import NetworkSpec, SpecError
from envs.observation import ObservationEncoding

Say = Callable[[str], None]
COMPARATORS = ("per hour", "the day", "average", "peak")


class HourlyRule:
    """At each arrival the rule of its hour: ``rules[h]`` for the h-th of ``len(rules)`` equal
    bins of the period, the hour read from the phase columns of ``encoding`` (the profile's
    observation, which the rules read without those columns, as at a fixed load). A rule that
    knows the hour: the oracle of a day whose load changes by the hour; with one rule, that
    rule blind to the hour."""

    def __init__(self, rules: Sequence[Callable], encoding: ObservationEncoding, label: str):
        if not encoding.period:
            raise ValueError("HourlyRule reads the hour from the phase of an observed profile. Fix: use the "
                             "encoding of a scenario whose arrival profile is observed.")
        self.rules, self.encoding, self.label = list(rules), encoding, label
        self.column = encoding.phase_column()

    def hour(self, obs: np.ndarray) -> np.ndarray:
        """The bin of the period each observation's phase (1 + sin, 1 + cos) falls in."""
        angle = np.arctan2(obs[:, self.column].astype(float) - 1.0, obs[:, self.column + 1].astype(float) - 1.0)
        phase = (angle / (2 * math.pi)) % 1.0
        return np.minimum((phase * len(self.rules)).astype(np.int64), len(self.rules) - 1)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        hour = self.hour(obs)
        plain = np.delete(obs, [self.column, self.column + 1], axis=1)
        out = np.empty(obs.shape[0], np.int64)
        for h in np.unique(hour):
            rows = hour == h
            out[rows] = self.rules[h](plain[rows])
        return out

    def describe(self) -> str:
        return self.label


def hourly(by_hour: Sequence[dict[str, TuningResult]], encoding: ObservationEncoding) -> dict[str, HourlyRule]:
    """Per rule family tuned at every hour (``by_hour[h]``: the families tuned for hour h), that
    family switched by the hour (one rule where it is the same at every hour: a constant action)."""
    out: dict[str, HourlyRule] = {}
    for family in sorted({f for tuned in by_hour for f in tuned}):
        if all(family in tuned for tuned in by_hour):
            rules = [tuned[family].rule for tuned in by_hour]
            out[family] = HourlyRule(rules, encoding, f"{family} re-tuned for each hour's load") \
                if len({r.describe() for r in rules}) > 1 else HourlyRule(rules[:1], encoding, rules[0].describe())
    return out


def table_hours(profile: NetworkSpec) -> int:
    """The number of hours of ``profile``'s day: the length of its Poisson rate tables, which
    must all be tables of that one length over one period, whose clock a controller observes
    (the rules switched by the hour read it)."""
    tables = _tables(profile.to_dict())
    for where, profile_ in tables:
        if "table" not in profile_:
            raise SpecError(f"{where}.profile", f"{profile.name}: hours are the entries of its Poisson rate tables, "
                            "and this profile is not a table", "give it {period: P, table: [...]}, one rate per hour")
    lengths, periods = {len(p["table"]) for _, p in tables}, {p["period"] for _, p in tables}
    if not tables or len(lengths) != 1 or len(periods) != 1:
        why = "it has none" if not tables else "their lengths differ" if len(lengths) != 1 else "their periods differ"
        raise SpecError("profile", f"{profile.name}: hours are the entries of its Poisson rate tables, and {why} "
                        f"({', '.join(w for w, _ in tables) or 'no profile'})",
                        "give every profiled stream a table of one rate per hour over the same period")
    if not profile.system.encoding().period:
        raise SpecError("profile", f"{profile.name}: its clock is hidden from the controller (observed: false), and "
                        "the rules switched by the hour read it", "give a scenario whose profile is observed")
    return lengths.pop()


def hour_spec(profile: NetworkSpec, hour: int) -> NetworkSpec:
    """``profile`` held at its ``hour``-th table entry: every Poisson table profile (each
    stream's arrivals, a cell's handovers) at the rate its table gives that hour, stationary,
    named ``name@hHOUR``: the load a rule re-tuned for that hour is tuned at."""
    hours = table_hours(profile)
    if not 0 <= hour < hours:
        raise ValueError(f"hour must be in 0..{hours - 1} for {profile.name}, got {hour}. Fix: give an hour of its "
                         "table.")

    def held(node: Any, where: str) -> Any:
        if isinstance(node, dict):
            if isinstance(node.get("profile"), dict):
                rate = node["profile"]["table"][hour]
                if not rate > 0:
                    raise SpecError(f"{where}.profile.table[{hour}]", f"{profile.name}: no arrivals in hour {hour}, "
                                    "and a rule is tuned for an hour at its rates", "give that hour a positive rate "
                                    "(e.g. 1e-3), or compare without --per-hour")
                return {"dist": "poisson", "rate": rate}
            return {k: held(v, f"{where}.{k}" if where else k) for k, v in node.items()}
        return [held(v, f"{where}[{i}]") for i, v in enumerate(node)] if isinstance(node, list) else node

    cfg = held(profile.to_dict(), "")
    cfg["name"] = f"{profile.name}@h{hour}"
    return NetworkSpec.from_dict(cfg)


def _tables(node: Any, where: str = "") -> list[tuple[str, dict]]:
    """Every rate profile in a spec's dict (``NetworkSpec.to_dict``), with where it is (e.g.
    ``cell.types[2].handover``)."""
    if isinstance(node, dict):
        if isinstance(node.get("profile"), dict):
            return [(where, node["profile"])]
        return [t for k, v in node.items() for t in _tables(v, f"{where}.{k}" if where else k)]
    return [t for i, v in enumerate(node) for t in _tables(v, f"{where}[{i}]")] if isinstance(node, list) else []


def hour_jobs(profile: NetworkSpec, seed: int) -> tuple[list[tuple[NetworkSpec, int]], list[int]]:
    """What ``per_hour_rules`` tunes: each distinct hour's spec (``hour_spec``) with its seed
    (``seed`` + 7,919 x (hour + 1) of the first hour with those rates), and for each hour the
    index of its job. Hours with the same rates are tuned once: a cell's rules at 13 distinct
    hours of cell_5g's 24."""
    jobs: list[tuple[NetworkSpec, int]] = []
    keys: dict[str, int] = {}
    index = []
    for h in range(table_hours(profile)):
        spec = hour_spec(profile, h)
        key = repr({k: v for k, v in spec.to_dict().items() if k != "name"})
        if key not in keys:
            keys[key] = len(jobs)
            jobs.append((spec, seed + 7_919 * (h + 1)))
        index.append(keys[key])
    return jobs, index


def tune_many(jobs: Sequence[tuple[NetworkSpec, int]], budget: str, workers: int = 1, progress: Say = lambda s: None,
              **tuning: Any) -> list[dict[str, TuningResult]]:
    """``tune_rules`` for each (spec, seed) of ``jobs``, in this process or in a pool of
    ``workers`` other processes (``drl_ac.parallel.run_jobs``: each job's rules depend on its
    seed alone, not on where it ran; ``progress`` hears only the jobs run here, and each
    one's end)."""
    from drl_ac.parallel import run_jobs

    payload = [{"spec": spec.to_dict(), "seed": seed, "budget": budget, "tuning": tuning,
                "progress": progress if workers <= 1 else None} for spec, seed in jobs]
    out = []
    for (spec, _), tuned in zip(jobs, run_jobs(_tune_job, payload, workers), strict=True):
        progress(f"tuned the rules of {spec.name}")
        out.append(tuned)
    return out


def _tune_job(job: dict) -> dict[str, TuningResult]:
    return tune_rules(NetworkSpec.from_dict(job["spec"]), job["seed"], job["budget"],
                      job["progress"] or (lambda s: None), **job["tuning"])


def per_hour_from(profile: NetworkSpec, index: Sequence[int], tuned: Sequence[dict[str, TuningResult]]
                  ) -> dict[str, TuningResult]:
    """``per_hour_rules``' rows from the rules tuned for ``hour_jobs``' jobs (``tuned[index[h]]``:
    hour h's)."""
    by_hour = [tuned[i] for i in index]
    return {f"{family} per hour": TuningResult(rule, {})
            for family, rule in hourly(by_hour, profile.system.encoding()).items() if len(rule.rules) > 1}


def per_hour_rules(profile: NetworkSpec, seed: int, budget: str, progress: Say = lambda s: None, workers: int = 1,
                   **tuning: Any) -> dict[str, TuningResult]:
    """The oracle (d) of a day for a policy that sees the clock: every rule family of
    ``profile``'s system re-tuned at each hour's rates (``hour_jobs``; ``workers`` processes at
    once, ``tune_many``) and switched by the hour (``hourly``), as ``FAMILY per hour``; a family
    that is one rule at every hour (accept-all) is left to the day's own. ``tuning``: the
    tuner's options, as ``tune_rules``'."""
    jobs, index = hour_jobs(profile, seed)
    return per_hour_from(profile, index, tune_many(jobs, budget, workers, progress, **tuning))


def by_hour_table(rows: dict[str, dict], spec: NetworkSpec, hourly_rows: Mapping[str, Sequence[str]]) -> str:
    """The headline and its constraint hour by hour (``NAME_by_phase``), learned against the
    best of ``hourly_rows`` (``per_hour_rules``' rows: each one's rule per hour, shown where the
    bins are the hours) that meets the constraint over the day
    (``feasible``): where in the day the policy gains or loses against the oracle. The hour's
    difference has a 95% interval from the two rows' own (conservative: the rows share their
    seed, so their errors correlate positively; each hour's own, not corrected for 24 looks).
    The rows are the evaluation's phase bins (24: hours of a 24-hour table)."""
    head = spec.system.headline
    key = f"{head.measure}_by_phase"
    ok = [n for n in hourly_rows if key in rows[n] and feasible(rows[n], spec)]
    if key not in rows["learned"] or not ok:
        why = "no rule re-tuned per hour meets eps" if key in rows["learned"] else f"the rows hold no {key}"
        return f"No hour-by-hour table: {why}.\n"
    sign = 1.0 if head.sense == "max" else -1.0
    best = max(ok, key=lambda n: sign * rows[n][head.measure])
    learned, rule = rows["learned"], rows[best]
    shown = [k for k in (head.measure, head.constraint) if k is not None]

    def cell(m: dict, k: str, j: int) -> str:
        lo, hi = m[f"{k}_by_phase_ci"][j]
        return f"{m[f'{k}_by_phase'][j]:.4f} [{lo:.4f}, {hi:.4f}]"

    hours = int(learned["phase_bins"]) == len(hourly_rows[best])
    unit = "hour" if hours else "window"
    lines = [f"By {unit}: learned against {best} ({rule['rule']}), 95% intervals.", "",
             f"| {unit} | " + " | ".join(f"learned {k} | rule {k}" for k in shown)
             + f" | learned - rule ({head.measure}) |" + (" the rule that hour |" if hours else ""),
             "|---|" + "---|---|" * len(shown) + "---|" + ("---|" if hours else "")]
    for j in range(int(learned["phase_bins"])):
        (la, lb), (ra, rb) = learned[f"{key}_ci"][j], rule[f"{key}_ci"][j]
        d = learned[key][j] - rule[key][j]
        half = math.hypot(lb - la, rb - ra) / 2
        lines.append(f"| {j} | " + " | ".join(f"{cell(learned, k, j)} | {cell(rule, k, j)}" for k in shown)
                     + f" | {d:+.4f} [{d - half:+.4f}, {d + half:+.4f}] |"
                     + (f" {hourly_rows[best][j]} |" if hours else ""))
    return "\n".join(lines) + "\n"


def unstable_at(policy: Callable, spec: NetworkSpec, seed: int, budget: str) -> str | None:
    """Why ``policy`` is unstable at ``spec``'s load (a day's peak) where the stability test that
    spares a steady-state run says so (``study.skips_steady_state``), else None."""
    verdict = stability_first(policy, spec, seed, budget)
    return verdict.describe() if skips_steady_state(verdict, spec, budget) else None


def hour_loads(profile: NetworkSpec, reference: float) -> list[float]:
    """The load of each bin of ``profile``'s single table profile, a fraction of ``reference``."""
    (process,) = profile.arrival_processes()
    table = getattr(getattr(process, "profile", None), "table", None)
    if table is None:
        raise SpecError("arrival", f"{profile.name}: a day is a Poisson table profile of one stream",
                        "give a scenario with arrival: {dist: poisson, profile: {period: P, table: [...]}}")
    return [round(rate / reference, 4) for rate in table]


def day(policy: Callable, spec: NetworkSpec, seed: int, budget: str) -> dict:
    """``policy`` over whole days of ``spec`` on ``seed`` (the module's text), per instance kept
    for pairing. A policy that does not see the clock (trained with its phase hidden) runs on the
    same day with its phase hidden: the same arrivals, the observation it was trained on."""
    if getattr(policy, "encoding", None) is not None and not policy.encoding.period and spec.system.encoding().period:
        spec = hidden_clock(spec)
    options = BUDGETS[budget]["evaluation"]
    num_envs = options["num_envs"]
    warmup = spec.period if budget != "smoke" else "auto"  # smoke: the wiring only, decides nothing
    return evaluate(policy, spec, arrivals=num_envs * max(options["min_steps"], 400), seed=seed, num_envs=num_envs,
                    warmup=warmup, per_instance=True)


def hidden_clock(spec: NetworkSpec) -> NetworkSpec:
    """``spec`` with its arrival profile's phase hidden from a controller (``observed: false``)."""
    cfg = spec.to_dict()
    cfg["arrival"] = {**cfg["arrival"], "profile": {**cfg["arrival"]["profile"], "observed": False}}
    return NetworkSpec.from_dict(cfg)


def over_profile(policy: Callable, base: NetworkSpec, profile: NetworkSpec, tuned_at: dict[float, dict],
                 seed: int = 0, budget: str = "quick", progress: Say = lambda s: None) -> dict[str, Any]:
    """``policy`` (trained without the hour) over days of ``profile`` (``base``'s system with a
    changing load) against ``COMPARATORS``; ``tuned_at``: rules already tuned per load of
    ``base`` (``at_load`` on ``load_seed``; the missing hours' loads are tuned here and added).
    Returns the rows, a verdict per comparator (``better``, ``no worse`` or ``worse`` on the
    paired 95% interval against its best row) and the loads of the hours."""
    from drl_ac.study.run import at_load, reference_rate

    if profile.system.name != base.system.name or not profile.system.encoding().period:
        raise SpecError("profiles", f"{profile.name} is not a day of {base.name}'s system with an observed clock",
                        f"give a scenario of the {base.system.name} system whose arrival profile is observed")
    hours = hour_loads(profile, reference_rate(base))
    average, peak = round(sum(hours) / len(hours), 4), max(hours)
    tune_at(base, [*hours, average, peak], seed, budget, progress, tuned_at)
    run = Run(profile, seed, budget, progress)
    progress(f"{profile.name}: hours at loads {', '.join(f'{x:g}' for x in hours)}")
    encoding = profile.system.encoding()
    sets: dict[str, dict[str, Callable]] = {name: {} for name in COMPARATORS}
    sets["per hour"] = {family if len(rule.rules) == 1 else f"{family} per hour": rule
                        for family, rule in hourly([tuned_at[x] for x in hours], encoding).items()}
    for family in sorted({f for tuned in tuned_at.values() for f in tuned}):
        for name, x in (("average", average), ("peak", peak)):
            if family in tuned_at[x]:  # one rule for every hour, blind to the phase
                rule = tuned_at[x][family].rule
                sets[name][f"{family} (tuned at {x:g})"] = HourlyRule([rule], encoding, rule.describe())
    sets["the day"] = {f"{family} (tuned over the day)": r.rule for family, r in _usable(run.tune_rules()).items()}
    seed_day = run.seed + EVALUATION
    at_peak = at_load(base, peak), seed_day + 1

    def row(policy: Callable, fixed: Callable | None) -> dict:
        """A day's row, or none for a policy ``fixed`` (one that reads a fixed load's observations)
        found unstable at the peak hour's load: its backlog over the busy hours would only grow
        (d = 3 over a day of redundancy_ps_daily ran 10 minutes to read 344)."""
        why = None if fixed is None else unstable_at(fixed, *at_peak, budget)
        if why is not None:
            return undefined(BUDGETS[budget]["evaluation"]["num_envs"], unstable=f"unstable at the peak hour's "
                             f"load {peak:g} ({why}): not run over the day")
        return day(policy, profile, seed_day, budget)

    clock = getattr(getattr(policy, "encoding", None), "period", None)  # a policy that reads the day's clock
    rows = {"learned": {"rule": "learned", **row(policy, None if clock else policy)}}
    seen: dict[str, str] = {}  # a rule's description -> its row, measured once
    for members in sets.values():
        for label, rule in members.items():
            text = rule.describe()
            if text in seen:
                rows[label] = rows[seen[text]]
                continue
            blind = getattr(rule, "rules", [])  # one rule all day, blind to the hour: checked at the peak
            rows[label] = {"rule": text, **row(rule, blind[0] if len(blind) == 1 else None)}
            seen[text] = label
            progress(f"{label}: {measures_cell(rows[label], profile)}")
    verdicts = {name: day_verdict(rows, list(members), profile) for name, members in sets.items()}
    windows = {name: w for name, m in rows.items() if (w := worst_window(m, profile)) is not None}
    return {"scenario": profile.name, "hours": hours, "average": average, "peak": peak, "rows": json_rows(rows),
            "verdicts": verdicts, "windows": windows, "evaluation_seed": seed_day}


def worst_window(m: dict, spec: NetworkSpec) -> dict[str, Any] | None:
    """Where in the day a row's constraint (violation, dropping) is highest, among its phase bins
    (``metrics.by_phase``): that window, its value and 95% interval, and the windows where it is
    significantly above eps: empty when the constraint holds through the day, not only on its
    average. Significant at 5% over the day's windows together (Bonferroni: each window's
    one-sided lower bound at 1 - 0.05 / bins; at 95% each, a policy exactly at eps would be
    called above it in some window of 24 seven times in ten). None without a constraint or
    per-phase measures."""
    key = spec.system.headline.constraint
    if key is None or f"{key}_by_phase" not in m:
        return None
    values = np.array(m[f"{key}_by_phase"], float)
    if not np.isfinite(values).any():
        return None
    j = int(np.nanargmax(values))
    bins = int(m["phase_bins"])
    lower = values - NormalDist().inv_cdf(1 - 0.05 / bins) * np.array(m[f"{key}_by_phase_se"], float)
    return {"measure": key, "window": j, "bins": bins, "value": float(values[j]),
            "ci": list(m[f"{key}_by_phase_ci"][j]), "above_eps": [int(b) for b in np.flatnonzero(lower > spec.eps)]}


def within(m: dict, spec: NetworkSpec) -> bool:
    """A day's row meets the constraint: not significantly above eps over the day (``feasible``)
    nor in any window of it (``worst_window``)."""
    w = worst_window(m, spec)
    return feasible(m, spec) and (w is None or not w["above_eps"])


def window_cell(w: dict[str, Any] | None, eps: float) -> str:
    """``worst_window`` in a table: the worst window's value and interval, and where eps breaks."""
    if w is None:
        return "-"
    where = "within eps in every window" if not w["above_eps"] else \
        f"above eps in window(s) {', '.join(str(b + 1) for b in w['above_eps'])}"
    return (f"{w['measure']} {w['value']:.4f} [{w['ci'][0]:.4f}, {w['ci'][1]:.4f}] in window {w['window'] + 1} of "
            f"{w['bins']}; {where} (eps {eps:g})")


def day_plot(result: dict[str, Any], spec: NetworkSpec, path: Path) -> Path:
    """The measure through the day (``report.phase_plot``) of the policy, the best rule switched
    by the hour (the bar) and the best rule of each comparator that does not know the hour
    (``over_profile``'s verdicts): where in the day the policy gains or loses."""
    rows = result["rows"]
    shown = {"learned": rows["learned"]}
    for name in COMPARATORS:
        best = result["verdicts"][name]["best_rule"]
        if best is not None and f"{spec.system.headline.measure}_by_phase" in rows[best]:
            shown.setdefault(best if name != "per hour" else f"{best} (the bar)", rows[best])
    return phase_plot(shown, spec, path)


def _usable(tuned: dict[str, TuningResult]) -> dict[str, TuningResult]:
    return {f: r for f, r in tuned.items() if "arrivals" in r.metrics}


def _measured(m: dict, key: str) -> bool:
    """A row with measures over the day (not an instance's backlog past the job table's bound)."""
    return bool(m.get("arrivals")) and not m.get("overloaded") and math.isfinite(m.get(key, math.nan))


def day_verdict(rows: dict[str, dict], names: list[str], spec: NetworkSpec) -> dict[str, Any]:
    """The learned row against the best of ``names`` that meets the constraint over the day and in
    each of its windows (``within``) on the headline: ``better`` where the paired 95% interval is
    entirely on the good side, ``worse`` where entirely on the other or where the learned row is
    significantly above eps (over the day or in a window), else ``no worse``."""
    head = spec.system.headline
    sign = 1.0 if head.sense == "max" else -1.0
    measured = [n for n in names if _measured(rows[n], head.measure) and within(rows[n], spec)]
    if not measured:
        return {"outcome": "no comparator", "best_rule": None, "difference": None}
    if not _measured(rows["learned"], head.measure):  # its backlog outgrew the job table: unstable over a day
        return {"outcome": "worse", "best_rule": measured[0], "best": rows[measured[0]][head.measure],
                "difference": None, "why": rows["learned"].get("unstable", "no measures")}
    best = max(measured, key=lambda n: sign * rows[n][head.measure])
    d = paired_difference(rows["learned"], rows[best], head.measure)
    lo, hi = sorted(sign * x for x in d["ci"])
    outcome = "better" if lo > 0 else ("worse" if hi < 0 else "no worse")
    if not within(rows["learned"], spec):  # significantly above eps: worse, whatever its headline
        outcome = "worse"
    return {"outcome": outcome, "best_rule": best, "best": rows[best][head.measure], "difference": d}


def table(result: dict[str, Any], spec: NetworkSpec) -> str:
    """One line per comparator: its best rule over the day and the learned policy against it."""
    head = spec.system.headline
    learned = measures_cell(result["rows"]["learned"], spec)
    windows = result.get("windows", {})
    worst = "" if "learned" not in windows else \
        f" Its worst window: {window_cell(windows['learned'], spec.eps)}."
    lines = [f"Over days of {result['scenario']} (hours at loads {min(result['hours']):g} to {result['peak']:g}, "
             f"average {result['average']:g}): learned {learned}.{worst}", "",
             f"| comparator | best rule | its {head.measure} | learned - it [95% CI, paired] | verdict |"
             + (" its worst window |" if windows else ""),
             "|---|---|---|---|---|" + ("---|" if windows else "")]
    for name in COMPARATORS:
        v = result["verdicts"][name]
        if v["best_rule"] is None:
            lines.append(f"| {name} | none | | | {v['outcome']} |" + (" |" if windows else ""))
            continue
        d = v["difference"]
        if d is None:
            lines.append(f"| {name} | {v['best_rule']} | | no interval: the learned policy {v['why']} | "
                         f"{v['outcome']} |" + (" |" if windows else ""))
            continue
        lines.append(f"| {name} | {v['best_rule']} | {measures_cell(result['rows'][v['best_rule']], spec)} | "
                     f"{d['difference']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}] | {v['outcome']} |"
                     + (f" {window_cell(windows.get(v['best_rule']), spec.eps)} |" if windows else ""))
    return "\n".join(lines) + "\n"


__all__ = ["COMPARATORS", "HourlyRule", "by_hour_table", "day", "day_plot", "day_verdict", "hidden_clock", "hour_jobs",
           "hour_loads", "hour_spec", "hourly", "over_profile", "per_hour_from", "per_hour_rules", "table", "table_hours",
           "tune_many", "unstable_at", "window_cell", "within", "worst_window"]
