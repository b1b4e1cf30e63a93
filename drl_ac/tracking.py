"""Progress statistics and optional Weights & Biases logging.

W&B is off unless asked for; when asked, it runs offline unless credentials are present
(or WANDB_MODE says otherwise), so nothing needs a network or an account by default.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from drl_ac.learning.store import Experiences


class RunningStats:
    """Exponentially weighted counts of recent outcomes, with a half-life in decisions."""

    KEYS = ("rows", "accepted", "violations", "unnecessary", "greedy_accepted", "greedy_violations", "cost",
            "charged")

    def __init__(self, half_life: float = 100_000.0):
        self.half_life = half_life
        self.counts = dict.fromkeys(self.KEYS, 0.0)

    def update(self, exp: Experiences) -> None:
        m = exp.action.size
        decay = 0.5 ** (m / self.half_life)
        acc = exp.action > 0
        miss = ~exp.success
        new = {"rows": m, "accepted": acc.sum(), "violations": (acc & miss).sum(),
               "unnecessary": (~acc & exp.success).sum(), "greedy_accepted": (acc & exp.greedy).sum(),
               "greedy_violations": (acc & miss & exp.greedy).sum(),
               "cost": float(exp.cost[acc].sum()) if acc.any() else 0.0, "charged": float(exp.cost.sum())}
        for k in self.KEYS:
            self.counts[k] = self.counts[k] * decay + float(new[k])

    @staticmethod
    def _ratio(a: float, b: float) -> float:
        return a / b if b > 0 else math.nan

    @property
    def violation(self) -> float:
        return self._ratio(self.counts["violations"], self.counts["accepted"])

    @property
    def greedy_violation(self) -> float:
        """Violation among greedy decisions only: exploration does not count against the constraint."""
        return self._ratio(self.counts["greedy_violations"], self.counts["greedy_accepted"])

    @property
    def acceptance(self) -> float:
        return self._ratio(self.counts["accepted"], self.counts["rows"])

    @property
    def throughput(self) -> float:
        """Accepted and on time, per decision."""
        return self._ratio(self.counts["accepted"] - self.counts["violations"], self.counts["rows"])

    @property
    def mean_cost(self) -> float:
        """Mean cost (delay) of admitted decisions: the objective of control systems."""
        return self._ratio(self.counts["cost"], self.counts["accepted"])

    @property
    def charged_per_accepted(self) -> float:
        """Costs charged per step (all decisions) per accepted one: for a cell charged its drops
        (``envs.reward.cell_charges``), P(dropped | admitted) in the long run."""
        return self._ratio(self.counts["charged"], self.counts["accepted"])

    @property
    def objective(self) -> float:
        return self._ratio(self.counts["unnecessary"], self.counts["rows"])

    def state_dict(self) -> dict:
        return dict(self.counts)

    def load_state_dict(self, state: dict) -> None:
        self.counts = {k: float(state.get(k, 0.0)) for k in self.KEYS}


class TrackingError(ValueError):
    """W&B cannot start as configured (no key, a bad key, no server): a setting to change, so
    command lines report it like their other usage errors, in one line."""


class WandbLogger:
    """Logs dictionaries to W&B; a no-op when disabled.

    Names are namespaced so training progress and the final evaluation never share a key in
    the run summary (which W&B fills with the last logged value of each key): ``log`` writes
    ``train/<name>`` (e.g. train/violation, train/loss, train/sps), ``finish`` writes the
    final evaluation as ``eval/<name>``. Keys that already hold a ``/`` are kept as given.
    """

    TRAIN = "train/"
    EVAL = "eval/"
    RENAME = {"steps_per_s": "sps"}  # short names for the dashboard

    def __init__(self, enabled: bool, config: dict[str, Any], project: str = "drl_ac",
                 group: str | None = None, name: str | None = None, directory: str | Path | None = None):
        self.run = None
        if not enabled:
            return
        try:
            import wandb
        except ImportError as exc:  # pragma: no cover - wandb is a dependency
            raise RuntimeError("--wandb needs the wandb package. Fix: pip install wandb") from exc
        mode = os.environ.get("WANDB_MODE") or ("online" if has_wandb_credentials() else "offline")
        try:
            self.run = wandb.init(project=project, group=group, name=name, config=config, mode=mode,
                                  dir=str(directory) if directory else None, reinit="finish_previous")
        except (wandb.errors.UsageError, wandb.errors.CommError) as exc:  # no key, a bad key, no server
            raise TrackingError(f"W&B cannot start in {mode} mode: {str(exc).rstrip('.')}. Fix: log in "
                                "(`wandb login`, or set WANDB_API_KEY), or run offline (WANDB_MODE=offline; "
                                "upload later with `wandb sync`).") from None

    @classmethod
    def namespaced(cls, values: dict[str, Any], prefix: str) -> dict[str, float]:
        """Finite numbers of ``values`` under ``prefix`` (bools and non-numbers dropped)."""
        out = {}
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                continue
            if not np.isfinite(v):
                continue
            key = k if "/" in k else prefix + cls.RENAME.get(k, k)
            out[key] = v.item() if isinstance(v, (np.integer, np.floating)) else v
        return out

    def log(self, values: dict[str, float], step: int) -> None:
        """Training progress, as ``train/<name>``."""
        if self.run is not None:
            self.run.log(self.namespaced(values, self.TRAIN), step=step)

    def finish(self, summary: dict[str, Any] | None = None) -> None:
        """The final evaluation into the run summary, as ``eval/<name>``; closes the run."""
        if self.run is not None:
            if summary:
                self.run.summary.update(self.namespaced(summary, self.EVAL))
            self.run.finish()


def has_wandb_credentials() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path.home() / ".netrc"
    return netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="ignore")
