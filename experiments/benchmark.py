"""Speed and memory of the simulator (and, with the learner, of training).

Prints job-tracked decisions (network arrivals) per second and peak memory for
`paper_tandem` under accept-all and a threshold rule at several batch sizes, the
counterfactual's cost separately, and ratios against B = 1 measured in the same process;
a tandem of processor-sharing stations; and the same paper_tandem runs on this checkout
and on an earlier commit (a git worktree), interleaved, with their ratio.

    python experiments/benchmark.py [--sizes 1 256 4096 16384] [--decisions 400000] [--train-seconds 30]
    python experiments/benchmark.py --only compare --baseline-ref 02d85eb
    python experiments/benchmark.py --only ps        # PS tandem, redundancy-d, two pools
    python experiments/benchmark.py --only cell      # the cell scenarios at B = 4096
    python experiments/benchmark.py --only engines   # NumPy vs compiled engine, side by side (also: --engine both)
    python experiments/benchmark.py --only engines --engine-instances 128 4096 --engine-decisions 200000

Training speed: decisions per second with learning (one gradient step per vector step)
on `paper_tandem`, for several numbers of instances, after the replay has filled.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numba import njit

from drl_ac.evaluation.metrics import phase_offsets, relaxation_time
from envs import Driver, Engine, NetworkSpec, load_spec
from envs.compiled import THREADS_VAR, use_engine
from envs.distributions import Exponential
from envs.rollout import accept_all, collect
from envs.systems.network.rules import TotalThreshold

ROOT = Path(__file__).resolve().parents[1]


def peak_memory_mb(spec, policy, num_envs: int, warmup_steps: int = 200, traced_steps: int = 20) -> float:
    """Peak traced memory (MB) from building the simulator through a warm-up and some steps.

    Measured in a separate run: tracing every allocation slows NumPy several fold."""
    tracemalloc.start()
    sim = Engine(spec, num_envs, seed=1)
    for _ in range(warmup_steps + traced_steps):
        sim.step(policy(sim.observe()))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def measure(spec, policy, num_envs: int, decisions: int, warmup_steps: int = 200, seed: int = 0) -> dict:
    """Decisions per second after a warm-up, and time spent in counterfactuals."""
    sim = Engine(spec, num_envs, seed=seed)
    cf_time = [0.0, 0]
    inner = sim.probe.run

    def timed_counterfactual(rows):
        t0 = time.perf_counter()
        out = inner(rows)
        cf_time[0] += time.perf_counter() - t0
        cf_time[1] += rows.size
        return out

    sim.probe.run = timed_counterfactual
    for _ in range(warmup_steps):
        sim.step(policy(sim.observe()))
    cf_time[:] = [0.0, 0]
    steps = max(1, decisions // num_envs)
    t0 = time.perf_counter()
    for _ in range(steps):
        sim.step(policy(sim.observe()))
    elapsed = time.perf_counter() - t0
    return {"B": num_envs, "decisions_per_s": steps * num_envs / elapsed,
            "peak_mb": peak_memory_mb(spec, policy, num_envs, warmup_steps),
            "cf_share": cf_time[0] / elapsed, "cf_per_s": cf_time[1] / cf_time[0] if cf_time[0] else 0.0,
            "rejected": cf_time[1] / (steps * num_envs), "capacity": sim.capacity}


def simulator_table(sizes: list[int], decisions: int) -> None:
    spec = load_spec("paper_tandem")
    print(f"simulator: paper_tandem, {decisions} decisions per row after 200 warm-up steps")
    print(f"{'policy':<14}{'B':>7}{'decisions/s':>14}{'x B=1':>8}{'peak MB':>9}{'rejected':>10}"
          f"{'cf time':>9}{'cf/s':>11}{'K':>6}")
    for name, policy in (("accept-all", accept_all), ("threshold k=9", TotalThreshold(9))):
        base = None
        for b in sizes:
            r = measure(spec, policy, b, decisions if b > 1 else min(decisions, 20000))
            base = base or (r["decisions_per_s"] if b == 1 else None)
            ratio = r["decisions_per_s"] / base if base else float("nan")
            print(f"{name:<14}{b:>7}{r['decisions_per_s']:>14,.0f}{ratio:>8.1f}{r['peak_mb']:>9.1f}"
                  f"{r['rejected']:>10.3f}{r['cf_share']:>9.0%}{r['cf_per_s']:>11,.0f}{r['capacity']:>6}")


def accept_all_delays(num_envs: int = 4096, warmup: int = 2000, steps: int = 60) -> None:
    """Mean delay and P(d > d_ub) of paper_tandem under accept-all, both delay measures."""
    spec = load_spec("paper_tandem")  # paper measure in `delay`; the sojourn time is reported beside it
    done, _ = collect(Driver(spec, num_envs, seed=0), accept_all, steps, warmup)
    print(f"\naccept-all on paper_tandem: B = {num_envs}, {len(done)} arrivals after {warmup} warm-up steps")
    for name, d in (("paper measure", done.delay), ("sojourn", done.sojourn)):
        print(f"  {name:<14} mean delay {d.mean():8.3f}   P(d > {spec.d_ub:g}) = {(d > spec.d_ub).mean():.4f}")


def training_table(sizes: list[int], seconds: float) -> None:
    import torch

    from drl_ac.learning.trainer import TrainConfig, Trainer

    print(f"\ntraining: paper_tandem, decisions/s with learning over {seconds:g} s, torch threads "
          f"{torch.get_num_threads()}")
    print(f"{'B':>7}{'decisions/s':>14}{'gradient steps/s':>18}")
    for b in sizes:
        trainer = Trainer(TrainConfig(num_envs=b, learning_starts=0))
        for _ in range(100):  # warm up: replay fills, queues reach steady state
            trainer.step()
        t0, d0, u0 = time.perf_counter(), trainer.decisions, trainer.learner.updates
        while time.perf_counter() - t0 < seconds:
            trainer.step()
        elapsed = time.perf_counter() - t0
        print(f"{b:>7}{(trainer.decisions - d0) / elapsed:>14,.0f}{(trainer.learner.updates - u0) / elapsed:>18,.0f}")


def ps_tandem_table(num_envs: int = 4096, decisions: int = 400_000) -> None:
    """A tandem of three processor-sharing stations at load 0.8 under accept-all."""
    spec = NetworkSpec.tandem([1, 2, 1], [Exponential(0.8), Exponential(1.6), Exponential(0.8)], Exponential(1.0),
                              d_ub=30, eps=0.1, kind="ps", name="ps_tandem")
    r = measure(spec, accept_all, num_envs, decisions)
    print(f"\nPS tandem (3 stations, load 0.8, accept-all): B = {num_envs}: {r['decisions_per_s']:,.0f} decisions/s")


def redundancy_table(num_envs: int = 4096, decisions: int = 400_000) -> None:
    """Redundancy-d: N = 10 processor-sharing servers, d = 2 i.i.d. exponential copies, load 0.7."""
    spec = NetworkSpec.from_dict({"name": "redundancy", "arrival": {"dist": "exponential", "rate": 7.0},
                                  "d_ub": 10, "eps": 0.1,
                                  "redundancy": {"servers": 10, "kind": "ps", "copies": "iid",
                                                 "size": {"dist": "exponential", "mean": 1.0}, "d": [2]}})
    r = measure(spec, lambda obs: np.zeros(obs.shape[0], np.int64), num_envs, decisions)
    print(f"\nredundancy-d (N = 10 PS servers, d = 2, load 0.7): B = {num_envs}: {r['decisions_per_s']:,.0f} jobs/s")


def pools_table(num_envs: int = 4096, decisions: int = 400_000) -> None:
    """Two pools (docs/systems/pools.md): 2 + 2 servers, speeds [[1, 0.1], [0.1, 1]], signal q = 0.8,
    replicate after tau = 1 in service (timers armed and firing), load 0.6 of the formula's bound."""
    from envs.systems.pools.theory import PoolsModel, PoolsPolicy, stability_bound
    bound = stability_bound(PoolsModel((0.5, 0.5), ((1.0, 0.1), (0.1, 1.0)), (2, 2)),
                            PoolsPolicy(knowledge="signal", q=0.8, action="replicate", tau=1.0))
    spec = NetworkSpec.from_dict({"name": "pools", "arrival": {"dist": "exponential", "rate": 0.6 * bound},
                                  "pools": {"servers": [2, 2], "types": [{"p": 0.5, "speeds": [1.0, 0.1]},
                                                                         {"p": 0.5, "speeds": [0.1, 1.0]}],
                                            "knowledge": {"signal": 0.8}, "policy": "replicate", "tau": 1.0}})
    r = measure(spec, lambda obs: np.zeros(obs.shape[0], np.int64), num_envs, decisions)
    print(f"\npools (2 + 2 FCFS servers, replicate after tau = 1, load 0.6 of the bound): B = {num_envs}: "
          f"{r['decisions_per_s']:,.0f} jobs/s")


def cell_table(num_envs: int = 4096, decisions: int = 400_000) -> None:
    """Cells (docs/systems/cell.md): decisions per CPU second at B = num_envs in steady state, and the
    share of time in probes (blocked UEs scored by a copy of the cell). A cell with a daily
    profile starts its instances spread over the day (``phase_offsets``) and warms up for
    ``relaxation_time``: from an empty night cell it would time only quiet hours."""
    rng = np.random.default_rng(0)
    guard = lambda obs: (obs[:, 1] < 8).astype(np.int64)  # noqa: E731  (g = 2 of C = 10)
    coin = lambda obs: (rng.random(obs.shape[0]) < 0.8).astype(np.int64)  # noqa: E731
    print(f"\ncells: B = {num_envs}, {decisions} decisions per row (cell_5g: a quarter) in steady state")
    print(f"{'scenario':<16}{'policy':<16}{'decisions/CPU-s':>16}{'blocked':>9}{'probe time':>12}")
    for scenario, name, policy, share in (("cell_erlang", "accept-all", accept_all, 1.0),
                                          ("cell_multirate", "accept-all", accept_all, 1.0),
                                          ("cell_guard", "guard g=2", guard, 1.0),
                                          ("cell_small", "accept-all", accept_all, 1.0),
                                          ("cell_small", "admit 80%", coin, 1.0),
                                          ("cell_5g", "accept-all", accept_all, 0.25),
                                          ("cell_5g", "admit 80%", coin, 0.25)):
        spec = load_spec(scenario)
        start = phase_offsets(spec.period, num_envs, 0) if spec.period else 0.0
        driver = Driver(spec, num_envs, seed=0, start=start)
        probe, probe_time = driver.engine.probe, [0.0]
        inner = probe.run

        def timed(rows, inner=inner, probe_time=probe_time):
            t0 = time.process_time()
            out = inner(rows)
            probe_time[0] += time.process_time() - t0
            return out

        probe.run = timed
        obs, eng = driver.observe(), driver.engine
        warm, k = eng.now + (relaxation_time(spec) if spec.period else 0.0), 0
        while k < 100 or (eng.now < warm).any():
            obs, _ = driver.step(policy(obs))
            k += 1
        probe_time[0], blocked, rows = 0.0, 0, 0
        steps = max(1, int(decisions * share) // num_envs)
        t0 = time.process_time()
        for _ in range(steps):
            obs, done = driver.step(policy(obs))
            keep = done.decisions()
            blocked, rows = blocked + keep.measures["blocked"].sum(), rows + len(keep)
        elapsed = time.process_time() - t0
        print(f"{scenario:<16}{name:<16}{steps * num_envs / elapsed:>16,.0f}{blocked / max(rows, 1):>9.3f}"
              f"{probe_time[0] / elapsed:>12.0%}")


# ---------------------------------------------------------------- NumPy vs compiled engine
def _decision_rate(spec, policy, num_envs: int, decisions: int, engine: str, warmup_steps: int = 100) -> float:
    """Decisions per second of ``Engine(engine=...)`` after a warm-up (steady queues)."""
    sim = Engine(spec, num_envs, seed=0, engine=engine, start=phase_offsets(spec.period, num_envs, 0)
                 if spec.period else 0.0)
    for _ in range(warmup_steps):
        sim.step(policy(sim.observe()))
    steps = max(1, decisions // num_envs)
    t0 = time.perf_counter()
    for _ in range(steps):
        sim.step(policy(sim.observe()))
    return steps * num_envs / (time.perf_counter() - t0)


def _with_threads(threads: int, measure_one: Callable[..., float], *args) -> float:
    """``measure_one(*args)`` with the compiled loop on ``threads`` threads."""
    before = os.environ.get(THREADS_VAR)
    os.environ[THREADS_VAR] = str(threads)
    try:
        return measure_one(*args)
    finally:
        if before is None:
            del os.environ[THREADS_VAR]
        else:
            os.environ[THREADS_VAR] = before


@njit(cache=True)
def _minimal_tandem(now, horizon, service, end, job, queue, head, length, busy, first, servers, free, nfree,
                    job_service):
    """The limit: paper_tandem's FCFS tandem, accept-all, with nothing but its events (no waits,
    probes, outcome rows or checks); services drawn by NumPy. Returns the jobs that left."""
    B, S = end.shape
    N, Q = servers.size, queue.shape[2]
    left = 0
    for r in range(B):
        slot = free[r, nfree[r] - 1]
        nfree[r] -= 1
        for n in range(N):
            job_service[r, slot, n] = service[r, n]
        n, j, t = 0, slot, now[r]
        while True:  # place job j at station n at time t, then run the events up to the horizon
            if n >= 0:
                if busy[r, n] < servers[n]:
                    srv = first[n] + busy[r, n]
                    busy[r, n] += 1
                    end[r, srv] = t + job_service[r, j, n]
                    job[r, srv] = j
                else:
                    queue[r, n, (head[r, n] + length[r, n]) % Q] = j
                    length[r, n] += 1
            t, srv = np.inf, -1
            for k in range(S):
                if end[r, k] < t:
                    t, srv = end[r, k], k
            if srv < 0 or t > horizon[r]:
                break
            j = job[r, srv]
            n = 0
            while first[n] + servers[n] <= srv:
                n += 1
            if length[r, n] > 0:
                nxt = queue[r, n, head[r, n]]
                head[r, n] = (head[r, n] + 1) % Q
                length[r, n] -= 1
                end[r, srv] = t + job_service[r, nxt, n]
                job[r, srv] = nxt
            else:
                busy[r, n] -= 1
                last = first[n] + busy[r, n]
                end[r, srv], job[r, srv] = end[r, last], job[r, last]
                end[r, last], job[r, last] = np.inf, -1
            if n + 1 < N:
                n += 1
            else:
                free[r, nfree[r]] = j
                nfree[r] += 1
                left += 1
                n = -1
    return left


def minimal_rate(num_envs: int, decisions: int) -> float:
    """Decisions per second of ``_minimal_tandem`` on paper_tandem (one thread), NumPy drawing
    the arrivals and services as the engine does."""
    spec = load_spec("paper_tandem")
    servers = np.array(spec.servers, np.int64)
    first = np.concatenate([[0], np.cumsum(servers)[:-1]])
    B, N, K, Q = num_envs, servers.size, 256, 256
    end, job = np.full((B, servers.sum()), np.inf), np.full((B, servers.sum()), -1, np.int64)
    queue, head = np.zeros((B, N, Q), np.int64), np.zeros((B, N), np.int64)
    length, busy = np.zeros((B, N), np.int64), np.zeros((B, N), np.int64)
    free, nfree = np.tile(np.arange(K), (B, 1)), np.full(B, K, np.int64)
    job_service, rng = np.zeros((B, K, N)), np.random.default_rng(0)
    arrival = spec.arrival_processes()[0]
    now = np.zeros(B)
    steps, t0 = 100 + max(1, decisions // B), 0.0
    for step in range(steps):
        if step == 100:
            t0 = time.perf_counter()
        service = np.stack([st.service.sample(rng, B) for st in spec.stations], axis=1)
        horizon = arrival.next_after(rng, now)
        _minimal_tandem(now, horizon, service, end, job, queue, head, length, busy, first, servers, free, nfree,
                        job_service)
        now = horizon
    return (steps - 100) * B / (time.perf_counter() - t0)


def engines_table(num_envs: int, decisions: int, threads: int = 2) -> None:
    """Both engines on the same workloads in this process, interleaved, best of two: decisions/s,
    the compiled one on 1 and ``threads`` threads; the minimal loop as the limit."""
    zero = lambda obs: np.zeros(obs.shape[0], np.int64)  # noqa: E731  (every job served, first action)
    redundancy = NetworkSpec.from_dict({"name": "redundancy", "arrival": {"dist": "exponential", "rate": 7.0},
                                        "d_ub": 10, "eps": 0.1,
                                        "redundancy": {"servers": 10, "kind": "ps", "copies": "iid",
                                                       "size": {"dist": "exponential", "mean": 1.0}, "d": [2]}})
    workloads = (("paper_tandem accept-all", load_spec("paper_tandem"), accept_all),
                 ("paper_tandem sum q < 9, probes", load_spec("paper_tandem"), TotalThreshold(9)),
                 ("redundancy_ps d = 2 (load 0.7)", redundancy, zero),
                 ("pools action 0 (overloaded)", load_spec("pools"), zero),
                 ("pools full replication (action 2)", load_spec("pools"), lambda obs: np.full(obs.shape[0], 2)),
                 ("cell_5g accept", load_spec("cell_5g"), accept_all))
    print(f"\nengines: B = {num_envs}, {decisions} decisions, best of 2, decisions/s (the same process)")
    print(f"{'workload':<34}{'engine':>9}{'numpy':>11}{'compiled 1':>12}{'ratio':>7}"
          f"{f'compiled {threads}':>12}{f'{threads} vs 1':>8}")
    for label, spec, policy in workloads:
        rates = {k: 0.0 for k in ("numpy", "one", "many")}
        for _ in range(2):
            rates["numpy"] = max(rates["numpy"], _decision_rate(spec, policy, num_envs, decisions, "numpy"))
            for key, n in (("one", 1), ("many", threads)):
                rate = _with_threads(n, _decision_rate, spec, policy, num_envs, decisions, "compiled")
                rates[key] = max(rates[key], rate)
        used = Engine(spec, num_envs, seed=0).engine  # a system's loop may depend on the instances
        print(f"{label:<34}{used:>9}{rates['numpy']:>11,.0f}{rates['one']:>12,.0f}{rates['one'] / rates['numpy']:>7.2f}"
              f"{rates['many']:>12,.0f}{rates['many'] / rates['one']:>8.2f}")
        if label == "paper_tandem accept-all":
            limit = minimal_rate(num_envs, decisions)
            print(f"{'  minimal compiled loop (the limit)':<34}{'':>9}{'':>11}{limit:>12,.0f}"
                  f"{'':>7}   compiled 1 = {rates['one'] / limit:.0%} of it")


def compile_seconds() -> float:
    """Seconds the first compiled run takes to compile, in a fresh interpreter with an empty
    Numba cache (later runs load it from the cache)."""
    script = ("import time, numpy as np\nfrom envs import Engine, load_spec\nt = time.perf_counter()\n"
              "e = Engine(load_spec('paper_tandem'), 4, seed=0, engine='compiled')\n"
              "for _ in range(5): e.step(np.zeros(4, np.int64))\n"
              "print(time.perf_counter() - t)")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        fresh = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        cached = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    first, again = float(fresh.stdout.split()[-1]), float(cached.stdout.split()[-1])
    print(f"\ncompiled engine: first run {first:.1f} s (compiling), then {again:.2f} s (from the cache)")
    return first


# Runs in a subprocess against either checkout: only API common to both engines.
_RATE = """
import json, sys, time, numpy as np
from envs import load_spec
try:
    from envs import Engine
except ImportError:  # the baseline commit's name of the engine
    from envs import QueueNetworkSim as Engine
policy, B, decisions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sim = Engine(load_spec("paper_tandem"), B, seed=0)
act = (lambda o: np.ones(o.shape[0], np.int64)) if policy == "accept-all" else (lambda o: (o.sum(1) < 9).astype(np.int64))
for _ in range(200):
    sim.step(act(sim.observe()))
steps = max(1, decisions // B)
t0 = time.process_time()
for _ in range(steps):
    sim.step(act(sim.observe()))
print(json.dumps(steps * B / (time.process_time() - t0)))
"""

# Training with learning (decisions/s), either layout of the trainer.
_TRAIN_RATE = """
import json, sys, time, torch
try:
    from drl_ac.learning.trainer import TrainConfig, Trainer
except ImportError:  # the baseline commit's layout: the trainer was drl_ac/trainer.py
    from drl_ac.trainer import TrainConfig, Trainer
torch.set_num_threads(1)
B, seconds = int(sys.argv[1]), float(sys.argv[2])
trainer = Trainer(TrainConfig(num_envs=B, learning_starts=0, seed=0))
for _ in range(100):
    trainer.step()
t0, d0 = time.process_time(), trainer.decisions
while time.process_time() - t0 < seconds:
    trainer.step()
print(json.dumps((trainer.decisions - d0) / (time.process_time() - t0)))
"""


def _rate(root: Path, script: str, *args) -> float:
    """Rate printed by ``script`` run in a fresh interpreter on the checkout ``root``."""
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=root,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
                         capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def compare_with(ref: str, sizes: list[int], decisions: int, repeats: int = 3, train_seconds: float = 15.0) -> None:
    """The same paper_tandem runs (simulation under two policies, and training at 2048
    instances) on this checkout and on ``ref``, interleaved; best of ``repeats``. Rates are
    per CPU second of the single-threaded subprocess, so a busy machine disturbs them less."""
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), ref], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            print(f"\nthis checkout vs {ref} (paper_tandem, {decisions} decisions, best of {repeats}, subprocesses, "
                  "decisions per CPU second)")
            print(f"{'policy':<24}{'B':>7}{'before/s':>12}{'now/s':>12}{'ratio':>8}")
            runs = [(policy, b, _RATE, (policy, b, decisions)) for policy in ("accept-all", "threshold k=9")
                    for b in sizes]
            runs.append((f"training {train_seconds:g} s", 2048, _TRAIN_RATE, (2048, train_seconds)))
            for label, b, script, args in runs:
                before, now = 0.0, 0.0
                for _ in range(repeats):
                    before = max(before, _rate(old, script, *args))
                    now = max(now, _rate(ROOT, script, *args))
                print(f"{label:<24}{b:>7}{before:>12,.0f}{now:>12,.0f}{now / before:>8.3f}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 256, 4096, 16384])
    parser.add_argument("--decisions", type=int, default=400_000)
    parser.add_argument("--train-sizes", type=int, nargs="+", default=[512, 2048, 4096])
    parser.add_argument("--train-seconds", type=float, default=20.0)
    parser.add_argument("--baseline-ref", default="02d85eb", help="commit to compare the engine with")
    parser.add_argument("--only", choices=["simulator", "engines", "ps", "cell", "compare", "training"], default=None)
    parser.add_argument("--engine", choices=["both", "numpy", "compiled"], default="compiled",
                        help="the engine of the other tables; both: also the table of the two side by side")
    parser.add_argument("--engine-decisions", type=int, default=800_000, help="decisions per run of that table")
    parser.add_argument("--engine-instances", type=int, nargs="+", default=[4096],
                        help="instances of that table, one table each (a steady-state evaluation runs 128)")
    parser.add_argument("--threads", type=int, default=2, help="threads of the compiled engine's second column")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side in the comparison (best kept)")
    args = parser.parse_args()
    use_engine("compiled" if args.engine == "both" else args.engine)
    if args.only == "engines" or (args.only is None and args.engine == "both"):
        compile_seconds()
        for num_envs in args.engine_instances:
            engines_table(num_envs, args.engine_decisions, args.threads)
    if args.only in (None, "simulator"):
        simulator_table(args.sizes, args.decisions)
        accept_all_delays()
    if args.only in (None, "ps"):
        ps_tandem_table()
        redundancy_table()
        pools_table()
    if args.only in (None, "cell"):
        cell_table()
    if args.only in (None, "compare"):
        compare_with(args.baseline_ref, [4096, 16384], args.decisions, args.repeats, args.train_seconds)
    if args.only in (None, "training"):
        training_table(args.train_sizes, args.train_seconds)


if __name__ == "__main__":
    main()
