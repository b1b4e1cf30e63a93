"""Evaluate any policy (learned or a rule) on fresh seeds with the same metrics.

Outcomes are taken for a window of decisions after a warm-up, every job of the window
followed to its departure (see ``envs.rollout.collect``). A policy is observed through its
own ``encoding`` when it has one (a loaded policy), else through the system's default
(queue lengths: what the rules read). Confidence intervals treat
instances as independent clusters, so correlation between jobs of one instance is
accounted for.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from envs import Driver, NetworkSpec, Outcomes
from envs.rollout import collect, warm_up

Policy = Callable[[np.ndarray], np.ndarray]
Z95 = 1.959963984540054


def ratio_estimate(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """sum(num)/sum(den) over clusters (instances) and its standard error (delta method)."""
    total = float(den.sum())
    if total == 0:
        return math.nan, math.nan
    p = float(num.sum()) / total
    k = num.size
    resid = num - p * den
    return p, math.sqrt(k / max(k - 1, 1) * float((resid**2).sum())) / total


def summarize(done: Outcomes, num_envs: int) -> dict:
    """The paper's metrics from a window of outcomes (one row per decision), each with a
    95% interval over instances (``NAME_ci``); the violation also with its standard error.
    Only decisions count (a cell's handover sessions are not)."""
    done = done.decisions()
    met, acc = done.success, done.accepted

    def per_env(values: np.ndarray) -> np.ndarray:
        return np.bincount(done.env, weights=values.astype(float), minlength=num_envs)

    rows = per_env(np.ones(len(done)))
    out: dict = {}
    for name, num, den in (("violation", acc & ~met, acc), ("acceptance", acc, None), ("throughput", acc & met, None),
                           ("objective", ~acc & met, None)):
        p, se = ratio_estimate(per_env(num), rows if den is None else per_env(den))
        out[name], out[f"{name}_ci"] = p, [p - Z95 * se, p + Z95 * se]
        if name == "violation":
            out["violation_se"] = se
    delay = np.where(acc, done.delay, 0.0)
    p, se = ratio_estimate(per_env(delay), per_env(acc))
    out["mean_delay"], out["mean_delay_ci"] = p, [p - Z95 * se, p + Z95 * se]
    out["arrivals"] = int(len(done))
    out["instances"] = int(num_envs)
    return out


def evaluate(policy: Policy, spec: NetworkSpec, arrivals: int = 200_000, seed: int = 10_000,
             num_envs: int = 500, warmup: int | str = "auto", max_jobs: int | None = None) -> dict:
    """Run ``policy`` greedily on ``arrivals`` decisions after a warm-up per instance
    (``"auto"``: until the number in system stops drifting, see ``envs.rollout.warm_up``).
    ``max_jobs``: the engine's bound on the job table per instance (its default if None); a
    smaller one makes an unstable policy fail early with ``envs.engine.CapacityError``."""
    num_envs = max(1, min(num_envs, arrivals // 100))  # at least ~100 decisions per instance
    options = {} if max_jobs is None else {"max_jobs": int(max_jobs)}
    driver = Driver(spec, num_envs, seed=seed, encoding=getattr(policy, "encoding", None), **options)
    steps = math.ceil(arrivals / num_envs)
    warmup_steps = warm_up(driver, policy) if warmup == "auto" else int(warmup)
    done, _ = collect(driver, policy, steps, 0 if warmup == "auto" else warmup_steps)
    return {**summarize(done, num_envs), "warmup_steps": warmup_steps}


def format_metrics(m: dict) -> str:
    lo, hi = m["violation_ci"]
    return (f"violation {m['violation']:.4f} [{lo:.4f}, {hi:.4f}]  acceptance {m['acceptance']:.4f}  "
            f"throughput {m['throughput']:.4f}  objective {m['objective']:.4f}  "
            f"mean delay {m['mean_delay']:.3f}  ({m['arrivals']} arrivals on {m['instances']} instances after "
            f"{m['warmup_steps']} warm-up steps each)")
