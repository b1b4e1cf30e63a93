"""Response-time tails of redundancy-d with regularly varying (Lomax) sizes: the tail index
is nu for identical copies and d * nu for i.i.d. copies (docs/systems/redundancy.md).

    python experiments/tails.py                      # table + results/tails/hill.png
    python experiments/tails.py --nu 2.5 --d 2 --arrivals 600000

The index is estimated with Hill's estimator over the k largest response times,
1 / mean(log(T_(i) / T_(k+1))), i <= k, shown for several k (a Hill plot): small k is
noisy, large k is biased by the body of the distribution.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from envs import Driver, NetworkSpec
from envs.rollout import collect


def hill(values: np.ndarray, k: int) -> float:
    """Hill's estimate of the tail index from the k largest values."""
    top = np.sort(values)[::-1][: k + 1]
    return float(1.0 / np.mean(np.log(top[:k] / top[k])))


def response_times(copies: str, nu: float, d: int, servers: int, rate: float, arrivals: int, seed: int
                   ) -> np.ndarray:
    scale = nu - 1.0  # Lomax mean scale / (shape - 1) = 1
    spec = NetworkSpec.from_dict({"name": f"tails-{copies}", "arrival": {"dist": "exponential", "rate": rate},
                                  "d_ub": 10, "eps": 0.1,
                                  "redundancy": {"servers": servers, "kind": "ps", "copies": copies,
                                                 "size": {"dist": "lomax", "shape": nu, "scale": scale}, "d": [d]}})
    instances = 200
    done, _ = collect(Driver(spec, instances, seed=seed), lambda o: np.zeros(o.shape[0], np.int64),
                      arrivals // instances, 500)
    return done.sojourn


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nu", type=float, default=2.5, help="tail index of the sizes")
    p.add_argument("--d", type=int, default=2)
    p.add_argument("--servers", type=int, default=4)
    p.add_argument("--rate", type=float, default=0.8, help="arrival rate (mean size 1)")
    p.add_argument("--arrivals", type=int, default=600_000)
    p.add_argument("--ks", type=int, nargs="+", default=[100, 200, 400, 800, 1600, 3200])
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path("results/tails"))
    args = p.parse_args(argv)
    rows = {}
    for copies, expected in (("identical", args.nu), ("iid", args.d * args.nu)):
        t = response_times(copies, args.nu, args.d, args.servers, args.rate, args.arrivals, args.seed)
        rows[copies] = {"expected": expected, "jobs": int(t.size), "hill": {k: hill(t, k) for k in args.ks}}
        est = ", ".join(f"k={k}: {v:.2f}" for k, v in rows[copies]["hill"].items())
        print(f"{copies:<10} expected {expected:.2f}  Hill {est}  ({t.size} jobs)", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hill.json").write_text(json.dumps(rows, indent=2) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (copies, r), color in zip(rows.items(), ("tab:blue", "tab:orange"), strict=True):
        ax.plot(list(r["hill"]), list(r["hill"].values()), "o-", color=color, label=f"{copies} copies")
        ax.axhline(r["expected"], color=color, ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("k (largest response times used)")
    ax.set_ylabel("Hill estimate of the tail index")
    ax.set_title(f"Redundancy-{args.d}, {args.servers} PS servers, Lomax sizes (nu = {args.nu:g})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out / "hill.png", dpi=120)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
