"""Stability of redundancy-d: the predicted threshold lambda* = N / (d E[min(X_1..X_d)])
against the one measured by simulation, for several copy laws and d = 1..4.

    python experiments/stability.py                 # the full table (a few minutes)
    python experiments/stability.py --quick         # two rows, small runs (what the tests run)

How lambda* is measured: a bisection on the sign of the drift of the number in system.
At a candidate lambda, B instances first build a backlog (arrivals at 1.5 lambda* for a
while), then run at the candidate for T time units; the drift is the change of the number
in system per unit time, averaged over the instances. Statistical rule: the candidate is
*unstable* when the mean drift exceeds 2 standard errors (over instances), *stable* when it
is below -2 standard errors; when neither, the run is repeated twice as long (up to
``--max-doublings``) and, still undecided, the sign of the mean decides. Starting from a
backlog, not from empty, keeps a stable system near its threshold from looking unstable
just because it has not reached steady state.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from drl_ac.theory.redundancy import stability_threshold
from envs import Engine, NetworkSpec
from envs.arrivals import ClassArrivals, RenewalArrivals
from envs.distributions import Deterministic, Exponential, Gamma, HyperExponential

# (label, copies, size law in YAML form, the same law as a theory object)
LAWS = {
    "identical exponential": ("identical", {"dist": "exponential", "mean": 1.0}, Exponential(1.0)),
    "identical deterministic": ("identical", {"dist": "deterministic", "mean": 1.0}, Deterministic(1.0)),
    "identical hyperexponential scv 4": ("identical", {"dist": "hyperexponential", "mean": 1.0, "scv": 4.0},
                                         HyperExponential(1.0, 4.0)),
    "iid deterministic (NBU)": ("iid", {"dist": "deterministic", "mean": 1.0}, Deterministic(1.0)),
    "iid Erlang-4 (NBU)": ("iid", {"dist": "gamma", "mean": 1.0, "scv": 0.25}, Gamma(1.0, 0.25)),
    "iid hyperexponential scv 4 (NWU)": ("iid", {"dist": "hyperexponential", "mean": 1.0, "scv": 4.0},
                                         HyperExponential(1.0, 4.0)),
    "iid exponential": ("iid", {"dist": "exponential", "mean": 1.0}, Exponential(1.0)),
}


def spec_for(servers: int, rate: float, d: int, copies: str, size: dict) -> NetworkSpec:
    return NetworkSpec.from_dict({"name": "stability", "arrival": {"dist": "exponential", "rate": rate},
                                  "d_ub": 10, "eps": 0.1, "redundancy": {"servers": servers, "kind": "ps",
                                                                         "copies": copies, "size": size, "d": [d]}})


def drift(spec: NetworkSpec, rate: float, backlog_rate: float, horizon: float, instances: int, seed: int,
          backlog: int = 0) -> tuple[float, float]:
    """Mean drift of the number in system (per unit time) at ``rate`` after a backlog, and its SE.
    The backlog is built at ``backlog_rate`` for horizon / 4 time units and, with ``backlog``,
    until every instance holds that many jobs per server."""
    eng = Engine(spec, instances, seed=seed)
    build = ClassArrivals([RenewalArrivals(Exponential(1.0 / backlog_rate))])
    build.reset(eng.rng, instances, start=eng.now)
    eng.arrivals = build
    zero = np.zeros(instances, np.int64)
    target = backlog * spec.num_stations
    while eng.now.min() < horizon / 4 or (eng.jobs_in_system() < target).any():
        eng.step(zero)
    test = ClassArrivals([RenewalArrivals(Exponential(1.0 / rate))])
    test.reset(eng.rng, instances, start=eng.now)
    eng.arrivals = test
    t0, n0 = eng.now.copy(), eng.jobs_in_system().astype(float)
    while (eng.now - t0).min() < horizon:
        eng.step(zero)
    slope = (eng.jobs_in_system() - n0) / (eng.now - t0)
    return float(slope.mean()), float(slope.std(ddof=1) / math.sqrt(instances))


def unstable(spec: NetworkSpec, rate: float, predicted: float, horizon: float, instances: int, seed: int,
             max_doublings: int, backlog: int = 0) -> bool:
    for k in range(max_doublings + 1):
        mean, se = drift(spec, rate, 1.5 * predicted, horizon * 2**k, instances, seed + k, backlog)
        if abs(mean) > 2 * se:
            break
    return mean > 0


def measure(servers: int, d: int, copies: str, size: dict, predicted: float, args) -> float:
    """Bisection on lambda in [0.8, 1.25] x predicted by the sign of the drift."""
    lo, hi = 0.8 * predicted, 1.25 * predicted
    for i in range(args.iterations):
        mid = 0.5 * (lo + hi)
        spec = spec_for(servers, mid, d, copies, size)
        if unstable(spec, mid, predicted, args.horizon, args.instances, args.seed + 100 * i, args.max_doublings,
                    args.backlog):
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", type=int, default=4, help="N")
    p.add_argument("--d", type=int, nargs="+", default=[1, 2, 3, 4])
    p.add_argument("--laws", nargs="+", default=list(LAWS), choices=list(LAWS), metavar="LAW")
    p.add_argument("--horizon", type=float, default=400.0, help="time units per drift run")
    p.add_argument("--instances", type=int, default=64)
    p.add_argument("--iterations", type=int, default=7, help="bisection steps")
    p.add_argument("--max-doublings", type=int, default=2)
    p.add_argument("--backlog", type=int, default=0,
                   help="jobs per server built before each drift run (0: horizon / 4 at 1.5 lambda* only). The "
                        "threshold is a fluid limit: near it, small backlogs can drift down where large ones grow")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="two rows, short runs")
    p.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = p.parse_args(argv)
    if args.quick:
        args.laws, args.d, args.horizon, args.iterations = ["identical exponential", "iid exponential"], [2], 200.0, 5
    rows = []
    print(f"{'law':<36}{'d':>3}{'E[min]':>9}{'predicted':>11}{'measured':>10}{'error':>8}", file=sys.stderr)
    for name in args.laws:
        copies, size, law = LAWS[name]
        for d in args.d:
            t0 = time.perf_counter()
            predicted = stability_threshold(args.servers, d, copies, size=law)
            measured = measure(args.servers, d, copies, size, predicted, args)
            row = {"law": name, "d": d, "e_min": args.servers / (d * predicted), "predicted": predicted,
                   "measured": measured, "error": measured / predicted - 1, "seconds": time.perf_counter() - t0}
            rows.append(row)
            print(f"{name:<36}{d:>3}{row['e_min']:>9.4f}{predicted:>11.4f}{measured:>10.4f}{row['error']:>+8.1%}",
                  file=sys.stderr)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
