"""Multiplier sweep (the paper's Fig. 3): train over a grid of lam and seeds, evaluate, and
pick lam* = argmin_lam g(lam), g(lam) = max_pi r_lam(pi), equivalently the smallest lam
whose violation is <= eps. Trials run in local processes or as Ray tasks."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from drl_ac.parallel import run_jobs


def lagrangian(metrics: dict, lam: float, eps: float) -> float:
    """Long-run average eq. 7 reward of a policy from its evaluation:
    r_lam = -P(R, d < d_ub) + lam * P(A) * (P(d < d_ub | A) - (1 - eps))."""
    return -metrics["objective"] + lam * metrics["acceptance"] * (eps - metrics["violation"])


def run_trial(trial: dict) -> dict:
    """Train one (scenario, lam, seed) and evaluate its greedy policy. Runs in a worker: a local
    process, a Ray task, or this process. Keys: scenario, lam, seed, steps, num_envs, arrivals;
    optional threads (torch CPU threads, default 1), device (default cpu), wandb, group, and
    train (more TrainConfig fields, e.g. {"learning_starts": 1000}). Returns the trial with the
    evaluation metrics, g, eps and training (the trainer's final progress: rbar, loss, ...).

    Deterministic given the trial: the seed fixes every random stream and torch runs on a fixed
    number of threads (set here, restored afterwards), so the same trial gives bit-identical
    results in this process, a process pool or on Ray workers of the same machine type."""
    import torch

    from drl_ac.evaluation.metrics import evaluate
    from drl_ac.learning.trainer import TrainConfig, Trainer
    from drl_ac.tracking import WandbLogger

    threads = torch.get_num_threads()
    torch.set_num_threads(int(trial.get("threads", 1)))
    try:
        config = TrainConfig.from_dict({
            **trial.get("train", {}), "scenario": trial["scenario"], "lam": float(trial["lam"]),
            "seed": int(trial["seed"]), "steps": int(trial["steps"]), "num_envs": int(trial["num_envs"]),
            "device": trial.get("device", "cpu")})
        trainer = Trainer(config)
        logger = WandbLogger(trial.get("wandb", False), config.to_dict(), group=trial.get("group"),
                             name=f"{trial['scenario']}-lam{trial['lam']}-seed{trial['seed']}")
        trainer.train(callback=lambda tr: logger.log(tr.progress(), step=tr.decisions), callback_every=50)
        metrics = evaluate(trainer.policy(), trainer.spec, arrivals=int(trial["arrivals"]),
                           seed=int(trial["seed"]) + 10_000)
        g = lagrangian(metrics, float(trial["lam"]), trainer.spec.eps)
        logger.finish({**metrics, "g": g})
    finally:
        torch.set_num_threads(threads)
    # training: the learner's final state (rbar, last loss, ...), which depends on every weight
    return {**trial, **metrics, "g": g, "eps": trainer.spec.eps, "training": trainer.progress()}


def run_trials(trials: list[dict], workers: int = 1, ray_address: str | None = None, use_ray: bool = False
               ) -> list[dict]:
    """Run the trials and return their results in the same order (``drl_ac.parallel.run_jobs``).
    use_ray: as Ray tasks (one CPU each, or the trial's threads) on the Ray this process is
    connected to, else on ray_address (None: a fresh local Ray). Otherwise in this process
    (workers <= 1) or a pool of local processes. Results do not depend on where a trial runs
    (on the same kind of CPU)."""
    ray = (ray_address or "local") if use_ray else None
    return list(run_jobs(run_trial, trials, workers, ray, cpus=lambda t: int(t.get("threads", 1))))


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

