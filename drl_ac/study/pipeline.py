"""One run on one spec, the steps every entry point takes in the same order, on the same seeds:

1. ``tune_rules``: every rule of the system tuned on seed + TUNING (its folder's ``rules``);
2. ``base_rule``: on a control system, the best tuned rule that can guard a learned policy
   (what a learner may learn the values of, and what guards it);
3. training (``drl_ac.learning.trainer.Trainer``: ``experiments/train.py`` trains one learner
   with checkpoints, a study several with snapshots), then on an admission network or a cell
   ``calibrate`` (the acceptance bias and the mixing at the margin, to violation <= eps with
   95% confidence), on a control system ``guard`` (the greedy network kept to the rule where
   its advantages are noise), both on seed + VALIDATION;
4. ``evaluate``: on seed + EVALUATION, never seen before, a queueing system in steady state,
   a loss or periodic system over whole windows;
5. ``export``: the policy folder (``policy.pt``, ``policy.pt2``, ``policy.onnx``);
6. ``compare``: the policy against every tuned rule in steady state, with a verdict.

Each step is a method a user can call alone (``Run(spec, seed).tune_rules()``); what one
returns is what the next takes. ``experiments/train.py`` and ``experiments/study.py`` are
command lines over these steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from drl_ac.checkpoint import LoadedPolicy, save_policy_folder
from drl_ac.evaluation.calibration import calibrate_bias, calibrated
from drl_ac.evaluation.metrics import evaluate
from drl_ac.evaluation.selection import EVALUATION, TUNING, VALIDATION, visited_states
from drl_ac.evaluation.steady import capped, steady_state
from drl_ac.rules.tuning import TuningResult
from drl_ac.study.compare import BUDGETS, Verdict, compare, guard, guard_rule, tune_rules
from envs import NetworkSpec
from envs.observation import ObservationEncoding

Say = Callable[[str], None]


def _silent(text: str) -> None:
    """No progress lines."""


@dataclass
class RunOptions:
    """What one ``experiments/train.py`` run does besides training (``TrainConfig``): calibration,
    the base rule, the comparison, the final evaluation, the output, resuming and reporting; one
    docstring per field (its flag's help: ``drl_ac.cli.dataclass_flags``)."""

    threads: int = 1
    """torch CPU threads; 1 is fastest for the shipped network sizes, especially when another process
    shares the cores"""
    calibrate: str = "auto"
    """tune the acceptance bias on the learned advantage so violation <= eps (auto: on when lam is
    automatic)"""
    randomise: str = "on"
    """with calibration: admit with a calibrated probability in the states between the calibrated bias and
    the next, too accepting one, so that the violation reaches the target instead of the next step below it
    (drl_ac.learning.qnet.GreedyPolicy); off: a deterministic policy"""
    confidence: float = 0.95
    """calibration: the one-sided confidence with which the violation is <= eps (0.5: the point estimate at
    eps, which the long-run violation then exceeds about half of the time)"""
    base: str = "rule"
    """a control system (redundancy, pools): rule = tune the rules first and learn the values of the best one
    that can guard, so that the network is that rule improved where its advantage is real
    (drl_ac.learning.learner); none = learn the optimal values from scratch"""
    compare: str = "quick"
    """after training, tune the system's rules and compare them with the policy in steady state (drl_ac.study;
    quick: a minute or two, full: the study's budget, smoke: seconds, decides nothing) and print a one-line
    verdict"""
    eval_arrivals: int = 200_000
    """arrivals in the final evaluation and in each evaluation of the calibration (a control system is
    evaluated in steady state instead, with the --compare budget; when this flag is given, its run stops after
    about this many arrivals, at least 4 batches per instance)"""
    checkpoint_every: int = 1_000_000
    """decisions between checkpoints"""
    out: Path | None = None
    """output folder (default: checkpoints/runs/SCENARIO-seedS; on --resume the checkpoint's folder)"""
    force: bool = False
    """let a new run overwrite the checkpoint.pt / policy.pt of another run in --out"""
    resume: Path | None = None
    """continue from a checkpoint.pt"""
    wandb: bool = False
    """log to Weights & Biases (offline without credentials)"""
    wandb_project: str = "drl_ac"
    """W&B project"""
    wandb_group: str | None = None
    """W&B group (default: the scenario's name)"""
    quiet: bool = False
    """no progress bar"""
    export: str = "on"
    """write policy.pt2 (torch.export) and policy.onnx beside policy.pt; off: policy.pt and metrics.json only
    (the first export in a process takes several seconds, which a sweep of short runs need not pay;
    drl_ac.checkpoint.export_policy writes them later)"""

    CHOICES: ClassVar[dict[str, list[str]]] = {"calibrate": ["auto", "on", "off"], "randomise": ["on", "off"],
                                               "base": ["rule", "none"], "compare": [*BUDGETS, "off"],
                                               "export": ["on", "off"]}

    def __post_init__(self) -> None:
        for name, allowed in self.CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} (--{name}): unknown {getattr(self, name)!r}. Fix: use one of "
                                 f"{', '.join(allowed)}.")
        for name in ("threads", "eval_arrivals", "checkpoint_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} (--{name.replace('_', '-')}) must be an integer >= 1, got {value!r}. "
                                 "Fix: give a positive value.")
        if not 0.5 <= self.confidence < 1:
            raise ValueError(f"confidence (--confidence) must be in [0.5, 1), got {self.confidence}. Fix: give e.g. "
                             "0.95 (a one-sided 95% upper bound <= eps) or 0.5 (the point estimate at eps).")


@dataclass
class Run:
    """The steps of one run on ``spec`` with ``seed`` (the module's text); ``budget`` sizes
    the tuning, the steady-state evaluations and the comparison (``drl_ac.study.BUDGETS``)."""

    spec: NetworkSpec
    seed: int = 0
    budget: str = "quick"
    progress: Say = field(default=_silent, repr=False)

    @property
    def tuning_seed(self) -> int:
        return self.seed + TUNING

    @property
    def validation_seed(self) -> int:
        return self.seed + VALIDATION

    @property
    def evaluation_seed(self) -> int:
        return self.seed + EVALUATION

    def tune_rules(self, **options: Any) -> dict[str, TuningResult]:
        """Every rule of the system tuned on the tuning seed (``options``: of the system's
        tuner, replacing the budget's)."""
        return tune_rules(self.spec, self.seed, self.budget, self.progress, **options)

    def base_rule(self, tuned: dict[str, TuningResult] | None, encoding: ObservationEncoding | None = None
                  ) -> Any:
        """The best tuned rule that can guard a control system's policy (``guard_rule``),
        read through ``encoding`` (default: the system's); None on another system, without
        rules, or when no rule that can guard was stationary."""
        if self.spec.system.kind != "control" or not tuned:
            return None
        return guard_rule(self.spec, tuned, encoding or ObservationEncoding.for_spec(self.spec))

    def calibrate(self, policy: LoadedPolicy, arrivals: int = 200_000, randomise: bool = True,
                  confidence: float = 0.95, target: float | None = None) -> LoadedPolicy:
        """``policy`` (an admission policy) at the most accepting operating point whose
        violation is <= ``target`` (default eps) with ``confidence`` on the validation seed
        (``calibrate_bias``; ``randomise``: with its mixing at the margin), a record of it
        under ``calibration``."""
        target = self.spec.eps if target is None else target
        bias, m = calibrate_bias(policy, self.spec, target, arrivals=arrivals, seed=self.validation_seed,
                                 confidence=confidence, progress=self.progress, randomise=randomise)
        return calibrated(policy, bias, m, target, confidence, seed=self.validation_seed)

    def guard(self, policy: LoadedPolicy, rule: Any, quantiles: tuple[float, ...] = (0.5, 0.9, 0.99)
              ) -> LoadedPolicy:
        """A control policy guarded by ``rule`` (``base_rule``), the guard's bias chosen on the
        validation seed (``guard``)."""
        return guard(policy, self.spec, rule, self.seed, self.budget, quantiles, self.progress)[0]

    def evaluate(self, policy: Callable, arrivals: int | None = None) -> dict:
        """``policy`` on the evaluation seed: a control system in steady state (at most about
        ``arrivals`` arrivals when given: it may then end before the run is stationary), an
        admission network or a cell over ``arrivals`` (default 200,000)."""
        if self.spec.system.kind == "control":  # a control system's mean is slow to settle
            options = BUDGETS[self.budget]["evaluation"]
            if arrivals is not None:
                options = capped(options, arrivals)
            return steady_state(policy, self.spec, seed=self.evaluation_seed, **options)
        return evaluate(policy, self.spec, arrivals=200_000 if arrivals is None else arrivals,
                        seed=self.evaluation_seed)

    def unlike_rule(self, policy: LoadedPolicy, tuned: dict[str, TuningResult] | None) -> dict | None:
        """A control policy's share of decisions that differ from its guard rule's (``base_rule``)
        in the states it visits on the evaluation seed: 0 is the rule itself, whatever the
        network learned. None on another system or without such a rule."""
        rule = self.base_rule(tuned, policy.encoding)
        if rule is None:
            return None
        states = visited_states(self.spec, policy, policy.encoding, self.evaluation_seed)
        share = float((np.asarray(policy(states)) != np.asarray(rule(states))).mean())
        return {"rule": rule.describe(), "share": share, "states": int(states.shape[0])}

    def export(self, policy: LoadedPolicy, out: Path, exports: bool = True) -> list[Path]:
        """The policy folder: ``policy.pt`` and (with ``exports``) its exports (``save_policy_folder``)."""
        return save_policy_folder(policy, out, exports)

    def compare(self, policy: LoadedPolicy, tuned: dict[str, TuningResult] | None = None,
                measured: dict[str, dict] | None = None) -> tuple[dict[str, dict], Verdict]:
        """The policy against every tuned rule (``tuned``: tuned here when None; ``measured``:
        their rows, when already measured) in steady state on the evaluation seed, and the
        verdict (``compare``)."""
        return compare(policy, self.spec, self.seed, self.budget, progress=self.progress,
                             tuned=tuned, measured=measured)


__all__ = ["Run", "RunOptions"]
