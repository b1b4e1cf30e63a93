import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from envs import NetworkSpec
from envs.distributions import Deterministic

torch.set_num_threads(1)  # the tests run many tiny batches: threads only add contention

Z = 4.5  # statistical tests: a correct engine fails with probability ~1e-5


def _per_instance_mean(done, values, num_envs):
    total = np.bincount(done.env, weights=values, minlength=num_envs)
    count = np.bincount(done.env, minlength=num_envs)
    return total / count


def _assert_close(instance_means, truth, label):
    est = instance_means.mean()
    se = instance_means.std(ddof=1) / np.sqrt(instance_means.size)
    assert abs(est - truth) < Z * se, f"{label}: simulated {est:.4f} +- {se:.4f}, theory {truth:.4f}"


@pytest.fixture
def stats():
    """Instance-level replication: per-instance means and a Z-standard-error comparison."""
    return types.SimpleNamespace(per_instance_mean=_per_instance_mean, assert_close=_assert_close, Z=Z)


@pytest.fixture
def overtaking_spec():
    """Two stations: s1 has 2 servers (so jobs overtake), s2 has 1; arrivals every 1.0."""
    return NetworkSpec.tandem([2, 1], [Deterministic(1.0), Deterministic(2.0)], Deterministic(1.0),
                              d_ub=5.0, eps=0.1, lam=1.0)


@pytest.fixture
def set_service():
    def set_current_service(sim, *per_station):
        """Overwrite the service draws of the job arriving now (all instances)."""
        sim.jobs.service[np.arange(sim.B), sim.slot, :] = np.asarray(per_station, dtype=float)
    return set_current_service


@pytest.fixture
def experiment():
    """``experiment("stability")``: a script of experiments/ loaded as a module."""
    root = Path(__file__).resolve().parents[1] / "experiments"

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, root / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses of a module look it up while it is being executed
        spec.loader.exec_module(module)
        return module
    return load
