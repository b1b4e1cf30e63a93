"""Multiplier sweep (the paper's Fig. 3): g(lam) and violation over a grid of lam and seeds.

    python experiments/sweep.py --scenario paper_tandem --lams 1 2 4 8 16 --seeds 0 1 2 3
    python experiments/sweep.py --ray                  # the same trials as Ray tasks on a fresh local Ray
    python experiments/sweep.py --ray auto             # ... on the cluster in RAY_ADDRESS or a running local one
    python experiments/sweep.py --ray ray://head:10001 # ... on a remote cluster through Ray Client

Writes OUT/trials.csv, OUT/sweep.csv and OUT/sweep.json, and prints lam* (the minimiser of
g, equivalently the smallest lam whose violation is <= eps). Ray is optional:
pip install -e ".[distributed]".

Ray addresses (--ray ADDRESS): none starts a local Ray for this run (no dashboard) and stops it
at the end; "auto" uses the cluster named by RAY_ADDRESS, else one started on this machine
with `ray start --head`; "HOST:6379" joins that cluster's head from a node of it;
"ray://HOST:10001" connects to a remote head through Ray Client. Each trial is a one-CPU task;
the cluster's nodes need this project installed (same version: pip install -e . there), and a
scenario given as a YAML path must exist at that path on them (the packaged names always do).
Results do not depend on where a trial runs: the same seeds give the same numbers (on the
same kind of CPU).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from drl_ac.evaluation.sweep import run_trials, summarize, write_results
from drl_ac.parallel import default_workers


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", nargs="+", default=["paper_tandem"], help="one or more scenarios")
    p.add_argument("--lams", type=float, nargs="+", default=[1, 2, 4, 8, 16])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--steps", type=int, default=2_000_000, help="training decisions per trial")
    p.add_argument("--num-envs", type=int, default=1024)
    p.add_argument("--arrivals", type=int, default=100_000, help="evaluation arrivals per trial")
    p.add_argument("--workers", type=int, default=default_workers(), help="local processes")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run trials as Ray tasks: no ADDRESS starts a local Ray; 'auto' uses RAY_ADDRESS "
                        "or a running local cluster; 'ray://HOST:10001' a remote one (Ray Client)")
    p.add_argument("--wandb", action="store_true", help="each trial a W&B run, grouped per scenario")
    p.add_argument("--out", type=Path, default=Path("results/sweep"))
    args = p.parse_args(argv)
    trials = [{"scenario": s, "lam": lam, "seed": seed, "steps": args.steps, "num_envs": args.num_envs,
               "arrivals": args.arrivals, "wandb": args.wandb, "group": f"sweep-{Path(s).stem}"}
              for s in args.scenario for lam in args.lams for seed in args.seeds]
    try:
        results = run_trials(trials, workers=args.workers, use_ray=args.ray is not None,
                             ray_address=args.ray or None)
    except RuntimeError as exc:
        sys.exit(f"error: {exc}")
    for scenario in args.scenario:
        mine = [r for r in results if r["scenario"] == scenario]
        rows, lam_star = summarize(mine)
        out = args.out / Path(scenario).stem if len(args.scenario) > 1 else args.out
        write_results(out, mine, rows, lam_star)
        print(f"{scenario}: eps {rows[0]['eps']}")
        print(f"{'lam':>8}{'g(lam)':>12}{'+-':>8}{'violation':>11}{'+-':>8}{'acceptance':>11}")
        for r in rows:
            print(f"{r['lam']:>8g}{r['g']:>12.4f}{r['g_se']:>8.4f}{r['violation']:>11.4f}{r['violation_se']:>8.4f}"
                  f"{r['acceptance']:>11.4f}")
        print(f"lam* = {lam_star} (smallest lam with violation <= eps); results in {out}")


if __name__ == "__main__":
    main()
