"""The harness core (``parity/``) stays apart from its tools (``parity/tools/``).

The core (case model, engine, canonical forms, comparator, golden store, CLI, pytest plugin and
suites) never imports a tool; the CLI alone dispatches to them, from inside its command functions.
The tools import the core, so no import cycle passes through them. ``report --html`` without
matplotlib (the ``report`` extra) says which extra to install.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARITY = ROOT / "parity"
TOOLS = "parity.tools"
DISPATCHER = "parity.cli"  # the command line dispatches to the tools


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, bool]]:
    """Every ``parity...`` module ``path`` imports, with whether the import is at module level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, bool]] = []

    def walk(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            at_top = top and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend((alias.name, at_top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.append((child.module, at_top))
                found.extend((f"{child.module}.{alias.name}", at_top) for alias in child.names)
            walk(child, at_top)

    walk(tree, True)
    return [(name, top) for name, top in found if name == "parity" or name.startswith("parity.")]


def _graph(*, module_level_only: bool) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PARITY.rglob("*.py") if "golden" not in p.parts}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported, top in _imports(path):
            if module_level_only and not top:
                continue
            # ``from parity.x import y``: y may be a module or an attribute of x.
            while imported not in modules and "." in imported:
                imported = imported.rsplit(".", 1)[0]
            if imported in modules and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def _is_tool(module: str) -> bool:
    return module == TOOLS or module.startswith(TOOLS + ".")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_tools_live_in_their_own_package():
    tools = {_module_name(p) for p in (PARITY / "tools").glob("*.py")}
    assert {"parity.tools.plants", "parity.tools.selfcheck_runner", "parity.tools.localise"} <= tools
    assert {"parity.tools.html_report"} <= tools
    for gone in ("plants", "selfcheck_runner", "localise", "html_report"):
        assert not (PARITY / f"{gone}.py").exists(), f"parity/{gone}.py is a tool: it lives in parity/tools/"


def test_the_core_never_imports_a_tool():
    bad = []
    for path in PARITY.rglob("*.py"):
        name = _module_name(path)
        if _is_tool(name) or "golden" in path.parts:
            continue
        for imported, top in _imports(path):
            if not _is_tool(imported):
                continue
            if name == DISPATCHER and not top:
                continue  # `python -m parity selfcheck` / `report --html` / the selfcheck options
            bad.append(f"{path.relative_to(ROOT)} imports {imported}" + (" at module level" if top else ""))
    assert not bad, "the core imports a tool:\n" + "\n".join(bad)


def test_no_import_cycle_passes_through_the_tools():
    for module_level_only in (True, False):
        graph = _graph(module_level_only=module_level_only)
        through_tools = [c for c in _cycles(graph) if any(_is_tool(m) for m in c)]
        assert not through_tools, f"import cycles through parity.tools: {through_tools}"


def test_the_import_graph_check_can_fail():
    """The cycle finder sees the old ``localise`` <-> ``e2e_trainer`` cycle and a core -> tool edge."""
    graph = {
        "parity.tools.localise": {"parity.suites.e2e_trainer"},
        "parity.suites.e2e_trainer": {"parity.tools.localise"},
    }
    assert _cycles(graph) == [["parity.suites.e2e_trainer", "parity.tools.localise"]]
    assert _is_tool("parity.tools.localise") and not _is_tool("parity.toolsx")


def test_the_localisers_are_references_to_tools_resolved_on_failure():
    import importlib

    from parity.cases import LazyCallable
    from parity.suites import REGISTRY

    refs = {c.localise.ref for c in REGISTRY if isinstance(c.localise, LazyCallable)}
    assert "parity.tools.localise:localise_pair" in refs
    for ref in refs:
        module, _, attr = ref.partition(":")
        assert _is_tool(module), ref
        assert callable(getattr(importlib.import_module(module), attr)), ref
    with pytest.raises(ValueError, match="expected 'package.module:function'"):
        LazyCallable("not a reference")


def test_report_html_without_matplotlib_names_the_extra(monkeypatch, tmp_path):
    from rich.console import Console

    from parity import cli

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    console = Console(record=True, width=200)
    code = cli.main(["report", "--report-dir", str(tmp_path), "--html", str(tmp_path / "r.html")], console)
    lines = [line for line in console.export_text().splitlines() if line.strip()]
    assert code == 2
    assert lines == ["error: report --html needs matplotlib: pip install hyper-parallel[report]"]
    assert not (tmp_path / "r.html").exists()
