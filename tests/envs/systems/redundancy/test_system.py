"""The redundancy plugin against envs.systems.redundancy.theory (an independent implementation:
closed forms and quadrature of P(X > x)^d) and against hand values."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from envs import NetworkSpec, load_spec
from envs.distributions import (
    Deterministic,
    Distribution,
    Empirical,
    Exponential,
    Gamma,
    HyperExponential,
    LogNormal,
    Lomax,
    PhaseMixture,
)
from envs.spec import SCENARIO_DIR
from envs.systems.redundancy import theory
from envs.systems.redundancy.system import expected_min

BASE = yaml.safe_load((SCENARIO_DIR / "redundancy_ps.yaml").read_text())


def _with(rate: float, d: list[int], **block) -> NetworkSpec:
    cfg = copy.deepcopy(BASE)
    cfg["arrival"]["rate"] = rate
    cfg["redundancy"]["d"] = d
    cfg["redundancy"].update(block)
    return NetworkSpec.from_dict(cfg)


@pytest.mark.parametrize("dist", [Exponential(2.0), Deterministic(1.5), Gamma(1.0, 0.5), Gamma(2.0, 3.0),
                                  LogNormal(1.0, 2.0), HyperExponential(1.0, 4.0), Lomax(3.0, 2.0),
                                  Empirical((0.5, 1.0, 2.5, 2.5)), PhaseMixture((0.1, 0.9), (0.19, 1.9))])
@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_expected_min_matches_the_theory(dist, d):
    assert expected_min(dist, d) == pytest.approx(theory.expected_min(d, "iid", size=dist), rel=1e-7)


def test_expected_min_for_many_copies_integrates_instead_of_expanding():
    """Past 50 copies the multinomial sum is not expanded (it grows as d^phases and its
    coefficients overflow): the quadrature agrees where both run."""
    from envs.systems.redundancy.system import _exponential_phases, _min_of_phases
    for dist in (HyperExponential(1.0, 4.0), PhaseMixture((0.1, 0.2, 0.3, 0.4), (0.5, 1.0, 2.0, 4.0))):
        assert expected_min(dist, 60) == pytest.approx(_min_of_phases(*_exponential_phases(dist), 60), rel=1e-6)
        assert 0 < expected_min(dist, 2000) < expected_min(dist, 60)
    assert expected_min(Exponential(1.0), 2000) == 1 / 2000


class _Uniform(Distribution):
    """A law envs has no closed form for: E[min of d] = 1 / (d + 1) on (0, 1)."""

    mean = 0.5

    def sample(self, rng, size):
        return rng.random(size)


@pytest.mark.parametrize("d", [2, 3, 6])
def test_expected_min_of_other_laws_by_draws(d):
    assert expected_min(_Uniform(), d) == pytest.approx(1.0 / (d + 1), rel=1e-2)


def test_capacity_of_redundancy_ps_is_lambda_star():
    """docs/systems/redundancy.md / the scenario's comment: lambda*(d) = 10, 8.0, 6.9, 6.2."""
    spec = load_spec("redundancy_ps")
    red = spec.block
    caps = spec.system.capacities()
    assert caps[1] == 10.0
    for d in (2, 3, 4):
        truth = theory.stability_threshold(10, d, "scaled", scale=red.scale, factor=red.factor)
        assert caps[d] == pytest.approx(truth, rel=1e-7)
        assert red.capacity(d) == pytest.approx(caps[d])
    assert caps[2] == pytest.approx(8.0, rel=1e-7)


def test_rate_9_with_d_2_only_is_flagged_and_rate_5_passes():
    problem = _with(9.0, [2]).system.stability_problem()
    assert problem.startswith("redundancy.d: arrivals at rate 9 exceed what the 10 servers can serve")
    assert "at most 8 with d = 2" in problem and "\n" not in problem
    assert not any(w in problem.lower() for w in ("reject", "violation", "lam", "accept"))
    assert load_spec("redundancy_ps").system.stability_problem() is None  # rate 5, d in 1..4
    assert _with(9.0, [1, 2]).system.stability_problem() is None  # d = 1 carries up to 10
    assert _with(10.0, [1, 2, 3, 4]).system.stability_problem() is not None  # at lambda*(1) itself
    assert _with(9.9, [1, 2, 3, 4]).system.stability_problem() is None


def test_the_old_false_warning_is_gone():
    """Was: 'stations[0] (server1): load 5.000 >= 1' (rate 5 over 10 servers is load 0.5)."""
    spec = load_spec("redundancy_ps")
    assert spec.stability_warning() is None
    spec.check_stable()
    assert "load 0.5 at d = 1" in spec.system.describe()


def test_identical_copies_waste_d_times_the_work():
    """Identical copies on PS servers all finish together: N / (d E[X])."""
    def spec(rate: float) -> NetworkSpec:
        cfg = copy.deepcopy(BASE)
        cfg["arrival"]["rate"] = rate
        cfg["redundancy"] = {"servers": 10, "kind": "ps", "copies": "identical",
                             "size": {"dist": "gamma", "mean": 1.0, "scv": 2.0}, "d": [3]}
        return NetworkSpec.from_dict(cfg)

    assert spec(3.0).system.capacities() == {3: pytest.approx(10 / 3)}
    assert spec(3.0).system.stability_problem() is None
    assert "at most 3.33 with d = 3" in spec(3.4).system.stability_problem()


def test_fcfs_checks_only_the_certain_bound():
    """FCFS copies start apart, so only the work of the shortest copy is certain: N / E[M_d]."""
    cfg = copy.deepcopy(BASE)
    cfg["redundancy"] = {"servers": 4, "kind": "fcfs", "copies": "iid", "size": {"dist": "exponential", "mean": 1.0},
                         "d": [2]}
    cfg["arrival"]["rate"] = 7.9
    spec = NetworkSpec.from_dict(cfg)
    assert spec.system.capacities() == {2: pytest.approx(8.0)}
    assert spec.system.stability_problem() is None
    cfg["arrival"]["rate"] = 8.0
    problem = NetworkSpec.from_dict(cfg).system.stability_problem()
    assert "shortest copy" in problem


def test_observation_and_reward():
    spec = load_spec("redundancy_ps")
    enc = spec.system.encoding(True)
    assert enc.pool and not enc.include_in_service and enc.candidates == 4 and enc.width == 15
    assert spec.system.reward_rule() == "response_time"
    assert type(spec.system.routing()).__name__ == "CopyToD"
    assert spec.actions == ("d1", "d2", "d3", "d4")


def test_an_overflowing_job_table_says_what_to_do_in_the_systems_words():
    from envs import CapacityError, Engine
    spec = _with(9.0, [4])
    sim = Engine(spec, 2, seed=0, capacity=4, max_jobs=32)
    with pytest.raises(CapacityError, match=r"max_jobs=32.*unstable.*copy jobs to fewer servers") as err:
        for _ in range(5000):
            sim.step(np.zeros(2, np.int64))
    assert "reject" not in str(err.value)
