"""Evaluate a trained controller on fresh seeds, optionally beside the tuned rules of its system.

    python experiments/evaluate.py --checkpoint checkpoints/paper_tandem/policy.pt
    python experiments/evaluate.py --checkpoint PATH --scenario tandem --arrivals 500000 --json
    python experiments/evaluate.py --checkpoint PATH --baselines      # one comparison table and a verdict
    python experiments/evaluate.py --checkpoint checkpoints/redundancy_ps/load-0.3/policy.pt --load 0.9 --baselines
    python experiments/evaluate.py --checkpoint checkpoints/cell_5g/policy.pt --baselines --per-hour

With --baselines the rules of the policy's system are tuned on their own seed (drl_ac.rules:
every constant action and today's rule families; a network: queue thresholds, highest
acceptance with violation <= eps; a cell: PRB, per-type, guard and fractional guard
thresholds, lowest blocking with dropping's one-sided 95% bound <= eps; redundancy: every
fixed d and d by a load threshold; two pools: every constant action and the signalled pool
with reroute / replicate after a tuned tau; lowest mean response time), then every policy is
evaluated in steady state on the same fresh seed with a stability verdict and the learned
one is judged against the best feasible, stable rule with a paired 95% interval
(drl_ac.study). A network also gets the paper's tabular R-learning, trained in the same
environment (a learned comparator, not a rule). The rules are tuned and measured in other
processes (one per independent chain of rule families: a cell's thresholds and guards,
redundancy's fixed d and its own-server threshold) while this one measures the policy, with
the same rules and figures as one process. Tuning takes a while: one line per candidate goes
to stderr (--quiet: none), the table (or JSON) to stdout.

--per-hour (a day of hourly rate tables, as cell_5g's) adds the oracle of a policy that sees the
clock: every rule family re-tuned at each hour's rates and switched by the hour
(drl_ac.study.profiles.per_hour_rules), judged with the rest, then a table hour by hour of the
learned policy against the best of them.

--load X drives the policy at load X of its system's reference rate (drl_ac.study.at_load, the
loads of a study; a network's reference is its own arrival rate): a policy trained at one load,
judged at another against the rules re-tuned there. A policy trained over a load range
(--one-policy) is driven at load X of the range's base scenario (drl_ac.study.loads.load_base).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

import torch

from drl_ac import study
from drl_ac.checkpoint import CheckpointError, finite_json, load_policy
from drl_ac.cli import HelpFormatter, engine_flags, progress_printer, use_engine_flags
from drl_ac.evaluation.metrics import evaluate, format_metrics
from drl_ac.evaluation.tabular import train_tabular
from drl_ac.rules import rules_of
from drl_ac.study.loads import load_base
from drl_ac.study.profiles import by_hour_table, hour_jobs, per_hour_from, table_hours, tune_many
from envs import NetworkSpec, SpecError, available_scenarios, load_spec

THREADS_HELP = ("torch CPU threads of the policy's forward pass; 1 is fastest for the shipped network sizes (a few "
                "hundred rows a step), and two threads on a core another process uses spin: a step of "
                "redundancy_ps's policy took 20 ms instead of 0.6")
CELL_RULES = {"all": None, "thresholds": 0, "guards": 1}  # --cell-rules: the cell tuner's chains


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True, help="policy.pt or checkpoint.pt")
    p.add_argument("--scenario", default=None, help="scenario name or YAML (default: the one it was trained on)")
    p.add_argument("--load", type=float, default=None,
                   help="drive the system at this load of its reference rate, as a study's --loads (default: as saved)")
    p.add_argument("--arrivals", type=int, default=200_000, help="arrivals evaluated after the warm-up")
    p.add_argument("--seed", type=int, default=20_000, help="seed of the evaluation (fresh: not a training seed)")
    p.add_argument("--num-envs", type=int, default=500, help="instances simulated in parallel")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--baselines", action="store_true",
                   help="tune the system's rules and compare them with the policy in steady state, with a verdict")
    p.add_argument("--budget", choices=list(study.BUDGETS), default="full",
                   help="--baselines: how much tuning and evaluation may spend (smoke: seconds, decides nothing)")
    p.add_argument("--tune-arrivals", type=int, default=None,
                   help="--baselines on a network or a cell: arrivals per candidate rule (default: the budget's)")
    p.add_argument("--tabular-lam", type=float, default=None,
                   help="multiplier of the tabular baseline (default: the scenario's, else the learned one's)")
    p.add_argument("--tabular-decisions", type=int, default=None,
                   help="training decisions of the tabular baseline (default: the paper's 500k, 1.5M for 4+ stations)")
    p.add_argument("--cell-measure", choices=("dropping", "handover_dropping"), default="dropping",
                   help="a cell: the measure the rules keep <= eps")
    p.add_argument("--cell-rules", choices=tuple(CELL_RULES), default="all",
                   help="a cell: the rule families tuned: all, thresholds (accept-all, the PRB threshold, the "
                        "per-type and per-phase tables) or guards (the guard and fractional guard channels)")
    p.add_argument("--per-hour", action="store_true",
                   help="--baselines on a day of hourly rate tables (a cell's): also every rule family re-tuned at "
                        "each hour's rates and switched by the hour (the oracle), with a table hour by hour")
    p.add_argument("--workers", type=int, default=1,
                   help="--baselines --per-hour: processes that tune the day's rules and each hour's at once "
                        "(same rules as one process; without --per-hour: one per chain of rule families)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr while --baselines tunes")
    p.add_argument("--threads", type=int, default=1, help=THREADS_HELP)
    engine_flags(p)
    args = p.parse_args(argv)
    use_engine_flags(args)
    if args.threads < 1:
        p.error(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    try:
        policy = load_policy(args.checkpoint)
        spec = (load_spec(args.scenario) if args.scenario
                else NetworkSpec.from_dict(policy.metadata["scenario"]))
        if args.load is not None:
            if not args.load > 0:
                raise ValueError(f"--load must be > 0, got {args.load:g}. Fix: give a fraction of the system's "
                                 "reference rate, e.g. --load 0.9.")
            spec = study.at_load(spec if args.scenario else load_base(policy.metadata, spec), args.load)
        policy.encoding.check(spec)
        if args.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {args.workers}. Fix: give a number of processes.")
        if args.per_hour:
            if not args.baselines:
                raise ValueError("--per-hour adds rules to the --baselines comparison. Fix: add --baselines.")
            table_hours(spec)  # a day of hourly rate tables, or a SpecError that says what to give
        if not args.baselines:
            metrics = evaluated(policy, spec, args)
    except (CheckpointError, SpecError, ValueError) as exc:
        sys.exit(f"error: {exc}")
    own = spec.system.own_measures()  # a system with measures of its own prints them as a table
    if args.baselines:
        rows, verdict, hourly = compare_with_baselines(policy, spec, args)
        if args.json:
            print(json.dumps(finite_json({"verdict": verdict.to_dict(), "rows": study.json_rows(rows),
                                          **({"per_hour": hourly} if hourly else {})})))  # each hour's rule
        else:
            print(study.table(rows, verdict, spec))
            if own is not None:
                print("\n" + own.table([{"policy": k, **v} for k, v in rows.items()], spec))
            if hourly:
                print("\n" + by_hour_table(rows, spec, hourly))
    elif args.json:
        print(json.dumps(finite_json(metrics)))
    elif own is not None:
        print(own.table([{"policy": "learned", "rule": "Q-network", **metrics}], spec))
    elif "unstable" in metrics:
        print(f"{spec.name} ({spec.system.headline.text(spec.eps)}): not evaluated, {metrics['unstable']}")
    else:
        print(f"{spec.name} ({spec.system.headline.text(spec.eps)}): {format_metrics(metrics, spec)}")


def evaluated(policy, spec, args) -> dict:
    """``evaluate``'s measures; on a control system its stability test (the quick budget's)
    first, and no evaluation of a policy found unstable: its warm-up would only grow a backlog
    (a load-0.3 redundancy policy at load 0.9 ran past 5 minutes), so its row says why."""
    if spec.system.hopeless_backlog() is None:
        unstable = study.unstable_row(study.stability_first(policy, spec, args.seed + 1, "quick"), spec, "quick",
                                      args.num_envs)
        if unstable is not None:
            return unstable
    return evaluate(policy, spec, arrivals=args.arrivals, seed=args.seed, num_envs=args.num_envs)


def compare_with_baselines(policy, spec, args) -> tuple[dict[str, dict], study.Verdict, dict[str, list[str]]]:
    """The study's comparison on the evaluation seed ``args.seed`` (+ the study's offsets), and
    for a network the tabular R-learning row beside it; with ``--per-hour`` the rules re-tuned
    for each hour among the rows (returned last: each one's rule per hour)."""
    say = progress_printer(getattr(args, "quiet", False))
    takes = inspect.signature(rules_of(spec).tuned_rules).parameters
    tuning = {} if args.tune_arrivals is None or "arrivals" not in takes else {"arrivals": args.tune_arrivals}
    if "measure" in takes:
        tuning["measure"] = args.cell_measure
    if "chain" in takes and CELL_RULES[getattr(args, "cell_rules", "all")] is not None:
        tuning["chain"] = CELL_RULES[args.cell_rules]
    if getattr(args, "per_hour", False):
        jobs, index = hour_jobs(spec, args.seed)
        tuned, *hours = tune_many([(spec, args.seed), *jobs], args.budget, getattr(args, "workers", 1), say,
                                     **tuning)
        hourly = per_hour_from(spec, index, hours)
        tuned.update(hourly)
        rows, verdict = study.compare(policy, spec, args.seed, args.budget, progress=say, tuned=tuned)
        rows.update(tabular_row(policy, spec, args, say))
    else:  # the rules in other processes (one per chain) while this one measures the policies
        hourly = {}
        background = study.BackgroundRules(spec, args.seed, args.budget, show=not getattr(args, "quiet", False),
                                           **tuning)
        try:
            learned = study.measure(policy, spec, args.seed + study.EVALUATION, args.budget)
            say(f"learned: {study.table_cell(learned, spec)}")
            tabular = tabular_row(policy, spec, args, say)
            tuned, measured = background.result(say)
        finally:
            background.cancel()
        rows, verdict = study.compare(policy, spec, args.seed, args.budget, progress=say, tuned=tuned,
                                      measured=measured, learned=learned)
        rows.update(tabular)
    say("done")
    return rows, verdict, {name: [r.describe() for r in result.rule.rules] for name, result in hourly.items()}


def tabular_row(policy, spec, args, say) -> dict[str, dict]:
    """A network's learned comparator: the paper's tabular R-learning, trained here and measured
    on the evaluation seed (none on another system)."""
    if spec.system.kind != "admission":
        return {}
    lam = args.tabular_lam if args.tabular_lam is not None else paper_lam(spec, policy)
    decisions = args.tabular_decisions or (500_000 if spec.num_stations < 4 else 1_500_000)
    say(f"training tabular R-learning (lam {lam:g}, {decisions} decisions)")
    tab = train_tabular(spec, decisions, lam=lam, seed=args.seed)
    return {"tabular R-learning": {"rule": f"lam {lam:g}, {decisions} decisions",
                                   **study.measure(tab, spec, args.seed + study.EVALUATION, args.budget)}}


def paper_lam(spec, policy) -> float:
    """The fixed multiplier of the spec or of the registered scenario of that name (the paper's
    presets), else the multiplier the learned controller ended with."""
    if spec.lam is not None:
        return spec.lam
    if spec.name in available_scenarios() and load_spec(spec.name).lam is not None:
        return load_spec(spec.name).lam
    return float(policy.metadata.get("lam", 1.0))


if __name__ == "__main__":
    main()
