"""Rules tuned and measured in other processes (``drl_ac.study.background``): the same rules
and rows as in this one, each row measured once by whichever process is free."""

import os

import numpy as np
import pytest

from drl_ac import study
from drl_ac.rules.tuning import ConstantAction
from drl_ac.study.background import Claims, _rules_into
from envs import load_spec


def test_rules_tuned_and_measured_in_a_second_process_are_this_processes():
    """train.py tunes and measures the rules on the spare core while it trains: the same seed
    must give the same rules and the same per-instance figures (the comparison pairs on them)
    as doing it here, and the comparison built from them the same verdict."""
    spec = load_spec("mmc_c1")
    tuned = study.tune_rules(spec, 3, "smoke")
    here = study.RuleRows(tuned, study.measure_rules(tuned, spec, 3, "smoke"))
    there = study.BackgroundRules(spec, 3, "smoke").result()

    def seen(tuned):
        return {k: (r.rule.describe(), r.metrics["acceptance"], r.metrics["violation"]) for k, r in tuned.items()}

    assert seen(there.tuned) == seen(here.tuned) and len(here.tuned) >= 2
    assert set(there.rows) == set(here.tuned)
    for name, row in here.rows.items():
        assert row["rule"] == there.rows[name]["rule"] and row["acceptance"] == there.rows[name]["acceptance"]
        np.testing.assert_array_equal(row["per_instance"]["met"], there.rows[name]["per_instance"]["met"])
    policy = ConstantAction(1, "always accept")
    _, verdict = study.compare(policy, spec, 3, "smoke", tuned=here.tuned)
    _, given = study.compare(policy, spec, 3, "smoke", measured=there.rows)
    assert given == verdict


def test_background_rules_give_the_rules_first_then_measure_given_rules_only():
    """A control policy's guard needs the rules before their measures (``tuned``, then
    ``result``); a control system's rules tuned before training (its base rule) are only
    measured there."""
    spec = load_spec("mmc_c1")
    tuned = study.tune_rules(spec, 3, "smoke")
    background = study.BackgroundRules(spec, 3, "smoke")
    first = background.tuned()
    there = background.result()
    assert there.tuned is first and seen_rules(first) == seen_rules(tuned) and set(there.rows) == set(tuned)
    given = study.BackgroundRules(spec, 3, "smoke", tuned).result()
    assert seen_rules(given.tuned) == seen_rules(tuned) and set(given.rows) == set(tuned)


def seen_rules(tuned):
    return sorted(r.rule.describe() for r in tuned.values())


def test_background_rules_fall_back_to_this_process_when_the_second_cannot_start():
    """A script on standard input cannot be re-imported by a spawned process: the rules are
    then tuned and measured in the main one (not a hang, not an error)."""
    import subprocess
    import sys

    script = ("from drl_ac import study\nfrom envs import load_spec\n"
              "done = study.BackgroundRules(load_spec('mmc_c1'), 3, 'smoke').result(print)\n"
              "print(sorted(r.rule.describe() for r in done.tuned.values()), sorted(done.rows))\n")
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    tuned = study.tune_rules(load_spec("mmc_c1"), 3, "smoke")
    here = f"{seen_rules(tuned)} {sorted(tuned)}"
    assert "tuning them here" in out.stdout and out.stdout.strip().endswith(here)


def test_a_cells_rule_chains_tuned_in_two_processes_give_the_rules_of_one():
    """A cell's thresholds and guards are independent chains of families: tuned in one
    process each (``BackgroundRules``, two processes) they are the rules, in the order and
    with the figures, that one process tunes, and their rows come in that order whoever
    measured them; the claims' folder is removed; a chain that does not exist is refused."""
    from drl_ac import rules

    spec = load_spec("cell_small")  # no daily profile: no per-phase table (cell_5g's takes minutes here)
    assert rules.chains(spec) == 2 and rules.chains(load_spec("mmc_c1")) == 1
    tuned = study.tune_rules(spec, 3, "smoke")
    assert list(tuned) == ["accept-all", "PRB threshold", "per-type thresholds", "guard channel",
                           "fractional guard channel"]
    background = study.BackgroundRules(spec, 3, "smoke")
    there = background.result()  # each row measured once, by whichever process was free
    assert len(background.workers) == 2 and not os.path.exists(background.claims.folder)
    assert list(there.tuned) == list(tuned) and list(there.rows) == list(tuned)
    for name, r in tuned.items():
        assert there.tuned[name].rule.describe() == r.rule.describe()
        assert there.tuned[name].metrics["blocking"] == r.metrics["blocking"]
    one = study.BackgroundRules(spec, 3, "smoke", chain=1)  # --cell-rules guards: that chain, one process
    guards = one.tuned()
    one.cancel()
    assert len(one.workers) == 1 and list(guards) == ["guard channel", "fractional guard channel"]
    assert all(guards[name].rule.describe() == tuned[name].rule.describe() for name in guards)
    with pytest.raises(ValueError, match="chain must be None or one of 0..1"):
        study.tune_rules(spec, 3, "smoke", chain=2)


def test_background_rules_take_the_tuners_options_and_show_their_progress(capfd):
    """evaluate.py's --tune-arrivals reaches the tuner in the second process, with the rules and
    figures of this one, and its progress lines reach stderr as the tuning goes."""
    spec = load_spec("mmc_c1")
    there = study.BackgroundRules(spec, 3, "smoke", show=True, arrivals=1_500).result()
    here = study.tune_rules(spec, 3, "smoke", arrivals=1_500)
    assert list(there.tuned) == list(here)
    for name, r in here.items():
        assert there.tuned[name].rule.describe() == r.rule.describe()
        assert there.tuned[name].metrics["arrivals"] == r.metrics["arrivals"]
        assert there.tuned[name].metrics["violation"] == r.metrics["violation"]
    assert here["total threshold"].metrics["arrivals"] != study.tune_rules(spec, 3, "smoke")[
        "total threshold"].metrics["arrivals"]  # the option changed the sample
    assert "s] tuning the rules of mmc_c1 (smoke)" in capfd.readouterr().err


def test_a_row_is_claimed_once_and_a_process_measures_only_the_rows_no_other_took(tmp_path):
    """The claims are an exclusive create: the second take of a row fails, in any process. A
    chain's process sends its rules, then (name, row) for each row not yet taken, in order,
    then None; the rows are those this process measures (``measure_row``)."""
    claims = Claims(str(tmp_path))
    assert claims.take(0, 1) and not claims.take(0, 1) and claims.take(1, 1)
    spec = load_spec("mmc_c1")
    tuned = study.tune_rules(spec, 3, "smoke")
    sent = []
    _rules_into(sent.append, spec, 3, "smoke", tuned, None, 0, str(tmp_path), False, {}, 2)
    names = list(tuned)
    assert len(names) >= 3 and sent[0] is tuned and sent[-1] is None
    assert [name for name, _ in sent[1:-1]] == [names[0], *names[2:]]  # row 1 was taken above
    for name, row in sent[1:-1]:
        here = study.measure_row(tuned[name], spec, 3, "smoke")
        assert row["rule"] == here["rule"] and row["acceptance"] == here["acceptance"]
    assert sorted(os.listdir(tmp_path)) == sorted(["0-1", "1-1", *(f"0-{i}" for i in range(len(names)) if i != 1)])

