"""No import cycle inside ``hyper_parallel/models/qwen3_5/``: the config builds the model, never the reverse.

Imports inside functions count (they still run); ``if TYPE_CHECKING:`` blocks do not.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = "hyper_parallel.models.qwen3_5"
FOLDER = Path(__file__).resolve().parents[3] / "hyper_parallel/models/qwen3_5"


def _runtime_imports(source: str) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the sibling modules it imports at run time (the package ``__init__`` left out)."""
    return {
        name: {t for t in _runtime_imports(source) if t.startswith(PACKAGE + ".") and t != name}
        for name, source in sources.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (its modules, the first repeated at the end), or ``[]``."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def _sources() -> dict[str, str]:
    return {
        f"{PACKAGE}.{path.stem}": path.read_text(encoding="utf-8")
        for path in sorted(FOLDER.glob("*.py"))
        if path.stem != "__init__"
    }


def test_no_import_cycle_in_qwen3_5() -> None:
    cycle = find_cycle(import_graph(_sources()))
    assert not cycle, f"import cycle in {PACKAGE}: {' -> '.join(cycle)}"


def test_a_reintroduced_cycle_is_caught() -> None:
    sources = _sources()
    sources[f"{PACKAGE}.model"] += f"\nfrom {PACKAGE}.config import config_from_args\n"
    cycle = find_cycle(import_graph(sources))
    assert set(cycle) == {f"{PACKAGE}.config", f"{PACKAGE}.model"}


@pytest.mark.parametrize("name", ["model", "config"])
def test_each_module_imports_alone(name: str) -> None:
    import importlib
    import subprocess
    import sys

    code = f"import importlib; importlib.import_module('{PACKAGE}.{name}')"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=FOLDER.parents[2])
    assert importlib.import_module(f"{PACKAGE}.{name}")
