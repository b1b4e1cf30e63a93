"""Work in other processes, one module for every caller: a sweep's trials and a study's loads
(``run_jobs``: in this process, a pool of local processes, or Ray tasks), the rules tuned
beside a training run and the cell's experiment jobs (``Worker``: one process whose
results stream back while this one goes on).

Processes are never forked from the caller: a fork copies torch's thread pools and any lock
held at that moment, and a job's numbers must depend on the job alone (its seeds), not on where
it ran. They are forked from a fork server instead, where the platform has one: a fresh
interpreter that has imported the heavy third-party libraries (``PRELOAD``: torch, Numba,
SciPy) once and done nothing else, so a process starts in about 0.4 s where a spawned one spent
about 3 s importing them again. The library and the caller's script are imported by each
process itself, on the caller's ``sys.path``: Python 3.11's fork server imports on its own
(the working directory first), which could give it another checkout of the library. Each takes the caller's environment, standard output and error as they are
when the process starts (the engine setting, ``envs.compiled``; a test's captured output), its
working directory and ``sys.path``; elsewhere (Windows) processes are spawned.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

RAY_HINT = 'Ray is not installed. Fix: pip install -e ".[distributed]" (or pip install ray)'
PRELOAD = ["torch", "numba", "scipy.integrate", "numpy"]  # never this library: see the module's text


def _context() -> Any:
    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


PROCESSES = _context()


class _Inherited:
    """A file descriptor of this process that a process being started gets a duplicate of (the
    duplicate is made as the process's arguments are pickled for it, one per process)."""

    def __init__(self, fd: int):
        self.fd = fd

    def __reduce__(self) -> tuple:
        from multiprocessing.reduction import DupFd  # (POSIX only)
        return _detach, (DupFd(self.fd),)


def _detach(dup: Any) -> int:
    return dup.detach()


def _caller() -> tuple[dict[str, str], list[tuple[int, Any]]]:
    """What a new process takes from this one (``_adopt``): the environment and, where it is
    forked from the fork server, the open standard output and error."""
    streams = []
    for fd in (1, 2) if PROCESSES.get_start_method() == "forkserver" else ():
        try:
            os.fstat(fd)
        except OSError:  # closed here: the process keeps its own
            continue
        streams.append((fd, _Inherited(fd)))
    return dict(os.environ), streams


def _adopt(environ: dict[str, str], streams: list[tuple[int, int]]) -> None:
    """Take the caller's environment and output as they were when this process was asked for
    (a forked process would keep the fork server's, as they were when the server started)."""
    for key in set(os.environ) - set(environ):
        del os.environ[key]
    os.environ.update(environ)
    for fd, given in streams:
        (sys.stdout if fd == 1 else sys.stderr).flush()
        os.dup2(given, fd)
        os.close(given)


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
    closed at the end), else in a pool of ``workers`` processes, else (one worker or
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
        with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=PROCESSES, initializer=_adopt,
                                 initargs=_caller()) as pool:
            yield from pool.map(fn, jobs)


class Worker:
    """``fn(*args, **kwargs)`` in another process, started now. With ``stream`` it is called
    as ``fn(send, *args, **kwargs)`` and may ``send`` several results (``send`` never waits for
    this process to read them: ``_Sender``); else its return value is
    the one result. ``recv`` takes the next (``EOFError`` when the process ended without one:
    it failed, was killed, or could not start, e.g. a script read from standard input cannot
    be re-imported by it; ``WorkerFailed``, an ``EOFError``, when it raised or its result could
    not be pickled, with the traceback); ``ready`` says whether ``recv`` would not wait;
    ``cancel`` stops it.
    The process ignores Ctrl-C: the caller decides, and cancels it on its way out."""

    def __init__(self, fn: Callable[..., Any], *args: Any, stream: bool = False, **kwargs: Any):
        self._receive, send = PROCESSES.Pipe(duplex=False)
        self._process = PROCESSES.Process(target=_serve, args=(send, fn, args, kwargs, stream, *_caller()),
                                          daemon=True)
        self._failed: BaseException | None = None
        # started from a thread: the fork server's first process waits for the server's imports
        # (seconds), which this process need not wait for
        self._starting = threading.Thread(target=self._start, args=(send,), daemon=True)
        self._starting.start()

    def _start(self, send: Any) -> None:
        try:
            self._process.start()
        except BaseException as exc:  # noqa: BLE001 - raised where the process is asked for
            self._failed = exc
        finally:
            send.close()  # only the child holds the sending end: its death reads as EOF here

    @property
    def process(self) -> Any:
        """The process, once started (a failure to start is raised here)."""
        self._starting.join()
        if self._failed is not None:
            raise self._failed
        return self._process

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
        self._starting.join()
        if self._failed is None:
            self._process.terminate()
            self._process.join()
        self._receive.close()


def _leave(signum: int, frame: Any) -> None:
    """``cancel``'s SIGTERM: leave through ``SystemExit``, so that what the process holds is
    released (Numba's threads hold a named semaphore, reported leaked when a killed process
    leaves it). Once its function is done the process ignores SIGTERM: a cancel then waits for
    its own way out (a SIGTERM inside its release of the semaphore left it half released)."""
    raise SystemExit(128 + signum)


class WorkerFailed(EOFError):
    """A ``Worker``'s function raised, or its result could not be sent back: no (more)
    results; the message holds the traceback."""


class _Sender:
    """A streaming function's results sent by a thread of their own, so that its work never
    waits for the caller to read them (a pipe holds 64 KiB on Linux, 8 KiB on Windows: the
    rules' rows, sent while the caller trained, filled it and stopped the measuring). On the
    way out the thread sends what is queued, unless the process is being stopped (a cancel:
    the caller reads no more)."""

    _END = object()

    def __init__(self, conn: Any):
        self.conn, self.items, self.failed = conn, queue.SimpleQueue(), None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Callable[[Any], None]:
        self.thread.start()
        return self.items.put

    def _run(self) -> None:
        while (item := self.items.get()) is not self._END:
            try:
                self.conn.send(item)
            except BaseException as exc:  # noqa: BLE001 - raised in the function's thread on the way out
                self.failed = exc
                return

    def __exit__(self, kind: type | None, *rest: Any) -> None:
        if kind is not None and not issubclass(kind, Exception):  # SystemExit (a cancel), KeyboardInterrupt
            return
        self.items.put(self._END)
        self.thread.join()
        if self.failed is not None and kind is None:
            raise self.failed


def _serve(send: Any, fn: Callable[..., Any], args: tuple, kwargs: dict, stream: bool,
           environ: dict[str, str], streams: list[tuple[int, int]]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _leave)
    _adopt(environ, streams)
    try:
        if stream:
            with _Sender(send) as put:
                fn(put, *args, **kwargs)
        else:
            send.send(fn(*args, **kwargs))
    except Exception:  # noqa: BLE001 - the caller gets the failure as its result
        send.send(WorkerFailed(traceback.format_exc()))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # done: a cancel must not cut the way out short
        send.close()


__all__ = ["RAY_HINT", "Worker", "WorkerFailed", "default_workers", "ray_connect", "run_jobs"]
