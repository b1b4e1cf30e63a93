"""Stability of redundancy-d: the predicted threshold lambda* = N / (d E[min(X_1..X_d)])
against the one measured by simulation, for several copy laws and d = 1..4.

    python experiments/stability.py                 # the full table (about 40 minutes)
    python experiments/stability.py --quick         # two rows, small runs (what the tests run)

How lambda* is measured: a bisection on the sign of the drift of the number in system.
At a candidate lambda, B instances start from a backlog of ``--backlog`` jobs per server
whose copies' remaining sizes follow the stationary excess of the copy law (``excess_sizes``:
the fluid state near lambda*), then run at the candidate for T time units; the drift is the
change of the number in system per unit time, averaged over the instances. Statistical
rule: the candidate is *unstable* when the mean drift exceeds 2 standard errors (over
instances), *stable* when it is below -2 standard errors; when neither, the run is repeated
twice as long (up to ``--max-doublings``) and, still undecided, the sign of the mean decides.

Why that backlog: lambda* is a fluid limit. Near it a small backlog drifts down where a
large one grows (identical copies on less loaded servers finish first and waste less than
(d - 1) E[X]), so the test needs many jobs per server; and a backlog built by overload
leaves a transient (PS sorts it by size; deterministic sizes all finish together). From the
stationary-excess backlog the fluid departure rate is exactly lambda* at the start (jobs
leave at rate Q N / (d Q) / E[M]), so the drift's sign is that of lambda - lambda* from the
first instant, for every law.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from envs import Engine, NetworkSpec
from envs.arrivals import ClassArrivals, RenewalArrivals
from envs.distributions import (
    Deterministic,
    Distribution,
    Exponential,
    Gamma,
    HyperExponential,
    PhaseMixture,
)
from envs.systems.redundancy.theory import stability_threshold

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
    "iid H2: rate 0.19 w.p. 0.1, 1.9 w.p. 0.9 (NWU)": ("iid", {"dist": "hyperexponential", "probs": [0.1, 0.9], "rates": [0.19, 1.9]},
                                   PhaseMixture((0.1, 0.9), (0.19, 1.9))),
}


def spec_for(servers: int, rate: float, d: int, copies: str, size: dict) -> NetworkSpec:
    return NetworkSpec.from_dict({"name": "stability", "arrival": {"dist": "exponential", "rate": rate},
                                  "d_ub": 10, "eps": 0.1, "redundancy": {"servers": servers, "kind": "ps",
                                                                         "copies": copies, "size": size, "d": [d]}})


def arrive_every(eng: Engine, gap: Distribution) -> None:
    """From now on, arrivals in every instance with i.i.d. gaps ``gap``."""
    arrivals = ClassArrivals([RenewalArrivals(gap)])
    arrivals.reset(eng.rng, eng.B, start=eng.now)
    eng.arrivals = arrivals


def excess_sizes(rng: np.random.Generator, sizes: Callable[[np.random.Generator, int], np.ndarray], d: int,
                 count: int) -> np.ndarray:
    """(count, N) remaining copy sizes of jobs found in a PS backlog near lambda*.

    In the fluid limit every copy of a job progresses at the same rate, so a job present
    has one attained service A for all its copies and leaves when A reaches M = min of its
    copies. Near lambda* the backlog holds each job with probability proportional to M and
    its A uniform on [0, M] (the equilibrium law of a renewal process of lifetimes M): the
    remaining sizes are X_i - A. Drawn from a pool of fresh jobs, length-biased by M."""
    pool = sizes(rng, max(4 * count, 1 << 16))
    life = pool[:, :d].min(1)
    pick = np.minimum(np.searchsorted(np.cumsum(life), rng.random(count) * life.sum()), life.size - 1)
    attained = rng.random(count) * life[pick]
    return np.maximum(pool[pick] - attained[:, None], 0.0)


def load_backlog(eng: Engine, per_server: int) -> None:
    """Put ``per_server`` x N jobs into every instance at once, their copies' remaining sizes
    by ``excess_sizes``: the state of a large backlog near lambda*, without the transient a
    backlog built by overload leaves (PS sorts such a backlog by size, and deterministic
    sizes all finish together)."""
    if per_server <= 0:
        return
    count = per_server * eng.N
    d = int(eng.routing.choices[0])
    remaining = excess_sizes(eng.rng, eng.routing.sizes, d, count * eng.B).reshape(count, eng.B, eng.N)
    arrive_every(eng, Deterministic(1e-12))
    every, zero = np.arange(eng.B), np.zeros(eng.B, np.int64)
    for k in range(count):
        order = eng.jobs.order[every, eng.slot]  # the column j of a draw goes to server order[j]
        eng.jobs.service[every[:, None], eng.slot[:, None], order] = remaining[k]
        eng.step(zero)


def build_by_overload(eng: Engine, rate: float, until: float) -> None:
    """Run every instance at arrival rate ``rate`` (above the limit) up to time ``until``: a
    backlog for systems without a known fluid state to start from (experiments/pools.py)."""
    arrive_every(eng, Exponential(1.0 / rate))
    zero = np.zeros(eng.B, np.int64)
    while eng.now.min() < until:
        eng.step(zero)


def drift(spec: NetworkSpec, rate: float, horizon: float, instances: int, seed: int, backlog: int = 0,
          build_rate: float | None = None) -> tuple[float, float]:
    """Mean drift of the number in system per unit time at ``rate`` over ``horizon``, and its SE
    over the instances. Start: a backlog of ``backlog`` jobs per server in the fluid state
    (``load_backlog``), or with ``build_rate`` one built at that rate for horizon / 4, or empty."""
    eng = Engine(spec, instances, seed=seed)
    load_backlog(eng, backlog)
    if build_rate is not None:
        build_by_overload(eng, build_rate, horizon / 4)
    arrive_every(eng, Exponential(1.0 / rate))
    zero = np.zeros(instances, np.int64)
    t0, n0 = eng.now.copy(), eng.jobs_in_system().astype(float)
    while (eng.now - t0).min() < horizon:
        eng.step(zero)
    slope = (eng.jobs_in_system() - n0) / (eng.now - t0)
    return float(slope.mean()), float(slope.std(ddof=1) / math.sqrt(instances))


def unstable(spec: NetworkSpec, rate: float, horizon: float, instances: int, seed: int, max_doublings: int,
             backlog: int = 0, build_rate: float | None = None) -> bool:
    """The statistical rule: the sign of the drift once it is beyond 2 SE, the run doubled
    up to ``max_doublings`` times while it is not; then the sign of the mean."""
    for k in range(max_doublings + 1):
        mean, se = drift(spec, rate, horizon * 2**k, instances, seed + k, backlog, build_rate)
        if abs(mean) > 2 * se:
            break
    return mean > 0


def measure(servers: int, d: int, copies: str, size: dict, predicted: float, args) -> float:
    """Bisection on lambda in [0.8, 1.25] x predicted by the sign of the drift."""
    lo, hi = 0.8 * predicted, 1.25 * predicted
    for i in range(args.iterations):
        mid = 0.5 * (lo + hi)
        spec = spec_for(servers, mid, d, copies, size)
        if unstable(spec, mid, args.horizon, args.instances, args.seed + 100 * i, args.max_doublings, args.backlog):
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
    p.add_argument("--backlog", type=int, default=1000,
                   help="jobs per server at the start of each drift run (0: from empty). The threshold is a fluid "
                        "limit: near it, small backlogs can drift down where large ones grow")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="two rows, short runs")
    p.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = p.parse_args(argv)
    if args.quick:
        args.laws, args.d, args.horizon, args.iterations = ["identical exponential", "iid exponential"], [2], 200.0, 5
        args.backlog = 200
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
