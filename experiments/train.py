"""Train an admission controller.

    python experiments/train.py                      # paper_tandem, eps 0.1, lam tuned automatically + calibrated
    python experiments/train.py --scenario tandem    # true sojourn times
    python experiments/train.py --scenario my_net.yaml --eps 0.05 --out runs/mine
    python experiments/train.py --scenario cell_5g   # a 5G cell (512 instances, 4 updates per step: its training block)
    python experiments/train.py --resume checkpoints/runs/paper_tandem-seed0/checkpoint.pt --steps 12000000

lam is tuned by dual ascent on every scenario, then the final policy is calibrated (bias, then
randomised at the margin) to violation <= eps with a one-sided 95% bound; `--lam 8` fixes lam.

Writes OUT/checkpoint.pt (everything needed to resume, written atomically and refreshed
during the run), OUT/policy.pt (the greedy policy with scenario, settings and evaluation),
OUT/policy.pt2 (torch.export) and OUT/policy.onnx (usable without this project) and
OUT/metrics.json (strict JSON: null where a value is undefined). A new run refuses to
overwrite a folder that already holds a run unless --force is given.

Ctrl-C (or SIGTERM) stops at the next step, saves OUT/checkpoint.pt and prints the command that resumes
the run (exit code 130, SIGTERM 143); a second one stops at once. A run locks OUT (.drl_ac.lock): a second
run into it is refused. A failure after training still leaves OUT/policy.pt. On --resume the run keeps its
settings: only --steps, --device, --engine and the output, evaluation and logging options may differ.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from drl_ac import study
from drl_ac.checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    LoadedPolicy,
    load_file,
    save_atomic,
    write_json,
)
from drl_ac.cli import (
    ENGINE_OPTIONS,
    FileProblem,
    HelpFormatter,
    Interrupted,
    Parser,
    StopSignals,
    UsageError,
    dataclass_flags,
    engine_flags,
    field_docs,
    flag_of,
    progress_printer,
    use_engine_flags,
)
from drl_ac.evaluation.metrics import format_metrics
from drl_ac.folder_lock import FolderInUse, FolderLock
from drl_ac.learning.learner import RBAR_UPDATES, LearnerConfig
from drl_ac.learning.qnet import rule_of
from drl_ac.learning.trainer import COSTS, LAM_MODES, TARGETS, TrainConfig, Trainer, stored_config
from drl_ac.study.pipeline import Run, RunOptions
from drl_ac.tracking import WandbLogger
from envs import NetworkSpec, ObservationEncoding, SpecError
from envs.spec import TRAINING_KEYS

# Shorter runs tune and measure the rules after training: a second interpreter takes seconds to start, more
# than a short run's training would hide.
BACKGROUND_MIN_DECISIONS = 500_000


TRAIN_FIELDS = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in ("base_rule", "learner")]
LEARNER_FIELDS = [f.name for f in dataclasses.fields(LearnerConfig)]
# Flags that set the run itself: on --resume they must equal the checkpoint's.
# flag -> (argparse dest, key in TrainConfig.to_dict(), "learner." for the learner's)
FIXED_ON_RESUME = ({flag_of(n): (n, n) for n in TRAIN_FIELDS if n not in ("steps", "device")}
                   | {flag_of(n): (n, "learner." + n) for n in LEARNER_FIELDS} | {"--base": ("base", "base_rule")})
# Options of this invocation only (not stored in the checkpoint): repeated in the resume command.
RUN_OPTIONS = ({flag_of(f.name): f.name for f in dataclasses.fields(RunOptions)
                if f.name not in ("base", "out", "force", "resume")} | {"--device": "device"} | ENGINE_OPTIONS)


def parse_lam(value: str) -> float | str:
    if value in LAM_MODES:
        return value
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected auto, scenario or a number, got {value!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """One flag per field of ``TrainConfig``, ``LearnerConfig``, ``RunOptions`` and the engine's
    options (``drl_ac.cli.dataclass_flags``: the field's docstring is its help)."""
    p = Parser(description=__doc__, formatter_class=HelpFormatter)
    d = TrainConfig()
    # what a scenario's training block may set: None here, so that the block applies unless the flag is typed
    docs = field_docs(TrainConfig)
    from_scenario = {n: {"default": None, "help": f"{docs[n]} (on --resume the checkpoint's; default: the scenario's "
                         f"training block, else {getattr(d, n)})"} for n in TRAINING_KEYS}
    dataclass_flags(p.add_argument_group("training (TrainConfig)"), TrainConfig, d, TRAIN_FIELDS, from_scenario | {
        "lam": {"type": parse_lam}, "delay": {"choices": ["sojourn", "paper"]}, "cost": {"choices": list(COSTS)},
        "targets": {**from_scenario["targets"], "choices": list(TARGETS)}})
    dataclass_flags(p.add_argument_group("the learner (LearnerConfig)"), LearnerConfig, options={
        "rbar_update": {"choices": list(RBAR_UPDATES)}})
    dataclass_flags(p.add_argument_group("after training, output and reporting"), RunOptions,
                    options={name: {"choices": allowed} for name, allowed in RunOptions.CHOICES.items()})
    engine_flags(p.add_argument_group("the simulator"))
    return p


def given_options(argv: list[str] | None) -> set[str]:
    """The argparse dests the user actually typed (as opposed to defaults)."""
    shadow = build_parser()
    for action in (a for a in shadow._actions if a.dest != "help"):
        action.default = argparse.SUPPRESS
    return set(vars(shadow.parse_args(argv)))


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The ``TrainConfig`` the flags give (a flag left at None: the field's default)."""
    def typed(names: list[str]) -> dict[str, Any]:
        values = {n: getattr(args, n) for n in names if getattr(args, n) is not None}
        return {n: tuple(v) if isinstance(v, list) else v for n, v in values.items()}
    return TrainConfig(**typed(TRAIN_FIELDS), learner=LearnerConfig(**typed(LEARNER_FIELDS)))


def check_run_options(args: argparse.Namespace) -> RunOptions:
    """Options of this invocation that TrainConfig does not hold (``RunOptions`` checks them),
    and ``--steps``, which may be None here (the scenario's or the checkpoint's)."""
    try:
        options = RunOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(RunOptions)})
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.steps is not None and args.steps < 1:
        raise UsageError(f"--steps must be an integer >= 1, got {args.steps}. Fix: give the number of decisions "
                         "to train for, e.g. --steps 6000000.")
    return options


def _same(given: Any, stored: Any) -> bool:
    if isinstance(given, (list, tuple)) or isinstance(stored, (list, tuple)):
        return isinstance(given, (list, tuple)) and isinstance(stored, (list, tuple)) and \
            [float(x) for x in given] == [float(x) for x in stored]
    if isinstance(given, bool) or isinstance(stored, bool):
        return bool(given) == bool(stored)
    if isinstance(given, (int, float)) and isinstance(stored, (int, float)):
        return math.isclose(float(given), float(stored), rel_tol=1e-12, abs_tol=0.0)
    return given == stored


def check_resume_flags(state: dict, args: argparse.Namespace, given: set[str]) -> None:
    """Refuse flags that would silently be ignored on --resume, unless they equal the checkpoint's."""
    config = stored_config(state, default={})
    scenario = state.get("policy", {}).get("scenario", {})
    effective = {"eps": scenario.get("eps"), "d_ub": scenario.get("d_ub"), "delay": scenario.get("delay"),
                 "lam": "auto" if scenario.get("lam") is None else scenario.get("lam"),
                 "base_rule": "none" if config.get("base_rule") is None else "rule"}
    bad = []
    for flag, (dest, key) in FIXED_ON_RESUME.items():
        if dest not in given:
            continue
        value = getattr(args, dest)
        stored = config.get("learner", {}).get(key[8:]) if key.startswith("learner.") else config.get(key)
        if key == "lam" and stored is None:
            stored = "scenario"
        ok = _same(value, stored) or (key in effective and _same(value, effective[key]))
        if key == "scenario" and not ok and stored is not None:
            a, b = Path(str(value)), Path(str(stored))
            ok = a.is_file() and b.is_file() and a.resolve() == b.resolve()
        if not ok:
            shown = stored if stored is not None else effective.get(key)
            if isinstance(value, list):
                value = " ".join(map(str, value))
                shown = " ".join(map(str, shown)) if isinstance(shown, (list, tuple)) else shown
            bad.append(f"{flag} {value} (checkpoint: {shown})")
    if bad:
        raise UsageError(f"--resume continues a run with its own settings, which cannot change: {', '.join(bad)}. "
                         "Fix: drop these flags (on --resume only --steps, --device and the output, evaluation "
                         "and logging options may change), or start a new run in another --out.")


def check_applicable(spec: NetworkSpec, config: TrainConfig, given: set[str]) -> None:
    """Refuse flags typed for this run that its system would ignore (the trainer refuses
    ``--reset-backlog`` where it cannot apply): a user who set them expects them to act."""
    admission = spec.system.kind != "control"
    rules = ((("lam", "lam_init", "lam_eta", "lam_kp", "lam_every", "lam_margin", "lam_start", "calibrate",
               "randomise", "confidence"), admission, "an admission constraint's multiplier and calibration"),
             (("base", "base_exploration", "targets"), not admission, "how a control system (redundancy, pools) learns"),
             (("cost",), spec.objective == "response_time", "a response-time objective's cost"),
             (("rollout_horizon", "rollout_every", "rollout_start"), config.targets == "rollout",
              "rollout targets (--targets rollout on a control system)"))
    for dests, applies, what in rules:
        typed = [flag_of(d) for d in dests if d in given]
        if typed and not applies:
            them = "them" if len(typed) > 1 else "it"
            raise UsageError(f"{', '.join(typed)}: for {what}; {spec.name} ({spec.system.name}: "
                             f"{spec.system.headline.text(spec.eps)}) would ignore {them}. Fix: drop {them}.")


def prepare_out(out: Path, resume: Path | None, force: bool) -> None:
    """Create OUT, make sure it is writable, and refuse to overwrite another run without --force."""
    if out.exists() and not out.is_dir():
        raise FileProblem(f"--out {out}: a file, not a folder. Fix: give a folder path (created if missing).")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise FileProblem(f"--out {out}: cannot write there ({exc.strerror or type(exc).__name__}). "
                          "Fix: choose a folder you can write to with --out.") from None
    if force:
        return
    held = [out / name for name in ("checkpoint.pt", "policy.pt") if (out / name).exists()]
    same_run = resume is not None and (out / "checkpoint.pt").resolve() == resume.resolve()
    if held and not same_run:
        hint = f"resume it with --resume {shlex.quote(str(held[0]))}, " if held[0].name == "checkpoint.pt" else ""
        raise UsageError(f"--out {out} already holds another run ({', '.join(p.name for p in held)}). "
                         f"Fix: {hint}choose another --out, or pass --force to overwrite it.")


def stability_warning(spec: NetworkSpec) -> str | None:
    """One line when the system cannot be stable as its controller starts, else None, in the
    system's words (``spec.system.stability_problem``)."""
    problem = spec.system.stability_problem()
    if problem is None or spec.system.kind != "admission":
        return None if problem is None else f"warning: {problem}"
    return (f"warning: accepting every job is unstable: {problem} (training goes on: the controller has to "
            "reject jobs to keep the queues finite)")


def resume_command(checkpoint: Path, args: argparse.Namespace, given: set[str]) -> str:
    script = sys.argv[0] if sys.argv and sys.argv[0].endswith("train.py") else "experiments/train.py"
    parts = ["python", script, "--resume", str(checkpoint)]
    for flag, dest in RUN_OPTIONS.items():
        if dest in given:
            value = getattr(args, dest)
            if isinstance(value, bool):
                parts += [flag] if value else []
            else:
                parts += [flag, str(value)]
    return shlex.join(parts)


def start(args: argparse.Namespace, given: set[str], say: Callable[[str], None], held: contextlib.ExitStack
          ) -> tuple[Trainer, Path, dict | None]:
    """The trainer (new or resumed), its output folder (locked in ``held``: ``FolderLock``)
    and the rules tuned before training (a control system's base rule, ``--base rule``; else
    None), after every check."""
    if args.resume is not None:
        state = load_file(args.resume, expected=(CHECKPOINT_FORMAT,))
        check_resume_flags(state, args, given)
        out = args.out or args.resume.parent
        prepare_out(out, args.resume, args.force)
        held.enter_context(FolderLock(out))
        changes = {k: getattr(args, k) for k in ("steps", "device") if k in given and getattr(args, k) is not None}
        return Trainer.from_state(state, **changes), out, None
    config = config_from_args(args)
    out = args.out or Path("checkpoints/runs") / f"{Path(config.scenario).stem}-seed{config.seed}"
    spec = config.spec()  # scenario errors before touching the folder
    prepare_out(out, None, args.force)
    held.enter_context(FolderLock(out))  # at once: a run started beside this one finds it held
    scenario_defaults = {k: v for k, v in spec.training if k not in given}  # the YAML's training block
    if scenario_defaults:
        say(f"the scenario's training defaults: {', '.join(f'{k} {v}' for k, v in scenario_defaults.items())}")
        config = dataclasses.replace(config, **scenario_defaults)
    check_applicable(spec, config, given)
    tuned = None
    if spec.system.kind == "control" and args.base == "rule":
        run = steps(spec, config.seed, args, say)
        tuned = run.tune_rules()
        base = run.base_rule(tuned, ObservationEncoding.for_spec(spec, config.include_in_service))
        if base is not None:
            say(f"learning the values of the best rule that can guard: {base.describe()}")
            config = dataclasses.replace(config, base_rule=rule_of(base.guard_fields()))
    if (config.targets == "rollout" and (config.base_rule is None or config.cost != "holding")
            and "targets" in scenario_defaults):  # the scenario's default, not asked for
        say("rollout targets need a base rule and the holding cost: learning with td targets")
        config = dataclasses.replace(config, targets="td")
    if config.targets == "rollout" and config.steps <= config.rollout_start:
        print(f"warning: --steps {config.steps} <= --rollout-start {config.rollout_start}: no rollout labels, so the "
              "network stays untrained and the guard keeps the rule", file=sys.stderr)
    return Trainer(config, spec=spec), out, tuned


def run(args: argparse.Namespace, given: set[str] | None = None, stop: StopSignals | None = None) -> dict:
    """Train (or resume), calibrate, evaluate, export and compare, holding OUT's lock
    throughout. ``stop``: the signals handler ``main`` installed (None: signals untouched)."""
    given = set() if given is None else given  # the flags typed on the command line (see given_options)
    stop = StopSignals() if stop is None else stop
    say = progress_printer(args.quiet)
    with contextlib.ExitStack() as held:
        trainer, out, tuned = start(args, given, say, held)
        return train_and_finish(trainer, out, tuned, args, given, say, stop)


def train_and_finish(trainer: Trainer, out: Path, tuned: dict | None, args: argparse.Namespace, given: set[str],
                     say: Callable[[str], None], stop: StopSignals) -> dict:
    config, started = trainer.config, time.time()
    ckpt = out / "checkpoint.pt"
    warning = stability_warning(trainer.spec)
    if warning:
        print(warning, file=sys.stderr)
    logger = WandbLogger(args.wandb, config.to_dict(), project=args.wandb_project,
                         group=args.wandb_group or Path(config.scenario).stem, directory=out)
    background = None  # the rules tuned and measured on the spare core while training (not policy-dependent)
    if (args.compare != "off" and (os.cpu_count() or 1) > torch.get_num_threads()
            and config.steps - trainer.decisions >= BACKGROUND_MIN_DECISIONS):
        background = study.BackgroundRules(trainer.spec, config.seed, args.compare, tuned)
    def close() -> None:  # the run stops here: the rules' processes and the logger with it
        if background is not None:
            background.cancel()
        logger.finish()

    try:
        train_loop(trainer, args, ckpt, logger, stop)
    except KeyboardInterrupt:
        close()
        saved = f"{ckpt} holds the last periodic checkpoint" if ckpt.is_file() else "nothing was saved"
        raise Interrupted(f"interrupted twice ({stop.name}): stopped at once without saving; {saved}.") from None
    except BaseException:
        close()
        raise
    if stop.requested:
        close()
        raise Interrupted(f"interrupted at {trainer.decisions:,} of {config.steps:,} decisions ({stop.name}); saved "
                          f"{ckpt}. Resume with: {resume_command(ckpt, args, given)}")
    measured = None  # the rules' rows of the comparison, when measured beside training
    try:
        if args.compare == "off":
            tuned = None
        elif background is None and tuned is None:
            tuned = steps(trainer.spec, config.seed, args, say).tune_rules()
        if background is not None and tuned is None and trainer.spec.system.kind == "control":
            tuned = background.tuned(say)  # the guard needs the rules
        metrics, exported, policy = finish(trainer, args, out, tuned, say, given)
        if background is not None:  # measured beside the guard's choice, calibration and evaluation
            tuned, measured = background.result(say)
    except KeyboardInterrupt:
        logger.finish()
        raise Interrupted(f"interrupted after training ({stop.name}); {ckpt} holds the trained run. Evaluate and export it with: "
                          f"{resume_command(ckpt, args, given)}") from None
    except Exception:
        logger.finish()
        print(f"error after training: {keep_policy(trainer, out, started)}; {ckpt} holds the run (evaluate and "
              f"export it with: {resume_command(ckpt, args, given)})", file=sys.stderr)
        raise
    finally:
        if background is not None:
            background.cancel()
    logger.finish(metrics)
    spec = trainer.spec
    print(f"final evaluation ({spec.name}, {spec.system.headline.text(spec.eps)}): {format_metrics(metrics, spec)}")
    print(f"wrote {', '.join(map(str, [out / 'policy.pt', *exported, out / 'metrics.json', ckpt]))}")
    if tuned is not None:
        comparison = compare_with_rules(steps(spec, config.seed, args, say), policy, out, tuned, measured)
        metrics["verdict"] = comparison["verdict"]
    return metrics


def train_loop(trainer: Trainer, args: argparse.Namespace, ckpt: Path, logger: WandbLogger,
               stop: StopSignals) -> None:
    """Train to ``config.steps`` with a progress bar and periodic checkpoints, then save; the
    first Ctrl-C or SIGTERM stops it after the current step, and the save completes."""
    config, spec = trainer.config, trainer.spec
    state = {"last": trainer.decisions, "t0": time.perf_counter(), "d0": trainer.decisions,
             "ckpt": trainer.decisions}
    control = spec.system.kind == "control"
    lam = f", lam {'auto' if trainer.auto_lam else trainer.lam}" if not control else ""
    print(f"training on {spec.system.describe()}{lam}; {config.num_envs} instances, device {trainer.device}, "
          f"{torch.get_num_threads()} thread(s); Ctrl-C saves and stops", file=sys.stderr, flush=True)
    bar = tqdm(total=config.steps, initial=trainer.decisions, unit="dec", unit_scale=True,
               disable=args.quiet, dynamic_ncols=True)

    def callback(tr: Trainer) -> None:
        p = tr.progress()
        p["steps_per_s"] = (tr.decisions - state["d0"]) / max(time.perf_counter() - state["t0"], 1e-9)
        bar.update(tr.decisions - state["last"])
        state["last"] = tr.decisions
        if control:  # no violation, acceptance or multiplier: what the learner pays per decision
            bar.set_postfix(cost=f"{p['mean_cost']:.3f}", rbar=f"{p['rbar']:.3f}", sps=f"{p['steps_per_s']:,.0f}",
                            refresh=False)
        else:
            bar.set_postfix(viol=f"{p['greedy_violation']:.3f}", acc=f"{p['acceptance']:.3f}",
                            obj=f"{p['objective']:.4f}", rbar=f"{p['rbar']:.3f}", lam=f"{p['lam']:.2f}",
                            sps=f"{p['steps_per_s']:,.0f}", refresh=False)
        logger.log(p, step=tr.decisions)
        if tr.decisions - state["ckpt"] >= args.checkpoint_every:
            tr.save(ckpt)
            state["ckpt"] = tr.decisions

    stop.soft = True
    try:
        trainer.train(callback=callback, stop=lambda: stop.requested)
        trainer.save(ckpt)  # a signal now only sets the flag: the save completes
    finally:
        stop.soft = False
        bar.close()


def keep_policy(trainer: Trainer, out: Path, started: float) -> str:
    """What OUT/policy.pt holds after a failure past training: this run's calibrated policy if
    it wrote one after ``started`` (``time.time()``), else the trainer's policy as it is,
    written now (a run never ends without the policy it trained), in words."""
    path = out / "policy.pt"
    if path.is_file() and path.stat().st_mtime >= started:
        return f"{path} holds this run's policy, written before the failure"
    save_atomic(trainer.policy_section(), path)
    return f"{path} holds the trained policy, uncalibrated and unevaluated"


def steps(spec: NetworkSpec, seed: int, args: argparse.Namespace, say: Callable[[str], None]) -> Run:
    """The run's steps (``drl_ac.study.pipeline.Run``) at the budget of ``--compare`` (quick when off)."""
    return Run(spec, seed, "quick" if args.compare == "off" else args.compare, say)


def compare_with_rules(run: Run, policy: LoadedPolicy, out: Path, tuned: dict, measured: dict | None) -> dict:
    """The comparison (``Run.compare``): the tuned rules (``measured``: their rows, measured
    beside training) against the policy in steady state; the table and the verdict line to
    stdout, everything to OUT/comparison.json."""
    t0, spec = time.perf_counter(), run.spec
    rows, verdict = run.compare(policy, tuned, measured)
    unlike = run.unlike_rule(policy, tuned)
    comparison = {"scenario": spec.name, "budget": run.budget, "seed": run.seed, "seconds": time.perf_counter() - t0,
                  "verdict": verdict.to_dict(), "rows": study.json_rows(rows), "unlike_rule": unlike}
    if spec.system.headline.constraint is not None:
        comparison["constraint"] = f"every policy {study.FEASIBLE}"
    write_json(out / "comparison.json", comparison)
    print(study.table(rows, verdict, spec))
    if unlike is not None:
        print(f"decisions unlike the guard rule ({unlike['rule']}): {100 * unlike['share']:.1f}%")
    print(f"wrote {out / 'comparison.json'}")
    return comparison


def finish(trainer: Trainer, args: argparse.Namespace, out: Path, tuned: dict | None,
           say: Callable[[str], None], given: set[str]) -> tuple[dict, list[Path], LoadedPolicy]:
    """Calibrate (when asked or when lam is automatic), guard a control policy by the best
    tuned rule that can guard it (when rules were ``tuned``: ``drl_ac.study.guard``), evaluate
    (a control system in steady state, at most --eval-arrivals arrivals when given) and write
    the policy files."""
    config, spec = trainer.config, trainer.spec
    run = steps(spec, config.seed, args, say)
    if args.calibrate == "on" or (args.calibrate == "auto" and trainer.auto_lam):
        policy = run.calibrate(trainer.policy(), arrivals=args.eval_arrivals, randomise=args.randomise == "on",
                               confidence=args.confidence)
        cal = policy.section["calibration"]
        mixed = "" if not cal["mix"] else f", and w.p. {cal['mix']:.4f} within {cal['margin']:.4f} below it"
        print(f"calibrated acceptance bias {policy.bias:.4f}{mixed}: violation {cal['violation']:.4f}, one-sided "
              f"{cal['confidence']:.0%} upper bound {cal['violation_upper']:.4f} <= eps {trainer.spec.eps:g} "
              f"({cal['arrivals']} arrivals)", file=sys.stderr)
        if cal["acceptance"] == 0:
            print(f"warning: the calibrated policy rejects every job: no bias that accepts any met eps "
                  f"{trainer.spec.eps:g} with {cal['confidence']:.0%} confidence, so the exported policy admits "
                  "nothing. Fix: train longer (--steps), evaluate with more arrivals (--eval-arrivals), or relax "
                  "--eps / --d-ub if the system cannot meet them", file=sys.stderr)
    else:
        policy = trainer.policy()
    default = run.base_rule(tuned, policy.encoding)
    if default is not None:
        policy = run.guard(policy, default)
    capped_by_user = spec.system.kind != "control" or "eval_arrivals" in given  # a steady state runs to its budget
    metrics = run.evaluate(policy, args.eval_arrivals if capped_by_user else None)
    metrics.update({"lam": trainer.lam, "rbar": float(trainer.learner.rbar), "decisions": trainer.decisions,
                    "scenario": trainer.spec.name, "seed": config.seed, "bias": policy.bias})
    policy = policy.replace(metrics=metrics)
    exported = run.export(policy, out, exports=args.export == "on")[2:]
    return metrics, exported, policy


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    given = given_options(argv)
    stop = StopSignals()
    try:
        with stop:
            check_run_options(args)
            torch.set_num_threads(args.threads)
            use_engine_flags(args)
            run(args, given, stop)
    except Interrupted as exc:
        print(exc, file=sys.stderr)
        sys.exit(stop.exit_code)
    except KeyboardInterrupt:
        print(f"interrupted before training started ({stop.name}); nothing was saved.", file=sys.stderr)
        sys.exit(stop.exit_code)
    except (UsageError, SpecError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except (FolderInUse, CheckpointError, FileProblem, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
