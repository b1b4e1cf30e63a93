"""A study: one system at one or several loads, from the spec to an exported, judged policy.
The same path for the four systems (``StudyConfig``, ``run_study``; ``experiments/study.py``
is its command line).

Per load, one job (local processes, or Ray tasks; a job's numbers depend on its seeds only):

1. the spec at that load (``at_load``: the arrival rate set to the load times the system's
   reference rate, ``reference_rate``);
2. every rule of the system tuned on seed + TUNING (``study.tune_rules``);
3. one learner per (learner seed, cost), ``snapshots`` greedy policies of each
   (``selection.train_snapshots``);
4. the candidates: every snapshot; on a control system each also guarded by the best
   tuned rule that can guard (``study.guard_rule``), and that rule itself
   (``study.guard_candidates``); on an admission
   network or a cell each calibrated to eps on the validation seed
   (``calibration.calibrate_bias``);
5. the choice on seed + VALIDATION: every candidate in steady state, the best headline
   among the stationary ones that meet the constraint with 95% confidence, the first of
   those (best first) whose stability verdict from a backlog is not ``unstable``;
6. ``study.compare`` on seed + EVALUATION (never seen before), and the files: the chosen
   policy folder (``save_policy_folder``), ``comparison.json`` and ``report.md`` per load;
   ``study.json``, ``study.md`` and ``study.png`` (headline per load, learned against the
   best rule) for the whole study.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drl_ac import study
from drl_ac.cli import HelpFormatter, dataclass_flags, progress_printer
from drl_ac.folder_lock import FolderLock
from drl_ac.parallel import run_jobs
from drl_ac.study.loads import WEIGHTS, calibrate_across, choose_across_loads, load_range, schedule
from drl_ac.study.pipeline import Run, RunOptions
from drl_ac.study.report import commit, phase_plot, report, write_summary
from drl_ac.study.single_policy import judge
from envs import NetworkSpec, SpecError, load_spec
from envs.compiled import check_engine, use_engine

CALIBRATION = {"smoke": 4_000, "quick": 50_000, "full": 200_000}  # arrivals per calibration step, per budget
Say = Callable[[str], None]


@dataclass
class StudyConfig:
    """What a study runs. Every field is checked on construction (``ValueError`` naming the
    field, its command-line flag and the fix); the learners' settings again by
    ``TrainConfig``."""

    scenario: str = "paper_tandem"
    """A packaged scenario's name or a YAML file."""
    loads: tuple[float, ...] | None = None
    """None: the scenario as it is. Else one study per load, a fraction of the system's
    reference rate: redundancy, lambda*(d) of its first choice of d (the exact stability limit
    of d = 1 on redundancy_ps); two pools, the stability bound of the best threshold rule
    (reroute after tau in service on the signalled pool, tau at its best: the exact formula of
    envs.systems.pools.theory, not PoolsSystem.capacity, whose bound for replication assumes copies
    start at once, false with one server per pool); a network or a cell, its own arrival rate
    (load 1 is the scenario as it is). Single-class arrivals only."""
    eps: float | None = None
    """The headline's constraint (violation or dropping <= eps); None: the scenario's."""
    seed: int = 0
    """The study's seed: rules tuned on seed + 777, learners chosen on seed + 555, everything
    compared on seed + 10000 (with loads, on a seed of each load's own: load_seed)."""
    seeds: tuple[int, ...] = (0,)
    """Learner seeds: one learner per seed and cost."""
    costs: tuple[str, ...] = ("holding",)
    """How a control system's decisions are charged (TrainConfig.cost: holding, own): one
    learner per seed and cost."""
    steps: int | None = None
    """Training decisions per learner (None: the scenario's training block, else TrainConfig's)."""
    num_envs: int | None = None
    """Instances per learner (None: the scenario's training block, else TrainConfig's)."""
    updates_per_step: int | None = None
    """Gradient steps per vector step (None: the scenario's training block, else TrainConfig's)."""
    exploration_start: float | None = None
    """Initial exploration probability (None: TrainConfig's); random choices can overload a
    control system near its limit."""
    reset_backlog: int | None = None
    """A training instance holding more jobs restarts empty (holding cost only; None: TrainConfig's)."""
    base: str = "rule"
    """A control system's learners: rule (learn the values of the best tuned rule that can
    guard, acting as it with constant exploration, so that each greedy policy is that rule
    improved; TrainConfig.base_rule) or none (learn the optimal values from scratch)."""
    base_exploration: float | None = None
    """With base rule: the probability of a random action (None: TrainConfig's)."""
    targets: str | None = None
    """With base rule and the holding cost: td (one-step bootstrapped values) or rollout (each
    action scored by simulating it, then the rule: drl_ac.learning.lookahead); None: the
    scenario's training block, else td."""
    rate_estimate: bool | None = None
    """The learners observe a running estimate of the arrival rate (TrainConfig.rate_estimate; None:
    the scenario's training block, else off)."""
    hidden: tuple[int, ...] | None = None
    """Q-network layer widths (None: LearnerConfig's)."""
    lr: float | None = None
    """Learning rate (None: LearnerConfig's)."""
    snapshots: int = 3
    """Greedy policies kept per learner, evenly spaced over its run."""
    quantiles: tuple[float, ...] = (0.5, 0.9, 0.99)
    """Guard biases of a control system: quantiles of a snapshot's positive advantages over the
    best constant action."""
    calibrate: bool = True
    """Admission network or cell: calibrate each snapshot's acceptance bias to eps on the
    validation seed (one-sided 95% bound)."""
    calibration_arrivals: int | None = None
    """Arrivals per calibration evaluation (None: by budget, smoke 4000, quick 50000, full 200000)."""
    budget: str = "quick"
    """Tuning, validation and comparison sizes: smoke (checks the wiring in seconds, decides
    nothing), quick or full (drl_ac.study.BUDGETS)."""
    out: Path | None = None
    """The study's folder (None: checkpoints/<scenario>): the files of a load in OUT/load-X,
    or in OUT itself without loads."""
    force: bool = False
    """Overwrite the policy files an earlier study (or a shipped policy) left in OUT."""
    workers: int | None = None
    """Loads run at once in local processes (None: one per load up to the CPUs; 1: in this
    process, in turn)."""
    ray: str | None = None
    """Run the loads as Ray tasks: local (a fresh local Ray), auto (RAY_ADDRESS or a running
    local cluster), host:6379 or ray://host:10001; None: local processes."""
    one_policy: bool = False
    """With loads: one policy for every load (drl_ac.study.loads), trained on the loads held in turn
    (a Poisson rate profile whose phase the policy does not see), then judged at each load against
    every rule re-tuned there, tuned at the average load and at the peak: one policy folder (OUT)
    and one table (OUT/one_policy.md, one_policy.json)."""
    hold: float | None = None
    """With one_policy: the time each load of the training range is held (None: 10,000 arrivals at
    the reference rate)."""
    hold_weight: str = "time"
    """With one_policy: time (each load held --hold) or arrivals (each held --hold x peak / load, so
    that every load brings the learners the same number of decisions)."""
    profiles: tuple[str, ...] = ()
    """With one_policy: scenarios of the same system whose load changes by the hour (e.g.
    redundancy_ps_daily) on which the policy is also judged, over whole days, against the rules
    re-tuned for each hour's load and switched by the hour, and the rules that do not know the hour
    (drl_ac.study.profiles)."""
    policy: Path | None = None
    """With one_policy: judge this saved policy (a policy.pt, e.g. a shipped one) at the loads and
    profiles instead of training one; the rules are tuned as for a trained one."""
    engine: str = "compiled"
    """The event loop: compiled (Numba, where the system has one, else NumPy) or numpy (the
    reference); both give the same trajectory for a seed (envs.compiled)."""
    sim_threads: int | None = None
    """Threads of the compiled loop in each process (None: every core; 1 under pytest-xdist)."""
    quiet: bool = False
    """No progress lines."""
    export: str = "on"
    """Write each policy's policy.pt2 (torch.export) and policy.onnx beside its policy.pt; off:
    policy.pt and metrics.json only (the first export in a process takes several seconds)."""

    def __post_init__(self) -> None:
        from drl_ac.learning.trainer import COSTS, _check

        self.out = Path(self.out) if self.out is not None else None
        if self.loads is not None:
            self.loads = tuple(float(x) for x in self.loads)
            if not self.loads or any(not (math.isfinite(x) and x > 0) for x in self.loads):
                raise ValueError(f"loads (--loads) must be numbers > 0, got {list(self.loads)}. Fix: give fractions "
                                 "of the reference rate, e.g. --loads 0.5 0.9, or leave them out for the scenario "
                                 "as it is.")
            if len(set(self.loads)) != len(self.loads):
                raise ValueError(f"loads (--loads): {list(self.loads)} repeats a load. Fix: give each load once.")
        if self.one_policy and (self.loads is None or len(self.loads) < 2):
            raise ValueError("one_policy (--one-policy) trains one policy over a range of loads and needs at least two. "
                             "Fix: give e.g. --loads 0.3 0.6 0.9.")
        self.policy = Path(self.policy) if self.policy is not None else None
        if self.policy is not None and not self.one_policy:
            raise ValueError("policy (--policy) is judged by a --one-policy study. Fix: add --one-policy and the "
                             "loads, or leave --policy out.")
        self.profiles = tuple(self.profiles)
        if self.profiles and not self.one_policy:
            raise ValueError("profiles (--profiles) judge the policy of a --one-policy study over days. Fix: add "
                             "--one-policy, or leave --profiles out.")
        for name in self.profiles:  # an unknown scenario fails now, not after the training
            if load_spec(name).system.name != load_spec(self.scenario).system.name:
                raise ValueError(f"profiles (--profiles): {name} is not a scenario of {self.scenario}'s system. Fix: "
                                 "give a day of the same system, e.g. redundancy_ps_daily for redundancy_ps.")
        if self.export not in RunOptions.CHOICES["export"]:  # train.py's choices
            raise ValueError(f"export (--export): unknown {self.export!r}. Fix: use on or off.")
        if self.hold_weight not in WEIGHTS:
            raise ValueError(f"hold_weight (--hold-weight): unknown {self.hold_weight!r}. Fix: use one of "
                             f"{', '.join(WEIGHTS)}.")
        if self.hold is not None and not (math.isfinite(self.hold) and self.hold > 0):
            raise ValueError(f"hold (--hold) must be a time > 0, got {self.hold}. Fix: give the time each load is "
                             "held, or leave it out.")
        self.seeds, self.costs = tuple(self.seeds), tuple(self.costs)
        self.hidden = None if self.hidden is None else tuple(self.hidden)
        self.quantiles = tuple(float(q) for q in self.quantiles)
        _check(self.seed, "seed", lambda v: isinstance(v, int) and v >= 0, "an integer >= 0",
               "give a non-negative seed")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds (--seeds) must be distinct learner seeds, at least one, got {list(self.seeds)}. "
                             "Fix: e.g. --seeds 0 1.")
        bad = [c for c in self.costs if c not in COSTS]
        if bad or not self.costs:
            raise ValueError(f"costs (--costs): {bad or 'none'} not among {', '.join(COSTS)}. Fix: e.g. --costs "
                             "holding.")
        _check(self.snapshots, "snapshots", lambda v: isinstance(v, int) and v >= 1,
               "an integer >= 1", "give the greedy policies kept per learner, e.g. 3")
        if any(not 0 < q < 1 for q in self.quantiles):
            raise ValueError(f"quantiles (--quantiles) must be in (0, 1), got {list(self.quantiles)}. Fix: e.g. "
                             "--quantiles 0.5 0.9.")
        if self.base not in ("rule", "none"):
            raise ValueError(f"base (--base): unknown {self.base!r}. Fix: use rule or none.")
        if self.targets == "rollout" and (self.base != "rule" or set(self.costs) != {"holding"}):
            raise ValueError("targets (--targets) rollout: scores actions against the base rule by their holding "
                             "cost. Fix: use it with --base rule and --costs holding, or use --targets td.")
        if self.budget not in study.BUDGETS:
            raise ValueError(f"budget (--budget): unknown {self.budget!r}. Fix: use one of {', '.join(study.BUDGETS)}.")
        check_engine(self.engine)
        for name in ("workers", "calibration_arrivals", "sim_threads"):
            if getattr(self, name) is not None:
                _check(getattr(self, name), name, lambda v: isinstance(v, int) and v >= 1, "an integer >= 1",
                       "give a positive number or leave it out")
        for seed in self.seeds:  # the learners' settings, checked by TrainConfig now, not after the tuning
            self.train_config(seed, self.costs[0])

    def train_config(self, seed: int, cost: str, base_rule: dict | None = None):
        """The ``TrainConfig`` of the learner with ``seed`` and ``cost`` (and ``base_rule``, a
        ``RuleDefault`` description); fields left None keep the scenario's training block (as
        ``experiments/train.py`` does), else TrainConfig's defaults (a backlog reset only under the
        holding cost, which needs it; rollout targets only with a base rule)."""
        from drl_ac.learning.learner import LearnerConfig
        from drl_ac.learning.trainer import TrainConfig

        given = dict(load_spec(self.scenario).training)
        if base_rule is None or cost != "holding":
            given.pop("targets", None)
        given.update({k: v for k in ("steps", "num_envs", "updates_per_step", "exploration_start", "reset_backlog",
                                     "eps", "base_exploration", "targets", "rate_estimate")
                      if (v := getattr(self, k)) is not None})
        given["base_rule"] = base_rule
        if cost != "holding":
            given["reset_backlog"] = 0
        learner = {k: v for k, v in (("hidden", self.hidden), ("lr", self.lr)) if v is not None}
        if "hidden" in learner:
            learner["hidden"] = tuple(int(h) for h in learner["hidden"])
        return TrainConfig(scenario=self.scenario, seed=int(seed), cost=cost, learner=LearnerConfig(**learner),
                           **{k: v for k, v in given.items() if v is not None})

    def folder(self) -> Path:
        return self.out if self.out is not None else Path("checkpoints") / Path(self.scenario).stem

    def load_folder(self, load: float | None) -> Path:
        """Where the files of ``load`` go (None: the scenario as it is)."""
        return self.folder() if load is None else self.folder() / f"load-{load:g}"

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        return {k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v) for k, v in out.items()}

    def command(self) -> str:
        """The command line of ``experiments/study.py`` that runs this study."""
        parts = ["python", "experiments/study.py"]
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default or (f.default_factory is not dataclasses.MISSING and value == f.default_factory()):
                continue
            flag = "--" + f.name.replace("_", "-")
            if isinstance(value, bool):
                parts.append(flag if value else "--no-" + f.name.replace("_", "-"))
            elif isinstance(value, tuple):
                parts += [flag, *map(str, value)]
            else:
                parts += [flag, str(value)]
        return " ".join(parts)


# ---------------------------------------------------------------- the spec at a load
def reference_rate(spec: NetworkSpec) -> float:
    """The arrival rate a load is a fraction of (``System.reference_rate``)."""
    return spec.system.reference_rate()


def _scaled(stream: dict[str, Any], factor: float, name: str) -> dict[str, Any]:
    """An arrival stream (``NetworkSpec.to_dict``'s form) with ``factor`` times its rate: a
    renewal law's gaps divided by ``factor`` (same shape), a Poisson profile multiplied."""
    s = dict(stream)
    if "profile" in s:
        profile = dict(s["profile"])
        if "table" in profile:
            profile["table"] = [factor * x for x in profile["table"]]
        else:
            s["rate"] = factor * s["rate"]
        return {**s, "profile": profile}
    for key, power in (("rate", 1), ("mean", -1), ("scale", -1), ("rates", 1), ("values", -1)):
        if key in s:
            s[key] = [x * factor ** power for x in s[key]] if isinstance(s[key], list) else s[key] * factor ** power
            return s
    raise SpecError("arrival", f"{name}: cannot rescale an arrival law {s.get('dist')!r}",
                    "give the arrivals as a renewal law with a mean (or a Poisson rate), or run without loads")


def load_seed(seed: int, load: float | None) -> int:
    """The seed of a study's load: its rules are tuned, its learners chosen and everything
    compared on offsets of it. Each load has its own, 100,003 x round(1000 x load) apart (far
    beyond the offsets TUNING, VALIDATION, EVALUATION), so the loads' errors are independent:
    with one seed for all, the figures of three loads erred together (correlation 0.85)."""
    return seed if load is None else seed + 100_003 * round(1_000 * load)


def at_load(spec: NetworkSpec, load: float) -> NetworkSpec:
    """``spec`` with its arrival rate set to ``load`` x ``reference_rate(spec)`` (the law of the
    gaps kept, scaled in time), named ``name@load`` (``name`` without a load it had). Single-class arrivals only: a spec with
    job classes or a cell's per-type arrivals raises a SpecError."""
    if not (math.isfinite(load) and load > 0):
        raise SpecError("loads", f"must be > 0, got {load!r}", "give a fraction of the reference rate, e.g. 0.9")
    cfg = spec.to_dict()
    if "arrival" not in cfg:
        raise SpecError("arrival", f"{spec.name}: at_load sets a single arrival stream's rate, and this "
                        f"{spec.system.name} has one stream per job class or UE type",
                        "run the study without loads (the scenario as it is), or write one scenario per load")
    target = load * reference_rate(spec)
    cfg["arrival"] = _scaled(cfg["arrival"], target / spec.arrival_rate, spec.name)
    cfg["name"] = f"{spec.name.split('@')[0]}@{load:g}"  # a spec at a load already: its name, at the new one
    out = NetworkSpec.from_dict(cfg)
    if not math.isclose(out.arrival_rate, target, rel_tol=1e-9):
        raise SpecError("arrival", f"{spec.name}: rescaled to rate {out.arrival_rate:.6g}, wanted {target:.6g}",
                        "give the arrivals as a renewal law with a finite mean, or run without loads")
    return out


# ---------------------------------------------------------------- one load
def candidates(config: StudyConfig, run: Run, tuned: dict, default: Any = None) -> tuple[list, list[str]]:
    """The learned candidates of a study (the module's step 4) and the snapshots' labels.
    ``default``: the learners' base rule and guard (None: the best tuned rule that can guard)."""
    from drl_ac.evaluation.selection import Candidate, train_snapshots
    from drl_ac.learning.qnet import rule_of

    spec, say, kind = run.spec, run.progress, run.spec.system.kind
    default = default or run.base_rule(tuned)
    base_rule = rule_of(default.guard_fields()) if default is not None and config.base == "rule" else None
    if base_rule is not None:
        say(f"learners learn the values of {default.describe()}")
    configs = [config.train_config(s, c, base_rule) for s in config.seeds for c in config.costs]
    taken = train_snapshots(spec, configs, config.snapshots, say)
    if not taken:
        raise RuntimeError(f"{spec.name}: no learner kept a snapshot (every run's job table filled before its first). "
                           "Fix: lower --exploration-start, set --reset-backlog, or use a lower load.")
    labels = [c.label for c in taken]
    if kind == "control":
        if default is None:
            say("no rule that can guard is stationary on the tuning seed: the snapshots are not guarded")
            return taken, labels
        return study.guard_candidates(taken, spec, default, run.seed, config.quantiles), labels
    if not config.calibrate:
        return taken, labels
    arrivals = config.calibration_arrivals or CALIBRATION[config.budget]
    at = run
    if config.one_policy and taken[0].policy().encoding.rate:  # an operating point per load, by the estimate
        base = study_spec(config, None)[0]
        return [Candidate(f"{c.label}, calibrated per load", calibrate_across(
            c.policy(), base, config.loads, run.seed, run.budget, arrivals, say).section) for c in taken], labels
    if config.one_policy:  # one bias for every load: calibrated at the peak, where the violation is highest
        peak = max(config.loads)
        at = Run(at_load(study_spec(config, None)[0], peak), run.seed, run.budget, say)
        say(f"calibrating at the peak load {peak:g}, so that the violation is <= eps at every load")
    out = []
    for c in taken:
        policy = at.calibrate(c.policy(), arrivals)
        m = policy.section["calibration"]
        say(f"calibrated {c.label}: bias {policy.bias:.4f}, and w.p. {m['mix']:.4f} within {m['margin']:.4f} "
            f"below it, violation upper bound {m['violation_upper']:.4f}")
        out.append(Candidate(f"{c.label}, calibrated", policy.section))
    return out, labels


def choose(cands: Sequence, spec: NetworkSpec, seed: int, budget: str, say: Say) -> tuple[Any, list[dict]]:
    """The candidate with the best headline in steady state on seed + VALIDATION among the
    stationary ones meeting the constraint with 95% confidence, the first of those (best
    first) whose stability verdict is not ``unstable``; and every candidate's score. When none
    qualifies, the best by (stationary, feasible, headline), marked ``"fallback"``. On a control
    system every stability verdict comes first, and an unstable candidate is not run to a steady
    state (``study.unstable_row``)."""
    from drl_ac.evaluation.selection import VALIDATION
    from drl_ac.evaluation.steady import stability, steady_state

    head = spec.system.headline
    sign = -1.0 if head.sense == "max" else 1.0  # sort key: smaller is better
    options = study.BUDGETS[budget]
    scored, verdicts = [], {}
    for i, c in enumerate(cands):
        if spec.system.hopeless_backlog() is None:  # a control system: an unstable one is not run (compare)
            verdicts[i] = study.stability_first(c.policy(), spec, seed + VALIDATION + 1, budget)
        unstable = study.unstable_row(verdicts[i], spec, budget, options["evaluation"]["num_envs"]) \
            if i in verdicts else None
        m = unstable or steady_state(c.policy(), spec, seed=seed + VALIDATION, **options["evaluation"])
        s = {"label": c.label, head.measure: m[head.measure], f"{head.measure}_ci": m[f"{head.measure}_ci"],
             "stationary": bool(m["stationary"]), "feasible": study.feasible(m, spec)}
        if head.constraint is not None:
            s[head.constraint] = m[head.constraint]
        if i in verdicts:
            s["stability"] = verdicts[i].to_dict()
        scored.append(s)
        say(f"validation: {c.label}: {head.measure} {s[head.measure]:.4f}"
            f"{'' if s['stationary'] else ', NOT stationary'}{'' if s['feasible'] else ', constraint not met'}")
    value = [sign * s[head.measure] if math.isfinite(s[head.measure]) else math.inf for s in scored]
    usable = sorted((i for i, s in enumerate(scored) if s["stationary"] and s["feasible"]), key=lambda i: value[i])
    chosen = None
    for i in usable:
        verdict = verdicts.get(i) or stability(cands[i].policy(), spec, seed=seed + VALIDATION + 1,
                                               **options["stability"])
        scored[i]["stability"] = verdict.to_dict()
        say(f"stability of {cands[i].label}: {verdict.describe()}")
        if verdict.verdict != "unstable":
            chosen = i
            break
    if chosen is None:
        chosen = min(range(len(scored)), key=lambda i: (not scored[i]["stationary"], not scored[i]["feasible"],
                                                         value[i]))
        scored[chosen]["fallback"] = ("no candidate was stationary, met the constraint and was stable on the "
                                      "validation seed: the best by (stationary, constraint met, headline)")
    scored[chosen]["chosen"] = True
    say(f"chose {cands[chosen].label}")
    return cands[chosen], scored


def study_spec(config: StudyConfig, load: float | None) -> tuple[NetworkSpec, NetworkSpec]:
    """The study's scenario (with its eps) and the system at ``load`` (None: as it is, or with
    ``one_policy`` its loads' range: ``loads.load_range``)."""
    base = load_spec(config.scenario, eps=config.eps) if config.eps is not None else load_spec(config.scenario)
    if load is None and config.one_policy:
        return base, load_range(base, config.loads, config.hold, config.hold_weight)
    return base, base if load is None else at_load(base, load)


def study_load(job: dict[str, Any], say: Say | None = None) -> dict[str, Any]:
    """One load of a study (the module's steps 1 to 6 but the files): a job for a local
    process or a Ray task. ``job``: ``{"config": StudyConfig.to_dict(), "load": float | None}``.
    Runs on one torch thread (restored after), so its numbers depend on its seeds only."""
    import torch

    config = StudyConfig(**job["config"])
    load = job["load"]
    t0 = time.perf_counter()
    if say is None:
        from drl_ac.cli import progress_printer
        printer = progress_printer(config.quiet)
        tag = f"[{Path(config.scenario).stem}{'' if load is None else f' load {load:g}'}] "
        say = lambda text: printer(tag + text)  # noqa: E731
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        base, spec = study_spec(config, load)
        say(f"{spec.system.describe()}")
        run = Run(spec, load_seed(config.seed, load), config.budget, say)
        tuned = run.tune_rules()
        tuned_at: dict[float, dict] = {}  # a one-policy study's rules per load, tuned once
        observes_rate = config.train_config(config.seeds[0], config.costs[0]).rate_estimate
        default = schedule(base, config.loads, config.seed, config.budget, say, tuned_at) \
            if config.one_policy and observes_rate and spec.system.kind == "control" else None
        cands, learners = candidates(config, run, tuned, default)
        chosen, scored = (choose_across_loads(cands, base, config.loads, config.seed, config.budget, say, tuned_at)
                          if config.one_policy else choose(cands, spec, run.seed, config.budget, say))
        policy = chosen.policy()
        rows, verdict = run.compare(policy, tuned)
        unlike = run.unlike_rule(policy, tuned)
    finally:
        torch.set_num_threads(threads)
    say(verdict.line())
    plain = study.json_rows(rows)
    section = {**chosen.section, "selection": {"chosen": chosen.label, "scores": scored},
               "metrics": {**plain["learned"], "scenario": spec.name, "load": load, "seed": config.seed,
                           "chosen": chosen.label, "verdict": verdict.outcome}}
    if config.one_policy:  # what its loads are fractions of (``loads.load_base``)
        section["load_range"] = {"base": base.to_dict(), "loads": sorted(config.loads)}
    stability = {name: m.get("stability") or {"verdict": "unstable", "why": m.get("unstable")}
                 for name, m in plain.items()}
    head = spec.system.headline
    return {"load": load, "base": base.name, "scenario": spec.name, "rate": spec.arrival_rate,
            "reference_rate": None if load is None else spec.arrival_rate / load, "headline": head.measure,
            "headline_label": head.label, "constraint": head.constraint, "eps": spec.eps, "section": section,
            "rows": plain, "verdict": verdict.to_dict(), "verdict_line": verdict.line(), "stability": stability,
            "validation": scored, "chosen": chosen.label, "learners": learners, "unlike_rule": unlike,
            "tuned_at": tuned_at,
            "report": report(spec, plain, verdict, chosen.label, load, unlike), "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------- running the jobs
def run_study(config: StudyConfig, progress: Say = lambda s: None) -> dict[str, Any]:
    """Run ``config`` (the module's steps, one job per load) and write its files, a load's as
    soon as it is done, holding the folder's lock (``FolderLock``: a second study into it is
    refused). Returns the study's summary: config, command, commit, per load of this run its
    folder, files, verdict and chosen candidate, the loads held in the folder
    (``held_results``: this run's and earlier ones'), the table of study.md over them, the
    study's files and seconds."""
    use_engine(config.engine, config.sim_threads)  # the processes it spawns inherit it
    out = config.folder()
    out.mkdir(parents=True, exist_ok=True)
    with FolderLock(out):
        return _run_study(config, progress, out)


def _run_study(config: StudyConfig, progress: Say, out: Path) -> dict[str, Any]:
    from drl_ac.checkpoint import LoadedPolicy, load_policy, save_policy_folder, write_json

    t0 = time.perf_counter()
    if config.policy is not None:  # a saved policy judged again: no training
        judged = judge(config, load_policy(config.policy), out, progress)
        return {"config": config.to_dict(), "loads": [], "table": judged["table"], "files": judged["files"],
                "one_policy": judged, "seconds": time.perf_counter() - t0}
    loads: list[float | None] = list(config.loads) if config.loads is not None and not config.one_policy else [None]
    held = [config.load_folder(load) for load in loads if (config.load_folder(load) / "policy.pt").exists()]
    if held and not config.force:
        raise ValueError(f"out (--out): {held[0]} already holds a policy (an earlier study's, or a shipped one). Fix: "
                         "choose another --out, or pass --force to overwrite it.")
    workers = config.workers or min(len(loads), os.cpu_count() or 1)
    local = config.ray is None and (workers <= 1 or len(loads) <= 1)
    where = f"Ray ({config.ray})" if config.ray is not None else f"{1 if local else min(workers, len(loads))} process(es)"
    progress(f"study of {config.scenario}: {len(loads)} load(s) on {where}, budget {config.budget}")
    jobs = [{"config": config.to_dict(), "load": load} for load in loads]
    fn = (lambda job: study_load(job, lambda s: progress(_tag(job) + s))) if local else study_load
    head = {"config": config.to_dict(), "command": config.command(), "commit": commit()}
    results, summaries = [], []
    for r in run_jobs(fn, jobs, 1 if local else workers, config.ray):
        folder = config.load_folder(r["load"])
        files = [str(p) for p in save_policy_folder(LoadedPolicy(r["section"]), folder, config.export == "on")]
        comparison = {**head, **{k: v for k, v in r.items() if k not in ("section", "report", "tuned_at")}}
        files.append(str(write_json(folder / "comparison.json", comparison)))
        (folder / "report.md").write_text(r["report"])
        files.append(str(folder / "report.md"))
        spec = study_spec(config, r["load"])[1]
        if f"{spec.system.headline.measure}_by_phase" in comparison["rows"]["learned"]:  # a periodic system
            files.append(str(phase_plot(comparison["rows"], spec, folder / "by_phase.png")))
        summaries.append({"load": r["load"], "rate": r["rate"], "folder": str(folder), "files": files,
                          "chosen": r["chosen"], "verdict": r["verdict"], "verdict_line": r["verdict_line"],
                          "stability": r["stability"]["learned"], "seconds": r["seconds"]})
        results.append(r)
        progress(f"wrote {folder}: {r['verdict_line']}")
    run = {**head, "loads": summaries, "seconds": time.perf_counter() - t0}
    if config.one_policy:
        run["one_policy"] = judge(config, LoadedPolicy(results[0]["section"]), out, progress, results[0]["tuned_at"])
    result = write_summary(out, results[0]["base"], run)
    progress(f"wrote {', '.join(result['files'])}")
    return result


# ---------------------------------------------------------------- the command line
def build_parser(preset: StudyConfig | None = None, description: str | None = None) -> argparse.ArgumentParser:
    """One flag per ``StudyConfig`` field (``--num-envs`` for ``num_envs``), its default
    ``preset``'s value (a script's study; default ``StudyConfig()``)."""
    p = argparse.ArgumentParser(description=description, formatter_class=HelpFormatter)
    dataclass_flags(p, StudyConfig, preset, options={"ray": {"nargs": "?", "const": "local", "metavar": "ADDRESS"}})
    return p


def main(argv: list[str] | None = None, preset: StudyConfig | None = None, description: str | None = None) -> dict:
    """The command line of a study (``experiments/study.py``; a script with its own ``preset``
    study, every flag still accepted): progress on stderr, the study's table and verdicts on
    stdout; a bad setting is one line ``error: ...`` and exit status 2."""
    args = build_parser(preset, description).parse_args(argv)
    try:
        config = StudyConfig(**vars(args))
        result = run_study(config, progress_printer(config.quiet))
    except (ValueError, SpecError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    print(result["table"])
    print("\n".join(entry["verdict_line"] for entry in result["loads"]))
    print(f"wrote {config.folder()}")
    return result


def _tag(job: dict) -> str:
    return "" if job["load"] is None else f"[load {job['load']:g}] "


__all__ = ["CALIBRATION", "StudyConfig", "at_load", "build_parser", "choose", "load_seed",
           "main", "reference_rate", "run_study", "study_load"]
