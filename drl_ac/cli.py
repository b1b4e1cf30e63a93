"""What the entry points in ``experiments/`` share."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import signal
import sys
import threading
import time
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from envs.compiled import ENGINES, default_engine, use_engine


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written, and every option's default (unless its help says it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default is None or "default" in text:
            return text
        return super()._get_help_string(action)


def progress_printer(quiet: bool) -> Callable[[str], None]:
    """``say(text)``: one line to stderr with the seconds since it was made (nothing when quiet)."""
    t0 = time.perf_counter()

    def say(text: str) -> None:
        if not quiet:
            print(f"[{time.perf_counter() - t0:6.0f} s] {text}", file=sys.stderr, flush=True)
    return say


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM (what schedulers and ``docker stop`` send) alike. While
    ``soft`` (the training loop) the first one only asks the loop to stop after the current
    step, so that the state is saved whole; otherwise, or the second time, it raises
    KeyboardInterrupt at once. ``signum`` is the first signal received (the exit code is
    128 + it)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self.soft = False
        self.previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return "SIGTERM" if self.signum == signal.SIGTERM else "Ctrl-C"

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    def _handle(self, signum: int, frame: Any) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        if not (first and self.soft):
            raise KeyboardInterrupt

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self.previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def __exit__(self, *exc: Any) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)


class UsageError(ValueError):
    """A flag the run cannot work with (exit code 2)."""


class FileProblem(RuntimeError):
    """A file or folder the run cannot read or write (exit code 1)."""


class Interrupted(Exception):
    """Ctrl-C or SIGTERM: the message says what was saved and how to go on (exit code 128 +
    the signal: 130, 143)."""


class Parser(argparse.ArgumentParser):
    """A command line whose errors are one line with the fix, not the usage and a message."""

    def error(self, message: str):
        self.exit(2, f"error: {message}. Fix: see {self.prog} --help.\n")


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (its source read by ``ast``), one line each."""
    body = ast.parse(inspect.getsource(cls)).body[0].body
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def flag_of(name: str) -> str:
    """A field's flag: ``--num-envs`` for ``num_envs``."""
    return "--" + name.replace("_", "-")


def _field_options(hint: Any, default: Any, doc: str) -> dict[str, Any]:
    """argparse's options of one field from its type: X | None reads X, a tuple one or more
    values, a bool is --flag / --no-flag; help is the field's docstring."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        hint = next(a for a in args if a is not type(None))
    options: dict[str, Any] = {"default": default, "help": doc.replace("%", "%%")}
    if hint is bool:
        options["action"] = argparse.BooleanOptionalAction
    elif typing.get_origin(hint) is tuple:
        options.update(type=typing.get_args(hint)[0], nargs="+")
        if default is not None:
            options["help"] += f" (default: {' '.join(map(str, default))})"
    else:
        options["type"] = hint
    return options


def dataclass_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type, preset: Any = None,
                    only: Iterable[str] | None = None, options: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """One flag per field of the dataclass ``cls`` (``only``: these fields), how the command
    lines of a run and a study are made: the default is ``preset``'s value (default ``cls()``), the
    help the field's docstring, the type read from its hint (``_field_options``); ``options``
    per field replace what is derived (choices, a parser, a default with its meaning). Returns
    the fields' names (argparse's dests)."""
    preset = cls() if preset is None else preset
    docs, hints, options = field_docs(cls), typing.get_type_hints(cls), options or {}
    names = [f.name for f in dataclasses.fields(cls)] if only is None else list(only)
    for name in names:
        derived = _field_options(hints[name], getattr(preset, name), docs.get(name, ""))
        p.add_argument(flag_of(name), **{**derived, **options.get(name, {})})
    return names


@dataclass
class EngineOptions:
    """Which event loop simulates, on how many threads (``envs.compiled``): options of an
    invocation, not of a run."""

    engine: str | None = None
    """event loop: compiled (the default: Numba, where the system has one, else NumPy) or numpy (the
    reference); both give the same trajectory for a seed"""
    sim_threads: int | None = None
    """threads of the compiled loop (default: every core; 1 inside pytest-xdist)"""


ENGINE_OPTIONS = {flag_of(f.name): f.name for f in dataclasses.fields(EngineOptions)}


def engine_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--engine`` and ``--sim-threads`` (``EngineOptions``)."""
    dataclass_flags(p, EngineOptions, options={"engine": {"choices": ENGINES}})


def use_engine_flags(args: argparse.Namespace) -> None:
    """Apply ``engine_flags`` to this process and the ones it spawns."""
    if args.engine is not None or args.sim_threads is not None:
        use_engine(args.engine or default_engine(), args.sim_threads)
