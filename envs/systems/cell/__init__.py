"""A 5G cell (docs/systems/cell.md): admission of UEs to C PRBs, blocking vs dropping.
``spec`` reads its YAML block, ``system`` is the plugin, ``station`` the cell's station kind,
``dispatch`` its dispatch rule, ``measures`` its measures (blocking, dropping, per type),
``rules`` the threshold rules and their tuners, ``theory`` and ``chain`` the exact results
(Erlang B, Kaufman-Roberts, guard channels, the admission LP on a small cell's CTMC)."""

from envs.systems.cell.system import CellSystem

__all__ = ["CellSystem"]
