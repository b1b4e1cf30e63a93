"""The experiment scripts run end to end at tiny budgets and write their files."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from drl_ac.evaluation.sweep import lagrangian, run_trials, summarize

ROOT = Path(__file__).resolve().parents[2]


def test_lagrangian_by_hand():
    m = {"objective": 0.1, "acceptance": 0.8, "violation": 0.05}
    assert lagrangian(m, 4.0, 0.1) == pytest.approx(-0.1 + 4 * 0.8 * 0.05)


def test_summarize_picks_smallest_feasible_lam():
    results = [{"lam": lam, "seed": s, "g": 0.1 * lam, "violation": v, "acceptance": 0.9, "eps": 0.1}
               for lam, v in ((1, 0.2), (2, 0.12), (4, 0.08), (8, 0.05)) for s in (0, 1)]
    rows, lam_star = summarize(results)
    assert lam_star == 4 and [r["lam"] for r in rows] == [1, 2, 4, 8]


def test_sweep_script_writes_results(tmp_path):
    out = tmp_path / "sweep"
    subprocess.run([sys.executable, str(ROOT / "experiments/sweep.py"), "--lams", "1", "8", "--seeds", "0",
                    "--steps", "2000", "--num-envs", "64", "--arrivals", "500", "--workers", "2", "--out", str(out)],
                   check=True, capture_output=True, text=True)
    data = json.loads((out / "sweep.json").read_text())
    assert [r["lam"] for r in data["rows"]] == [1.0, 8.0]
    assert (out / "sweep.csv").is_file() and (out / "trials.csv").is_file()


MM1 = {"name": "mm1", "arrival": {"dist": "exponential", "rate": 0.9},
       "stations": [{"name": "s", "servers": 1, "service": {"dist": "exponential", "mean": 1.0}}],
       "d_ub": 5.0, "eps": 0.1, "lam": 2.0, "delay": "sojourn"}


def tiny_trials(scenario: str) -> list[dict]:
    # learning_starts below steps, so the trials do take gradient steps (the default 20,000 would not)
    return [{"scenario": scenario, "lam": lam, "seed": 3, "steps": 4000, "num_envs": 64, "arrivals": 2000,
             "train": {"learning_starts": 1000}} for lam in (1.0, 4.0)]


@pytest.fixture
def local_ray():
    """A local Ray with 2 CPUs, no dashboard, no usage reporting, never another cluster."""
    ray = pytest.importorskip("ray", reason="Ray not installed (pip install -e '.[distributed]')")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("RAY_ADDRESS", raising=False)
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()


def test_ray_gives_the_same_results_as_local_processes(tmp_path, local_ray):
    path = tmp_path / "mm1.yaml"
    path.write_text(yaml.safe_dump(MM1))
    trials = tiny_trials(str(path))
    pooled = run_trials(trials, workers=2)
    node = local_ray.get_runtime_context().get_node_id()
    on_ray = run_trials(trials, use_ray=True)
    assert [(r["lam"], r["seed"]) for r in on_ray] == [(1.0, 3), (4.0, 3)]
    # every metric bit for bit (repr round-trips floats, and NaN == NaN there), same order
    assert repr(on_ray) == repr(pooled)
    assert all(r["training"]["loss"] > 0 for r in on_ray)  # gradient steps were taken (and agree)
    # run_trials used the fixture's Ray (2 CPUs) as it was, and left it running
    assert local_ray.is_initialized() and local_ray.get_runtime_context().get_node_id() == node
    assert local_ray.cluster_resources()["CPU"] == 2


def test_trial_in_this_process_matches_and_keeps_thread_count(tmp_path):
    # the process pool above runs trials in fresh processes; in this process too the numbers agree
    import torch

    path = tmp_path / "mm1.yaml"
    path.write_text(yaml.safe_dump(MM1))
    trial = tiny_trials(str(path))[1]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        here = run_trials([trial], workers=1)
        assert torch.get_num_threads() == 2  # restored after the trial's own single thread
    finally:
        torch.set_num_threads(threads)
    assert repr(here) == repr(run_trials([trial], workers=2))


def test_reproduce_script_writes_plots_and_summary(tmp_path):
    out = tmp_path / "repro"
    subprocess.run([sys.executable, str(ROOT / "experiments/reproduce.py"), "--scenarios", "paper_tandem",
                    "--seeds", "2", "--steps", "2000", "--num-envs", "64", "--arrivals", "500", "--points", "3",
                    "--out", str(out)], check=True, capture_output=True, text=True)
    for key in ("violation", "objective", "acceptance", "throughput"):
        assert (out / f"paper_tandem_{key}.png").stat().st_size > 1000
    summary = json.loads((out / "summary.json").read_text())
    assert summary["paper_tandem"]["seeds"] == 2
    assert "throughput without AC" in (out / "summary.md").read_text()
