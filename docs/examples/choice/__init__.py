"""A tiny system added as docs/architecture.md shows: jobs that a dispatcher sends to one of
two single-server FCFS queues of different speeds. ``system`` is the plugin and its YAML
block, ``rules`` the rules an engineer would tune, ``theory`` the exact mean response time of
a random split. Importing the package registers the system."""

from choice.system import ChoiceSystem

__all__ = ["ChoiceSystem"]
