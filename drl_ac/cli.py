"""What the entry points in ``experiments/`` share."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable


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
