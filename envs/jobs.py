"""A table of per-step records for B instances: the job table of the engine and the
decision ring of the learner's delayed-completion store are both this one structure.

Records are keyed by a global step counter (the decision step: every instance takes one
decision per step), stored in slot ``step % K``. A slot is *live* while its record is
still needed (a job in the network, a decision awaiting its outcome). When the step that
comes round to a live slot is claimed, K doubles and every record moves to
``step % 2K``; ids keep their order, memory is bounded by the oldest live record, never
by the run length, and nothing is ever dropped.

Columns are declared, not hard-wired: a station kind or a dispatch rule that needs a new
per-job attribute (a class, a copy size, a type signal) adds one ``Column``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Column:
    """One per-record attribute: ``shape`` is the shape of one record's value."""

    name: str
    shape: tuple[int, ...] = ()
    dtype: type = np.float64
    fill: float | int | bool = 0


class StepRing:
    """Columns of shape (rows, K, *shape) indexed by (row, step % K), doubling on demand.

    ``on_grow(pos, new_capacity)`` runs before each growth: it may refuse it (raise) to
    bound memory, or move arrays kept elsewhere that are indexed by slot (``remap``).
    """

    def __init__(self, rows: int, columns: Iterable[Column], capacity: int = 64,
                 on_grow: Callable[[np.ndarray, int], None] | None = None):
        self.rows = int(rows)
        self.columns = tuple(columns)
        self.on_grow = on_grow
        k = int(capacity)
        self.slot_step = np.arange(k, dtype=np.int64) - k  # ids in the past, congruent to their slot
        self.live = np.zeros((self.rows, k), bool)
        for col in self.columns:
            setattr(self, col.name, np.full((self.rows, k) + col.shape, col.fill, dtype=col.dtype))

    @property
    def capacity(self) -> int:
        return self.slot_step.size

    def names(self) -> list[str]:
        return ["slot_step", "live", *(c.name for c in self.columns)]

    def claim(self, step: int) -> int:
        """The slot of ``step``, growing until no live record of another step sits there."""
        while self.slot_step[step % self.capacity] != step and self.live[:, step % self.capacity].any():
            self.grow()
        slot = step % self.capacity
        self.slot_step[slot] = step
        return slot

    def grow(self) -> None:
        new = 2 * self.capacity
        pos = self.slot_step % new  # distinct: old slots are distinct mod old, hence mod new
        if self.on_grow is not None:
            self.on_grow(pos, new)
        steps = np.arange(new, dtype=np.int64) - 2 * new
        steps[pos] = self.slot_step
        self.slot_step = steps
        for name in ["live", *(c.name for c in self.columns)]:
            fill = False if name == "live" else next(c.fill for c in self.columns if c.name == name)
            setattr(self, name, remap(getattr(self, name), pos, new, fill))

    def get_state(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name).copy() for name in self.names()}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        for name in self.names():
            setattr(self, name, np.array(state[name]))


def remap(a: np.ndarray, pos: np.ndarray, new: int, fill) -> np.ndarray:
    """``a`` (rows, K, ...) with slot k moved to ``pos[k]`` of a (rows, new, ...) array."""
    out = np.full((a.shape[0], new) + a.shape[2:], fill, dtype=a.dtype)
    out[:, pos] = a
    return out
