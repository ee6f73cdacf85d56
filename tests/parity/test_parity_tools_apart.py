"""The harness core (``parity/``) stays apart from its tools (``parity/tools/``).

The core (case model, engine, canonical forms, comparator, golden store, CLI, pytest plugin and
suites) never imports a tool; the CLI alone dispatches to them, from inside its command functions.
The tools import the core; no import cycle anywhere (``tests/test_layering.py``). ``report --html`` without
matplotlib (the ``report`` extra) says which extra to install.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.test_layering import module_name, project_imports

ROOT = Path(__file__).resolve().parents[2]
PARITY = ROOT / "parity"
TOOLS = "parity.tools"
DISPATCHER = "parity.cli"  # the command line dispatches to the tools


def _is_tool(module: str) -> bool:
    return module == TOOLS or module.startswith(TOOLS + ".")


def test_the_tools_live_in_their_own_package():
    tools = {module_name(p) for p in (PARITY / "tools").glob("*.py")}
    assert {"parity.tools.plants", "parity.tools.selfcheck_runner", "parity.tools.localise"} <= tools
    assert {"parity.tools.html_report"} <= tools
    for gone in ("plants", "selfcheck_runner", "localise", "html_report"):
        assert not (PARITY / f"{gone}.py").exists(), f"parity/{gone}.py is a tool: it lives in parity/tools/"


def test_the_core_never_imports_a_tool():
    bad = []
    for imp in project_imports():
        if not imp.importer.startswith("parity") or _is_tool(imp.importer) or not _is_tool(imp.target):
            continue
        if imp.importer == DISPATCHER and not imp.top:
            continue  # `python -m parity selfcheck` / `report --html` / the selfcheck options
        bad.append(imp.where() + (" at module level" if imp.top else ""))
    assert not bad, "the core imports a tool:\n" + "\n".join(bad)


def test_the_tool_check_can_fail():
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
