"""One path from data to update (Algorithm 1, batched):

    observe s_t -> epsilon-greedy a_t -> store (s_t, a_t, greedy) as incomplete
    -> env.step -> s_{t+1}, outcomes of earlier decisions -> complete them -> replay
    -> (multiplier update) -> gradient steps on replayed batches with the current lam.

Many instances feed one learner; ``updates_per_step`` gradient steps follow each
vector step.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drl_ac.checkpoint import (
    CHECKPOINT_FORMAT,
    FORMAT_VERSION,
    POLICY_FORMAT,
    CheckpointError,
    LoadedPolicy,
    load_file,
    save_atomic,
    to_arrays,
    to_tensors,
    versions,
)
from drl_ac.cli import flag_of
from drl_ac.evaluation.metrics import phase_offsets
from drl_ac.learning.interaction import act, epsilon_greedy
from drl_ac.learning.learner import DifferentialQLearner, LearnerConfig
from drl_ac.learning.lookahead import advantage_labels
from drl_ac.learning.multiplier import LagrangeMultiplier
from drl_ac.learning.qnet import RuleDefault
from drl_ac.learning.replay import ReplayBuffer
from drl_ac.learning.store import DelayedCompletionStore
from drl_ac.tracking import RunningStats
from envs import Driver, NetworkSpec, ObservationEncoding, load_spec
from envs.reward import reward_rule
from envs.spec import TRAINING_TARGETS

LAM_MODES = ("auto", "scenario")


COSTS = ("holding", "own")
TARGETS = TRAINING_TARGETS


@dataclass
class TrainConfig:
    """Settings of a training run, one docstring per field (``experiments/train.py``'s flags
    and help come from them: ``drl_ac.cli.dataclass_flags``). Every number is checked on
    construction (``ValueError`` naming the field, its command-line flag and the fix)."""

    scenario: str = "paper_tandem"
    """registered scenario name or YAML path"""
    steps: int = 4_000_000
    """decisions (arrivals) over all instances"""
    num_envs: int = 2048
    """instances simulated in parallel"""
    lam: float | str = "auto"
    """Lagrange multiplier: auto (tuned by dual ascent on every scenario, then experiments/train.py
    calibrates the acceptance bias), scenario (the scenario's fixed value, e.g. the paper's 8 on
    paper_tandem; auto when it fixes none; None, in older files, reads as scenario) or a number"""
    eps: float | None = None
    """allowed violation probability (default: the scenario's)"""
    d_ub: float | None = None
    """deadline (default: the scenario's)"""
    delay: str | None = None
    """delay measure (default: the scenario's)"""
    seed: int = 0
    """seed of simulation, exploration and weights"""
    device: str = "auto"
    """auto, cpu or cuda (on --resume: the checkpoint's unless given)"""
    include_in_service: bool = False
    """observe busy servers too"""
    rate_estimate: bool = False
    """observe, last, a running estimate of the arrival rate (the inverse of an exponentially weighted
    mean of the last envs.engine.RATE_MEMORY gaps between arrivals, which a deployed controller computes
    from the arrivals it sees): what a policy trained over a range of loads may read the load from; the
    rules never read it"""
    updates_per_step: int = 1
    """gradient steps per vector step"""
    learning_starts: int = 20_000
    """experiences in replay before learning"""
    replay_size: int = 300_000
    """experiences the replay buffer holds"""
    exploration_start: float = 0.5
    """initial probability of a random action (random choices can overload a control system near
    its limit)"""
    exploration_end: float = 0.01
    """final probability of a random action"""
    exploration_fraction: float = 0.3
    """fraction of the run over which exploration decays, geometrically"""
    lam_init: float = 1.0
    """starting multiplier of the automatic lam"""
    lam_eta: float = 2.0
    """dual-ascent step of the automatic lam"""
    lam_kp: float = 0.0
    """proportional gain (PI) of the automatic lam"""
    lam_every: int = 10
    """vector steps between updates of the automatic lam"""
    lam_margin: float = 0.003
    """the automatic lam aims at violation eps - margin (evaluation noise)"""
    lam_start: float = 0.2
    """fraction of the run before the automatic lam moves (the policy is still immature)"""
    stats_half_life: float = 200_000.0
    """decisions: half-life of the running training statistics (violation, acceptance) that the
    multiplier and the logs read"""
    cost: str = "holding"
    """objective response_time: charge each decision the jobs-in-system area until the next one
    (holding; by Little's law its average is the mean response time, and a decision is charged at
    once for the load it adds to everyone) or its own job's response time when it leaves (own)"""
    reset_backlog: int = 0
    """holding cost: restart a training instance empty when it holds more jobs (0: never), so that
    exploration that pushed it past its stability limit does not teach the values of an overloaded
    system (the step that crossed the limit is kept, with its true next state)"""
    base_rule: dict | None = None
    """a control system: a tuned rule (drl_ac.learning.qnet.RuleDefault's description, e.g.
    rule_of(rule.guard_fields())) whose values are learned instead of the optimal ones, acting as
    the rule with base_exploration random actions, so that the greedy network is the rule improved"""
    base_exploration: float = 0.2
    """with a base rule: the constant probability of a uniformly random action"""
    targets: str = "td"
    """with a base rule and the holding cost: td (one-step bootstrapped targets) or rollout (the
    decisions of every rollout_every-th vector step scored by simulating each action over
    rollout_horizon decisions, then the rule: drl_ac.learning.lookahead; the instances then follow
    the rule without random actions)"""
    rollout_horizon: int = 100
    """targets rollout: decisions each action's rollout covers, its own included"""
    rollout_every: int = 4
    """targets rollout: vector steps between labelled ones (consecutive states are alike)"""
    rollout_start: int = 0
    """targets rollout: decisions of the rule before the first labels (its warm-up from empty)"""
    learner: LearnerConfig = field(default_factory=LearnerConfig)

    def __post_init__(self) -> None:
        if self.lam is None:
            self.lam = "scenario"
        if isinstance(self.lam, str) and self.lam not in LAM_MODES:
            try:
                self.lam = float(self.lam)
            except ValueError:
                raise ValueError(f"lam (--lam): unknown {self.lam!r}. Fix: use auto, scenario or a "
                                 "non-negative number.") from None
        if not isinstance(self.lam, str):
            _check(self.lam, "lam", lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0",
                   "give a non-negative multiplier, auto or scenario")
        _check(self.steps, "steps", _int_at_least(1), "an integer >= 1",
               "give the number of decisions to train for, e.g. --steps 6000000")
        _check(self.num_envs, "num_envs", _int_at_least(1), "an integer >= 1",
               "give the number of instances simulated in parallel, e.g. --num-envs 2048")
        _check(self.seed, "seed", _int_at_least(0), "an integer >= 0", "give a non-negative seed")
        _check(self.updates_per_step, "updates_per_step", _int_at_least(1),
               "an integer >= 1", "give the gradient steps per vector step, e.g. 1")
        if self.eps is not None:
            _check(self.eps, "eps", lambda v: 0 < v < 1, "strictly between 0 and 1",
                   "give an allowed violation probability such as 0.1")
        if self.d_ub is not None:
            _check(self.d_ub, "d_ub", lambda v: math.isfinite(v) and v > 0, "a finite number > 0",
                   "give a positive deadline")
        if self.delay is not None and self.delay not in ("sojourn", "paper"):
            raise ValueError(f"delay (--delay): unknown {self.delay!r}. Fix: use sojourn or paper.")
        _check(self.learning_starts, "learning_starts", _int_at_least(0), "an integer >= 0",
               "give the experiences to collect before learning")
        _check(self.replay_size, "replay_size", _int_at_least(1), "an integer >= 1",
               "give the replay capacity in experiences")
        for name in ("exploration_start", "exploration_end"):
            _check(getattr(self, name), name, lambda v: 0 < v <= 1, "in (0, 1]",
                   "give an exploration probability such as 0.5 or 0.01")
        _check(self.exploration_fraction, "exploration_fraction", lambda v: 0 <= v <= 1, "in [0, 1]",
               "give the fraction of the run over which exploration decays")
        _check(self.lam_init, "lam_init", _finite_at_least(0), "a finite number >= 0",
               "give a non-negative starting multiplier")
        _check(self.lam_eta, "lam_eta", _finite_at_least(0), "a finite number >= 0",
               "give a non-negative dual-ascent step, e.g. 2")
        _check(self.lam_kp, "lam_kp", _finite_at_least(0), "a finite number >= 0",
               "give a non-negative proportional gain, e.g. 0")
        _check(self.lam_every, "lam_every", _int_at_least(1), "an integer >= 1",
               "give the vector steps between multiplier updates")
        _check(self.lam_margin, "lam_margin", lambda v: 0 <= v < 1, "in [0, 1)",
               "give a small non-negative margin below eps, e.g. 0.003")
        _check(self.lam_start, "lam_start", lambda v: 0 <= v <= 1, "in [0, 1]",
               "give the fraction of the run before the automatic multiplier moves")
        _check(self.stats_half_life, "stats_half_life", lambda v: math.isfinite(v) and v > 0,
               "a finite number > 0", "give a positive half-life in decisions")
        _check(self.reset_backlog, "reset_backlog", _int_at_least(0), "an integer >= 0",
               "give the jobs in system above which a training instance restarts empty (0: never)")
        _check(self.base_exploration, "base_exploration", lambda v: 0 < v <= 1, "in (0, 1]",
               "give the probability of a random action while learning a base rule's values, e.g. 0.2")
        if self.base_rule is not None:
            try:
                RuleDefault(self.base_rule, 0 if self.rate_estimate else None)  # columns: only to check it
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"base_rule: not a rule description ({exc}). Fix: give rule_of(rule.guard_fields()) "
                                 "of a tuned rule, or None.") from None
        if self.targets not in TARGETS:
            raise ValueError(f"targets (--targets): unknown {self.targets!r}. Fix: use one of {', '.join(TARGETS)}.")
        for name in ("rollout_horizon", "rollout_every"):
            _check(getattr(self, name), name, _int_at_least(1), "an integer >= 1",
                   "give a positive number of decisions, e.g. 100 and 4")
        _check(self.rollout_start, "rollout_start", _int_at_least(0), "an integer >= 0",
               "give the decisions before the first rollout labels, e.g. 256000")
        if self.cost not in COSTS:
            raise ValueError(f"cost (--cost): unknown {self.cost!r}. Fix: use one of {', '.join(COSTS)}.")
        check_learner(self.learner)

    def spec(self) -> NetworkSpec:
        overrides = {"eps": self.eps, "d_ub": self.d_ub, "delay": self.delay}
        spec = load_spec(self.scenario, **{k: v for k, v in overrides.items() if v is not None})
        if self.lam == "auto":
            spec = spec.with_overrides(lam=None)
        elif self.lam != "scenario":
            spec = spec.with_overrides(lam=float(self.lam))
        return spec

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["learner"]["hidden"] = list(d["learner"]["hidden"])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        d = dict(d)
        learner = dict(d.pop("learner", {}))
        if "hidden" in learner:
            learner["hidden"] = tuple(int(h) for h in learner["hidden"])
        return cls(**d, learner=LearnerConfig(**learner))


def _int_at_least(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= low


def _finite_at_least(low: float) -> Callable[[Any], bool]:
    return lambda v: math.isfinite(v) and v >= low


def _check(value: Any, name: str, ok: Callable[[Any], bool], want: str, fix: str) -> None:
    """Raise ``ValueError("name (--flag) must be WANT, got VALUE. Fix: FIX.")`` unless ``ok(value)``;
    the flag is the field's own (``--lam-every`` for ``lam_every``: every field is a flag of
    ``experiments/train.py``)."""
    try:
        good = bool(ok(value))
    except TypeError:
        good = False
    if not good:
        label = f"{name} ({flag_of(name.removeprefix('learner.'))})"
        raise ValueError(f"{label} must be {want}, got {value!r}. Fix: {fix}.")


def check_learner(cfg: LearnerConfig) -> None:
    """The learner's settings, checked with the command-line flag of each."""
    hidden = tuple(cfg.hidden)
    if not hidden or not all(_int_at_least(1)(h) for h in hidden):
        raise ValueError(f"learner.hidden (--hidden) must be one or more layer widths >= 1, got {list(hidden)}. "
                         "Fix: give widths such as --hidden 64 64.")
    _check(cfg.lr, "learner.lr", lambda v: math.isfinite(v) and v > 0, "a finite number > 0",
           "give a positive learning rate, e.g. 1e-3")
    _check(cfg.beta, "learner.beta", lambda v: 0 <= v <= 1, "in [0, 1]",
           "give the rbar step size, e.g. 0.01")
    _check(cfg.batch_size, "learner.batch_size", _int_at_least(1), "an integer >= 1",
           "give the replay batch size, e.g. 512")
    _check(cfg.grad_clip, "learner.grad_clip", lambda v: v > 0, "> 0", "give a positive gradient-norm clip")
    _check(cfg.target_every, "learner.target_every", _int_at_least(1), "an integer >= 1",
           "give the gradient steps between target-network copies")
    _check(cfg.huber_delta, "learner.huber_delta", lambda v: math.isfinite(v) and v > 0,
           "a finite number > 0", "give a positive Huber threshold")


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise ValueError(f"device: unknown {name!r}. Fix: use auto, cpu or cuda.")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device: cuda requested but torch sees no CUDA device. Fix: use --device cpu or auto.")
    return torch.device(name)


def stored_config(state: dict[str, Any], default: dict[str, Any] | None = None) -> dict[str, Any]:
    """A checkpoint's run settings (``TrainConfig.to_dict``): held once, in its policy; a
    checkpoint written before kept a copy at the top, read when the policy has none. Neither:
    ``default``, or KeyError when it is None."""
    policy = state.get("policy", {})
    if isinstance(policy, dict) and "config" in policy:
        return policy["config"]
    if "config" in state or default is None:
        return state["config"]
    return default


class Trainer:
    """``spec``: the resolved system (a resumed run passes the one stored in its checkpoint,
    so an edited or moved YAML file cannot change it); default ``config.spec()``."""

    def __init__(self, config: TrainConfig, spec: NetworkSpec | None = None):
        self.config = config
        self.spec = spec if spec is not None else config.spec()
        self.device = resolve_device(config.device)
        torch.manual_seed(config.seed)
        self.encoding = replace(ObservationEncoding.for_spec(self.spec, config.include_in_service),
                                rate=config.rate_estimate)
        self.driver = Driver(self.spec, config.num_envs, seed=config.seed, encoding=self.encoding,
                             **self.engine_options(self.spec, config))
        self.B = config.num_envs
        self.obs_dim = self.encoding.width
        self.num_actions = self.spec.num_actions
        if config.base_rule is not None and self.spec.system.kind != "control":
            raise ValueError(f"base_rule: only a control system learns a base rule's values; {self.spec.name} is "
                             f"{self.spec.system.kind}. Fix: use None.")
        self.base = None if config.base_rule is None else \
            RuleDefault(config.base_rule, self.encoding.rule_columns).to(self.device)
        self.learner = DifferentialQLearner(self.obs_dim, torch.from_numpy(self.encoding.scale(self.spec)),
                                            config.learner, self.device, self.num_actions,
                                            reward_rule(self.spec), self.spec.admission, self.base)
        self.replay = ReplayBuffer(config.replay_size, self.obs_dim, self.device, seed=config.seed)
        self.store = DelayedCompletionStore(self.B, self.obs_dim)
        self.rng = np.random.default_rng([config.seed, 1])  # exploration
        self.auto_lam = self.spec.admission and self.spec.lam is None
        self.per_step_cost = self.spec.objective == "response_time" and config.cost == "holding"
        # decisions complete at once: charged the holding cost, or a cell its drops (envs.reward)
        self.charge = "holding" if self.per_step_cost else ("drops" if self.spec.system.kind == "loss" else None)
        if config.reset_backlog and not self.per_step_cost:
            raise ValueError("reset_backlog (--reset-backlog): restarting instances needs decisions charged per step "
                             "(objective response_time with cost holding); others would lose pending outcomes. "
                             "Fix: use 0.")
        self.rollout = config.targets == "rollout"
        if self.rollout and (self.base is None or not self.per_step_cost):
            raise ValueError("targets (--targets) rollout: scores actions against a base rule by their holding cost; "
                             f"{self.spec.name} has {'no base rule' if self.base is None else 'another cost'}. Fix: "
                             "use it on a control system with --base rule and the objective response_time with "
                             "--cost holding, or use --targets td.")
        self.multiplier = LagrangeMultiplier(self.spec.eps - (config.lam_margin if self.auto_lam else 0.0),
                                             lam=config.lam_init if self.auto_lam else (self.spec.lam or 0.0),
                                             eta=config.lam_eta, kp=config.lam_kp, every=config.lam_every)
        self.stats = RunningStats(config.stats_half_life)
        self.t = 0
        self.resets = 0  # training instances restarted for their backlog
        self.last: dict[str, float] = {}
        obs = self.driver.reset(config.seed)
        self.obs = obs
        self.store.put_obs(0, obs)

    @staticmethod
    def engine_options(spec: NetworkSpec, config: TrainConfig) -> dict[str, Any]:
        """A periodic system's instances start spread over the period (in lockstep they would
        all live through the same hours, and an eval sees all hours); a cell runs without
        probes (its reward never reads a blocked UE's counterfactual: ``envs.reward``)."""
        options: dict[str, Any] = {}
        if spec.period is not None:
            options["start"] = phase_offsets(spec.period, config.num_envs, config.seed)
        return {**options, **spec.system.engine_options()}

    # ------------------------------------------------------------------ the loop
    @property
    def lam(self) -> float:
        return self.multiplier.lam

    @property
    def decisions(self) -> int:
        return self.t * self.B

    def exploration(self) -> float:
        c = self.config
        if self.rollout:
            return 0.0
        if self.base is not None:
            return c.base_exploration
        horizon = max(1.0, c.exploration_fraction * c.steps)
        frac = min(1.0, self.decisions / horizon)
        return c.exploration_start * (c.exploration_end / c.exploration_start) ** frac

    def base_actions(self, obs: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return self.base(torch.from_numpy(obs).to(self.device)).cpu().numpy()

    def step(self) -> None:
        """One vector step and its gradient steps."""
        c = self.config
        if self.rollout and self.decisions >= c.rollout_start and self.t % c.rollout_every == 0:
            self.replay.add(advantage_labels(self.driver, self.base_actions, c.rollout_horizon))
        obs_t = torch.from_numpy(self.obs).to(self.device)
        with torch.inference_mode():
            followed = self.learner.greedy_actions(obs_t) if self.base is None else self.base(obs_t)
        greedy = followed.cpu().numpy()
        action = epsilon_greedy(greedy, self.exploration(), self.num_actions, self.rng)
        self.obs, exp = act(self.driver, self.store, self.t, action, greedy, self.charge)
        self.t += 1
        if self.config.reset_backlog:
            congested = self.driver.jobs_in_system() > self.config.reset_backlog
            if congested.any():
                self.resets += int(congested.sum())
                self.obs = self.driver.reset_instances(congested)
                self.store.put_obs(self.t, self.obs)  # the next decisions start from the fresh states
        if not self.rollout:
            self.replay.add(exp)
        self.stats.update(exp)
        if (self.auto_lam and self.t % self.multiplier.every == 0 and self.decisions >= self.config.lam_start
                * self.config.steps and math.isfinite(self.violation)):
            self.multiplier.update(self.violation)
        learn = self.learner.regress if self.rollout else self.learner.update
        if len(self.replay) >= (c.learner.batch_size if self.rollout else c.learning_starts):
            for _ in range(c.updates_per_step):
                diag = learn(self.replay.sample(c.learner.batch_size), self.lam, self.spec.eps)
            self.last = diag

    @property
    def violation(self) -> float:
        """What the automatic multiplier holds at eps - margin: the violation of recent greedy
        decisions; a cell's drops per admitted UE (drops are paid when they happen, to no
        decision in particular: all decisions count, exploration is small by then)."""
        return self.stats.charged_per_accepted if self.charge == "drops" else self.stats.greedy_violation

    def progress(self) -> dict[str, float]:
        cell = self.charge == "drops"
        out = {"violation": self.violation if cell else self.stats.violation, "greedy_violation": self.violation,
               "acceptance": self.stats.acceptance, "objective": self.stats.objective,
               "throughput": self.stats.throughput, "mean_cost": self.stats.mean_cost,
               "rbar": float(self.learner.rbar), "lam": self.lam, "exploration": self.exploration(),
               "decisions": self.decisions, "resets": self.resets}
        out.update({k: float(v) for k, v in self.last.items()})
        return out

    def train(self, until: int | None = None, callback: Callable[[Trainer], None] | None = None,
              callback_every: int = 20, stop: Callable[[], bool] | None = None) -> bool:
        """Run until ``until`` decisions (default: the configured total), or until ``stop()``
        turns true (checked after every step, so the state is always whole and can be saved,
        e.g. when the user presses Ctrl-C). Returns True when it stopped early."""
        until = self.config.steps if until is None else until
        while self.decisions < until:
            if stop is not None and stop():
                return True
            self.step()
            if callback is not None and self.t % callback_every == 0:
                callback(self)
        return False

    def train_until(self, deadline: float, replan_every: int = 20) -> None:
        """Train until wall-clock time ``deadline`` (``time.time()``), e.g. a fixed slot on a
        shared machine. Every ``replan_every`` vector steps the run's length becomes what the
        speed so far reaches by the deadline, so the exploration and multiplier schedules
        (fractions of ``config.steps``) end with the slot, not with a guess."""
        t0, d0 = time.time(), self.decisions
        while time.time() < deadline:
            self.train(until=self.decisions + replan_every * self.B)
            rate = (self.decisions - d0) / max(time.time() - t0, 1e-9)
            total = self.decisions + int(rate * max(deadline - time.time(), 0.0))
            self.config = dataclasses.replace(self.config, steps=max(total, self.decisions + self.B))

    # ------------------------------------------------------------------ state
    def policy_section(self, metrics: dict | None = None) -> dict[str, Any]:
        """What an exported policy holds: weights, shapes, scenario, settings, evaluation, versions."""
        return {"format": POLICY_FORMAT, "version": FORMAT_VERSION, "obs_dim": self.obs_dim,
                "num_actions": self.num_actions, "admission": self.spec.admission,
                "hidden": list(self.config.learner.hidden), "scale": self.learner.q.scale.cpu(),
                "state_dict": {k: v.cpu() for k, v in self.learner.q.state_dict().items()},
                "encoding": self.encoding.to_dict(), "scenario": self.spec.to_dict(),
                "lam": self.lam, "rbar": float(self.learner.rbar), "decisions": self.decisions,
                "config": self.config.to_dict(), "metrics": metrics or {}, "versions": versions()}

    def policy(self) -> LoadedPolicy:
        """The greedy policy now, as a typed object with weights of its own (training on does
        not change it)."""
        section = self.policy_section()
        return LoadedPolicy({**section, "state_dict": {k: v.clone() for k, v in section["state_dict"].items()}})

    def state_dict(self) -> dict[str, Any]:
        return {"format": CHECKPOINT_FORMAT, "version": FORMAT_VERSION, "versions": versions(),
                "policy": self.policy_section(), "t": self.t,  # the config once: in the policy
                "resets": self.resets,
                "learner": self.learner.state_dict(), "multiplier": self.multiplier.state_dict(),
                "stats": self.stats.state_dict(), "replay": self.replay.state_dict(),
                "store": to_tensors(self.store.get_state()), "sim": to_tensors(self.driver.engine.get_state()),
                "obs": torch.from_numpy(self.obs), "exploration_rng": self.rng.bit_generator.state,
                "torch_rng": torch.get_rng_state()}

    def save(self, path: str | Path) -> Path:
        return save_atomic(self.state_dict(), path)

    @classmethod
    def resume(cls, path: str | Path, **changes: Any) -> Trainer:
        """Continue a run from ``checkpoint.pt``; ``changes`` may extend ``steps`` or set ``device``."""
        return cls.from_state(load_file(path, expected=(CHECKPOINT_FORMAT,)), **changes)

    @classmethod
    def from_state(cls, state: dict[str, Any], **changes: Any) -> Trainer:
        """A trainer continuing from a loaded ``checkpoint.pt`` (see ``resume``)."""
        allowed = {"steps", "device"}
        if set(changes) - allowed:
            raise ValueError(f"resume: only {sorted(allowed)} may change, not {sorted(set(changes) - allowed)}. "
                             "Fix: start a new run to change other settings.")
        try:
            config = TrainConfig.from_dict({**stored_config(state), **changes})
            spec = NetworkSpec.from_dict(state["policy"]["scenario"])
        except (KeyError, TypeError) as exc:
            raise CheckpointError(f"checkpoint: its settings are incomplete or from another version ({exc!r} "
                                  "missing or wrong). Fix: resume from a checkpoint.pt written by this drl_ac, "
                                  "or start a new run.") from None
        trainer = cls(config, spec=spec)
        try:
            trainer.load_state_dict(state)
        except (KeyError, TypeError, RuntimeError, ValueError, IndexError) as exc:
            raise CheckpointError(f"checkpoint: its state does not fit the stored settings ({type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0][:160] if str(exc) else ''}). Fix: the file is "
                                  "damaged or from an incompatible version; start a new run.") from None
        return trainer

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t = int(state["t"])
        self.resets = int(state.get("resets", 0))  # absent in files written before backlog resets
        self.learner.load_state_dict(state["learner"])
        self.multiplier.load_state_dict(state["multiplier"])
        self.stats.load_state_dict(state["stats"])
        self.replay.load_state_dict(state["replay"])
        self.store.set_state(to_arrays(state["store"]))
        self.driver.engine.set_state(to_arrays(state["sim"]))
        self.obs = state["obs"].numpy()
        self.rng.bit_generator.state = state["exploration_rng"]
        torch.set_rng_state(state["torch_rng"])

