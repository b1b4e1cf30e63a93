"""Run a policy on the simulator and collect the outcomes of a window of decisions.

Outcomes are selected by the *decision step*, not by when they became known, and the
run goes on (with the same policy and arrivals) until every job of the window has left,
so long-delayed jobs are never censored (a window selected by departure time would be
biased toward short delays) and the last jobs still see later arrivals.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from envs.arrivals import Accelerated, ClassArrivals
from envs.driver import Driver
from envs.outcomes import Outcomes

Policy = Callable[[np.ndarray], np.ndarray]
# A warm-up spans at least this many relaxation times (``relaxation_batches``): what is left of
# the empty start then biases a window at least as long by about e^-5 / 5 (0.1%) of the mean.
WARMUP_RELAXATIONS = 5.0
# Fewer batches cannot measure a relaxation time: the warm-up is then the MSER cut alone (the
# smoke budgets' runs of 4 batches, which check the wiring and decide nothing).
MIN_RELAXATION_BATCHES = 8


def accept_all(obs: np.ndarray) -> np.ndarray:
    return np.ones(obs.shape[0], np.int64)


def collect(driver: Driver, policy: Policy, steps: int, warmup: int = 0, record_obs: bool = False
            ) -> tuple[Outcomes, np.ndarray | None]:
    """Step ``warmup + steps`` decisions from the driver's current state, then on until
    the window's jobs have left.

    Returns the outcomes of the decisions taken in the last ``steps`` steps (every
    decision exactly once) and, with ``record_obs``, the observations at those decisions,
    shape (steps, B, width).
    """
    eng = driver.engine
    first = eng.t + warmup
    end = first + steps
    parts: list[Outcomes] = []
    seen = [] if record_obs else None
    obs = driver.observe()
    while eng.t < end or (eng.jobs.live & (eng.jobs.step < end)).any():
        if seen is not None and first <= eng.t < end:
            seen.append(obs)
        obs, done = driver.step(np.asarray(policy(obs), np.int64))
        parts.append(done)
    done = Outcomes.concat(parts, eng.N)
    window = done.select((done.step >= first) & (done.step < end))
    return window, (np.stack(seen) if seen is not None else None)


def mser_cut(series: np.ndarray) -> int:
    """MSER truncation point (White 1997) of a series of batch means: the d <= n/2 minimising
    sum((x[d:] - mean(x[d:]))**2) / (n - d)**2, the cut after which the mean is most precise."""
    n = series.size
    best, cut = math.inf, 0
    for d in range(n // 2 + 1):
        rest = series[d:]
        score = float(((rest - rest.mean()) ** 2).sum()) / (n - d) ** 2
        if score < best:
            best, cut = score, d
    return cut


def relaxation_batches(levels: np.ndarray) -> float:
    """The relaxation time of the number in system, in batches, from levels (batches,
    instances): its integrated autocorrelation time 1/2 + sum_k rho_k (t where the
    autocorrelation is e^(-k/t)), summed up to the first lag k >= 10 times it (Sokal's window).
    The instances are independent copies: each batch's level is centred on the mean over
    instances of that batch, which holds any common drift (a transient) and no instance's own
    slow swings. Centred on each instance's own mean instead, it read several times too short
    on windows not much longer than itself (redundancy d = 1 at load 0.9: 4 batches on a window
    of 88, where long runs measure about 60); this way it grows with the window until the
    window is several times longer than it, so a run too short reads as such."""
    x = levels - levels.mean(1, keepdims=True)
    var = float((x * x).mean())
    if var == 0.0:
        return 0.0
    tau = 0.5
    for k in range(1, x.shape[0] // 2):
        tau += float((x[k:] * x[:-k]).mean()) / var
        if k >= 10.0 * tau:
            break
    return max(tau, 0.0)


def warmup_batches(levels: np.ndarray) -> int:
    """The warm-up ``settled`` asks of levels (batches, instances): the MSER cut, and at least
    ``WARMUP_RELAXATIONS`` relaxation times from ``MIN_RELAXATION_BATCHES`` batches on. It may
    exceed half the run (then the run is too short); measured on a run too short, the
    relaxation time reads short too, so it is then a lower bound."""
    cut = mser_cut(levels.mean(1))
    if levels.shape[0] >= MIN_RELAXATION_BATCHES:
        cut = max(cut, math.ceil(WARMUP_RELAXATIONS * relaxation_batches(levels[cut:])))
    return cut


def settled(levels: np.ndarray, z: float = 3.0) -> tuple[int, bool]:
    """(warm-up, stationary?) of batch levels (batches, instances) of the number in system.

    The warm-up is the MSER cut, and at least ``WARMUP_RELAXATIONS`` relaxation times
    (``relaxation_batches`` of what follows the cut; from ``MIN_RELAXATION_BATCHES`` batches): the MSER cut alone, on a noisy series at
    high load, often ended inside the transient from the empty start, and every mean read low
    (redundancy d = 1 at load 0.9: 9.29 for an exact 10). Stationary when the warm-up lies in
    the first half of the run and what follows it has no trend (its first and second halves
    within ``z`` standard errors over instances)."""
    n = levels.shape[0]
    cut = warmup_batches(levels)
    rest = levels[cut:]
    half = rest.shape[0] // 2
    if cut >= n // 2 or half == 0:
        return min(cut, n // 2), False
    diff = rest[half:2 * half].mean(0) - rest[:half].mean(0)
    se = diff.std(ddof=1) / math.sqrt(diff.size) if diff.size > 1 else math.inf
    return cut, abs(float(diff.mean())) <= z * se


def warm_up(driver: Driver, policy: Policy, chunk: int = 50, min_steps: int = 400, max_steps: int = 40_000) -> int:
    """Run ``policy`` until the system is stationary; returns the steps taken.

    Instances start empty, so the number in system drifts up (under accept-all at high load
    for thousands of arrivals, at load 0.9 of ten PS servers for about 20,000). The number in
    system averaged over instances is kept per batch of ``chunk`` steps; the run is doubled
    until it has ``settled`` (the MSER cut in its first half, no trend after it), from at
    least ``min_steps`` to at most ``max_steps`` (a system that never settles: an unstable
    one). Then the state is stationary: the batches after the cut, the second half of the
    run included, show no trend. With a periodic arrival profile the number in system follows
    the profile and never settles in this sense: the warm-up is then ``min_steps`` (enough
    to forget the empty start when sessions are short against the period)."""
    eng = driver.engine
    target = min_steps if driver.spec.period is not None else min(max(min_steps, 4 * chunk), max_steps)
    obs = driver.observe()
    levels: list[np.ndarray] = []
    steps = 0
    while True:
        while steps < target:
            level = np.zeros(eng.B)
            for _ in range(chunk):
                obs, _ = driver.step(np.asarray(policy(obs), np.int64))
                level += eng.jobs_in_system()
            levels.append(level / chunk)
            steps += chunk
        if driver.spec.period is not None or target >= max_steps or settled(np.stack(levels))[1]:
            return steps
        target = min(2 * target, max_steps)


def collect_time(driver: Driver, policy: Policy, begin: np.ndarray, end: np.ndarray,
                 sample: Callable[[Driver], np.ndarray] | None = None
                 ) -> tuple[Outcomes, tuple[np.ndarray, np.ndarray, np.ndarray] | None, int]:
    """Step from the driver's current state until every instance b has passed ``end[b]`` and
    every job that arrived in its window has left; keep the rows that arrived in
    ``[begin[b], end[b])`` (windows in time, not in decisions: with a time-varying arrival
    rate a window of decisions covers less time in busy hours than in quiet ones).

    Returns (the window's outcomes, the samples of ``sample(driver)`` (B,) at the decisions
    inside the windows as (env, time, value) or None, the steps taken before the last
    instance entered its window).

    Instances step together, so the last window job to leave (a long session in a busy
    hour: thousands of steps) would keep every instance running. With admission, an instance
    past its window whose window jobs have all left is emptied (``Engine.empty_instances``)
    and rejects every later arrival: nothing of it is read any more, and it costs nothing.
    """
    eng = driver.engine
    begin, end = np.asarray(begin, float), np.asarray(end, float)
    parts: list[Outcomes] = []
    envs, times, values = [], [], []
    obs = driver.observe()
    entered = 0
    retired = np.zeros(eng.B, bool)

    def pending() -> np.ndarray:  # (B,) an instance still holds jobs that arrived in its window
        at = eng.jobs.arrival_time
        return (eng.jobs.live & (at >= begin[:, None]) & (at < end[:, None])).any(1)

    while (eng.now < end).any() or pending().any():
        if (eng.now < begin).any():
            entered = eng.t + 1
        if sample is not None:
            inside = np.flatnonzero((eng.now >= begin) & (eng.now < end))
            if inside.size:
                envs.append(inside)
                times.append(eng.now[inside].copy())
                values.append(np.asarray(sample(driver), float)[inside])
        action = np.array(policy(obs), np.int64)
        action[retired] = 0
        obs, done = driver.step(action)
        parts.append(done)
        if driver.spec.admission:
            done_with = ~retired & (eng.now >= end) & ~pending()
            if done_with.any():
                eng.empty_instances(np.flatnonzero(done_with))
                retired |= done_with
                obs = driver.observe()
    done = Outcomes.concat(parts, eng.N)
    at = done.arrival_time
    window = done.select((at >= begin[done.env]) & (at < end[done.env]))
    samples = None
    if sample is not None:
        samples = (_cat(envs, np.int64), _cat(times, float), _cat(values, float))
    return window, samples, entered


def _cat(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, dtype)


def set_arrival_speed(driver: Driver, factor: float) -> None:
    """From now on every class arrives ``factor`` times as fast as its spec says (1: the
    spec's own rates again), each class's next arrival drawn afresh from the current time.

    An overload for a while builds the backlog from which a stability check watches the
    number in system drift (``drl_ac.evaluation.steady.stability``)."""
    eng = driver.engine
    processes = ClassArrivals(driver.spec.arrival_processes()).processes
    arrivals = ClassArrivals(processes if factor == 1 else [Accelerated(p, factor) for p in processes])
    arrivals.reset(eng.rng, eng.B, start=eng.now)
    eng.arrivals = arrivals
