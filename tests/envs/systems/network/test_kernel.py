"""The compiled event loop against the NumPy one (the reference): same seed, same trajectory.

Both engines step the same spec with the same actions; every observation, every column of
every outcome row, the holding areas and the state the future depends on must be equal, bit
for bit (the arithmetic per job is the same, in the same order), on every packaged FCFS
network and on random feed-forward networks.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs import Engine, NetworkSpec, load_spec
from envs.compiled import (
    ENGINE_VAR,
    THREADS_VAR,
    default_engine,
    sharing_cores,
    threads,
    use_engine,
)
from envs.kernels import exit_buffers

FCFS_NETWORKS = ["paper_tandem", "paper_acyclic", "tandem", "acyclic", "mmc_c1", "mmc_c3", "mmc_c5_overload",
                 "paper_tandem_step"]


def queues(eng: Engine) -> list[list[list[int]]]:
    """The FCFS queues' contents, head first (their ring buffers' raw layout may differ)."""
    st = eng.state
    q = st.fcfs_q.shape[2]
    return [[[int(st.fcfs_q[r, n, (st.fcfs_head[r, n] + i) % q]) for i in range(st.fcfs_len[r, n])]
             for n in range(st.fcfs_len.shape[1])] for r in range(eng.B)]


def assert_same_state(a: Engine, b: Engine) -> None:
    for name in ("next_event", "fcfs_job", "fcfs_busy", "fcfs_len", "since", "wait_sum"):
        np.testing.assert_array_equal(getattr(a.state, name), getattr(b.state, name), err_msg=name)
    assert queues(a) == queues(b)
    for name in a.jobs.names():
        np.testing.assert_array_equal(getattr(a.jobs, name), getattr(b.jobs, name), err_msg=f"jobs.{name}")
    np.testing.assert_array_equal(a.now, b.now)


@pytest.mark.parametrize("name", FCFS_NETWORKS)
def test_every_packaged_fcfs_network_runs_the_same_in_both_engines(name, twin):
    _, _, rows = twin.run(load_spec(name), 32, 200, seed=5, action_seed=6, same_state=assert_same_state)
    assert rows > 32 * 100  # rejections' probes and departures were compared


def test_the_exact_counterfactual_and_growing_buffers_are_the_same_in_both_engines(twin):
    spec = load_spec("mmc_c5_overload")  # accepting most jobs overloads it: the queues outgrow 16 places
    numpy, compiled = (Engine(spec, 8, seed=1, engine=e, exact_counterfactual=True) for e in ("numpy", "compiled"))
    compiled.kernel.exit_buffers = exit_buffers(8, 1)  # one exit per row and call: the buffers must grow
    for _ in range(400):
        action = (numpy.observe().sum(1) < 40).astype(np.int64)
        twin.same_outcomes(numpy.step(action), compiled.step(action))
    assert compiled.state.fcfs_q.shape[2] > 16 and compiled.kernel.exit_buffers[0].shape[1] > 1
    assert_same_state(numpy, compiled)


@st.composite
def feed_forward_networks(draw) -> NetworkSpec:
    """A random acyclic network: stations in topological order, each routing forward or out."""
    n = draw(st.integers(1, 5))
    laws = [{"dist": "exponential", "mean": 1.0}, {"dist": "deterministic", "mean": 0.8},
            {"dist": "gamma", "mean": 1.2, "scv": 0.5}, {"dist": "lognormal", "mean": 0.7, "scv": 2.0}]
    names = [f"s{i}" for i in range(n)]
    stations = [{"name": names[i], "servers": draw(st.integers(1, 3)), "service": draw(st.sampled_from(laws))}
                for i in range(n)]
    routing = {}
    for i in range(n):
        targets = names[i + 1:] + ["exit"]
        weights = draw(st.lists(st.integers(0, 3), min_size=len(targets), max_size=len(targets)))
        weights[-1] += 1 if sum(weights) == 0 else 0
        routing[names[i]] = {t: w / sum(weights) for t, w in zip(targets, weights, strict=True) if w}
    entry_weights = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    entry_weights[0] += 1 if sum(entry_weights) == 0 else 0
    entry = {names[i]: w / sum(entry_weights) for i, w in enumerate(entry_weights) if w}
    cfg = {"name": "random", "arrival": {"dist": draw(st.sampled_from(["exponential", "gamma"])),
                                         "rate": draw(st.floats(0.2, 1.5)), "scv": 0.6},
           "stations": stations, "entry": entry, "routing": routing, "d_ub": draw(st.floats(1.0, 10.0)),
           "eps": 0.1, "delay": draw(st.sampled_from(["sojourn", "paper"])), "actions": ["reject", "accept"]}
    if cfg["arrival"]["dist"] == "exponential":
        del cfg["arrival"]["scv"]
    return NetworkSpec.from_dict(cfg)


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=feed_forward_networks(), seed=st.integers(0, 2**16))
def test_random_feed_forward_networks_run_the_same_in_both_engines(spec, seed, twin):
    twin.run(spec, 6, 60, seed=seed, action_seed=seed + 1, same_state=assert_same_state)


def test_a_network_with_processor_sharing_runs_the_numpy_loop():
    spec = NetworkSpec.from_dict({
        "arrival": {"dist": "poisson", "rate": 0.5}, "d_ub": 5, "eps": 0.1,
        "stations": [{"name": "a", "service": {"dist": "exponential", "mean": 1.0}, "kind": "ps"}],
        "entry": "a", "routing": {"a": "exit"}})
    assert Engine(spec, 2, seed=0, engine="compiled").engine == "numpy"


def test_the_engine_setting(monkeypatch):
    monkeypatch.delenv(ENGINE_VAR, raising=False)
    assert default_engine() == "compiled"
    use_engine("numpy")  # what --engine numpy does; spawned workers inherit it
    assert Engine(load_spec("paper_tandem"), 2, seed=0).engine == "numpy"
    with pytest.raises(ValueError, match="engine: unknown engine 'fast'. Fix: use one of numpy, compiled"):
        Engine(load_spec("paper_tandem"), 2, seed=0, engine="fast")


def test_processes_that_run_at_once_share_the_cores_unless_the_user_set_the_threads(monkeypatch):
    """Background rules and the process beside them each take their share (every process on
    every core oversubscribed them); a user's DRL_AC_THREADS is left as it is."""
    monkeypatch.delenv(THREADS_VAR, raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 8)
    assert threads() == 8
    with sharing_cores(3):
        assert threads() == 2
    assert threads() == 8 and THREADS_VAR not in os.environ
    with sharing_cores(16):
        assert threads() == 1
    monkeypatch.setenv(THREADS_VAR, "5")
    with sharing_cores(3):
        assert threads() == 5
    assert os.environ[THREADS_VAR] == "5"


def test_a_process_may_fork_after_running_the_compiled_loop_on_two_threads():
    """GNU OpenMP, Numba's default threading layer on Linux, aborts a child forked after a
    parallel run (gymnasium's AsyncVectorEnv forks): envs.compiled picks a fork-safe layer."""
    script = ("import os, numpy as np\nfrom envs import Engine, load_spec\n"
              "def run():\n    e = Engine(load_spec('paper_tandem'), 64, seed=0, engine='compiled')\n"
              "    for _ in range(50): e.step(np.ones(64, np.int64))\n"
              "run()\npid = os.fork()\nif pid == 0:\n    run()\n    os._exit(0)\n"
              "_, status = os.waitpid(pid, 0)\nprint('child', os.waitstatus_to_exitcode(status))\n")
    env = {**os.environ, THREADS_VAR: "2"}
    env.pop("PYTEST_XDIST_WORKER", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "child 0" in out.stdout, out.stderr[-2000:]
