"""One run per output folder: two runs writing into one folder would mix their files (one
run's checkpoint beside the other's policy and metrics), so a run holds the folder's lock
file for as long as it writes there.

The lock is an advisory ``flock`` on ``.drl_ac.lock`` in the folder, which the kernel
releases when its process ends however it ends (``kill -9`` included): a lock file left by
a dead run is stale by construction and is simply taken over. The file records who holds
it (pid, host, start time, command) so that a refused run can say which run is in the way.
On a system without ``fcntl`` (Windows) the folder is not locked.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import time
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

LOCK_FILE = ".drl_ac.lock"


class FolderInUse(RuntimeError):
    """Another live run holds the folder."""


def _holder(path: Path) -> str:
    """Who holds the lock, in words, from what it wrote into the file."""
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        info = {}
    if not info:
        return "a run that is just starting"
    return (f"pid {info.get('pid')} on {info.get('host')}, started {info.get('started')}: "
            f"{info.get('command')}")


class FolderLock:
    """``with FolderLock(folder, "--out"):`` the folder is this run's until the block ends;
    ``FolderInUse`` (naming the run that holds it and the fix) when another live run has it.
    ``option`` names the flag that chose the folder, for the message."""

    def __init__(self, folder: str | Path, option: str = "--out"):
        self.path = Path(folder) / LOCK_FILE
        self.option = option
        self._file = None

    def acquire(self) -> FolderLock:
        if fcntl is None or self._file is not None:
            return self
        handle = open(self.path, "a+")  # noqa: SIM115 - held open for the lock's lifetime
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise FolderInUse(
                f"{self.option} {self.path.parent}: in use by another run ({_holder(self.path)}). Fix: wait "
                f"for that run to finish, stop it, or choose another {self.option}.") from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                                 "command": shlex.join([Path(sys.executable).name, *sys.argv])}))
        handle.flush()
        self._file = handle
        return self

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing drops the flock; the file stays for the next run to take
            self._file = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
