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
from envs.rollout import collect

Policy = Callable[[np.ndarray], np.ndarray]
Z95 = 1.959963984540054


def ratio_ci(num: np.ndarray, den: np.ndarray) -> tuple[float, float, float]:
    """Ratio estimate sum(num)/sum(den) over clusters, with a 95% interval (delta method)."""
    total = den.sum()
    if total == 0:
        return math.nan, math.nan, math.nan
    p = num.sum() / total
    k = num.size
    resid = num - p * den
    se = math.sqrt(k / max(k - 1, 1) * float((resid**2).sum())) / total
    return float(p), float(max(0.0, p - Z95 * se)), float(min(1.0, p + Z95 * se))


def summarize(done: Outcomes, num_envs: int) -> dict:
    """The paper's metrics from a window of outcomes (one row per decision)."""
    met = done.success
    acc = done.accepted

    def per_env(mask: np.ndarray) -> np.ndarray:
        return np.bincount(done.env, weights=mask.astype(float), minlength=num_envs)

    violation, lo, hi = ratio_ci(per_env(acc & ~met), per_env(acc))
    n = len(done)
    return {
        "violation": violation,
        "violation_ci": [lo, hi],
        "acceptance": float(acc.mean()),
        "throughput": float((acc & met).mean()),
        "objective": float((~acc & met).mean()),
        "mean_delay": float(done.delay[acc].mean()) if acc.any() else math.nan,
        "arrivals": int(n),
    }


def evaluate(policy: Policy, spec: NetworkSpec, arrivals: int = 200_000, seed: int = 10_000,
             num_envs: int = 500, warmup: int = 400) -> dict:
    """Run ``policy`` greedily on ``arrivals`` decisions (after ``warmup`` per instance)."""
    num_envs = max(1, min(num_envs, arrivals // 100))  # at least ~100 decisions per instance
    driver = Driver(spec, num_envs, seed=seed, encoding=getattr(policy, "encoding", None))
    steps = math.ceil(arrivals / num_envs)
    done, _ = collect(driver, policy, steps, warmup)
    return summarize(done, num_envs)


def format_metrics(m: dict) -> str:
    lo, hi = m["violation_ci"]
    return (f"violation {m['violation']:.4f} [{lo:.4f}, {hi:.4f}]  acceptance {m['acceptance']:.4f}  "
            f"throughput {m['throughput']:.4f}  objective {m['objective']:.4f}  "
            f"mean delay {m['mean_delay']:.3f}  ({m['arrivals']} arrivals)")
