"""Redundancy-d (docs/systems/redundancy.md): copies of a job on d servers, the first to
finish cancels the others. ``system`` is the plugin and its YAML block, ``dispatch`` the
copy-to-d rule, ``rules`` the load-threshold rules and their tuners, ``theory`` the exact
results (E[min of d], stability thresholds, Gardner's FCFS response time)."""

from envs.systems.redundancy.system import RedundancySystem

__all__ = ["RedundancySystem"]
