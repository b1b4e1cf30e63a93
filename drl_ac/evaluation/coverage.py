"""Do the steady-state intervals cover the truth? Cases with an exact mean, many seeds each.

Why: every verdict rests on ``steady.steady_state``'s mean and 95% interval. One interval that
misses is noise; estimates on the same side of the truth, growing with the load, are a bias
(the old warm-up read redundancy d = 1 at load 0.9 as 9.2 for an exact 10). A case passes when
its interval covers the exact value on at least 90% of the seeds and the mean of the seeds'
estimates lies within 2 of its standard errors of it (the check that finds a bias long
before coverage does). A run that reaches no steady state gives no interval: a miss.

A seed's result is one JSON line (``run``'s ``out``), so a long case (load 0.95: minutes a
seed) is run over several sittings, its seeds in ``workers`` processes of one run, each once.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from drl_ac.parallel import run_jobs
from drl_ac.study.compare import BUDGETS
from envs import NetworkSpec
from envs.distributions import Exponential
from envs.queueing import mg1_ps_mean_sojourn, mmc_mean_sojourn
from envs.rollout import accept_all
from envs.spec import SCENARIO_DIR

from .steady import steady_state

SEEDS, FIRST_SEED = 40, 1_000
COVERED, WITHIN_SE = 0.9, 2.0  # share of seeds whose interval covers; |mean - exact| <= this many standard errors
OPTIONS = {"num_envs": 128, "min_steps": 2_000, "max_steps": 32_000, "rel_se": 0.01}
QUICK = BUDGETS["quick"]["evaluation"]  # what a comparison at the quick budget runs
# load 0.95 of ten PS servers relaxes over about 25,000 decisions; written out (not from QUICK):
# docs/coverage.jsonl's seeds are read again only under these very options
LONG = {"num_envs": 128, "min_steps": 1_000, "max_steps": 512_000, "rel_se": 0.01}
FEW = {"num_envs": 32, "min_steps": 1_000, "max_steps": 64_000, "rel_se": 0.01}  # pools relax in fewer decisions


def fcfs(stations: int, servers: int, rho: float) -> NetworkSpec:
    """A tandem of ``stations`` M/M/``servers`` stations at load ``rho`` (exponential service, mean 1)."""
    return NetworkSpec.tandem([servers] * stations, [Exponential(1.0)] * stations, Exponential(1 / (rho * servers)),
                              d_ub=10, eps=0.1)


def redundancy_d1(load: float) -> NetworkSpec:
    """redundancy_ps.yaml (ten PS servers, mean size 1) at ``load``."""
    cfg = yaml.safe_load((SCENARIO_DIR / "redundancy_ps.yaml").read_text())
    cfg["arrival"] = {"dist": "exponential", "rate": 10 * load}
    return NetworkSpec.from_dict(cfg)


def pools_at(rate: float) -> NetworkSpec:
    cfg = yaml.safe_load((SCENARIO_DIR / "pools.yaml").read_text())
    cfg["arrival"]["rate"] = rate
    return NetworkSpec.from_dict(cfg)


def first_action(obs: np.ndarray) -> np.ndarray:
    """Redundancy's d = 1: one copy on a random server (each server an M/G/1-PS queue)."""
    return np.zeros(obs.shape[0], np.int64)


def full_replication(obs: np.ndarray) -> np.ndarray:
    """pools.yaml's action 2, a copy on pool 2 as service starts on pool 1: with one server per
    pool both hold the same job, which leaves at its own pool's speed 1 (its size X there, 10 X
    on the other): an M/M/1 queue of mean-1 jobs, mean response 1 / (1 - lambda)."""
    return np.full(obs.shape[0], 2, np.int64)


@dataclass(frozen=True)
class Case:
    """A system and policy whose mean response time is known exactly, and the estimator's options."""

    title: str
    spec: Callable[[], NetworkSpec]
    policy: Callable[[np.ndarray], np.ndarray]
    exact: float
    options: dict


CASES: dict[str, Case] = {  # name (what --cases takes): the case
    "mm1_0.95": Case("M/M/1 at rho 0.95", lambda: fcfs(1, 1, 0.95), accept_all, mmc_mean_sojourn(1, 0.95, 1.0),
                     OPTIONS),
    "mm3_0.95": Case("M/M/3 at rho 0.95 (Erlang C)", lambda: fcfs(1, 3, 0.95), accept_all,
                     mmc_mean_sojourn(3, 2.85, 1.0), OPTIONS),
    "mm1_tandem_0.9": Case("two M/M/1 in tandem at rho 0.9", lambda: fcfs(2, 1, 0.9), accept_all,
                           2 * mmc_mean_sojourn(1, 0.9, 1.0), OPTIONS),
    **{f"redundancy_d1_{load}": Case(f"redundancy_ps, d = 1 (ten M/M/1-PS) at load {load}",
                                     lambda load=load: redundancy_d1(load), first_action,
                                     mg1_ps_mean_sojourn(load, 1.0), options)
       for load, options in ((0.5, OPTIONS), (0.7, OPTIONS), (0.9, QUICK), (0.95, LONG))},
    **{f"pools_replication_{rate}": Case(f"pools, full replication (an M/M/1) at rate {rate}",
                                         lambda rate=rate: pools_at(rate), full_replication, 1.0 / (1.0 - rate), FEW)
       for rate in (0.4966, 0.7946, 0.9436)},
}


def case_named(name: str) -> Case:
    if name not in CASES:
        raise ValueError(f"unknown coverage case {name!r}. Fix: one of {', '.join(map(repr, CASES))}.")
    return CASES[name]


def run_seed(job: dict) -> dict:
    """One seed of a case (``job``: ``case``, ``seed``, optional ``options`` overriding the
    case's): its estimate, interval, whether it covers the exact value, and its wall time."""
    case, t0 = case_named(job["case"]), time.time()
    options = {**case.options, **job.get("options", {})}
    m = steady_state(case.policy, case.spec(), seed=job["seed"], **options)
    lo, hi = m["mean_delay_ci"]
    stationary = bool(m["stationary"])
    return {"case": job["case"], "seed": job["seed"], "exact": case.exact, "mean_delay": float(m["mean_delay"]),
            "mean_delay_ci": [float(lo), float(hi)], "stationary": stationary,
            "covered": bool(stationary and lo <= case.exact <= hi), "warmup_steps": int(m["warmup_steps"]),
            "window_steps": int(m["window_steps"]), "options": options, "seconds": round(time.time() - t0, 1)}


@dataclass(frozen=True)
class Coverage:
    """A case's verdict over its seeds."""

    case: str
    exact: float
    seeds: int
    covered: int
    mean: float
    se: float

    @property
    def covers(self) -> bool:
        return self.covered >= COVERED * self.seeds

    @property
    def unbiased(self) -> bool:
        return abs(self.mean - self.exact) <= WITHIN_SE * self.se

    @property
    def passes(self) -> bool:
        return self.covers and self.unbiased

    def describe(self) -> str:
        return (f"{self.case}: covered on {self.covered} of {self.seeds} seeds (needs {math.ceil(COVERED * self.seeds)}), "
                f"mean {self.mean:.4f} +- {self.se:.4f} against the exact {self.exact:.4f} "
                f"({(self.mean - self.exact) / self.se if self.se > 0 else math.inf:+.2f} se; needs within "
                f"{WITHIN_SE:g}): {'passes' if self.passes else 'fails'}")


def judge(records: Iterable[dict]) -> Coverage:
    """The verdict of one case's seed records (each seed counted once)."""
    by_seed = {r["seed"]: r for r in records}
    if len(by_seed) < 2 or len({r["case"] for r in by_seed.values()}) != 1:
        raise ValueError("judge takes the records of one case, at least two seeds")
    rs = list(by_seed.values())
    est = np.array([r["mean_delay"] for r in rs])
    return Coverage(rs[0]["case"], rs[0]["exact"], len(rs), sum(r["covered"] for r in rs), float(est.mean()),
                    float(est.std(ddof=1) / math.sqrt(len(rs))))


def read(out: Path, case: str, options: dict) -> list[dict]:
    """The records of ``case`` run with ``options`` against its exact value today, already in
    ``out`` (a JSON line each; a line cut short by a stopped run, or not a record, is skipped)."""
    if not out.exists():
        return []
    exact, found = case_named(case).exact, []
    for line in out.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(r, dict) and r.get("case") == case and r.get("options") == options and r.get("exact") == exact:
            found.append(r)
    return found


def run(case: str, seeds: int = SEEDS, workers: int = 1, out: Path | None = None, options: dict | None = None,
        say: Callable[[dict], None] = lambda r: None) -> Coverage:
    """``case`` on seeds FIRST_SEED .. FIRST_SEED + seeds - 1 and its verdict. With ``out``, the
    seeds already there (run with the same options) are read, not run again, and each new one
    is appended as it ends. ``options`` override the case's (a smaller ``max_steps`` for a
    smoke run)."""
    resolved = {**case_named(case).options, **(options or {})}
    done = {r["seed"]: r for r in read(out, case, resolved)} if out is not None else {}
    jobs = [{"case": case, "seed": FIRST_SEED + s, **({"options": options} if options else {})}
            for s in range(seeds) if FIRST_SEED + s not in done]
    for r in run_jobs(run_seed, jobs, workers):
        done[r["seed"]] = r
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            with out.open("a") as f:
                f.write(json.dumps(r) + "\n")
        say(r)
    return judge(done[FIRST_SEED + s] for s in range(seeds))
