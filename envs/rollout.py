"""Run a policy on the simulator and collect the outcomes of a window of decisions.

Outcomes are selected by the *decision step*, not by when they became known, and the
run goes on (with the same policy and arrivals) until every job of the window has left,
so long-delayed jobs are never censored (a window selected by departure time would be
biased toward short delays) and the last jobs still see later arrivals.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from envs.arrivals import Accelerated, ClassArrivals
from envs.driver import Driver
from envs.outcomes import Outcomes

Policy = Callable[[np.ndarray], np.ndarray]


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


def warm_up(driver: Driver, policy: Policy, chunk: int = 100, min_steps: int = 300, max_steps: int = 40_000,
            z: float = 2.0) -> int:
    """Run ``policy`` until the system is stationary; returns the steps taken.

    Instances start empty, so the number in system drifts up (under accept-all at high load
    for thousands of arrivals). After each ``chunk`` of steps the mean number in system over
    the chunk is compared with the previous chunk's: stationary once the change is within
    ``z`` standard errors (across instances) twice in a row, after at least ``min_steps``.
    ``max_steps`` bounds the warm-up of a system that never settles (an unstable one). With a
    periodic arrival profile the number in system follows the profile and never settles in
    this sense: the warm-up is then ``min_steps`` (enough to forget the empty start when
    sessions are short against the period; the window starts at that phase of the period).
    """
    eng = driver.engine
    if driver.spec.period is not None:
        max_steps = min(max_steps, min_steps)
    obs = driver.observe()
    previous, calm, steps = None, 0, 0
    while steps < max_steps:
        level = np.zeros(eng.B)
        for _ in range(chunk):
            obs, _ = driver.step(np.asarray(policy(obs), np.int64))
            level += eng.jobs_in_system()
        steps += chunk
        level /= chunk
        if previous is not None and steps >= min_steps:
            diff = level - previous
            se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else np.inf
            calm = calm + 1 if abs(diff.mean()) <= z * se else 0
            if calm >= 2:
                break
        previous = level
    return steps


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
