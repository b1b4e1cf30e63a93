"""What the entry points in ``experiments/`` share."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable
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


ENGINE_OPTIONS = {"--engine": "engine", "--sim-threads": "sim_threads"}  # options of an invocation, not of a run


def engine_flags(p: argparse.ArgumentParser) -> None:
    """``--engine`` and ``--sim-threads``: which event loop simulates, on how many threads (``envs.compiled``)."""
    p.add_argument("--engine", choices=ENGINES, default=None,
                   help="event loop: compiled (the default: Numba, where the system has one, else NumPy) or numpy "
                        "(the reference); both give the same trajectory for a seed")
    p.add_argument("--sim-threads", type=int, default=None,
                   help="threads of the compiled loop (default: every core; 1 inside pytest-xdist)")


def use_engine_flags(args: argparse.Namespace) -> None:
    """Apply ``engine_flags`` to this process and the ones it spawns."""
    if args.engine is not None or args.sim_threads is not None:
        use_engine(args.engine or default_engine(), args.sim_threads)
