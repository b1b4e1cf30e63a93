"""Two pools (systems.md B), control: fixed rules, a threshold policy with tau tuned on common
random numbers, and a learned dispatcher, on the scenario `pools` at several loads.

    python experiments/pools_control.py                        # loads 0.5 0.8 0.95, JSON + table
    python experiments/pools_control.py --loads 0.8 --steps 1000000 --arrivals 100000
    python experiments/pools_control.py --quick                # tiny sizes (what the test runs)

Loads are fractions of the stability bound of the best threshold policy (reroute or replicate
after tau in service on the first pool, tau at its best): the formula's bound for reroute
(exact at any load), the limit simulated by bisection on the drift (experiments/pools.py) for
replicate, whose formula assumes a copy starts at once, false with one server per pool.
The output says which number is which.

At each load, on the scenario with its arrival rate changed:
  (i)   none: the signal's assignment rule (faster pool of the likely type), no timer;
  (ii)  full replication: a copy in each pool's queue on arrival (tau = 0 from arrival);
  (iii) threshold: the rule's pool, then reroute or replicate after tau in service, the
        policy and tau chosen on a grid by the mean response time on common random numbers
        (one seed for every candidate), then evaluated afresh;
  (iv)  learned: differential Q-learners (Trainer, holding cost, one per --seeds) on the
        scenario's actions (first pool x {none, reroute, replicate} at a few tau); the greedy
        policy of each at --snapshots points of its run, each also guarded by the best constant
        action on the tuning seed (drl_ac.evaluation.selection), the candidate with the lowest
        mean response on a validation seed (the learner's counterpart of tuning tau).
All four are evaluated by drl_ac.evaluation.metrics.evaluate on the same fresh arrivals (one
evaluation seed): mean response time with its 95% interval over instances, and the learned
policy against each rule by the paired difference on those arrivals (metrics.paired_difference),
which decides the claim. A policy is reported unstable,
not simulated, when the rate is at or above its exact formula bound (none, reroute, full
replication); and, whatever it is, when its job table outgrows --max-jobs (CapacityError) or
the number in system still grows over the evaluation window (second half above the first by
more than 3 standard errors and 5%: unstable, or a warm-up too short to tell).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import yaml

from drl_ac.evaluation.metrics import evaluate, paired_difference
from drl_ac.evaluation.selection import (
    EVALUATION,
    TUNING,
    VALIDATION,
    ConstantAction,
    deviation,
    select_learned,
)
from drl_ac.learning.trainer import TrainConfig
from drl_ac.theory.pools import PoolsModel, PoolsPolicy, best_tau, stability_bound
from envs import NetworkSpec
from envs.engine import CapacityError
from envs.spec import SCENARIO_DIR

ROOT = Path(__file__).resolve().parents[1]
BASE = "pools"


def _pools_module():
    spec = importlib.util.spec_from_file_location("pools_experiment", ROOT / "experiments" / "pools.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scenario_at(rate: float, actions: list[dict] | None = None, timer: str | None = None,
                base: str = BASE) -> NetworkSpec:
    """The scenario with its arrival rate set (and, for a fixed policy, one action and a timer)."""
    cfg = yaml.safe_load((SCENARIO_DIR / f"{base}.yaml").read_text())
    cfg["arrival"] = {"dist": "exponential", "rate": float(rate)}
    cfg["name"] = f"{base}@{rate:g}"
    if actions is not None:
        cfg["pools"]["actions"] = actions
    if timer is not None:
        cfg["pools"]["timer"] = timer
    return NetworkSpec.from_dict(cfg)


def model_of(spec: NetworkSpec) -> PoolsModel:
    pools = spec.pools
    return PoolsModel(pools.p, pools.speeds, pools.servers)


def theory_of(spec: NetworkSpec, action: str = "none", tau: float = math.inf) -> PoolsPolicy:
    pools = spec.pools
    return PoolsPolicy(knowledge=pools.knowledge, q=pools.q, f=pools.f, assignment=pools.assign,
                       p_split=pools.p_split, action=action, tau=tau, restart=pools.restart)


# ---------------------------------------------------------------- the policies
def fixed(kind: str, tau: float = math.inf) -> tuple[str, list[dict], str | None]:
    """(label, the single action, timer) of a fixed policy; the pool is the assignment rule's."""
    if kind == "none":
        return "none (signal rule)", [{"pool": "auto", "policy": "none"}], None
    if kind == "full replication":
        return "full replication (tau 0 from arrival)", [{"pool": "auto", "policy": "replicate", "tau": 0.0}], \
            "arrival"
    return f"{kind} tau {tau:g}", [{"pool": "auto", "policy": kind, "tau": float(tau)}], None


class Tracked:
    """A policy that records the number in system (jobs waiting + busy servers of both pools)
    it sees at each decision, to tell a drifting system from a stationary one."""

    def __init__(self, policy):
        self.policy = policy
        self.encoding = getattr(policy, "encoding", None)
        self.seen: list[np.ndarray] = []

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        self.seen.append(obs[:, :4].sum(1))
        return self.policy(obs)


def run(policy, spec: NetworkSpec, opts: dict) -> dict:
    """evaluate() plus stability: CapacityError or a growing number in system -> unstable."""
    tracked = Tracked(policy)
    try:
        m = evaluate(tracked, spec, **opts)
    except CapacityError:
        return {"mean_response": math.inf, "ci": None, "unstable": f"job table over max_jobs {opts['max_jobs']}"}
    steps = math.ceil(m["arrivals"] / m["instances"])
    window = np.stack(tracked.seen[m["warmup_steps"]:m["warmup_steps"] + steps])
    half = steps // 2
    first, second = window[:half].mean(0), window[half:2 * half].mean(0)
    diff = second - first
    se = diff.std(ddof=1) / math.sqrt(diff.size) if diff.size > 1 else math.inf
    growth = float(diff.mean() / max(first.mean(), 1e-9))
    out = {"mean_response": m["mean_delay"], "ci": m["mean_delay_ci"], "arrivals": m["arrivals"],
           "warmup_steps": m["warmup_steps"], "in_system": float(window.mean()), "growth": growth,
           "growth_z": float(diff.mean() / se) if se > 0 else 0.0}
    if "per_instance" in m:
        out["per_instance"] = m["per_instance"]
    if out["growth_z"] > 3 and growth > 0.05:
        out["unstable"] = (f"number in system grows over the window (+{growth:.0%}, z {out['growth_z']:.1f}): "
                           "unstable or not warmed up")
    return out


# ---------------------------------------------------------------- bounds
def bounds(args) -> dict:
    """The stability bound of each fixed family, and which number it is (formula or simulated)."""
    spec = scenario_at(1.0)
    model = model_of(spec)
    size = spec.pools.size
    pools = _pools_module()
    out = {"none": {"tau": None, "bound": stability_bound(model, theory_of(spec), size), "source": "formula (exact)"},
           "full replication": {"tau": 0.0, "bound": stability_bound(model, theory_of(spec, "replicate", 0.0), size),
                                "source": "formula (exact: copies placed on arrival)"}}
    rer = best_tau(model, theory_of(spec, "reroute"), size, same_tau=True)
    out["reroute"] = {"tau": rer.tau[0], "bound": rer.bound, "source": "formula (exact for reroute)"}
    rep = best_tau(model, theory_of(spec, "replicate"), size, same_tau=True)
    sim_args = SimpleNamespace(bracket=args.bracket, iterations=args.iterations, horizon=args.horizon,
                               instances=args.bisect_instances, seed=args.seed + 500, max_doublings=1)
    best = None
    for tau in sorted({0.0, rep.tau[0], *args.replicate_taus}):
        pol = theory_of(spec, "replicate", tau)
        formula = stability_bound(model, pol, size)
        measured = pools.measured_limit(model, "replicate", pol, formula, sim_args)
        out[f"replicate tau {tau:.3g}"] = {"tau": tau, "bound": measured, "formula": formula,
                                           "source": "simulated (drift bisection; the formula assumes a copy "
                                                     "starts at once)"}
        if best is None or measured > best[1]:
            best = (tau, measured)
    out["replicate"] = {"tau": best[0], "bound": best[1], "source": "simulated (best of the taus above)"}
    top = max(("reroute", "replicate"), key=lambda k: out[k]["bound"])
    out["threshold"] = {**out[top], "policy": top}
    return out


# ---------------------------------------------------------------- one load
def compare(load: float, bnd: dict, args) -> tuple[list[dict], list[dict]]:
    rate = load * bnd["threshold"]["bound"]
    model, size = model_of(scenario_at(rate)), scenario_at(rate).pools.size
    warmup = int(args.warmup * 0.5 / (1.0 - load))
    evaluation = {"arrivals": args.arrivals, "seed": args.seed + EVALUATION, "num_envs": args.num_envs,
                  "warmup": warmup, "max_jobs": args.max_jobs, "per_instance": True}
    tuning = {**evaluation, "arrivals": args.tune_arrivals, "seed": args.seed + TUNING, "per_instance": False}
    validation = {**tuning, "seed": args.seed + VALIDATION}
    rows, grid = [], []

    def fixed_row(kind: str, tau: float, opts: dict, bound: float | None) -> dict:
        label, actions, timer = fixed(kind, tau)
        if bound is not None and rate >= bound:
            return {"policy": label, "mean_response": math.inf, "ci": None,
                    "unstable": f"rate {rate:.4g} >= formula bound {bound:.4g} (exact)"}
        return {"policy": label, **run(ConstantAction(0), scenario_at(rate, actions, timer), opts)}

    rows.append(fixed_row("none", math.inf, evaluation, bnd["none"]["bound"]))
    rows.append(fixed_row("full replication", 0.0, evaluation, bnd["full replication"]["bound"]))
    for kind in ("reroute", "replicate"):
        for tau in args.taus:
            exact = stability_bound(model, theory_of(scenario_at(rate), kind, tau), size) if kind == "reroute" \
                else None
            r = fixed_row(kind, tau, tuning, exact)
            grid.append({**r, "load": load, "kind": kind, "tau": tau})
            print(f"  load {load:g} tune {kind:<9} tau {tau:<5g} {_fmt(r)}", file=sys.stderr, flush=True)
    ok = [g for g in grid if "unstable" not in g]
    if ok:
        best = min(ok, key=lambda g: g["mean_response"])
        rows.append({**fixed_row(best["kind"], best["tau"], evaluation, None),
                     "policy": f"threshold: {best['kind']} tau {best['tau']:g} (tuned)", "tuned": True})
    else:
        rows.append({"policy": "threshold (tuned)", "mean_response": math.inf, "ci": None, "tuned": True,
                     "unstable": "every tau on the grid"})
    t0 = time.perf_counter()
    spec = scenario_at(rate)
    constant = {a: run(ConstantAction(a), spec, tuning) for a in range(spec.num_actions)}
    stable = [a for a, r in constant.items() if "unstable" not in r] or list(constant)
    default = min(stable, key=lambda a: constant[a]["mean_response"])
    configs = [TrainConfig(scenario=BASE, steps=args.steps, num_envs=args.train_envs, seed=seed,
                           exploration_start=args.exploration_start, reset_backlog=args.reset_backlog,
                           updates_per_step=args.updates_per_step) for seed in args.seeds]
    say = lambda text: print(f"  load {load:g} {text}", file=sys.stderr, flush=True)  # noqa: E731
    sel = select_learned(spec, configs, args.snapshots, default, args.quantiles,
                         lambda policy: run(policy, spec, validation), args.seed + VALIDATION, warmup, say)
    chosen, picks, states = sel.chosen, sel.scored, sel.states
    learned = chosen.policy()
    row = {"policy": f"learned ({chosen.label})", **run(learned, spec, evaluation),
           "train_seconds": time.perf_counter() - t0, "actions": list(spec.actions), "learned": True,
           "default": spec.actions[default], "deviation_from_default": deviation(learned, default, states),
           "validation": [{k: v for k, v in r.items() if k != "per_instance"} for r in picks]}
    row["action_share"] = _action_share(learned, spec, evaluation)
    if "unstable" not in row:
        row["versus"] = {r["policy"]: paired_difference(row, r) for r in rows if "per_instance" in r}
    rows.append(row)
    for r in rows:
        r.pop("per_instance", None)
        r.update({"load": load, "rate": rate})
    return rows, grid


def _action_share(policy, spec: NetworkSpec, opts: dict) -> dict:
    """How often the learned policy takes each action (a short run after the warm-up)."""
    from envs import Driver
    from envs.rollout import collect
    try:
        driver = Driver(spec, min(opts["num_envs"], 100), seed=opts["seed"], max_jobs=opts["max_jobs"])
        _, seen = collect(driver, policy, 200, opts["warmup"], record_obs=True)
    except CapacityError:
        return {}
    acts = np.concatenate([policy(o) for o in seen])
    return {name: float((acts == a).mean()) for a, name in enumerate(spec.actions) if (acts == a).any()}


def _fmt(r: dict) -> str:
    if r["ci"] is None or "unstable" in r:
        return f"unstable ({r['unstable']})"
    return f"{r['mean_response']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"


def verdict(rows: list[dict]) -> dict:
    """The claim: learned no worse than the tuned threshold at every load (the paired interval
    of learned - threshold reaches 0 or below, or the threshold is unstable), strictly better at
    one at least (that interval below 0, or the threshold unstable and the learner not)."""
    per = {}
    for load in sorted({r["load"] for r in rows}):
        learned = next(r for r in rows if r["load"] == load and r.get("learned"))
        tuned = next(r for r in rows if r["load"] == load and r.get("tuned"))
        if "unstable" in learned:
            per[load] = {"no_worse": "unstable" in tuned, "better": False}
        elif "unstable" in tuned:
            per[load] = {"no_worse": True, "better": True}
        else:
            d = learned["versus"][tuned["policy"]]
            per[load] = {"versus_threshold": d, "no_worse": d["ci"][0] <= 0, "better": d["ci"][1] < 0}
    return {"per_load": per, "holds": all(v["no_worse"] for v in per.values())
            and any(v["better"] for v in per.values())}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.8, 0.95])
    p.add_argument("--taus", type=float, nargs="+", default=[0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0,
                                                               14.0], help="the threshold's grid")
    p.add_argument("--steps", type=int, default=1_000_000, help="training decisions per load")
    p.add_argument("--train-envs", type=int, default=256)
    p.add_argument("--exploration-start", type=float, default=0.1)
    p.add_argument("--reset-backlog", type=int, default=50,
                   help="a training instance holding more jobs restarts empty (0: never)")
    p.add_argument("--snapshots", type=int, default=4, help="greedy policies kept per learner")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="learner seeds")
    p.add_argument("--updates-per-step", type=int, default=4, help="gradient steps per vector step")
    p.add_argument("--quantiles", type=float, nargs="*", default=[0.5, 0.9],
                   help="guard biases: quantiles of the positive advantages over the best constant action")
    p.add_argument("--arrivals", type=int, default=100_000, help="evaluation arrivals per policy")
    p.add_argument("--tune-arrivals", type=int, default=20_000, help="arrivals per grid point")
    p.add_argument("--num-envs", type=int, default=200, help="evaluation instances")
    p.add_argument("--warmup", type=int, default=600,
                   help="warm-up steps per instance at load 0.5, scaled by 0.5 / (1 - load)")
    p.add_argument("--max-jobs", type=int, default=1 << 13, help="job table bound per instance (unstable beyond)")
    p.add_argument("--replicate-taus", type=float, nargs="*", default=[4.0],
                   help="taus where replicate's limit is simulated (besides 0 and the formula's best)")
    p.add_argument("--iterations", type=int, default=6, help="bisection steps of a simulated limit")
    p.add_argument("--horizon", type=float, default=600.0, help="time units per drift run of the bisection")
    p.add_argument("--bisect-instances", type=int, default=48)
    p.add_argument("--bracket", type=float, nargs=2, default=[0.15, 1.5], help="bisection range x formula")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="tiny sizes: every part runs")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "pools_control.json")
    args = p.parse_args(argv)
    if args.quick:
        args.loads, args.taus, args.replicate_taus = [0.5], [0.0, 8.0], []
        args.steps, args.train_envs, args.arrivals, args.tune_arrivals, args.snapshots = 20_000, 64, 4000, 2000, 2
        args.seeds = [0]
        args.num_envs, args.warmup, args.iterations, args.horizon, args.bisect_instances = 20, 100, 2, 100.0, 16
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    bnd = bounds(args)
    print("stability bounds (lambda):", file=sys.stderr)
    for k, v in bnd.items():
        tau = "" if v["tau"] is None else f" tau {v['tau']:.3g}"
        print(f"  {k:<22}{tau:<11} {v['bound']:.4f}  {v['source']}", file=sys.stderr)
    rows, grid = [], []
    for load in args.loads:
        r, g = compare(load, bnd, args)
        rows += r
        grid += g
        for x in r:
            print(f"load {load:g} (rate {x['rate']:.4f})  {x['policy']:<40} {_fmt(x)}", file=sys.stderr, flush=True)
    out = {"bounds": bnd, "rows": rows, "grid": grid, "verdict": verdict(rows), "args": {
        k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "seconds": time.perf_counter() - t0}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, default=float) + "\n")
    print(f"base: {bnd['threshold']['policy']} at tau {bnd['threshold']['tau']:.3g}, lambda "
          f"{bnd['threshold']['bound']:.4f} ({bnd['threshold']['source']})")
    print("| load | rate | policy | mean response [95% CI] | learned - this, paired [95% CI] |\n|---|---|---|---|---|")
    for r in rows:
        learned = next(x for x in rows if x["load"] == r["load"] and x.get("learned"))
        d = learned.get("versus", {}).get(r["policy"])
        paired = "" if d is None else f"{d['difference']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]"
        print(f"| {r['load']:g} | {r['rate']:.3f} | {r['policy']} | {_fmt(r)} | {paired} |")
    print(f"claim (learned no worse than tuned threshold at every load, better at one): {out['verdict']}")
    return out


if __name__ == "__main__":
    main()
