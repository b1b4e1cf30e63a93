"""experiments/evaluate.py's own flags (its comparisons are tested with the study and the cell)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

POLICY = str(Path(__file__).resolve().parents[2] / "checkpoints" / "paper_tandem" / "policy.pt")


@pytest.fixture
def evaluate_cli(experiment):
    threads = torch.get_num_threads()
    yield experiment("evaluate")
    torch.set_num_threads(threads)


def test_the_forward_pass_runs_on_the_threads_asked_for(evaluate_cli, capsys):
    """One thread by default: two on a core another process uses spin (20 ms a step of 128 rows
    instead of 0.6 ms)."""
    torch.set_num_threads(2)
    evaluate_cli.main(["--checkpoint", POLICY, "--arrivals", "2000", "--num-envs", "16"])
    assert torch.get_num_threads() == 1 and "acceptance" in capsys.readouterr().out


def test_threads_below_one_are_refused_by_name(evaluate_cli, capsys):
    with pytest.raises(SystemExit) as stopped:
        evaluate_cli.main(["--checkpoint", POLICY, "--threads", "0"])
    assert stopped.value.code == 2 and "--threads must be >= 1, got 0" in capsys.readouterr().err
