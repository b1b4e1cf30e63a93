"""Sizes a reader can hold in mind (docs/architecture.md): every module of envs/, drl_ac/ and
experiments/ under 600 lines, every function at most 80."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for folder in ("envs", "drl_ac", "experiments") for p in (ROOT / folder).rglob("*.py"))
MAX_MODULE, MAX_FUNCTION = 600, 80


def function_lengths(path: Path, root: Path = ROOT) -> dict[str, int]:
    """Lines of every function of ``path`` (methods too), keyed ``relative/path.py:name``."""
    return {f"{path.relative_to(root)}:{node.name}": node.end_lineno - node.lineno + 1
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_modules_stay_under_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in SOURCES if (n := len(p.read_text().splitlines())) >= MAX_MODULE}
    assert not long, f"modules of {MAX_MODULE} lines or more (split them by what they do): {long}"


def test_functions_stay_at_most_80_lines():
    long = {k: n for p in SOURCES for k, n in function_lengths(p).items() if n > MAX_FUNCTION}
    assert not long, f"functions over {MAX_FUNCTION} lines (split them by what they do): {long}"


def test_the_function_measure_counts_every_line_of_a_body(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def a():\n    x = 1\n    return x\n\n\nclass C:\n    def b(self):\n        pass\n")
    assert {k.split(":")[1]: v for k, v in function_lengths(f, tmp_path).items()} == {"a": 3, "b": 2}

