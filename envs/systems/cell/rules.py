"""Admission rules operators run in a 5G cell today (docs/systems/cell.md), in the same
harness as the learned controller, each tuned for a scenario: the rule with the lowest
blocking whose dropping P(dropped | admitted) stays <= eps *with its statistical margin*
(one-sided 95% upper bound <= eps), on common random numbers (every candidate sees the same
arrivals, sessions and channel paths; ``tuning.Tuner`` with ``margin=True``).

Every rule is a callable on a batch of observations (B, width) -> actions (B,) (0 block,
1 admit) and reads the columns through ``CellLayout`` (``CellEncoding.cell_layout``),
never by number. Handovers are not decisions: no rule sees them, they are carried if they fit.

* ``CellAcceptAll``: admit every new UE (it is still blocked when it does not fit);
* ``PRBThreshold(T)``: admit iff PRBs in use < T;
* ``TypeThresholds((T_1..T_K))``: admit a UE of type k iff PRBs in use < T_k;
* ``GuardChannel(g)``: admit iff PRBs in use + its demand <= C - g (g PRBs kept for handovers
  and for channels that worsen);
* ``FractionalGuardChannel(level)``: with T = floor(level), p = level - T: admit iff PRBs in
  use + demand <= T, with probability p iff it equals T + 1 (1 PRB per UE: admit w.p. 1
  below T busy, w.p. p at T, Ramjee-Nagarajan-Towsley);
* ``PhaseTypeThresholds(table)``: per-type thresholds per phase bin of the period, T[k][bin].

Tuners (``tune_*``) return ``tuning.TuningResult``; ``tuned_rules`` runs them all.
With a ``deadline`` (``time.time()``; the others take it among their options) a search stops
there with the best rule it has found (``TuningResult.complete`` False), so a tuning fits a
fixed slot.
``measure`` chooses the constrained metric: ``dropping`` (default, the scenario's eps) or
``handover_dropping`` (the classical guard-channel constraint).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from drl_ac.evaluation.metrics import Z95_ONE_SIDED
from drl_ac.rules.tuning import Tuner, TuningResult
from envs import NetworkSpec
from envs.observation import ObservationEncoding, observed_period
from envs.systems.cell.observation import CellLayout


def cell_layout(spec: NetworkSpec) -> CellLayout:
    """Where the rules read the cell's features for ``spec`` (its default encoding)."""
    return ObservationEncoding.for_spec(spec).cell_layout()


@dataclass
class CellAcceptAll:
    layout: CellLayout = field(repr=False)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.ones(obs.shape[0], np.int64)

    def describe(self) -> str:
        return "admit all"


@dataclass
class PRBThreshold:
    """Admit iff the PRBs in use are below ``T``."""

    layout: CellLayout = field(repr=False)
    T: int

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return (self.layout.prbs_in_use(obs) < self.T).astype(np.int64)

    def describe(self) -> str:
        return f"PRBs < {self.T}"


@dataclass
class TypeThresholds:
    """Admit a UE of type k iff the PRBs in use are below ``Ts[k]``."""

    layout: CellLayout = field(repr=False)
    Ts: tuple[int, ...]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        limit = np.asarray(self.Ts)[self.layout.ue_type(obs)]
        return (self.layout.prbs_in_use(obs) < limit).astype(np.int64)

    def describe(self) -> str:
        return "PRBs < (" + ", ".join(map(str, self.Ts)) + ") per type"


@dataclass
class GuardChannel:
    """Admit a new UE iff it fits in C - g PRBs (g guard PRBs)."""

    layout: CellLayout = field(repr=False)
    C: int
    g: int

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return (self.layout.prbs_in_use(obs) + self.layout.ue_demand(obs) <= self.C - self.g).astype(np.int64)

    def describe(self) -> str:
        return f"guard {self.g} PRBs"


@dataclass
class FractionalGuardChannel:
    """Admit iff PRBs in use + demand <= floor(level); with probability level - floor(level)
    iff it is one more. Uniforms come from a generator seeded with ``seed``, restarted by
    ``reset`` (the tuner calls it before each evaluation: every candidate sees the same
    uniforms)."""

    layout: CellLayout = field(repr=False)
    level: float
    seed: int = 0
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self):
        self.reset()

    def reset(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        T = math.floor(self.level)
        need = self.layout.prbs_in_use(obs) + self.layout.ue_demand(obs)
        u = self.rng.random(obs.shape[0])
        return ((need <= T) | ((need == T + 1) & (u < self.level - T))).astype(np.int64)

    def describe(self) -> str:
        return f"fractional guard: fits in {self.level:.4g} PRBs"


@dataclass
class PhaseTypeThresholds:
    """Admit a UE of type k arriving in phase bin j of the period iff PRBs in use < table[k][j]."""

    layout: CellLayout = field(repr=False)
    table: tuple[tuple[int, ...], ...]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        t = np.asarray(self.table)
        limit = t[self.layout.ue_type(obs), self.layout.phase_bin(obs, t.shape[1])]
        return (self.layout.prbs_in_use(obs) < limit).astype(np.int64)

    def describe(self) -> str:
        return "PRBs < per type and phase bin [" + "; ".join(" ".join(map(str, row)) for row in self.table) + "]"


def _tuner(spec: NetworkSpec, arrivals: int, seed: int, num_envs: int, measure: str, **options) -> Tuner:
    return Tuner(spec, arrivals, seed, num_envs, measure=measure, margin=True, **options)


def _largest(feasible: Callable[[int], bool], lo: int, hi: int, expired: Callable[[], bool]) -> int:
    """Largest x in [lo, hi] with feasible(x), feasible monotone decreasing, lo assumed feasible
    (the largest known feasible once ``expired()``)."""
    if feasible(hi):
        return hi
    while hi - lo > 1 and not expired():
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


def tune_prb_threshold(spec: NetworkSpec, arrivals: int = 100_000, seed: int = 777, num_envs: int = 400,
                       measure: str = "dropping", **options) -> TuningResult:
    """Largest T in 0..C (dropping grows, blocking falls with T) feasible with its margin."""
    tuner, lay, C = _tuner(spec, arrivals, seed, num_envs, measure, **options), cell_layout(spec), spec.block.prbs
    T = _largest(lambda t: tuner.feasible(PRBThreshold(lay, t)), 0, C, tuner.expired)
    return tuner.result(PRBThreshold(lay, T))


def tune_guard(spec: NetworkSpec, arrivals: int = 100_000, seed: int = 777, num_envs: int = 400,
               measure: str = "dropping", **options) -> TuningResult:
    """Fewest guard PRBs g in 0..C feasible with its margin."""
    tuner, lay, C = _tuner(spec, arrivals, seed, num_envs, measure, **options), cell_layout(spec), spec.block.prbs
    free = _largest(lambda f: tuner.feasible(GuardChannel(lay, C, C - f)), 0, C, tuner.expired)  # f = C - g usable
    return tuner.result(GuardChannel(lay, C, C - free))


def tune_fractional_guard(spec: NetworkSpec, arrivals: int = 100_000, seed: int = 777, num_envs: int = 400,
                          measure: str = "dropping", iterations: int = 6, free: int | None = None,
                          **options) -> TuningResult:
    """The integer guard first (``tune_guard``'s search; ``free``: its C - g, already known),
    then bisection on the fraction of the next PRB: the largest level in [C - g, C - g + 1)
    feasible with its margin."""
    tuner, lay, C = _tuner(spec, arrivals, seed, num_envs, measure, **options), cell_layout(spec), spec.block.prbs
    if free is None:
        free = _largest(lambda f: tuner.feasible(FractionalGuardChannel(lay, float(f), seed)), 0, C, tuner.expired)
    lo, hi = float(free), float(free + 1)
    if free < C:
        for _ in range(iterations):
            if tuner.expired():
                break
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if tuner.feasible(FractionalGuardChannel(lay, mid, seed)) else (lo, mid)
    return tuner.result(FractionalGuardChannel(lay, lo, seed))


def tune_type_thresholds(spec: NetworkSpec, start: int | None = None, arrivals: int = 100_000, seed: int = 777,
                         num_envs: int = 400, measure: str = "dropping", max_rounds: int = 40,
                         **options) -> TuningResult:
    """Coordinate search from every T_k = ``start`` (default: the tuned PRB threshold, which
    is feasible): with a step of C / 8 PRBs halved down to 1, raise the T_k whose raise stays
    feasible with the lowest blocking, or lower one and raise another (a trade) when that
    blocks less; halve the step when no move helps."""
    tuner, lay, C = _tuner(spec, arrivals, seed, num_envs, measure, **options), cell_layout(spec), spec.block.prbs
    K = spec.num_classes
    if start is None:
        start = _largest(lambda t: tuner.feasible(PRBThreshold(lay, t)), 0, C, tuner.expired)
    Ts = tuple([start] * K)
    best = TypeThresholds(lay, Ts)
    if not tuner.feasible(best):
        return tuner.result(best)
    step = max(1, C // 8)
    rounds = 0
    while step >= 1 and rounds < max_rounds and not tuner.expired():
        rounds += 1
        moves = set()
        for k in range(K):
            up = list(Ts)
            up[k] = min(C, Ts[k] + step)
            moves.add(tuple(up))
            for j in range(K):
                if j != k:
                    trade = list(up)
                    trade[j] = max(0, Ts[j] - step)
                    moves.add(tuple(trade))
        moves.discard(Ts)
        current = tuner(best)["blocking"]
        options_ = [r for m in sorted(moves) if not tuner.expired() and tuner.feasible(r := TypeThresholds(lay, m))
                    and tuner(r)["blocking"] < current]  # past the deadline: the best move seen
        if options_:
            best = min(options_, key=lambda r: tuner(r)["blocking"])
            Ts = best.Ts
        else:
            step //= 2
    return tuner.result(best)


def _allocate(blocked: np.ndarray, dropped: np.ndarray, at_risk: np.ndarray, target: float) -> np.ndarray:
    """Per bin, the index of its shift (rows of the (shifts, bins) counts): the allocation of
    the smallest multiplier whose period measure is <= ``target``, then bins raised one at a
    time into the slack (``tune_phase_thresholds``)."""
    columns = np.arange(blocked.shape[1])

    def period_measure(i: np.ndarray) -> float:
        return dropped[i, columns].sum() / max(at_risk[i, columns].sum(), 1.0)

    def allocation(mu: float) -> np.ndarray:
        return (blocked + mu * dropped).argmin(0)

    lo, hi = 0.0, 1.0
    while period_measure(allocation(hi)) > target and hi < 1e9:
        lo, hi = hi, hi * 4
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if period_measure(allocation(mid)) <= target else (mid, hi)
    i = allocation(hi)
    while True:  # the relaxation only reaches the hull's corners: raise bins into the slack left
        gains = [(blocked[i[j], j] - blocked[k, j], j, k) for j in columns for k in range(i[j] + 1, blocked.shape[0])
                 if period_measure(np.where(columns == j, k, i)) <= target]
        best = max(gains, default=(0.0, -1, -1))
        if best[0] <= 0:
            break
        i[best[1]] = best[2]
    return i


def tune_phase_thresholds(spec: NetworkSpec, base: tuple[int, ...], bins: int = 24, arrivals: int = 400_000,
                          seed: int = 777, num_envs: int = 400, measure: str = "dropping",
                          progress: Callable[[str], None] | None = None, deadline: float | None = None,
                          step: int = 2, max_cut: int = 32) -> TuningResult:
    """Per-type thresholds re-tuned per phase bin: T[k][j] = clip(base[k] + shift[j], 0, C),
    the shifts that minimise the period's blocking at the period's dropping <= eps.

    One evaluation of a table with the same shift s in every bin gives every bin's blocked
    UEs b_j(s), dropped UEs d_j(s) and admitted UEs a_j(s), on common random numbers; s runs
    over a grid (``step`` PRBs, from -``max_cut`` to where every threshold is C). The period's
    blocking is sum_j b_j / new UEs and its dropping sum_j d_j / sum_j a_j, so for a
    multiplier mu each bin takes the shift minimising b_j(s) + mu d_j(s) (a Lagrangian
    relaxation: by Everett's theorem the allocation is the best for the drops it reaches),
    and mu is the smallest whose allocation keeps sum d / sum a <= eps minus the base table's
    margin on those counts; then bins are raised one at a time (the largest cut in blocked
    UEs first) while that still holds, into the slack the relaxation's corners leave. Bins
    interact (a UE admitted in one bin can be dropped in the next), so the table is then
    checked as a whole and moved by the largest common shift that keeps the period's
    dropping <= eps with its margin, like every other rule; the base rule (shift 0
    everywhere), moved the same way, is kept instead if it blocks less on the tuning seed."""
    if spec.period is None:
        raise ValueError("tune_phase_thresholds: the scenario has no periodic arrival profile. "
                         "Fix: use tune_type_thresholds.")
    tuner = _tuner(spec, arrivals, seed, num_envs, measure, progress=progress, deadline=deadline,
                   max_arrivals=2 * arrivals, bins=bins)
    lay, C = cell_layout(spec), spec.block.prbs
    base_ = np.asarray(base)

    def table(shift: np.ndarray) -> PhaseTypeThresholds:
        t = np.clip(base_[:, None] + shift[None, :], 0, C)
        return PhaseTypeThresholds(lay, tuple(tuple(int(x) for x in row) for row in t))

    def counts(shift: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # blocked, dropped, at risk per bin
        m = tuner.evaluate(table(np.full(bins, shift)), arrivals)
        new = np.asarray(m["new_ues_by_phase"], float)
        blocked = np.nan_to_num(np.asarray(m["blocking_by_phase"], float)) * new
        at_risk = new - blocked if measure == "dropping" else np.asarray(m["handovers_by_phase"], float)
        return blocked, np.nan_to_num(np.asarray(m[f"{measure}_by_phase"], float)) * at_risk, at_risk

    top = C - int(base_.min())
    grid = sorted({0, *(min(s, top) for s in range(-max_cut, top + step, step))}, key=abs)
    shifts, rows = [], []
    for shift in grid:  # from the base outwards, so a deadline leaves the shifts nearest to it
        if shifts and tuner.expired():
            break
        shifts.append(shift)
        rows.append(counts(shift))
    order = np.argsort(shifts)
    shifts_ = np.asarray(shifts)[order]
    blocked, dropped, at_risk = (np.stack(x)[order] for x in zip(*rows, strict=True))  # (shifts, bins), ascending
    m0 = tuner.evaluate(table(np.zeros(bins, np.int64)), arrivals)
    target = spec.eps - Z95_ONE_SIDED * m0[f"{measure}_se"]  # the margin the whole table will need
    shaped = shifts_[_allocate(blocked, dropped, at_risk, target)]

    def moved(shape: np.ndarray) -> PhaseTypeThresholds:
        def ok(extra: int) -> bool:
            return tuner.feasible(table(shape + extra))
        extra = _largest(ok, 0, C, tuner.expired) if ok(0) else _largest(ok, -C, -1, tuner.expired)
        return table(shape + extra)

    candidates = [moved(shaped), moved(np.zeros(bins, np.int64))]
    return tuner.result(min(candidates, key=lambda rule: tuner(rule)["blocking"]))


CHAINS = 2
"""Independent chains of the tuned families (``tuned_rules``'s ``chain``): accept-all, the
PRB threshold, the per-type table from it and the per-phase table from that; the guard channel
and the fractional guard from it. Each family starts from the one before it in its chain, so
two processes can tune the two chains at once (``drl_ac.study.BackgroundRules``), with the
same rules as one process."""


BUDGETS = {"smoke": {"arrivals": 2_000, "num_envs": 20, "max_arrivals": 2_000, "warmup": 50, "phase_step": 8},
           "quick": {"arrivals": 20_000}, "full": {"arrivals": 100_000}}
"""``tuned_rules`` options per comparison budget (``drl_ac.study.BUDGETS``): smoke checks the
wiring in seconds, quick ends a default training run, full is a study's."""


def tuned_rules(spec: NetworkSpec, arrivals: int = 100_000, seed: int = 777, num_envs: int = 400,
                     measure: str = "dropping", bins: int = 24, progress: Callable[[str], None] | None = None,
                     max_arrivals: int | None = None, chain: int | None = None,
                     warmup: int | str = "auto", phase_step: int = 2) -> dict[str, TuningResult]:
    """Every cell rule tuned for ``spec`` (``progress`` is told of every evaluation); the
    per-phase table only with a periodic arrival profile (4 x ``arrivals`` per evaluation).
    ``max_arrivals``: the most a feasibility check grows its sample to (``Tuner``'s; default
    8 x ``arrivals``). ``chain``: only that one of the ``CHAINS`` (0: thresholds, 1: guards);
    the families come in the order of the chains. ``warmup``: of every evaluation (``Tuner``'s;
    a smoke run's few steps); ``phase_step``: the per-phase table's grid of shifts, in PRBs
    (``tune_phase_thresholds``' ``step``; a smoke run's coarse grid)."""
    if chain not in (None, *range(CHAINS)):
        raise ValueError(f"chain must be None or one of 0..{CHAINS - 1}, got {chain!r}. Fix: 0 for the thresholds, "
                         "1 for the guards, None for both.")
    run = {"arrivals": arrivals, "seed": seed, "num_envs": num_envs, "measure": measure, "progress": progress,
           "max_arrivals": max_arrivals, "warmup": warmup}
    out = {}
    if chain in (None, 0):
        out["accept-all"] = _tuner(spec, **run).result(CellAcceptAll(cell_layout(spec)))
        out["PRB threshold"] = prb = tune_prb_threshold(spec, **run)
        out["per-type thresholds"] = types = tune_type_thresholds(spec, prb.rule.T, **run)
        if observed_period(spec) is not None:  # a rule that reads the phase needs a clock it can see
            out["per-type thresholds per phase"] = tune_phase_thresholds(
                spec, types.rule.Ts, bins, 4 * arrivals, seed, num_envs, measure, progress, step=phase_step)
    if chain in (None, 1):
        out["guard channel"] = guard = tune_guard(spec, **run)
        out["fractional guard channel"] = tune_fractional_guard(spec, free=spec.block.prbs - guard.rule.g, **run)
    return out
