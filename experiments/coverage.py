"""Do the steady-state intervals cover the exact values? (``drl_ac.evaluation.coverage``)

    python experiments/coverage.py --cases redundancy_d1_0.95 --workers 2 --out coverage.jsonl
    python experiments/coverage.py --cases mm1_0.95 mm3_0.95 --seeds 40

Each case (a system and policy with an exact mean response time) runs on --seeds seeds, each
seed a whole steady-state estimate as a comparison makes it; a case passes when its 95%
interval covers the exact value on at least 90% of the seeds and the seeds' mean lies within 2
standard errors of it (printed per case; the exit status is 0 either way). With --out every seed's result is appended as a JSON line as it ends,
and a later run reads the seeds already there: a long case is run over several sittings.
The slow test ``tests/drl_ac/evaluation/test_coverage.py`` holds the same cases to this.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from drl_ac.evaluation import coverage


def main(argv: list[str] | None = None) -> list[coverage.Coverage]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="+", default=list(coverage.CASES), choices=list(coverage.CASES),
                   metavar="CASE", help="cases to run: " + ", ".join(coverage.CASES))
    p.add_argument("--seeds", type=int, default=coverage.SEEDS, help="seeds per case (from 1000 on)")
    p.add_argument("--workers", type=int, default=1, help="seeds run at once, each in its own process")
    p.add_argument("--out", type=Path, default=None, help="JSON lines of every seed's result, read again on a rerun")
    p.add_argument("--max-steps", type=int, default=None,
                   help="decisions per instance at most (default: the case's; fewer for a smoke run)")
    args = p.parse_args(argv)
    if args.seeds < 2:
        p.error("--seeds must be at least 2 (a mean and its standard error)")
    if args.workers < 1 or (args.max_steps is not None and args.max_steps < 1):
        p.error("--workers and --max-steps must be at least 1")
    options = {} if args.max_steps is None else {"max_steps": args.max_steps}
    verdicts = []
    for name in args.cases:
        print(f"{name}: {coverage.CASES[name].title}, exact mean response {coverage.CASES[name].exact:.4f}")
        verdict = coverage.run(name, args.seeds, args.workers, args.out, options, say=lambda r: print(
            f"  seed {r['seed']}: {r['mean_delay']:.4f} [{r['mean_delay_ci'][0]:.4f}, {r['mean_delay_ci'][1]:.4f}]"
            f"{'' if r['stationary'] else ' not stationary'}{'' if r['covered'] else ' MISSES'} ({r['seconds']:.0f} s)",
            flush=True))
        print(verdict.describe())
        verdicts.append(verdict)
    return verdicts


if __name__ == "__main__":
    main()
