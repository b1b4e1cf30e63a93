"""Calibrate the operating point of a learned controller to the constraint.

The Q-network ranks states by the advantage of accepting, Q(s, A) - Q(s, R). A fixed
training budget rarely ends with the multiplier exactly at lam*, so the final violation
lands a little above or below eps. Shifting the acceptance threshold on that advantage
(``bias``) moves the policy along the learned ranking; a root search on simulated
evaluations (common random numbers, fresh seeds) finds the most accepting bias whose
violation is at most the target *with its noise*: the one-sided upper confidence bound
``violation + z * se`` (z = 1.645 for 95%) must stay <= target. A point estimate at the
target would put the long-run violation above it half of the time. A cell's violation is
its dropping, P(dropped | admitted) (its rows' ``accepted`` = carried).

When a later, independent evaluation of ``holdout`` arrivals judges the constraint with its
own one-sided bound (``drl_ac.study.judge``), a policy calibrated to the bound's edge fails
that test about half of the time: the later estimate has its own noise. The search then
asks that the later estimate pass its bound with ``confidence``: with se_h = se *
sqrt(arrivals / holdout) (its standard error, scaled by the sample sizes) and the two
estimates' difference of standard error sqrt(se^2 + se_h^2),

    violation + z * se_h + z * sqrt(se^2 + se_h^2) <= target.

Measured: cell_5g calibrated to an upper bound of 0.0199 <= 0.02 with no reserve read
0.0195 [0.0185, 0.0206] on the fresh seed (bound 0.0204: judged infeasible); paper_tandem
with a reserve of z * se_h only read 0.0961 [0.0894, 0.1029] (bound 0.1018).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from statistics import NormalDist

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.metrics import SharedStart, evaluate
from envs import NetworkSpec


def upper_bound(m: dict, confidence: float) -> float:
    """One-sided upper confidence bound of an evaluation's violation."""
    return m["violation"] + NormalDist().inv_cdf(confidence) * m["violation_se"]


def calibrate_bias(section: dict, spec: NetworkSpec, target: float, arrivals: int = 200_000, seed: int = 555,
                   iterations: int = 5, confidence: float = 0.95, num_envs: int = 1000, settle: int = 200,
                   deadline: float | None = None, holdout: int | None = None,
                   progress: Callable[[str], None] | None = None) -> tuple[float, dict]:
    """Largest-acceptance bias whose violation is <= target with ``confidence``; returns
    (bias, its evaluation, with ``violation_upper`` and ``reserve`` added). ``deadline``
    (``time.time()``): the search stops there with the most accepting bias known to meet the
    target. ``holdout``: the arrivals of the later evaluation that judges the constraint (its
    noise is reserved below the target, see the module's docstring); None: no reserve.
    ``progress``: told each candidate's result, one line each.

    The instances are warmed up once, with the uncalibrated policy, until stationary; every
    candidate then starts from that same state (``settle`` steps to adjust to its own bias
    before its window) and sees the same arrivals and service times: common random numbers
    at the cost of one warm-up, not one per candidate. A periodic system is evaluated by
    ``evaluate`` itself, which is what the constraint is judged on (instances at stratified
    phases, windows in time; lockstep instances cannot share a warm-up there: in the steps a
    busy hour needs to warm up, a quiet one lives through several hours), on the same seed.
    """
    start = LoadedPolicy(section)
    if spec.period is not None:
        def evaluated(policy: LoadedPolicy) -> dict:
            return evaluate(policy, spec, arrivals, seed, num_envs)
    else:
        shared = SharedStart(spec, seed, settle, first=start, encoding=start.encoding)

        def evaluated(policy: LoadedPolicy) -> dict:
            return shared(policy, arrivals, num_envs)

    def run(bias: float) -> dict:
        m = evaluated(LoadedPolicy({**section, "bias": bias}))
        if m["acceptance"] == 0:  # nothing accepted: nothing violated
            m["violation"], m["violation_se"] = 0.0, 0.0
        m["violation_upper"] = upper_bound(m, confidence)
        judged = m["violation_upper"]
        if holdout is not None:
            z, se = NormalDist().inv_cdf(confidence), m["violation_se"]
            se_h = se * math.sqrt(m["arrivals"] / holdout)
            judged = m["violation"] + z * se_h + z * math.hypot(se, se_h)
        m["violation_judged"], m["reserve"] = judged, judged - m["violation_upper"]
        if progress is not None:
            what = "overloaded" if m.get("overloaded") else f"acceptance {m['acceptance']:.4f}, violation " \
                f"{m['violation']:.4f}"
            progress(f"calibration: bias {bias:+.4f}: {what}, judged {judged:.4f} against {target:g}")
        return m

    step = 0.25 * max(1.0, float(section.get("lam", 1.0)))
    lo, hi = -step, step  # want violation(lo) > target >= violation(hi)
    m_hi = run(hi)
    while m_hi["violation_judged"] > target and hi < 1e4 * step:
        lo, hi = hi, 2 * hi
        m_hi = run(hi)
    m_lo = run(lo)
    while m_lo["violation_judged"] <= target and lo > -1e4 * step:
        if m_lo["acceptance"] >= 1:  # it accepts every job and meets the target: no bias accepts more
            return lo, m_lo
        hi, m_hi, lo = lo, m_lo, 2 * lo
        m_lo = run(lo)
    # false position with the Illinois rule: the bound is smooth in the bias (common random
    # numbers), so this lands near the root in a few steps where bisection halves the bracket
    f_lo, f_hi, kept = m_lo["violation_judged"] - target, m_hi["violation_judged"] - target, 0
    for _ in range(iterations):
        if deadline is not None and time.time() > deadline:
            break
        mid = (lo * f_hi - hi * f_lo) / (f_hi - f_lo) if f_lo > f_hi else 0.5 * (lo + hi)
        m = run(mid)
        f = m["violation_judged"] - target
        if f <= 0:
            hi, m_hi, f_hi = mid, m, f
            f_lo, kept = (f_lo / 2 if kept == 1 else f_lo), 1
        else:
            lo, f_lo = mid, f
            f_hi, kept = (f_hi / 2 if kept == -1 else f_hi), -1
    return hi, m_hi


def calibrated_section(trainer, target: float, arrivals: int = 200_000, confidence: float = 0.95,
                       holdout: int | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """The trainer's policy section with its acceptance bias calibrated so that the
    violation is <= ``target`` (normally eps) with ``confidence`` (and room for a later
    evaluation of ``holdout`` arrivals, ``calibrate_bias``)."""
    section = trainer.policy_section()
    section["bias"], m = calibrate_bias(section, trainer.spec, target, arrivals=arrivals,
                                        seed=trainer.config.seed + 5_000, confidence=confidence, holdout=holdout,
                                        progress=progress)
    section["calibration"] = {"target": target, "confidence": confidence, "arrivals": m["arrivals"],
                              "acceptance": m["acceptance"],
                              "violation": m["violation"], "violation_upper": m["violation_upper"],
                              "reserve": m["reserve"], "holdout": holdout}
    return section
