"""experiments/sb3_ppo.py: SB3's PPO through envs.sb3, judged by the project's evaluation."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "sb3_ppo.py"


def load_script():
    spec = importlib.util.spec_from_file_location("drl_ac_sb3_ppo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_tiny_run_trains_evaluates_and_saves(tmp_path, capsys):
    out = load_script().main(["--steps", "2048", "--num-envs", "32", "--n-steps", "16", "--batch-size", "256",
                              "--epochs", "1", "--eval-arrivals", "2000", "--save", str(tmp_path / "ppo.zip")])
    text = capsys.readouterr().out
    assert out["decisions"] >= 2048 and 0.0 <= out["acceptance"] <= 1.0 and out["arrivals"] >= 2000
    assert "final evaluation (paper_tandem, eps 0.1): violation" in text and "lam 8" in text
    assert (tmp_path / "ppo.zip").is_file() and (tmp_path / "ppo.pkl").is_file()


def test_raw_observations_on_request(capsys):
    out = load_script().main(["--steps", "512", "--num-envs", "16", "--n-steps", "32", "--batch-size", "256",
                              "--epochs", "1", "--eval-arrivals", "1000", "--no-normalize", "--scenario", "tandem",
                              "--lam", "3"])
    assert out["decisions"] >= 512 and "lam 3" in capsys.readouterr().out


def test_a_budget_is_required():
    with pytest.raises(SystemExit):
        load_script().main([])
