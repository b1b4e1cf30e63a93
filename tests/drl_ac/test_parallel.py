"""Work in other processes (drl_ac/parallel.py): ``run_jobs`` gives the same results in order
inline, in other processes and on Ray (a stand-in Ray records how it was connected; the real
one is checked by tests/experiments/test_sweep.py), and a ``Worker`` streams results back, says
when its process died without one, and stops when cancelled."""

import os
import pickle
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from drl_ac.parallel import PROCESSES, Worker, WorkerFailed, run_jobs


def square(job: dict) -> dict:
    return {**job, "square": job["x"] ** 2, "pid": os.getpid()}


def count_to(send, n: int) -> None:
    for i in range(n):
        send(i)


def send_then_mark(send, chunks: int, marker: str) -> None:
    for _ in range(chunks):
        send(b"x" * 100_000)
    open(marker, "w").close()  # its work is done, whether or not the caller has read


def crash() -> None:
    os._exit(3)


def sleep_long() -> None:
    time.sleep(60)


def divide(a: float, b: float) -> float:
    return a / b


def read_env(job: dict) -> str | None:
    return os.environ.get(job["name"])


def speak(text: str) -> None:
    print(f"out: {text}", flush=True)
    print(f"err: {text}", file=sys.stderr, flush=True)


def a_lambda():
    return lambda: 1  # cannot be pickled back


def test_a_worker_that_raises_hands_back_its_traceback():
    w = Worker(divide, 1, 0)
    with pytest.raises(WorkerFailed, match="ZeroDivisionError") as failed:
        w.recv()
    assert isinstance(failed.value, EOFError) and w.process.exitcode == 0  # it ended, and its end is known
    unpicklable = Worker(a_lambda)
    with pytest.raises(WorkerFailed, match="pickle"):
        unpicklable.recv()
    w.cancel()
    unpicklable.cancel()


def test_a_worker_that_cannot_start_says_why_where_it_is_asked_for():
    """It starts in a thread (the fork server's first process waits for the server's imports):
    what stopped it (here its arguments cannot be pickled) is raised by recv, cancel is quiet."""
    w = Worker(divide, lambda: 1, 2)
    with pytest.raises((pickle.PicklingError, AttributeError), match="pickle"):
        w.recv()
    w.cancel()


def test_run_jobs_gives_the_same_results_in_order_inline_and_in_processes():
    jobs = [{"x": x} for x in (3, 1, 2)]
    inline = list(run_jobs(square, jobs, workers=1))
    pooled = list(run_jobs(square, jobs, workers=2))
    assert [r["square"] for r in inline] == [r["square"] for r in pooled] == [9, 1, 4]
    assert {r["pid"] for r in inline} == {os.getpid()} and os.getpid() not in {r["pid"] for r in pooled}


def test_a_worker_streams_its_results_and_reports_a_death_without_one():
    w = Worker(count_to, 3, stream=True)
    assert [w.recv() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(EOFError):
        w.recv()  # it ended: nothing more will come
    w.cancel()
    one = Worker(square, {"x": 4})
    assert one.recv()["square"] == 16
    one.cancel()
    dead = Worker(crash)
    with pytest.raises(EOFError):
        dead.recv()
    dead.process.join(10)  # its pipe closes as it exits; the exit code is there once it is reaped
    assert dead.ready() and dead.process.exitcode == 3
    dead.cancel()


def test_a_streaming_worker_goes_on_while_its_caller_reads_nothing(tmp_path):
    """Results wait in a queue of the worker's, not in the pipe (64 KiB on Linux): the rules'
    rows, sent while the caller trained, filled it and stopped the measuring."""
    marker = tmp_path / "done"
    w = Worker(send_then_mark, 5, str(marker), stream=True)
    for _ in range(300):
        if marker.exists():
            break
        time.sleep(0.1)
    assert marker.exists()  # 500 kB sent, nothing read yet
    assert [len(w.recv()) for _ in range(5)] == [100_000] * 5
    with pytest.raises(EOFError):
        w.recv()
    w.cancel()


def test_a_cancelled_worker_stops_at_once():
    w = Worker(sleep_long)
    assert not w.ready()
    t0 = time.perf_counter()
    w.cancel()
    assert time.perf_counter() - t0 < 5 and not w.process.is_alive()


class FakeRay(types.ModuleType):
    """Stands in for ray: records init/shutdown and runs tasks inline."""

    def __init__(self, initialized: bool):
        super().__init__("ray")
        self.initialized, self.calls = initialized, []

    def is_initialized(self):
        return self.initialized

    def init(self, **kwargs):
        self.calls.append(("init", kwargs))
        self.initialized = True

    def shutdown(self):
        self.calls.append(("shutdown", {}))
        self.initialized = False

    def remote(self, fn):
        def options(**kw):
            self.calls.append(("options", kw))
            return types.SimpleNamespace(remote=lambda t: fn(t))
        return types.SimpleNamespace(options=options)

    def get(self, ref):
        return ref  # a task ran inline: its reference is its result


@pytest.mark.parametrize(("initialized", "address", "expected"), [
    (True, "local", []),
    (True, "ray://head:10001", []),
    (False, "local", [("init", {"address": "local", "include_dashboard": False, "log_to_driver": False}),
                      ("shutdown", {})]),
    (False, "auto", [("init", {"address": "auto"}), ("shutdown", {})]),
    (False, "ray://head:10001", [("init", {"address": "ray://head:10001"}), ("shutdown", {})]),
])
def test_ray_connection_is_reused_or_opened_and_closed(monkeypatch, initialized, address, expected):
    fake = FakeRay(initialized)
    monkeypatch.setitem(sys.modules, "ray", fake)
    got = list(run_jobs(square, [{"x": 1, "cpus": 2}, {"x": 2, "cpus": 1}], ray=address, cpus=lambda j: j["cpus"]))
    assert [r["square"] for r in got] == [1, 4]
    assert [c for c in fake.calls if c[0] == "options"] == [("options", {"num_cpus": 2}), ("options", {"num_cpus": 1})]
    assert [c for c in fake.calls if c[0] != "options"] == expected


def test_ray_cluster_not_found_gives_a_fix(monkeypatch):
    fake = FakeRay(False)

    def refuse(**kwargs):
        raise ConnectionError("Could not find any running Ray instance.")

    fake.init = refuse
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(RuntimeError, match=r"no Ray cluster at 'auto'.*Fix: start one \(ray start --head\)"):
        list(run_jobs(square, [{"x": 1}], ray="auto"))


def test_ray_missing_gives_install_hint(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(RuntimeError, match=r"pip install -e \".\[distributed\]\""):
        list(run_jobs(square, [{"x": 1}], ray="local"))


@pytest.mark.skipif(sys.platform == "win32", reason="Windows spawns every process")
def test_a_process_forked_later_takes_the_callers_environment_and_output_as_they_are_then(monkeypatch, capfd):
    """Processes fork from a server started once (a fresh interpreter that imported the library):
    what they inherit from it (the environment, stdout and stderr as the server started) would
    be stale; each takes the caller's as they are when it starts (an engine setting made later,
    a test's capture)."""
    assert PROCESSES.get_start_method() == "forkserver"
    first = Worker(read_env, {"name": "DRL_AC_PARALLEL_CHECK"})
    assert first.recv() is None  # the server runs from here on
    first.cancel()
    monkeypatch.setenv("DRL_AC_PARALLEL_CHECK", "later")
    later = Worker(read_env, {"name": "DRL_AC_PARALLEL_CHECK"})
    assert later.recv() == "later"
    later.cancel()
    jobs = [{"name": "DRL_AC_PARALLEL_CHECK"}] * 2
    assert list(run_jobs(read_env, jobs, workers=2)) == ["later", "later"]
    capfd.readouterr()
    talk = Worker(speak, "hello")
    assert talk.recv() is None  # its result, sent after it spoke
    talk.cancel()
    seen = capfd.readouterr()
    assert "out: hello" in seen.out and "err: hello" in seen.err


LOCK_HOLDER = """
import multiprocessing, time
from drl_ac.parallel import Worker

def hold_a_lock(send):
    lock = multiprocessing.get_context().RLock()  # a named semaphore, as Numba's threads make one
    send("holding")
    time.sleep(60)

if __name__ == "__main__":
    w = Worker(hold_a_lock, stream=True)
    assert w.recv() == "holding"
    w.cancel()
    print("exit code", w.process.exitcode)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="Windows ends a process without a signal")
def test_a_cancelled_worker_releases_what_it_holds(tmp_path):
    """cancel's SIGTERM leaves the process through SystemExit: its named semaphores are released,
    where a killed process left them to the resource tracker's 'leaked semaphore' warning."""
    script = tmp_path / "holder.py"
    script.write_text(LOCK_HOLDER)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert "exit code 143" in done.stdout and "leaked" not in done.stderr, done.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="Windows spawns every process")
def test_a_process_imports_the_callers_library_not_one_in_the_working_directory(tmp_path):
    """The fork server imports only third-party libraries: one that imported this library would
    have taken another checkout from its working directory (Python 3.11's server puts it first),
    here one whose Worker cannot be unpickled."""
    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "drl_ac", tmp_path / "drl_ac", ignore=shutil.ignore_patterns("__pycache__"))
    other = tmp_path / "drl_ac" / "parallel.py"
    other.write_text(other.read_text().replace("def _serve(", "def _served("))  # another version
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "ask.py"  # run from tmp_path: the caller imports the library on its path
    script.write_text("import os\nfrom drl_ac.parallel import Worker\n\nif __name__ == '__main__':\n"
                      "    w = Worker(os.getpid)\n    print('pid', w.recv() != os.getpid())\n    w.cancel()\n")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0 and "pid True" in done.stdout, done.stderr
