"""Evaluate a trained controller on fresh seeds, optionally beside the baselines.

    python experiments/evaluate.py --checkpoint checkpoints/paper_tandem/policy.pt
    python experiments/evaluate.py --checkpoint PATH --scenario tandem --arrivals 500000 --json
    python experiments/evaluate.py --checkpoint PATH --baselines      # one comparison table

With --baselines the threshold rules are tuned for the scenario (highest acceptance with
violation <= eps on common random numbers), the paper's tabular R-learning is trained in
the same environment, and all are evaluated on the same fresh seeds. Tuning takes a while:
one line per candidate rule and per stage goes to stderr (--quiet: none), the table or
JSON to stdout.

A cell scenario (a 'cell:' block) is compared with the cell rules instead
(drl_ac.evaluation.cell_baselines: accept-all, PRB threshold, per-type thresholds, guard
and fractional guard channel and, with a daily profile, per-type thresholds per phase
bin), tuned for the lowest blocking at dropping <= eps with its one-sided 95% margin
(--cell-measure handover_dropping: the classical guard-channel constraint); the table
gives blocking, dropping, handover dropping and carried PRBs overall and per UE type.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from drl_ac.checkpoint import CheckpointError, load_policy
from drl_ac.cli import HelpFormatter
from drl_ac.evaluation.baselines import tuned_rules
from drl_ac.evaluation.cell_baselines import tuned_cell_rules
from drl_ac.evaluation.metrics import evaluate, format_metrics
from drl_ac.evaluation.tabular import train_tabular
from envs import NetworkSpec, SpecError, available_scenarios, load_spec
from envs.rollout import accept_all


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True, help="policy.pt or checkpoint.pt")
    p.add_argument("--scenario", default=None, help="scenario name or YAML (default: the one it was trained on)")
    p.add_argument("--arrivals", type=int, default=200_000, help="arrivals evaluated after the warm-up")
    p.add_argument("--seed", type=int, default=20_000, help="seed of the evaluation (fresh: not a training seed)")
    p.add_argument("--num-envs", type=int, default=500, help="instances simulated in parallel")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--baselines", action="store_true", help="compare with tuned rules, tabular R-learning, accept-all")
    p.add_argument("--tune-arrivals", type=int, default=100_000, help="arrivals per candidate when tuning rules")
    p.add_argument("--tabular-lam", type=float, default=None,
                   help="multiplier of the tabular baseline (default: the scenario's, else the learned one's)")
    p.add_argument("--tabular-decisions", type=int, default=None,
                   help="training decisions of the tabular baseline (default: the paper's 500k, 1.5M for 4+ stations)")
    p.add_argument("--cell-measure", choices=("dropping", "handover_dropping"), default="dropping",
                   help="a cell: the measure the rules keep <= eps")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr while --baselines tunes")
    args = p.parse_args(argv)
    try:
        policy = load_policy(args.checkpoint)
        spec = (load_spec(args.scenario) if args.scenario
                else NetworkSpec.from_dict(policy.metadata["scenario"]))
        policy.encoding.check(spec)
        metrics = evaluate(policy, spec, arrivals=args.arrivals, seed=args.seed, num_envs=args.num_envs)
    except (CheckpointError, SpecError, ValueError) as exc:
        sys.exit(f"error: {exc}")
    if args.baselines:
        rows = compare_with_baselines(policy, metrics, spec, args)
        print(json.dumps(rows) if args.json else (format_cell_table(rows, spec) if spec.cell is not None
                                                  else format_table(rows, spec)))
    elif args.json:
        print(json.dumps(metrics))
    elif spec.cell is not None:
        print(format_cell_table([{"policy": "learned", "rule": "Q-network", **metrics}], spec))
    else:
        print(f"{spec.name} (d_ub {spec.d_ub}, eps {spec.eps}, delay {spec.delay}): {format_metrics(metrics)}")


def compare_with_baselines(policy, learned: dict, spec, args) -> list[dict]:
    """Rows of (name, rule, metrics): learned, tuned rules, tabular R-learning, accept-all."""
    say = progress_printer(getattr(args, "quiet", False))
    rows = [{"policy": "learned", "rule": "Q-network", **learned}]
    run = {"arrivals": args.arrivals, "seed": args.seed, "num_envs": args.num_envs}
    if spec.cell is not None:
        return rows + cell_baseline_rows(spec, args, run, say)
    say(f"tuning threshold rules for {spec.name} (violation <= eps {spec.eps:g}; {args.tune_arrivals} arrivals per "
        "candidate, doubled while its 95% interval contains eps):")
    tuned_all = tuned_rules(spec, arrivals=args.tune_arrivals, progress=lambda text: say("  " + text))
    for name, tuned in tuned_all.items():
        say(f"evaluating {name} ({tuned.rule.describe()}) on {args.arrivals} arrivals")
        rows.append({"policy": name, "rule": tuned.rule.describe(), **evaluate(tuned.rule, spec, **run)})
    lam = args.tabular_lam if args.tabular_lam is not None else paper_lam(spec, policy)
    decisions = args.tabular_decisions or (500_000 if spec.num_stations < 4 else 1_500_000)
    say(f"training tabular R-learning (lam {lam:g}, {decisions} decisions)")
    tab = train_tabular(spec, decisions, lam=lam, seed=args.seed)
    say(f"evaluating tabular R-learning and accept-all on {args.arrivals} arrivals")
    rows.append({"policy": "tabular R-learning", "rule": f"lam {lam:g}, {decisions} decisions", **evaluate(tab, spec, **run)})
    rows.append({"policy": "accept-all", "rule": "", **evaluate(accept_all, spec, **run)})
    say("done")
    return rows


def cell_baseline_rows(spec, args, run: dict, say) -> list[dict]:
    """The cell rules tuned for ``spec``, each evaluated on the learned policy's seeds."""
    measure = getattr(args, "cell_measure", "dropping")
    say(f"tuning cell rules for {spec.name} ({measure} <= eps {spec.eps:g} with its one-sided 95% margin; "
        f"{args.tune_arrivals} arrivals per candidate, doubled while undecided):")
    rows = []
    for name, tuned in tuned_cell_rules(spec, arrivals=args.tune_arrivals, measure=measure,
                                        progress=lambda text: say("  " + text)).items():
        say(f"evaluating {name} ({tuned.rule.describe()}) on {args.arrivals} arrivals")
        rows.append({"policy": name, "rule": tuned.rule.describe(), **evaluate(tuned.rule, spec, **run)})
    say("done")
    return rows


def format_cell_table(rows: list[dict], spec) -> str:
    """Blocking, dropping [95% CI], handover dropping and carried PRBs per policy, then blocking
    and dropping per UE type."""
    names = [t.name for t in spec.cell.types]

    def ci(r, key):
        lo, hi = r[f"{key}_ci"]
        return f"{r[key]:.4f} [{lo:.4f}, {hi:.4f}]"

    head = (f"{spec.name}: {spec.cell.prbs} PRBs, eps {spec.eps} on P(dropped | admitted), {rows[0]['arrivals']} "
            "new UEs\n| policy | rule | blocking [95% CI] | dropping [95% CI] | handover dropping | carried PRBs |\n"
            "|---|---|---|---|---|---|")
    lines = [f"| {r['policy']} | {r['rule']} | {ci(r, 'blocking')} | {ci(r, 'dropping')} | "
             f"{r['handover_dropping']:.4f} | {r['carried_load']:.2f} |" for r in rows]
    per_type = ["", "| policy | " + " | ".join(f"{n}: blocking, dropping" for n in names) + " |",
                "|---|" + "---|" * len(names)]
    per_type += ["| " + r["policy"] + " | " + " | ".join(
        f"{b:.4f}, {d:.4f}" for b, d in zip(r["blocking_by_type"], r["dropping_by_type"], strict=True)) + " |" for r in rows]
    return "\n".join([head, *lines, *per_type])


def progress_printer(quiet: bool):
    """``say(text)``: one line to stderr with the elapsed time (nothing when quiet)."""
    t0 = time.perf_counter()

    def say(text: str) -> None:
        if not quiet:
            print(f"[{time.perf_counter() - t0:6.1f} s] {text}", file=sys.stderr, flush=True)
    return say


def paper_lam(spec, policy) -> float:
    """The fixed multiplier of the spec or of the registered scenario of that name (the paper's
    presets), else the multiplier the learned controller ended with."""
    if spec.lam is not None:
        return spec.lam
    if spec.name in available_scenarios() and load_spec(spec.name).lam is not None:
        return load_spec(spec.name).lam
    return float(policy.metadata.get("lam", 1.0))


def format_table(rows: list[dict], spec) -> str:
    head = (f"{spec.name}: d_ub {spec.d_ub}, eps {spec.eps}, delay {spec.delay}, {rows[0]['arrivals']} arrivals\n"
            "| policy | rule | violation [95% CI] | acceptance | throughput | objective | mean delay |\n"
            "|---|---|---|---|---|---|---|")
    lines = [f"| {r['policy']} | {r['rule']} | {r['violation']:.4f} [{r['violation_ci'][0]:.4f}, "
             f"{r['violation_ci'][1]:.4f}] | {r['acceptance']:.4f} | {r['throughput']:.4f} | {r['objective']:.4f} | "
             f"{r['mean_delay']:.2f} |" for r in rows]
    return "\n".join([head, *lines])


if __name__ == "__main__":
    main()
