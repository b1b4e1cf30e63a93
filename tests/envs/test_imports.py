"""The simulator's import structure (docs/engine.md, "Adding a system"): every ``envs`` module
imports what it needs at its top, with no cycle between modules, and never ``drl_ac`` (only a
system folder's parts that tune or measure, which ``drl_ac`` loads through ``System.part``).
Read from the source (``ast``): an import under ``if TYPE_CHECKING:`` is for type hints only."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENVS = ROOT / "envs"
OPTIONAL = {"envs/sb3.py"}  # Stable-Baselines3 is an optional extra: imported where it is used
PARTS = ("rules.py", "measures.py")  # a system's parts that build on drl_ac


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ENVS.rglob("*.py"))}


def _type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def top_imports(path: Path) -> set[str]:
    """The envs and drl_ac modules ``path`` imports when it is imported (its top-level
    statements, ``if TYPE_CHECKING:`` blocks left out)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("envs", "drl_ac"):
            for alias in node.names:  # `from envs.x import y`: y may be a module of its own
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] in ("envs", "drl_ac")}
    return found


def nested_imports(path: Path) -> list[str]:
    """Imports of envs modules inside functions, classes or ``if`` blocks other than TYPE_CHECKING."""
    out = []
    for top in ast.parse(path.read_text()).body:
        if isinstance(top, (ast.Import, ast.ImportFrom)) or _type_checking(top):
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "envs":
                out.append(f"line {node.lineno}: from {node.module} import ...")
    return out


def edges(name: str) -> set[str]:
    """What importing module ``name`` runs first: its own imports, and the packages above each
    (importing envs.a.b runs envs/__init__ and envs/a/__init__ first)."""
    out = set()
    for target in top_imports(MODULES[name]):
        if not target.startswith("envs"):
            continue
        parts = target.split(".")
        out |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)}
    out.discard(name)
    return {t for t in out if t in MODULES and not name.startswith(t + ".")}  # a package's own modules run after it


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (module -> modules it imports), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for name in sorted(graph):
        if name not in state and (found := visit(name, [name])):
            return found
    return None


def test_no_import_cycle_between_envs_modules():
    graph = {name: edges(name) for name in MODULES if str(MODULES[name].relative_to(ROOT)) not in OPTIONAL}
    assert "envs.systems" in graph["envs.spec"]  # the graph holds the real imports
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_envs_imports_at_module_top_and_never_drl_ac_outside_a_systems_parts():
    nested = {str(p.relative_to(ROOT)): found for p in MODULES.values()
              if str(p.relative_to(ROOT)) not in OPTIONAL and (found := nested_imports(p))}
    assert not nested, f"imports inside functions (move them to the module's top): {nested}"
    upward = [str(p.relative_to(ROOT)) for p in MODULES.values()
              if any(t.startswith("drl_ac") for t in top_imports(p)) and p.name not in PARTS]
    assert not upward, f"simulator modules importing drl_ac: {upward}"


def test_the_checks_find_what_they_look_for(tmp_path):
    """The checkers themselves: a cycle is found, an import under TYPE_CHECKING is not an
    edge, one inside a function is reported."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nfrom envs.jobs import Column\nif TYPE_CHECKING:\n"
                 "    from envs.engine import Engine\ndef g():\n    from envs.spec import NetworkSpec\n")
    assert top_imports(f) == {"envs.jobs"}
    assert nested_imports(f) == ["line 6: from envs.spec import ..."]


@pytest.mark.parametrize("name", ["envs.spec", "envs.engine", "envs.observation", "envs.systems",
                                  "envs.systems.cell.dispatch", "envs.systems.pools.system", "envs.registration"])
def test_each_module_imports_first_in_a_fresh_interpreter(name):
    res = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr


def test_every_systems_parts_load_through_the_plugin():
    from envs import load_spec

    for scenario in ("paper_tandem", "cell_5g", "redundancy_ps", "pools"):
        system = load_spec(scenario).system
        rules = system.part("rules")
        assert rules is importlib.import_module(f"envs.systems.{system.name}.rules")
        assert callable(rules.tuned_rules) and set(rules.BUDGETS) == {"smoke", "quick", "full"}
