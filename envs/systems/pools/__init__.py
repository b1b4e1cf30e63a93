"""Two server pools (docs/systems/pools.md): a job starts on a pool and is rerouted or
replicated after tau. ``system`` is the plugin and its YAML block, ``dispatch`` the rule and
its timers, ``rules`` the signalled-pool rules and their tuners, ``theory`` the server-time
formulas and stability bounds."""

from envs.systems.pools.system import PoolsSystem

__all__ = ["PoolsSystem"]
