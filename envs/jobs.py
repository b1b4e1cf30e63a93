"""Per-instance record tables for B instances, with declared columns.

* ``SlotTable``: records in slots taken from a free list per instance; a record keeps its
  slot for life and K doubles (appending slots) when an instance has none free. Memory is
  bounded by the most records an instance holds at once, never by how long one of them
  lives. The engine's job table (job id = slot) and the learner's pending decisions use it.
* ``StepRing``: records keyed by a global step counter, in slot ``step % K``; K doubles
  when the step coming round meets a live record. Memory is bounded by the age of the
  oldest live record: for small records indexed by decision step (the store's index).

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


class _Records:
    """Declared columns of shape (rows, K, *shape) plus a ``live`` flag per record."""

    state_names: tuple[str, ...] = ()  # bookkeeping arrays besides live and the columns

    def __init__(self, rows: int, columns: Iterable[Column], capacity: int):
        self.rows = int(rows)
        self.columns = tuple(columns)
        self.live = np.zeros((self.rows, int(capacity)), bool)
        for c in self.columns:
            setattr(self, c.name, np.full((self.rows, int(capacity)) + c.shape, c.fill, dtype=c.dtype))

    @property
    def capacity(self) -> int:
        return self.live.shape[1]

    def names(self) -> list[str]:
        return [*self.state_names, "live", *(c.name for c in self.columns)]

    def get_state(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name).copy() for name in self.names()}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore ``get_state``'s arrays; a column the state lacks (declared since it was saved,
        e.g. the pools' ``front``) takes its fill, so older saved runs still resume."""
        fills = {c.name: c for c in self.columns}
        for name in self.names():
            if name not in state and name in fills:
                c = fills[name]
                setattr(self, name, np.full(np.shape(state["live"]) + c.shape, c.fill, dtype=c.dtype))
            else:
                setattr(self, name, np.array(state[name]))

    def _resize(self, resize: Callable[[np.ndarray, object], np.ndarray]) -> None:
        """Apply ``resize(array, fill)`` to live and every column."""
        self.live = resize(self.live, False)
        for c in self.columns:
            setattr(self, c.name, resize(getattr(self, c.name), c.fill))


class SlotTable(_Records):
    """Records whose instance takes and releases its own slots, from a free list per row.

    ``next_free()`` names the slot the next record of every instance will get (growing if
    some instance has none left); ``take`` claims it, ``release`` frees records. Slots never
    move, so arrays kept elsewhere per slot only need extending: ``on_grow(new_capacity)``
    runs before each growth, may refuse it (raise) to bound memory, and extends them.
    """

    state_names = ("free", "free_count")

    def __init__(self, rows: int, columns: Iterable[Column], capacity: int = 64,
                 on_grow: Callable[[int], None] | None = None):
        super().__init__(rows, columns, capacity)
        self.on_grow = on_grow
        k = self.capacity
        self.free = np.tile(np.arange(k - 1, -1, -1, dtype=np.int64), (self.rows, 1))  # a stack per row
        self.free_count = np.full(self.rows, k, np.int64)
        self._all = np.arange(self.rows)

    def next_free(self) -> np.ndarray:
        """(rows,) the slot each instance's next record takes (not yet taken)."""
        if not self.free_count.all():
            self.grow()
        return self.free.reshape(-1)[self.flat(self._all, self.free_count - 1)]

    def flat(self, rows: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Flat positions of records (rows[i], slots[i]) in a column's ``reshape(-1)`` view
        (times the value's size for a shaped column): NumPy gathers and scatters with one
        index array are markedly faster than with two."""
        return rows * self.capacity + slots

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Claim ``next_free()`` in ``rows`` (distinct); returns those slots."""
        count = self.free_count[rows] - 1
        slots = self.free.reshape(-1)[self.flat(rows, count)]
        self.free_count[rows] = count
        self.live.reshape(-1)[self.flat(rows, slots)] = True
        return slots

    def release(self, rows: np.ndarray, slots: np.ndarray) -> None:
        """Free the records (rows[i], slots[i]); a row may appear several times."""
        self.live.reshape(-1)[self.flat(rows, slots)] = False
        order = np.argsort(rows, kind="stable")
        r = rows[order]
        count = np.bincount(r, minlength=self.rows)
        rank = np.arange(r.size) - (np.cumsum(count) - count)[r]  # position among its row's releases
        self.free.reshape(-1)[self.flat(r, self.free_count[r] + rank)] = slots[order]
        self.free_count += count

    def clear(self, rows: np.ndarray, keep: np.ndarray) -> None:
        """Free every record of ``rows``; slot ``keep[i]`` becomes row i's next free one."""
        k = self.capacity
        self.live[rows] = False
        self.free[rows] = np.arange(k - 1, -1, -1)
        self.free[rows, k - 1 - keep] = 0  # swap slot keep (at depth k-1-keep) with slot 0 on top
        self.free[rows, k - 1] = keep
        self.free_count[rows] = k

    def grow(self) -> None:
        k, new = self.capacity, 2 * self.capacity
        if self.on_grow is not None:
            self.on_grow(new)
        free = np.empty((self.rows, new), np.int64)
        free[:, :k] = np.arange(new - 1, k - 1, -1)  # new slots under the old free ones
        free[:, k:] = self.free
        self.free = free
        self.free_count += k
        self._resize(lambda a, fill: extend(a, new, fill))


class StepRing(_Records):
    """Records keyed by a global step, in slot ``step % K``; K doubles when the step coming
    round meets a live record of an earlier step (records move to ``step % 2K``)."""

    state_names = ("slot_step",)

    def __init__(self, rows: int, columns: Iterable[Column], capacity: int = 64):
        super().__init__(rows, columns, capacity)
        k = self.capacity
        self.slot_step = np.arange(k, dtype=np.int64) - k  # steps in the past, congruent to their slot

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
        steps = np.arange(new, dtype=np.int64) - 2 * new
        steps[pos] = self.slot_step
        self.slot_step = steps
        self._resize(lambda a, fill: remap(a, pos, new, fill))


def remap(a: np.ndarray, pos: np.ndarray, new: int, fill) -> np.ndarray:
    """``a`` (rows, K, ...) with slot k moved to ``pos[k]`` of a (rows, new, ...) array."""
    out = np.full((a.shape[0], new) + a.shape[2:], fill, dtype=a.dtype)
    out[:, pos] = a
    return out


def extend(a: np.ndarray, new: int, fill) -> np.ndarray:
    """``a`` (rows, K, ...) with slots K..new-1 appended, filled with ``fill``."""
    out = np.full((a.shape[0], new) + a.shape[2:], fill, dtype=a.dtype)
    out[:, : a.shape[1]] = a
    return out
