"""experiments/study.py as a user runs it: --budget smoke end to end on redundancy_ps and pools
(two processes at once) exits 0 and writes the files it says; --help shows every field's
doc; a bad value is one line naming the flag."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "experiments" / "study.py"
SMOKE = ["--budget", "smoke", "--steps", "2000", "--num-envs", "16", "--snapshots", "1", "--quiet"]


def cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(STUDY), *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_smoke_studies_of_both_control_systems_write_their_files(tmp_path):
    runs = {"redundancy_ps": (cli("--scenario", "redundancy_ps", *SMOKE, "--out", str(tmp_path / "r")), None),
            "pools": (cli("--scenario", "pools", "--loads", "0.5", *SMOKE, "--out", str(tmp_path / "p")), "0.5")}
    for name, (proc, load) in runs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        folder = tmp_path / name[0] / ("" if load is None else f"load-{load}")
        assert {"policy.pt", "policy.pt2", "policy.onnx", "metrics.json", "comparison.json", "report.md"} <= \
            {p.name for p in folder.iterdir()}
        assert {"study.json", "study.md", "study.png"} <= {p.name for p in (tmp_path / name[0]).iterdir()}
        comparison = json.loads((folder / "comparison.json").read_text())
        assert comparison["base"] == name and "outcome" in comparison["verdict"]
        assert f"--scenario {name}" in comparison["command"] and "| policy | rule |" in (folder / "report.md").read_text()
        assert "learned - best" in out  # the study's table on stdout
    pools = json.loads((tmp_path / "p" / "load-0.5" / "comparison.json").read_text())
    assert "always pool1-replicate@0" in pools["rows"]  # every constant action is a comparator


def test_help_and_a_bad_value(tmp_path):
    helped = subprocess.run([sys.executable, str(STUDY), "--help"], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert helped.returncode == 0 and "--quantiles" in helped.stdout and "lambda*(d)" in helped.stdout
    bad = subprocess.run([sys.executable, str(STUDY), "--loads", "0.5", "-1", "--out", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert bad.returncode == 2 and bad.stderr.startswith("error: loads (--loads)") and bad.stderr.count("\n") == 1
    assert not any(tmp_path.iterdir())
