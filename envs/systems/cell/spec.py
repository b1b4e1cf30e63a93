"""The ``cell:`` block of a system description: one 5G cell of C resource blocks shared by
UE types (docs/systems/cell.md), read and validated here; ``envs.systems.cell.station`` simulates it.

```yaml
cell:
  prbs: 106                     # capacity C in physical resource blocks
  drop: grown                   # or lowest_priority
  cqi_bands: [7, 11]            # optional: observe UEs per (type, CQI band) (bands 1-6, 7-10, 11-15)
  types:
    - name: video
      arrival: {dist: poisson, profile: {period: 24, table: [...]}}   # any arrival process of envs
      session: {dist: lognormal, mean: 1.0, scv: 2.0}                 # any distribution of envs
      gbr: 2.0                  # guaranteed bit rate, Mbit/s -> PRBs through the CQI (or prbs: 4, fixed)
      cqi: {up: 0.5, down: 0.5, init: [0, 0, 0, 0, 0, 0, 0.2, 0.3, 0.3, 0.2, 0, 0, 0, 0, 0], range: [1, 15]}
      priority: 1               # larger = kept longer under drop: lowest_priority
      handover: {dist: poisson, rate: 0.5}                            # optional, not controllable
```

PRB demand of a UE at CQI c (``gbr`` given): one PRB carries 12 subcarriers x 14 OFDM
symbols per 1 ms slot (15 kHz subcarrier spacing) = 168,000 resource elements per second,
each carrying ``efficiency(c)`` bits (3GPP TS 38.214 Table 5.2.2.1-2, 4-bit CQI table 1;
no overhead deducted), so demand = ceil(gbr * 1e6 / (168,000 * efficiency(c))) PRBs.
E.g. 1 Mbit/s at CQI 7 (1.4766 bit/RE): 1e6 / 248,069 = 4.03 -> 5 PRBs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.arrivals import ArrivalProcess, make_arrivals
from envs.distributions import Distribution, make_distribution
from envs.errors import SpecError, as_finite, brief, check_keys, did_you_mean, number_list

# 3GPP TS 38.214 Table 5.2.2.1-2 (4-bit CQI table 1): spectral efficiency (bits per resource element)
CQI_EFFICIENCY = (0.1523, 0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223,
                  3.9023, 4.5234, 5.1152, 5.5547)
RE_PER_PRB_PER_S = 12 * 14 * 1000  # 12 subcarriers x 14 symbols per 1 ms slot at 15 kHz SCS
CQI_LEVELS = 15
DROP_RULES = ("grown", "lowest_priority")
CELL_KEYS = ("prbs", "types", "drop", "cqi_bands")
TYPE_KEYS = ("name", "arrival", "session", "prbs", "gbr", "cqi", "priority", "handover")
CQI_KEYS = ("up", "down", "init", "range")
NEVER = 1 << 40  # demand of a CQI outside a type's range: never fits


def prbs_for_rate(gbr_mbps: float, cqi: np.ndarray | int) -> np.ndarray:
    """PRBs a guaranteed bit rate (Mbit/s) needs at CQI ``cqi`` (1..15): see the module text."""
    eff = np.asarray(CQI_EFFICIENCY)[np.asarray(cqi) - 1]
    need = gbr_mbps * 1e6 / (RE_PER_PRB_PER_S * eff)
    return np.ceil(need - 1e-9).astype(np.int64)  # an exact multiple is not rounded up by round-off


@dataclass(frozen=True)
class UEType:
    """One UE type: its arrivals (the controller decides on these), session law, demand
    (fixed ``prbs`` or ``gbr`` in Mbit/s through the CQI), channel process (a birth-death
    chain on CQI levels ``cqi_range`` moving up at rate ``cqi_up`` and down at ``cqi_down``,
    started from ``cqi_init`` = P(CQI = c) for c = 1..15), priority and handover arrivals."""

    name: str
    arrival: ArrivalProcess
    session: Distribution
    prbs: int | None = None
    gbr: float | None = None
    cqi_up: float = 0.0
    cqi_down: float = 0.0
    cqi_init: tuple[float, ...] = (0.0,) * 14 + (1.0,)
    cqi_range: tuple[int, int] = (1, CQI_LEVELS)
    priority: int = 0
    handover: ArrivalProcess | None = None

    def demands(self) -> np.ndarray:
        """(16,) PRBs at CQI 0..15 (index 0 unused; NEVER outside the range)."""
        out = np.full(CQI_LEVELS + 1, NEVER, np.int64)
        lo, hi = self.cqi_range
        levels = np.arange(lo, hi + 1)
        out[levels] = self.prbs if self.prbs is not None else prbs_for_rate(self.gbr, levels)
        return out

    @property
    def dynamic(self) -> bool:
        """Its demand can change during a session (channel moves and demand depends on it)."""
        d = self.demands()[self.cqi_range[0]:self.cqi_range[1] + 1]
        return (self.cqi_up > 0 or self.cqi_down > 0) and d.min() != d.max()


@dataclass(frozen=True)
class CellSpec:
    """A cell of ``prbs`` PRBs shared by ``types``; ``drop``: which UE a grown demand that
    no longer fits terminates (``grown``: that UE; ``lowest_priority``: UEs of the lowest
    priority first, the grown one first among them, then the latest admitted)."""

    prbs: int
    types: tuple[UEType, ...]
    drop: str = "grown"
    cqi_bands: tuple[int, ...] = ()

    def demand_table(self) -> np.ndarray:
        """(types, 16) PRBs per type and CQI."""
        return np.stack([t.demands() for t in self.types])

    @property
    def sessions(self) -> int:
        """Most sessions the cell can hold at once (C / the smallest demand)."""
        return int(self.prbs // self.demand_table().min())

    def to_dict(self, dist, process) -> dict[str, Any]:
        types = []
        for t in self.types:
            d: dict[str, Any] = {"name": t.name, "arrival": process(t.arrival), "session": dist(t.session),
                                 "priority": t.priority}
            if t.prbs is not None:
                d["prbs"] = t.prbs
            else:
                d["gbr"] = t.gbr
            d["cqi"] = {"up": t.cqi_up, "down": t.cqi_down, "init": list(t.cqi_init), "range": list(t.cqi_range)}
            if not t.cqi_up:
                del d["cqi"]["up"]
            if not t.cqi_down:
                del d["cqi"]["down"]
            if t.handover is not None:
                d["handover"] = process(t.handover)
            types.append(d)
        out: dict[str, Any] = {"prbs": self.prbs, "drop": self.drop, "types": types}
        if self.cqi_bands:
            out["cqi_bands"] = list(self.cqi_bands)
        return out


def _int(value: Any, field: str, low: int, high: int, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise SpecError(field, f"must be an integer in {low}..{high}, got {brief(value)}", fix)
    return int(value)


def _rate(value: Any, field: str) -> float:
    fix = "give a positive rate (moves per unit time), or omit it for a channel that never moves that way"
    x = as_finite(value, field, fix)
    if x <= 0:
        raise SpecError(field, f"a rate must be > 0, got {brief(value)}", fix)
    return x


def _cqi(raw: Any, field: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise SpecError(field, f"expected a mapping, got {brief(raw)}",
                        "give e.g. {up: 0.5, down: 0.5, init: 9, range: [1, 15]}")
    check_keys(raw, CQI_KEYS, field, what="a CQI process")
    out: dict[str, Any] = {}
    lo, hi = 1, CQI_LEVELS
    if "range" in raw:
        r = raw["range"]
        if not isinstance(r, Sequence) or isinstance(r, (str, bytes)) or len(r) != 2:
            raise SpecError(field + ".range", f"expected [lowest, highest] CQI, got {brief(r)}",
                            "give two CQI levels in 1..15, e.g. [4, 12]")
        lo = _int(r[0], field + ".range[0]", 1, CQI_LEVELS, "CQI levels are 1..15")
        hi = _int(r[1], field + ".range[1]", lo, CQI_LEVELS, f"give a level in {lo}..15 (not below the lowest)")
        out["cqi_range"] = (lo, hi)
    for key, name in (("up", "cqi_up"), ("down", "cqi_down")):
        if key in raw:
            out[name] = _rate(raw[key], f"{field}.{key}")
    init = raw.get("init")
    law = np.zeros(CQI_LEVELS)
    if init is None:
        law[lo - 1:hi] = 1.0 / (hi - lo + 1)  # uniform over the range
    elif isinstance(init, (int, np.integer)) and not isinstance(init, bool):
        c = _int(init, field + ".init", lo, hi, f"give a CQI in the range {lo}..{hi}, or a list of probabilities")
        law[c - 1] = 1.0
    else:
        fix = f"give {CQI_LEVELS} probabilities (CQI 1..15) summing to 1, zero outside the range {lo}..{hi}"
        p = number_list(init, field + ".init", "probabilities", fix,
                        lambda x: None if math.isfinite(x) and 0 <= x <= 1 else "a probability must lie in [0, 1]")
        if len(p) != CQI_LEVELS:
            raise SpecError(field + ".init", f"{len(p)} probabilities, expected one per CQI 1..15", fix)
        law = np.asarray(p)
        outside = np.flatnonzero(law * ((np.arange(1, 16) < lo) | (np.arange(1, 16) > hi)))
        if outside.size:
            raise SpecError(f"{field}.init[{outside[0]}]", f"CQI {outside[0] + 1} lies outside the range {lo}..{hi}",
                            fix)
        if abs(law.sum() - 1.0) > 1e-6:
            raise SpecError(field + ".init", f"probabilities sum to {law.sum():.6g}", fix)
        law = law / law.sum()
    out["cqi_init"] = tuple(float(x) for x in law)
    return out


def _ue_type(raw: Any, field: str, base_dir: Path | None) -> UEType:
    example = "{name: voice, arrival: {dist: poisson, rate: 2}, session: {dist: exponential, mean: 1}, prbs: 1}"
    if not isinstance(raw, Mapping):
        raise SpecError(field, f"expected a mapping, got {brief(raw)}", f"give e.g. {example}")
    check_keys(raw, TYPE_KEYS, field, what="a UE type")
    for key in ("arrival", "session"):
        if key not in raw:
            raise SpecError(f"{field}.{key}", "missing", f"give e.g. {example}")
    if ("prbs" in raw) == ("gbr" in raw):
        raise SpecError(field, "give exactly one of 'prbs' (fixed demand) and 'gbr' (Mbit/s, demand through the CQI)",
                        "e.g. prbs: 2, or gbr: 1.5 with a cqi block")
    kw: dict[str, Any] = {}
    if "prbs" in raw:
        kw["prbs"] = _int(raw["prbs"], field + ".prbs", 1, 1 << 30, "give the PRBs a UE of this type holds")
    else:
        g = as_finite(raw["gbr"], field + ".gbr", "give the guaranteed bit rate in Mbit/s")
        if g <= 0:
            raise SpecError(field + ".gbr", f"must be > 0 Mbit/s, got {brief(raw['gbr'])}",
                            "give the guaranteed bit rate in Mbit/s")
        kw["gbr"] = g
    kw.update(_cqi(raw.get("cqi"), field + ".cqi"))
    if "priority" in raw:
        kw["priority"] = _int(raw["priority"], field + ".priority", -1000, 1000, "give an integer; larger is kept longer")
    if raw.get("handover") is not None:
        kw["handover"] = make_arrivals(raw["handover"], field + ".handover", base_dir)
    name = raw.get("name", field.rsplit(".", 1)[-1])
    if isinstance(name, bool) or not isinstance(name, (str, int)) or not str(name).strip():
        raise SpecError(field + ".name", f"expected a name, got {brief(name)}", "give the type a short name, e.g. video")
    return UEType(str(name), make_arrivals(raw["arrival"], field + ".arrival", base_dir),
                  make_distribution(raw["session"], field + ".session", base_dir), **kw)


def make_cell(raw: Any, base_dir: Path | None = None) -> CellSpec:
    """Read a ``cell:`` block; every problem is a SpecError naming the field."""
    example = "{prbs: 10, types: [{name: ue, arrival: {dist: poisson, rate: 7}, session: {dist: exponential, mean: 1}, prbs: 1}]}"
    if not isinstance(raw, Mapping):
        raise SpecError("cell", f"expected a mapping, got {brief(raw)}", f"give e.g. {example}")
    check_keys(raw, CELL_KEYS, "cell", what="a cell block")
    if "prbs" not in raw:
        raise SpecError("cell.prbs", "missing", "give the cell's capacity in PRBs, e.g. 106 (20 MHz at 15 kHz)")
    prbs = _int(raw["prbs"], "cell.prbs", 1, 100_000, "give the cell's capacity in PRBs, e.g. 106")
    drop = raw.get("drop", "grown")
    if drop not in DROP_RULES:
        guess = did_you_mean(drop, DROP_RULES)
        raise SpecError("cell.drop", f"unknown drop rule {brief(drop)}",
                        (f"did you mean '{guess}'? " if guess else "") + f"use one of {', '.join(DROP_RULES)}")
    types_raw = raw.get("types")
    if not isinstance(types_raw, Sequence) or isinstance(types_raw, (str, bytes)) or not types_raw:
        raise SpecError("cell.types", f"must be a non-empty list, got {brief(types_raw)}", f"give e.g. {example}")
    types = tuple(_ue_type(t, f"cell.types[{i}]", base_dir) for i, t in enumerate(types_raw))
    names = [t.name for t in types]
    for i, t in enumerate(types):
        if names.index(t.name) != i:
            raise SpecError(f"cell.types[{i}].name", f"duplicate type name {t.name!r}", "give every type a unique name")
        lo, hi = t.cqi_range
        fewest = int(t.demands()[lo:hi + 1].min())
        if fewest > prbs:
            what = "prbs" if t.prbs is not None else "gbr"
            raise SpecError(f"cell.types[{i}].{what}",
                            f"needs {fewest} PRBs even at its best CQI ({hi}), above the cell's {prbs}",
                            "lower the demand or the bit rate, or raise cell.prbs")
    bands_raw = raw.get("cqi_bands", [])
    bands = []
    for i, b in enumerate(bands_raw if isinstance(bands_raw, Sequence) and not isinstance(bands_raw, str) else [None]):
        bands.append(_int(b, f"cell.cqi_bands[{i}]", (bands[-1] + 1) if bands else 2, CQI_LEVELS,
                          "give increasing CQI levels in 2..15 where a new band starts, e.g. [7, 11]"))
    return CellSpec(prbs, types, drop, tuple(bands))
