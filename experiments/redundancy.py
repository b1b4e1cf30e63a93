"""Redundancy-d control: a learned choice of d per job against every fixed d and a tuned
load-threshold rule, at several loads (the scenario `redundancy_ps` with its arrival rate
set to a fraction of lambda*(d = 1)).

    python experiments/redundancy.py --jobs 2                  # loads 0.3 0.5 0.7 0.9, JSON + table
    python experiments/redundancy.py --loads 0.5 --steps 500000 --arrivals 50000
    python experiments/redundancy.py --quick                   # tiny sizes (what the test runs)

At each load, three seeds: tuning (777), validation (555), evaluation (10000), each with its
own instances; every policy on one seed sees the same arrivals (common random numbers).
  * fixed d in {1..D}: a d whose lambda*(d) is at or below the arrival rate is unstable and
    reported as such, not simulated; the best on the tuning seed is the *default*;
  * the rule "d = D when fewer than k jobs are in the system, else 1", k tuned on the tuning seed;
  * learned: differential Q-learners (one per seed x cost charge), their greedy policies at
    --snapshots points of each run, each also guarded by the default (it leaves the default
    only where its advantage is at least a bias, drl_ac.evaluation.selection), the candidate
    with the lowest mean response on the validation seed.
All are then evaluated on the evaluation seed; the learned one is compared with each rule by
the paired difference of mean response times on those arrivals, with its 95% interval
(drl_ac.evaluation.metrics.paired_difference). The claim of the issue: at every load the
learned controller is no worse than the best fixed d (the interval of the difference reaches
0 or below) and at one load at least it is strictly better than every fixed d (every
interval below 0).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from drl_ac.evaluation.metrics import evaluate, paired_difference
from drl_ac.evaluation.selection import (
    EVALUATION,
    TUNING,
    VALIDATION,
    ConstantAction,
    deviation,
    select_learned,
)
from drl_ac.learning.learner import LearnerConfig
from drl_ac.learning.trainer import TrainConfig
from drl_ac.theory.redundancy import stability_threshold
from envs import NetworkSpec
from envs.engine import CapacityError
from envs.spec import SCENARIO_DIR

ROOT = Path(__file__).resolve().parents[1]


class LoadThreshold:
    """d = the largest choice when fewer than k jobs are in the system, else the smallest."""

    def __init__(self, k: int, top: int):
        self.k, self.top = k, top

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.where(obs[:, -1] < self.k, self.top, 0).astype(np.int64)


def scenario_at(rate: float, base: str = "redundancy_ps") -> NetworkSpec:
    cfg = yaml.safe_load((SCENARIO_DIR / f"{base}.yaml").read_text())
    cfg["arrival"] = {"dist": "exponential", "rate": float(rate)}
    cfg["name"] = f"{base}@{rate:g}"
    return NetworkSpec.from_dict(cfg)


def measure(policy, spec: NetworkSpec, opts: dict) -> dict:
    """evaluate(), with a job table outgrowing max_jobs read as instability."""
    try:
        return evaluate(policy, spec, **opts)
    except CapacityError:
        return {"mean_delay": math.inf, "unstable": f"job table over max_jobs {opts.get('max_jobs')}"}


def row(name: str, m: dict) -> dict:
    if "unstable" in m:
        return {"policy": name, "mean_response": math.inf, "ci": None, "unstable": m["unstable"]}
    return {"policy": name, "mean_response": m["mean_delay"], "ci": m["mean_delay_ci"], "arrivals": m["arrivals"]}


def compare(load: float, args: argparse.Namespace) -> list[dict]:
    torch.set_num_threads(1)
    t0 = time.perf_counter()

    def say(text: str) -> None:
        print(f"[load {load:g} {time.perf_counter() - t0:6.0f} s] {text}", file=sys.stderr, flush=True)

    red = scenario_at(1.0).redundancy
    lam_star = {d: stability_threshold(red.servers, d, red.copies, size=red.size, scale=red.scale, factor=red.factor)
                for d in red.choices}
    rate = load * lam_star[1]
    spec = scenario_at(rate)
    common = {"warmup": args.warmup, "max_jobs": args.max_jobs}
    evaluation = {**common, "arrivals": args.arrivals, "seed": args.seed + EVALUATION, "num_envs": args.num_envs,
                  "per_instance": True}
    tuning = {**common, "arrivals": args.tune_arrivals, "seed": args.seed + TUNING, "num_envs": args.tune_envs}
    validation = {**tuning, "seed": args.seed + VALIDATION}
    stable = [a for a, d in enumerate(red.choices) if rate < lam_star[d]]

    # rules: fixed d (the best on the tuning seed is the learner's default), the threshold rule
    tuned_d = {a: measure(ConstantAction(a), spec, tuning)["mean_delay"] for a in stable}
    default = min(tuned_d, key=tuned_d.get)
    top = len(red.choices) - 1
    tuned_k = {k: measure(LoadThreshold(k, top), spec, tuning)["mean_delay"]
               for k in range(1, args.max_k + 1, args.k_step)}
    k = min(tuned_k, key=tuned_k.get)
    say(f"tuned: default d = {red.choices[default]}, threshold k = {k}")
    rules: dict[str, dict] = {}
    for a, d in enumerate(red.choices):
        rules[f"d = {d}"] = measure(ConstantAction(a), spec, evaluation) if a in stable else \
            {"unstable": f"lambda {rate:.4g} >= lambda*(d={d}) {lam_star[d]:.4g}"}
    rules[f"threshold (d = {red.choices[-1]} iff jobs < {k})"] = measure(LoadThreshold(k, top), spec, evaluation)

    # learners: snapshots x (greedy, guarded by the default), chosen on the validation seed
    configs = [TrainConfig(scenario="redundancy_ps", steps=args.steps, num_envs=args.train_envs, seed=seed,
                           exploration_start=args.exploration_start, cost=cost, updates_per_step=args.updates_per_step,
                           reset_backlog=args.reset_backlog if cost == "holding" else 0,
                           learner=LearnerConfig(hidden=tuple(args.hidden)))
               for seed in args.seeds for cost in args.costs]
    sel = select_learned(spec, configs, args.snapshots, default, args.quantiles,
                         lambda p: row("", measure(p, spec, validation)), args.seed + VALIDATION, args.warmup, say)
    chosen, scored, states = sel.chosen, sel.scored, sel.states
    learned = measure(chosen.policy(), spec, evaluation)
    rows = [{**row(name, m), "rule": True} for name, m in rules.items()]
    out = {**row("learned", learned), "learned": True, "chosen": chosen.label,
           "deviation_from_default": deviation(chosen.policy(), default, states),
           "validation": [{"label": s["label"], "mean_response": s["mean_response"]} for s in scored]}
    if "unstable" not in learned:
        out["versus"] = {name: paired_difference(learned, m) for name, m in rules.items() if "unstable" not in m}
    rows.append(out)
    for r in rows:
        r.update({"load": load, "rate": rate, "default": f"d = {red.choices[default]}"})
    say("done")
    return rows


def _compare(job: tuple[float, argparse.Namespace]) -> list[dict]:
    return compare(*job)


def verdict(rows: list[dict]) -> dict:
    """Per load: no worse than the best fixed d on the evaluation seed (the paired interval of
    learned - best reaches 0 or below), better than every fixed d (every paired interval below 0).
    The claim: no worse at every load, better than every fixed d at one load at least."""
    per = {}
    for load in sorted({r["load"] for r in rows}):
        at = [r for r in rows if r["load"] == load]
        learned = next(r for r in at if r.get("learned"))
        fixed = [r for r in at if r["policy"].startswith("d = ") and "unstable" not in r]
        if "unstable" in learned or not fixed:
            per[load] = {"no_worse": False, "better_than_every_d": False}
            continue
        best = min(fixed, key=lambda r: r["mean_response"])
        vs = learned["versus"]
        per[load] = {"best_d": best["policy"], "vs_best": vs[best["policy"]],
                     "no_worse": vs[best["policy"]]["ci"][0] <= 0,
                     "better_than_every_d": all(vs[r["policy"]]["ci"][1] < 0 for r in fixed)}
    return {"per_load": per, "holds": bool(per) and all(v["no_worse"] for v in per.values())
            and any(v["better_than_every_d"] for v in per.values())}


def _fmt(r: dict) -> str:
    if "unstable" in r:
        return f"unstable ({r['unstable']})"
    return f"{r['mean_response']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"


def _diff(r: dict, name: str) -> str:
    d = r.get("versus", {}).get(name)
    return "" if d is None else f"{d['difference']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loads", type=float, nargs="+", default=[0.3, 0.5, 0.7, 0.9])
    p.add_argument("--jobs", type=int, default=1, help="loads run at once, one process each")
    p.add_argument("--steps", type=int, default=1_500_000, help="training decisions per learner")
    p.add_argument("--train-envs", type=int, default=256)
    p.add_argument("--updates-per-step", type=int, default=4, help="gradient steps per vector step")
    p.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="learner seeds")
    p.add_argument("--costs", nargs="+", default=["holding", "own"], choices=["holding", "own"],
                   help="how decisions are charged (TrainConfig.cost); one learner per seed and cost")
    p.add_argument("--snapshots", type=int, default=3, help="greedy policies kept per learner")
    p.add_argument("--quantiles", type=float, nargs="*", default=[0.5, 0.9],
                   help="guard biases: quantiles of the positive advantages over the default")
    p.add_argument("--exploration-start", type=float, default=0.1,
                   help="initial exploration (random d overloads the system near lambda*(d))")
    p.add_argument("--reset-backlog", type=int, default=200,
                   help="a training instance holding more jobs restarts empty (holding cost; 0: never)")
    p.add_argument("--arrivals", type=int, default=100_000, help="evaluation arrivals per policy")
    p.add_argument("--num-envs", type=int, default=500, help="evaluation instances")
    p.add_argument("--tune-arrivals", type=int, default=20_000, help="per rule or candidate on tuning/validation")
    p.add_argument("--tune-envs", type=int, default=100)
    p.add_argument("--max-k", type=int, default=40)
    p.add_argument("--k-step", type=int, default=3, help="grid step of the threshold k")
    p.add_argument("--warmup", type=int, default=3000,
                   help="warm-up steps per instance (fixed: near lambda*(d) a drift test would run for long)")
    p.add_argument("--max-jobs", type=int, default=1 << 12, help="job table bound per instance (unstable beyond)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="tiny sizes: every part runs")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "redundancy.json")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.loads, args.steps, args.train_envs, args.seeds, args.snapshots = [0.5], 20_000, 64, [0], 2
        args.arrivals, args.num_envs, args.tune_arrivals, args.tune_envs = 4000, 40, 2000, 20
        args.max_k, args.k_step, args.warmup, args.hidden = 10, 5, 200, [16, 16]
    t0 = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save(rows: list[dict]) -> dict:  # after every load: a long run cut short keeps what it measured
        out = {"rows": rows, "verdict": verdict(rows), "seconds": time.perf_counter() - t0,
               "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
        args.out.write_text(json.dumps(out, indent=1, default=float) + "\n")
        return out

    rows: list[dict] = []
    if args.jobs > 1 and len(args.loads) > 1:
        with multiprocessing.get_context("spawn").Pool(min(args.jobs, len(args.loads))) as pool:
            for part in pool.imap(_compare, [(load, args) for load in args.loads]):
                rows += part
                out = save(rows)
    else:
        for load in args.loads:
            rows += compare(load, args)
            out = save(rows)
    print("| load | policy | mean response [95% CI] | learned - this, paired [95% CI] |\n|---|---|---|---|")
    for r in rows:
        learned = next(x for x in rows if x["load"] == r["load"] and x.get("learned"))
        name = f"learned ({r['chosen']})" if r.get("learned") else r["policy"]
        print(f"| {r['load']:g} | {name} | {_fmt(r)} | {_diff(learned, r['policy'])} |")
    print(f"claim (no worse than the best fixed d at every load, better than every fixed d at one): "
          f"{json.dumps(out['verdict']['holds'])}")
    return out


if __name__ == "__main__":
    main()
