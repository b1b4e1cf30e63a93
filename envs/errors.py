"""One error type for bad network descriptions, so users see the field and the fix.

Also the small checks every reader of a description shares: refusing keys it does not
know (with a "did you mean" hint), naming a repeated entry, and reading numbers without
letting YAML's booleans (``yes``/``no``) or huge integers slip through; and those of the
environments' inputs (``horizon``, actions), which the single and the vector env share.
"""

from __future__ import annotations

import difflib
import math
import reprlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

_SHORT = reprlib.Repr()
_SHORT.maxstring = 60
_SHORT.maxother = 60
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 6
_SHORT.maxlevel = 3


class SpecError(ValueError):
    """A network description is invalid. The message names the field, the problem and the fix."""

    def __init__(self, field: str, problem: str, fix: str):
        self.field = field
        self.problem = problem
        self.fix = fix
        super().__init__(f"{field}: {problem}. Fix: {fix}.")


def brief(value: Any) -> str:
    """A short repr of a user value for error messages (long lists and strings are cut)."""
    return _SHORT.repr(value)


def did_you_mean(word: Any, choices: Iterable[str], aliases: Mapping[str, str] | None = None) -> str | None:
    """The closest known choice to a misspelt ``word``, or None when nothing is close."""
    text = str(word)
    if aliases and text.lower() in aliases:
        return aliases[text.lower()]
    close = difflib.get_close_matches(text, [str(c) for c in choices], n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(text.lower(), [str(c) for c in choices], n=1, cutoff=0.6)
    return close[0] if close else None


def check_keys(cfg: Mapping[Any, Any], allowed: Iterable[str], field: str, *, what: str = "",
               aliases: Mapping[str, str] | None = None, key_in_field: bool = True) -> None:
    """Raise SpecError on the first key of ``cfg`` that is not in ``allowed``.

    The error names ``field.key`` (or just ``field`` when ``key_in_field`` is False), says
    which keys are known (``what`` describes the mapping, e.g. "a station") and suggests
    the closest known key.
    """
    allowed = tuple(allowed)
    for key in cfg:
        if isinstance(key, str) and key in allowed:
            continue
        name = str(key)
        where = (f"{field}.{name}" if field else name) if key_in_field else (field or "<spec>")
        guess = did_you_mean(name, allowed, aliases)
        hint = f"did you mean '{guess}'? " if guess else "remove it; "
        raise SpecError(where, f"unknown key {brief(key)}",
                        f"{hint}{what + ' takes only' if what else 'known keys are'} {', '.join(allowed)}")


def check_distinct(values: Sequence[Any], field: str, fix: str) -> None:
    """Raise SpecError on the first entry of ``values`` equal to an earlier one, naming both
    (``field[j]``), so a long list is not repeated back to find the duplicate in."""
    first: dict[Any, int] = {}
    for j, value in enumerate(values):
        i = first.setdefault(value, j)
        if i != j:
            raise SpecError(f"{field}[{j}]", f"repeats {field}[{i}] (both are {brief(value)})", fix)


def as_number(value: Any, field: str, fix: str = "give a number") -> float:
    """``float(value)``, as a SpecError on anything that is not a real number.

    Booleans are refused (YAML reads ``yes``/``no``/``true`` as booleans, which Python
    would silently treat as 1 and 0); numeric strings are accepted because PyYAML reads
    ``1e3`` (no dot) as a string. The result may be nan or inf: callers check ranges.
    """
    if isinstance(value, (bool, np.bool_)):
        raise SpecError(field, f"expected a number, got the boolean {value!r}", fix)
    if isinstance(value, (bytes, bytearray)):
        raise SpecError(field, f"expected a number, got {brief(value)}", fix)
    try:
        return float(value)
    except OverflowError:
        raise SpecError(field, f"number too large: {brief(value)}", fix) from None
    except (TypeError, ValueError):
        raise SpecError(field, f"not a number: {brief(value)}", fix) from None


def as_finite(value: Any, field: str, fix: str = "give a finite number") -> float:
    x = as_number(value, field, fix)
    if not math.isfinite(x):
        raise SpecError(field, f"must be finite, got {brief(value)}", fix)
    return x


def number_list(raw: Any, field: str, what: str, fix: str,
                problem: Callable[[float], str | None]) -> tuple[float, ...]:
    """A non-empty list of numbers (``what``: e.g. "observed times"); ``problem(x)`` says
    what is wrong with one entry, or None. Errors name the entry, e.g. ``values[3]``."""
    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    if isinstance(raw, (str, bytes, bytearray, Mapping)) or not isinstance(raw, Sequence):
        raise SpecError(field, f"expected a list of {what}, got {brief(raw)}", fix)
    if len(raw) == 0:
        raise SpecError(field, "the list is empty", fix)
    values = []
    for i, v in enumerate(raw):
        x = as_number(v, f"{field}[{i}]", fix)
        wrong = problem(x)
        if wrong is not None:
            raise SpecError(f"{field}[{i}]", f"{wrong}, got {brief(v)}", fix)
        values.append(x)
    return tuple(values)


def as_horizon(value: Any, option: str = "horizon") -> int | None:
    """Steps after which an environment truncates: None (never) or an integer >= 1. Anything
    else is refused rather than compared against: 0 or -1 would truncate on every other step,
    2.5 after 3."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise SpecError(option, f"must be an integer >= 1 (the steps before truncation), got {brief(value)}",
                        f"give a whole number of steps, e.g. {option}=1000, or leave it out (None) to never truncate")
    return int(value)


def check_actions(actions: Any, shape: tuple[int, ...], names: Sequence[str]) -> np.ndarray:
    """``actions`` as an integer array of ``shape`` ((B,): one per instance; (): one action)
    indexing ``names``, else a ValueError naming the value given, what is allowed and the fix.

    Nothing is converted: a float (0.9999 would become 0) or a string is refused, as a Gymnasium
    ``Discrete`` space refuses it, and so is a boolean (which ``Discrete`` takes for 0 or 1: a
    yes is no choice's index); NumPy integer scalars and arrays pass."""
    k = len(names)
    try:
        arr = np.asarray(actions)
    except (TypeError, ValueError):  # ragged lists
        arr = np.asarray(None)
    if arr.shape == shape and arr.dtype.kind in "iu" and (arr.size == 0 or (arr.min() >= 0 and arr.max() < k)):
        return arr  # the hot path (every Driver.step): no message built
    field = "actions" if shape else "action"
    fix = (f"Fix: give {'one action per instance' if shape else 'one action'}, an integer: "
           + ", ".join(f"{i} {name}" for i, name in enumerate(names)) + ".")
    if arr.shape != shape or arr.dtype.kind not in "iu":
        want = f"an integer array of shape {shape}" if shape else "an integer"
        kind = f"shape {arr.shape}, dtype {arr.dtype}" if isinstance(actions, np.ndarray) else type(actions).__name__
        raise ValueError(f"{field}: expected {want} in [0, {k}), got {brief(actions)} ({kind}). {fix}")
    if arr.min() < 0 or arr.max() >= k:
        if not shape:
            raise ValueError(f"action: {arr} is not in [0, {k}). {fix}")
        bad = np.flatnonzero((arr < 0) | (arr >= k))
        which = ", ".join(f"{arr[i]} at instance {i}" for i in bad[:3]) + (
            f" and {bad.size - 3} more" if bad.size > 3 else "")
        raise ValueError(f"actions: {'action' if bad.size == 1 else 'actions'} {which} "
                         f"{'is' if bad.size == 1 else 'are'} not in [0, {k}). {fix}")
    return arr


def is_list(value: Any) -> bool:
    """A YAML list (any sequence but a string)."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))
