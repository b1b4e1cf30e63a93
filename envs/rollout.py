"""Run a policy on the simulator and collect the outcomes of a window of decisions.

Outcomes are selected by the *decision step*, not by when they became known, and the
run goes on (with the same policy and arrivals) until every job of the window has left,
so long-delayed jobs are never censored (a window selected by departure time would be
biased toward short delays) and the last jobs still see later arrivals.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from envs.engine import Completions, QueueNetworkSim

Policy = Callable[[np.ndarray], np.ndarray]


def accept_all(obs: np.ndarray) -> np.ndarray:
    return np.ones(obs.shape[0], np.int64)


def collect(sim: QueueNetworkSim, policy: Policy, steps: int, warmup: int = 0,
            include_in_service: bool = False, record_obs: bool = False
            ) -> tuple[Completions, np.ndarray | None]:
    """Step ``warmup + steps`` decisions from the simulator's current state, then on until
    the window's jobs have left.

    Returns the outcomes of the decisions taken in the last ``steps`` steps (every
    decision, accepted or rejected, exactly once) and, with ``record_obs``, the
    observations at those decisions, shape (steps, B, width).
    """
    first = sim.t + warmup
    parts: list[Completions] = []
    seen = [] if record_obs else None
    end = first + steps
    while sim.t < end or (sim.occupied & (sim.job_id < end)).any():
        obs = sim.observe(include_in_service)
        if seen is not None and first <= sim.t < end:
            seen.append(obs)
        parts.append(sim.step(policy(obs) == 1))
    done = Completions.concat(parts, sim.N)
    keep = (done.step >= first) & (done.step < end)
    window = Completions(**{k: v[keep] for k, v in vars(done).items()})
    return window, (np.stack(seen) if seen is not None else None)
