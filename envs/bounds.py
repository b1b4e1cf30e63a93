"""Finite upper bounds of every observation feature, for the Gymnasium observation space.

Every feature is bounded: counts of jobs by ``max_jobs`` (the job table's bound per
instance; past it the engine raises ``CapacityError``), busy servers by the servers, a cell's
PRBs by its capacity and its UEs of a type by the PRBs over the type's smallest demand,
one-hots by 1 and the phase features (1 + sin, 1 + cos) by 2. ``max_jobs`` is a hard bound,
not a scale: normalise queue counts by the servers (``ObservationEncoding.scale``) or with
a running normaliser (SB3's ``VecNormalize``), not by the space's ``high``.
"""

from __future__ import annotations

import numpy as np

from envs.observation import ObservationEncoding
from envs.spec import NetworkSpec
from envs.systems.cell.spec import NEVER


def observation_high(spec: NetworkSpec, encoding: ObservationEncoding, max_jobs: int) -> np.ndarray:
    """(encoding.width,) float32 upper bounds, in the encoding's feature order (the lower bound is 0)."""
    K = encoding.num_classes
    onehot = [np.ones(K)] if K > 1 else []
    phase = [np.full(2, 2.0)] if encoding.period else []
    if encoding.cell_bands >= 0:
        cell = spec.block
        table = cell.demand_table()
        ues = (cell.prbs // table.min(1)).astype(np.float64)  # each UE holds at least its type's least demand
        demand = float(table[table < NEVER].max())  # the arriving UE's demand, at a CQI in its range
        bands = [np.repeat(ues, encoding.cell_bands)] if encoding.cell_bands else []
        parts = [ues, [cell.prbs], *onehot, [demand], *phase, *bands]
    else:
        servers = spec.servers.astype(np.float64)
        jobs = np.full(spec.num_stations, float(max_jobs))
        parts = [jobs, [max_jobs]] if encoding.pool else [jobs]  # per server (sorted), then the total
        if encoding.include_in_service:
            parts.append(servers)
        parts += onehot + phase
        if encoding.info_width:
            parts.append(np.ones(encoding.info_width))
        if encoding.candidates:
            parts.append(np.full(encoding.candidates, float(max_jobs)))
    high = np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)
    if high.shape != (encoding.width,):  # a new feature in ObservationEncoding needs its bound here
        raise RuntimeError(f"observation_high: {high.size} bounds for {encoding.width} features. Fix: give the "
                           "new feature its bound here.")
    return high
