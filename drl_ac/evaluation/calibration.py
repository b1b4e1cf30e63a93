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

The states allow only a few violations between which a deterministic bias can step; the
one just above the target is usually well below it (mmc_c3: 0.079 against 0.1). So the
search then mixes the two operating points around the root: in the states whose advantage
lies between them it admits with a probability ``mix``, found by the same root search, and
the violation reaches the target (a constrained MDP's optimum is randomised in the same
way). A comparison then judges every policy, rule or learned, alike
(``drl_ac.study.compare.FEASIBLE``): each reached eps with this one-sided bound on its own
seed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from statistics import NormalDist

import numpy as np

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.metrics import SharedStart, evaluate
from drl_ac.rules.scheduled import switch_rates
from envs import NetworkSpec


def upper_bound(m: dict, confidence: float) -> float:
    """One-sided upper confidence bound of an evaluation's violation."""
    return m["violation"] + NormalDist().inv_cdf(confidence) * m["violation_se"]


def measurer(start: LoadedPolicy, spec: NetworkSpec, arrivals: int, seed: int, num_envs: int, settle: int
             ) -> Callable[[LoadedPolicy], dict]:
    """Evaluations of candidates of one calibration on common random numbers: the instances
    warmed up once with ``start`` and every candidate measured from that state (``SharedStart``);
    a periodic system by ``evaluate`` itself, on the same seed (see ``calibrate_bias``)."""
    if spec.period is not None:
        return lambda policy: evaluate(policy, spec, arrivals, seed, num_envs)
    shared = SharedStart(spec, seed, settle, first=start, encoding=start.encoding)
    return lambda policy: shared(policy, arrivals, num_envs)


def calibrate_bias(policy: LoadedPolicy, spec: NetworkSpec, target: float, arrivals: int = 200_000, seed: int = 555,
                   iterations: int = 5, confidence: float = 0.95, num_envs: int = 1000, settle: int = 200,
                   deadline: float | None = None, progress: Callable[[str], None] | None = None, randomise: bool = False
                   ) -> tuple[float, dict]:
    """Largest-acceptance bias whose violation is <= target with ``confidence``; returns
    (bias, its evaluation, with ``violation_upper``, ``margin`` and ``mix`` added). ``randomise``: then between that bias and the next, infeasible one, the largest
    probability ``mix`` of admitting in the states between them (``margin`` wide: see
    ``drl_ac.learning.qnet.GreedyPolicy``) that still meets the target, so the policy spends
    the budget its states leave between two deterministic operating points. ``deadline``
    (``time.time()``): the search stops there with the most accepting bias known to meet the
    target.
    ``progress``: told each candidate's result, one line each.

    The instances are warmed up once, with the uncalibrated policy, until stationary; every
    candidate then starts from that same state (``settle`` steps to adjust to its own bias
    before its window) and sees the same arrivals and service times: common random numbers
    at the cost of one warm-up, not one per candidate. A periodic system is evaluated by
    ``evaluate`` itself, which is what the constraint is judged on (instances at stratified
    phases, windows in time; lockstep instances cannot share a warm-up there: in the steps a
    busy hour needs to warm up, a quiet one lives through several hours), on the same seed.
    """
    return search_bias(lambda bias, margin, mix: policy.replace(bias=bias, margin=margin, mix=mix, bias_edges=[]),
                       measurer(policy, spec, arrivals, seed, num_envs, settle), target, _step(policy), iterations,
                       confidence, deadline, progress, randomise)


def _step(policy: LoadedPolicy) -> float:
    """The bias search's first step: a quarter of the multiplier's scale."""
    return 0.25 * max(1.0, float(policy.section.get("lam", 1.0)))


def search_bias(place: Callable[[float, float, float], LoadedPolicy], evaluated: Callable[[LoadedPolicy], dict],
                target: float, step: float, iterations: int = 5, confidence: float = 0.95,
                deadline: float | None = None, progress: Callable[[str], None] | None = None,
                randomise: bool = False) -> tuple[float, dict]:
    """``calibrate_bias``'s search over the policy ``place(bias, margin, mix)`` gives, each
    measured by ``evaluated``, from a bracket ``step`` either side of 0."""
    def run(bias: float, margin: float = 0.0, mix: float = 0.0) -> dict:
        m = _bounded(evaluated(place(bias, margin, mix)), confidence)
        m["margin"], m["mix"] = (margin, mix) if mix > 0 else (0.0, 0.0)
        if progress is not None:
            what = "overloaded" if m.get("overloaded") else f"acceptance {m['acceptance']:.4f}, violation " \
                f"{m['violation']:.4f}"
            mixed = f", admit w.p. {mix:.4f} in [{bias - margin:+.4f}, {bias:+.4f})" if mix > 0 else ""
            progress(f"calibration: bias {bias:+.4f}{mixed}: {what}, upper bound {m['violation_upper']:.4f} "
                     f"against {target:g}")
        return m

    lo, hi = -step, step  # want violation(lo) > target >= violation(hi)
    m_hi = run(hi)
    while m_hi["violation_upper"] > target and hi < 1e4 * step:
        lo, hi = hi, 2 * hi
        m_hi = run(hi)
    m_lo = run(lo)
    while m_lo["violation_upper"] <= target and lo > -1e4 * step:
        if m_lo["acceptance"] >= 1:  # it accepts every job and meets the target: no bias accepts more
            return lo, m_lo
        hi, m_hi, lo = lo, m_lo, 2 * lo
        m_lo = run(lo)
    if m_lo["violation_upper"] <= target:  # no bias is too accepting
        return lo, m_lo
    if m_hi["violation_upper"] > target:  # no bias up to the search's limit meets the target
        return hi, m_hi
    hi, m_hi, lo, m_lo = _false_position(run, lo, m_lo, hi, m_hi, target, iterations, deadline)
    if not randomise:
        return hi, m_hi
    # between the two policies: admit with probability mix where the advantage lies in [lo, hi)
    # (mix 0 is the hi policy, mix 1 the lo one, so the bracket is there already)
    margin = hi - lo
    mix, m_mix, _, _ = _false_position(lambda p: run(hi, margin, p), 1.0, m_lo, 0.0, m_hi, target, iterations,
                                       deadline)
    return hi, m_mix


def calibrate_schedule(policy: LoadedPolicy, specs: Sequence[NetworkSpec], seeds: Sequence[int], target: float,
                       arrivals: int = 200_000, iterations: int = 5, confidence: float = 0.95, num_envs: int = 1000,
                       settle: int = 200, passes: int = 2, progress: Callable[[str], None] | None = None,
                       randomise: bool = False) -> tuple[LoadedPolicy, list[dict]]:
    """One operating point per load (``specs``, one system at ascending arrival rates, each
    measured on its own seed of ``seeds``), switched by the policy's own arrival-rate estimate
    at the rates' geometric midpoints (``switch_rates``; ``GreedyPolicy``'s ``edges``):
    one bias calibrated at the peak leaves a quieter load's violation budget unspent.

    Each band is calibrated at its load as ``calibrate_bias`` does, the other bands held. The
    estimate crosses bands (a busy spell reads as a higher load), so the bands interact: every
    band starts at the peak's one operating point, the most conservative; the bands are then
    calibrated from the lowest load up. With two loads the top band, calibrated last with the
    low band now more accepting, ends no more accepting than it was while the low band was
    calibrated, so the low load stays within the target; with more, a middle band may end more
    accepting and push a lower load over. So each load is then measured again, and a band whose
    load is above the target is calibrated again, for at most ``passes`` rounds; a load still
    over is told to ``progress`` and its evaluation says so (``within``: False; a study's
    choice then drops the candidate if it is above eps in steady state). Returns the scheduled
    policy and each load's evaluation at it (``violation_upper`` and ``within`` added)."""
    rates = np.array([s.arrival_rate for s in specs], float)
    if len(specs) < 2 or len(seeds) != len(specs) or not (np.diff(rates) > 0).all():
        raise ValueError("calibrate_schedule: give at least two specs at ascending arrival rates, one seed each. "
                         "Fix: give the loads ascending, each once (--loads).")
    if not policy.encoding.rate:
        raise ValueError("calibrate_schedule: the policy does not observe the arrival-rate estimate. Fix: train "
                         "with rate_estimate (--rate-estimate).")
    measures = [measurer(policy, s, arrivals, seed, num_envs, settle) for s, seed in zip(specs, seeds, strict=True)]
    options = {"target": target, "step": _step(policy), "iterations": iterations, "confidence": confidence,
               "progress": progress, "randomise": randomise}
    edges = switch_rates(rates).tolist()
    bias, m = search_bias(lambda b, g, x: policy.replace(bias=b, margin=g, mix=x, bias_edges=[]), measures[-1],
                          **options)
    points = [(bias, m["margin"], m["mix"])] * len(specs)

    def placed(points: Sequence[tuple[float, float, float]]) -> LoadedPolicy:
        return policy.replace(bias_edges=edges, **{k: [p[j] for p in points] for j, k in
                                                   enumerate(("bias", "margin", "mix"))})

    def band(i: int) -> None:
        if progress is not None:
            progress(f"calibration: the band of load {i + 1} of {len(specs)}, rate {rates[i]:.4g}")
        b, m = search_bias(lambda *p: placed([*points[:i], p, *points[i + 1:]]), measures[i], **options)
        points[i] = (b, m["margin"], m["mix"])

    for i in range(len(specs)):
        band(i)
    for _ in range(passes):
        measured = [_bounded(measure(placed(points)), confidence) for measure in measures]
        over = [i for i, m in enumerate(measured) if m["violation_upper"] > target]
        if not over:
            break
        for i in over:
            band(i)
    else:
        measured = [_bounded(measure(placed(points)), confidence) for measure in measures]
    for i, m in enumerate(measured):
        m["within"] = m["violation_upper"] <= target
        if not m["within"] and progress is not None:
            progress(f"calibration: the load at rate {rates[i]:.4g} is still above the target after {passes} "
                     f"rounds (upper bound {m['violation_upper']:.4f})")
    return placed(points), measured


def _bounded(m: dict, confidence: float) -> dict:
    """An evaluation with its violation's one-sided upper bound (``upper_bound``)."""
    if m["acceptance"] == 0:  # nothing accepted: nothing violated
        m = {**m, "violation": 0.0, "violation_se": 0.0}
    return {**m, "violation_upper": upper_bound(m, confidence)}


def _false_position(run: Callable[[float], dict], lo: float, m_lo: dict, hi: float, m_hi: dict, target: float,
                    iterations: int, deadline: float | None) -> tuple[float, dict, float, dict]:
    """False position with the Illinois rule on x -> run(x)["violation_upper"] - target from
    ``lo`` (above the target) and ``hi`` (at or below it): the bound is smooth in x under common
    random numbers, so this lands near the root in a few steps where bisection halves the
    bracket. Returns the last (x, evaluation) at or below the target, then the last above."""
    f_lo, f_hi, kept = m_lo["violation_upper"] - target, m_hi["violation_upper"] - target, 0
    for _ in range(iterations):
        if deadline is not None and time.time() > deadline:
            break
        mid = (lo * f_hi - hi * f_lo) / (f_hi - f_lo) if f_lo > f_hi else 0.5 * (lo + hi)
        m = run(mid)
        f = m["violation_upper"] - target
        if f <= 0:
            hi, m_hi, f_hi = mid, m, f
            f_lo, kept = (f_lo / 2 if kept == 1 else f_lo), 1
        else:
            lo, m_lo, f_lo = mid, m, f
            f_hi, kept = (f_hi / 2 if kept == -1 else f_hi), -1
    return hi, m_hi, lo, m_lo


def calibrated(policy: LoadedPolicy, bias: float, m: dict, target: float, confidence: float = 0.95,
               **record) -> LoadedPolicy:
    """``policy`` at the operating point ``calibrate_bias`` found (``bias``; its evaluation
    ``m`` holds ``margin`` and ``mix``), with a record of it under ``calibration`` (``record``:
    more of it, e.g. the seed)."""
    return policy.replace(bias=bias, margin=m["margin"], mix=m["mix"],
                          calibration={"target": target, "confidence": confidence, "arrivals": m["arrivals"],
                                       "acceptance": m["acceptance"], "violation": m["violation"],
                                       "violation_upper": m["violation_upper"], "margin": m["margin"],
                                       "mix": m["mix"], **record})
