"""Evaluate any policy (learned or a rule) on fresh seeds with the same metrics.

A system may add its own measures (``System.own_measures``: a cell's blocking, dropping,
handover dropping and carried load, overall, per UE type and, with a periodic arrival
profile, per phase bin of the period). Systems with a periodic profile are evaluated on
instances started at spread-out phases over windows of equal *time* (``evaluate``).

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
from envs.engine import CapacityError, JobsBoundError
from envs.rollout import collect, collect_time, warm_up

Policy = Callable[[np.ndarray], np.ndarray]
Z95 = 1.959963984540054
Z95_ONE_SIDED = 1.6448536269514722


def ratio_estimate(num: np.ndarray, den: np.ndarray, ordered: bool = False) -> tuple[float, float]:
    """sum(num)/sum(den) over clusters (instances) and its standard error (delta method).

    ``ordered``: the clusters are a systematic sample along a trend (instances started at
    stratified phases of a period, in phase order): the variance comes from successive
    differences of the residuals (Wolter, *Introduction to Variance Estimation*, ch. 8), so
    the spread between busy and quiet hours, which the stratified design averages out exactly,
    is not counted as noise (on ``cell_5g`` it would double the standard errors)."""
    total = float(den.sum())
    if total == 0:
        return math.nan, math.nan
    p = float(num.sum()) / total
    k = num.size
    resid = num - p * den
    if ordered and k > 1:
        return p, math.sqrt(k / (2 * (k - 1)) * float((np.diff(resid) ** 2).sum())) / total
    return p, math.sqrt(k / max(k - 1, 1) * float((resid**2).sum())) / total


# Each measure of ``summarize`` is a ratio of per-instance sums: measure -> (numerator, denominator).
RATIOS = {"violation": ("violated", "accepted"), "acceptance": ("accepted", "rows"), "throughput": ("met", "rows"),
          "objective": ("met_rejected", "rows"), "mean_delay": ("delay", "accepted")}


def instance_sums(done: Outcomes, num_envs: int) -> dict[str, np.ndarray]:
    """The per-instance sums (B,) every measure of ``RATIOS`` is made of."""
    done = done.decisions()
    met, acc = done.success, done.accepted
    weights = {"rows": np.ones(len(done)), "accepted": acc, "violated": acc & ~met, "met": acc & met,
               "met_rejected": ~acc & met, "delay": np.where(acc, done.delay, 0.0)}
    return {k: np.bincount(done.env, weights=w.astype(float), minlength=num_envs) for k, w in weights.items()}


def summarize_sums(sums: dict[str, np.ndarray], ordered: bool = False, per_instance: bool = False) -> dict:
    """The measures of ``RATIOS`` from per-instance sums, each with its standard error
    (``NAME_se``) and 95% interval over instances (``NAME_ci``; ``ordered``: see
    ``ratio_estimate``). ``per_instance``: the sums too, for ``paired_difference``."""
    out: dict = {}
    for name, (num, den) in RATIOS.items():
        p, se = ratio_estimate(sums[num], sums[den], ordered)
        out[name], out[f"{name}_ci"], out[f"{name}_se"] = p, [p - Z95 * se, p + Z95 * se], se
    if per_instance:
        out["per_instance"] = sums
    out["arrivals"] = int(sums["rows"].sum())
    out["instances"] = int(sums["rows"].size)
    return out


def summarize(done: Outcomes, num_envs: int, ordered: bool = False, per_instance: bool = False) -> dict:
    """The paper's metrics from a window of outcomes (one row per decision), each with a
    95% interval over instances (``NAME_ci``; ``ordered``: see ``ratio_estimate``) and its
    standard error (``NAME_se``). Only decisions count (a cell's handover sessions are not).
    ``per_instance``: also the per-instance sums (``instance_sums``), for ``paired_difference``."""
    return summarize_sums(instance_sums(done, num_envs), ordered, per_instance)


def paired_difference(a: dict, b: dict, measure: str = "mean_delay") -> dict:
    """``measure`` (a key of ``RATIOS``) of ``a`` minus that of ``b``, two runs with
    ``per_instance=True`` on the same seed and instances, with its standard error and 95%
    interval over instance pairs.

    Instance b of both runs sees the same arrivals (common random numbers), so the pair's
    difference cancels most of what makes one instance slower than another: the interval is
    far narrower than the two separate ones, and it is the right test of "a is better than
    b" (the separate intervals overlapping says little). The delta method of
    ``ratio_estimate`` applied to the difference of the two ratios: residual
    (num - r den) / mean(den) per run, differenced per instance."""
    num, den = RATIOS[measure]
    pa, pb = a["per_instance"], b["per_instance"]
    if pa[num].shape != pb[num].shape:
        raise ValueError(f"paired_difference: the runs have {pa[num].size} and {pb[num].size} instances. "
                         "Fix: evaluate both with the same seed and num_envs.")
    ra, rb = pa[num].sum() / pa[den].sum(), pb[num].sum() / pb[den].sum()
    z = (pa[num] - ra * pa[den]) / pa[den].mean() - (pb[num] - rb * pb[den]) / pb[den].mean()
    k = z.size
    se = math.sqrt(float((z**2).sum()) / max(k - 1, 1) / k)
    diff = float(ra - rb)
    return {"difference": diff, "se": se, "ci": [diff - Z95 * se, diff + Z95 * se]}


def add_estimate(out: dict, name: str, num: np.ndarray, den: np.ndarray, se: bool = False,
              ordered: bool = False) -> None:
    p, s = ratio_estimate(num, den, ordered)
    out[name], out[f"{name}_ci"] = p, [p - Z95 * s, p + Z95 * s]
    if se:
        out[f"{name}_se"] = s


def add_estimates(out: dict, name: str, nums: list, dens: list, se: bool = False, ordered: bool = False) -> None:
    """Lists ``name``, ``name_ci`` (and ``name_se``), one entry per group."""
    parts: dict = {}
    for num, den in zip(nums, dens, strict=True):
        add_estimate(parts, name, num, den, se, ordered)
        for key in [k for k in parts if k.startswith(name)]:
            out.setdefault(key, []).append(parts.pop(key))


def phase_offsets(period: float, num_envs: int, seed: int) -> np.ndarray:
    """Start times of ``num_envs`` instances spread over the period: (b + U) / B of it for
    instance b, U ~ Uniform(0, 1) common (stratified: every phase equally covered)."""
    u = np.random.default_rng([seed, 0x5EED]).random()
    return period * (np.arange(num_envs) + u) / num_envs


def relaxation_time(spec: NetworkSpec) -> float:
    """Warm-up time of a periodic system from an empty start: 10 of its longest mean holding
    times (``System.holding_time``; at least 1/100 of the period, at most the period)."""
    return float(min(spec.period, max(10.0 * spec.system.holding_time(), spec.period / 100)))


def instances(arrivals: int, num_envs: int) -> int:
    """The instances ``evaluate`` runs: at most ``num_envs``, with ~100 decisions each at least."""
    return max(1, min(num_envs, arrivals // 100))


def engine_options(spec: NetworkSpec, max_jobs: int | None = None, probes: bool = True) -> dict:
    """The engine settings of an evaluation of ``spec``; ``probes`` False: rejections are not
    scored (the objective is then unknown). ``max_jobs`` None: the system's hopeless backlog
    when it has one (``unless_overloaded``), else the engine's bound."""
    bound = spec.system.hopeless_backlog() if max_jobs is None else max_jobs
    options = ({} if bound is None else {"max_jobs": int(bound)}) | ({} if probes else {"probes": False})
    return {**options, **spec.system.engine_options()}  # a cell: no probes (its measures never read them)


def replay(policy: Policy) -> None:
    """Restart a randomised policy's uniforms (one with ``reset``: a calibrated learned policy,
    a randomised rule), so that every evaluation of it on a seed gives the same figures."""
    getattr(policy, "reset", lambda: None)()


def undefined(num_envs: int, **why: str) -> dict:
    """The measures of a run that reached no steady state and cannot be scored by one: every
    measure NaN, no arrivals counted, ``stationary`` False; ``why``: the key that says why
    (``overloaded``, ``unstable``)."""
    out: dict = {}
    for name in RATIOS:
        out[name], out[f"{name}_ci"], out[f"{name}_se"] = math.nan, [math.nan, math.nan], math.nan
    return {**out, "arrivals": 0, "instances": num_envs, "warmup_steps": 0, "stationary": False, **why}


def overloaded(spec: NetworkSpec, num_envs: int, error: CapacityError) -> dict:
    """The measures of an admission policy under which an instance's queues outgrew the
    system's hopeless backlog: the jobs it admits wait longer and longer, so its long-run
    violation is 1, which is what it is scored (se 0); the other measures of a run that never
    reached a steady state are NaN. ``overloaded`` says why, ``stationary`` is False."""
    bound = spec.system.hopeless_backlog()
    reason = (f"the policy admits more than {spec.name} can serve: an instance's queues outgrew {bound} jobs "
              f"({str(error).split('. Fix')[0]}), far more than its stations finish within the deadline, so the "
              "jobs it admits miss it more and more (long-run violation 1)")
    return {**undefined(num_envs, overloaded=reason), "violation": 1.0, "violation_ci": [1.0, 1.0],
            "violation_se": 0.0}


def unless_overloaded(spec: NetworkSpec, max_jobs: int | None, num_envs: int, run: Callable[[], dict]) -> dict:
    """``run()``, or, when its engine's job table reached its bound of jobs per instance,
    ``overloaded``'s measures (a system with a hopeless backlog: admission) or ``undefined``
    ones marked ``unstable`` (a control system: its backlog grew past anything a stable policy
    holds, and nothing scores it). A bound the caller set (``max_jobs``) still raises
    ``CapacityError``, as asked."""
    try:
        return run()
    except JobsBoundError as exc:  # not the memory bound of many instances: that one says to use fewer
        if max_jobs is not None:
            raise
        if spec.system.hopeless_backlog() is None:
            return undefined(num_envs, unstable=f"an instance's backlog outgrew the job table "
                                                f"({str(exc).split('. Fix')[0]}): unstable under this policy")
        return overloaded(spec, num_envs, exc)


def evaluate(policy: Policy, spec: NetworkSpec, arrivals: int = 200_000, seed: int = 10_000,
             num_envs: int = 500, warmup: int | float | str = "auto", bins: int = 24,
             max_jobs: int | None = None, per_instance: bool = False, probes: bool = True) -> dict:
    """Run ``policy`` greedily on about ``arrivals`` decisions after a warm-up per instance
    (``"auto"``: until the number in system stops drifting, see ``envs.rollout.warm_up``; a
    number: that many steps). A system's own measures are added (``System.own_measures``). ``max_jobs``: the
    engine's bound on the job table per instance (its default if None); a smaller one makes an
    unstable policy fail early with ``envs.engine.CapacityError``; None: an admission policy
    that overloads the system is scored as such (``overloaded``). ``per_instance``: keep the
    per-instance sums of ``paired_difference`` (arrays, under ``per_instance``). ``probes``
    False: a rejected job is not followed to score it (the probes are most of a network's
    simulation time near its thresholds); the objective is then NaN, acceptance and the
    constraint are unchanged (a probe never touches the real network).

    A cell is run without probes (``Engine``'s ``probes``): its measures never read whether a
    blocked UE would have finished, so its ``objective`` is NaN (``blocking`` says it all).

    A system with a periodic arrival profile (period P) is evaluated differently: started in
    lockstep at time 0, every instance would see the same hours, and a window of a few
    hundred decisions per instance would cover only the first hours of the period. Instance
    b starts instead at phase ``phase_offsets`` (stratified over the period), warms up for a
    time (``warmup``: a time here; ``"auto"``: ``relaxation_time``), then contributes the
    rows that *arrive* in a window of equal length L in time (``envs.rollout.collect_time``),
    L a multiple of P / B chosen so that about ``arrivals`` decisions fall in the windows.
    Every phase of the period is then covered by exactly B L / P instances, so the rows per
    phase follow the integrated rate profile and the metrics are those of the whole period
    (arrival-weighted), at the cost of the requested sample only, where windows of whole
    periods per instance would cost B periods of decisions (about 11,000 per instance per day
    on ``cell_5g``). Windows are equal in time, not in decisions: a window of decisions would
    cover less time in busy hours, so instances started then would be under-weighted.
    Intervals come from successive differences between instances adjacent in phase
    (``ratio_estimate``'s ``ordered``).
    """
    num_envs = instances(arrivals, num_envs)
    return unless_overloaded(spec, max_jobs, num_envs, lambda: _evaluate(
        policy, spec, arrivals, seed, num_envs, warmup, bins, engine_options(spec, max_jobs, probes), per_instance,
        probes))


def _evaluate(policy: Policy, spec: NetworkSpec, arrivals: int, seed: int, num_envs: int, warmup: int | float | str,
              bins: int, options: dict, per_instance: bool, probes: bool) -> dict:
    replay(policy)
    encoding = getattr(policy, "encoding", None)
    period, own = spec.period, spec.system.own_measures()
    if period is not None:
        start = phase_offsets(period, num_envs, seed)
        driver = Driver(spec, num_envs, seed=seed, encoding=encoding, start=start, **options)
        wait = relaxation_time(spec) if warmup == "auto" else float(warmup)
        quantum = period / num_envs
        length = quantum * max(1, math.ceil(arrivals / (num_envs * spec.arrival_rate) / quantum))
        sample = None if own is None else own.in_use
        done, occupancy, entered = collect_time(driver, policy, start + wait, start + wait + length, sample)
        out = {**summarize(done, num_envs, True, per_instance), "warmup_steps": entered, "warmup_time": wait,
               "window_time": length}
    else:
        driver = Driver(spec, num_envs, seed=seed, encoding=encoding, **options)
        steps = math.ceil(arrivals / num_envs)
        warmup_steps = warm_up(driver, policy) if warmup == "auto" else int(warmup)
        done, seen = collect(driver, policy, steps, 0 if warmup == "auto" else warmup_steps,
                             record_obs=own is not None)
        out = {**summarize(done, num_envs, per_instance=per_instance), "warmup_steps": warmup_steps}
        occupancy = None
        if own is not None:  # the resources in use at every decision of the window
            used = own.in_use_seen(driver.encoding, seen.reshape(-1, seen.shape[-1]))
            env = np.tile(np.arange(num_envs), seen.shape[0])
            occupancy = (env, np.zeros(env.size), used.astype(float))
    if own is not None or not probes:
        out["objective"], out["objective_ci"] = math.nan, [math.nan, math.nan]  # unscored rejections
    if own is not None:
        out.update(own.summary(done, num_envs, spec, period, bins, occupancy, ordered=period is not None))
    elif period is not None and bins:
        out.update(by_phase(done, num_envs, period, bins))
    return out


def by_phase(done: Outcomes, num_envs: int, period: float, bins: int) -> dict:
    """Each measure of ``RATIOS`` per phase bin of the period, jobs binned by their arrival time
    (``NAME_by_phase``, ``NAME_by_phase_ci``, ``NAME_by_phase_se``: lists, one entry per bin; the
    decisions per bin ``rows_by_phase``; ``phase_bins``): where in a day a policy gains or loses.
    Intervals over the instances, ordered by their phase (``ratio_estimate``)."""
    done = done.decisions()
    j = ((done.arrival_time % period) * (bins / period)).astype(np.int64).clip(0, bins - 1)
    parts = [instance_sums(done.select(j == b), num_envs) for b in range(bins)]
    out: dict = {"phase_bins": bins, "rows_by_phase": [int(p["rows"].sum()) for p in parts]}
    for name, (num, den) in RATIOS.items():
        add_estimates(out, f"{name}_by_phase", [p[num] for p in parts], [p[den] for p in parts], se=True,
                      ordered=True)
    return out


class SharedStart:
    """Evaluations of many policies of one non-periodic system from one stationary state:
    the instances are warmed up once (``envs.rollout.warm_up``, by ``first`` or by the first
    policy evaluated), and every policy then starts from that state, settles for ``settle``
    steps and is measured over the same arrivals and service times after it. Common random
    numbers at the cost of one warm-up instead of one per policy: what a search over a rule's
    parameter or a calibration's bias needs, where neighbouring candidates have nearly the
    same stationary state (a periodic system cannot share one: see ``evaluate``).

    A starting policy that overloads an admission system (``overloaded``) leaves the warm-up
    to the first candidate that does not. The warm-up runs at least ``min_warmup`` steps: on paper_tandem the number in system
    passes ``warm_up``'s test after its minimum of 400 steps while the violation still rises
    (a calibrated policy read 0.0904 after 400 steps and 0.0945 after 3,000, on the same
    seed), and a calibration on that state set the policy above eps in steady state.

    Rejections are not probed (its users read acceptance and the constraint: the objective
    is NaN)."""

    def __init__(self, spec: NetworkSpec, seed: int, settle: int = 200, first: Policy | None = None,
                 encoding=None, min_warmup: int = 2_000):
        self.spec, self.seed, self.settle, self.first, self.encoding = spec, seed, settle, first, encoding
        self.min_warmup = min_warmup
        self.warm: dict[int, tuple[Driver, dict, int]] = {}  # instances -> (driver, warmed state, warm-up steps)

    def __call__(self, policy: Policy, arrivals: int, num_envs: int) -> dict:
        num_envs = instances(arrivals, num_envs)
        return unless_overloaded(self.spec, None, num_envs, lambda: self._measure(policy, arrivals, num_envs))

    def _measure(self, policy: Policy, arrivals: int, num_envs: int) -> dict:
        replay(policy)
        if num_envs not in self.warm:
            driver = Driver(self.spec, num_envs, seed=self.seed, encoding=self.encoding,
                            **engine_options(self.spec, probes=False))
            try:
                steps = warm_up(driver, self.first or policy, min_steps=self.min_warmup)
            except CapacityError:
                if self.first is None:
                    raise
                self.first = None  # it overloads the system: the first candidate that does not warms up instead
                return self._measure(policy, arrivals, num_envs)
            self.warm[num_envs] = (driver, driver.engine.get_state(), steps)
        driver, state, steps = self.warm[num_envs]
        driver.engine.set_state(state)
        done, _ = collect(driver, policy, math.ceil(arrivals / num_envs), self.settle)
        out = {**summarize(done, num_envs), "warmup_steps": steps + self.settle,
               "objective": math.nan, "objective_ci": [math.nan, math.nan]}
        own = self.spec.system.own_measures()
        if own is not None:
            out.update(own.summary(done, num_envs, self.spec))
        return out


def format_metrics(m: dict, spec: NetworkSpec | None = None) -> str:
    """One line of a run's measures in its system's language (``spec.system``: a control
    system's mean response time, not a violation; without a spec, guessed from the keys)."""
    if m.get("overloaded"):
        return f"OVERLOADED, violation scored 1: {m['overloaded']}"
    tail = f"({m['arrivals']} arrivals on {m['instances']} instances after {m['warmup_steps']} warm-up steps each)"
    if "blocking" in m:  # a cell: its violation is its dropping, its acceptance 1 - blocking
        (blo, bhi), (dlo, dhi) = m["blocking_ci"], m["dropping_ci"]
        return (f"blocking {m['blocking']:.4f} [{blo:.4f}, {bhi:.4f}]  dropping {m['dropping']:.4f} [{dlo:.4f}, "
                f"{dhi:.4f}] (95% bound {m['dropping_upper']:.4f})  handover dropping {m['handover_dropping']:.4f}  "
                f"({m['new_ues']} new UEs on {m['instances']} instances)")
    if spec is not None and spec.system.kind == "control":
        lo, hi = m["mean_delay_ci"]
        met = "" if spec.objective != "deadline" else f"  P(response < {spec.d_ub:g}) {m['throughput']:.4f}"
        settled = "" if m.get("stationary", True) else "  NOT stationary (the run ended drifting)"
        return f"mean response {m['mean_delay']:.4f} [{lo:.4f}, {hi:.4f}]{met}  {tail}{settled}"
    lo, hi = m["violation_ci"]
    return (f"violation {m['violation']:.4f} [{lo:.4f}, {hi:.4f}]  acceptance {m['acceptance']:.4f}  "
            f"throughput {m['throughput']:.4f}  objective {m['objective']:.4f}  "
            f"mean delay {m['mean_delay']:.3f}  {tail}")
