"""The pools' compiled loop against the NumPy one (the reference): same seed, same trajectory,
bit for bit: every observation, every outcome column (the server time of cancelled copies and
rescued jobs included), the holding areas, the job table and the state (queues by content:
their ring buffers may be laid out differently)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs import Engine, NetworkSpec, load_spec
from envs.kernels import exit_buffers
from envs.spec import SCENARIO_DIR

STATE = ("next_event", "fcfs_job", "fcfs_busy", "fcfs_len", "since", "wait_sum", "cancelled_work",
         "cancelled_started")


def queues(eng: Engine) -> list:
    st = eng.state
    q = st.fcfs_q.shape[2]
    return [[[int(st.fcfs_q[r, n, (st.fcfs_head[r, n] + i) % q]) for i in range(st.fcfs_len[r, n])]
             for n in range(2)] for r in range(eng.B)]


def assert_same_state(a: Engine, b: Engine) -> None:
    names = STATE + (("timer_owner",) if hasattr(a.state, "timer_owner") else ())
    for name in names:
        np.testing.assert_array_equal(getattr(a.state, name), getattr(b.state, name), err_msg=name)
    assert queues(a) == queues(b)
    for name in a.jobs.names():
        np.testing.assert_array_equal(getattr(a.jobs, name), getattr(b.jobs, name), err_msg=f"jobs.{name}")


@pytest.mark.parametrize("name", ["pools", "pools_rescue", "pools_daily"])
def test_the_packaged_pools_scenarios_run_the_same_in_both_engines(name, twin):
    numpy, compiled, rows = twin.run(load_spec(name), 32, 300, seed=7, action_seed=8,
                                     same_state=assert_same_state, probes=False)
    assert compiled.engine == "compiled" and rows > 32 * 200
    assert numpy.jobs.copied.any()  # copies were made (and cancelled: the outcomes' work compared)


def test_rescues_growing_queues_and_exit_buffers_keep_the_engines_equal(twin):
    """Rescue choices at a rate the pools cannot carry: queues outgrow 16 places, copies take
    servers from the other pool's own jobs, and one exit per row and call grows the buffers."""
    cfg = yaml.safe_load((SCENARIO_DIR / "pools_rescue.yaml").read_text())
    cfg["arrival"]["rate"] = 1.2
    spec = NetworkSpec.from_dict(cfg)
    numpy, compiled = (Engine(spec, 8, seed=3, engine=e) for e in ("numpy", "compiled"))
    compiled.kernel.exit_buffers = exit_buffers(8, 1)
    rng = np.random.default_rng(4)
    for _ in range(400):
        action = rng.integers(6, 12, 8)
        twin.same_outcomes(numpy.step(action), compiled.step(action))
    assert compiled.state.fcfs_q.shape[2] > 16 and compiled.kernel.exit_buffers[0].shape[1] > 1
    assert numpy.jobs.paused.any() or (numpy.jobs.held > 0).any()  # rescues happened
    assert_same_state(numpy, compiled)


BASE = yaml.safe_load((SCENARIO_DIR / "pools.yaml").read_text())
ACTIONS = [{"pool": 1}, {"pool": 2}, {"pool": "auto"}, {"pool": "auto", "policy": "replicate", "tau": 0.0},
           {"pool": 1, "policy": "replicate", "tau": 1.0, "queue": "front"},
           {"pool": 2, "policy": "reroute", "tau": 2.0}, {"pool": "auto", "policy": "reroute", "tau": [0.0, 3.0]},
           {"pool": "auto", "policy": "replicate", "tau": 0.5}]


@st.composite
def pools_specs(draw) -> NetworkSpec:
    """Random pools: servers, speeds, knowledge, restart, timer and a set of choices."""
    cfg = copy.deepcopy(BASE)
    block = cfg["pools"]
    block["servers"] = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    block["restart"] = draw(st.sampled_from(["same", "fresh"]))
    block["timer"] = draw(st.sampled_from(["service", "arrival"]))
    block["knowledge"] = draw(st.sampled_from(["full", "none", {"signal": 0.7}, {"revealed": 0.5}]))
    block["size"] = draw(st.sampled_from([{"dist": "exponential", "mean": 1.0},
                                          {"dist": "gamma", "mean": 1.0, "scv": 2.0}]))
    chosen = draw(st.lists(st.sampled_from(range(len(ACTIONS))), min_size=1, max_size=5, unique=True))
    block["actions"] = [ACTIONS[i] for i in chosen]
    if block["timer"] == "service" and draw(st.booleans()):
        block["actions"].append({"pool": 1, "policy": "replicate", "tau": 0.0, "queue": "front", "preempt": 1.0})
    cfg["arrival"]["rate"] = draw(st.floats(0.2, 1.0))
    return NetworkSpec.from_dict(cfg)


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=pools_specs(), seed=st.integers(0, 2**16))
def test_random_pools_run_the_same_in_both_engines(spec, seed, twin):
    twin.run(spec, 6, 120, seed=seed, action_seed=seed + 1, same_state=assert_same_state, probes=False,
             max_jobs=1 << 12)


def test_the_compiled_loop_runs_up_to_its_instance_bound_and_numpy_beyond():
    """Past ``KERNEL_MAX_INSTANCES`` NumPy's gathers over all instances beat a loop row by row:
    ``compiled`` runs the NumPy loop there, and says so."""
    from envs.systems.pools.system import KERNEL_MAX_INSTANCES

    spec = load_spec("pools")
    assert Engine(spec, KERNEL_MAX_INSTANCES, seed=0, engine="compiled").engine == "compiled"
    assert Engine(spec, KERNEL_MAX_INSTANCES + 1, seed=0, engine="compiled").engine == "numpy"
    assert Engine(spec, 8, seed=0, engine="numpy").engine == "numpy"
