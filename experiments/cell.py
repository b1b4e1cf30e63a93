"""A 5G cell: the admission rules operators run, each tuned, against a learned
controller, overall, per UE type and per hour, on the same fresh arrivals.

    python experiments/cell.py --minutes 7.5 --jobs 7 --out results/cell   # everything in a slot
    python experiments/cell.py --policy checkpoints/cell_5g/policy.pt      # a trained policy: no training
    python experiments/cell.py --quick --scenario tiny.yaml --out /tmp/c   # tiny sizes (what the test runs)

Jobs, --jobs processes at once, each started as soon as what it needs is done:
  * rules, each tuned on the tuning seed for the lowest blocking at dropping <= eps with its
    one-sided 95% margin (envs.systems.cell.rules): PRB threshold, then per-type
    thresholds from it; guard channel, then fractional guard channel; with a daily profile,
    per-type thresholds re-tuned per hour from the per-type ones. A search cut by its
    deadline keeps the best rule found so far (``complete`` false in the JSON);
  * learners (--seeds), trained until their deadline (Trainer.train_until), then each
    calibrated on the validation seed: the most admitting bias whose dropping has a one-sided
    95% bound <= eps. The learner with the lowest calibrated blocking there is chosen;
  * every policy, accept-all included, evaluated on the same fresh arrivals (evaluation seed)
    once it is tuned or chosen.
Training, calibration and tuning stop --final-seconds before the end of the slot, and the
evaluations still running 10 s before it are stopped. Then OUT/cell.json, OUT/cell_blocking.png
and OUT/cell_dropping.png (per hour, the learned policy against the best static rule and the
per-hour rule, 95% intervals), the chosen policy in OUT/policy (checkpoints/paper_tandem's
files), the tables, and the verdict of the issue's claim: learned blocking below the best
static threshold rule's at dropping <= eps, with 95% intervals apart; and how it compares
with the per-hour rule. A policy counts as meeting eps on the final evaluation when its
dropping estimate is <= eps (each was chosen with its margin on its own seed); the one-sided
bounds are reported too.

Seeds: the learners simulate on their own seeds (0, 1, ...), rules are tuned on 777, learners
calibrated and chosen on 555, everything evaluated on 20000. A part that fails or runs out of
time is reported in the JSON (``errors``); the others still are.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drl_ac.checkpoint import finite_json, load_policy, save_atomic, save_policy_folder
from drl_ac.cli import HelpFormatter
from drl_ac.evaluation.calibration import calibrate_bias, calibrated
from drl_ac.evaluation.metrics import evaluate
from drl_ac.learning.learner import LearnerConfig
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.parallel import Worker, WorkerFailed
from envs import NetworkSpec, load_spec
from envs.systems.cell import CellSystem
from envs.systems.cell import rules as cb

ROOT = Path(__file__).resolve().parents[1]
TUNING_SEED, VALIDATION_SEED, EVALUATION_SEED = 777, 555, 20_000
STATIC = ("PRB threshold", "per-type thresholds", "guard channel", "fractional guard channel")
PER_HOUR = "per-type thresholds per phase"
LEARNED = "learned"
KEPT = ("blocking", "dropping", "dropping_upper", "handover_dropping", "carried_load", "new_ues", "handovers",
        "arrivals", "instances", "window_time", "warmup_time")  # and their _ci, _se, _by_type, _by_phase


def scenario_spec(scenario: str, eps: float | None) -> NetworkSpec:
    return load_spec(scenario, eps=eps) if eps is not None else load_spec(scenario)


def kept(m: dict) -> dict:
    """The measures a row reports (overall, per type, per phase, with intervals)."""
    return {k: v for k, v in m.items() if k.split("_by_")[0].removesuffix("_ci").removesuffix("_se") in KEPT
            or k == "phase_bins"}


# ---------------------------------------------------------------- the jobs (one process each)
def tuned(result: cb.TuningResult, seconds: float) -> dict:
    return {"rule": result.rule, "describe": result.rule.describe(), "complete": result.complete,
            "tuning": kept(result.metrics), "evaluations": len(result.trace), "seconds": seconds}


def tune_thresholds(scenario: str, eps: float | None, arrivals: int, num_envs: int, deadline: float,
                    max_rounds: int) -> dict:
    """PRB threshold, then the per-type thresholds from it."""
    spec, t0 = scenario_spec(scenario, eps), time.time()
    options = {"arrivals": arrivals, "seed": TUNING_SEED, "num_envs": num_envs, "max_arrivals": 4 * arrivals,
               "deadline": deadline}
    prb = cb.tune_prb_threshold(spec, **options)
    t1 = time.time()
    types = cb.tune_type_thresholds(spec, prb.rule.T, max_rounds=max_rounds, **options)
    return {"PRB threshold": tuned(prb, t1 - t0), "per-type thresholds": tuned(types, time.time() - t1)}


def tune_guards(scenario: str, eps: float | None, arrivals: int, num_envs: int, deadline: float) -> dict:
    spec, t0 = scenario_spec(scenario, eps), time.time()
    options = {"arrivals": arrivals, "seed": TUNING_SEED, "num_envs": num_envs, "max_arrivals": 4 * arrivals,
               "deadline": deadline}
    guard = cb.tune_guard(spec, **options)
    t1 = time.time()
    fractional = cb.tune_fractional_guard(spec, free=spec.block.prbs - guard.rule.g, **options)
    return {"guard channel": tuned(guard, t1 - t0), "fractional guard channel": tuned(fractional, time.time() - t1)}


def tune_per_hour(scenario: str, eps: float | None, base: tuple[int, ...], arrivals: int, num_envs: int,
                  deadline: float) -> dict:
    spec, t0 = scenario_spec(scenario, eps), time.time()
    result = cb.tune_phase_thresholds(spec, base, arrivals=arrivals, seed=TUNING_SEED, num_envs=num_envs,
                                      deadline=deadline)
    return {PER_HOUR: tuned(result, time.time() - t0)}


def learn(scenario: str, eps: float | None, seed: int, num_envs: int, updates_per_step: int, lr: float,
          hidden: tuple[int, ...], deadline: float, seconds: float | None, calibration_arrivals: int,
          calibration_envs: int, calibration_deadline: float, folder: str) -> dict:
    """Train until ``deadline`` (for ``seconds`` at most), calibrate on the validation seed
    (stopping by ``calibration_deadline`` with the best bias known to meet eps), save the
    policy section."""
    spec, t0 = scenario_spec(scenario, eps), time.time()
    if seconds is not None:
        deadline = min(deadline, t0 + seconds)
    config = TrainConfig(scenario=scenario, eps=eps, seed=seed, num_envs=num_envs, steps=10**9,
                         updates_per_step=updates_per_step, learner=LearnerConfig(hidden=tuple(hidden), lr=lr))
    trainer = Trainer(config, spec=spec)
    trainer.train_until(deadline)
    t1 = time.time()
    policy = trainer.policy()
    bias, m = calibrate_bias(policy, spec, spec.eps, arrivals=calibration_arrivals, seed=VALIDATION_SEED,
                             num_envs=calibration_envs, iterations=6, deadline=calibration_deadline)
    path = save_atomic(calibrated(policy, bias, m, spec.eps, seed=VALIDATION_SEED).section,
                       Path(folder) / f"learner-seed{seed}.pt")
    return {"seed": seed, "path": str(path), "decisions": trainer.decisions, "lam": trainer.lam,
            "rbar": float(trainer.learner.rbar), "bias": bias, "train_seconds": t1 - t0,
            "calibration_seconds": time.time() - t1, "validation": kept(m)}


def final_evaluation(scenario: str, eps: float | None, policy: Any, arrivals: int, num_envs: int) -> dict:
    """``policy``: a rule, or the path of a policy.pt."""
    spec = scenario_spec(scenario, eps)
    if isinstance(policy, str):
        policy = load_policy(policy)
    return kept(evaluate(policy, spec, arrivals=arrivals, seed=EVALUATION_SEED, num_envs=num_envs))


# ---------------------------------------------------------------- running jobs in processes
@dataclass
class Later:
    """A job argument computed from the results of the jobs it comes after."""

    make: Callable[[dict], Any]


@dataclass
class Job:
    fn: Callable
    kwargs: dict
    after: tuple[str, ...] = ()
    partial: bool = False


@dataclass
class Jobs:
    """Jobs run ``slots`` at a time, each in its own process (``drl_ac.parallel.Worker``: a
    fresh interpreter, one thread), in the order their dependencies allow. A job that raises or
    is still running at ``run``'s deadline gets ``{"error": ...}``. ``slots`` 1: in this
    process, one after the other (the test; no deadline)."""

    slots: int
    jobs: dict[str, Job] = field(default_factory=dict)

    def add(self, name: str, fn: Callable, after: tuple[str, ...] = (), partial: bool = False,
            **kwargs: Any) -> None:
        """``after``: jobs whose results its ``Later`` arguments read (all must succeed, or with
        ``partial`` at least one: those that failed are left out)."""
        self.jobs[name] = Job(fn, kwargs, after, partial)

    def _arguments(self, job: Job, done: dict) -> dict:
        failed = [d for d in job.after if "error" in done[d]]
        if failed and (not job.partial or len(failed) == len(job.after)):
            raise RuntimeError(f"needs {', '.join(failed)}, which failed")
        results = {d: done[d]["result"] for d in job.after if d not in failed}
        return {k: v.make(results) if isinstance(v, Later) else v for k, v in job.kwargs.items()}

    def run(self, until: float, say: Callable[[str], None]) -> dict[str, dict]:
        done: dict[str, dict] = {}
        pending = list(self.jobs)
        running: dict[str, tuple[Worker, float]] = {}
        while pending or running:
            for name in [n for n in pending if all(d in done for d in self.jobs[n].after)]:
                if (len(running) >= self.slots or time.time() > until) and self.slots > 1:
                    break
                pending.remove(name)
                job, t0 = self.jobs[name], time.time()
                try:
                    kwargs = self._arguments(job, done)
                except Exception as exc:  # noqa: BLE001 - a dependency failed: report, go on
                    done[name] = {"error": str(exc), "seconds": 0.0}
                    continue
                say(f"start {name}")
                if self.slots == 1:
                    done[name] = {**_call(job.fn, kwargs), "seconds": time.time() - t0}
                    say(f"done {name}{' (failed)' if 'error' in done[name] else ''}")
                    continue
                running[name] = (Worker(_one_thread, job.fn, kwargs), t0)
            for name, (worker, t0) in list(running.items()):
                if not worker.ready():
                    continue
                try:
                    done[name] = worker.recv()
                except WorkerFailed as exc:
                    done[name] = {"error": str(exc)}
                except (EOFError, OSError):
                    done[name] = {"error": f"the process ended with code {worker.process.exitcode} and no result"}
                worker.cancel()
                done[name]["seconds"] = time.time() - t0
                del running[name]
                say(f"done {name}{' (failed)' if 'error' in done[name] else ''}")
            if time.time() > until and running:
                for name, (worker, t0) in running.items():
                    worker.cancel()
                    done[name] = {"error": "out of time: stopped at the slot's deadline", "seconds": time.time() - t0}
                    say(f"stopped {name}: out of time")
                running.clear()
            if not running and pending and (time.time() > until and self.slots > 1 or not any(
                    all(d in done for d in self.jobs[n].after) for n in pending)):
                break  # out of time (or, never with acyclic dependencies, nothing can start)
            if running:
                time.sleep(0.2)
        for name in pending:
            done.setdefault(name, {"error": "not started", "seconds": 0.0})
        return done


def _call(fn: Callable, kwargs: dict) -> dict:
    try:
        return {"result": fn(**kwargs)}
    except Exception:  # noqa: BLE001 - the job's failure is its result
        return {"error": traceback.format_exc()}


def _one_thread(fn: Callable, kwargs: dict) -> dict:
    """A job in its own process (``drl_ac.parallel.Worker``): one torch thread, its failure its result."""
    torch.set_num_threads(1)
    return _call(fn, kwargs)


# ---------------------------------------------------------------- verdict, tables, plots
def meets(row: dict, eps: float) -> bool:
    return math.isfinite(row.get("dropping", math.nan)) and row["dropping"] <= eps


def verdict(rows: dict[str, dict], eps: float) -> dict:
    """The claim: learned blocking below the best static threshold rule's (the lowest blocking
    among those meeting eps) at dropping <= eps, 95% intervals apart; and the per-hour rule."""
    static = {n: rows[n] for n in STATIC if n in rows and meets(rows[n], eps)}
    out: dict[str, Any] = {"eps": eps, "static_meeting_eps": sorted(static)}
    learned = rows.get(LEARNED)
    if learned is None or not static:
        out["holds"] = None
        out["why"] = "no learned policy evaluated" if learned is None else "no static rule meets eps"
        return out
    best = min(static, key=lambda n: static[n]["blocking"])
    out.update({"best_static": best, "best_static_blocking": static[best]["blocking"],
                "best_static_blocking_ci": static[best]["blocking_ci"], "learned_blocking": learned["blocking"],
                "learned_blocking_ci": learned["blocking_ci"], "learned_dropping": learned["dropping"],
                "learned_meets_eps": meets(learned, eps)})
    out["intervals_apart"] = learned["blocking_ci"][1] < static[best]["blocking_ci"][0]
    out["holds"] = bool(out["learned_meets_eps"] and out["intervals_apart"])
    hour = rows.get(PER_HOUR)
    if hour is not None:
        lo, hi = learned["blocking_ci"], hour["blocking_ci"]
        out["per_hour"] = {"blocking": hour["blocking"], "blocking_ci": hi, "dropping": hour["dropping"],
                           "meets_eps": meets(hour, eps),
                           "learned_vs_per_hour": "learned lower, intervals apart" if lo[1] < hi[0] else
                           "per-hour rule lower, intervals apart" if hi[1] < lo[0] else "intervals overlap"}
    return out


def _ci(row: dict, key: str, digits: int = 4) -> str:
    lo, hi = row[f"{key}_ci"]
    return f"{row[key]:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def tables(rows: dict[str, dict], spec: NetworkSpec, described: dict[str, str]) -> str:
    names = [t.name for t in spec.block.types]
    first = next(iter(rows.values()))
    lines = [f"{spec.name}: {spec.block.prbs} PRBs, eps {spec.eps} on P(dropped | admitted); {first['new_ues']} new "
             f"UEs on {first['instances']} instances (evaluation seed {EVALUATION_SEED}); 95% intervals", "",
             "| policy | rule | blocking | dropping | dropping 95% bound | handover dropping | carried PRBs |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {n} | {described.get(n, '')} | {_ci(r, 'blocking')} | {_ci(r, 'dropping')} | "
              f"{r['dropping_upper']:.4f} | {r['handover_dropping']:.4f} | {r['carried_load']:.1f} |"
              for n, r in rows.items()]
    lines += ["", "| policy | " + " | ".join(f"{t}: blocking | {t}: dropping" for t in names) + " |",
              "|---|" + "---|---|" * len(names)]
    for n, r in rows.items():
        cells = []
        for k in range(len(names)):
            for key in ("blocking", "dropping"):
                v, (lo, hi) = r[f"{key}_by_type"][k], r[f"{key}_by_type_ci"][k]
                cells.append(f"{v:.4f} [{lo:.4f}, {hi:.4f}]")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: dict[str, dict], names: list[str], key: str, spec: NetworkSpec, path: Path) -> Path:
    """``key`` (blocking or dropping) per phase bin with its 95% interval, one line per policy."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = rows[names[0]]["phase_bins"]
    width = spec.period / bins
    hours = spec.period == 1440.0 and bins == 24
    x = np.arange(bins) + 0.5 if hours else (np.arange(bins) + 0.5) * width
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for name in names:
        r = rows[name]
        y = np.array(r[f"{key}_by_phase"], float)
        ci = np.array([c if c is not None else [np.nan, np.nan] for c in r[f"{key}_by_phase_ci"]], float)
        line, = ax.plot(x, y, marker="o", ms=3, label=f"{name} ({r[key]:.4f})")
        ax.fill_between(x, ci[:, 0], ci[:, 1], color=line.get_color(), alpha=0.2, linewidth=0)
    if key == "dropping":
        ax.axhline(spec.eps, color="black", linestyle=":", label=f"eps {spec.eps:g}")
    ax.set_xlabel("hour of the day" if hours else "time in the period")
    ax.set_ylabel("P(dropped | admitted)" if key == "dropping" else "P(blocked)")
    ax.set_title(f"{spec.name}: {key} by {'hour' if hours else 'phase'} (95% intervals)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- the experiment
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--scenario", default="cell_5g", help="a cell scenario (name or YAML)")
    p.add_argument("--eps", type=float, default=None, help="allowed dropping (default: the scenario's)")
    p.add_argument("--minutes", type=float, default=7.5, help="wall time of the whole run")
    p.add_argument("--jobs", type=int, default=7, help="processes at once (1: all in this process, in turn)")
    p.add_argument("--final-seconds", type=float, default=80.0,
                   help="kept at the end of the slot for the last evaluations, the files and the tables")
    p.add_argument("--calibration-seconds", type=float, default=110.0,
                   help="kept after training for each learner's calibration on the validation seed")
    p.add_argument("--per-hour-seconds", type=float, default=180.0,
                   help="kept for tuning the per-hour rule (after the per-type one)")
    p.add_argument("--policy", type=Path, default=None, help="evaluate this policy.pt instead of training")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="learners, one process each")
    p.add_argument("--num-envs", type=int, default=512, help="instances per learner")
    p.add_argument("--updates-per-step", type=int, default=4, help="gradient steps per vector step")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
    p.add_argument("--train-seconds", type=float, default=None,
                   help="train for this long at most (default: until the slot's training deadline)")
    p.add_argument("--calibration-arrivals", type=int, default=100_000, help="per evaluation of a calibration")
    p.add_argument("--calibration-envs", type=int, default=500)
    p.add_argument("--tune-arrivals", type=int, default=50_000,
                   help="per candidate rule (doubled up to 4x while undecided; 2x per evaluation of the per-hour "
                        "table)")
    p.add_argument("--tune-envs", type=int, default=400)
    p.add_argument("--type-rounds", type=int, default=40, help="rounds of the per-type coordinate search at most")
    p.add_argument("--eval-arrivals", type=int, default=400_000, help="arrivals per policy in the final evaluation")
    p.add_argument("--eval-envs", type=int, default=1000)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "cell", help="folder of cell.json, the PNGs and "
                   "the chosen policy (OUT/policy)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, all in this process (the test)")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.jobs, args.seeds, args.num_envs, args.updates_per_step, args.hidden = 1, [0], 32, 1, [16, 16]
        args.train_seconds, args.calibration_arrivals, args.calibration_envs = 1.0, 2000, 20
        args.tune_arrivals, args.tune_envs, args.type_rounds = 2000, 20, 1
        args.eval_arrivals, args.eval_envs = 6000, 60
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"  # for the processes spawned
    torch.set_num_threads(1)
    t0 = time.time()
    end = t0 + 60 * args.minutes
    deadline = end - args.final_seconds  # training, calibration and searches stop here
    t_start = time.perf_counter()

    def say(text: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - t_start:6.1f} s] {text}", file=sys.stderr, flush=True)

    spec = scenario_spec(args.scenario, args.eps)
    if not isinstance(spec.system, CellSystem):
        sys.exit(f"error: {args.scenario} is not a cell. Fix: give a scenario with a 'cell:' block.")
    out = args.out
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    jobs = Jobs(args.jobs)
    families, learners = plan(jobs, args, spec, deadline, work)
    say(f"{len(jobs.jobs)} jobs on {args.jobs} process(es); training, calibration and tuning stop at "
        f"{deadline - t0:.0f} s, the run at {end - t0:.0f} s")
    done = jobs.run(until=end - 10.0, say=say)
    return report(done, args, spec, families, learners, t0, say)


def plan(jobs: Jobs, args: argparse.Namespace, spec: NetworkSpec, deadline: float, work: Path
         ) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """The run's jobs: the learners, each rule family's tuning, and each policy's final
    evaluation as soon as it is tuned or chosen. Returns the families (job -> rule names) and
    the learners' job names."""
    common = {"scenario": args.scenario, "eps": args.eps}
    tune = {**common, "arrivals": args.tune_arrivals, "num_envs": args.tune_envs}
    final = {**common, "arrivals": args.eval_arrivals, "num_envs": args.eval_envs}
    periodic = spec.period is not None
    learners = [f"learner {seed}" for seed in args.seeds] if args.policy is None else []
    for name, seed in zip(learners, args.seeds, strict=False):
        jobs.add(name, learn, **common, seed=seed, num_envs=args.num_envs, updates_per_step=args.updates_per_step,
                 lr=args.lr, hidden=tuple(args.hidden), deadline=deadline - args.calibration_seconds,
                 seconds=args.train_seconds, calibration_arrivals=args.calibration_arrivals,
                 calibration_envs=args.calibration_envs, calibration_deadline=deadline, folder=str(work))
    families = {"thresholds": ("PRB threshold", "per-type thresholds"),
                "guards": ("guard channel", "fractional guard channel")}
    jobs.add("thresholds", tune_thresholds, **tune, max_rounds=args.type_rounds,
             deadline=deadline - (args.per_hour_seconds if periodic else 0.0))
    jobs.add("guards", tune_guards, **tune, deadline=deadline)
    if periodic:
        families["per-hour"] = (PER_HOUR,)
        jobs.add("per-hour", tune_per_hour, after=("thresholds",), **common,
                 base=Later(lambda r: r["thresholds"]["per-type thresholds"]["rule"].Ts),
                 arrivals=2 * args.tune_arrivals, num_envs=args.tune_envs, deadline=deadline)
    # each policy is evaluated as soon as it is tuned or chosen, in a free process (the learned
    # one first when several are ready)
    if args.policy is not None:
        jobs.add(f"evaluate {LEARNED}", final_evaluation, **final, policy=str(args.policy))
    else:
        jobs.add(f"evaluate {LEARNED}", final_evaluation, after=tuple(learners), partial=True, **final,
                 policy=Later(lambda r: choose(list(r.values()), spec.eps)["path"]))
    jobs.add("evaluate accept-all", final_evaluation, **final, policy=cb.CellAcceptAll(cb.cell_layout(spec)))
    for family, names in families.items():
        for name in names:
            jobs.add(f"evaluate {name}", final_evaluation, after=(family,), **final,
                     policy=Later(lambda r, f=family, n=name: r[f][n]["rule"]))
    return families, learners


def report(done: dict[str, dict], args: argparse.Namespace, spec: NetworkSpec, families: dict, learners: list[str],
           t0: float, say: Callable[[str], None]) -> dict:
    """The finished jobs as cell.json, the plots, the chosen policy's folder and the tables."""
    out, periodic = args.out, spec.period is not None
    errors = {name: r["error"] for name, r in done.items() if "error" in r}

    rules: dict[str, dict] = {}
    for family in families:
        rules.update(done[family].get("result", {}))
    trained = [done[name]["result"] for name in learners if "result" in done[name]]
    chosen = choose(trained, spec.eps) if args.policy is None else None
    rows = {name: done[f"evaluate {name}"]["result"] for name in ("accept-all", *STATIC, PER_HOUR, LEARNED)
            if "result" in done.get(f"evaluate {name}", {})}
    described = {"accept-all": "admit if it fits", **{n: r["describe"] for n, r in rules.items()}}
    learned_path = str(args.policy) if args.policy is not None else (chosen["path"] if chosen else None)
    if learned_path is not None:
        described[LEARNED] = f"Q-network ({Path(learned_path).name})"

    result = {"scenario": spec.name, "eps": spec.eps, "prbs": spec.block.prbs,
              "types": [t.name for t in spec.block.types],
              "seeds": {"tuning": TUNING_SEED, "validation": VALIDATION_SEED, "evaluation": EVALUATION_SEED},
              "rules": {n: {k: v for k, v in r.items() if k != "rule"} for n, r in rules.items()},
              "learners": trained, "chosen": chosen and {k: chosen[k] for k in ("seed", "path", "validation")},
              "rows": rows, "described": described, "verdict": verdict(rows, spec.eps), "errors": errors,
              "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
              "job_seconds": {n: r["seconds"] for n, r in done.items()}}
    files = []
    shown = [n for n in (LEARNED, result["verdict"].get("best_static"), PER_HOUR) if n in rows]
    if shown and periodic:
        for key in ("blocking", "dropping"):
            try:
                files.append(str(plot(rows, shown, key, spec, out / f"cell_{key}.png")))
            except Exception:  # noqa: BLE001 - a plot must not cost the results
                errors[f"plot {key}"] = traceback.format_exc()
    if chosen is not None and LEARNED in rows:
        files += export_chosen(chosen, rows[LEARNED], spec, out / "policy", errors)
    result["files"] = files
    result["seconds"] = time.time() - t0
    (out / "cell.json").write_text(json.dumps(finite_json(result), indent=1, allow_nan=False) + "\n")
    if rows:
        print(tables(rows, spec, described))
    print(f"claim (learned blocking below the best static rule's at dropping <= eps, intervals apart): "
          f"{json.dumps(finite_json(result['verdict']))}")
    if errors:
        print(f"parts that failed: {', '.join(errors)} (details in {out / 'cell.json'})", file=sys.stderr)
    say(f"wrote {out / 'cell.json'}{', ' + ', '.join(files) if files else ''}")
    return result


def choose(learners: list[dict], eps: float) -> dict | None:
    """The learner with the lowest calibrated blocking on the validation seed among those whose
    calibration met eps with its margin (else the one closest to it)."""
    if not learners:
        return None
    ok = [r for r in learners if r["validation"]["dropping_upper"] <= eps]
    if ok:
        return min(ok, key=lambda r: r["validation"]["blocking"])
    return min(learners, key=lambda r: r["validation"]["dropping_upper"])


def export_chosen(chosen: dict, metrics: dict, spec: NetworkSpec, folder: Path, errors: dict) -> list[str]:
    """The chosen learner as ``checkpoints/paper_tandem/`` holds a policy, with its final evaluation."""
    policy = load_policy(chosen["path"])
    policy = policy.replace(metrics={**metrics, "scenario": spec.name, "seed": chosen["seed"], "bias": chosen["bias"],
                                     "lam": chosen["lam"], "rbar": chosen["rbar"], "decisions": chosen["decisions"],
                                     "validation": chosen["validation"], "evaluation_seed": EVALUATION_SEED})
    try:
        return [str(p) for p in save_policy_folder(policy, folder)]
    except Exception:  # noqa: BLE001 - policy.pt and metrics.json are written before the exports
        errors["export"] = traceback.format_exc()
        return [str(folder / n) for n in ("policy.pt", "metrics.json", "policy.pt2", "policy.onnx")
                if (folder / n).exists()]


if __name__ == "__main__":
    main()
