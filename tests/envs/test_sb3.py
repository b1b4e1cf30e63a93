"""Stable-Baselines3 as a client (envs/sb3.py): SB3's checker and make_vec_env on every id,
and the batched adapter: same rewards as the vector env, SB3's reset-on-done, PPO trains."""

import importlib
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402

import envs  # noqa: E402
import envs.sb3  # noqa: E402
from envs.registration import scenario_ids  # noqa: E402


@pytest.mark.parametrize("key", sorted(scenario_ids()))
def test_sb3_checker_and_make_vec_env_on_every_id(key):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make(key))
        venv = make_vec_env(key, n_envs=2, seed=0)  # passes render_mode="rgb_array", retries without
    assert not [w for w in caught if "infinity" in str(w.message) or "unbounded" in str(w.message)]
    assert isinstance(venv, DummyVecEnv) and venv.num_envs == 2
    obs = venv.reset()
    for _ in range(5):
        obs, rew, done, infos = venv.step(np.ones(2, int))
    assert obs.shape == (2, venv.observation_space.shape[0]) and rew.shape == (2,) and len(infos) == 2
    assert venv.observation_space.contains(obs[0])


@pytest.mark.parametrize("scenario, options", [("paper_tandem", {}), ("cell_small", {"lam": 5.0})])
def test_adapter_rewards_are_the_vector_envs(scenario, options):
    """Same seed and actions: the same observations and rewards (as float32) step by step."""
    n, rng = 64, np.random.default_rng(1)
    sb3 = envs.sb3.make(scenario, n, seed=3, **options)
    ref = envs.make_vector(scenario, n, seed=3, **options)
    np.testing.assert_array_equal(sb3.reset(), ref.reset(seed=3)[0])
    total = 0.0
    for _ in range(200):
        act = rng.integers(0, 2, n)
        obs, rew, done, infos = sb3.step(act)
        o, r, *_, info = ref.step(act)
        np.testing.assert_array_equal(obs, o)
        np.testing.assert_array_equal(rew, r.astype(np.float32))
        assert rew.dtype == np.float32 and not done.any() and infos == [{}] * n
        assert sb3.last_info["completed"].keys() == info["completed"].keys()
        total += np.abs(rew).sum()
    assert total > 0


def test_a_horizon_ends_every_instance_and_resets_in_the_same_step():
    n, rng = 8, np.random.default_rng(2)
    sb3 = envs.sb3.make("paper_tandem", n, seed=4, horizon=5)
    ref = envs.make_vector("paper_tandem", n, seed=4, horizon=5)  # resets on the step after (next-step mode)
    sb3.reset()
    ref.reset(seed=4)
    for t in range(12):
        act = rng.integers(0, 2, n)
        obs, rew, done, infos = sb3.step(act)
        o, r, _, trunc, _ = ref.step(act)
        np.testing.assert_array_equal(rew, r.astype(np.float32))
        assert (done == trunc).all() and done.all() == (t % 5 == 4)
        if done.all():
            np.testing.assert_array_equal(np.stack([i["terminal_observation"] for i in infos]), o)
            assert all(i["TimeLimit.truncated"] for i in infos)
            o, *_ = ref.step(act)  # ref's reset step (actions ignored)
        np.testing.assert_array_equal(obs, o)


def test_vecenv_methods_reach_the_batched_env():
    venv = envs.sb3.make("paper_tandem", 4, seed=0)
    assert venv.get_attr("lam") == [8.0] * 4 and venv.get_attr("lam", [1, 2]) == [8.0] * 2
    assert venv.get_attr("render_mode") == [None] * 4 and venv.env_is_wrapped(gym.Wrapper) == [False] * 4
    venv.set_attr("lam", 2.0)
    assert venv.env.lam == 2.0
    with pytest.raises(ValueError, match="indices: set_attr acts on the one batched simulator.*Fix: pass indices=None"):
        venv.set_attr("lam", 3.0, indices=[0])
    assert [r[0].shape for r in venv.env_method("reset", seed=1)] == [(4, 3)] * 4
    runs = []
    for _ in range(2):
        venv.seed(11)
        venv.reset()
        runs.append([venv.step(np.ones(4, int))[1] for _ in range(50)])
    np.testing.assert_array_equal(runs[0], runs[1])
    with pytest.raises(RuntimeError, match="step_async"):
        venv.step_wait()


def test_ppo_trains_through_the_adapter():
    model = PPO("MlpPolicy", VecNormalize(envs.sb3.make("paper_tandem", 128, seed=0), norm_reward=False),
                n_steps=16, batch_size=512, n_epochs=2, seed=0)
    model.learn(4096)
    assert model.num_timesteps >= 4096
    actions, _ = model.predict(np.zeros((128, 3), np.float32), deterministic=True)
    assert actions.shape == (128,) and set(np.unique(actions)) <= {0, 1}


def test_without_sb3_the_import_says_which_extra(monkeypatch):
    for name in [m for m in sys.modules if m.split(".")[0] == "stable_baselines3"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.delitem(sys.modules, "envs.sb3")
    with pytest.raises(ImportError, match=r"envs.sb3 needs Stable-Baselines3.*pip install 'drl_ac\[dev\]'"):
        importlib.import_module("envs.sb3")
