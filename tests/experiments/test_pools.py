"""experiments/pools.py, small: every part runs; the measured busy fractions agree with the
formula where it is exact, and the simulated limit of 'none' (two M/M/1 queues) is near the
formula's bound."""

import json


def test_quick_run_writes_tables_and_the_figure(experiment, tmp_path):
    pools = experiment("pools")
    out = pools.main(["--quick", "--policies", "none", "full replication", "--out", str(tmp_path)])
    assert (tmp_path / "latency_vs_tau.png").stat().st_size > 1000
    assert json.loads((tmp_path / "pools.json").read_text()).keys() == {"loads", "stability", "curves"}
    for row in out["loads"]:
        assert max(row["z"]) < 4, row
    none = next(r for r in out["stability"] if r["policy"] == "none")
    assert 0.75 < none["simulated"] / none["formula"] < 1.3  # 3 bisection steps: a coarse bracket
    assert len(out["curves"]) == 2 and all(len(c["mean"]) == 3 for c in out["curves"])
