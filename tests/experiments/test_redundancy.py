"""experiments/redundancy.py is a preset study: its settings are the command its docstring
documents, and every flag of experiments/study.py still overrides them. What the study runs
is tested where it lives: the spec at a load and a smoke study in
tests/drl_ac/study/test_run.py, the exact M/G/1-PS mean response of d = 1 in
tests/drl_ac/evaluation/test_steady.py, the rules in tests/envs/systems/redundancy/test_rules.py."""

import shlex

from drl_ac.study.run import StudyConfig, build_parser


def documented(module) -> str:
    """The command after "The same as:" in the script's docstring, on one line."""
    text = module.__doc__.split("The same as:", 1)[1].split("\n\n")[1]
    return " ".join(shlex.split(text.replace("\\\n", " ")))


def test_the_preset_is_the_documented_study(experiment):
    script = experiment("redundancy")
    assert script.PRESET.command() == documented(script)
    assert script.PRESET.loads == (0.3, 0.5, 0.7, 0.9) and script.PRESET.base == "rule"


def test_flags_override_the_preset(experiment):
    preset = experiment("redundancy").PRESET
    args = build_parser(preset).parse_args(["--loads", "0.9", "--budget", "smoke", "--no-calibrate"])
    config = StudyConfig(**vars(args))
    assert (config.loads, config.budget, config.calibrate) == ((0.9,), "smoke", False)
    assert (config.snapshots, config.reset_backlog, config.base) == (1, 200, "rule")
