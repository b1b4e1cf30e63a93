"""Random feed-forward networks that no controller or rule here was tuned for.

Why: a controller that beats the best rule only on the networks it was developed on may have
been tuned to them. ``random_network(seed)`` draws a network as a user might bring one: 2-6
FCFS stations of 1-4 servers, service laws from deterministic to heavy-tailed, forward
routing with splits and merges, Poisson or gamma arrivals, the busiest station at a load in
``loads``; and a sojourn deadline that binds without being impossible. A deadline that no
admission can meet (the service times alone exceed it too often) or that accept-all meets
anyway decides nothing, so the deadline lies between two quantiles:

* above the (1 - eps / 2) quantile of the total service time of a job's path (so even a job
  that never waits meets it with probability 1 - eps / 2: eps is reachable);
* below the (1 - eps) quantile of accept-all's sojourn time in a short simulation (so
  accepting every job violates eps: admission control matters);

at their geometric mean. A draw whose quantiles are within 10% of each other is drawn again
(with the next sub-seed).
"""

from __future__ import annotations

import numpy as np

from envs.driver import Driver
from envs.rollout import accept_all, collect
from envs.spec import NetworkSpec

LAWS = ({"dist": "exponential"}, {"dist": "deterministic"}, {"dist": "gamma", "scv": 0.5},
        {"dist": "lognormal", "scv": 2.0}, {"dist": "hyperexponential", "scv": 4.0}, {"dist": "lomax", "scv": 3.0})
PATHS = 200_000  # Monte Carlo paths of the total service time
SIMULATION = {"num_envs": 64, "warmup": 3_000, "steps": 3_000}  # accept-all's sojourn quantile
SPREAD = 1.1  # the two quantiles at least this far apart
MAX_DRAWS = 50


def random_network(seed: int, loads: tuple[float, float] = (0.8, 0.95), eps: float = 0.1) -> dict:
    """A network configuration (``NetworkSpec.from_dict``'s form) drawn from ``seed``, named
    ``random-SEED``; the same seed gives the same network."""
    if not 0 < loads[0] <= loads[1] < 1:
        raise ValueError(f"loads: want 0 < low <= high < 1, got {loads}. Fix: e.g. loads=(0.8, 0.95).")
    for draw in range(MAX_DRAWS):
        rng = np.random.default_rng([seed, draw])
        cfg = _draw(rng, loads, eps, f"random-{seed}")
        low = float(np.quantile(path_service(cfg, rng, PATHS), 1 - eps / 2))
        high = _sojourn_quantile(cfg, 1 - eps, seed=int(rng.integers(2**31)))
        if high >= SPREAD * low:
            cfg["d_ub"] = float(f"{np.sqrt(low * high):.3g}")
            return cfg
    raise RuntimeError(f"no network drawn from seed {seed} has a deadline that binds in {MAX_DRAWS} draws. "
                       "Fix: try another seed or a higher load.")


def _draw(rng: np.random.Generator, loads: tuple[float, float], eps: float, name: str) -> dict:
    n = int(rng.integers(2, 7))
    names = [f"s{i}" for i in range(n)]
    stations = []
    for i in range(n):
        law = dict(LAWS[rng.integers(len(LAWS))])
        law["mean"] = float(f"{rng.uniform(0.5, 3.0):.3g}")
        stations.append({"name": names[i], "servers": int(rng.integers(1, 5)), "service": law})
    targets: list[list[str]] = []
    for i in range(n):
        later = names[i + 1:]
        chosen = [str(t) for t in rng.choice(later, size=min(len(later), int(rng.integers(1, 3))), replace=False)]
        targets.append(chosen + ["exit"] if not chosen or rng.random() < 0.3 else chosen)
    entry = {names[0]: 1.0}
    if n > 2 and rng.random() < 0.5:  # a second entry: jobs that skip the first station
        share = float(f"{rng.uniform(0.2, 0.5):.3f}")
        entry = {names[0]: round(1 - share, 3), names[int(rng.integers(1, n))]: share}
    for j in range(1, n):  # every station is reached: one without inflow gets it from an earlier one
        if names[j] not in entry and not any(names[j] in t for t in targets[:j]):
            targets[int(rng.integers(j))].insert(0, names[j])
    routing = {}
    for i in range(n):
        weights = rng.uniform(0.2, 1.0, len(targets[i]))
        routing[names[i]] = {t: float(f"{w / weights.sum():.3f}") for t, w in zip(targets[i], weights, strict=True)}
        _renormalise(routing[names[i]])
    arrival = {"dist": "exponential", "rate": 1.0} if rng.random() < 0.5 else \
        {"dist": "gamma", "rate": 1.0, "scv": float(f"{rng.uniform(0.5, 1.5):.2f}")}
    cfg = {"name": name, "arrival": arrival, "stations": stations, "entry": entry, "routing": routing,
           "d_ub": 1.0, "eps": eps, "delay": "sojourn"}
    load = rng.uniform(*loads)
    arrival["rate"] = float(f"{load / NetworkSpec.from_dict(cfg).utilization().max():.4g}")
    return cfg


def _renormalise(probs: dict) -> None:
    """Rounded probabilities summing to 1 exactly (the last one takes the rounding)."""
    keys = list(probs)
    probs[keys[-1]] = round(1.0 - sum(probs[k] for k in keys[:-1]), 3)


def path_service(cfg: dict, rng: np.random.Generator, paths: int) -> np.ndarray:
    """Total service time of ``paths`` jobs through the network (no waiting): each path drawn
    by the entry and routing probabilities, stations visited in their (feed-forward) order."""
    spec = NetworkSpec.from_dict(cfg)
    n = spec.num_stations
    routing = np.asarray(spec.routing)  # (n, n + 1): to each station, then exit
    if np.tril(routing[:, :n]).any():
        raise ValueError("path_service: the routing goes back to an earlier station (or stays). Fix: order the "
                         "stations so that every job moves forward (a feed-forward network).")
    laws = [st.service for st in spec.stations]
    at = rng.choice(n, size=paths, p=np.asarray(spec.entry))
    total = np.zeros(paths)
    for i in range(n):
        here = np.flatnonzero(at == i)
        if here.size:
            total[here] += laws[i].sample(rng, here.size)
            at[here] = rng.choice(n + 1, size=here.size, p=routing[i] / routing[i].sum())
    return total


def _sojourn_quantile(cfg: dict, q: float, seed: int) -> float:
    spec = NetworkSpec.from_dict(cfg)
    done, _ = collect(Driver(spec, SIMULATION["num_envs"], seed=seed), accept_all, SIMULATION["steps"],
                      SIMULATION["warmup"])
    return float(np.quantile(done.sojourn[done.accepted], q))
