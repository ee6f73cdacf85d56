"""Imports flow downward across the layers of ``hyper_parallel`` (``LAYER_DEPS`` below).

Every ``.py`` file under ``hyper_parallel/``, ``parity/``, ``scripts/`` and ``benchmarks/`` is read
with ``ast`` (nothing is imported). Each ``import`` / ``from ... import`` counts, at module level or
inside a function or method; relative imports are resolved; ``from pkg import sub`` counts as an
import of ``pkg.sub`` when ``sub`` is a module. Imports under ``if TYPE_CHECKING:`` do not count
(they never run). ``importlib.import_module("name")`` is not an import statement and is not seen:
``config`` resolves recipes that way on purpose, so that it never imports ``trainer``.

Rules (``LAYER_DEPS`` says which layers each layer may import; a layer may always import itself):

- ``trainer -> components -> protocols/config -> platform``; ``models -> protocols -> platform``;
  ``data -> platform``; ``checkpointing`` (the integrity helpers both trainers share) ``-> platform``;
  so ``config`` never imports ``trainer``, ``components`` never import ``trainer``;
- recipes and entry points (``hyper_parallel.train``, ``hyper_parallel.entry``), ``scripts/`` and
  ``benchmarks/`` sit on top and may import any layer but ``parity``;
- ``parity`` may import everything; nothing imports ``parity`` except ``parity`` itself and tests;
- the legacy trainer modules (everything in ``trainer/`` but the new-path files ``hyper_trainer.py``,
  ``legacy_mapping.py`` and the package ``__init__``) never import
  ``components``: the legacy ``_build_*`` methods keep their own implementation, which is what the
  parity harness compares against the components.

The components are framework-free as well: no module in ``hyper_parallel/components/`` imports
``torch`` or ``mindspore`` at run time (``FRAMEWORK_FREE``; a ``TYPE_CHECKING`` import for type
hints is fine). Every framework call goes through the platform, which is what lets the same
components run on MindSpore (``tests/mindspore/ut/components/test_components_mindspore.py``).

A new subpackage of ``hyper_parallel`` fails until it is given a layer here. Known violations live
in ``ALLOWED`` with a reason; an entry that no longer matches any import fails too, so the list only
shrinks.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("hyper_parallel", "parity", "scripts", "benchmarks")

BASE = {"platform", "root"}
LAYER_DEPS: dict[str, set[str]] = {
    "root": set(),  # hyper_parallel/__init__.py: the version only
    "platform": {"root"},
    "checkpointing": BASE,
    "protocols": BASE,
    "config": BASE | {"protocols"},
    "models": BASE | {"protocols"},
    "data": BASE,
    "components": BASE | {"protocols", "config", "data", "checkpointing"},
    "trainer": BASE | {"protocols", "config", "data", "checkpointing", "components", "models"},
}
_BELOW_PARITY = set(LAYER_DEPS) | {"recipes", "entry"}
LAYER_DEPS["recipes"] = _BELOW_PARITY - {"entry"}
LAYER_DEPS["entry"] = _BELOW_PARITY
LAYER_DEPS["scripts"] = _BELOW_PARITY
LAYER_DEPS["benchmarks"] = _BELOW_PARITY
LAYER_DEPS["parity"] = _BELOW_PARITY | {"parity"}

ENTRY_MODULES = {"hyper_parallel.train", "hyper_parallel.entry"}
NEW_PATH_TRAINER = {
    "hyper_parallel.trainer",  # the package __init__ exports both trainers
    "hyper_parallel.trainer.hyper_trainer",
    "hyper_parallel.trainer.legacy_mapping",
}

# (importing module, imported layer) -> why it is tolerated. Keep each entry commented; remove it
# when the import goes.
ALLOWED: dict[tuple[str, str], str] = {
    # The component benchmarks time the parity suite's own cases (same inputs as the pairs) instead
    # of keeping a second copy of each case; the harness benchmark measures parity itself.
    ("benchmarks.bench_component_checkpoint", "parity"): "times the checkpoint suite cases",
    ("benchmarks.bench_component_dataloader", "parity"): "times the dataloader suite cases",
    ("benchmarks.bench_component_loss_tokenizer", "parity"): "times the loss/tokenizer suite cases",
    ("benchmarks.bench_component_optim", "parity"): "times the optimizer/LR suite cases",
    ("benchmarks.bench_golden_lint", "parity"): "benchmarks the harness's golden lint",
    ("benchmarks.bench_harness", "parity"): "benchmarks the harness (canonicalise + compare)",
    ("benchmarks.bench_hyper_trainer", "parity"): "reuses the legacy-trainer suite's recipe setup",
    ("benchmarks.bench_localise", "parity"): "times the harness's localiser against plain trainer steps",
}


# Layers whose modules never import these frameworks at run time (only through the platform).
FRAMEWORK_FREE: dict[str, tuple[str, ...]] = {"components": ("torch", "mindspore")}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name of the file
    target: str  # dotted module imported
    path: str
    line: int
    top: bool = True  # at module level (runs at import), not inside a function

    def where(self) -> str:
        return f"{self.path}:{self.line} imports {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_module(dotted: str) -> bool:
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(source: str, module: str, is_package: bool, path: str = "<src>") -> list[Import]:
    """Every import statement that runs (module level or in a function), skipping TYPE_CHECKING blocks."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, top: bool = True) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:  # the ``else:`` branch runs
                visit(child, top)
            return
        top = top and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        if isinstance(node, ast.Import):
            found.extend(Import(module, alias.name, path, node.lineno, top) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if alias.name != "*" and _is_module(sub) else base
                found.append(Import(module, target, path, node.lineno, top))
        for child in ast.iter_child_nodes(node):
            visit(child, top)

    visit(ast.parse(source))
    return found


def layer_of(module: str) -> str | None:
    """The layer of a project module; None for third-party and standard-library modules."""
    head, _, rest = module.partition(".")
    if head in ("parity", "scripts", "benchmarks"):
        return head
    if head != "hyper_parallel":
        return None
    if not rest:
        return "root"
    if module in ENTRY_MODULES:
        return "entry"
    sub = rest.partition(".")[0]
    return sub if sub in LAYER_DEPS else f"<unknown subpackage {sub!r}>"


def is_legacy_trainer(module: str) -> bool:
    return module.startswith("hyper_parallel.trainer") and module not in NEW_PATH_TRAINER


def violations(imports: list[Import]) -> list[tuple[tuple[str, str], Import, str]]:
    """``((importer, imported layer), import, rule broken)`` for every upward import."""
    out = []
    for imp in imports:
        src, dst = layer_of(imp.importer), layer_of(imp.target)
        if src is None or dst is None:
            continue  # third-party or standard library
        unknown = next((layer for layer in (src, dst) if layer.startswith("<unknown")), None)
        if unknown is not None:
            out.append(((imp.importer, dst), imp, f"{unknown}: give it a layer in LAYER_DEPS"))
        elif dst == "components" and is_legacy_trainer(imp.importer):
            out.append(((imp.importer, dst), imp, "the legacy trainer never imports components"))
        elif src != dst and dst not in LAYER_DEPS[src]:
            out.append(((imp.importer, dst), imp, f"{src} may import only {sorted(LAYER_DEPS[src])}"))
    return out


def framework_imports(imports: list[Import]) -> list[Import]:
    """Imports of a ``FRAMEWORK_FREE`` framework (or any submodule of it) from that layer."""
    out = []
    for imp in imports:
        banned = FRAMEWORK_FREE.get(layer_of(imp.importer) or "", ())
        if imp.target.partition(".")[0] in banned:
            out.append(imp)
    return out


def project_imports() -> list[Import]:
    found: list[Import] = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "golden" in path.parts or "assets" in path.parts:
                continue
            found += imports_of(
                path.read_text(), module_name(path), path.name == "__init__.py", str(path.relative_to(ROOT))
            )
    return found


def import_graph(imports: list[Import], *, module_level_only: bool) -> dict[str, set[str]]:
    """Project module -> the project modules it imports (``from pkg import name`` of a non-module
    name counts as an import of ``pkg``)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if module_level_only and not imp.top:
            continue
        target = imp.target
        while target and not _is_module(target):
            target = target.rpartition(".")[0]
        if target and target != imp.importer and layer_of(target) is not None:
            graph.setdefault(imp.importer, set()).add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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


# ------------------------------------------------------------------ the tests
def test_scanner_counts_function_imports_and_skips_type_checking() -> None:
    source = """
from typing import TYPE_CHECKING
import hyper_parallel.platform
if TYPE_CHECKING:
    from hyper_parallel.trainer import base
else:
    import hyper_parallel.data
def build():
    from hyper_parallel.trainer.base import BaseTrainer
class C:
    def m(self):
        from ..components import loss
"""
    got = {(i.target, i.line) for i in imports_of(source, "hyper_parallel.config.x", is_package=False)}
    assert got == {
        ("typing", 2),
        ("hyper_parallel.platform", 3),
        ("hyper_parallel.data", 7),
        ("hyper_parallel.trainer.base", 9),
        ("hyper_parallel.components.loss", 12),
    }
    rules = {key for key, _, _ in violations(imports_of(source, "hyper_parallel.config.x", False))}
    assert rules == {
        ("hyper_parallel.config.x", "data"),
        ("hyper_parallel.config.x", "trainer"),
        ("hyper_parallel.config.x", "components"),
    }


@pytest.mark.parametrize(
    ("importer", "target", "bad"),
    [
        ("hyper_parallel.config.manager", "hyper_parallel.trainer.hyper_trainer", True),
        ("hyper_parallel.components.loss", "hyper_parallel.trainer.base", True),
        ("hyper_parallel.trainer.base", "hyper_parallel.components.loss", True),
        ("hyper_parallel.trainer.callbacks.checkpoint", "hyper_parallel.components.checkpoint", True),
        ("hyper_parallel.trainer.hyper_trainer", "hyper_parallel.components.loss", False),
        ("hyper_parallel.models.qwen3_5.model", "hyper_parallel.data.dummy", True),
        ("hyper_parallel.data.hf", "hyper_parallel.protocols", True),
        ("hyper_parallel.platform.torch_platform", "hyper_parallel.protocols", True),
        ("hyper_parallel.trainer.base", "parity.canonical", True),
        ("scripts.train_lm", "parity", True),
        ("parity.engine", "hyper_parallel.trainer", False),
        ("hyper_parallel.recipes.qwen3_5", "hyper_parallel.trainer.hyper_trainer", False),
        ("hyper_parallel.newpkg.x", "hyper_parallel.platform", True),
    ],
)
def test_rules(importer: str, target: str, bad: bool) -> None:
    assert bool(violations([Import(importer, target, "<src>", 1)])) is bad


def test_no_upward_imports() -> None:
    found = violations(project_imports())
    new = [f"{imp.where()}: {rule}" for key, imp, rule in found if key not in ALLOWED]
    assert not new, "upward imports (a layer may import only those LAYER_DEPS lists):\n" + "\n".join(new)


def test_allowed_list_is_current() -> None:
    seen = {key for key, _, _ in violations(project_imports())}
    stale = sorted(set(ALLOWED) - seen)
    assert not stale, f"ALLOWED entries that no longer match an import (remove them): {stale}"


@pytest.mark.parametrize(
    ("importer", "target", "bad"),
    [
        ("hyper_parallel.components.loss", "torch", True),
        ("hyper_parallel.components.loss", "torch.nn.functional", True),
        ("hyper_parallel.components.optimizer", "mindspore", True),
        ("hyper_parallel.components.optimizer", "mindspore.experimental.optim", True),
        ("hyper_parallel.components.loss", "torchdata", False),
        ("hyper_parallel.platform.mindspore_platform", "mindspore", False),
        ("hyper_parallel.trainer.base", "torch", False),
    ],
)
def test_framework_rule(importer: str, target: str, bad: bool) -> None:
    assert bool(framework_imports([Import(importer, target, "<src>", 1)])) is bad


def test_framework_rule_skips_type_checking_imports() -> None:
    source = """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import torch
def f():
    import mindspore as ms
"""
    found = framework_imports(imports_of(source, "hyper_parallel.components.x", is_package=False))
    assert [(i.target, i.line) for i in found] == [("mindspore", 6)]


def test_components_import_no_framework() -> None:
    """No component imports torch or mindspore at run time (module level or in a function)."""
    found = framework_imports(project_imports())
    assert not found, "components must reach the framework through the platform:\n" + "\n".join(
        f"{imp.where()}" for imp in found
    )


def test_cycle_finder_sees_a_cycle_through_a_function_import() -> None:
    """A module-level import one way and a function-level import back is a run-time cycle only."""
    a = imports_of("import parity.cases\n", "parity.engine", False)
    b = imports_of("def f():\n    import parity.engine\n", "parity.cases", False)
    assert cycles(import_graph(a + b, module_level_only=False)) == [["parity.cases", "parity.engine"]]
    assert cycles(import_graph(a + b, module_level_only=True)) == []


@pytest.mark.parametrize("module_level_only", [True, False], ids=["module_level", "run_time"])
def test_no_import_cycle(module_level_only: bool) -> None:
    """No cycle in ``hyper_parallel/`` or ``parity/``: at import time (module level) or at run time
    (function imports included; ``TYPE_CHECKING`` imports never run and do not count)."""
    graph = import_graph(project_imports(), module_level_only=module_level_only)
    assert not cycles(graph), f"import cycles: {cycles(graph)}"


def test_suites_and_explore_import_only_the_core() -> None:
    """A suite module registers cases: it imports the harness core (``parity.e2e``,
    ``parity.builders``, ...), never another suite; ``parity.explore`` imports no suite."""
    bad = []
    for imp in project_imports():
        importer, target = imp.importer, imp.target
        in_suites = importer.startswith("parity.suites.")
        if (
            target.startswith("parity.suites.")
            and target != importer
            and (in_suites or importer.startswith("parity.explore"))
        ):
            bad.append(imp.where())
    assert not bad, "suites import each other:\n" + "\n".join(bad)
