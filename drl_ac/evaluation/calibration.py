"""Calibrate the operating point of a learned controller to the constraint.

The Q-network ranks states by the advantage of accepting, Q(s, A) - Q(s, R). A fixed
training budget rarely ends with the multiplier exactly at lam*, so the final violation
lands a little above or below eps. Shifting the acceptance threshold on that advantage
(``bias``) moves the policy along the learned ranking; a bisection on simulated
evaluations (common random numbers, fresh seeds) finds the most accepting bias whose
violation is at most the target.
"""

from __future__ import annotations

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.metrics import evaluate
from envs import NetworkSpec


def calibrate_bias(section: dict, spec: NetworkSpec, target: float, arrivals: int = 100_000, seed: int = 555,
                   iterations: int = 10) -> tuple[float, dict]:
    """Largest-acceptance bias with violation <= target; returns (bias, its evaluation)."""

    def run(bias: float) -> dict:
        m = evaluate(LoadedPolicy({**section, "bias": bias}), spec, arrivals=arrivals, seed=seed)
        if m["acceptance"] == 0:  # nothing accepted: nothing violated
            m["violation"] = 0.0
        return m

    scale = max(1.0, float(section.get("lam", 1.0)))
    lo, hi = -scale, scale  # want violation(lo) > target >= violation(hi)
    m_hi = run(hi)
    while m_hi["violation"] > target and hi < 1e3 * scale:
        lo, hi = hi, 2 * hi if hi > 0 else 0.5 * scale
        m_hi = run(hi)
    m_lo = run(lo)
    while m_lo["violation"] <= target and lo > -1e3 * scale:
        hi, m_hi, lo = lo, m_lo, 2 * lo
        m_lo = run(lo)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        m = run(mid)
        if m["violation"] <= target:
            hi, m_hi = mid, m
        else:
            lo = mid
    return hi, m_hi


def calibrated_section(trainer, target: float, arrivals: int = 100_000) -> dict:
    """The trainer's policy section with its acceptance bias calibrated to ``target``."""
    section = trainer.policy_section()
    section["bias"], _ = calibrate_bias(section, trainer.spec, target, arrivals=arrivals,
                                        seed=trainer.config.seed + 5_000)
    return section
