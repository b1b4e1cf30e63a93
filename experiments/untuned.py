"""The default command on networks nobody tuned for: does the learned controller still beat the best rule?

    python experiments/untuned.py --networks 5 --out runs/untuned
    python experiments/untuned.py --networks 2 --seed 10 --steps 300000 --out runs/untuned

Draws --networks random feed-forward networks (``envs.systems.network.generate``: 2-6 FCFS
stations of 1-4 servers, service laws from deterministic to heavy-tailed, splits and merges,
the busiest station at load 0.8-0.95, a sojourn deadline that binds, eps 0.1), writes each as
YAML, runs the README's default command on it (``experiments/train.py --scenario FILE``: train,
calibrate, compare with every rule tuned), and tabulates each verdict with its paired 95%
interval, then how many the learned controller wins. Seeds --seed, --seed + 1, ...
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

from envs import NetworkSpec
from envs.systems.network.generate import random_network

TRAIN = Path(__file__).resolve().parent / "train.py"


def describe(cfg: dict) -> str:
    """One line: stations as servers x law (mean), the busiest load and the deadline."""
    spec = NetworkSpec.from_dict(cfg)
    stations = ", ".join(f"{s['servers']}x{s['service']['dist'][:5]}({s['service']['mean']:g})" for s in cfg["stations"])
    return f"{stations}; load {spec.utilization().max():.3f}; d_ub {cfg['d_ub']:g}"


def run_one(seed: int, out: Path, extra: list[str]) -> dict:
    """The default command on the network of ``seed``; its verdict from ``comparison.json``."""
    cfg = random_network(seed)
    folder = out / cfg["name"]
    folder.mkdir(parents=True, exist_ok=True)
    scenario = folder / "network.yaml"
    scenario.write_text(yaml.safe_dump(cfg, sort_keys=False))
    cmd = [sys.executable, str(TRAIN), "--scenario", str(scenario), "--out", str(folder / "run"), "--force",
           "--quiet", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    comparison = json.loads((folder / "run" / "comparison.json").read_text())
    return {"seed": seed, "network": describe(cfg), "scenario": str(scenario), "verdict": comparison["verdict"],
            "learned_violation": comparison["rows"]["learned"]["violation"], "command": " ".join(cmd[1:])}


def table(results: list[dict]) -> list[str]:
    lines = ["| seed | network | learned | best rule | difference (paired 95%) | verdict |", "|---|---|---|---|---|---|"]
    for r in results:
        v, d = r["verdict"], r["verdict"]["difference"]
        best = "-" if v["best_rule"] is None else f"{v['best_rule']}: {v['best']:.4f}"
        diff = "-" if d is None else f"{d['difference']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}]"
        why = f" ({v['reason']})" if v.get("reason") else ""
        lines.append(f"| {r['seed']} | {r['network']} | {v['learned']:.4f} at violation {r['learned_violation']:.4f} | "
                     f"{best} | {diff} | {v['outcome']}{why} |")
    counts = {k: sum(r["verdict"]["outcome"] == k for r in results) for k in ("better", "no worse", "worse")}
    other = len(results) - sum(counts.values())
    lines.append("")
    lines.append(f"learned better on {counts['better']} of {len(results)}, no worse on {counts['no worse']}, "
                 f"worse on {counts['worse']}" + (f", undecided on {other}" if other else ""))
    return lines


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--networks", type=int, default=5, help="networks drawn")
    p.add_argument("--seed", type=int, default=0, help="seed of the first network")
    p.add_argument("--out", type=Path, required=True, help="folder: each network's YAML and run, untuned.md/json")
    p.add_argument("--steps", type=int, default=None, help="train.py --steps (default: train.py's)")
    p.add_argument("--compare", default=None, help="train.py --compare budget (default: train.py's)")
    args = p.parse_args(argv)
    if args.networks < 1:
        p.error("--networks must be >= 1")
    extra = [*(["--steps", str(args.steps)] if args.steps else []),
             *(["--compare", args.compare] if args.compare else [])]
    results = []
    for seed in range(args.seed, args.seed + args.networks):
        results.append(run_one(seed, args.out, extra))
        print(table(results[-1:])[2], flush=True)
        lines = table(results)  # written after each network: a stopped run keeps what it measured
        (args.out / "untuned.md").write_text("\n".join(lines) + "\n")
        (args.out / "untuned.json").write_text(json.dumps(results, indent=2) + "\n")
    print(lines[-1])
    return results


if __name__ == "__main__":
    main()
