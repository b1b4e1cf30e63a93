"""A cell's own measures (``CellSystem.own_measures``), added to every evaluation's: blocking,
dropping, handover dropping and carried load, overall, per UE type and per phase bin."""

from __future__ import annotations

import math

import numpy as np

from drl_ac.evaluation.metrics import Z95_ONE_SIDED, add_estimate, add_estimates
from envs import Driver, NetworkSpec, Outcomes
from envs.systems.cell.observation import CellEncoding


def in_use(driver: Driver) -> np.ndarray:
    """PRBs in use per instance now (a cell is one station; its busy servers are its PRBs)."""
    return driver.engine.busy()[:, 0]


def in_use_seen(encoding: CellEncoding, obs: np.ndarray) -> np.ndarray:
    """PRBs in use that observations ``obs`` (rows) show."""
    return encoding.cell_layout().prbs_in_use(obs)


def summary(done: Outcomes, num_envs: int, spec: NetworkSpec, period: float | None = None, bins: int = 24,
                 occupancy: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, ordered: bool = False) -> dict:
    """A cell's measures from a window of outcomes (decision rows = new UEs, the others =
    handovers), each with a 95% interval over instances (``NAME_ci``; ``ordered``: see
    ``ratio_estimate``), like ``summarize``:

    * ``blocking``: P(a new UE is blocked) = blocked / new UEs (refused by the controller or
      for lack of room);
    * ``dropping``: P(dropped | admitted) = dropped / new UEs admitted (not blocked), with
      ``dropping_se`` and ``dropping_upper``, its one-sided 95% upper bound (the constraint
      ``dropping <= eps`` is judged on it);
    * ``handover_dropping`` (+ ``_se``): handovers that could not be carried / handovers (NaN without);
    * ``carried_load``: mean PRBs in use seen by new UEs at arrival (``occupancy``: samples
      (env, time, PRBs) taken at the decisions; for Poisson arrivals the time average of the
      PRBs in use, PASTA; NaN without samples);
    * ``blocking_by_type``, ``dropping_by_type``, ``handover_dropping_by_type`` (the last two
      with ``_se``, all with ``_ci``), ``new_ues_by_type``, ``handovers_by_type``: lists over
      the UE types;
    * with ``period``: the same ``..._by_phase`` and ``carried_load_by_phase`` over
      ``bins`` equal bins of the period (the phase of a row = its arrival time mod period),
      and ``phase_bins``.

    ``new_ues``, ``handovers`` count the rows.
    """
    num_types = spec.num_classes
    m = done.measures
    decision = np.ones(len(done), bool) if done.decision is None else done.decision
    blocked, dropped, typ = m["blocked"], m["dropped"], m["type"]

    def per_env(mask: np.ndarray) -> np.ndarray:
        return np.bincount(done.env, weights=mask.astype(float), minlength=num_envs)

    def measures(sel: np.ndarray, out: dict | None = None, suffix: str = "") -> dict:
        out = {} if out is None else out
        new, hand = sel & decision, sel & ~decision
        admitted = new & ~blocked
        add_estimate(out, "blocking" + suffix, per_env(new & blocked), per_env(new), ordered=ordered)
        add_estimate(out, "dropping" + suffix, per_env(admitted & dropped), per_env(admitted), True, ordered)
        add_estimate(out, "handover_dropping" + suffix, per_env(hand & blocked), per_env(hand), True, ordered)
        out["new_ues" + suffix], out["handovers" + suffix] = int(new.sum()), int(hand.sum())
        return out

    out = measures(np.ones(len(done), bool))
    out["dropping_upper"] = out["dropping"] + Z95_ONE_SIDED * out["dropping_se"]
    ones = np.ones(0)
    if occupancy is not None:
        env, when, used = occupancy
        ones = np.ones(env.size)
        add_estimate(out, "carried_load", np.bincount(env, used, num_envs), np.bincount(env, ones, num_envs),
                  ordered=ordered)
    else:
        out["carried_load"], out["carried_load_ci"] = math.nan, [math.nan, math.nan]
    groups = {"type": [typ == k for k in range(num_types)]}
    if period is not None:
        edges = bins / period
        groups["phase"] = [((done.arrival_time % period) * edges).astype(np.int64).clip(0, bins - 1) == j
                           for j in range(bins)]
        out["phase_bins"] = bins
    for group, masks in groups.items():
        for sel in masks:
            one = measures(sel)
            for key, value in one.items():  # blocking_ci -> blocking_by_type_ci
                base, tail = (key[:-3], key[-3:]) if key.endswith(("_ci", "_se")) else (key, "")
                out.setdefault(f"{base}_by_{group}{tail}", []).append(value)
    if period is not None and occupancy is not None:
        j = ((when % period) * (bins / period)).astype(np.int64).clip(0, bins - 1)
        add_estimates(out, "carried_load_by_phase",
                   [np.bincount(env, used * (j == b), num_envs) for b in range(bins)],
                   [np.bincount(env, ones * (j == b), num_envs) for b in range(bins)], ordered=ordered)
    return out


def table(rows: list[dict], spec: NetworkSpec) -> str:
    """Blocking, dropping [95% CI], handover dropping and carried PRBs per policy, then blocking
    and dropping per UE type."""
    names = [t.name for t in spec.block.types]

    def ci(r, key):
        lo, hi = r[f"{key}_ci"]
        return f"{r[key]:.4f} [{lo:.4f}, {hi:.4f}]"

    head = (f"{spec.name}: {spec.block.prbs} PRBs, eps {spec.eps} on P(dropped | admitted), {rows[0]['arrivals']} "
            "new UEs\n| policy | rule | blocking [95% CI] | dropping [95% CI] | handover dropping | carried PRBs |\n"
            "|---|---|---|---|---|---|")
    lines = [f"| {r['policy']} | {r['rule']} | {ci(r, 'blocking')} | {ci(r, 'dropping')} | "
             f"{r['handover_dropping']:.4f} | {r['carried_load']:.2f} |" for r in rows]
    per_type = ["", "| policy | " + " | ".join(f"{n}: blocking, dropping" for n in names) + " |",
                "|---|" + "---|" * len(names)]
    per_type += ["| " + r["policy"] + " | " + " | ".join(
        f"{b:.4f}, {d:.4f}" for b, d in zip(r["blocking_by_type"], r["dropping_by_type"], strict=True)) + " |" for r in rows]
    return "\n".join([head, *lines, *per_type])
