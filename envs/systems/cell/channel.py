"""A UE's own randomness, drawn when it arrives (``UEDraws``: session, initial CQI, channel
key), and its channel path as a function of its key alone (``channel_uniform``: the k-th CQI
move uses outputs 2k+1 and 2k+2 of SplitMix64 seeded with the key), so that a probe replays
the path the real cell would have seen without consuming random numbers."""

from __future__ import annotations

import numpy as np

from envs.systems.cell.spec import CellSpec

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def channel_uniform(key: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Output ``n`` (>= 1) of SplitMix64 seeded with ``key``, as a uniform in (0, 1)."""
    z = n.astype(np.uint64) * _GAMMA  # in place from here: many outputs at once in bulk moves
    z += key
    z ^= z >> _S30
    z *= _M1
    z ^= z >> _S27
    z *= _M2
    z ^= z >> _S31
    z >>= _S11
    u = z.astype(np.float64)
    u += 0.5
    u *= 1.0 / (1 << 53)
    return u


class UEDraws:
    """What a UE draws when it arrives: session length by its type's law, initial CQI by its
    type's law, and a channel key (only when some type's demand moves with the CQI)."""

    def __init__(self, cell: CellSpec):
        self.types = cell.types
        self.T = len(cell.types)
        init = np.array([t.cqi_init for t in cell.types])  # (T, 15)
        cum = np.cumsum(init, axis=1)
        for k, t in enumerate(cell.types):
            cum[k, t.cqi_range[1] - 1:] = 2.0  # never above the range, whatever the round-off
        self.cum = cum[:, :-1]
        fixed = init.max(1) == 1.0
        self.fixed_cqi = init.argmax(1) + 1 if fixed.all() else None
        self.keys = any(t.dynamic for t in cell.types)

    def sample(self, rng: np.random.Generator, typ: np.ndarray):
        m = typ.size
        if self.T == 1:
            session = self.types[0].session.sample(rng, m)
        else:
            session = np.empty(m)
            for k, t in enumerate(self.types):
                sel = np.flatnonzero(typ == k)
                if sel.size:
                    session[sel] = t.session.sample(rng, sel.size)
        if self.fixed_cqi is not None:
            cqi = self.fixed_cqi[typ]
        else:
            cqi = (rng.random(m)[:, None] >= self.cum[typ]).sum(1) + 1
        key = rng.bit_generator.random_raw(m) if self.keys else None
        return session, cqi, key
