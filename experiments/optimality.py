"""How close does the learner get to the exact optimum? (single M/M/c stations, and a small cell)

    python experiments/optimality.py [--scenarios mmc_c1 mmc_c3 mmc_c5_overload cell_small] [--steps 4000000]
    python experiments/optimality.py --scenarios mmc_c1 mmc_c3 --seeds 0 1 2 --steps 1000000
    python experiments/optimality.py --scenarios cell_small --minutes 6     # a row in a wall-time slot

For each M/M/c scenario and seed: the exact optimal randomised policy (linear program), the
best deterministic threshold policy (chosen knowing the exact violations), the threshold
rules tuned by simulation as every comparison tunes them (the total threshold and the
randomised one, on the rules' seed under the same guarantee as the learner: what an engineer
without the chain can reach), and the learned controller trained with --lam auto and
calibrated as train.py does (bias, then randomised at the margin) under each guarantee
(--guarantees: violation <= eps with a one-sided 95% upper bound, and/or in the point
estimate). The learned policy is read as P(admit | n) and evaluated exactly on the chain
(``learned_exactly``), and by simulation on fresh seeds. "vs opt %" is the objective
(unnecessary rejections per arrival) relative to the optimum's; the summary gives the gap
over seeds with a 95% t-interval and how often the learner is no worse than the best threshold
and than each tuned rule (all evaluated exactly).

``cell_small``: the LP optimum of its CTMC (min blocking s.t. P(dropped | admitted)
<= eps), and the learned controller with its bias (and mixing) calibrated to eps + 0.002 (the
tolerance) with 95% confidence; the learned policy is judged exactly, read as P(admit) on the
chain's states (``envs.systems.cell.chain.chain_observations``), and by simulation on fresh
seeds. It passes when its exact dropping is <= eps + 0.002 and its exact blocking within
0.005 of the optimum's.

--minutes: the whole run's wall time, shared equally by the rows; each trains until its share
less what its calibration and evaluation need (``Trainer.train_until``), instead of --steps.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.selection import TUNING
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.study import Run
from envs import NetworkSpec, SpecError, load_spec
from envs.distributions import Exponential
from envs.systems.cell.chain import cell_chain, chain_observations
from envs.systems.cell.theory import admission_lp, evaluate_admission_policy
from envs.systems.network import theory as exact
from envs.systems.network.rules import tune_randomised_total, tune_total

SCENARIOS = ("mmc_c1", "mmc_c3", "mmc_c5_overload", "cell_small")
GUARANTEES = {"95": 0.95, "point": 0.5}  # calibration confidence: a one-sided 95% bound, or the point estimate
CALIBRATION_ARRIVALS = 800_000  # the learner's calibration sample, and the most the rules' tuner takes at the margin
EXACT_TRUNCATION = 400  # states of the chain on which a learned M/M/c policy is evaluated exactly
CELL_TOLERANCE, CELL_GAP = 0.002, 0.005  # blocking within 0.005 of the LP's at dropping <= eps + 0.002


def mmc_parameters(spec: NetworkSpec) -> tuple[int, float, float]:
    """(c, mu, lam) of a single-station M/M/c spec with sojourn deadlines, else a clear error."""
    if (spec.num_stations != 1 or not isinstance(spec.arrival, Exponential)
            or not isinstance(spec.stations[0].service, Exponential) or spec.delay != "sojourn"):
        raise SpecError("scenario", f"{spec.name} is not a single M/M/c station with a sojourn deadline",
                        "the exact solver covers one station, Poisson arrivals, exponential service")
    st = spec.stations[0]
    return st.servers, 1.0 / st.service.mean, spec.arrival_rate


def trained(config: TrainConfig, deadline: float | None) -> Trainer:
    """A trainer run for ``config.steps``, or until ``deadline`` (``time.time()``) when given."""
    trainer = Trainer(config)
    if deadline is None:
        trainer.train()
    else:
        trainer.train_until(deadline)
    return trainer


def relative(value: float, reference: float) -> float:
    """(value - reference) / reference; NaN where the reference is 0 (nothing to lose)."""
    return (value - reference) / reference if reference > 0 else float("nan")


def learned_exactly(policy: LoadedPolicy, c: int, mu: float, lam: float, spec: NetworkSpec
                    ) -> exact.AdmissionSolution:
    """The policy read as P(admit | n jobs present) (it observes the jobs waiting, max(n - c, 0))
    and evaluated on the birth-death chain: its exact objective and violation, no noise."""
    n = np.arange(EXACT_TRUNCATION + 1)
    admit = policy.admit_probability(np.maximum(n - c, 0)[:, None])
    return exact.solve_lp(c, mu, lam, spec.d_ub, spec.eps, EXACT_TRUNCATION, fixed_accept=admit)


def tuned_exactly(spec: NetworkSpec, seed: int, confidence: float, sample: int = CALIBRATION_ARRIVALS
                  ) -> dict[str, dict]:
    """The total threshold and the randomised total threshold tuned by simulation on the rules'
    seed (``seed + TUNING``, as a comparison tunes them) under the guarantee ``confidence`` (0.95:
    the one-sided upper bound <= eps; 0.5: the point estimate), each evaluated exactly: a rule
    ``sum q < k`` on one station admits iff fewer than c + k jobs are present. The tuner decides
    a candidate on ``sample`` / 8 arrivals, doubled while undecided up to ``sample``, the
    learner's calibration sample: at the margin both sides measure on samples of one size."""
    c, mu, lam = mmc_parameters(spec)
    margin = confidence > 0.5
    size = {"arrivals": max(sample // 8, 1), "max_arrivals": sample}
    total = tune_total(spec, seed=seed + TUNING, margin=margin, **size).rule
    randomised = tune_randomised_total(spec, total.k, seed=seed + TUNING, margin=margin, **size).rule
    out = {}
    for name, k, p in (("threshold", total.k, 0.0), ("randomised threshold", randomised.k, randomised.p)):
        assert k >= 1, k  # k = 0 rejects every job, which no chain threshold c + k says (the tuner starts at 1)
        sol = exact.randomised_threshold_policy(c + k, p, c, mu, lam, spec.d_ub)
        out[name] = {"k": k, "p": p, "objective": sol.objective, "violation": sol.violation,
                     "acceptance": sol.acceptance}
    return out


def compare(scenario: str, steps: int, num_envs: int, seed: int, arrivals: int, margin: float,
            confidences: dict[str, float], deadline: float | None = None,
            calibration_arrivals: int = CALIBRATION_ARRIVALS) -> dict:
    """One trained learner per seed, calibrated under each guarantee of ``confidences``, against
    the exact optimum and the best deterministic threshold of its M/M/c station."""
    spec = load_spec(scenario)
    c, mu, lam = mmc_parameters(spec)
    opt = exact.solve(c, mu, lam, spec.d_ub, spec.eps)
    det = exact.best_threshold(c, mu, lam, spec.d_ub, spec.eps)
    trainer = trained(TrainConfig(scenario=scenario, lam="auto", steps=steps, num_envs=num_envs, seed=seed,
                                  lam_margin=margin), deadline)
    row = {"scenario": scenario, "seed": seed, "c": c, "mu": mu, "arrival_rate": lam, "d_ub": spec.d_ub,
           "eps": spec.eps, "optimum": {"objective": opt.objective, "violation": opt.violation,
                                        "acceptance": opt.acceptance},
           "best_deterministic": {"objective": det.objective, "violation": det.violation,
                                  "acceptance": det.acceptance, "threshold_n": det.threshold},
           "learned_lam": trainer.lam, "decisions": trainer.decisions, "learned": {}}
    for name, confidence in confidences.items():
        policy = Run(spec, seed).calibrate(trainer.policy(), calibration_arrivals, confidence=confidence)
        sim = Run(spec, seed).evaluate(policy, arrivals)
        ex = learned_exactly(policy, c, mu, lam, spec)
        rules = tuned_exactly(spec, seed, confidence, calibration_arrivals)
        row["learned"][name] = {
            "tuned": rules, **{f"gap_to_tuned_{rule.replace(' ', '_')}": relative(ex.objective, m["objective"])
                               for rule, m in rules.items()},
            "confidence": confidence, "mix": policy.mix, "exact_objective": ex.objective,
            "exact_violation": ex.violation, "gap_to_optimum": relative(ex.objective, opt.objective),
            "gap_to_deterministic": relative(ex.objective, det.objective),
            **{k: sim[k] for k in ("objective", "objective_ci", "violation", "violation_ci", "acceptance")}}
    return row


def mean_interval(values: list[float]) -> tuple[float, float]:
    """The mean of the seeds' values and the half-width of its 95% t-interval (nan for one seed)."""
    from scipy.stats import t

    v = np.asarray(values, float)
    half = t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else np.nan
    return float(v.mean()), float(half)


def summary(rows: list[dict]) -> list[str]:
    """Per scenario and guarantee: the learned gap to the optimum over seeds (mean and a 95%
    t-interval over the seeds' exact gaps), and how often it beat the best threshold."""
    lines = []
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        mine = [r for r in rows if r["scenario"] == scenario]
        for name in mine[0]["learned"]:
            gap, half = mean_interval([r["learned"][name]["gap_to_optimum"] for r in mine])
            wins = [sum(r["learned"][name][f"gap_to_{k}"] <= 0 for r in mine)
                    for k in ("deterministic", "tuned_threshold", "tuned_randomised_threshold")]
            lines.append(f"{scenario:<17}{name:<8} gap to the optimum {100 * gap:+.1f}% "
                         f"[{100 * (gap - half):+.1f}%, {100 * (gap + half):+.1f}%] over "
                         f"{len(mine)} seed(s); no worse than the best threshold on {wins[0]} of {len(mine)}, "
                         f"than the tuned threshold on {wins[1]}, than the tuned randomised threshold on {wins[2]}")
    return lines


def cell_summary(rows: list[dict]) -> list[str]:
    """Per cell: the learned blocking's gap to the LP optimum over seeds (exact on the chain,
    mean and 95% t-interval), and on how many seeds it passes."""
    lines = []
    for scenario in dict.fromkeys(r["scenario"] for r in rows if "learned_exact" in r):
        mine = [r for r in rows if r["scenario"] == scenario]
        gap, half = mean_interval([r["gap_to_optimum"] for r in mine])
        lines.append(f"{scenario:<17}blocking gap to the LP optimum {gap:+.4f} [{gap - half:+.4f}, {gap + half:+.4f}]"
                     f" over {len(mine)} seed(s); passes on {sum(r['passes'] for r in mine)} of {len(mine)}")
    return lines


def compare_cell(scenario: str, steps: int, num_envs: int, updates_per_step: int, seed: int, arrivals: int,
                 tolerance: float = CELL_TOLERANCE,
                 deadline: float | None = None) -> dict:
    """The learned controller of a small cell against the LP optimum of its CTMC."""
    spec = load_spec(scenario)
    chain = cell_chain(spec.block)
    model = (chain.request_rates, chain.admit_to, chain.transitions)
    opt = admission_lp(*model, spec.eps)
    trainer = trained(TrainConfig(scenario=scenario, lam="auto", steps=steps, num_envs=num_envs, seed=seed,
                                  updates_per_step=updates_per_step), deadline)
    target = spec.eps + tolerance
    policy = Run(spec, seed).calibrate(trainer.policy(), arrivals, target=target)
    cal = policy.section["calibration"]
    obs = chain_observations(chain, spec.block, policy.encoding.cell_layout())
    admit = policy.admit_probability(obs.reshape(-1, obs.shape[-1])).reshape(obs.shape[:2])
    learned = evaluate_admission_policy(*model, admit)
    sim = Run(spec, seed).evaluate(policy, arrivals)
    row = {"scenario": scenario, "seed": seed, "eps": spec.eps, "tolerance": tolerance, "states": len(chain.states),
           "optimum": {"blocking": opt.blocking, "dropping": opt.dropping},
           "learned_exact": {"blocking": learned.blocking, "dropping": learned.dropping,
                             "admit": admit.tolist()},
           "learned": {k: sim[k] for k in ("blocking", "blocking_ci", "dropping", "dropping_ci", "dropping_upper")},
           "calibration": {"bias": policy.bias, "mix": policy.mix, "target": target, "dropping": cal["violation"],
                           "dropping_upper": cal["violation_upper"]},
           "learned_lam": trainer.lam, "decisions": trainer.decisions}
    row["gap_to_optimum"] = learned.blocking - opt.blocking
    row["passes"] = bool(learned.dropping <= target and row["gap_to_optimum"] <= CELL_GAP)
    return row


def print_mmc(r: dict) -> None:
    """The exact optimum, the best threshold and the learned policy (exactly, per guarantee)."""
    opt = r["optimum"]["objective"]
    named = [("exact optimum", r["optimum"]),
             (f"best threshold n<{r['best_deterministic']['threshold_n']}", r["best_deterministic"])]
    named += [(f"learned s{r['seed']} {name} (exact)", {"objective": m["exact_objective"],
                                                          "violation": m["exact_violation"],
                                                          "acceptance": m["acceptance"]})
              for name, m in r["learned"].items()]
    named += [(f"{rule} s{r['seed']} {name}", m) for name, learned in r["learned"].items()
              for rule, m in (("tuned thr", learned["tuned"]["threshold"]),
                              ("tuned rand thr", learned["tuned"]["randomised threshold"]))]
    for name, m in named:
        print(f"{r['scenario']:<17}{name:<30}{m['objective']:>10.4f}{m['violation']:>11.4f}{m['acceptance']:>11.4f}"
              f"{100 * relative(m['objective'], opt):>9.1f}")


def print_cell(r: dict) -> None:
    """The LP optimum and the learned policy, exactly on the chain and by simulation."""
    ex, opt, sim, name = r["learned_exact"], r["optimum"], r["learned"], r["scenario"]
    learned = f"learned s{r['seed']} (exact)"
    print(f"{name:<17}{'LP optimum':<22} blocking {opt['blocking']:.4f} at dropping {opt['dropping']:.4f}")
    print(f"{name:<17}{learned:<22} blocking {ex['blocking']:.4f} at dropping {ex['dropping']:.4f}  gap "
          f"{r['gap_to_optimum']:+.4f} ({'passes' if r['passes'] else 'fails'}: <= {CELL_GAP} at dropping <= "
          f"{r['eps'] + r['tolerance']:g})")
    print(f"{name:<17}{'learned (simulated)':<22} blocking {sim['blocking']:.4f} "
          f"[{sim['blocking_ci'][0]:.4f}, {sim['blocking_ci'][1]:.4f}] at dropping {sim['dropping']:.4f}")


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", nargs="+", default=list(SCENARIOS))
    p.add_argument("--steps", type=int, default=4_000_000)
    p.add_argument("--minutes", type=float, default=None, help="wall time of the whole run (instead of --steps)")
    p.add_argument("--num-envs", type=int, default=2048)
    p.add_argument("--cell-envs", type=int, default=256, help="instances of a cell's learner")
    p.add_argument("--cell-updates", type=int, default=4, help="gradient steps per vector step of a cell's learner")
    p.add_argument("--arrivals", type=int, default=400_000)
    p.add_argument("--cell-tolerance", type=float, default=CELL_TOLERANCE,
                   help="a cell's learner is calibrated to dropping <= eps + this (0: to eps itself)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0],
                   help="a learner per seed")
    p.add_argument("--guarantees", nargs="+", choices=list(GUARANTEES), default=list(GUARANTEES),
                   help="calibrate each learner to eps with a one-sided 95%% upper bound (95) and/or in the point "
                        "estimate (point)")
    p.add_argument("--calibration-arrivals", type=int, default=CALIBRATION_ARRIVALS,
                   help="arrivals of each calibration step of an M/M/c learner, and the most the threshold rules' "
                        "tuner takes to decide a candidate (the same sample at the margin)")
    p.add_argument("--margin", type=float, default=0.0, help="aim at violation eps - margin")
    p.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = p.parse_args(argv)
    if args.calibration_arrivals < 1:
        p.error(f"--calibration-arrivals must be >= 1, got {args.calibration_arrivals}")
    confidences = {g: GUARANTEES[g] for g in args.guarantees}
    rows = []
    t0, share = time.time(), (None if args.minutes is None else 60 * args.minutes / len(args.scenarios))
    print(f"{'scenario':<17}{'policy':<30}{'objective':>10}{'violation':>11}{'acceptance':>11}{'vs opt %':>9}")
    for i, scenario in enumerate(args.scenarios):
        cell = load_spec(scenario).system.kind == "loss"  # a cell: its exact optimum is an LP on its chain
        for j, seed in enumerate(args.seeds):  # the row's share of the slot split between its seeds, less
            # what calibration and evaluation take after training
            end = None if share is None else t0 + (i + (j + 1) / len(args.seeds)) * share - max(30.0, 0.15 * share)
            if cell:
                r = compare_cell(scenario, args.steps, args.cell_envs, args.cell_updates, seed, args.arrivals,
                                 args.cell_tolerance, end)
            else:
                r = compare(scenario, args.steps, args.num_envs, seed, args.arrivals, args.margin, confidences, end,
                            args.calibration_arrivals)
            rows.append(r)
            (print_cell if cell else print_mmc)(r)
    for line in summary([r for r in rows if "best_deterministic" in r]) + cell_summary(rows):
        print(line)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return rows


if __name__ == "__main__":
    main()
