"""Which event loop runs, and on how many threads: the one home of the engine setting.

Two engines simulate the same model. ``numpy`` (``envs.engine.Engine``'s own loop: one
NumPy operation per event over all instances) is the reference; ``compiled`` runs a
system's event loop compiled by Numba (one thread per group of instances, every instance
sequential in time order) where the system has one (``System.kernel``), and the NumPy loop
elsewhere. Both draw every random number in NumPy, in the same order, so a seed gives the
same trajectory in both (tests/envs/test_compiled.py holds them equal).

The setting lives in the environment (``DRL_AC_ENGINE``, ``DRL_AC_THREADS``) so that the
processes a study or a sweep spawns inherit it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

import numba

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from envs.engine import Engine
    from envs.kinds.base import State
    from envs.outcomes import Outcomes

# GNU OpenMP (Numba's default layer on Linux without TBB) aborts a process that forks after using
# it (gymnasium's AsyncVectorEnv, a fork-started pool): take a fork-safe layer unless the user chose
# one: TBB (a dependency where it has wheels), else the workqueue, which is half as fast on two
# threads and must not be entered by two threads at once (``LAUNCH``).
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "forksafe"
LAUNCH = threading.Lock()

ENGINES = ("numpy", "compiled")
ENGINE_VAR = "DRL_AC_ENGINE"
THREADS_VAR = "DRL_AC_THREADS"


def check_engine(name: str) -> str:
    if name not in ENGINES:
        raise ValueError(f"engine: unknown engine {name!r}. Fix: use one of {', '.join(ENGINES)} "
                         "(numpy is the reference loop, compiled the fast one).")
    return name


def default_engine() -> str:
    """The engine an ``Engine`` built without ``engine=`` uses: ``$DRL_AC_ENGINE``, else compiled."""
    return check_engine(os.environ.get(ENGINE_VAR, "compiled"))


def use_engine(name: str, threads: int | None = None) -> None:
    """Make ``name`` the default engine of this process and of the ones it spawns later;
    ``threads``: the compiled loop's threads (None: leave the setting as it is)."""
    os.environ[ENGINE_VAR] = check_engine(name)
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads: must be >= 1, got {threads}. Fix: give a positive number of threads.")
        os.environ[THREADS_VAR] = str(int(threads))


def threads() -> int:
    """Threads of the compiled loop: ``$DRL_AC_THREADS``; else one inside a pytest-xdist
    worker (the workers already use every core), else every core Numba sees. The loop and
    the network's update never run at once, so they need not share the cores."""
    if os.environ.get(THREADS_VAR):
        return max(1, int(os.environ[THREADS_VAR]))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return 1
    return int(numba.config.NUMBA_NUM_THREADS)


@contextmanager
def sharing_cores(processes: int) -> Iterator[None]:
    """Engines built inside take this process's share of the cores while ``processes``
    processes (this one included) run compiled loops at once: ``$DRL_AC_THREADS`` set to
    ``threads()`` over ``processes`` (at least 1), unless the user set it. Each process on every core
    oversubscribes them, and the threads of one spin while another's run: train.py on
    redundancy_ps, its rules measured by this process and two others, took 3 min 36 s that
    way, 85 s of it system time (2 min 46 s sharing)."""
    if os.environ.get(THREADS_VAR):
        yield
        return
    before = numba.get_num_threads()
    os.environ[THREADS_VAR] = str(max(1, threads() // max(1, processes)))
    try:
        yield
    finally:
        os.environ.pop(THREADS_VAR, None)
        numba.set_num_threads(before)  # engines built before, run after


class Kernel(Protocol):
    """A system's compiled event loop (``System.kernel``): does what ``Engine.run`` does, and
    where it has one, ``insert`` (``Engine.insert`` in one pass; None: the engine's own)."""

    insert: Callable | None

    def run(self, eng: Engine, st: State, inst: np.ndarray, horizon: np.ndarray, on_exit: Callable) -> None:
        """Process, per row and in time order, every event at time <= horizon (see ``Engine.run``)."""

    def arrive(self, eng: Engine, st: State, inst: np.ndarray, rows: np.ndarray, jid: np.ndarray, n: np.ndarray,
               when: np.ndarray) -> None:
        """Place jobs arriving at stations ``n`` (see ``Engine.arrive``); a loop with ``insert``
        and no moves between stations outside its event loop (redundancy) needs none."""

    def departures(self, eng: Engine, rows: np.ndarray, jid: np.ndarray, n: np.ndarray, when: np.ndarray
                   ) -> Outcomes:
        """The outcome rows of the jobs that left the real network, their slots freed (``Engine._departures``)."""
