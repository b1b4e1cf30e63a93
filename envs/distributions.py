"""Service and inter-arrival time distributions, parameterised the way queueing
people talk about them: by mean and squared coefficient of variation (SCV).

Every distribution draws a whole batch at once (``sample(rng, size)``) so the
simulator never loops over instances.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.errors import SpecError


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
    try:
        value = float(cfg[key])
    except (TypeError, ValueError):
        raise SpecError(field + "." + key, f"not a number: {cfg[key]!r}", "give a positive number") from None
    if not math.isfinite(value) or value <= 0:
        raise SpecError(field + "." + key, f"must be positive and finite, got {cfg[key]!r}",
                        "give a positive number")
    return value


def _mean(cfg: Mapping[str, Any], field: str) -> float:
    """Accept either 'mean' or 'rate' (= 1/mean)."""
    if "rate" in cfg and "mean" in cfg:
        raise SpecError(field, "both 'mean' and 'rate' given", "give only one of them")
    if "rate" in cfg:
        return 1.0 / _positive(cfg, "rate", field)
    return _positive(cfg, "mean", field)


def _read_samples(path: str, field: str, base_dir: Path | None) -> tuple[float, ...]:
    p = Path(path)
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    try:
        text = p.read_text()
    except OSError as exc:
        raise SpecError(field + ".file", f"cannot read {str(p)!r} ({exc.strerror})",
                        "give a readable text file with one observed time per line") from None
    try:
        values = [float(tok) for tok in text.replace(",", " ").split()]
    except ValueError:
        raise SpecError(field + ".file", f"{str(p)!r} holds something that is not a number",
                        "one positive number per line (or comma separated)") from None
    if not values or min(values) <= 0 or not all(math.isfinite(v) for v in values):
        raise SpecError(field + ".file", f"{str(p)!r} needs at least one value, all positive",
                        "remove zero, negative or non-finite observations")
    return tuple(values)


FAMILIES = ("exponential", "deterministic", "gamma", "lognormal", "hyperexponential", "lomax", "empirical")


def make_distribution(cfg: Mapping[str, Any] | float, field: str,
                      base_dir: Path | None = None) -> Distribution:
    """Build a distribution from a YAML-style mapping, e.g. ``{dist: gamma, mean: 3, scv: 0.8}``.

    ``field`` is the path of this entry in the spec, used in error messages.
    """
    if isinstance(cfg, Distribution):
        return cfg
    if not isinstance(cfg, Mapping):
        raise SpecError(field, f"expected a mapping like {{dist: gamma, mean: 1, scv: 0.5}}, got {cfg!r}",
                        f"choose 'dist' from {', '.join(FAMILIES)}")
    family = str(cfg.get("dist", "")).lower()
    if family in ("exp", "exponential", "markovian", "m"):
        return Exponential(_mean(cfg, field))
    if family in ("deterministic", "det", "d"):
        return Deterministic(_mean(cfg, field))
    if family in ("gamma", "lognormal", "hyperexponential", "h2"):
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
    if family in ("lomax", "pareto2", "pareto"):
        if "shape" in cfg:
            shape = _positive(cfg, "shape", field)
            if shape <= 1.0:
                raise SpecError(field + ".shape", f"Lomax needs shape > 1 for a finite mean, got {shape}",
                                "use a shape above 1")
            scale = _positive(cfg, "scale", field) if "scale" in cfg else _mean(cfg, field) * (shape - 1.0)
            return Lomax(shape, scale)
        mean = _mean(cfg, field)
        scv = _positive(cfg, "scv", field)
        if scv <= 1.0:
            raise SpecError(field + ".scv", f"Lomax by mean and SCV needs SCV > 1, got {scv}",
                            "use SCV > 1 or give 'shape' and 'scale'")
        shape = 2.0 * scv / (scv - 1.0)
        return Lomax(shape, mean * (shape - 1.0))
    if family == "empirical":
        if "file" in cfg:
            return Empirical(_read_samples(str(cfg["file"]), field, base_dir), str(cfg["file"]))
        if "values" in cfg:
            values = tuple(float(v) for v in cfg["values"])
            if not values or min(values) <= 0:
                raise SpecError(field + ".values", "needs at least one value, all positive",
                                "remove zero or negative observations")
            return Empirical(values)
        raise SpecError(field, "empirical needs 'file' or 'values'", "give the path of observed times")
    raise SpecError(field + ".dist", f"unknown distribution {cfg.get('dist')!r}",
                    f"choose one of {', '.join(FAMILIES)}")
