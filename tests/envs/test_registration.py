"""Gymnasium ids and options (envs/registration.py): every packaged scenario reachable through
gymnasium.make and all three modes of gymnasium.make_vec, options accepted or refused by name."""

import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs import SpecError, load_spec
from envs.registration import ENV_OPTIONS, SPEC_FIELDS, env_id, scenario_ids

IDS = sorted(scenario_ids())


def test_naming_rule_and_the_ids_that_existed_before():
    assert env_id("paper_tandem") == "drl_ac/PaperTandem-v0"
    assert env_id("cell_5g") == "drl_ac/Cell5G-v0"
    assert env_id("mmc_c5_overload") == "drl_ac/MmcC5Overload-v0"
    assert env_id("redundancy_ps") == "drl_ac/RedundancyPs-v0"
    assert {"drl_ac/PaperTandem-v0", "drl_ac/PaperAcyclic-v0", "drl_ac/Tandem-v0", "drl_ac/Acyclic-v0"} <= set(IDS)
    assert sorted(scenario_ids().values()) == envs.available_scenarios()  # one id per scenario, none shared
    for key, scenario in scenario_ids().items():
        spec = gym.spec(key)
        assert spec.kwargs == {"scenario": scenario}
        assert spec.vector_entry_point == "envs.registration:make_vector_env"
    assert envs.GYM_IDS == list(scenario_ids())


def test_spec_fields_are_those_with_overrides_accepts():
    with pytest.raises(SpecError) as err:
        load_spec("paper_tandem").with_overrides(bogus=1)
    listed = re.search(r"override only (.*)\.$", str(err.value)).group(1)
    assert tuple(sorted(listed.split(", "))) == SPEC_FIELDS


@pytest.mark.parametrize("key", IDS)
def test_every_id_in_gymnasium_make_and_the_three_make_vec_modes(key):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gym.make(key, render_mode=None)
        check_env(env.unwrapped)
        obs, _ = env.reset(seed=0)
        for _ in range(5):
            obs, *_ = env.step(env.action_space.sample())
    assert not [w for w in caught if "infinity" in str(w.message)]  # finite observation bounds
    assert env.observation_space.contains(obs)
    n_actions = env.action_space.n
    for mode in ("sync", "async"):
        venv = gym.make_vec(key, num_envs=2, vectorization_mode=mode)
        obs, _ = venv.reset(seed=1)
        for _ in range(3):
            obs, rew, term, trunc, _ = venv.step(np.ones(2, int))
        assert obs.shape == (2, env.observation_space.shape[0]) and rew.shape == (2,)
        venv.close()
    venv = gym.make_vec(key, num_envs=64, vectorization_mode="vector_entry_point")
    assert isinstance(venv, envs.AdmissionVectorEnv) and venv.num_envs == 64
    assert venv.env_spec.id == key and venv.spec.name == scenario_ids()[key]
    obs, _ = venv.reset(seed=1)
    for _ in range(20):
        obs, rew, *_ = venv.step(np.random.default_rng(0).integers(0, n_actions, 64))
    assert venv.observation_space.contains(obs) and rew.shape == (64,)
    assert gym.make_vec(key, num_envs=3).num_envs == 3  # the default mode is the vector entry point
    assert repr(venv) == f"AdmissionVectorEnv({key}, num_envs=64)"


def test_vector_entry_point_is_make_vector():
    """Same scenario, seed and actions: the same observations and rewards."""
    a = gym.make_vec("drl_ac/PaperTandem-v0", 32, vectorization_mode="vector_entry_point", d_ub=20)
    b = envs.make_vector("paper_tandem", 32, d_ub=20)
    rng = np.random.default_rng(3)
    oa, _ = a.reset(seed=5)
    ob, _ = b.reset(seed=5)
    for _ in range(100):
        act = rng.integers(0, 2, 32)
        oa, ra, *_ = a.step(act)
        ob, rb, *_ = b.step(act)
        np.testing.assert_array_equal(oa, ob)
        np.testing.assert_array_equal(ra, rb)
    assert a.spec.d_ub == 20


def test_render_modes_other_than_none_are_refused():
    for make in (lambda **kw: gym.make("drl_ac/Tandem-v0", lam=1, **kw),
                 lambda **kw: gym.make_vec("drl_ac/Tandem-v0", 4, vectorization_mode="vector_entry_point",
                                           lam=1, **kw)):
        make(render_mode=None)
        # a TypeError, which SB3's make_vec_env retries without render_mode
        with warnings.catch_warnings(), pytest.raises(TypeError, match="render_mode: 'human' is not supported.*"
                                                                       "Fix: pass render_mode=None"):
            warnings.simplefilter("ignore")  # gymnasium.make's own: 'human' is not in render_modes
            make(render_mode="human")


def test_options_pass_through_gymnasium_make():
    env = gym.make("drl_ac/PaperTandem-v0", horizon=3, include_in_service=True, d_ub=30, lam=2.5, max_jobs=500)
    assert env.observation_space.shape == (6,) and env.unwrapped.spec_network.d_ub == 30
    assert env.unwrapped.lam == 2.5 and env.observation_space.high[0] == 500  # queues bounded by max_jobs
    env.reset(seed=0)
    assert [env.step(1)[3] for _ in range(3)] == [False, False, True]
    rewards = set()
    for _ in range(200):
        _, r, _, trunc, _ = env.step(1)
        rewards.add(round(r, 6))
        if trunc:
            env.reset()
    assert rewards <= {0.0, 0.25, -2.25, 0.5, 0.75}  # sums of 2.5*eps (met) and -2.5*(1 - eps) per step
    env = gym.make("drl_ac/PaperTandem-v0", max_episode_steps=4)  # Gymnasium's own time limit
    env.reset(seed=0)
    assert [env.step(0)[3] for _ in range(4)] == [False, False, False, True]


def test_unknown_options_are_refused_by_name():
    with pytest.raises(SpecError, match=r"rho: not an option of the environment.*Fix: pass environment options "
                                        r"\(horizon, .*spec fields \(d_ub, .*max_episode_steps"):
        gym.make("drl_ac/PaperTandem-v0", rho=0.5)
    with pytest.raises(SpecError, match="horizn.*did you mean 'horizon'"):
        gym.make_vec("drl_ac/PaperTandem-v0", 4, vectorization_mode="vector_entry_point", horizn=5)
    with pytest.raises(SpecError, match="cannot be overridden"):
        envs.make_vector("paper_tandem", 2, rho=0.5)
    assert set(ENV_OPTIONS) == set(envs.ENV_OPTIONS)


def test_make_vec_options_and_time_limit():
    env = gym.make_vec("drl_ac/Cell5G-v0", 8, vectorization_mode="vector_entry_point", lam=4.0,
                       max_episode_steps=3)
    env.reset(seed=0)
    assert env.lam == 4.0 and env.horizon == 3
    assert [env.step(np.ones(8, int))[3].all() for _ in range(3)] == [False, False, True]
    with pytest.raises(SpecError, match="max_episode_steps"):
        gym.make_vec("drl_ac/Cell5G-v0", 2, vectorization_mode="vector_entry_point", lam=1, horizon=5,
                     max_episode_steps=3)


def test_the_multiplier_is_said():
    """Fixed by the scenario or the user; 1.0 with a warning where the scenario leaves it to
    automatic tuning and the reward reads it; 'auto' refused."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gym.make("drl_ac/PaperTandem-v0").unwrapped.lam == 8.0
        assert envs.make_vector("paper_tandem", 2, lam=None).lam == 8.0  # None: not given
        assert gym.make("drl_ac/Tandem-v0", lam=3).unwrapped.lam == 3.0
        assert gym.make("drl_ac/Pools-v0").unwrapped.lam == 1.0  # response time: the reward ignores lam
    with pytest.warns(UserWarning, match="tandem: the scenario fixes no lam.*lam=1.0"):
        assert gym.make("drl_ac/Tandem-v0").unwrapped.lam == 1.0
    with pytest.warns(UserWarning, match="cell_small: the scenario fixes no lam"):
        assert envs.make_vector("cell_small", 2).lam == 1.0
    for make in (lambda: gym.make("drl_ac/Tandem-v0", lam="auto"), lambda: envs.make_vector("tandem", 2, lam="auto")):
        with pytest.raises(SpecError, match="lam: 'auto' needs a learner.*Fix: give a number"):
            make()
    with pytest.raises(SpecError, match="lam: must be >= 0"):
        gym.make("drl_ac/Tandem-v0", lam=-1)
