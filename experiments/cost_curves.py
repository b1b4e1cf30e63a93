"""How the simulator's cost grows with the work: decisions per second and peak memory of both
engines against the number of instances, the number of stations of a feed-forward network
(generated tandems and random acyclic networks) and the load; beside them the minimal compiled
loop (the limit, ``experiments/benchmark.py``) and Ciw (a single-instance, event-by-event
simulator) on the same networks, in station visits per second.

    python experiments/cost_curves.py                      # the tables of docs/benchmarks.md
    python experiments/cost_curves.py --plots docs         # and docs/cost_*.png
    python experiments/cost_curves.py --sizes 1 64 --stations 3 10 --loads 0.5 0.9 --decisions 20000

One process, one thread for the compiled loop. Ciw (``pip install ciw``, in an environment of
its own: its wheel installs a top-level ``tests`` package that shadows this project's) is
optional: without it its columns say so.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

import numpy as np

from envs import Engine, NetworkSpec, load_spec
from envs.compiled import use_engine
from envs.rollout import accept_all

ENGINES = ("numpy", "compiled")


# ---------------------------------------------------------------- the networks
def tandem(stations: int, load: float) -> NetworkSpec:
    """``stations`` M/M/1 FCFS stations in series, each at ``load`` (arrival rate 1)."""
    names = [f"s{i}" for i in range(stations)]
    return NetworkSpec.from_dict({
        "name": f"tandem{stations}", "arrival": {"dist": "exponential", "rate": 1.0}, "d_ub": 10.0 * stations,
        "eps": 0.1, "delay": "sojourn", "entry": names[0],
        "stations": [{"name": n, "servers": 1, "service": {"dist": "exponential", "mean": load}} for n in names],
        "routing": {n: (names[i + 1] if i + 1 < stations else "exit") for i, n in enumerate(names)}})


def random_acyclic(stations: int, load: float, seed: int = 0) -> NetworkSpec:
    """A random feed-forward network: station i routes to one to three of the next stations (or,
    at the last, out), with random probabilities; each station's mean service set so that its
    load is ``load`` at its own visit rate (arrival rate 1)."""
    rng = np.random.default_rng(seed)
    names = [f"s{i}" for i in range(stations)]
    routing: dict[str, object] = {}
    for i, n in enumerate(names):
        later = names[i + 1:]
        if not later:
            routing[n] = "exit"
            continue
        to = list(rng.choice(later, size=min(len(later), int(rng.integers(1, 4))), replace=False))
        p = rng.dirichlet(np.ones(len(to) + 1))  # the last share leaves the network
        routing[n] = {**{t: float(q) for t, q in zip(to, p[:-1], strict=True)}, "exit": float(p[-1])}
    spec = NetworkSpec.from_dict({"name": f"acyclic{stations}", "arrival": {"dist": "exponential", "rate": 1.0},
                                  "d_ub": 100.0, "eps": 0.1, "delay": "sojourn", "entry": names[0],
                                  "stations": [{"name": n, "servers": 1, "service": {"dist": "exponential",
                                                                                     "mean": 1.0}} for n in names],
                                  "routing": routing})
    cfg = spec.to_dict()
    visits = spec.visit_ratios()
    for st, v in zip(cfg["stations"], visits, strict=True):
        st["service"] = {"dist": "exponential", "mean": load / max(float(v), 1e-12)}
    return NetworkSpec.from_dict(cfg)


# ---------------------------------------------------------------- the measures
def decisions_per_second(spec: NetworkSpec, num_envs: int, decisions: int, engine: str, warmup: int = 200,
                         tries: int = 2, max_steps: int = 4_000) -> float:
    """Decisions per second of ``Engine(engine=...)``: the best of ``tries`` windows of about
    ``decisions`` decisions (at most ``max_steps`` steps) after ``warmup`` steps."""
    sim = Engine(spec, num_envs, seed=0, engine=engine)
    for _ in range(warmup):
        sim.step(accept_all(sim.observe()))
    steps, best = min(max_steps, max(1, decisions // num_envs)), 0.0
    for _ in range(tries):
        t0 = time.perf_counter()
        for _ in range(steps):
            sim.step(accept_all(sim.observe()))
        best = max(best, steps * num_envs / (time.perf_counter() - t0))
    return best


def warmup_steps(spec: NetworkSpec) -> int:
    """Decisions per instance until a feed-forward network of M/M/1 stations is about full:
    twice its mean sojourn time (in arrivals), at least 200."""
    rho = spec.utilization()
    sojourn = float(np.sum(spec.visit_ratios() * np.array([st.service.mean for st in spec.stations]) / (1 - rho)))
    return max(200, int(2 * sojourn * spec.arrival_rate))


def peak_memory_mb(spec: NetworkSpec, num_envs: int, engine: str, steps: int = 100) -> float:
    """Peak memory (MB) NumPy allocates from building the engine through ``steps`` steps
    (``tracemalloc``: NumPy's arrays are traced; the compiled loop allocates none of its own)."""
    tracemalloc.start()
    sim = Engine(spec, num_envs, seed=1, engine=engine)
    for _ in range(steps):
        sim.step(accept_all(sim.observe()))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def ciw_visits_per_second(spec: NetworkSpec, visits: int) -> float | None:
    """Station visits per second of Ciw on ``spec`` (exponential FCFS stations, Poisson
    arrivals), run for about ``visits`` station visits; None when Ciw is not installed."""
    try:
        import ciw
    except ImportError:
        return None
    n = spec.num_stations
    routing = np.asarray(spec.routing)[:, :n]  # the rest of each row leaves the network
    network = ciw.create_network(
        arrival_distributions=[ciw.dists.Exponential(spec.arrival_rate)] + [None] * (n - 1),
        service_distributions=[ciw.dists.Exponential(1.0 / st.service.mean) for st in spec.stations],
        routing=routing.tolist(), number_of_servers=[st.servers for st in spec.stations])
    ciw.seed(0)
    sim = ciw.Simulation(network)
    t0 = time.perf_counter()
    sim.simulate_until_max_time(visits / float(spec.visit_ratios().sum()) / spec.arrival_rate)
    return len(sim.get_all_records()) / (time.perf_counter() - t0)


# ---------------------------------------------------------------- the tables
def _row(label: str, cells: list[str]) -> None:
    print(f"| {label} | " + " | ".join(cells) + " |")


def _both(spec: NetworkSpec, num_envs: int, decisions: int, warmup: int = 200) -> dict[str, float]:
    """Both engines on ``spec``, each the best of two windows after ``warmup`` steps."""
    return {engine: decisions_per_second(spec, num_envs, decisions, engine, warmup) for engine in ENGINES}


def instances_curve(sizes: list[int], decisions: int) -> list[dict]:
    spec, out = load_spec("paper_tandem"), []
    print(f"\n### Instances: paper_tandem, accept-all, {decisions:,} decisions a point\n")
    print("| instances B | numpy dec/s | compiled dec/s | ratio | numpy MB | compiled MB |\n|---|---|---|---|---|---|")
    for b in sizes:
        rates = _both(spec, b, decisions)
        mem = {e: peak_memory_mb(spec, b, e) for e in ENGINES}
        _row(str(b), [f"{rates['numpy']:,.0f}", f"{rates['compiled']:,.0f}", f"{rates['compiled'] / rates['numpy']:.2f}",
                      f"{mem['numpy']:.2f}", f"{mem['compiled']:.2f}"])
        out.append({"x": b, **rates, **{f"{e}_mb": m for e, m in mem.items()}})
    return out


def stations_curve(stations: list[int], num_envs: int, visits: int, load: float, ciw_visits: int) -> list[dict]:
    print(f"\n### Stations: generated networks at load {load:g} per station, B = {num_envs}, accept-all, "
          f"{visits:,} station visits a point; station visits per second (Ciw: one instance, {ciw_visits:,} "
          "visits)\n")
    print("| network | stations | visits per job | numpy visits/s | compiled visits/s | ratio | compiled MB | "
          "Ciw visits/s | compiled vs Ciw |\n|---|---|---|---|---|---|---|---|---|")
    out = []
    for make in (tandem, random_acyclic):
        for n in stations:
            spec = make(n, load)
            per_job = float(spec.visit_ratios().sum())
            rates = _both(spec, num_envs, max(num_envs, int(visits / per_job)), warmup_steps(spec))
            mem = peak_memory_mb(spec, num_envs, "compiled")
            ciw_rate = ciw_visits_per_second(spec, ciw_visits)
            ciw_cells = ["not installed", "-"] if ciw_rate is None else \
                [f"{ciw_rate:,.0f}", f"{rates['compiled'] * per_job / ciw_rate:,.0f}x"]
            _row(make.__name__, [str(n), f"{per_job:.2f}", f"{rates['numpy'] * per_job:,.0f}",
                                 f"{rates['compiled'] * per_job:,.0f}", f"{rates['compiled'] / rates['numpy']:.2f}",
                                 f"{mem:.2f}", *ciw_cells])
            out.append({"network": make.__name__, "x": n, "visits": per_job, **rates, "compiled_mb": mem,
                        "ciw": ciw_rate})
    return out


def loads_curve(loads: list[float], num_envs: int, decisions: int) -> list[dict]:
    print(f"\n### Load: a tandem of 3 M/M/1 stations, each at the load, B = {num_envs}, accept-all\n")
    print("| load | numpy dec/s | compiled dec/s | ratio |\n|---|---|---|---|")
    out = []
    for load in loads:
        spec = tandem(3, load)
        rates = _both(spec, num_envs, decisions, warmup_steps(spec))
        _row(f"{load:g}", [f"{rates['numpy']:,.0f}", f"{rates['compiled']:,.0f}",
                           f"{rates['compiled'] / rates['numpy']:.2f}"])
        out.append({"x": load, **rates})
    return out


def plot(curves: dict[str, list[dict]], folder: Path) -> list[Path]:
    """One PNG per curve: decisions (or visits) per second against its variable, log scales."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for name, rows in curves.items():
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        groups = sorted({r.get("network", "") for r in rows})
        for color, group in enumerate(groups):
            part = [r for r in rows if r.get("network", "") == group]
            scale = [r.get("visits", 1.0) for r in part]
            xs = [r["x"] for r in part]
            for engine, style in (("numpy", "o--"), ("compiled", "s-")):
                ax.plot(xs, [r[engine] * s for r, s in zip(part, scale, strict=True)], style, color=f"C{color}",
                        label=f"{group} {engine}".strip())
            if any(r.get("ciw") for r in part):
                ax.plot(xs, [r["ciw"] for r in part], "^:", color=f"C{color}", label=f"{group} Ciw".strip())
        ax.set_xscale("log" if name != "loads" else "linear")
        ax.set_yscale("log")
        ax.set_xlabel({"instances": "instances B", "stations": "stations", "loads": "load"}[name])
        ax.set_ylabel("station visits / s" if name == "stations" else "decisions / s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = folder / f"cost_{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def main(argv: list[str] | None = None) -> dict[str, list[dict]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 256, 1024, 2048, 4096, 16384], help="instances")
    p.add_argument("--stations", type=int, nargs="+", default=[3, 10, 30, 100])
    p.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.7, 0.9, 0.95, 0.98])
    p.add_argument("--num-envs", type=int, default=256, help="instances of the stations and load curves")
    p.add_argument("--decisions", type=int, default=400_000, help="decisions a point (per engine, per try)")
    p.add_argument("--visits", type=int, default=1_200_000, help="station visits a point of the stations curve")
    p.add_argument("--station-load", type=float, default=0.8, help="each generated station's load")
    p.add_argument("--ciw-visits", type=int, default=200_000, help="station visits of each Ciw run")
    p.add_argument("--plots", type=Path, default=None, help="write cost_*.png into this folder")
    args = p.parse_args(argv)
    use_engine("compiled", 1)
    curves = {"instances": instances_curve(args.sizes, args.decisions),
              "stations": stations_curve(args.stations, args.num_envs, args.visits, args.station_load,
                                         args.ciw_visits),
              "loads": loads_curve(args.loads, args.num_envs, args.decisions)}
    if args.plots is not None:
        args.plots.mkdir(parents=True, exist_ok=True)
        print("\nwrote " + ", ".join(str(f) for f in plot(curves, args.plots)))
    return curves


if __name__ == "__main__":
    main()
