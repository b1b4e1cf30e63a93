"""Arrival processes for B simulator instances that advance in lockstep, with job classes.

Every process answers one question for a whole batch at once: given each instance's
current time ``now``, when is its next arrival? That is enough for both kinds we model:

* renewal arrivals (i.i.d. gaps), where the next arrival depends only on the last one;
* non-homogeneous Poisson arrivals (a periodic rate profile), which have independent
  increments, so the next arrival after ``now`` depends on nothing before ``now``.

Because neither needs hidden per-process state, a set of job classes (``ClassArrivals``)
is fully described by the pending next arrival of each (instance, class) pair, which
makes checkpoints a single array.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from envs.distributions import Distribution, make_distribution
from envs.errors import SpecError, as_finite, check_keys, number_list

__all__ = [
    "ArrivalProcess",
    "ClassArrivals",
    "PoissonProfileArrivals",
    "RateProfile",
    "RenewalArrivals",
    "make_arrivals",
]

TWO_PI = 2.0 * math.pi


# --------------------------------------------------------------------------- validation

def _number(value: Any, field: str, fix: str) -> float:
    """A finite real number (booleans are rejected: YAML turns 'yes' into True)."""
    return as_finite(value, field, fix)


def _positive(value: Any, field: str, what: str) -> float:
    x = _number(value, field, f"give {what} as a positive number")
    if x <= 0:
        raise SpecError(field, f"{what} must be positive, got {value!r}",
                        f"give {what} as a positive number")
    return x


def _check_table(table: Any, field: str) -> tuple[float, ...]:
    values = number_list(table, field, "rates", "give one non-negative, finite arrival rate per bin of the period",
                         lambda x: "a rate must be finite and >= 0" if not (math.isfinite(x) and x >= 0) else None)
    if max(values) <= 0:
        raise SpecError(field, "every rate in the table is zero, so no job would ever arrive",
                        "give at least one positive rate")
    return values


def _check_amplitude(value: Any, field: str) -> float:
    fix = "give an amplitude between 0 (constant rate) and 1 (rate touches zero)"
    a = _number(value, field, fix)
    if not 0.0 <= a <= 1.0:
        raise SpecError(field, f"amplitude must lie in [0, 1] so the rate stays non-negative, "
                               f"got {value!r}", fix)
    return a


# --------------------------------------------------------------------------- rate profile

@dataclass(frozen=True)
class RateProfile:
    """A periodic arrival rate with period ``period``, in one of two forms.

    * ``table``: piecewise constant, ``table[j]`` is the (absolute) rate on the j-th of
      ``len(table)`` equal-width bins of the period.
    * sinusoid: ``rate(t) = base * (1 + amplitude * sin(2 pi t / period + phase_shift))``,
      ``phase_shift`` in radians. ``amplitude <= 1`` keeps the rate non-negative.

    ``observed``: whether a controller sees the phase of the period (``envs.observation``). A
    daily profile is a clock everyone can read; a profile that only spreads the load over a
    range for training (``drl_ac.study.loads``) is not: a controller must then infer the load
    from what it sees, so that it can run at a fixed load too.

    Build with :meth:`from_table` or :meth:`sinusoid`. Times are reduced modulo the
    period before any trigonometry, so long simulations keep full precision.
    """

    period: float
    table: tuple[float, ...] | None = None
    base: float | None = None
    amplitude: float = 0.0
    phase_shift: float = 0.0
    observed: bool = True
    _rates: np.ndarray = field(init=False, repr=False, compare=False)
    _cum: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        period = _positive(self.period, "RateProfile.period", "the period")
        object.__setattr__(self, "period", period)
        if (self.table is None) == (self.base is None):
            raise SpecError("RateProfile", "give exactly one of 'table' and 'base'",
                            "use RateProfile.from_table(...) or RateProfile.sinusoid(...)")
        if self.table is not None:
            table = _check_table(self.table, "RateProfile.table")
            object.__setattr__(self, "table", table)
            rates = np.asarray(table, dtype=float)
            width = period / rates.size
            cum = np.concatenate(([0.0], np.cumsum(rates * width)))
        else:
            object.__setattr__(self, "base", _positive(self.base, "RateProfile.base", "the base rate"))
            object.__setattr__(self, "amplitude",
                               _check_amplitude(self.amplitude, "RateProfile.amplitude"))
            object.__setattr__(self, "phase_shift",
                               _number(self.phase_shift, "RateProfile.phase_shift",
                                       "give the phase in radians"))
            rates = np.empty(0)
            cum = np.empty(0)
        object.__setattr__(self, "_rates", rates)
        object.__setattr__(self, "_cum", cum)

    @classmethod
    def from_table(cls, period: float, table: Sequence[float], observed: bool = True) -> RateProfile:
        """Piecewise-constant profile: absolute rate per equal-width bin of the period."""
        return cls(period, table=tuple(table), observed=observed)

    @classmethod
    def sinusoid(cls, period: float, base: float, amplitude: float,
                 phase: float = 0.0, observed: bool = True) -> RateProfile:
        """``base * (1 + amplitude * sin(2 pi t / period + phase))``."""
        return cls(period, base=base, amplitude=amplitude, phase_shift=phase, observed=observed)

    def to_dict(self) -> dict[str, Any]:
        """The YAML form of the arrivals with this profile (``make_arrivals`` reads it back)."""
        hidden = {} if self.observed else {"observed": False}
        if self.table is not None:
            return {"dist": "poisson", "profile": {"period": self.period, "table": list(self.table), **hidden}}
        return {"dist": "poisson", "rate": self.base, "profile": {
            "period": self.period, "sinusoid": {"amplitude": self.amplitude, "phase": self.phase_shift}, **hidden}}

    @property
    def kind(self) -> str:
        return "table" if self.table is not None else "sinusoid"

    @property
    def bin_width(self) -> float:
        """Width of one table bin (the whole period for a sinusoid)."""
        return self.period / self._rates.size if self.table is not None else self.period

    @property
    def max_rate(self) -> float:
        if self.table is not None:
            return float(self._rates.max())
        return self.base * (1.0 + self.amplitude)

    @property
    def mean_rate(self) -> float:
        """Time average of the rate over one period (= long-run arrivals per unit time)."""
        if self.table is not None:
            return float(self._rates.mean())
        return float(self.base)

    def _split(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """t = k * period + s with integer k and s in [0, period)."""
        k = np.floor(t / self.period)
        s = t - k * self.period
        s = np.clip(s, 0.0, np.nextafter(self.period, 0.0))  # rounding can give s == period
        return k, s

    def _bin(self, s: np.ndarray) -> np.ndarray:
        return np.minimum((s / self.bin_width).astype(np.int64), self._rates.size - 1)

    def phase(self, t: np.ndarray | float) -> np.ndarray:
        """Fraction of the period elapsed at time t, in [0, 1)."""
        _, s = self._split(np.asarray(t, dtype=float))
        return np.minimum(s / self.period, np.nextafter(1.0, 0.0))

    def rate(self, t: np.ndarray | float) -> np.ndarray:
        """Instantaneous arrival rate at time(s) t."""
        _, s = self._split(np.asarray(t, dtype=float))
        if self.table is not None:
            return self._rates[self._bin(s)]
        return self.base * (1.0 + self.amplitude * np.sin(TWO_PI * s / self.period + self.phase_shift))

    def cumulative(self, t: np.ndarray | float) -> np.ndarray:
        """Lambda(t) = integral of the rate from 0 to t (negative for t < 0)."""
        k, s = self._split(np.asarray(t, dtype=float))
        if self.table is not None:
            j = self._bin(s)
            within = self._cum[j] + self._rates[j] * (s - j * self.bin_width)
            return k * self._cum[-1] + within
        wobble = self.base * self.amplitude * self.period / TWO_PI * (
            math.cos(self.phase_shift) - np.cos(TWO_PI * s / self.period + self.phase_shift))
        return self.base * (k * self.period + s) + wobble

    def integrated(self, t0: np.ndarray | float, t1: np.ndarray | float) -> np.ndarray:
        """Exact integral of the rate over [t0, t1] (expected number of arrivals), vectorised."""
        return self.cumulative(t1) - self.cumulative(t0)

    def _inverse_cumulative(self, target: np.ndarray) -> np.ndarray:
        """Table only: the t with Lambda(t) = target. Zero-rate bins are skipped because
        ``searchsorted(side='right')`` lands on the bin where the cumulative rate grows."""
        per_period = self._cum[-1]
        k = np.floor(target / per_period)
        r = target - k * per_period
        j = np.searchsorted(self._cum, r, side="right") - 1
        last_positive = int(np.flatnonzero(self._rates > 0)[-1])
        j = np.clip(j, 0, last_positive)
        return k * self.period + j * self.bin_width + (r - self._cum[j]) / self._rates[j]


# --------------------------------------------------------------------------- processes

class ArrivalProcess:
    """Arrivals of one job class; vectorised over instances through ``now``."""

    def next_after(self, rng: np.random.Generator, now: np.ndarray) -> np.ndarray:
        """Next arrival time strictly after ``now``, one per entry of ``now``."""
        raise NotImplementedError

    @property
    def mean_rate(self) -> float:
        """Long-run arrivals per unit time."""
        raise NotImplementedError

    @property
    def mean_interarrival(self) -> float:
        return 1.0 / self.mean_rate


@dataclass(frozen=True)
class Accelerated(ArrivalProcess):
    """``process`` with every gap divided by ``factor``: an overload that builds a backlog
    (the stability check of ``drl_ac.evaluation.steady``), whatever the process."""

    process: ArrivalProcess
    factor: float

    def next_after(self, rng: np.random.Generator, now: np.ndarray) -> np.ndarray:
        now = np.asarray(now, dtype=float)
        return now + (self.process.next_after(rng, now) - now) / self.factor

    @property
    def mean_rate(self) -> float:
        return self.process.mean_rate * self.factor


@dataclass(frozen=True)
class RenewalArrivals(ArrivalProcess):
    """I.i.d. gaps from ``dist``; ``now`` is the previous arrival.

    Draws exactly ``dist.sample(rng, now.shape)``, so a single renewal class consumes the
    random stream the same way the simulator always has.
    """

    dist: Distribution

    def next_after(self, rng: np.random.Generator, now: np.ndarray) -> np.ndarray:
        now = np.asarray(now, dtype=float)
        return now + self.dist.sample(rng, now.shape)

    @property
    def mean_rate(self) -> float:
        return 1.0 / self.dist.mean


@dataclass(frozen=True)
class PoissonProfileArrivals(ArrivalProcess):
    """Non-homogeneous Poisson arrivals with a periodic rate profile.

    A Poisson process has independent increments, so the next arrival after ``now`` can be
    drawn from ``now`` alone, whatever happened before. Two exact methods:

    * ``"thinning"`` (Lewis-Shedler): candidates from a homogeneous Poisson process of
      rate ``max_rate``, each kept with probability ``rate(t) / max_rate``. Keeping each
      point of a Poisson process independently with probability p(t) yields a Poisson
      process of intensity ``max_rate * p(t) = rate(t)``, so the first kept candidate is
      exactly the next arrival. Only rows still unresolved are redrawn.
    * ``"inversion"`` (table profiles only): with Lambda the cumulative rate,
      ``Lambda(T)`` is a unit-rate Poisson process, so the next arrival is
      ``Lambda^-1(Lambda(now) + E)`` with E ~ Exp(1): one draw per row, no loop, and
      unaffected by bins with a rate far below the maximum (or zero).

    ``method="auto"`` uses inversion for tables and thinning for sinusoids.
    """

    profile: RateProfile
    method: str = "auto"

    def __post_init__(self) -> None:
        if self.method not in ("auto", "thinning", "inversion"):
            raise ValueError(f"method must be 'auto', 'thinning' or 'inversion', got {self.method!r}")
        if self.method == "inversion" and self.profile.table is None:
            raise ValueError("inversion needs a table profile; use thinning for a sinusoid")

    @property
    def uses_inversion(self) -> bool:
        return self.method == "inversion" or (self.method == "auto" and self.profile.table is not None)

    def next_after(self, rng: np.random.Generator, now: np.ndarray) -> np.ndarray:
        now = np.asarray(now, dtype=float)
        if self.uses_inversion:
            target = self.profile.cumulative(now) + rng.exponential(1.0, now.shape)
            t = self.profile._inverse_cumulative(target)
            # Round-off may put t a hair before now; the next arrival is strictly after now.
            return np.maximum(t, np.nextafter(now, np.inf))
        return self._thin(rng, now)

    def _thin(self, rng: np.random.Generator, now: np.ndarray) -> np.ndarray:
        top = self.profile.max_rate
        out = np.empty(now.size)
        todo = np.arange(now.size)
        t = now.ravel().copy()
        while todo.size:
            t = t + rng.exponential(1.0 / top, todo.size)
            keep = rng.random(todo.size) * top < self.profile.rate(t)
            out[todo[keep]] = t[keep]
            todo, t = todo[~keep], t[~keep]
        return np.maximum(out.reshape(now.shape), np.nextafter(now, np.inf))

    @property
    def mean_rate(self) -> float:
        return self.profile.mean_rate


# --------------------------------------------------------------------------- job classes

class ClassArrivals:
    """Superposition of one arrival process per job class, for B instances.

    State: ``next_time[b, c]``, the pending next arrival of class c in instance b. ``pop``
    hands out each instance's earliest pending arrival (ties go to the lowest class) and
    draws that class's following arrival. Since every process is memoryless given its last
    arrival time (renewal) or the current time (Poisson), this array is the whole state.
    """

    def __init__(self, processes: Sequence[ArrivalProcess | Distribution]):
        if len(processes) == 0:
            raise ValueError("ClassArrivals needs at least one class")
        self.processes: tuple[ArrivalProcess, ...] = tuple(
            RenewalArrivals(p) if isinstance(p, Distribution) else p for p in processes)
        self.next_time: np.ndarray = np.empty((0, len(self.processes)))

    @property
    def num_classes(self) -> int:
        return len(self.processes)

    @property
    def B(self) -> int:
        return self.next_time.shape[0]

    @property
    def rates(self) -> np.ndarray:
        """Long-run arrival rate of each class, shape (C,)."""
        return np.array([p.mean_rate for p in self.processes])

    @property
    def mean_rate(self) -> float:
        """Long-run total arrival rate (a superposition's rates add)."""
        return float(self.rates.sum())

    @property
    def shares(self) -> np.ndarray:
        """Long-run fraction of arrivals belonging to each class."""
        return self.rates / self.rates.sum()

    def reset(self, rng: np.random.Generator, B: int, start: float | np.ndarray = 0.0) -> None:
        """Draw every class's first arrival after ``start`` (a scalar or one time per instance)."""
        start = np.broadcast_to(np.asarray(start, dtype=float), (B,))
        self.next_time = np.empty((B, self.num_classes))
        for c, proc in enumerate(self.processes):
            self.next_time[:, c] = proc.next_after(rng, start)

    def peek(self) -> tuple[np.ndarray, np.ndarray]:
        """The arrival ``pop`` would return, without drawing anything."""
        job_class = np.argmin(self.next_time, axis=1)  # first minimum: lowest class wins ties
        return self.next_time[np.arange(self.B), job_class], job_class

    def pop(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Earliest pending arrival of every instance: ``(time (B,), job_class (B,))``."""
        time, job_class = self.peek()
        if self.num_classes == 1:
            self.next_time[:, 0] = self.processes[0].next_after(rng, time)
            return time, job_class
        for c, proc in enumerate(self.processes):
            rows = np.flatnonzero(job_class == c)
            if rows.size:
                self.next_time[rows, c] = proc.next_after(rng, time[rows])
        return time, job_class

    def get_state(self) -> dict[str, np.ndarray]:
        """A copy of the state as a plain dict of arrays (the rng is the caller's)."""
        return {"next_time": self.next_time.copy()}

    def set_state(self, state: Mapping[str, np.ndarray]) -> None:
        next_time = np.array(state["next_time"], dtype=float)
        if next_time.ndim != 2 or next_time.shape[1] != self.num_classes:
            raise ValueError(f"next_time must have shape (B, {self.num_classes}), "
                             f"got {next_time.shape}")
        self.next_time = next_time


# --------------------------------------------------------------------------- YAML

_PROFILE_TOP_KEYS = ("dist", "rate", "profile")
_PROFILE_KEYS = ("period", "table", "sinusoid", "observed")
_SINUSOID_KEYS = ("amplitude", "phase")


def _unknown_keys(cfg: Mapping[str, Any], allowed: Sequence[str], field: str) -> None:
    check_keys(cfg, allowed, field, key_in_field=False)


def _section(value: Any, field: str, allowed: Sequence[str], required: str, example: str, fix: str
             ) -> Mapping[str, Any]:
    """A nested mapping of the profile form: a mapping, known keys only, ``required`` present."""
    if not isinstance(value, Mapping):
        raise SpecError(field, f"expected a mapping, got {value!r}", f"write {example}")
    _unknown_keys(value, allowed, field)
    if required not in value:
        raise SpecError(field, f"missing '{required}'", fix)
    return value


def _make_profile(cfg: Mapping[str, Any], field: str) -> RateProfile:
    pfield = field + ".profile"
    prof = _section(cfg["profile"], pfield, _PROFILE_KEYS, "period",
                    "{period: 24, table: [...]} or {period: 24, sinusoid: {amplitude: 0.5}}",
                    "give the length of one cycle, e.g. period: 24")
    period = _positive(prof["period"], pfield + ".period", "the period")
    observed = prof.get("observed", True)
    if not isinstance(observed, bool):
        raise SpecError(pfield + ".observed", f"expected true or false, got {observed!r}",
                        "write observed: false to hide the phase from the controller, or leave it out")
    has_table, has_sin = "table" in prof, "sinusoid" in prof
    if has_table == has_sin:
        raise SpecError(pfield, "give exactly one of 'table' and 'sinusoid', got "
                        + ("both" if has_table else "neither"),
                        "use 'table' for a rate per bin or 'sinusoid' for a smooth cycle")
    if has_table:
        if "rate" in cfg:
            raise SpecError(field + ".rate", "'rate' cannot be combined with a table profile",
                            "drop 'rate': the table entries are the absolute rates per bin")
        return RateProfile.from_table(period, _check_table(prof["table"], pfield + ".table"), observed)
    sfield = pfield + ".sinusoid"
    sin = _section(prof["sinusoid"], sfield, _SINUSOID_KEYS, "amplitude", "sinusoid: {amplitude: 0.5, phase: 0.0}",
                   "give an amplitude between 0 and 1")
    amplitude = _check_amplitude(sin["amplitude"], sfield + ".amplitude")
    phase = _number(sin.get("phase", 0.0), sfield + ".phase", "give the phase in radians")
    if "rate" not in cfg:
        raise SpecError(field, "a sinusoid profile needs 'rate' (its mean rate)",
                        "add rate: <mean arrivals per unit time>")
    base = _positive(cfg["rate"], field + ".rate", "the rate")
    return RateProfile.sinusoid(period, base, amplitude, phase, observed)


def make_arrivals(cfg: Mapping[str, Any] | Distribution | ArrivalProcess, field: str,
                  base_dir: Path | None = None) -> ArrivalProcess:
    """Build one class's arrival process from its YAML form.

    * renewal: anything ``make_distribution`` accepts, e.g. ``{dist: gamma, rate: 0.95,
      scv: 0.7}``; ``{dist: poisson, rate: r}`` is exponential gaps.
    * periodic Poisson, piecewise constant:
      ``{dist: poisson, profile: {period: 24, table: [1.0, 2.5, ...]}}``. The table entries
      are absolute rates, so ``rate`` must not be given (no hidden scaling).
    * periodic Poisson, sinusoid:
      ``{dist: poisson, rate: 0.3, profile: {period: 24, sinusoid: {amplitude: 0.5,
      phase: 0.0}}}``; ``rate`` is the base (= mean) rate, ``phase`` is in radians
      (default 0).
    * either profile with ``observed: false``: the controller does not see the phase
      (``RateProfile.observed``).

    ``field`` is this entry's path in the spec (e.g. ``classes[1].arrival``); every
    SpecError names the offending sub-field and the fix.
    """
    if isinstance(cfg, ArrivalProcess):
        return cfg
    if isinstance(cfg, Distribution):
        return RenewalArrivals(cfg)
    if isinstance(cfg, Mapping):
        family = str(cfg.get("dist", "")).strip().lower()
        if "profile" in cfg:
            if family != "poisson":
                raise SpecError(field + ".dist",
                                f"a rate profile needs Poisson arrivals, got dist {cfg.get('dist')!r}",
                                "write dist: poisson, or drop 'profile' for renewal arrivals")
            _unknown_keys(cfg, _PROFILE_TOP_KEYS, field)
            return PoissonProfileArrivals(_make_profile(cfg, field))
        if family == "poisson":
            return RenewalArrivals(make_distribution({**cfg, "dist": "exponential"}, field, base_dir))
    return RenewalArrivals(make_distribution(cfg, field, base_dir))
