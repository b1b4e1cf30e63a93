"""experiments/train.py as a new user meets it: Ctrl-C, refusals, one-line errors, strict
metrics.json, W&B names, --help, the Gymnasium ids, and the settings checks behind them."""

import contextlib
import importlib.util
import json
import math
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import yaml

from drl_ac import LearnerConfig, TrainConfig
from drl_ac.checkpoint import finite_json, load_file
from envs import NetworkSpec
from envs.spec import SCENARIO_DIR

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "experiments/train.py"
EVALUATE = ROOT / "experiments/evaluate.py"

MM1 = {"name": "mm1", "arrival": {"dist": "exponential", "rate": 0.9},
       "stations": [{"name": "s", "servers": 1, "service": {"dist": "exponential", "mean": 1.0}}],
       "d_ub": 5.0, "eps": 0.1, "lam": 2.0, "delay": "sojourn"}
# small and fast: the YAML's fixed lam, so no calibration pass
SMALL = ["--num-envs", "128", "--eval-arrivals", "2000", "--quiet", "--device", "cpu", "--calibrate", "off",
         "--compare", "off", "--export", "off"]


def load_script(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train = load_script(TRAIN, "drl_ac_train_cli")
evaluate_cli = load_script(EVALUATE, "drl_ac_evaluate_cli")


def run_main(module, argv, capsys) -> tuple[int, str, str]:
    """main(argv) in this process: (exit code, stdout, stderr)."""
    code = 0
    try:
        module.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def mm1_yaml(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("scenario") / "mm1.yaml"
    path.write_text(yaml.safe_dump(MM1))
    return path


@pytest.fixture(scope="module")
def interrupted_run(mm1_yaml, tmp_path_factory):
    """A run stopped by SIGINT, then resumed with the command it printed."""
    out = tmp_path_factory.mktemp("runs") / "run"
    cmd = [sys.executable, str(TRAIN), "--scenario", str(mm1_yaml), "--steps", "100000000", "--out", str(out),
           "--lam", "scenario", *SMALL]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=out.parent)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while not any(line.startswith("training on") for line in lines) and time.monotonic() < deadline:
        assert proc.poll() is None, "".join(lines)
        time.sleep(0.1)
    assert any(line.startswith("training on") for line in lines), "".join(lines)
    time.sleep(1.0)  # some steps
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    reader.join(timeout=10)
    stderr = "".join(lines)
    resume_cmd = shlex.split(stderr.rsplit("Resume with:", 1)[-1].strip()) if "Resume with:" in stderr else []
    interrupted = {"code": code, "stderr": stderr, "resume_cmd": list(resume_cmd),
                   "checkpoint_existed": (out / "checkpoint.pt").is_file()}
    if resume_cmd:
        resume_cmd[0] = sys.executable  # "python ..."
        resumed = subprocess.run([*resume_cmd, "--steps", "20000"], capture_output=True, text=True,
                                 cwd=out.parent, timeout=300)
    else:
        resumed = None
    return {"out": out, "interrupted": interrupted, "resumed": resumed}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_saves_prints_resume_command_and_exits_130(interrupted_run):
    first = interrupted_run["interrupted"]
    assert first["code"] == 130, first["stderr"]
    assert "Traceback" not in first["stderr"], first["stderr"]
    assert first["checkpoint_existed"]
    last = first["stderr"].strip().splitlines()[-1]
    assert last.startswith("interrupted at ") and str(interrupted_run["out"] / "checkpoint.pt") in last, last
    assert "--resume" in first["resume_cmd"]
    # the printed command repeats the options of this invocation that the checkpoint does not hold
    assert {"--device", "--calibrate", "--eval-arrivals", "--quiet", "--export"} <= set(first["resume_cmd"])
    resumed = interrupted_run["resumed"]
    assert resumed is not None and resumed.returncode == 0, resumed.stderr
    for name in ("checkpoint.pt", "policy.pt", "metrics.json"):
        assert (interrupted_run["out"] / name).is_file()
    for name in ("policy.pt2", "policy.onnx"):  # --export off, repeated by the resume command
        assert not (interrupted_run["out"] / name).exists()
    assert load_file(interrupted_run["out"] / "checkpoint.pt")["policy"]["config"]["steps"] == 20000


def test_metrics_json_is_strict_json(interrupted_run):
    def no_constants(name):
        raise AssertionError(f"metrics.json holds {name}")
    metrics = json.loads((interrupted_run["out"] / "metrics.json").read_text(), parse_constant=no_constants)
    assert {"violation", "acceptance", "decisions"} <= metrics.keys()


def test_non_finite_metrics_become_null():
    converted = finite_json({"v": math.nan, "ci": (math.nan, math.inf), "n": 3, "x": torch.tensor(0.5),
                                   "nested": {"m": -math.inf}})
    assert converted == {"v": None, "ci": [None, None], "n": 3, "x": 0.5, "nested": {"m": None}}
    json.dumps(converted, allow_nan=False)


def test_new_run_refuses_to_overwrite_another_run_unless_forced(interrupted_run, mm1_yaml, capsys):
    out = interrupted_run["out"]
    before = (out / "checkpoint.pt").read_bytes()
    code, _, err = run_main(train, ["--scenario", mm1_yaml, "--steps", "20000", "--out", out, *SMALL], capsys)
    line = one_line_error(err)
    assert code == 2 and "--force" in line and "--resume" in line
    assert (out / "checkpoint.pt").read_bytes() == before
    train.prepare_out(out, None, force=True)  # --force lets it through
    train.prepare_out(out, out / "checkpoint.pt", force=False)  # resuming the run it holds is fine


def test_resume_refuses_changed_settings_in_one_line(interrupted_run, capsys):
    ckpt = interrupted_run["out"] / "checkpoint.pt"
    code, _, err = run_main(train, ["--resume", ckpt, "--seed", "3", "--num-envs", "64"], capsys)
    line = one_line_error(err)
    assert code == 2 and "--seed 3 (checkpoint: 0)" in line and "--num-envs 64 (checkpoint: 128)" in line
    code, _, err = run_main(train, ["--resume", ckpt, "--lam", "auto"], capsys)
    assert code == 2 and "--lam auto" in one_line_error(err)
    # flags equal to the checkpoint's (or to the value the scenario gave it) pass
    state = load_file(ckpt)
    argv = ["--resume", str(ckpt), "--seed", "0", "--num-envs", "128", "--lam", "2", "--eps", "0.1",
            "--steps", "99", "--device", "cpu"]
    args = train.build_parser().parse_args(argv)
    train.check_resume_flags(state, args, train.given_options(argv))


def test_bad_resume_and_out_paths_give_one_line(interrupted_run, tmp_path, mm1_yaml, capsys):
    run = interrupted_run["out"]
    data = (run / "checkpoint.pt").read_bytes()
    (tmp_path / "truncated.pt").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.pt").write_text("not a checkpoint\n")
    cases = {"no such file": ["--resume", tmp_path / "missing.pt"],
             "ends early": ["--resume", tmp_path / "truncated.pt"],
             "not a PyTorch file": ["--resume", tmp_path / "text.pt"],
             "exported policy": ["--resume", run / "policy.pt"],
             "a folder": ["--resume", run],
             "a file, not a folder": ["--scenario", mm1_yaml, "--out", tmp_path / "text.pt", *SMALL],
             "cannot write": ["--scenario", mm1_yaml, "--out", tmp_path / "text.pt" / "sub", *SMALL]}
    for expected, argv in cases.items():
        code, _, err = run_main(train, argv, capsys)
        line = one_line_error(err)
        assert code == 1 and expected in line and "Fix:" in line, (expected, line)
        assert "weights_only" not in line, line


@pytest.mark.parametrize("flags, named", [
    (["--steps", "0"], "--steps"), (["--batch-size", "0"], "--batch-size"), (["--hidden", "0"], "--hidden"),
    (["--eval-arrivals", "0"], "--eval-arrivals"), (["--num-envs", "0"], "--num-envs"),
    (["--num-envs", "-5"], "--num-envs"), (["--lr", "-1"], "--lr"), (["--seed", "-1"], "--seed"),
    (["--threads", "0"], "--threads"), (["--confidence", "0.3"], "--confidence"), (["--lam", "-2"], "--lam"), (["--lam", "often"], "--lam"),
    (["--steps", "many"], "--steps"), (["--eps", "1.5"], "--eps"), (["--checkpoint-every", "0"], "--checkpoint-every"),
    (["--grad-clip", "-1"], "--grad-clip"), (["--lam-every", "0"], "--lam-every"), (["--export", "no"], "--export")])
def test_bad_flags_are_refused_in_one_line_naming_the_flag(flags, named, tmp_path, capsys):
    code, _, err = run_main(train, ["--out", tmp_path / "run", *flags], capsys)
    line = one_line_error(err)
    assert code == 2 and named in line, line
    assert not (tmp_path / "run").exists()


def test_bad_flags_in_a_fresh_process_print_no_traceback(tmp_path):
    for argv in (["--steps", "0"], ["--resume", str(tmp_path / "missing.pt")]):
        res = subprocess.run([sys.executable, str(TRAIN), *argv], capture_output=True, text=True, cwd=tmp_path)
        assert res.returncode in (1, 2) and "Traceback" not in res.stderr, res.stderr
        one_line_error(res.stderr)


def test_python_users_get_the_same_checks():
    for kwargs, named in (({"steps": 0}, "--steps"), ({"num_envs": -1}, "--num-envs"),
                          ({"learner": LearnerConfig(hidden=(0,))}, "--hidden"),
                          ({"learner": LearnerConfig(batch_size=0)}, "--batch-size"),
                          ({"lam": "sometimes"}, "--lam")):
        with pytest.raises(ValueError, match="Fix:") as info:
            TrainConfig(**kwargs)
        assert named in str(info.value)


def test_lam_defaults_to_auto_and_scenario_keeps_the_yaml_value():
    assert TrainConfig().lam == "auto"
    assert TrainConfig().spec().lam is None  # paper_tandem's YAML fixes 8: auto wins by default
    assert TrainConfig(lam="scenario").spec().lam == 8
    assert TrainConfig(lam=8).spec().lam == 8
    assert TrainConfig(lam=None).lam == "scenario"  # configs written before the default changed
    assert train.build_parser().parse_args([]).lam == "auto"
    assert train.build_parser().parse_args(["--lam", "scenario"]).lam == "scenario"


def test_unstable_scenario_gives_a_warning_line():
    over = TrainConfig(scenario="mmc_c5_overload").spec()
    stable = TrainConfig(scenario="paper_tandem").spec()
    message = train.stability_warning(over)
    assert message and "\n" not in message and ">= 1" in message
    assert train.stability_warning(stable) is None
    assert train.stability_warning(TrainConfig(scenario="redundancy_ps").spec()) is None  # load 0.5, not 5
    cfg = yaml.safe_load((SCENARIO_DIR / "redundancy_ps.yaml").read_text())
    cfg["arrival"]["rate"], cfg["redundancy"]["d"] = 9.0, [2]  # lambda*(2) = 8 < 9 whatever the controller does
    message = train.stability_warning(NetworkSpec.from_dict(cfg))
    assert message.startswith("warning: ") and "reject" not in message and "8" in message


def test_wandb_names_training_and_evaluation_apart(monkeypatch, tmp_path):
    import wandb

    from drl_ac.tracking import WandbLogger

    class FakeRun:
        def __init__(self):
            self.history, self.summary, self.finished = [], {}, False

        def log(self, values, step):
            self.history.append((step, dict(values)))
            self.summary.update(values)  # W&B's default: the summary holds the last logged values

        def finish(self):
            self.finished = True

    fake = FakeRun()
    seen = {}

    def fake_init(**kwargs):
        seen.update(kwargs)
        return fake

    monkeypatch.setattr(wandb, "init", fake_init)
    monkeypatch.setenv("WANDB_MODE", "offline")
    logger = WandbLogger(True, {"scenario": "mm1"}, directory=tmp_path)
    assert seen["mode"] == "offline"
    logger.log({"violation": 0.2, "loss": 1.0, "steps_per_s": 1e5, "lam": 2.0, "rbar": float("nan")}, step=10)
    logger.finish({"violation": 0.1, "acceptance": 0.9, "violation_ci": [0.0, 0.2], "scenario": "mm1"})
    assert fake.finished
    assert fake.history == [(10, {"train/violation": 0.2, "train/loss": 1.0, "train/sps": 1e5, "train/lam": 2.0})]
    assert fake.summary["train/violation"] == 0.2 and fake.summary["eval/violation"] == 0.1
    assert fake.summary["eval/acceptance"] == 0.9
    assert not {k for k in fake.summary if "/" not in k}


def test_help_shows_defaults(capsys):
    code, out, _ = run_main(train, ["--help"], capsys)
    out = " ".join(out.split())  # undo the wrapping to the terminal's width
    assert code == 0 and "(default: auto)" in out and "training block, else 2048)" in out and "(default: 1)" in out
    assert "--force" in out and "--threads" in out and "Ctrl-C" in out
    code, out, _ = run_main(evaluate_cli, ["--help"], capsys)
    out = " ".join(out.split())
    assert code == 0 and "(default: 200000)" in out and "--quiet" in out


def test_gymnasium_ids_without_importing_envs_first(tmp_path):
    code = ("import gymnasium as gym\n"
            "env = gym.make('envs:drl_ac/PaperTandem-v0')\n"
            "obs, info = env.reset(seed=0)\n"
            "import envs\n"
            "gym.make('drl_ac/Tandem-v0')\n"
            "print('ok', obs.shape)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stderr


def test_the_scenarios_training_block_sets_defaults_a_flag_overrides(tmp_path):
    path = tmp_path / "mm1_trained.yaml"
    path.write_text(yaml.safe_dump({**MM1, "training": {"num_envs": 8, "updates_per_step": 3, "steps": 800}}))
    said = []

    def started(argv):
        args = train.build_parser().parse_args(argv)
        with contextlib.ExitStack() as held:
            trainer, _, tuned = train.start(args, train.given_options(argv), said.append, held)
        return trainer.config, tuned

    base = ["--scenario", str(path), "--out", str(tmp_path / "run"), "--force", "--compare", "off"]
    config, tuned = started(base)
    assert (config.num_envs, config.updates_per_step, config.steps) == (8, 3, 800) and tuned is None
    assert any("training defaults" in s for s in said)
    config, _ = started([*base, "--num-envs", "16", "--steps", "1600"])
    assert (config.num_envs, config.updates_per_step, config.steps) == (16, 3, 1600)


def test_a_control_system_learns_the_values_of_its_best_rule(tmp_path, capsys):
    # redundancy_ps, smoke budget: the rules are tuned before training, the best one that can
    # guard becomes the learner's base rule (stored in the run's settings) and the policy's
    # default, and the comparison still runs on the rules tuned once
    out = tmp_path / "red"
    # (the scenario's rollout targets, labelled from the first step here)
    argv = ["--scenario", "redundancy_ps", "--steps", "4000", "--num-envs", "32", "--out", str(out),
            "--device", "cpu", "--compare", "smoke", "--rollout-start", "0", "--rollout-horizon", "5", "--export", "off"]
    code, stdout, err = run_main(train, argv, capsys)
    assert code == 0, err
    section = load_file(out / "policy.pt")
    base = section["config"]["base_rule"]
    assert base is not None and "learning the values of the best rule that can guard" in err
    assert (section["config"]["targets"], section["config"]["rollout_horizon"]) == ("rollout", 5)
    comparison = json.loads((out / "comparison.json").read_text())
    # smoke runs are often too short for a steady state: then no verdict is claimed
    assert comparison["verdict"]["outcome"] in ("better", "no worse", "worse", "undecided") and "verdict: " in stdout
    unlike = comparison["unlike_rule"]  # how far the guarded network departs from its rule
    assert 0 <= unlike["share"] <= 1 and f"decisions unlike the guard rule ({unlike['rule']})" in stdout
    assert err.count("tuning the rules of") == 1  # tuned once, before training
    with pytest.raises(SystemExit):  # --base cannot change on --resume
        train.main(["--resume", str(out / "checkpoint.pt"), "--base", "none", "--quiet", "--compare", "off"])
    with pytest.raises(SystemExit):  # nor --targets
        train.main(["--resume", str(out / "checkpoint.pt"), "--targets", "td", "--quiet", "--compare", "off"])


def test_the_rules_are_tuned_and_measured_beside_a_long_enough_training(tmp_path, capsys, monkeypatch, mm1_yaml):
    # the threshold lowered so that a tiny run takes the path of a long one: the rules and
    # their measures come from the second process and the comparison judges on them
    monkeypatch.setattr(train, "BACKGROUND_MIN_DECISIONS", 0)
    out = tmp_path / "bg"
    argv = ["--scenario", str(mm1_yaml), "--steps", "4000", "--num-envs", "32", "--out", str(out), "--device", "cpu",
            "--calibrate", "off", "--eval-arrivals", "2000", "--compare", "smoke", "--export", "off"]
    code, stdout, err = run_main(train, argv, capsys)
    assert code == 0, err
    assert "tuned and measured the rules" in err and "tuning the rules of" not in err
    comparison = json.loads((out / "comparison.json").read_text())
    assert "verdict: " in stdout and comparison["verdict"]["outcome"]
    assert len(comparison["rows"]) >= 3 and all("stability" in m for m in comparison["rows"].values())
    assert comparison["constraint"].startswith("every policy tuned (a rule) or calibrated (the learned)")
    assert f"constraint: {comparison['constraint']}" in stdout  # the table says the same


def test_a_control_system_without_a_base_rule_guards_with_the_rules_of_the_second_process(tmp_path, capsys,
                                                                                          monkeypatch):
    # --base none: the rules are tuned beside training; the guard takes them as soon as they
    # are tuned, their measures come after the policy's evaluation
    monkeypatch.setattr(train, "BACKGROUND_MIN_DECISIONS", 0)
    out = tmp_path / "red"
    argv = ["--scenario", "redundancy_ps", "--steps", "4000", "--num-envs", "32", "--out", str(out), "--device", "cpu",
            "--compare", "smoke", "--base", "none", "--export", "off"]
    code, stdout, err = run_main(train, argv, capsys)
    assert code == 0, err
    assert "tuning the rules of" not in err and "tuned and measured the rules" in err
    assert err.index("choosing among") < err.index("tuned and measured the rules")  # the guard did not wait
    assert "learning with td targets" in err  # the scenario's rollout targets need the base rule
    comparison = json.loads((out / "comparison.json").read_text())
    assert {"learned", "d = 1", "load threshold", "own-server threshold"} <= set(comparison["rows"])
    assert load_file(out / "policy.pt")["selection"]["chosen"]  # the guard chose among its candidates


def test_eval_arrivals_caps_a_control_systems_steady_state_evaluation(tmp_path, capsys):
    # quick's evaluation runs 128 instances until 1% precision (about 1M arrivals here); asked
    # for 1,000, it stops after its 4 batches of 100 decisions per instance
    out = tmp_path / "red"
    argv = ["--scenario", "redundancy_ps", "--steps", "200", "--num-envs", "8", "--out", str(out), "--device", "cpu",
            "--compare", "off", "--base", "none", "--eval-arrivals", "1000", "--quiet", "--export", "off"]
    code, stdout, err = run_main(train, argv, capsys)
    assert code == 0, err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["warmup_steps"] + metrics["window_steps"] <= 400 and 0 < metrics["arrivals"] <= 128 * 400


@pytest.mark.parametrize("scenario, flags, named", [
    ("paper_tandem", ["--cost", "own"], "--cost"),
    ("paper_tandem", ["--rollout-every", "3"], "--rollout-every"),
    ("paper_tandem", ["--targets", "rollout"], "--targets"),
    ("paper_tandem", ["--base", "none"], "--base"),
    ("redundancy_ps", ["--lam", "3", "--calibrate", "on"], "--lam, --calibrate"),
    ("redundancy_ps", ["--lam-margin", "0.01"], "--lam-margin"),
    ("pools", ["--randomise", "off"], "--randomise"),
])
def test_flags_the_system_would_ignore_are_refused(scenario, flags, named, tmp_path, capsys):
    code, _, err = run_main(train, ["--scenario", scenario, *flags, "--steps", "10", "--out", tmp_path / "x",
                                    "--compare", "off", "--quiet"], capsys)
    line = one_line_error(err)
    assert code == 2 and line.startswith(f"error: {named}: for ") and f"; {scenario} (" in line, line
    assert "would ignore" in line and "Fix: drop" in line


def test_a_run_that_fails_after_training_still_leaves_its_policy(tmp_path, capsys, monkeypatch, mm1_yaml):
    def broken(*args, **kwargs):
        raise RuntimeError("evaluation failed")
    monkeypatch.setattr(train.Run, "evaluate", broken)
    out = tmp_path / "failed"
    with pytest.raises(RuntimeError, match="evaluation failed"):
        train.main(["--scenario", str(mm1_yaml), "--steps", "2000", "--out", str(out), "--lam", "scenario", *SMALL])
    err = capsys.readouterr().err
    assert f"{out / 'policy.pt'} holds the trained policy, uncalibrated and unevaluated" in err
    assert load_file(out / "policy.pt")["format"] == "drl_ac.policy" and (out / "checkpoint.pt").is_file()


def test_a_calibration_that_ends_rejecting_everything_says_so(tmp_path, capsys):
    # a deadline shorter than any service: every admitted job misses it, so only "reject all" meets eps
    spec = {**MM1, "d_ub": 0.001, "lam": None}
    path = tmp_path / "hopeless.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, _, err = run_main(train, ["--scenario", path, "--steps", "2000", "--num-envs", "32", "--out",
                                    tmp_path / "run", "--eval-arrivals", "2000", "--compare", "off", "--quiet", "--export", "off"],
                            capsys)
    assert code == 0, err
    assert "warning: the calibrated policy rejects every job" in err and "Fix: train longer" in err


def test_evaluate_drives_a_saved_policy_at_another_load(capsys):
    """--load: the shipped load-0.3 redundancy policy copies most jobs 4 times, which load 0.9
    cannot carry: it is called unstable in seconds, not evaluated while its backlog grows."""
    policy = ROOT / "checkpoints" / "redundancy_ps" / "load-0.3" / "policy.pt"
    code, out, _ = run_main(evaluate_cli, ["--checkpoint", policy, "--load", "0.9", "--num-envs", "20"], capsys)
    assert code == 0 and out.startswith("redundancy_ps@0.9 (minimise mean response time): not evaluated, unstable: "
                                        "from a backlog of")
    code, out, _ = run_main(evaluate_cli, ["--checkpoint", policy, "--load", "0.5", "--arrivals", "4000",
                                           "--num-envs", "20", "--json"], capsys)
    m = json.loads(out)
    assert code == 0 and m["arrivals"] >= 4000 and 0.3 < m["mean_delay"] < 2.0  # d = 1 alone: 2.0 at load 0.5


@pytest.mark.parametrize("load, says", [("-1", "error: --load must be > 0, got -1. Fix: give a fraction"),
                                        ("0", "error: --load must be > 0, got 0. Fix: give a fraction")])
def test_evaluate_refuses_a_load_that_is_not_positive(load, says):
    policy = ROOT / "checkpoints" / "redundancy_ps" / "load-0.3" / "policy.pt"
    with pytest.raises(SystemExit) as stopped:  # evaluate.py exits with its one-line message
        evaluate_cli.main(["--checkpoint", str(policy), "--load", load])
    assert str(stopped.value.code).startswith(says) and "\n" not in str(stopped.value.code)


def test_evaluate_refuses_a_load_for_a_cell_of_several_streams():
    with pytest.raises(SystemExit) as stopped:
        evaluate_cli.main(["--checkpoint", str(ROOT / "checkpoints" / "cell_5g" / "policy.pt"), "--load", "0.5"])
    assert str(stopped.value.code).startswith("error: arrival: cell_5g: at_load sets a single arrival stream's rate")
