"""Two server pools (docs/systems/pools.md): the formula of envs.systems.pools.theory against the simulator.

    python experiments/pools.py                  # (a) loads, (b) stability, (c) latency vs tau, (d) labels
    python experiments/pools.py --only loads     # one part; --quick: small runs (what the test runs)

(a) Effective load per pool: the formula's rho_i = lam E[T_i] / N_i against the measured
    busy fraction (busy servers seen by the Poisson arrivals, which see time averages), for
    every policy and knowledge level, on a balanced and an unbalanced speed matrix, with many
    servers (``--load-servers``, default 10 per pool) at a formula load of 0.3, where a
    rerouted job or a copy starts at once (the formula's assumption). Reroute and replicate
    act after ``--load-tau`` (default 0.5: the best tau is often inf, which would test nothing).
(b) Stability: per policy (none; reroute and replicate at the formula's best tau; full
    replication: tau = 0 from arrival, a copy in each queue) and knowledge level, the
    formula's bound next to the limit measured by simulation (bisection on the sign of the
    drift of the number in system, experiments/stability.py's rule), one server per pool
    by default (the model's case, where the formula overstates replication).
(c) Mean response time against tau for reroute and replicate at 80% of each policy's
    bound (the measured one where (b) ran, else the formula's); PNG in results/pools/.
(d) Where the best rule could be improved: the scenario ``--label-scenario`` (``pools``) at
    ``--label-loads`` of the study's reference rate under the signalled-pool rule with a front
    copy after 0 and a rescue after ``--label-preempt`` (none; the best rule of the shipped
    study; 2 is the best on ``pools_rescue``), every action labelled by rollouts on common random
    numbers (drl_ac.learning.lookahead.labels_by_state) and grouped by state (jobs waiting
    and busy servers per pool, capped at 3, and the signal): per frequent state, the action
    with the lowest mean label against the rule's (0) and its standard error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from envs import Engine, NetworkSpec
from envs.engine import CapacityError
from envs.systems.pools.theory import (
    PoolsModel,
    PoolsPolicy,
    best_tau,
    effective_loads,
    stability_bound,
)

ROOT = Path(__file__).resolve().parents[1]
SPEEDS = {"balanced": ((1.0, 0.8), (0.8, 1.0)), "unbalanced": ((1.0, 0.1), (0.1, 1.0))}  # speeds[pool][type]
KNOWLEDGE = {"full": ("full", {}), "signal 0.7": ("signal", {"q": 0.7}), "revealed 0.4": ("revealed", {"f": 0.4}),
             "none": ("none", {})}
POLICIES = ("none", "reroute", "replicate", "full replication")
P = (0.5, 0.5)


def _stability_module():
    spec = importlib.util.spec_from_file_location("stability", ROOT / "experiments" / "stability.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def theory_policy(policy: str, knowledge: str, tau=math.inf) -> PoolsPolicy:
    kind, extra = KNOWLEDGE[knowledge]
    if policy == "none":
        return PoolsPolicy(knowledge=kind, **extra)
    if policy == "full replication":
        return PoolsPolicy(knowledge=kind, action="replicate", tau=0.0, **extra)
    return PoolsPolicy(knowledge=kind, action=policy, tau=tau, **extra)


def tuned(model: PoolsModel, policy: str, knowledge: str) -> PoolsPolicy:
    """The policy at the formula's best tau (reroute, replicate), else as it is."""
    pol = theory_policy(policy, knowledge)
    if policy in ("reroute", "replicate"):
        pol = theory_policy(policy, knowledge, best_tau(model, pol).tau)
    return pol


def spec_for(model: PoolsModel, pol: PoolsPolicy, rate: float, arrival_timer: bool = False) -> NetworkSpec:
    knowledge = {"signal": {"signal": pol.q}, "revealed": {"revealed": pol.f}}.get(pol.knowledge, pol.knowledge)
    block = {"servers": list(model.servers),
             "types": [{"p": pj, "speeds": [model.speeds[0][j], model.speeds[1][j]]} for j, pj in enumerate(model.p)],
             "knowledge": knowledge, "policy": pol.action, "restart": pol.restart,
             "timer": "arrival" if arrival_timer else "service"}
    if pol.action != "none":
        block["tau"] = ["inf" if math.isinf(t) else t for t in pol.tau]
    return NetworkSpec.from_dict({"name": "pools", "arrival": {"dist": "exponential", "rate": float(rate)},
                                  "pools": block})


def run_spec(model: PoolsModel, policy: str, pol: PoolsPolicy, rate: float) -> NetworkSpec:
    return spec_for(model, pol, rate, arrival_timer=policy == "full replication")


# ---------------------------------------------------------------- (a) loads
def busy_fraction(spec: NetworkSpec, instances: int, steps: int, warmup: int, seed: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per pool: mean busy fraction seen by arrivals (PASTA) and its standard error over instances."""
    eng = Engine(spec, instances, seed=seed)
    zero = np.zeros(instances, np.int64)
    for _ in range(warmup):
        eng.step(zero)
    total = np.zeros((instances, 2))
    for _ in range(steps):
        total += eng.busy()
        eng.step(zero)
    frac = total / steps / spec.servers[None, :]
    return frac.mean(0), frac.std(0, ddof=1) / math.sqrt(instances)


def loads_table(args) -> list[dict]:
    rows = []
    n = args.load_servers
    print(f"(a) effective load per pool, {n} + {n} servers, formula load 0.3: formula vs measured busy fraction",
          file=sys.stderr)
    print(f"{'speeds':<11}{'policy':<17}{'knowledge':<13}{'tau':>13}{'rho1':>8}{'busy1':>16}{'rho2':>8}"
          f"{'busy2':>16}{'z max':>7}{'rel max':>9}", file=sys.stderr)
    for speeds in args.speeds:
        model = PoolsModel(P, SPEEDS[speeds], (n, n))
        for policy in args.policies:
            for knowledge in args.knowledge:
                pol = theory_policy(policy, knowledge, args.load_tau)
                rate = 0.3 / max(effective_loads(model, pol, 1.0))
                rho = effective_loads(model, pol, rate)
                busy, se = busy_fraction(run_spec(model, policy, pol, rate), args.instances, args.load_steps,
                                         args.load_steps // 4, args.seed)
                z = np.abs(busy - rho) / se
                rel = np.abs(busy - rho) / np.maximum(rho, 1e-12)  # the criterion: within 1%
                rows.append({"speeds": speeds, "policy": policy, "knowledge": knowledge, "tau": list(pol.tau),
                             "rate": rate, "rho": list(rho), "busy": busy.tolist(), "se": se.tolist(),
                             "z": z.tolist(), "rel": rel.tolist()})
                tau = ",".join("inf" if math.isinf(t) else f"{t:.3g}" for t in pol.tau)
                print(f"{speeds:<11}{policy:<17}{knowledge:<13}{tau:>13}{rho[0]:>8.4f}{busy[0]:>9.4f}+-{se[0]:.4f}"
                      f"{rho[1]:>8.4f}{busy[1]:>9.4f}+-{se[1]:.4f}{z.max():>7.2f}{100 * rel.max():>8.2f}%",
                      file=sys.stderr)
    return rows


# ---------------------------------------------------------------- (b) stability
def measured_limit(model: PoolsModel, policy: str, pol: PoolsPolicy, predicted: float, args) -> float:
    """Bisection on lam in [lo, hi] x predicted (geometric) by the sign of the drift from a backlog
    built at 1.5 x the candidate (experiments/stability.py's ``unstable``)."""
    stability = _stability_module()
    lo, hi = args.bracket[0] * predicted, args.bracket[1] * predicted
    for i in range(args.iterations):
        mid = math.sqrt(lo * hi)
        try:
            grows = stability.unstable(run_spec(model, policy, pol, mid), mid, args.horizon, args.instances,
                                       args.seed + 100 * i, args.max_doublings, build_rate=1.5 * mid)
        except CapacityError:
            grows = True
        if grows:
            hi = mid
        else:
            lo = mid
    return math.sqrt(lo * hi)


def stability_table(args) -> list[dict]:
    rows = []
    n = args.servers
    print(f"\n(b) stability bound, {n} + {n} servers: formula (copies start at once) vs simulated (drift)",
          file=sys.stderr)
    print(f"{'speeds':<11}{'policy':<17}{'knowledge':<13}{'tau':>13}{'formula':>9}{'simulated':>11}{'ratio':>7}",
          file=sys.stderr)
    for speeds in args.speeds:
        model = PoolsModel(P, SPEEDS[speeds], (n, n))
        for policy in args.policies:
            for knowledge in args.knowledge:
                t0 = time.perf_counter()
                pol = tuned(model, policy, knowledge)
                formula = stability_bound(model, pol)
                simulated = measured_limit(model, policy, pol, formula, args)
                rows.append({"speeds": speeds, "policy": policy, "knowledge": knowledge, "tau": list(pol.tau),
                             "formula": formula, "simulated": simulated, "seconds": time.perf_counter() - t0})
                tau = ",".join("inf" if math.isinf(t) else f"{t:.3g}" for t in pol.tau)
                print(f"{speeds:<11}{policy:<17}{knowledge:<13}{tau:>13}{formula:>9.3f}{simulated:>11.3f}"
                      f"{simulated / formula:>7.2f}", file=sys.stderr)
    return rows


# ---------------------------------------------------------------- (c) latency vs tau
def mean_response(spec: NetworkSpec, instances: int, steps: int, seed: int) -> tuple[float, float]:
    """Mean response time over the jobs of ``steps`` decisions after a warm-up of steps / 4, and
    its standard error over instances; inf when the job table overflows (unstable)."""
    from envs import Driver
    from envs.rollout import collect
    try:
        done, _ = collect(Driver(spec, instances, seed=seed, max_jobs=1 << 12),
                          lambda o: np.zeros(o.shape[0], np.int64), steps, steps // 4)
    except CapacityError:
        return math.inf, 0.0
    per = np.bincount(done.env, weights=done.sojourn, minlength=instances) / np.bincount(done.env,
                                                                                           minlength=instances)
    return float(per.mean()), float(per.std(ddof=1) / math.sqrt(instances))


def tau_curves(args, limits: dict) -> list[dict]:
    rows = []
    n = args.servers
    taus = np.geomspace(args.tau_range[0], args.tau_range[1], args.taus)
    print(f"\n(c) mean response time vs tau (same tau on both pools), {n} + {n} servers, at 80% of each "
          "policy's bound", file=sys.stderr)
    for speeds in args.speeds:
        model = PoolsModel(P, SPEEDS[speeds], (n, n))
        for knowledge in args.curve_knowledge:
            for policy in ("reroute", "replicate"):
                pol = tuned(model, policy, knowledge)
                bound = limits.get((speeds, policy, knowledge), stability_bound(model, pol))
                rate = 0.8 * bound
                base = mean_response(run_spec(model, "none", theory_policy("none", knowledge), rate),
                                     args.instances, args.curve_steps, args.seed)
                curve = [mean_response(run_spec(model, policy, theory_policy(policy, knowledge, float(t)), rate),
                                       args.instances, args.curve_steps, args.seed) for t in taus]
                rows.append({"speeds": speeds, "knowledge": knowledge, "policy": policy, "rate": rate,
                             "bound": bound, "tau": taus.tolist(), "mean": [c[0] for c in curve],
                             "se": [c[1] for c in curve], "none": base})
                best = int(np.argmin([c[0] for c in curve]))
                print(f"{speeds:<11}{knowledge:<13}{policy:<10} lam {rate:.3f}: none {base[0]:.3f}; best tau "
                      f"{taus[best]:.3g}: {curve[best][0]:.3f} +- {curve[best][1]:.3f}; "
                      + " ".join(f"{m:.2f}" for m, _ in curve), file=sys.stderr)
    return rows


def plot_curves(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = sorted({(r["speeds"], r["knowledge"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, (speeds, knowledge) in zip(axes[0], panels, strict=True):
        for r in (r for r in rows if (r["speeds"], r["knowledge"]) == (speeds, knowledge)):
            mean = np.asarray(r["mean"])
            ok = np.isfinite(mean)
            line, = ax.plot(np.asarray(r["tau"])[ok], mean[ok], "o-", ms=3,
                            label=f"{r['policy']} (lam {r['rate']:.2f})")
            if np.isfinite(r["none"][0]):
                ax.axhline(r["none"][0], color=line.get_color(), ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tau")
        ax.set_title(f"{speeds}, knowledge {knowledge}", fontsize=9)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("mean response time (dotted: no timer)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def labels_table(args) -> list[dict]:
    from drl_ac.learning.lookahead import labels_by_state
    from drl_ac.study.run import at_load
    from envs import Driver, load_spec
    from envs.systems.pools.rules import signalled_rules

    rows = []
    for load in args.label_loads:
        spec = at_load(load_spec(args.label_scenario), load)
        wanted = ("replicate", 0.0, "front", args.label_preempt)
        rules = {(r.policy, r.tau, r.queue, r.preempt): r for r in signalled_rules(spec)}
        if wanted not in rules:
            offered = sorted({key[3] for key in rules if key[:3] == wanted[:3]})
            raise SystemExit(f"--label-preempt {args.label_preempt:g}: {args.label_scenario} offers no front copy "
                             f"with that rescue. Fix: one of {', '.join(f'{t:g}' for t in offered)}.")
        rule = rules[wanted]
        driver = Driver(spec, args.label_instances, seed=args.seed)
        for _ in range(args.label_warmup):
            driver.step(rule(driver.observe()))
        t0 = time.time()
        for c in labels_by_state(driver, rule, args.label_horizon, args.labelled):
            lowest = int(np.argmin(c["mean"]))
            state = c["state"]
            row = {"load": load, "waiting": state[:2], "busy": state[2:4], "signal": int(np.argmax(state[4:])),
                   "count": c["count"], "rule": rule.describe(), "lowest": spec.actions[lowest], "label": c["mean"][lowest],
                   "se": c["se"][lowest]}
            rows.append(row)
            print(f"(d) load {load}: waiting {row['waiting']} busy {row['busy']} signal {row['signal']} "
                  f"(n = {row['count']}): lowest {row['lowest']} {row['label']:+.2f} +- {row['se']:.2f}", flush=True)
        print(f"(d) load {load}: {time.time() - t0:.0f} s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", choices=["loads", "stability", "curves", "labels"], nargs="+", default=None)
    p.add_argument("--speeds", nargs="+", choices=list(SPEEDS), default=list(SPEEDS))
    p.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    p.add_argument("--knowledge", nargs="+", choices=list(KNOWLEDGE), default=list(KNOWLEDGE))
    p.add_argument("--curve-knowledge", nargs="+", choices=list(KNOWLEDGE), default=["full", "none"])
    p.add_argument("--servers", type=int, default=1, help="servers per pool in (b) and (c)")
    p.add_argument("--load-servers", type=int, default=10, help="servers per pool in (a)")
    p.add_argument("--load-tau", type=float, default=0.5, help="tau of reroute and replicate in (a)")
    p.add_argument("--instances", type=int, default=64)
    p.add_argument("--load-steps", type=int, default=4000, help="arrivals per instance in (a)")
    p.add_argument("--horizon", type=float, default=800.0, help="time units per drift run in (b)")
    p.add_argument("--iterations", type=int, default=7, help="bisection steps in (b)")
    p.add_argument("--bracket", type=float, nargs=2, default=[0.25, 2.5], help="(b) search range x formula")
    p.add_argument("--max-doublings", type=int, default=1)
    p.add_argument("--taus", type=int, default=9, help="tau values in (c)")
    p.add_argument("--tau-range", type=float, nargs=2, default=[0.05, 20.0])
    p.add_argument("--curve-steps", type=int, default=3000, help="arrivals per instance per point in (c)")
    p.add_argument("--label-loads", type=float, nargs="+", default=[0.8, 0.95], help="(d) loads of the study's rate")
    p.add_argument("--label-scenario", choices=["pools", "pools_rescue"], default="pools", help="(d) scenario")
    p.add_argument("--label-preempt", type=float, default=math.inf, help="(d) the rule's rescue time")
    p.add_argument("--label-instances", type=int, default=256, help="instances in (d)")
    p.add_argument("--label-warmup", type=int, default=3000, help="rule decisions before the first labels in (d)")
    p.add_argument("--label-horizon", type=int, default=100, help="decisions per rollout in (d)")
    p.add_argument("--labelled", type=int, default=40, help="labelled decisions per instance in (d), one in 8")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a few rows, short runs")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "pools")
    args = p.parse_args(argv)
    if args.quick:
        args.speeds, args.knowledge, args.curve_knowledge = ["unbalanced"], ["full"], ["full"]
        args.instances, args.load_steps, args.load_servers = 16, 600, 6
        args.horizon, args.iterations, args.taus, args.curve_steps = 200.0, 3, 3, 300
        args.label_loads, args.label_instances, args.label_warmup, args.label_horizon, args.labelled = [0.8], 8, 100, 5, 2
    parts = args.only or ["loads", "stability", "curves", "labels"]
    out: dict = {}
    if "loads" in parts:
        out["loads"] = loads_table(args)
    limits = {}
    if "stability" in parts:
        out["stability"] = stability_table(args)
        limits = {(r["speeds"], r["policy"], r["knowledge"]): r["simulated"] for r in out["stability"]}
    if "curves" in parts:
        out["curves"] = tau_curves(args, limits)
        plot_curves(out["curves"], args.out / "latency_vs_tau.png")
    if "labels" in parts:
        out["labels"] = labels_table(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pools.json").write_text(json.dumps(out, indent=1, default=float) + "\n")
    return out


if __name__ == "__main__":
    main()
