"""Finite upper bounds of every observation feature, for the Gymnasium observation space.

Every feature is bounded (each encoding says how: ``ObservationEncoding.high``): counts of
jobs by ``max_jobs`` (the job table's bound per instance; past it the engine raises
``CapacityError``), busy servers by the servers, a cell's PRBs by its capacity and its UEs of a
type by the PRBs over the type's smallest demand, one-hots by 1 and the phase features
(1 + sin, 1 + cos) by 2. ``max_jobs`` is a hard bound, not a scale: normalise queue counts by
the servers (``ObservationEncoding.scale``) or with a running normaliser (SB3's
``VecNormalize``), not by the space's ``high``.
"""

from __future__ import annotations

import numpy as np

from envs.observation import ObservationEncoding
from envs.spec import NetworkSpec


def observation_high(spec: NetworkSpec, encoding: ObservationEncoding, max_jobs: int) -> np.ndarray:
    """(encoding.width,) float32 upper bounds, in the encoding's feature order (the lower bound is 0)."""
    high = encoding.high(spec, max_jobs)
    if high.shape != (encoding.width,):  # a new feature in an encoding needs its bound there
        raise RuntimeError(f"observation_high: {high.size} bounds for {encoding.width} features. Fix: give the "
                           f"new feature its bound in {type(encoding).__name__}.high.")
    return high
