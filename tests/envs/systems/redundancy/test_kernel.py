"""Redundancy-d's compiled loop against the NumPy one (the reference): same seed, same
trajectory, bit for bit: every observation, every outcome column (the work of the cancelled
copies included), the holding areas and every array of the servers' state."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs import Engine, NetworkSpec, load_spec
from envs.kernels import exit_buffers

STATE = ("next_event", "ps_clock", "ps_last", "ps_count", "ps_tag", "ps_job", "ps_first", "ps_first_at",
         "cancelled_work", "cancelled_started")


def assert_same_state(a: Engine, b: Engine) -> None:
    for name in STATE:
        np.testing.assert_array_equal(getattr(a.state, name), getattr(b.state, name), err_msg=name)
    for name in a.jobs.names():
        np.testing.assert_array_equal(getattr(a.jobs, name), getattr(b.jobs, name), err_msg=f"jobs.{name}")


@pytest.mark.parametrize("name", ["redundancy_ps", "redundancy_ps_daily"])
def test_the_packaged_redundancy_scenarios_run_the_same_in_both_engines(name, twin):
    _, compiled, rows = twin.run(load_spec(name), 32, 300, seed=3, action_seed=4, same_state=assert_same_state,
                                 probes=False)
    assert compiled.engine == "compiled" and rows > 32 * 250
    assert compiled.state.cancelled_started.max() >= 3  # jobs with 4 copies had 3 cancelled


def test_growing_tag_and_exit_buffers_keep_the_engines_equal(twin):
    """Every job copied to all 4 servers at a rate they cannot carry: each server's row of tags
    outgrows its 8 places, and one exit per row and call forces the exit buffers to grow."""
    spec = NetworkSpec.from_dict({"name": "overload", "arrival": {"dist": "exponential", "rate": 3.0},
                                  "d_ub": 10, "eps": 0.1, "redundancy": {
                                      "servers": 4, "kind": "ps", "copies": "iid",
                                      "size": {"dist": "exponential", "mean": 1.0}, "d": [1, 4]}})
    numpy, compiled = (Engine(spec, 8, seed=2, engine=e) for e in ("numpy", "compiled"))
    compiled.kernel.exit_buffers = exit_buffers(8, 1)
    for _ in range(300):
        twin.same_outcomes(numpy.step(np.ones(8, np.int64)), compiled.step(np.ones(8, np.int64)))
    assert compiled.state.ps_tag.shape[2] > 8 and compiled.kernel.exit_buffers[0].shape[1] > 1
    assert_same_state(numpy, compiled)


LAWS = [{"dist": "exponential", "mean": 1.0}, {"dist": "deterministic", "mean": 0.8},
        {"dist": "gamma", "mean": 1.2, "scv": 0.5}, {"dist": "hyperexponential", "mean": 1.0, "scv": 4.0}]


@st.composite
def redundancy_specs(draw) -> NetworkSpec:
    """Random redundancy-d over PS servers, below the stability limit of d = 1."""
    servers = draw(st.integers(1, 8))
    copies = draw(st.sampled_from(["identical", "iid", "scaled"]))
    block = {"servers": servers, "kind": "ps", "copies": copies,
             "d": sorted(draw(st.sets(st.integers(1, servers), min_size=1, max_size=3)))}
    if copies == "scaled":
        block.update(scale=draw(st.sampled_from(LAWS)), factor={"dist": "gamma", "mean": 1.0, "scv": 0.5})
    else:
        block["size"] = draw(st.sampled_from(LAWS))
    mean = (block.get("size") or block["scale"])["mean"]
    rate = draw(st.floats(0.2, 0.9)) * servers / mean
    return NetworkSpec.from_dict({"name": "random", "arrival": {"dist": "exponential", "rate": rate}, "d_ub": 10,
                                  "eps": 0.1, "redundancy": block})


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=redundancy_specs(), seed=st.integers(0, 2**16))
def test_random_redundancy_systems_run_the_same_in_both_engines(spec, seed, twin):
    twin.run(spec, 6, 80, seed=seed, action_seed=seed + 1, same_state=assert_same_state, probes=False)


def test_redundancy_over_fcfs_servers_runs_the_numpy_loop():
    spec = NetworkSpec.from_dict({"name": "fcfs", "arrival": {"dist": "exponential", "rate": 1.0}, "d_ub": 10,
                                  "eps": 0.1, "redundancy": {"servers": 3, "kind": "fcfs", "copies": "iid",
                                                             "size": {"dist": "exponential", "mean": 1.0},
                                                             "d": [1, 2]}})
    assert Engine(spec, 2, seed=0, engine="compiled").engine == "numpy"
