"""Reproduce the paper's Fig. 4 (a-f): training curves on paper_tandem and paper_acyclic.

    python experiments/reproduce.py [--seeds 4] [--steps 3000000] [--out results/reproduce]

For each scenario trains SEEDS controllers (the paper: 4) and plots violation
P(d > d_ub | A), objective (unnecessary rejections per arrival), acceptance and throughput
against training decisions, mean with standard-error bands and the eps line, plus
throughput with and without admission control. Curves are the greedy-decision statistics
of recent outcomes (half-life ``--half-life`` decisions). Writes PNGs, summary.md and
summary.json (final evaluations on fresh seeds).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from drl_ac.evaluation.metrics import evaluate  # noqa: E402
from drl_ac.learning.trainer import TrainConfig, Trainer  # noqa: E402
from envs.rollout import accept_all  # noqa: E402

METRICS = ("violation", "objective", "acceptance", "throughput")


def train_with_curves(scenario: str, seed: int, steps: int, num_envs: int, half_life: float, points: int
                      ) -> tuple[dict[str, list[float]], dict, Trainer]:
    trainer = Trainer(TrainConfig(scenario=scenario, lam="scenario", seed=seed, steps=steps, num_envs=num_envs,
                                  stats_half_life=half_life))
    curves: dict[str, list[float]] = {k: [] for k in ("decisions", *METRICS)}
    every = max(1, steps // (points * num_envs))

    def record(tr: Trainer) -> None:
        p = tr.progress()
        curves["decisions"].append(tr.decisions)
        for k in METRICS:
            curves[k].append(p["greedy_violation"] if k == "violation" else p[k])

    trainer.train(callback=record, callback_every=every)
    return curves, trainer.spec, trainer


def plot(scenario: str, runs: list[dict[str, list[float]]], eps: float, no_ac: dict, out: Path) -> list[Path]:
    n = min(len(r["decisions"]) for r in runs)
    x = np.array(runs[0]["decisions"][:n])
    paths = []
    for key in METRICS:
        y = np.array([r[key][:n] for r in runs])
        mean = np.nanmean(y, 0)
        se = np.nanstd(y, 0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else np.zeros_like(mean)
        fig, ax = plt.subplots(figsize=(5, 3.4))
        ax.plot(x, mean, color="tab:blue", label=f"learned ({len(runs)} seeds)")
        ax.fill_between(x, mean - se, mean + se, color="tab:blue", alpha=0.25, linewidth=0)
        if key == "violation":
            ax.axhline(eps, color="tab:red", linestyle="--", label=f"eps = {eps}")
        if key == "throughput":
            ax.axhline(no_ac["throughput"], color="tab:gray", linestyle=":", label="no admission control")
        ax.set_xlabel("time steps (arrivals)")
        ax.set_ylabel({"violation": "P(d > d_ub | A)", "objective": "unnecessary rejections / arrival"}.get(key, key))
        ax.set_title(f"{scenario}: {key}")
        ax.legend(loc="best", fontsize=8)
        fig.tight_layout()
        path = out / f"{scenario}_{key}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", nargs="+", default=["paper_tandem", "paper_acyclic"])
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--steps", type=int, default=3_000_000)
    p.add_argument("--num-envs", type=int, default=2048)
    p.add_argument("--half-life", type=float, default=50_000)
    p.add_argument("--points", type=int, default=60, help="points per curve")
    p.add_argument("--arrivals", type=int, default=200_000, help="final evaluation arrivals")
    p.add_argument("--out", type=Path, default=Path("results/reproduce"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for scenario in args.scenarios:
        runs, finals = [], []
        for seed in range(args.seeds):
            curves, spec, trainer = train_with_curves(scenario, seed, args.steps, args.num_envs, args.half_life,
                                                      args.points)
            runs.append(curves)
            finals.append(evaluate(trainer.policy(), spec, arrivals=args.arrivals,
                                   seed=10_000 + seed))
        no_ac = evaluate(accept_all, spec, arrivals=args.arrivals, seed=10_000)
        plot(scenario, runs, spec.eps, no_ac, args.out)
        stats = {}
        for k in ("violation", "acceptance", "throughput", "objective", "mean_delay"):
            v = np.array([f[k] for f in finals])
            stats[k] = {"mean": float(v.mean()), "se": float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0}
        summary[scenario] = {"seeds": args.seeds, "steps": args.steps, "lam": spec.lam, "eps": spec.eps,
                             "d_ub": spec.d_ub, "learned": stats, "runs": finals,
                             "no_admission_control": {k: no_ac[k] for k in ("violation", "throughput", "mean_delay")}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = ["| scenario | violation | acceptance | throughput | objective | throughput without AC |",
             "|---|---|---|---|---|---|"]
    for scenario, s in summary.items():
        cells = [f"{s['learned'][k]['mean']:.4f} ± {s['learned'][k]['se']:.4f}"
                 for k in ("violation", "acceptance", "throughput", "objective")]
        lines.append(f"| {scenario} | " + " | ".join(cells) + f" | {s['no_admission_control']['throughput']:.4f} |")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"plots and summaries in {args.out}")


if __name__ == "__main__":
    main()
