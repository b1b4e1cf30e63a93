"""Train Stable-Baselines3's PPO on the batched simulator (envs.sb3) and judge it with the
project's evaluation harness, e.g. beside experiments/train.py at the same wall time.

    python experiments/sb3_ppo.py --seconds 150                # paper_tandem (lam 8), 256 instances
    python experiments/sb3_ppo.py --scenario tandem --lam 8 --steps 2000000 --save runs/ppo.zip

PPO maximises the discounted reward at a fixed multiplier (``--lam``, default the
scenario's; 1.0 with a warning where the scenario has none): unlike train.py's default the
multiplier is not tuned and the acceptance is not calibrated. Observations and rewards go
through SB3's ``VecNormalize`` (``--no-normalize``: raw): on paper_tandem, raw, PPO drifts
to accepting every job (violation 0.74 after 60 s; normalised 0.015). Prints train.py's
final-evaluation line (on fresh seeds) and the acceptance's 95% interval.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecNormalize

import envs.sb3
from drl_ac.cli import HelpFormatter
from drl_ac.evaluation.metrics import evaluate, format_metrics


class _WallClock(BaseCallback):
    """Stops learning after ``seconds`` of wall time (checked every step)."""

    def __init__(self, seconds: float):
        super().__init__()
        self.deadline = time.perf_counter() + seconds

    def _on_step(self) -> bool:
        return time.perf_counter() < self.deadline


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--scenario", default="paper_tandem", help="registered scenario name or YAML path")
    p.add_argument("--num-envs", type=int, default=256, help="instances stepped in one batch")
    p.add_argument("--steps", type=int, default=10**9, help="decisions over all instances")
    p.add_argument("--seconds", type=float, default=None, help="stop training after this wall time")
    p.add_argument("--lam", type=float, default=None, help="fixed multiplier (default: the scenario's)")
    p.add_argument("--n-steps", type=int, default=64, help="PPO rollout length per instance")
    p.add_argument("--batch-size", type=int, default=4096, help="PPO minibatch")
    p.add_argument("--epochs", type=int, default=4, help="PPO epochs per rollout")
    p.add_argument("--gamma", type=float, default=0.99, help="discount")
    p.add_argument("--no-normalize", action="store_true", help="raw observations and rewards (no VecNormalize)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--eval-arrivals", type=int, default=200_000, help="decisions in the final evaluation")
    p.add_argument("--save", default=None, help="write the model here (.zip; the normaliser beside it, .pkl)")
    args = p.parse_args(argv)
    if args.seconds is None and args.steps == p.get_default("steps"):
        p.error("give --steps or --seconds")
    torch.set_num_threads(args.threads)
    venv = envs.sb3.make(args.scenario, args.num_envs, seed=args.seed, lam=args.lam)
    norm = None if args.no_normalize else VecNormalize(venv, gamma=args.gamma)
    model = PPO("MlpPolicy", norm or venv, n_steps=args.n_steps, batch_size=args.batch_size, n_epochs=args.epochs,
                gamma=args.gamma, seed=args.seed, device="cpu")
    start, cpu = time.perf_counter(), time.process_time()
    model.learn(args.steps, callback=_WallClock(args.seconds) if args.seconds else None)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"PPO: {model.num_timesteps} decisions in {wall:.1f} s ({model.num_timesteps / wall:,.0f}/s; "
          f"{cpu:.1f} s of CPU), lam {venv.env.lam:g}")
    if args.save:
        model.save(args.save)
        if norm is not None:
            norm.save(str(Path(args.save).with_suffix(".pkl")))
    if norm is not None:
        norm.training = False  # evaluate with the statistics learnt
    spec = venv.env.spec

    def policy(obs: np.ndarray) -> np.ndarray:
        return model.predict(obs if norm is None else norm.normalize_obs(obs), deterministic=True)[0]

    metrics = evaluate(policy, spec, arrivals=args.eval_arrivals, seed=args.seed + 10_000)
    print(f"final evaluation ({spec.name}, eps {spec.eps}): {format_metrics(metrics)}")
    if "acceptance_ci" in metrics:
        lo, hi = metrics["acceptance_ci"]
        print(f"acceptance {metrics['acceptance']:.4f} [{lo:.4f}, {hi:.4f}]")
    return {**metrics, "decisions": model.num_timesteps, "train_seconds": wall, "train_cpu_seconds": cpu}


if __name__ == "__main__":
    main()
