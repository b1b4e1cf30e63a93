"""Multiplier sweep (the paper's Fig. 3): train over a grid of lam and seeds, evaluate, and
pick lam* = argmin_lam g(lam), g(lam) = max_pi r_lam(pi), equivalently the smallest lam
whose violation is <= eps. Trials run in local processes or as Ray tasks."""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

RAY_HINT = 'Ray is not installed. Fix: pip install -e ".[distributed]" (or pip install ray)'


def lagrangian(metrics: dict, lam: float, eps: float) -> float:
    """Long-run average eq. 7 reward of a policy from its evaluation:
    r_lam = -P(R, d < d_ub) + lam * P(A) * (P(d < d_ub | A) - (1 - eps))."""
    return -metrics["objective"] + lam * metrics["acceptance"] * (eps - metrics["violation"])


def run_trial(trial: dict) -> dict:
    """Train one (scenario, lam, seed) and evaluate its greedy policy. Runs in a worker."""
    import torch

    from drl_ac.checkpoint import LoadedPolicy
    from drl_ac.evaluation.metrics import evaluate
    from drl_ac.learning.trainer import TrainConfig, Trainer
    from drl_ac.tracking import WandbLogger

    torch.set_num_threads(trial.get("threads", 1))
    config = TrainConfig(scenario=trial["scenario"], lam=float(trial["lam"]), seed=int(trial["seed"]),
                         steps=int(trial["steps"]), num_envs=int(trial["num_envs"]), device=trial.get("device", "cpu"))
    trainer = Trainer(config)
    logger = WandbLogger(trial.get("wandb", False), config.to_dict(), group=trial.get("group"),
                         name=f"{trial['scenario']}-lam{trial['lam']}-seed{trial['seed']}")
    trainer.train(callback=lambda tr: logger.log(tr.progress(), step=tr.decisions), callback_every=50)
    metrics = evaluate(LoadedPolicy(trainer.policy_section()), trainer.spec, arrivals=int(trial["arrivals"]),
                       seed=int(trial["seed"]) + 10_000)
    g = lagrangian(metrics, float(trial["lam"]), trainer.spec.eps)
    logger.finish({**metrics, "g": g})
    return {**trial, **metrics, "g": g, "eps": trainer.spec.eps}


def run_trials(trials: list[dict], workers: int = 1, ray_address: str | None = None, use_ray: bool = False
               ) -> list[dict]:
    if use_ray:
        try:
            import ray
        except ImportError:
            raise RuntimeError(RAY_HINT) from None
        ray.init(address=ray_address, ignore_reinit_error=True, log_to_driver=False)
        remote = ray.remote(num_cpus=1)(run_trial)
        return ray.get([remote.remote(t) for t in trials])
    if workers <= 1:
        return [run_trial(t) for t in trials]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_trial, trials))


def summarize(results: Iterable[dict]) -> tuple[list[dict], float | None]:
    """Per lam: mean and standard error of g and violation over seeds; and lam*."""
    by_lam: dict[float, list[dict]] = {}
    for r in results:
        by_lam.setdefault(float(r["lam"]), []).append(r)
    rows = []
    for lam in sorted(by_lam):
        rs = by_lam[lam]

        def stat(key: str, rs=rs) -> tuple[float, float]:
            v = np.array([r[key] for r in rs], float)
            return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0

        (g, g_se), (v, v_se), (a, a_se) = stat("g"), stat("violation"), stat("acceptance")
        rows.append({"lam": lam, "g": g, "g_se": g_se, "violation": v, "violation_se": v_se,
                     "acceptance": a, "acceptance_se": a_se, "seeds": len(rs), "eps": rs[0]["eps"]})
    feasible = [r["lam"] for r in rows if r["violation"] <= r["eps"]]
    return rows, (min(feasible) if feasible else None)


def write_results(out: Path, trials: list[dict], rows: list[dict], lam_star: float | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    keys = sorted({k for t in trials for k in t if not isinstance(t[k], (list, dict))})
    with open(out / "trials.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(trials)
    with open(out / "sweep.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (out / "sweep.json").write_text(json.dumps({"lam_star": lam_star, "rows": rows, "trials": trials}, indent=2))


def default_workers() -> int:
    return max(1, (os.cpu_count() or 1))
