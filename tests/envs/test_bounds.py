"""Observation bounds (envs/bounds.py): every observation of every scenario lies in the space,
and the bounds are the quantities they claim (max_jobs, servers, a cell's PRBs)."""

import warnings

import numpy as np
import pytest

import envs
from envs.bounds import observation_high


@pytest.mark.parametrize("scenario", envs.available_scenarios())
def test_observations_stay_within_the_bounds(scenario):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lam=1.0 where the scenario fixes none
        env = envs.make_vector(scenario, 32, seed=0)
    rng, n = np.random.default_rng(0), env.single_action_space.n
    for t in range(150):  # accept-all every other step loads the system
        obs, *_ = env.step(np.ones(32, int) if t % 2 else rng.integers(0, n, 32))
        assert env.observation_space.contains(obs), (scenario, t)


def test_the_bounds_are_the_known_quantities():
    env = envs.make_vector("paper_tandem", 2, include_in_service=True, max_jobs=300)
    np.testing.assert_array_equal(env.single_observation_space.high, [300, 300, 300, 3, 5, 2])
    cell = envs.make_vector("cell_small", 64, seed=1, lam=5.0)
    spec, enc = cell.spec, cell.driver.encoding
    high, used = observation_high(spec, enc, 1 << 16), enc.cell_layout().used
    assert high[used] == spec.block.prbs
    seen = np.zeros_like(high)
    for _ in range(300):
        seen = np.maximum(seen, cell.step(np.ones(64, int))[0].max(0))
    assert seen[used] == spec.block.prbs  # accept-all fills the cell: the bound is reached
