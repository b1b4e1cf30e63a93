import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from envs import Engine, NetworkSpec
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


def _assert_same_outcomes(a, b) -> None:
    for name, value in vars(a).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, getattr(b, name), err_msg=f"outcomes.{name}")


def _run_both(spec, num_envs: int, steps: int, seed: int, action_seed: int, same_state=None, probes: bool = True,
              **options):
    """Step the NumPy and the compiled engine on the same random actions: every observation,
    outcome row and holding area equal, then the state (``same_state(a, b)``), the probes
    (admission systems) and a drain. Returns both engines and the outcome rows compared."""
    engines = [Engine(spec, num_envs, seed=seed, engine=name, **options) for name in ("numpy", "compiled")]
    assert [e.engine for e in engines] == ["numpy", "compiled"]
    rng = np.random.default_rng(action_seed)
    rows = 0
    for _ in range(steps):
        obs = [e.observe(include_in_service=True) for e in engines]
        np.testing.assert_array_equal(*obs)
        action = rng.integers(0, len(spec.actions), num_envs)
        done = [e.step(action) for e in engines]
        _assert_same_outcomes(*done)
        np.testing.assert_array_equal(engines[0].holding, engines[1].holding)
        rows += done[0].env.size
    if same_state is not None:
        same_state(*engines)
    if probes:
        _assert_same_outcomes(*(e.counterfactual(np.arange(0, num_envs, 2)) for e in engines))
    _assert_same_outcomes(*(e.drain() for e in engines))
    return engines[0], engines[1], rows


@pytest.fixture(scope="session")
def twin():
    """The compiled engine against the NumPy one (the reference): ``run`` steps both on the
    same actions and holds them equal, bit for bit; ``same_outcomes`` compares two rows' sets."""
    return types.SimpleNamespace(run=_run_both, same_outcomes=_assert_same_outcomes)


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
