"""experiments/coverage.py refuses bad counts and unknown cases before running anything (its
command runs in tests/test_docs.py; the cases themselves in tests/drl_ac/evaluation)."""

import pytest


@pytest.mark.parametrize("args, message", [(["--seeds", "1"], "--seeds must be at least 2"),
                                           (["--workers", "0"], "--workers and --max-steps must be at least 1"),
                                           (["--max-steps", "0"], "--workers and --max-steps must be at least 1"),
                                           (["--cases", "mm9"], "invalid choice: 'mm9'")])
def test_coverage_refuses_counts_below_one_and_unknown_cases(experiment, tmp_path, capsys, args, message):
    coverage = experiment("coverage")
    out = tmp_path / "c.jsonl"
    with pytest.raises(SystemExit):
        coverage.main([*args, "--out", str(out)])
    assert message in capsys.readouterr().err and not out.exists()
