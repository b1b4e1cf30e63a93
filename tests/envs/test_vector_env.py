"""The Gymnasium interfaces."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.reward import blocking_reward, reward


def test_vector_env_contract():
    env = envs.make_vector("paper_tandem", 8, seed=0)
    assert isinstance(env, gym.vector.VectorEnv)
    obs, info = env.reset(seed=0)
    assert obs.shape == (8, 3) and obs.dtype == np.float32
    seen_steps = set()
    for t in range(200):
        action = np.where(np.arange(8) % 2 == 0, 1, 0)
        obs, rew, term, trunc, info = env.step(action)
        c = info["completed"]
        assert {"env", "step", "accepted", "delay"} <= c.keys()
        assert len({v.shape for v in c.values()}) == 1 and all(v.ndim == 1 for v in c.values())
        # rejected decisions (odd instances) are known in the same step
        rejected_now = c["step"][~c["accepted"]]
        assert (rejected_now == t).all() and (~c["accepted"]).sum() == 4
        assert (c["accepted"] == (c["env"] % 2 == 0)).all()
        met = c["delay"] < env.spec.d_ub
        r = reward(c["accepted"], met, env.lam, env.spec.eps)
        np.testing.assert_allclose(rew, np.bincount(c["env"], weights=r, minlength=8))
        seen_steps.update(zip(c["env"].tolist(), c["step"].tolist(), strict=True))
        assert not term.any() and not trunc.any()
    assert len(seen_steps) > 0.9 * 8 * 200  # each decision reported once


def test_horizon_truncates_and_next_step_resets():
    env = envs.make_vector("paper_tandem", 4, seed=1, horizon=5)
    env.reset(seed=1)
    for _ in range(4):
        assert not env.step(np.ones(4, int))[3].any()
    assert env.step(np.ones(4, int))[3].all()
    obs, rew, *_ = env.step(np.ones(4, int))
    assert (obs == 0).all() and (rew == 0).all()


def test_bad_actions_are_rejected():
    env = envs.make_vector("paper_tandem", 4, seed=1)
    with pytest.raises(ValueError, match="actions"):
        env.step(np.array([1, 2, 0, 1]))


def test_reward_table_eq7():
    acc = np.array([1, 1, 0, 0])
    met = np.array([1, 0, 1, 0])
    np.testing.assert_allclose(reward(acc, met, 8.0, 0.1), [0.8, -7.2, -1.0, 0.0])


def test_reward_table_of_a_cell():
    """Carried UEs earn lam * eps, blocked ones cost 1, every drop in the step costs lam."""
    carried, drops = np.array([1, 1, 0, 0]), np.array([0, 2, 0, 1])
    np.testing.assert_allclose(blocking_reward(carried, True, drops, 5.0, 0.02), [0.1, -9.9, -1.0, -6.0])


def test_a_cell_is_paid_per_step_for_its_blocks_and_drops():
    env = envs.make_vector("cell_small", 64, seed=3, lam=5.0)
    env.reset(seed=3)
    rng, seen = np.random.default_rng(0), 0
    for t in range(200):
        actions = (rng.random(64) < 0.8).astype(np.int64)
        _, rew, *_, info = env.step(actions)
        c = info["completed"]
        now = (c["step"] == t) & c["decision"]
        blocked = np.zeros(64, bool)
        blocked[c["env"][now & c["blocked"]]] = True
        drops = np.bincount(c["env"][c["dropped"] & c["decision"]], minlength=64)
        carried = (actions == 1) & ~blocked
        np.testing.assert_allclose(rew, np.where(carried, 5.0 * env.spec.eps, -1.0) - 5.0 * drops)
        seen += drops.sum()
    assert seen > 20  # drops do happen


@pytest.mark.parametrize("env_id", ["drl_ac/PaperTandem-v0", "drl_ac/PaperAcyclic-v0",
                                    "drl_ac/Tandem-v0", "drl_ac/Acyclic-v0"])
def test_registered_single_env_passes_gymnasium_checker(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped)
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    total = 0.0
    for _ in range(50):
        obs, r, term, trunc, info = env.step(1)
        total += r
    assert not term


def test_reset_mask_empties_only_the_masked_instances():
    env = envs.make_vector("paper_tandem", 4, seed=2)
    for _ in range(200):
        obs, *_ = env.step(np.ones(4, int))
    assert (obs.sum(1) > 0).all()
    obs, _ = env.reset(options={"reset_mask": np.array([True, False, True, False])})
    assert obs[[0, 2]].sum() == 0 and (obs[[1, 3]].sum(1) > 0).all()
    with pytest.raises(ValueError, match="reset_mask"):
        env.reset(options={"reset_mask": np.ones(3, bool)})


def test_info_carries_action_and_success():
    env = envs.make_vector("tandem", 8, seed=0)
    env.reset(seed=0)
    for _ in range(100):
        _, _, _, _, info = env.step(np.ones(8, int))
        c = info["completed"]
        assert {"action", "success"} <= c.keys()
        np.testing.assert_array_equal(c["success"], c["delay"] < env.spec.d_ub)


def test_a_network_env_refuses_to_run_without_the_probes_its_rewards_read():
    """Rejections pay by their probe's outcome (eq. 7): without probes a network's rewards
    would be wrong without a word; a cell never reads them and runs without."""
    with pytest.raises(ValueError, match=r"probes=False: paper_tandem's rewards.*Fix"):
        envs.AdmissionVectorEnv(envs.load_spec("paper_tandem"), 2, probes=False)
    envs.AdmissionVectorEnv(envs.load_spec("cell_small"), 2, lam=1.0, probes=False)
