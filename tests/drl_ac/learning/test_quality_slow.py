"""Long statistical runs, skipped by default: python -m pytest -m slow."""

import pytest

from drl_ac import TrainConfig, Trainer, evaluate


@pytest.mark.slow
def test_paper_tandem_default_training_meets_quality_target():
    """Issue target: violation <= 0.105 and acceptance >= 0.85 over 200k arrivals (lam 8, eps 0.1)."""
    trainer = Trainer(TrainConfig(scenario="paper_tandem", lam="scenario"))
    trainer.train()
    m = evaluate(trainer.policy(), trainer.spec, arrivals=200_000)
    assert m["violation"] <= 0.105 and m["acceptance"] >= 0.85, m


@pytest.mark.slow
def test_engine_mmc_tail_high_load_long_run():
    """Erlang C tail at rho = 0.95, where warm-up and run length matter most."""
    import numpy as np

    from envs import Engine, NetworkSpec
    from envs.distributions import Exponential
    from envs.queueing import mmc_wait_tail
    from envs.rollout import accept_all, collect

    c, mu, lam = 2, 0.5, 0.95
    spec = NetworkSpec.tandem([c], [Exponential(1 / mu)], Exponential(1 / lam), d_ub=10, eps=0.1)
    done, _ = collect(Engine(spec, 1000, seed=9), accept_all, 6000, 4000)
    for t in (0.0, 10.0, 30.0):
        x = np.bincount(done.env, weights=(done.wait[:, 0] > t) * 1.0) / np.bincount(done.env)
        se = x.std(ddof=1) / np.sqrt(x.size)
        assert abs(x.mean() - mmc_wait_tail(c, lam, mu, t)) < 4.5 * se
