"""The experiment scripts run end to end at tiny budgets and write their files."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
                    "--steps", "8000", "--num-envs", "64", "--arrivals", "2000", "--workers", "2", "--out", str(out)],
                   check=True, capture_output=True, text=True)
    data = json.loads((out / "sweep.json").read_text())
    assert [r["lam"] for r in data["rows"]] == [1.0, 8.0]
    assert (out / "sweep.csv").is_file() and (out / "trials.csv").is_file()


def test_ray_path_on_local_cluster():
    pytest.importorskip("ray", reason="Ray not installed (pip install -e '.[distributed]')")
    trials = [{"scenario": "paper_tandem", "lam": 8.0, "seed": 0, "steps": 4000, "num_envs": 64, "arrivals": 1000}]
    (result,) = run_trials(trials, use_ray=True)
    assert 0 <= result["violation"] <= 1


def test_ray_missing_gives_install_hint(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(RuntimeError, match=r"pip install -e \".\[distributed\]\""):
        run_trials([{}], use_ray=True)


def test_reproduce_script_writes_plots_and_summary(tmp_path):
    out = tmp_path / "repro"
    subprocess.run([sys.executable, str(ROOT / "experiments/reproduce.py"), "--scenarios", "paper_tandem",
                    "--seeds", "2", "--steps", "20000", "--num-envs", "128", "--arrivals", "2000", "--points", "5",
                    "--out", str(out)], check=True, capture_output=True, text=True)
    for key in ("violation", "objective", "acceptance", "throughput"):
        assert (out / f"paper_tandem_{key}.png").stat().st_size > 1000
    summary = json.loads((out / "summary.json").read_text())
    assert summary["paper_tandem"]["seeds"] == 2
    assert "throughput without AC" in (out / "summary.md").read_text()
