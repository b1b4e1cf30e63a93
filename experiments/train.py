"""Train an admission controller.

    python experiments/train.py                      # paper_tandem, lam 8, eps 0.1, paper delay measure
    python experiments/train.py --scenario tandem    # true sojourn times, lam tuned automatically
    python experiments/train.py --scenario my_net.yaml --lam auto --eps 0.05 --out runs/mine
    python experiments/train.py --resume checkpoints/runs/paper_tandem-seed0/checkpoint.pt --steps 12000000

Writes OUT/checkpoint.pt (everything needed to resume, written atomically and refreshed
during the run), OUT/policy.pt (the greedy policy with scenario, settings and evaluation),
OUT/policy.pt2 (torch.export) and OUT/policy.onnx (usable without this project) and
OUT/metrics.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from drl_ac.checkpoint import LoadedPolicy, export_policy, save_atomic
from drl_ac.evaluation.calibration import calibrated_section
from drl_ac.evaluation.metrics import evaluate, format_metrics
from drl_ac.learning.learner import LearnerConfig
from drl_ac.learning.trainer import TrainConfig, Trainer
from drl_ac.tracking import WandbLogger
from envs import SpecError


def parse_lam(value: str) -> float | str:
    return "auto" if value == "auto" else float(value)


def build_parser() -> argparse.ArgumentParser:
    d, dl = TrainConfig(), LearnerConfig()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default=d.scenario, help="registered scenario name or YAML path")
    p.add_argument("--steps", type=int, default=None, help=f"decisions over all instances (default {d.steps})")
    p.add_argument("--num-envs", type=int, default=d.num_envs, help="network instances simulated in parallel")
    p.add_argument("--lam", type=parse_lam, default=None, help="Lagrange multiplier, or 'auto' (default: scenario's)")
    p.add_argument("--eps", type=float, default=None, help="allowed violation probability (default: scenario's)")
    p.add_argument("--d-ub", type=float, default=None, help="deadline (default: scenario's)")
    p.add_argument("--delay", choices=["sojourn", "paper"], default=None, help="delay measure (default: scenario's)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--device", default=d.device, help="auto, cpu or cuda")
    p.add_argument("--updates-per-step", type=int, default=d.updates_per_step)
    p.add_argument("--batch-size", type=int, default=dl.batch_size)
    p.add_argument("--lr", type=float, default=dl.lr)
    p.add_argument("--beta", type=float, default=dl.beta, help="rbar step size")
    p.add_argument("--rbar-update", choices=["paper", "differential"], default=dl.rbar_update)
    p.add_argument("--hidden", type=int, nargs="+", default=list(dl.hidden))
    p.add_argument("--include-in-service", action="store_true", help="observe busy servers too")
    p.add_argument("--lam-eta", type=float, default=d.lam_eta, help="dual-ascent step of the automatic lam")
    p.add_argument("--lam-kp", type=float, default=d.lam_kp, help="proportional gain (PI) of the automatic lam")
    p.add_argument("--lam-margin", type=float, default=d.lam_margin, help="automatic lam aims at eps - margin")
    p.add_argument("--calibrate", choices=["auto", "on", "off"], default="auto",
                   help="tune the acceptance bias on the learned advantage so violation <= eps - margin "
                        "(auto: on when lam is automatic)")
    p.add_argument("--eval-arrivals", type=int, default=200_000, help="arrivals in the final evaluation")
    p.add_argument("--checkpoint-every", type=int, default=1_000_000, help="decisions between checkpoints")
    p.add_argument("--out", type=Path, default=None, help="output folder (default checkpoints/runs/SCENARIO-seedS)")
    p.add_argument("--resume", type=Path, default=None, help="continue from a checkpoint.pt")
    p.add_argument("--wandb", action="store_true", help="log to Weights & Biases (offline without credentials)")
    p.add_argument("--wandb-project", default="drl_ac")
    p.add_argument("--wandb-group", default=None)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    learner = LearnerConfig(hidden=tuple(args.hidden), lr=args.lr, beta=args.beta, rbar_update=args.rbar_update,
                            batch_size=args.batch_size)
    kwargs = {"steps": args.steps} if args.steps is not None else {}
    return TrainConfig(scenario=str(args.scenario), num_envs=args.num_envs, lam=args.lam, eps=args.eps,
                       d_ub=args.d_ub, delay=args.delay, seed=args.seed, device=args.device,
                       include_in_service=args.include_in_service, updates_per_step=args.updates_per_step,
                       lam_eta=args.lam_eta, lam_kp=args.lam_kp, lam_margin=args.lam_margin, learner=learner,
                       **kwargs)


def run(args: argparse.Namespace) -> dict:
    if args.resume is not None:
        changes = {"device": args.device} | ({"steps": args.steps} if args.steps is not None else {})
        trainer = Trainer.resume(args.resume, **changes)
        out = args.out or args.resume.parent
    else:
        trainer = Trainer(config_from_args(args))
        out = args.out or Path("checkpoints/runs") / f"{Path(trainer.config.scenario).stem}-seed{trainer.config.seed}"
    out.mkdir(parents=True, exist_ok=True)
    config = trainer.config
    logger = WandbLogger(args.wandb, config.to_dict(), project=args.wandb_project,
                         group=args.wandb_group or Path(config.scenario).stem, directory=out)
    print(f"training on {trainer.spec.name}: {trainer.spec.num_stations} stations, d_ub {trainer.spec.d_ub}, "
          f"eps {trainer.spec.eps}, lam {'auto' if trainer.auto_lam else trainer.lam}, delay {trainer.spec.delay}, "
          f"{config.num_envs} instances, device {trainer.device}", file=sys.stderr)
    bar = tqdm(total=config.steps, initial=trainer.decisions, unit="dec", unit_scale=True, disable=args.quiet,
               dynamic_ncols=True)
    state = {"last": trainer.decisions, "t0": time.perf_counter(), "d0": trainer.decisions,
             "ckpt": trainer.decisions}

    def callback(tr: Trainer) -> None:
        p = tr.progress()
        p["steps_per_s"] = (tr.decisions - state["d0"]) / max(time.perf_counter() - state["t0"], 1e-9)
        bar.update(tr.decisions - state["last"])
        state["last"] = tr.decisions
        bar.set_postfix(viol=f"{p['greedy_violation']:.3f}", acc=f"{p['acceptance']:.3f}",
                        obj=f"{p['objective']:.4f}", rbar=f"{p['rbar']:.3f}", lam=f"{p['lam']:.2f}",
                        sps=f"{p['steps_per_s']:,.0f}", refresh=False)
        logger.log(p, step=tr.decisions)
        if tr.decisions - state["ckpt"] >= args.checkpoint_every:
            tr.save(out / "checkpoint.pt")
            state["ckpt"] = tr.decisions

    trainer.train(callback=callback)
    bar.close()
    trainer.save(out / "checkpoint.pt")
    if args.calibrate == "on" or (args.calibrate == "auto" and trainer.auto_lam):
        target = trainer.spec.eps - config.lam_margin
        section = calibrated_section(trainer, target)
        print(f"calibrated acceptance bias {section['bias']:.4f} for violation <= {target:g}", file=sys.stderr)
    else:
        section = trainer.policy_section()
    policy = LoadedPolicy(section)
    metrics = evaluate(policy, trainer.spec, arrivals=args.eval_arrivals, seed=config.seed + 10_000)
    metrics.update({"lam": trainer.lam, "rbar": float(trainer.learner.rbar), "decisions": trainer.decisions,
                    "scenario": trainer.spec.name, "seed": config.seed, "bias": section.get("bias", 0.0)})
    section["metrics"] = metrics
    save_atomic(section, out / "policy.pt")
    exported = export_policy(section, out)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    logger.finish(metrics)
    print(f"final evaluation ({trainer.spec.name}, eps {trainer.spec.eps}): {format_metrics(metrics)}")
    print(f"wrote {out / 'policy.pt'}, {', '.join(map(str, exported))}, {out / 'metrics.json'}, "
          f"{out / 'checkpoint.pt'}")
    return metrics


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    try:
        run(args)
    except (SpecError, ValueError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
