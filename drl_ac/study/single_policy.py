"""The table of a one-policy study (``StudyConfig.one_policy``): its one policy at each load
(``loads.across_loads``) and over each day of ``profiles`` (``profiles.over_profile``), written
as OUT/one_policy.md and .json with a plot per day (``profiles.day_plot``). The policy is the
study's own, or a saved one judged again (``StudyConfig.policy``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drl_ac.study.loads import across_loads, default_hold, schedule
from drl_ac.study.loads import table as loads_table
from drl_ac.study.profiles import day_plot, over_profile
from drl_ac.study.profiles import table as day_table
from envs import NetworkSpec, load_spec

if TYPE_CHECKING:
    from drl_ac.study.run import StudyConfig

Say = Callable[[str], None]


def judge(config: StudyConfig, policy: Any, out: Path, progress: Say,
          tuned_at: dict[float, dict] | None = None) -> dict[str, Any]:
    """``policy`` at each load of ``config`` (``loads.across_loads``) and over each of its
    profiles, written to OUT/one_policy.json, one_policy.md and a plot per profile; returns the
    table and the files. ``tuned_at``: the rules the study's choice tuned per load
    (``loads.tune_at``), used again here. Refuses a policy of another system."""
    from drl_ac.checkpoint import write_json
    from drl_ac.study.run import study_spec

    base, trained_on = study_spec(config, None)
    own = NetworkSpec.from_dict(policy.section["scenario"])
    if own.system.name != base.system.name:
        raise ValueError(f"policy (--policy): a policy of {own.name} ({own.system.name}), not of {base.name}'s "
                         "system. Fix: give a policy trained on that system, or its scenario.")
    tuned_at = {} if tuned_at is None else tuned_at
    switched = schedule(base, config.loads, config.seed, config.budget, progress, tuned_at) \
        if policy.encoding.rate and base.system.kind == "control" else None
    results = across_loads(policy, base, config.loads, config.seed, config.budget, progress, tuned_at, switched)
    text = loads_table(results, base)
    days = [over_profile(policy, base, load_spec(p), tuned_at, config.seed, config.budget, progress)
            for p in config.profiles]
    text += "".join("\n" + day_table(d, base) for d in days)
    hold = f"{config.hold or default_hold(base):g} time units" + (" at the peak" if config.hold_weight == "arrivals"
                                                                  else "")
    origin = (f"Trained on {trained_on.name} (each load held {hold} in turn, its phase not observed)"
              if config.policy is None else f"The saved policy {config.policy}, trained on {own.name}")
    observes = "the state and its arrival-rate estimate" if policy.encoding.rate else "the state"
    verdicts = "\n".join(f"load {r['load']:g}: {r['lines']['re-tuned']}" for r in results)
    md = out / "one_policy.md"
    md.write_text(f"# One policy for {base.name} at loads {', '.join(f'{x:g}' for x in config.loads)}\n\n"
                  f"{origin}, observing {observes}; every policy in steady state on each load's own seed.\n\n{text}\n"
                  f"{verdicts}\n")
    files = [str(write_json(out / "one_policy.json", {"loads": results, "profiles": days, "table": text})), str(md)]
    files += [str(day_plot(d, load_spec(p), out / f"{Path(p).stem}.png")) for d, p in zip(days, config.profiles,
                                                                                          strict=True)]
    progress(f"one policy at every load:\n{text}")
    return {"table": text, "files": files}


__all__ = ["judge"]
