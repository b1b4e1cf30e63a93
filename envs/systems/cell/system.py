"""A 5G cell (docs/systems/cell.md; block ``cell:``, read by ``envs.systems.cell.spec``): one station of kind
``cell`` with C PRBs and one job class per UE type. The controller admits or blocks each new
UE; nothing queues, so the cell is always stable, and its goal is to block as few new UEs
as it can while keeping P(dropped | admitted) <= eps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from envs.errors import SpecError, brief
from envs.kinds.base import StationKind
from envs.observation import observed_period
from envs.reward import cell_charges
from envs.systems.base import Headline, System
from envs.systems.cell.dispatch import CellDispatch
from envs.systems.cell.observation import CellEncoding
from envs.systems.cell.spec import make_cell
from envs.systems.cell.station import CellKind

BLOCKING = Headline("blocking", "min", "dropping", "blocking", "P(dropped | admitted)")


class CellSystem(System):
    name = "cell"
    block = "cell"
    kinds = ("loss",)
    station_kinds = ("cell",)

    def station_class(self, kind: str) -> type[StationKind]:
        return CellKind

    def holding_time(self) -> float:
        """The longest mean session of any UE type."""
        return max(t.session.mean for t in self.spec.block.types)

    def own_measures(self) -> ModuleType:
        return self.part("measures")
    needs_deadline = False  # success is finishing the session without being dropped

    # ------------------------------------------------------------------ the YAML block
    @classmethod
    def expand(cls, cfg: Mapping[str, Any], base_dir: Path | None) -> dict[str, Any]:
        """A ``cell`` block (``envs.systems.cell.spec``) is one station of kind ``cell`` with C PRBs and
        one job class per UE type; admission control (reject, accept) with success = the UE
        finishes its session without being dropped. ``d_ub`` is not used (default inf)."""
        for key in ("stations", "entry", "routing", "actions", "arrival", "classes", "redundancy", "delay"):
            if key in cfg:
                raise SpecError(key, "cannot be given with 'cell'",
                                "describe the UE types, their arrivals and sessions in the cell block")
        if cfg.get("objective", "admission") != "admission":
            raise SpecError("objective", f"a cell is admission-controlled, got {brief(cfg['objective'])}",
                            "use objective: admission (or omit it)")
        cell = make_cell(cfg["cell"], base_dir)
        out = dict(cfg)
        out["stations"] = [{"name": "cell", "servers": cell.prbs, "service": cell.types[0].session, "kind": "cell"}]
        out["classes"] = [{"name": t.name, "arrival": t.arrival} for t in cell.types]
        out.setdefault("d_ub", math.inf)
        out["cell"] = cell
        return out

    def write(self, out, dist, process):
        spec = self.spec
        for key in ("stations", "entry", "routing", "actions", "delay") + (() if math.isfinite(spec.d_ub) else ("d_ub",)):
            del out[key]
        out["cell"] = spec.block.to_dict(dist, process)
        return out  # the arrivals are the UE types'

    # ------------------------------------------------------------------ the goal
    @property
    def kind(self) -> str:
        return "loss"

    @property
    def headline(self) -> Headline:
        return BLOCKING

    @property
    def measures(self) -> dict[str, str]:
        return {"blocking": "P(a new UE is blocked)", "dropping": "P(dropped | admitted)",
                "dropping_upper": "one-sided 95% upper bound on dropping",
                "handover_dropping": "P(a handover cannot be carried)", "carried_load": "mean PRBs in use"}

    def describe(self) -> str:
        spec, cell = self.spec, self.spec.block
        types = ", ".join(t.name for t in cell.types)
        return (f"{spec.name}: admission control of a cell of {cell.prbs} PRBs, {len(cell.types)} UE "
                f"type{'s' if len(cell.types) > 1 else ''} ({types}), {spec.arrival_rate:.4g} new UEs per unit time: "
                f"{self.headline.text(spec.eps)}")

    @property
    def overload_fix(self) -> str:
        return "admit fewer UEs"  # never needed: a cell holds at most C / (smallest demand) sessions

    # stability: nothing queues (a loss system), so nothing can grow without bound: the default None

    # ------------------------------------------------------------------ simulation
    def routing(self):
        return CellDispatch(self.spec)

    def encoding(self, include_in_service: bool = False):
        """UEs per type, PRBs in use, the arriving UE's type and demand, the phase, UEs per
        (type, CQI band) (``envs.observation``); ``include_in_service`` does not apply."""
        spec = self.spec
        bands = len(spec.block.cqi_bands) + 1 if spec.block.cqi_bands else 0
        return CellEncoding(spec.num_stations, False, spec.num_classes, observed_period(spec), cell_bands=bands)

    def reward_rule(self) -> str:
        return "blocking"

    def step_rewards(self, done, actions, step, rule, lam, num_envs):
        """Paid per step, for the UE arriving now and the drops since (``envs.reward``)."""

        carried, drops = cell_charges(done, actions, step)
        return rule(carried, True, drops, lam, self.spec.eps)

    def engine_options(self) -> dict[str, Any]:
        return {"probes": False}  # its measures and reward never read a blocked UE's counterfactual
