"""experiments/pools.py, small: every part runs and writes its files; the measured busy
fractions agree with the formula where it is exact, and the simulated limit of 'none' (two
M/M/1 queues) is near the formula's bound. experiments/pools_control.py is a preset study:
its settings are the command its docstring documents (the study itself, and full
replication's exact M/M/1 mean response, in tests/drl_ac/study/test_run.py)."""

import json
import shlex


def test_quick_run_writes_tables_and_the_figure(experiment, tmp_path):
    pools = experiment("pools")
    out = pools.main(["--quick", "--policies", "none", "full replication", "--out", str(tmp_path)])
    assert (tmp_path / "latency_vs_tau.png").stat().st_size > 1000
    assert json.loads((tmp_path / "pools.json").read_text()).keys() == {"loads", "stability", "curves", "labels"}
    for row in out["loads"]:
        assert max(row["z"]) < 4, row
    none = next(r for r in out["stability"] if r["policy"] == "none")
    assert 0.75 < none["simulated"] / none["formula"] < 1.3  # 3 bisection steps: a coarse bracket
    assert len(out["curves"]) == 2 and all(len(c["mean"]) == 3 for c in out["curves"])
    assert out["labels"] and sum(r["count"] for r in out["labels"]) <= 8 * 2  # 8 instances x 2 labelled decisions
    assert all(r["label"] <= 0.0 for r in out["labels"])  # the rule's own action reads 0: the lowest is <= 0


def test_the_control_study_is_the_documented_preset(experiment):
    """experiments/pools_control.py is a preset study (what it runs: tests/drl_ac/study)."""
    script = experiment("pools_control")
    text = script.__doc__.split("The same as:", 1)[1].split("\n\n")[1]
    assert script.PRESET.command() == " ".join(shlex.split(text.replace("\\\n", " ")))
    assert script.PRESET.loads == (0.5, 0.8, 0.95) and script.PRESET.scenario == "pools"


def test_labels_follow_the_rescue_rule_on_pools_rescue(experiment, tmp_path):
    pools = experiment("pools")
    argv = ["--only", "labels", "--quick", "--label-scenario", "pools_rescue", "--out", str(tmp_path)]
    rows = pools.main([*argv, "--label-preempt", "2"])["labels"]
    assert rows and all(r["rule"].endswith("preempting after 2") and r["label"] <= 0.0 for r in rows)
    try:
        pools.main([*argv, "--label-preempt", "3"])
    except SystemExit as err:
        assert "--label-preempt 3" in str(err) and "one of 1, 2, 4, inf" in str(err)
    else:
        raise AssertionError("a rescue time the scenario does not offer was accepted")
