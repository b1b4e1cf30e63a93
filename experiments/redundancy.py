"""Redundancy-d control: a learned choice of d per job against every fixed d and a tuned
load-threshold rule, at several loads (the scenario `redundancy_ps` with its arrival rate
set to a fraction of lambda*(d = 1)).

    python experiments/redundancy.py                        # loads 0.3 0.5 0.7 0.9, JSON + table
    python experiments/redundancy.py --loads 0.5 --steps 500000 --arrivals 50000

For each load: fixed d in {1..D} (a d whose lambda*(d) is below the arrival rate is unstable
and is reported as such, not simulated), the rule "d = D when fewer than k jobs are in the
system, else 1" with k tuned on common random numbers, and a differential Q-learner trained
with the average-cost reward -response time. All are evaluated on the same fresh arrivals;
the figure is the mean response time with its 95% interval over instances.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import yaml

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.metrics import evaluate
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.theory.redundancy import stability_threshold
from envs import NetworkSpec
from envs.spec import SCENARIO_DIR


@dataclass
class FixedD:
    action: int

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.full(obs.shape[0], self.action, np.int64)


@dataclass
class LoadThreshold:
    """d = the largest choice when fewer than k jobs are in the system, else the smallest."""

    k: int
    top: int

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.where(obs[:, -1] < self.k, self.top, 0).astype(np.int64)


def scenario_at(rate: float, base: str = "redundancy_ps") -> NetworkSpec:
    cfg = yaml.safe_load((SCENARIO_DIR / f"{base}.yaml").read_text())
    cfg["arrival"] = {"dist": "exponential", "rate": float(rate)}
    cfg["name"] = f"{base}@{rate:g}"
    return NetworkSpec.from_dict(cfg)


def row(name: str, m: dict) -> dict:
    return {"policy": name, "mean_response": m["mean_delay"], "ci": m["mean_delay_ci"], "arrivals": m["arrivals"]}


def compare(load: float, args) -> list[dict]:
    base = scenario_at(1.0)
    red = base.redundancy
    lam_star = {d: stability_threshold(red.servers, d, red.copies, size=red.size, scale=red.scale, factor=red.factor)
                for d in red.choices}
    rate = load * lam_star[1]
    spec = scenario_at(rate)
    run = {"arrivals": args.arrivals, "seed": args.seed + 10_000, "num_envs": args.num_envs, "warmup": args.warmup}
    rows = []
    for a, d in enumerate(red.choices):
        if rate >= lam_star[d]:
            rows.append({"policy": f"d = {d}", "mean_response": float("inf"), "ci": None,
                         "note": f"unstable: lambda {rate:g} >= lambda*(d={d}) {lam_star[d]:.3g}"})
        else:
            rows.append(row(f"d = {d}", evaluate(FixedD(a), spec, **run)))
    tune = {"arrivals": args.tune_arrivals, "seed": args.seed + 777, "num_envs": args.num_envs, "warmup": args.warmup}
    top = len(red.choices) - 1
    best = min((evaluate(LoadThreshold(k, top), spec, **tune)["mean_delay"], k) for k in range(1, args.max_k + 1, args.k_step))
    rows.append(row(f"threshold (d = {red.choices[-1]} iff jobs < {best[1]})",
                    evaluate(LoadThreshold(best[1], top), spec, **run)))
    torch.manual_seed(args.seed)
    trainer = Trainer(TrainConfig(scenario="redundancy_ps", steps=args.steps, num_envs=args.train_envs,
                                  seed=args.seed, exploration_start=args.exploration_start,
                                  reset_backlog=args.reset_backlog), spec=spec)
    trainer.train()
    rows.append(row("learned", evaluate(LoadedPolicy(trainer.policy_section()), spec, **run)))
    for r in rows:
        r.update({"load": load, "rate": rate})
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loads", type=float, nargs="+", default=[0.3, 0.5, 0.7, 0.9])
    p.add_argument("--steps", type=int, default=1_500_000, help="training decisions per load")
    p.add_argument("--train-envs", type=int, default=1024)
    p.add_argument("--arrivals", type=int, default=200_000, help="evaluation arrivals per policy")
    p.add_argument("--tune-arrivals", type=int, default=40_000)
    p.add_argument("--max-k", type=int, default=40)
    p.add_argument("--k-step", type=int, default=1, help="grid step of the threshold k")
    p.add_argument("--num-envs", type=int, default=500)
    p.add_argument("--warmup", type=int, default=2000,
                   help="warm-up steps per instance (fixed: near lambda*(d) a drift test would run for long)")
    p.add_argument("--exploration-start", type=float, default=0.1,
                   help="initial exploration (random d overloads the system near lambda*(d))")
    p.add_argument("--reset-backlog", type=int, default=200,
                   help="a training instance holding more jobs restarts empty (0: never)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("results/redundancy.json"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for load in args.loads:
        for r in compare(load, args):
            rows.append(r)
            ci = "" if r["ci"] is None else f" [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
            print(f"load {load:.1f}  {r['policy']:<36} {r['mean_response']:.3f}{ci}", file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print("| load | policy | mean response [95% CI] |\n|---|---|---|")
    for r in rows:
        ci = r.get("note") if r["ci"] is None else f"{r['mean_response']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
        print(f"| {r['load']:.1f} | {r['policy']} | {ci} |")


if __name__ == "__main__":
    main()
