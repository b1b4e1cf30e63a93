"""How close does the learner get to the exact optimum? (single M/M/c stations)

    python experiments/optimality.py [--scenarios mmc_c1 mmc_c3 mmc_c5_overload] [--steps 4000000]

For each scenario: the exact optimal randomised policy (linear program), the best
deterministic threshold policy, and the learned controller trained with --lam auto (and,
as train.py does for automatic lam, its acceptance bias calibrated to eps with 95% confidence),
evaluated by simulation on fresh seeds. Gap % is relative to the best deterministic policy
in unnecessary rejections per arrival (the objective).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.calibration import calibrated_section
from drl_ac.evaluation.metrics import evaluate
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.theory import mmc_admission as exact
from envs import NetworkSpec, SpecError, load_spec
from envs.distributions import Exponential

SCENARIOS = ("mmc_c1", "mmc_c3", "mmc_c5_overload")


def mmc_parameters(spec: NetworkSpec) -> tuple[int, float, float]:
    """(c, mu, lam) of a single-station M/M/c spec with sojourn deadlines, else a clear error."""
    if (spec.num_stations != 1 or not isinstance(spec.arrival, Exponential)
            or not isinstance(spec.stations[0].service, Exponential) or spec.delay != "sojourn"):
        raise SpecError("scenario", f"{spec.name} is not a single M/M/c station with a sojourn deadline",
                        "the exact solver covers one station, Poisson arrivals, exponential service")
    st = spec.stations[0]
    return st.servers, 1.0 / st.service.mean, spec.arrival_rate


def compare(scenario: str, steps: int, num_envs: int, seed: int, arrivals: int, margin: float) -> dict:
    spec = load_spec(scenario)
    c, mu, lam = mmc_parameters(spec)
    opt = exact.solve(c, mu, lam, spec.d_ub, spec.eps)
    det = exact.best_threshold(c, mu, lam, spec.d_ub, spec.eps)
    trainer = Trainer(TrainConfig(scenario=scenario, lam="auto", steps=steps, num_envs=num_envs, seed=seed,
                                  lam_margin=margin))
    trainer.train()
    section = calibrated_section(trainer, spec.eps)
    learned = evaluate(LoadedPolicy(section), spec, arrivals=arrivals, seed=seed + 10_000)
    row = {"scenario": scenario, "c": c, "mu": mu, "arrival_rate": lam, "d_ub": spec.d_ub, "eps": spec.eps,
           "optimum": {"objective": opt.objective, "violation": opt.violation, "acceptance": opt.acceptance},
           "best_deterministic": {"objective": det.objective, "violation": det.violation,
                                  "acceptance": det.acceptance, "threshold_n": det.threshold},
           "learned": {k: learned[k] for k in ("objective", "violation", "violation_ci", "acceptance")},
           "learned_lam": trainer.lam}
    row["gap_to_deterministic"] = learned["objective"] - det.objective
    row["gap_to_optimum"] = learned["objective"] - opt.objective
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", nargs="+", default=list(SCENARIOS))
    p.add_argument("--steps", type=int, default=4_000_000)
    p.add_argument("--num-envs", type=int, default=2048)
    p.add_argument("--arrivals", type=int, default=400_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--margin", type=float, default=0.0, help="aim at violation eps - margin")
    p.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = p.parse_args(argv)
    rows = []
    print(f"{'scenario':<17}{'policy':<22}{'objective':>10}{'violation':>11}{'acceptance':>11}{'gap %':>8}")
    for scenario in args.scenarios:
        r = compare(scenario, args.steps, args.num_envs, args.seed, args.arrivals, args.margin)
        rows.append(r)
        det = r["best_deterministic"]["objective"]
        for name, m in (("exact optimum", r["optimum"]), (f"best threshold n<{r['best_deterministic']['threshold_n']}",
                                                          r["best_deterministic"]), ("learned (lam auto)", r["learned"])):
            gap = 100 * (m["objective"] - det) / det if det > 0 else float("nan")
            print(f"{scenario:<17}{name:<22}{m['objective']:>10.4f}{m['violation']:>11.4f}{m['acceptance']:>11.4f}"
                  f"{gap:>8.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
