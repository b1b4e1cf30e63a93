"""The CTMC of a small cell spec (``envs.systems.cell.spec.CellSpec``), in the form ``admission_lp``
and ``evaluate_admission_policy`` of ``envs.systems.cell.theory`` take.

State: the number of UEs per (type, CQI level in the type's range). Exact for Poisson
arrivals at constant rates, exponential sessions, drop rule ``grown`` and no handovers
(other settings are refused: the state would need more than counts). Request streams:
one per (type, initial CQI): the controller sees the arriving UE's type and demand, so
it may treat each stream differently. Moves: a session ends (rate n / mean session), a
UE's CQI moves up or down (rate n * up, n * down, inside the range); a move whose new
demand does not fit drops that UE (drops = 1).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from envs.arrivals import RenewalArrivals
from envs.distributions import Exponential


@dataclass
class CellChain:
    states: list[tuple[int, ...]]  # counts per (type, level), in ``slots`` order
    slots: list[tuple[int, int]]  # (type, CQI level)
    request_rates: np.ndarray  # (S, K): K = request streams (type, initial CQI)
    admit_to: np.ndarray  # (S, K)
    transitions: list[tuple[int, int, float, float]]
    streams: list[tuple[int, int]]  # (type, initial CQI) of each request stream


def cell_chain(cell) -> CellChain:
    if cell.drop != "grown":
        raise ValueError("cell_chain: only drop: grown keeps the state to counts per (type, CQI)")
    rates, means = [], []
    for t in cell.types:
        if t.handover is not None:
            raise ValueError("cell_chain: handover arrivals are not modelled")
        if not (isinstance(t.arrival, RenewalArrivals) and isinstance(t.arrival.dist, Exponential)):
            raise ValueError(f"cell_chain: type {t.name} needs Poisson arrivals at a constant rate")
        if not isinstance(t.session, Exponential):
            raise ValueError(f"cell_chain: type {t.name} needs exponential sessions")
        rates.append(1.0 / t.arrival.dist.mean)
        means.append(t.session.mean)
    table = cell.demand_table()
    slots = [(k, c) for k, t in enumerate(cell.types) for c in range(t.cqi_range[0], t.cqi_range[1] + 1)]
    demand = np.array([table[k, c] for k, c in slots])
    most = [cell.prbs // d for d in demand]
    states = [s for s in itertools.product(*(range(m + 1) for m in most)) if np.dot(s, demand) <= cell.prbs]
    index = {s: i for i, s in enumerate(states)}
    streams = [(k, c) for k, c in slots if cell.types[k].cqi_init[c - 1] > 0]
    lam = np.zeros((len(states), len(streams)))
    to = np.full((len(states), len(streams)), -1, np.int64)
    trans: list[tuple[int, int, float, float]] = []
    for i, s in enumerate(states):
        used = int(np.dot(s, demand))
        for j, (k, c) in enumerate(streams):
            lam[i, j] = rates[k] * cell.types[k].cqi_init[c - 1]
            a = slots.index((k, c))
            if used + demand[a] <= cell.prbs:
                to[i, j] = index[s[:a] + (s[a] + 1,) + s[a + 1:]]
        for a, (k, c) in enumerate(slots):
            n = s[a]
            if not n:
                continue
            gone = s[:a] + (n - 1,) + s[a + 1:]
            trans.append((i, index[gone], n / means[k], 0.0))
            t = cell.types[k]
            if not t.dynamic:
                continue
            for step, rate in ((1, t.cqi_up), (-1, t.cqi_down)):
                if not rate or not t.cqi_range[0] <= c + step <= t.cqi_range[1]:
                    continue
                b = slots.index((k, c + step))
                moved = list(gone)
                moved[b] += 1
                if used - demand[a] + demand[b] <= cell.prbs:
                    trans.append((i, index[tuple(moved)], n * rate, 0.0))
                else:
                    trans.append((i, index[gone], n * rate, 1.0))  # the grown UE is dropped
    return CellChain(states, slots, lam, to, trans, streams)


def chain_observations(chain: CellChain, cell, layout) -> np.ndarray:
    """What a controller observes (``envs.systems.cell.observation.CellLayout``, no period) when a request
    of each stream arrives in each state: (S, K, width), so a learned policy can be read as
    the chain's admission table (``evaluate_admission_policy``) and judged exactly."""
    if layout.phase is not None:
        raise ValueError("chain_observations: a chain has no time of day; the layout observes a period")
    table = cell.demand_table()
    T = len(cell.types)
    bands = np.zeros(16, np.int64)
    for edge in cell.cqi_bands:
        bands[edge:] += 1
    nb = len(cell.cqi_bands) + 1
    width = layout.demand + 1 + (T * nb if layout.bands is not None else 0)
    obs = np.zeros((len(chain.states), len(chain.streams), width), np.float32)
    for i, state in enumerate(chain.states):
        for (k, c), n in zip(chain.slots, state, strict=True):
            obs[i, :, layout.ues.start + k] += n
            obs[i, :, layout.used] += n * table[k, c]
            if layout.bands is not None:
                obs[i, :, layout.bands.start + k * nb + bands[c]] += n
        for j, (k, c) in enumerate(chain.streams):
            if layout.onehot is not None:
                obs[i, j, layout.onehot.start + k] = 1.0
            obs[i, j, layout.demand] = table[k, c]
    return obs
