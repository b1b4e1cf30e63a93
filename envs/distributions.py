"""Service and inter-arrival time distributions, parameterised the way queueing
people talk about them: by mean and squared coefficient of variation (SCV).

Every distribution draws a whole batch at once (``sample(rng, size)``) so the
simulator never loops over instances.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.errors import SpecError, as_number, brief, check_keys, did_you_mean, number_list


class Distribution:
    """A positive random time with a known mean and SCV."""

    mean: float

    @property
    def scv(self) -> float:
        raise NotImplementedError

    @property
    def second_moment(self) -> float:
        """E[X^2] = mean^2 (1 + SCV): what Pollaczek-Khinchine needs."""
        return self.mean**2 * (1.0 + self.scv)

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class Exponential(Distribution):
    mean: float

    @property
    def scv(self) -> float:
        return 1.0

    def sample(self, rng, size):
        return rng.exponential(self.mean, size)



@dataclass(frozen=True)
class Deterministic(Distribution):
    mean: float

    @property
    def scv(self) -> float:
        return 0.0

    def sample(self, rng, size):
        return np.full(size, self.mean)



@dataclass(frozen=True)
class _ByMeanAndScv(Distribution):
    """Families parameterised directly by mean and SCV (``cv2``)."""

    mean: float
    cv2: float

    @property
    def scv(self) -> float:
        return self.cv2


class Gamma(_ByMeanAndScv):
    """Gamma by mean and SCV: shape 1/SCV, scale mean*SCV (SCV 1 is exponential)."""

    def sample(self, rng, size):
        return rng.gamma(1.0 / self.cv2, self.mean * self.cv2, size)



class LogNormal(_ByMeanAndScv):
    """Lognormal by mean and SCV: sigma^2 = ln(1 + SCV)."""

    def sample(self, rng, size):
        sigma2 = math.log1p(self.cv2)
        return rng.lognormal(math.log(self.mean) - sigma2 / 2.0, math.sqrt(sigma2), size)



class HyperExponential(_ByMeanAndScv):
    """Two-phase hyperexponential with balanced means (p1/mu1 = p2/mu2), SCV >= 1."""

    def _params(self) -> tuple[float, float, float]:
        p = 0.5 * (1.0 + math.sqrt((self.cv2 - 1.0) / (self.cv2 + 1.0)))
        return p, self.mean / (2.0 * p), self.mean / (2.0 * (1.0 - p))

    def sample(self, rng, size):
        p, m1, m2 = self._params()
        phase1 = rng.random(size) < p
        return rng.exponential(1.0, size) * np.where(phase1, m1, m2)



@dataclass(frozen=True)
class PhaseMixture(Distribution):
    """Mixture of exponentials: rate ``rates[i]`` with probability ``probs[i]``.

    Unlike ``HyperExponential`` (balanced means, set by mean and SCV) the phases are free,
    as in the model's redundancy example (rate 0.19 w.p. 0.1, 1.9 w.p. 0.9). In YAML:
    ``{dist: hyperexponential, probs: [0.1, 0.9], rates: [0.19, 1.9]}``.
    """

    probs: tuple[float, ...]
    rates: tuple[float, ...]

    def __post_init__(self):
        p, r = np.asarray(self.probs, float), np.asarray(self.rates, float)
        if p.shape != r.shape or p.ndim != 1 or p.size == 0:
            raise ValueError("PhaseMixture needs as many probabilities as rates (at least one)")
        if (p < 0).any() or abs(p.sum() - 1.0) > 1e-9 or (r <= 0).any():
            raise ValueError(f"PhaseMixture needs probabilities >= 0 summing to 1 and rates > 0, got {self}")

    @property
    def mean(self) -> float:  # type: ignore[override]
        return float(sum(p / r for p, r in zip(self.probs, self.rates, strict=True)))

    @property
    def scv(self) -> float:
        second = sum(2.0 * p / r**2 for p, r in zip(self.probs, self.rates, strict=True))
        return second / self.mean**2 - 1.0

    def sample(self, rng, size):
        phase = rng.choice(len(self.probs), size=size, p=np.asarray(self.probs))
        return rng.exponential(1.0, size) / np.asarray(self.rates)[phase]


@dataclass(frozen=True)
class Lomax(Distribution):
    """Pareto type II: P(X > x) = (1 + x/scale)^-shape. Heavy-tailed service."""

    shape: float
    scale: float

    @property
    def mean(self) -> float:  # type: ignore[override]
        return self.scale / (self.shape - 1.0)

    @property
    def scv(self) -> float:
        if self.shape <= 2.0:
            return math.inf
        return self.shape / (self.shape - 2.0)

    def sample(self, rng, size):
        return self.scale * rng.pareto(self.shape, size)



@dataclass(frozen=True)
class Empirical(Distribution):
    """Resamples (with replacement) a user's observed times."""

    values: tuple[float, ...]
    source: str = ""

    @property
    def mean(self) -> float:  # type: ignore[override]
        return float(np.mean(self.values))

    @property
    def scv(self) -> float:
        v = np.asarray(self.values)
        return float(v.var() / v.mean() ** 2)

    def sample(self, rng, size):
        return np.asarray(self.values)[rng.integers(0, len(self.values), size)]



def _positive(cfg: Mapping[str, Any], key: str, field: str) -> float:
    if key not in cfg:
        raise SpecError(field, f"missing '{key}'", f"give '{key}' as a positive number")
    value = as_number(cfg[key], field + "." + key, "give a positive number")
    if not math.isfinite(value) or value <= 0:
        raise SpecError(field + "." + key, f"must be positive and finite, got {brief(cfg[key])}",
                        "give a positive number")
    return value


def _mean(cfg: Mapping[str, Any], field: str) -> float:
    """Accept either 'mean' or 'rate' (= 1/mean)."""
    if "rate" in cfg and "mean" in cfg:
        raise SpecError(field, "both 'mean' and 'rate' given", "give only one of them")
    if "rate" in cfg:
        mean = 1.0 / _positive(cfg, "rate", field)
        if not math.isfinite(mean):
            raise SpecError(field + ".rate", f"rate {brief(cfg['rate'])} is so small that the mean is infinite",
                            "give a larger rate, or the mean")
        return mean
    return _positive(cfg, "mean", field)


_TEXT_FIX = "give a UTF-8 text file with one observed time per line (or comma separated)"


def read_text_file(p: Path, field: str, fix: str) -> str:
    """The text of ``p``; a SpecError (naming ``field``) if it is missing, unreadable or binary."""
    try:
        regular = stat.S_ISREG(p.stat().st_mode)
        data = p.read_bytes() if regular else b""  # not a directory or a device like /dev/zero
    except OSError as exc:
        raise SpecError(field, f"cannot read {str(p)!r} ({exc.strerror or exc})", fix) from None
    except ValueError as exc:  # e.g. an embedded NUL byte in the path
        raise SpecError(field, f"{brief(str(p))} is not a usable path ({exc})", fix) from None
    if not regular:
        raise SpecError(field, f"{str(p)!r} is not a regular file", fix)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(field, f"{str(p)!r} is not a text file (byte {exc.start} is not UTF-8)", fix) from None
    if "\x00" in text:
        raise SpecError(field, f"{str(p)!r} is not a text file (it holds NUL bytes)", fix)
    return text


def _read_samples(path: Any, field: str, base_dir: Path | None) -> tuple[float, ...]:
    ffield = field + ".file"
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise SpecError(ffield, f"expected the path of a text file, got {brief(path)}", _TEXT_FIX)
    p = Path(path)
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    text = read_text_file(p, ffield, _TEXT_FIX)
    values = []
    fix = "one positive, finite number per line (or comma separated)"
    for lineno, line in enumerate(text.split("\n"), start=1):
        for tok in line.replace(",", " ").split():
            where = f"{str(p)!r} line {lineno}"
            try:
                x = float(tok)
            except ValueError:
                raise SpecError(ffield, f"{where}: {brief(tok)} is not a number", fix) from None
            if not math.isfinite(x):
                raise SpecError(ffield, f"{where}: {brief(tok)} is not finite (a job would never finish)",
                                "remove non-finite observations")
            if x <= 0:
                raise SpecError(ffield, f"{where}: {brief(tok)} is not positive",
                                "remove zero or negative observations")
            values.append(x)
    if not values:
        raise SpecError(ffield, f"{str(p)!r} holds no values", "give at least one observed time")
    return tuple(values)


def _phases(cfg: Mapping[str, Any], field: str) -> PhaseMixture:
    """``{dist: hyperexponential, probs: [...], rates: [...]}``: free phases."""
    for key in ("mean", "rate", "scv"):
        if key in cfg:
            raise SpecError(f"{field}.{key}", "cannot be combined with 'probs' and 'rates' (the phases fix it)",
                            "give either probs and rates, or mean and scv (balanced phases)")
    for key in ("probs", "rates"):
        if key not in cfg:
            raise SpecError(field, f"missing '{key}'", "give both probs (summing to 1) and rates (positive)")
    probs = number_list(cfg["probs"], field + ".probs", "phase probabilities", "give probabilities in [0, 1]",
                        lambda x: None if 0.0 <= x <= 1.0 else "a probability must lie in [0, 1]")
    rates = number_list(cfg["rates"], field + ".rates", "phase rates", "give positive, finite rates",
                        lambda x: None if math.isfinite(x) and x > 0 else "a rate must be positive and finite")
    if len(probs) != len(rates):
        raise SpecError(field + ".rates", f"{len(rates)} rates for {len(probs)} probabilities",
                        "give one rate per phase probability")
    if abs(sum(probs) - 1.0) > 1e-9:
        raise SpecError(field + ".probs", f"the probabilities sum to {sum(probs):g}", "make them sum to 1")
    return PhaseMixture(probs, rates)


def _inline_samples(raw: Any, field: str) -> tuple[float, ...]:
    def problem(x: float) -> str | None:
        if not math.isfinite(x):
            return "not finite (a job would never finish)"
        return "an observed time must be positive" if x <= 0 else None

    return number_list(raw, field, "observed times",
                       "list the observed times as positive, finite numbers, e.g. values: [1.2, 0.8, 3.1]", problem)


FAMILIES = ("exponential", "deterministic", "gamma", "lognormal", "hyperexponential", "lomax", "empirical")
_ALIASES = {"exp": "exponential", "markovian": "exponential", "m": "exponential",
            "det": "deterministic", "d": "deterministic", "h2": "hyperexponential",
            "pareto2": "lomax", "pareto": "lomax", "phasemixture": "hyperexponential", **{f: f for f in FAMILIES}}
# Keys each family reads (besides 'dist'); 'mean' may always be given as 'rate' instead.
_KEYS = {"exponential": ("mean", "rate"), "deterministic": ("mean", "rate"),
         "gamma": ("mean", "rate", "scv"), "lognormal": ("mean", "rate", "scv"),
         "hyperexponential": ("mean", "rate", "scv", "probs", "rates"),
         "lomax": ("mean", "rate", "scv", "shape", "scale"), "empirical": ("file", "values")}
_KEY_ALIASES = {"cv2": "scv", "cv": "scv", "mu": "rate", "lambda": "rate", "path": "file",
                "samples": "values", "data": "values"}


def _check_dist_keys(cfg: Mapping[str, Any], family: str, field: str) -> None:
    """Refuse keys the family does not read; a key another family reads gets its own hint."""
    allowed = ("dist",) + _KEYS[family]
    what = f"{'an' if family[0] in 'aeiou' else 'a'} {family} distribution"
    every = sorted({k for keys in _KEYS.values() for k in keys})
    for key in cfg:
        if isinstance(key, str) and key in allowed:
            continue
        guess = did_you_mean(key, every, _KEY_ALIASES) if isinstance(key, str) else None
        if guess is None or guess in allowed:
            check_keys({key: None}, allowed, field, what=what, aliases=_KEY_ALIASES)
        users = [f for f, keys in _KEYS.items() if guess in keys]
        raise SpecError(f"{field}.{key}", f"unknown key {brief(key)}",
                        f"{what} takes only {', '.join(allowed)}; '{guess}' belongs to {', '.join(users)}")


def make_distribution(cfg: Mapping[str, Any] | float, field: str,
                      base_dir: Path | None = None) -> Distribution:
    """Build a distribution from a YAML-style mapping, e.g. ``{dist: gamma, mean: 3, scv: 0.8}``.

    ``field`` is the path of this entry in the spec, used in error messages. Keys the
    family does not read are refused (a misspelt ``sccv`` must not silently fall back).
    """
    if isinstance(cfg, Distribution):
        return cfg
    dist = _build(cfg, field, base_dir)
    with np.errstate(over="ignore"):
        mean = float(dist.mean)
    if not (math.isfinite(mean) and mean > 0):
        raise SpecError(field, f"these parameters give a mean time of {mean}",
                        "give parameters with a positive, finite mean")
    return dist


def _build(cfg: Any, field: str, base_dir: Path | None) -> Distribution:
    if not isinstance(cfg, Mapping):
        raise SpecError(field, f"expected a mapping like {{dist: gamma, mean: 1, scv: 0.5}}, got {brief(cfg)}",
                        f"choose 'dist' from {', '.join(FAMILIES)}")
    if "dist" not in cfg:
        guess = next((k for k in cfg if isinstance(k, str) and did_you_mean(k, ("dist",))), None)
        raise SpecError(field + ".dist", "missing" + (f" (is {guess!r} a misspelt 'dist'?)" if guess else ""),
                        f"choose 'dist' from {', '.join(FAMILIES)}")
    raw = cfg["dist"]
    family = _ALIASES.get(raw.strip().lower()) if isinstance(raw, str) else None
    if family is None:
        guess = did_you_mean(raw, _ALIASES) if isinstance(raw, str) else None
        raise SpecError(field + ".dist", f"unknown distribution {brief(raw)}",
                        (f"did you mean '{_ALIASES[guess]}'? " if guess else "")
                        + f"choose one of {', '.join(FAMILIES)}")
    _check_dist_keys(cfg, family, field)
    if family == "exponential":
        return Exponential(_mean(cfg, field))
    if family == "deterministic":
        return Deterministic(_mean(cfg, field))
    if family == "hyperexponential" and ("probs" in cfg or "rates" in cfg):
        return _phases(cfg, field)
    if family in ("gamma", "lognormal", "hyperexponential"):
        mean = _mean(cfg, field)
        scv = _positive(cfg, "scv", field)
        if family == "gamma":
            return Gamma(mean, scv)
        if family == "lognormal":
            return LogNormal(mean, scv)
        if scv < 1.0:
            raise SpecError(field + ".scv", f"a two-phase hyperexponential needs SCV >= 1, got {scv}",
                            "use gamma or lognormal for SCV < 1")
        return HyperExponential(mean, scv)
    if family == "lomax":
        if "shape" in cfg:
            if "scv" in cfg:
                raise SpecError(field + ".scv", "cannot be combined with 'shape' (the shape fixes the SCV)",
                                "give shape with scale (or mean), or mean with scv")
            shape = _positive(cfg, "shape", field)
            if shape <= 1.0:
                raise SpecError(field + ".shape", f"Lomax needs shape > 1 for a finite mean, got {shape}",
                                "use a shape above 1")
            if "scale" in cfg:
                if "mean" in cfg or "rate" in cfg:
                    raise SpecError(field, "both 'scale' and a mean (or rate) given",
                                    "give the shape with either the scale or the mean")
                scale = _positive(cfg, "scale", field)
            else:
                scale = _mean(cfg, field) * (shape - 1.0)
        else:
            if "scale" in cfg:
                raise SpecError(field + ".scale", "needs 'shape'", "give shape and scale, or mean and scv")
            mean = _mean(cfg, field)
            scv = _positive(cfg, "scv", field)
            if scv <= 1.0:
                raise SpecError(field + ".scv", f"Lomax by mean and SCV needs SCV > 1, got {scv}",
                                "use SCV > 1 or give 'shape' and 'scale'")
            shape = 2.0 * scv / (scv - 1.0)
            scale = mean * (shape - 1.0)
        if not (math.isfinite(shape) and math.isfinite(scale) and scale > 0):
            raise SpecError(field, f"these parameters give a Lomax with shape {shape} and scale {scale}",
                            "give parameters whose shape and scale are positive and finite")
        return Lomax(shape, scale)
    # empirical
    if ("file" in cfg) == ("values" in cfg):
        raise SpecError(field, "empirical needs exactly one of 'file' and 'values'",
                        "give the path of a file of observed times, or list them under 'values'")
    if "file" in cfg:
        return Empirical(_read_samples(cfg["file"], field, base_dir), str(cfg["file"]))
    return Empirical(_inline_samples(cfg["values"], field + ".values"))
