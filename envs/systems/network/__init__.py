"""A feed-forward network of FCFS and PS stations (docs/systems/network.md): the paper's
system. ``system`` is the plugin, ``routing`` its dispatch, ``rules`` the threshold rules and
their tuners, ``theory`` the exact M/M/c admission optimum (LP) and threshold policies."""

from envs.systems.network.system import NetworkSystem

__all__ = ["NetworkSystem"]
