"""Evaluate a trained controller on fresh seeds.

    python experiments/evaluate.py --checkpoint checkpoints/paper_tandem/policy.pt
    python experiments/evaluate.py --checkpoint PATH --scenario tandem --arrivals 500000 --json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from drl_ac.checkpoint import CheckpointError, load_policy
from drl_ac.evaluation import evaluate, format_metrics
from envs import NetworkSpec, SpecError, load_spec


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True, help="policy.pt or checkpoint.pt")
    p.add_argument("--scenario", default=None, help="scenario name or YAML (default: the one it was trained on)")
    p.add_argument("--arrivals", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=20_000)
    p.add_argument("--num-envs", type=int, default=500)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    try:
        policy = load_policy(args.checkpoint)
        spec = (load_spec(args.scenario) if args.scenario
                else NetworkSpec.from_dict(policy.metadata["scenario"]))
        width = spec.num_stations * (2 if policy.include_in_service else 1)
        if width != policy.obs_dim:
            raise SpecError("scenario", f"{spec.name} has {spec.num_stations} stations but the policy reads "
                            f"{policy.obs_dim} features", "evaluate on a network with the same stations")
        metrics = evaluate(policy, spec, arrivals=args.arrivals, seed=args.seed, num_envs=args.num_envs,
                           include_in_service=policy.include_in_service)
    except (CheckpointError, SpecError) as exc:
        sys.exit(f"error: {exc}")
    if args.json:
        print(json.dumps(metrics))
    else:
        print(f"{spec.name} (d_ub {spec.d_ub}, eps {spec.eps}, delay {spec.delay}): {format_metrics(metrics)}")


if __name__ == "__main__":
    main()
