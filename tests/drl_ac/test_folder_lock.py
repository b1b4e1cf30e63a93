"""One run per output folder: a live holder is named in the refusal; a dead one's lock is free."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from drl_ac.folder_lock import LOCK_FILE, FolderInUse, FolderLock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock")

HOLD = """
import sys, time
from drl_ac.folder_lock import FolderLock
with FolderLock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def hold(folder):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_holder_is_refused_with_the_first_ones_pid_and_command(tmp_path):
    proc = hold(tmp_path)
    try:
        with pytest.raises(FolderInUse, match=rf"--out {tmp_path}: in use by another run \(pid {proc.pid} on .*"
                                              r"-c.*\). Fix: wait"):
            FolderLock(tmp_path).acquire()
    finally:
        proc.kill()
        proc.wait()


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path):
    proc = hold(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)  # no chance to clean up: the file stays, the kernel drops the lock
    proc.wait()
    assert (tmp_path / LOCK_FILE).is_file()
    with FolderLock(tmp_path) as lock:
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()


def test_released_on_exit_and_reacquired_in_the_same_process(tmp_path):
    with FolderLock(tmp_path):
        pass
    t0 = time.perf_counter()
    with FolderLock(tmp_path, option="--out-dir"):
        with pytest.raises(FolderInUse, match="--out-dir"):
            FolderLock(tmp_path, option="--out-dir").acquire()
    assert time.perf_counter() - t0 < 5
