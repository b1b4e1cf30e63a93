"""What a study writes: a load's report (``report``: with a system's own table, e.g. a cell's per
UE type) and, where its measures are per phase (a cell's), its plot per phase (``phase_plot``); the
study's table over
every load held in its folder (``summary``, ``held_results``), how each row was made
(``commands``, ``commit``), the plot of the headline per load (``plot``) and the summary files
(``write_summary``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from drl_ac import study
from envs import NetworkSpec

ROOT = Path(__file__).resolve().parents[2]


def value_cell(m: dict, key: str | None) -> str:
    """A row's value of ``key`` with its 95% interval, or why it has none."""
    if key is None:
        return ""
    if "arrivals" not in m:
        return "not simulated"
    if not m.get("stationary", True):  # a transient's mean: no interval claims it (study.table alike)
        return f"{m[key]:.4f}, {study.no_interval(m)}"
    lo, hi = m[f"{key}_ci"]
    return f"{m[key]:.4f} [{lo:.4f}, {hi:.4f}]"


def measures_cell(m: dict, spec: NetworkSpec) -> str:
    """A row's headline (and constraint) with 95% intervals, or why it has none."""
    head = spec.system.headline
    if "arrivals" not in m or ("unstable" in m and not m["arrivals"]):
        return "unstable"
    return "; ".join(f"{key} {value_cell(m, key)}" for key in (head.measure, head.constraint) if key is not None)


def _stability(m: dict) -> str:
    s = m.get("stability")
    if s is None:
        return f"unstable ({m.get('unstable')})"
    if s["verdict"] == "loss system":
        return "stable (loss system)"
    return f"{s['verdict']} (drift {s['drift']:+.4f} +- {s['drift_se']:.4f})"


def report(spec: NetworkSpec, rows: dict[str, dict], verdict: study.Verdict, chosen: str, load: float | None,
           unlike: dict | None = None) -> str:
    """A load's markdown: the table of every row (headline and constraint with 95% intervals,
    stability), the verdict line and the paired difference; ``unlike``: the share of the
    learned policy's decisions that differ from its guard rule's (``Run.unlike_rule``)."""
    head = spec.system.headline
    cols = [head.measure] + ([head.constraint] if head.constraint else [])
    lines = [f"# {spec.name}{'' if load is None else f' (load {load:g})'}: {head.text(spec.eps)}", "",
             f"Learned: {chosen}.", "",
             "| policy | rule | " + " | ".join(f"{c} [95% CI]" for c in cols) + " | stability |",
             "|---|---|" + "---|" * len(cols) + "---|"]
    lines += [f"| {name} | {m['rule']} | " + " | ".join(value_cell(m, c) for c in cols) + f" | {_stability(m)} |"
              for name, m in rows.items()]
    lines += ["", verdict.line()]
    d = verdict.difference
    if d is not None:
        lines.append(f"\nPaired difference, learned - {verdict.best_rule} on {head.measure}: {d['difference']:+.4f} "
                     f"[{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}] (95%, {'paired over instances' if d['paired'] else 'unpaired'})")
    if unlike is not None:
        lines.append(f"\nDecisions unlike the guard rule ({unlike['rule']}): {100 * unlike['share']:.1f}% of the "
                     f"learned policy's, in {unlike['states']} states it visits on the evaluation seed.")
    own = spec.system.own_measures()
    measured = [{"policy": name, **m} for name, m in rows.items() if "arrivals" in m]
    if own is not None and measured:  # the system's own measures, e.g. a cell's per UE type
        lines += ["", own.table(measured, spec)]
    return "\n".join(lines) + "\n"


def phase_plot(rows: dict[str, dict], spec: NetworkSpec, path: Path) -> Path:
    """A periodic system's headline and constraint per phase bin of its period (``rows``: a
    comparison's, whose measures are per phase: ``NAME_by_phase``, as a cell's), with 95%
    intervals: the learned policy and every rule that met the constraint, so that a reader sees
    where in the day each one blocks or drops."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    head, eps = spec.system.headline, spec.eps
    keys = [k for k in (head.measure, head.constraint) if k is not None and f"{k}_by_phase" in rows["learned"]]
    if not keys:
        raise ValueError(f"phase_plot: the rows of {spec.name} hold no {head.measure}_by_phase. Fix: plot a system "
                         "whose measures are per phase (a cell's).")
    shown = ["learned"] + [n for n, m in rows.items() if n != "learned" and f"{keys[0]}_by_phase" in m
                           and study.feasible(m, spec)]
    bins, period = rows["learned"]["phase_bins"], spec.period
    hours = period == 1440.0 and bins == 24
    x = np.arange(bins) + 0.5 if hours else (np.arange(bins) + 0.5) * period / bins
    fig, axes = plt.subplots(1, len(keys), figsize=(6.4 * len(keys), 4.2), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        for name in shown:
            m = rows[name]
            y = np.array(m[f"{key}_by_phase"], float)
            ci = np.array([c if c is not None else [np.nan, np.nan] for c in m[f"{key}_by_phase_ci"]], float)
            line, = ax.plot(x, y, marker="o", ms=3, label=f"{name} ({m[key]:.4f})")
            ax.fill_between(x, ci[:, 0], ci[:, 1], color=line.get_color(), alpha=0.2, linewidth=0)
        if key == head.constraint:
            ax.axhline(eps, color="black", linestyle=":", label=f"eps {eps:g}")
        ax.set_xlabel("hour of the day" if hours else "time in the period")
        ax.set_ylabel(key)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{spec.name}: by {'hour' if hours else 'phase'} (95% intervals)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def summary(results: list[dict]) -> str:
    """The study's markdown: one row per load (learned and best rule with 95% intervals, the
    paired difference, the verdict, the learned controller's stability and, on a control system,
    the share of its decisions unlike its guard rule's)."""
    lines = ["| load | rate | learned | best rule | learned - best [95% CI] | verdict | stability of learned | "
             "decisions unlike its guard rule |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        v, head = r["verdict"], r["headline"]
        best = r["rows"].get(v["best_rule"]) if v["best_rule"] else None
        d = v["difference"]
        diff = "" if d is None else f"{d['difference']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}]"
        load = "as is" if r["load"] is None else f"{r['load']:g}"
        rule = "none" if best is None else f"{v['best_rule']}: {value_cell(best, head)}"
        unlike = r.get("unlike_rule")  # control systems; earlier studies did not measure it
        shown = "" if unlike is None else f"{100 * unlike['share']:.1f}% ({unlike['rule']})"
        lines.append(f"| {load} | {r['rate']:.4g} | {value_cell(r['rows']['learned'], head)} | {rule} | {diff} | "
                     f"{v['outcome']} | {_stability(r['rows']['learned'])} | {shown} |")
    outcomes = [r["verdict"]["outcome"] for r in results]
    lines += ["", f"Learned better than the best rule at {outcomes.count('better')} of {len(results)} load(s), no "
              f"worse at {outcomes.count('no worse')}, worse at {outcomes.count('worse')}"
              + (f", no comparator at {outcomes.count('no comparator')}" if "no comparator" in outcomes else "") + "."]
    return "\n".join(lines) + "\n"


def held_results(out: Path, scenario: str) -> list[dict]:
    """Every study comparison of ``scenario`` (its ``base`` name) under ``out``, by load: this
    run's and those of earlier runs into the same folder, so that a load re-run alone
    (``--loads 0.9 --budget full``) updates the study's table instead of replacing it. A
    ``comparison.json`` of another kind (``train.py``'s has no load) or scenario is not one."""
    import json

    held = []
    for path in [out / "comparison.json", *sorted(out.glob("load-*/comparison.json"))]:
        if not path.exists():
            continue
        try:
            r = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise ValueError(f"out (--out): {path} is not readable JSON ({err}). Fix: delete it or re-run its "
                             "load with --force.") from None
        if isinstance(r, dict) and "load" in r and r.get("base") == scenario and "verdict" in r:
            held.append(r)
    return sorted(held, key=lambda r: -1.0 if r["load"] is None else r["load"])


def commands(results: list[dict]) -> str:
    """The markdown lines that say how each load's row was made (command, budget, seconds, commit)."""
    lines = ["Commands:"]
    for r in results:
        load = "as is" if r["load"] is None else f"load {r['load']:g}"
        lines.append(f"- {load}: `{r['command']}` (budget {r['config']['budget']}, {r['seconds']:.0f} s, "
                     f"commit {r['commit']})")
    return "\n".join(lines) + "\n"


def plot(results: list[dict], path: Path, title: str) -> Path:
    """The headline per load, learned against each load's best rule, with 95% intervals."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    head = results[0]["headline"]
    loads = [r["load"] for r in results]
    x = np.arange(len(results), dtype=float) if None in loads else np.asarray(loads, float)
    shift = 0.01 * (np.ptp(x) or 1.0)  # the two series side by side
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for k, (name, pick) in enumerate((("learned", lambda r: "learned"),
                                      ("best rule", lambda r: r["verdict"]["best_rule"]))):
        pts = [(xi + (2 * k - 1) * shift, r["rows"][pick(r)]) for xi, r in zip(x, results, strict=True)
               if pick(r) in r["rows"] and "arrivals" in r["rows"][pick(r)]]
        if pts:
            y = np.array([m[head] for _, m in pts])
            ci = np.array([m[f"{head}_ci"] for _, m in pts], float)
            ax.errorbar([p for p, _ in pts], y, yerr=[y - ci[:, 0], ci[:, 1] - y], marker="o", capsize=3,
                        label=name)
    if None in loads:
        ax.set_xticks(x, ["as is"] * len(x))
    else:
        ax.set_xlabel("load (fraction of the reference rate)")
    ax.set_ylabel(results[0]["headline_label"])
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def commit() -> str | None:
    """This checkout's short commit, or None outside git."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def write_summary(out: Path, scenario: str, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """study.md and study.png over every load held in ``out`` (``held_results``), and study.json:
    ``run`` (what a run says of itself; None: the study.json there) with the table, the held
    loads and the files. What ``run_study`` ends with, and what rebuilds a study's summary
    after a load's folder was copied in from a run elsewhere."""
    import json

    from drl_ac.checkpoint import write_json

    held = held_results(out, scenario)
    table = summary(held)
    (out / "study.md").write_text(f"# Study of {scenario}\n\n{table}\n{commands(held)}")
    files = [str(out / "study.md"), str(plot(held, out / "study.png", f"{scenario}: learned vs the best rule, 95% CI")),
             str(out / "study.json")]
    if run is None:
        run = json.loads((out / "study.json").read_text()) if (out / "study.json").exists() else {}
    result = {**run, "held_loads": [r["load"] for r in held], "table": table, "files": files}
    write_json(out / "study.json", result)
    return result
