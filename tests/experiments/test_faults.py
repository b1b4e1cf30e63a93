"""Fault injection on train, resume, evaluate and study, as they run for a user: a run
stopped by SIGINT, SIGTERM or SIGKILL at a point where it has saved, then resumed, ends with
the uninterrupted run's figures; a damaged file is refused by name; a second writer into a
folder in use is refused and the first run's files stay its own."""

import importlib.util
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from drl_ac.checkpoint import load_file
from drl_ac.folder_lock import FolderLock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and flock")

ROOT = Path(__file__).resolve().parents[2]
TRAIN, EVALUATE, STUDY = (ROOT / "experiments" / f"{name}.py" for name in ("train", "evaluate", "study"))
MM1 = {"name": "mm1", "arrival": {"dist": "exponential", "rate": 0.9},
       "stations": [{"name": "s", "servers": 1, "service": {"dist": "exponential", "mean": 1.0}}],
       "d_ub": 5.0, "eps": 0.1, "lam": 2.0, "delay": "sojourn"}
# the options of one invocation (repeated on --resume); the run's own settings come first
OPTIONS = ["--eval-arrivals", "2000", "--device", "cpu", "--calibrate", "off", "--compare", "off", "--quiet",
           "--checkpoint-every", "12800", "--export", "off"]  # the exports are tested on their own
FIGURES = ("violation", "acceptance", "throughput", "mean_delay", "decisions", "rbar")

def load_script(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train_cli, evaluate_cli = load_script(TRAIN, "faults_train_cli"), load_script(EVALUATE, "faults_evaluate_cli")
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("scenario") / "mm1.yaml"
    path.write_text(yaml.safe_dump(MM1))
    return path


def train_argv(scenario: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, str(TRAIN), "--scenario", str(scenario), "--steps", "120000", "--num-envs", "128",
            "--lam", "scenario", "--out", str(out), *OPTIONS, *extra]


def resume(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TRAIN), "--resume", str(out / "checkpoint.pt"), *OPTIONS],
                          capture_output=True, text=True, timeout=300)


def figures(out: Path) -> dict:
    metrics = json.loads((out / "metrics.json").read_text())
    return {k: metrics[k] for k in FIGURES}


@pytest.fixture(scope="module")
def uninterrupted(scenario, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("runs") / "whole"
    res = subprocess.run(train_argv(scenario, out), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return figures(out)


def start(argv: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log.open("w"), text=True)


def saved_twice(proc: subprocess.Popen, ckpt: Path, timeout: float = 120) -> None:
    """Wait until the run has written its periodic checkpoint twice (learning has begun)."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(seen) < 2:
        assert proc.poll() is None, "the run ended before it could be stopped"
        assert time.monotonic() < deadline, "no periodic checkpoint"
        if ckpt.is_file():
            seen.add(ckpt.stat().st_mtime_ns)
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_run_stopped_by_a_signal_resumes_to_the_uninterrupted_figures(sig, scenario, uninterrupted, tmp_path):
    out, log = tmp_path / "run", tmp_path / "stderr.txt"
    proc = start(train_argv(scenario, out), log)
    saved_twice(proc, out / "checkpoint.pt")
    proc.send_signal(sig)
    assert proc.wait(timeout=120) == EXIT[sig], log.read_text()
    stderr = log.read_text()
    assert "Traceback" not in stderr, stderr
    if sig != signal.SIGKILL:
        assert "Resume with: " in stderr and f"({'SIGTERM' if sig == signal.SIGTERM else 'Ctrl-C'})" in stderr
    saved = load_file(out / "checkpoint.pt")
    assert 0 < saved["t"] * saved["policy"]["config"]["num_envs"] < 120_000  # stopped part way
    res = resume(out)
    assert res.returncode == 0, res.stderr
    assert figures(out) == uninterrupted


def damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "empty":
        data = bytearray()
    else:  # 400 bytes flipped in the middle, the size unchanged
        mid = len(data) // 2
        data[mid:mid + 400] = bytes(b ^ 0xFF for b in data[mid:mid + 400])
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def finished(scenario, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "finished"
    res = subprocess.run(train_argv(scenario, out, "--steps", "26000"), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return out


@pytest.mark.parametrize("how", ["flip", "truncate", "empty"])
@pytest.mark.parametrize("name", ["checkpoint.pt", "policy.pt"])
def test_a_damaged_file_is_refused_by_name_and_nothing_else_changes(finished, name, how, tmp_path, capsys):
    out = tmp_path / "copy"
    out.mkdir()
    for f in ("checkpoint.pt", "policy.pt", "metrics.json"):
        (out / f).write_bytes((finished / f).read_bytes())
    damage(out / name, how)
    if name == "checkpoint.pt":  # in this process: what a subprocess would print, without its start-up
        argv = ["--resume", str(out / "checkpoint.pt"), *OPTIONS]
        main = train_cli.main
    else:
        argv = ["--checkpoint", str(out / name), "--arrivals", "2000"]
        main = evaluate_cli.main
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    code, err = stopped.value.code, capsys.readouterr().err
    if isinstance(code, str):  # sys.exit(message): Python prints it and exits 1
        code, err = 1, err + code
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1, err
    assert lines[0].startswith(f"error: {out / name}: ") and "Fix: " in lines[0], err
    assert (out / "metrics.json").read_bytes() == (finished / "metrics.json").read_bytes()


def test_a_second_run_into_a_folder_in_use_is_refused_and_the_first_keeps_its_files(scenario, tmp_path):
    out, log = tmp_path / "shared", tmp_path / "first.txt"
    first = start(train_argv(scenario, out, "--seed", "0"), log)
    saved_twice(first, out / "checkpoint.pt")
    second = subprocess.run(train_argv(scenario, out, "--seed", "1", "--force"), capture_output=True, text=True,
                            timeout=120)
    assert second.returncode == 1, second.stderr
    assert f"in use by another run (pid {first.pid} on " in second.stderr and "Traceback" not in second.stderr
    assert first.wait(timeout=300) == 0, log.read_text()
    assert load_file(out / "checkpoint.pt")["policy"]["config"]["seed"] == 0
    assert load_file(out / "policy.pt")["metrics"]["seed"] == 0


def test_a_study_into_a_folder_in_use_is_refused_before_any_work(tmp_path):
    out = tmp_path / "study"
    out.mkdir()
    with FolderLock(out):
        res = subprocess.run([sys.executable, str(STUDY), "--scenario", "paper_tandem", "--budget", "smoke",
                              "--steps", "2000", "--num-envs", "16", "--out", str(out)],
                             capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "in use by another run" in res.stderr, res.stderr
    assert sorted(p.name for p in out.iterdir()) == [".drl_ac.lock"]
