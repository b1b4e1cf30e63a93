"""Steady-state evaluation and a stability verdict, the same protocol for every system.

Why: a window of a few hundred decisions after a fixed warm-up from an empty start measures
a transient. On ``redundancy_ps`` at load 0.9 with d = 1 (ten M/G/1-PS servers at load 0.9:
mean response exactly 10) such a window read 7.4. Here one long run per policy is cut into
batches of ``chunk`` decisions per instance:

* the warm-up is the MSER truncation point (White 1997) of the batch means of the number in
  system averaged over instances: the cut that minimises the variance of the remaining mean;
  a cut in the second half of the run means the run has not reached its stationary
  regime yet, and the run is doubled;
* the window is every batch after the cut, each decision's job followed to its departure;
  the run is doubled until the headline measure's standard error is at most ``rel_se`` of
  its value (the mean response time's where the headline is a constant, ``_precision``; or
  ``max_steps`` is reached: the result then says which standard error it reached, and a run
  that never settled says how many decisions per instance it would need, ``steps_needed``);
* ``stability`` builds a backlog by an overload, restores the arrival rate and measures
  the drift of the number in system over a long horizon with its standard error: a policy
  whose backlog grows is unstable, whatever its mean looked like in a finite window.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from drl_ac.evaluation.metrics import (
    engine_options,
    evaluate,
    instance_sums,
    replay,
    summarize_sums,
    unless_overloaded,
)
from envs import Driver, NetworkSpec, Outcomes
from envs.engine import CapacityError
from envs.rollout import set_arrival_speed, settled, warmup_batches

Policy = Callable[[np.ndarray], np.ndarray]
Z_UNSTABLE = 3.0  # standard errors of growth that make a policy unstable (never chosen: false alarms cost)
Z_GROWTH = 2.0  # a stable policy's backlog shrinks and shows no growth at this level in its second half
MIN_BATCHES = 4  # the fewest batches a run is judged on (an MSER cut and two halves after it)


class _Batches:
    """Sums of one run per (batch of ``chunk`` decision steps, instance): any window of
    batches is summed afterwards, and memory does not grow with the jobs evaluated."""

    def __init__(self, num_envs: int, chunk: int, origin: int = 0):
        self.B, self.chunk, self.origin = num_envs, chunk, origin  # origin: the decision step of batch 0
        self.sums: dict[str, np.ndarray] = {}
        self.level = np.zeros((16, num_envs))  # mean number in system at the batch's decisions
        self.parts: list[Outcomes] = []

    def _fit(self, batches: int) -> None:
        if batches > self.level.shape[0]:
            grow = np.zeros((max(batches, 2 * self.level.shape[0]) - self.level.shape[0], self.B))
            self.level = np.concatenate([self.level, grow])
            self.sums = {k: np.concatenate([v, grow]) for k, v in self.sums.items()}

    def flush(self, num_stations: int) -> None:
        done = Outcomes.concat(self.parts, num_stations).decisions()
        done = done.select(done.step >= self.origin)  # jobs decided before the start state was taken
        self.parts = []
        if not len(done):
            return
        batch = (done.step - self.origin) // self.chunk
        self._fit(int(batch.max()) + 1)
        flat = dataclasses.replace(done, env=batch * self.B + done.env)  # one 'instance' per (batch, instance)
        for k, v in instance_sums(flat, self.level.size).items():
            self.sums[k] = self.sums.get(k, 0) + v.reshape(self.level.shape)

    def step(self, driver: Driver, policy: Policy, obs: np.ndarray) -> np.ndarray:
        batch = self.steps(driver) // self.chunk
        self._fit(batch + 1)
        obs, done = driver.step(np.asarray(policy(obs), np.int64))
        self.level[batch] += driver.jobs_in_system() / self.chunk
        self.parts.append(done)
        if self.steps(driver) % self.chunk == 0:
            self.flush(driver.engine.N)
        return obs

    def steps(self, driver: Driver) -> int:
        return driver.t - self.origin

    def window(self, first: int, end: int) -> dict[str, np.ndarray]:
        """Per-instance sums of batches [first, end)."""
        return {k: v[first:end].sum(0) for k, v in self.sums.items()}


def steady_state(policy: Policy, spec: NetworkSpec, seed: int = 10_000, num_envs: int = 256, chunk: int = 100,
                 rel_se: float = 0.01, min_steps: int = 2_000, max_steps: int = 64_000,
                 per_instance: bool = False, max_jobs: int | None = None, start: dict | None = None) -> dict:
    """``policy`` on ``num_envs`` instances of ``spec`` in steady state (see the module's
    docstring): the measures of ``drl_ac.evaluation.metrics.summarize`` (each with ``_ci``
    and ``_se``) over the window, plus ``warmup_steps``, ``window_steps`` (decisions per
    instance), ``headline`` with its ``rel_se`` reached and ``stationary`` (False: the run
    was still drifting when ``max_steps`` per instance was reached: the numbers are not a
    steady state). With ``per_instance`` the per-instance sums of ``paired_difference``.

    A system with a periodic arrival profile (a 5G cell's day) has no stationary state in
    this sense: it is evaluated over whole phases by ``evaluate``, arrival-weighted; so is a
    loss system (a cell: nothing queues, ``evaluate``'s warm-up of 10 mean sessions is exact
    enough, and it reports the cell's own measures).

    ``start``: an engine state (``Engine.get_state``, same spec and ``num_envs``) to start from
    instead of empty, e.g. another policy's stationary state: candidates of a tuning then
    share one long warm-up and the same random numbers from there on.

    An admission policy that overloads the system is scored as such
    (``drl_ac.evaluation.metrics.overloaded``) unless ``max_jobs`` is given."""
    if spec.period is not None or spec.system.kind == "loss":
        arrivals = num_envs * max(min_steps, 400)
        out = evaluate(policy, spec, arrivals=arrivals, seed=seed, num_envs=num_envs, per_instance=per_instance)
        return {**out, "headline": spec.system.headline.measure, "stationary": True}
    return unless_overloaded(spec, max_jobs, num_envs, lambda: _steady_state(
        policy, spec, seed, num_envs, chunk, rel_se, min_steps, max_steps, per_instance,
        engine_options(spec, max_jobs), start))


def _steady_state(policy: Policy, spec: NetworkSpec, seed: int, num_envs: int, chunk: int, rel_se: float,
                  min_steps: int, max_steps: int, per_instance: bool, options: dict, start: dict | None) -> dict:
    replay(policy)
    driver = Driver(spec, num_envs, seed=seed, encoding=getattr(policy, "encoding", None), **options)
    eng = driver.engine
    if start is not None:
        eng.set_state(start)
    batches, headline = _Batches(num_envs, chunk, origin=driver.t), spec.system.headline.measure
    obs = driver.observe()
    target = _first_steps(min_steps, chunk, max_steps)
    while True:
        while batches.steps(driver) < target:
            obs = batches.step(driver, policy, obs)
        n = batches.steps(driver) // chunk
        cut, stationary = settled(batches.level[:n])
        if stationary or target >= max_steps:
            end = batches.origin + n * chunk  # follow the window's jobs to their departure (the run goes on meanwhile)
            # a run that never settled is reported, never used: its drain (behind a growing queue) is cut short
            limit = math.inf if stationary else batches.steps(driver) + max_steps // 4
            while (eng.jobs.live & (eng.jobs.step < end)).any() and batches.steps(driver) < limit:
                obs = batches.step(driver, policy, obs)
            batches.flush(eng.N)
            out = summarize_sums(batches.window(cut, n), per_instance=per_instance)
            reached = _precision(out, headline)
            if target >= max_steps or (stationary and reached <= rel_se):
                break
        target = min(2 * target, max_steps)
    result = {**out, "warmup_steps": cut * chunk, "window_steps": (n - cut) * chunk, "headline": headline,
              "rel_se": reached, "stationary": bool(stationary)}
    if not stationary:  # what a run would need: its warm-up in the first half (a lower bound, see warmup_batches)
        result["steps_needed"] = max(2 * (warmup_batches(batches.level[:n]) + 1) * chunk, 2 * n * chunk)
    return result


@dataclass(frozen=True)
class Stability:
    """A policy's behaviour from a backlog: ``verdict`` is ``unstable`` (the number in system
    grows over the second half of the horizon: its drift is more than ``Z_UNSTABLE`` standard
    errors above 0; or the job table overflowed), ``stable`` (the backlog shrank, N_end -
    N_backlog more than ``Z_UNSTABLE`` standard errors below 0, and the second half shows no
    growth beyond ``Z_GROWTH`` standard errors: a policy near its limit first sheds the young
    jobs of a backlog built in a hurry, then grows), ``undecided`` (neither, after the longest horizon) or
    ``loss system`` (nothing queues, so nothing can grow)."""

    verdict: str
    drift: float  # jobs per unit time over the second half of the horizon, mean over instances
    drift_se: float
    backlog: float  # mean number in system when the overload stopped
    end: float  # mean number in system at the end of the horizon
    horizon: float  # mean length of the horizon, time units

    @property
    def stable(self) -> bool:
        return self.verdict in ("stable", "loss system")

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        if self.verdict == "loss system":
            return "stable (a loss system: nothing queues)"
        return (f"{self.verdict}: from a backlog of {self.backlog:.0f} jobs to {self.end:.0f} over {self.horizon:.0f} "
                f"time units, drift {self.drift:+.4f} +- {self.drift_se:.4f} jobs per unit time in its second half")


def _precision(out: dict, headline: str) -> float:
    """The relative standard error a window reached: its headline's, or, where the headline is
    a constant (accept-all's acceptance: its standard error 0 says nothing of the run's
    length), the mean response time's. Stopping on a constant stopped an accept-all run at the
    first stationary check, its response times read from a window of a few relaxation times
    (an M/M/1 at load 0.95: 10% low)."""
    value, se = out[headline], out[f"{headline}_se"]
    if se == 0 and out.get("mean_delay_se", 0) > 0:
        value, se = out["mean_delay"], out["mean_delay_se"]
    return se / abs(value) if value else math.inf


def _first_steps(min_steps: int, chunk: int, max_steps: int) -> int:
    return min(max(min_steps, MIN_BATCHES * chunk), max_steps)


def _resolved(options: dict) -> dict:
    """``steady_state``'s keyword ``options`` with its defaults filled in."""
    given = inspect.signature(steady_state).bind_partial(**options)
    given.apply_defaults()
    return given.arguments


def capped(options: dict, arrivals: int) -> dict:
    """``steady_state`` options whose run stops after about ``arrivals`` arrivals (never fewer
    than ``MIN_BATCHES`` batches per instance: ``num_envs`` x 4 x ``chunk`` at least): a user's
    cap on an evaluation's cost, which may then end before the run is stationary
    (``stationary`` says so)."""
    o = _resolved(options)
    steps = max(arrivals // o["num_envs"], MIN_BATCHES * o["chunk"])
    return {**options, "min_steps": min(o["min_steps"], steps), "max_steps": min(o["max_steps"], steps)}


def stability(policy: Policy, spec: NetworkSpec, seed: int = 20_000, num_envs: int = 64, overload: float = 2.0,
              build_steps: int = 2_000, steps: int = 8_000, doublings: int = 1, max_jobs: int = 1 << 15) -> Stability:
    """Run ``policy`` with arrivals ``overload`` times as fast for ``build_steps`` decisions
    (a backlog), then at the spec's rate for ``steps``; judge by ``Stability``'s rule, the
    drift being the slope (N_end - N_mid) / (t_end - t_mid) per instance over the second half
    of those steps, its mean and standard error over instances. Undecided runs are made again
    with every length doubled, up to ``doublings`` times.

    A backlog is the honest start: from an empty or typical state a policy near its limit
    looks stable for a long while, and a policy may misbehave only in the large states a
    backlog reaches (where a learned network has seen little). The first half lets the
    backlog's make-up settle: one built in a hurry holds mostly young jobs, which under
    processor sharing leave faster than a settled backlog's (a drift down for a while even
    where the fluid limit grows). Near its limit an unstable policy's number in system grows
    slowly (under PS, mostly the largest jobs stay), so the longer the horizon the surer.

    An admission policy's backlog is built with every job admitted (action 1, the first
    admitting action, where it would reject): its own rejections would keep the system near its typical state, there
    would be no backlog to drain, and the test could only say ``undecided`` (a policy that reads
    its arrival-rate estimate rejects more under the overload). From the backlog it decides
    alone, and one that admits in the large states drifts up."""
    if spec.system.kind == "loss":
        return Stability("loss system", 0.0, 0.0, 0.0, 0.0, 0.0)
    floor = 1 if spec.system.kind == "admission" else 0  # admission: action 0 rejects
    for k in range(doublings + 1):
        driver = Driver(spec, num_envs, seed=seed + k, encoding=getattr(policy, "encoding", None), max_jobs=max_jobs)
        eng = driver.engine
        obs = driver.observe()
        try:
            set_arrival_speed(driver, overload)
            for _ in range(build_steps << k):
                obs, _ = driver.step(np.maximum(np.asarray(policy(obs), np.int64), floor))
            set_arrival_speed(driver, 1.0)
            built, t_built = driver.jobs_in_system().astype(float), eng.now.copy()
            for i in range(steps << k):
                if i == (steps << k) // 2:
                    mid, t_mid = driver.jobs_in_system().astype(float), eng.now.copy()
                obs, _ = driver.step(np.asarray(policy(obs), np.int64))
        except CapacityError:
            return Stability("unstable", math.inf, 0.0, math.nan, math.nan, math.nan)
        end = driver.jobs_in_system().astype(float)
        slope = (end - mid) / (eng.now - t_mid)
        drift, se = float(slope.mean()), _se_mean(slope)
        shrink, shrink_se = float((end - built).mean()), _se_mean(end - built)
        if drift - Z_UNSTABLE * se > 0:
            verdict = "unstable"
        elif shrink + Z_UNSTABLE * shrink_se < 0 and drift - Z_GROWTH * se <= 0:
            verdict = "stable"
        else:
            verdict = "undecided"
        result = Stability(verdict, drift, se, float(built.mean()), float(end.mean()), float((eng.now - t_built).mean()))
        if verdict != "undecided":
            break
    return result


def _se_mean(x: np.ndarray) -> float:
    return float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.inf
