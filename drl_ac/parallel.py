"""Work in other processes, one module for every caller: a sweep's trials and a study's loads
(``run_jobs``: in this process, a pool of local processes, or Ray tasks), the rules tuned
beside a training run and the cell's experiment jobs (``Worker``: one spawned process whose
results stream back while this one goes on).

Processes are spawned (fresh interpreters), never forked: a fork copies torch's thread pools
and any lock held at that moment, and a job's numbers must depend on the job alone (its
seeds), not on where it ran.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

RAY_HINT = 'Ray is not installed. Fix: pip install -e ".[distributed]" (or pip install ray)'
SPAWN = multiprocessing.get_context("spawn")


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def ray_connect(ray: Any, address: str | None) -> bool:
    """Connect to Ray unless this process already is; True when this call connected (and so
    should disconnect). address None (or "", "local"): start a fresh local Ray, no dashboard;
    "auto": the cluster in RAY_ADDRESS or one started with `ray start` on this machine;
    "host:6379": join that cluster's head directly; "ray://host:10001": a remote cluster through
    Ray Client. An already initialised Ray (e.g. the caller's ray.init) is used as it is."""
    if ray.is_initialized():
        return False
    if address in (None, "", "local"):
        ray.init(address="local", include_dashboard=False, log_to_driver=False)
    else:
        try:
            ray.init(address=address)
        except ConnectionError as exc:
            raise RuntimeError(f"no Ray cluster at {address!r} ({exc}). Fix: start one (ray start --head), "
                               "set RAY_ADDRESS, or leave the address out for a local Ray") from exc
    return True


def run_jobs(fn: Callable[[dict], Any], jobs: list[dict], workers: int = 1, ray: str | None = None,
             cpus: Callable[[dict], int] = lambda job: 1) -> Iterator[Any]:
    """``fn`` over ``jobs``, each result yielded in order as soon as it is there (a caller can
    write a job's files then: a later job's failure keeps them): as Ray tasks when ``ray`` is
    given (an address, see ``ray_connect``; ``cpus(job)`` CPUs each; a connection made here is
    closed at the end), else in a pool of ``workers`` spawned processes, else (one worker or
    one job) in this process. ``fn`` must be importable by name (a module's function)."""
    if ray is not None:
        try:
            import ray as ray_module
        except ImportError:
            raise RuntimeError(RAY_HINT) from None
        connected = ray_connect(ray_module, ray)
        try:
            remote = ray_module.remote(fn)
            for ref in [remote.options(num_cpus=cpus(j)).remote(j) for j in jobs]:
                yield ray_module.get(ref)
        finally:
            if connected:
                ray_module.shutdown()
    elif workers <= 1 or len(jobs) <= 1:
        yield from map(fn, jobs)
    else:
        with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=SPAWN) as pool:
            yield from pool.map(fn, jobs)


class Worker:
    """``fn(*args, **kwargs)`` in a spawned process, started now. With ``stream`` it is called
    as ``fn(send, *args, **kwargs)`` and may ``send`` several results; else its return value is
    the one result. ``recv`` takes the next (``EOFError`` when the process ended without one:
    it failed, was killed, or could not start, e.g. a script read from standard input cannot
    be re-imported by it; ``WorkerFailed``, an ``EOFError``, when it raised or its result could
    not be pickled, with the traceback); ``ready`` says whether ``recv`` would not wait;
    ``cancel`` stops it.
    The process ignores Ctrl-C: the caller decides, and cancels it on its way out."""

    def __init__(self, fn: Callable[..., Any], *args: Any, stream: bool = False, **kwargs: Any):
        self._receive, send = SPAWN.Pipe(duplex=False)
        self.process = SPAWN.Process(target=_serve, args=(send, fn, args, kwargs, stream), daemon=True)
        self.process.start()
        send.close()  # only the child holds the sending end: its death reads as EOF here

    def recv(self) -> Any:
        try:
            item = self._receive.recv()
        except EOFError:
            self.process.join(10)  # its end is known, its exit code there once it is reaped
            raise
        if isinstance(item, WorkerFailed):
            self.process.join(10)
            raise item
        return item

    def ready(self) -> bool:
        return self._receive.poll() or not self.process.is_alive()

    def cancel(self) -> None:
        self.process.terminate()
        self.process.join()
        self._receive.close()


class WorkerFailed(EOFError):
    """A ``Worker``'s function raised, or its result could not be sent back: no (more)
    results; the message holds the traceback."""


def _serve(send: Any, fn: Callable[..., Any], args: tuple, kwargs: dict, stream: bool) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if stream:
            fn(send.send, *args, **kwargs)
        else:
            send.send(fn(*args, **kwargs))
    except Exception:  # noqa: BLE001 - the caller gets the failure as its result
        send.send(WorkerFailed(traceback.format_exc()))
    finally:
        send.close()


__all__ = ["RAY_HINT", "Worker", "WorkerFailed", "default_workers", "ray_connect", "run_jobs"]
