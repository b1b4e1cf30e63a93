"""Redundancy-d (docs/systems/redundancy.md; block ``redundancy:``): N identical single-server stations
(``server1..N``); the controller picks per job a replication degree d among the block's
``d``; the job is copied to d distinct servers chosen uniformly at random and the first copy
to finish cancels the others (``envs.systems.redundancy.dispatch.CopyToD``). Every job is served: the goal is
the mean response time.

Stability. Write M_d = min(X_1..X_d) for the copy sizes of one job. With processor-sharing
servers a job's copies progress together, so it holds d servers for M_d: the system can be
stable iff lambda d E[M_d] < N for some allowed d (the fluid bound lambda*(d) = N / (d E[M_d]),
``envs.systems.redundancy.theory``; mixing degrees cannot beat the best one, the condition being
linear in the mix). With FCFS servers copies start apart and may use more server time than
d M_d, so only the certain part is checked: each job needs at least M_d of work, so
lambda E[M_d] < N for some d. E[M_d] is computed here by a second method, which the tests hold
to ``theory``'s: exactly for identical copies and d = 1, in closed form or by quadrature for the laws of
``envs.distributions``, from 2^20 draws with a fixed seed for any other (``expected_min``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.distributions import (
    Deterministic,
    Distribution,
    Empirical,
    Exponential,
    Gamma,
    HyperExponential,
    LogNormal,
    Lomax,
    PhaseMixture,
    make_distribution,
)
from envs.errors import SpecError, brief, check_distinct, check_keys, did_you_mean, is_list
from envs.kinds.ps import PsKind
from envs.observation import ObservationEncoding, observed_period
from envs.systems.base import ControlSystem
from envs.systems.redundancy.dispatch import CopyToD
from envs.systems.redundancy.kernel import PsRedundancyKernel

REDUNDANCY_KEYS = ("servers", "kind", "copies", "size", "scale", "factor", "d")
COPY_LAWS = ("identical", "iid", "scaled")
DRAWS = 1 << 20
SEED = 20240521


@dataclass(frozen=True)
class Redundancy:
    """Redundancy-d: ``servers`` identical servers of ``kind`` (1 server's rate each); a job
    is copied to d distinct servers chosen uniformly at random, d from ``choices`` (the
    controller's actions), and the first copy to finish cancels the others.

    Copy sizes (X_1..X_N) follow the joint law ``copies``: ``identical`` (one draw of
    ``size``), ``iid`` (independent draws of ``size``) or ``scaled`` (X_i = S * Y_i, S from
    ``scale``, Y_i i.i.d. from ``factor``).
    """

    servers: int
    kind: str
    copies: str
    choices: tuple[int, ...]
    size: Distribution | None = None
    scale: Distribution | None = None
    factor: Distribution | None = None

    def to_dict(self, dist) -> dict[str, Any]:
        out: dict[str, Any] = {"servers": self.servers, "kind": self.kind, "copies": self.copies,
                               "d": list(self.choices)}
        for key in ("size", "scale", "factor"):
            if getattr(self, key) is not None:
                out[key] = dist(getattr(self, key))
        return out

    def expected_min(self, d: int) -> float:
        """E[min(X_1..X_d)] under the copy law."""
        if self.copies == "identical":
            return float(self.size.mean)
        if self.copies == "iid":
            return expected_min(self.size, d)
        return float(self.scale.mean) * expected_min(self.factor, d)

    def capacity(self, d: int) -> float:
        """lambda*(d) = N / (d E[min(X_1..X_d)]): the largest arrival rate the servers carry
        with every job copied d times, copies progressing together (processor sharing)."""
        work = d * self.expected_min(d)
        return self.servers / work if work > 0 else math.inf


@functools.lru_cache(maxsize=256)
def expected_min(dist: Distribution, d: int) -> float:
    """E[min(X_1..X_d)] of d i.i.d. copies of ``dist``: the integral of P(X > x)^d over x >= 0.

    Closed forms for d = 1, exponential mixtures (exponential, hyperexponential, phases:
    expanded multinomially into a sum of exponentials while that sum is short; quadrature
    beyond), deterministic, Lomax and empirical
    laws; quadrature of the survival function for gamma and lognormal; for any other law,
    that integral over the empirical survival function of ``DRAWS`` draws (seed fixed),
    rescaled by the exact mean over the draws' mean (a ratio estimator)."""
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if d == 1 or isinstance(dist, Deterministic):
        return float(dist.mean)
    if isinstance(dist, Exponential):
        return float(dist.mean) / d
    mix = _exponential_phases(dist)
    if mix is not None and d <= 50 and math.comb(d + len(mix[0]) - 1, d) <= 5000:
        return _min_of_phases(*mix, d)
    if isinstance(dist, Lomax):  # P(X > x)^d = (1 + x / scale)^(-d shape)
        return dist.scale / (d * dist.shape - 1.0) if d * dist.shape > 1.0 else math.inf
    if isinstance(dist, Empirical):
        return _min_of_sample(np.asarray(dist.values, float), d)
    sf = _survival(dist)
    if sf is not None:
        from scipy.integrate import quad
        m = float(dist.mean)
        opts = {"limit": 500, "epsabs": 1e-13, "epsrel": 1e-11}
        edges = (0.0, m / d, 2.0 * m, math.inf)  # the bulk of the minimum, of one copy, the tail
        return sum(quad(lambda x: sf(x) ** d, a, b, **opts)[0] for a, b in zip(edges[:-1], edges[1:], strict=True))
    x = dist.sample(np.random.default_rng(SEED), DRAWS)
    return float(dist.mean) * _min_of_sample(x, d) / float(x.mean())


def _exponential_phases(dist: Distribution) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """(probabilities, rates) of a law that is a finite mixture of exponentials, else None."""
    if isinstance(dist, Exponential):
        return (1.0,), (1.0 / dist.mean,)
    if isinstance(dist, HyperExponential):
        p, m1, m2 = dist._params()
        return (p, 1.0 - p), (1.0 / m1, 1.0 / m2)
    if isinstance(dist, PhaseMixture):
        return tuple(dist.probs), tuple(dist.rates)
    return None


def _min_of_phases(probs: tuple[float, ...], rates: tuple[float, ...], d: int) -> float:
    """Integral of (sum_i p_i exp(-r_i x))^d: over the multisets of d phases, the multinomial
    weight over the sum of their rates."""
    total = 0.0
    for combo in itertools.combinations_with_replacement(range(len(probs)), d):
        counts = np.bincount(combo, minlength=len(probs))
        weight = math.factorial(d) / math.prod(math.factorial(int(c)) for c in counts)
        total += weight * math.prod(p**int(c) for p, c in zip(probs, counts, strict=True)) / float(counts @ rates)
    return total


def _survival(dist: Distribution):
    """x -> P(X > x) for exponential mixtures, gamma (shape 1/SCV, scale mean SCV) and
    lognormal (sigma^2 = ln(1 + SCV)) laws, else None."""
    from scipy.special import erfc, gammaincc
    mix = _exponential_phases(dist)
    if mix is not None:  # too many copies to expand (``expected_min``)
        p, r = np.asarray(mix[0]), np.asarray(mix[1])
        return lambda x: float(p @ np.exp(-r * x))
    if isinstance(dist, Gamma):
        k, theta = 1.0 / dist.cv2, dist.mean * dist.cv2
        return lambda x: float(gammaincc(k, x / theta)) if x > 0 else 1.0
    if isinstance(dist, LogNormal):
        s2 = math.log1p(dist.cv2)
        mu = math.log(dist.mean) - s2 / 2.0
        return lambda x: float(0.5 * erfc((math.log(x) - mu) / math.sqrt(2.0 * s2))) if x > 0 else 1.0
    return None


def _min_of_sample(x: np.ndarray, d: int) -> float:
    """Integral of S(x)^d for the empirical survival S of sample ``x``: on [x_(i-1), x_(i))
    (sorted, x_(0) = 0) S = (n - i + 1) / n."""
    x = np.sort(x)
    n = x.size
    gaps = np.diff(x, prepend=0.0)
    return float(gaps @ ((n - np.arange(n)) / n) ** d)


class RedundancySystem(ControlSystem):
    name = "redundancy"
    block = "redundancy"
    kinds = ("control",)
    generates_actions = True

    # ------------------------------------------------------------------ the YAML block
    def reference_rate(self) -> float:
        """lambda*(d) of the first choice of d: the exact stability limit of d = 1 on
        redundancy_ps."""
        return float(self.capacities()[self.spec.block.choices[0]])

    @classmethod
    def expand(cls, cfg: Mapping[str, Any], base_dir: Path | None) -> dict[str, Any]:
        """A ``redundancy`` block stands for N single-server stations that every job may be
        copied to; it becomes those stations (``server1..N``), each leading to the exit."""
        raw = cfg["redundancy"]
        for key in ("stations", "entry", "routing", "actions"):
            if key in cfg:
                raise SpecError(key, "cannot be given with 'redundancy'",
                                "describe the servers in the redundancy block (servers, kind, size, copies, d)")
        if not isinstance(raw, Mapping):
            raise SpecError("redundancy", f"expected a mapping, got {brief(raw)}",
                            "give e.g. {servers: 10, kind: ps, copies: iid, size: {dist: exponential, mean: 1}, "
                            "d: [1, 2]}")
        check_keys(raw, REDUNDANCY_KEYS, "redundancy", what="a redundancy block")
        servers = raw.get("servers")
        if isinstance(servers, bool) or not isinstance(servers, (int, np.integer)) or not 1 <= servers <= 10_000:
            raise SpecError("redundancy.servers", f"must be a positive integer, got {brief(servers)}",
                            "give the number of servers N")
        kind = raw.get("kind", "ps")
        if kind not in cls.station_kinds:  # the block's own field: its stations are not the user's
            guess = did_you_mean(kind, cls.station_kinds) if isinstance(kind, str) else None
            raise SpecError("redundancy.kind", f"{brief(kind)} is not a kind of redundancy server",
                            (f"did you mean '{guess}'? " if guess else "")
                            + f"use one of {', '.join(cls.station_kinds)}")
        copies = raw.get("copies", "iid")
        if copies not in COPY_LAWS:
            raise SpecError("redundancy.copies", f"unknown joint law {brief(copies)}",
                            f"use one of {', '.join(COPY_LAWS)}")
        need = ("scale", "factor") if copies == "scaled" else ("size",)
        for key in ("size", "scale", "factor"):
            if (key in raw) != (key in need):
                raise SpecError(f"redundancy.{key}", "missing" if key in need else f"not used by copies: {copies}",
                                f"copies: {copies} takes {' and '.join(need)}")
        dists = {k: make_distribution(raw[k], f"redundancy.{k}", base_dir) for k in need}
        d = raw.get("d", [1])
        d = [d] if isinstance(d, (int, np.integer)) and not isinstance(d, bool) else d
        d_fix = "give the replication degrees the controller may choose, e.g. [1, 2, 3]"
        if not is_list(d) or not d or any(isinstance(x, bool) or not isinstance(x, (int, np.integer))
                                           or not 1 <= x <= servers for x in d):
            raise SpecError("redundancy.d", f"must be distinct integers in 1..{servers}, got {brief(d)}", d_fix)
        check_distinct(d, "redundancy.d", d_fix)
        spec_d = Redundancy(int(servers), kind, copies, tuple(int(x) for x in d), **dists)
        work = dists.get("size") or dists["factor"]  # per-station entry, replaced by the copy law's draws
        out = dict(cfg)
        del out["redundancy"]
        out["stations"] = [{"name": f"server{i + 1}", "servers": 1, "service": work, "kind": kind}
                           for i in range(servers)]
        out["actions"] = [f"d{x}" for x in spec_d.choices]
        out.setdefault("objective", "response_time")
        out["redundancy"] = spec_d
        return out

    def check_actions(self) -> None:
        """The actions are the block's degrees (d1, d2, ...), named by ``expand``."""

    # ------------------------------------------------------------------ the goal
    def describe(self) -> str:
        spec, red = self.spec, self.spec.block
        degrees = ", ".join(map(str, red.choices))
        load = spec.arrival_rate * red.expected_min(1) / red.servers
        return (f"{spec.name}: redundancy-d over {red.servers} {red.kind.upper()} servers ({red.copies} copies), "
                f"d in {{{degrees}}}, arrival rate {spec.arrival_rate:.4g} (load {load:.3g} at d = 1): "
                f"{self.headline.text(spec.eps)}")

    @property
    def overload_fix(self) -> str:
        return "copy jobs to fewer servers (smaller d)"

    # ------------------------------------------------------------------ stability
    def capacities(self) -> dict[int, float]:
        """Per allowed degree d, the largest arrival rate the servers can carry with every job
        copied d times (processor sharing: N / (d E[M_d]); FCFS: the certain bound N / E[M_d])."""
        red = self.spec.block
        share = red.kind == "ps"
        work = {d: (d if share else 1) * red.expected_min(d) for d in red.choices}
        return {d: red.servers / w if w > 0 else math.inf for d, w in work.items()}

    def stability_error(self) -> SpecError | None:
        spec, red = self.spec, self.spec.block
        caps = self.capacities()
        best = max(caps, key=caps.get)
        rate = spec.arrival_rate
        if rate < caps[best]:
            return None
        each = ", ".join(f"{caps[d]:.3g} with d = {d}" for d in caps)
        how = ("each job holds d servers until its first copy finishes" if red.kind == "ps"
               else "each job needs at least its shortest copy's work")
        return SpecError("redundancy.d", f"arrivals at rate {rate:.4g} exceed what the {red.servers} servers can "
                         f"serve with any allowed degree (at most {each}: {how}), so the number of jobs grows without "
                         "bound", "allow other degrees d, add servers or lower the arrival rate")

    # ------------------------------------------------------------------ simulation
    def routing(self):
        return CopyToD(self.spec)

    def kernel(self, eng):
        """Compiled over PS servers (FCFS servers run the NumPy loop)."""
        return PsRedundancyKernel(eng) if isinstance(eng.single_kind, PsKind) else None

    def encoding(self, include_in_service: bool = False):
        """Jobs per server sorted (the servers are exchangeable), then the total, then the jobs
        at the arriving job's own servers in its random order, as many as the largest d (its
        d copies join the first d: whether they are idle is what decides a good d); the busy
        servers are in those counts, so ``include_in_service`` does not apply."""
        spec = self.spec
        return ObservationEncoding(spec.num_stations, False, spec.num_classes, observed_period(spec), True,
                                   candidates=max(spec.block.choices))
