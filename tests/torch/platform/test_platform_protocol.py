"""The ``Platform`` protocol is the contract: the torch platform meets it, new code stays inside it.

Two checks, both without running any framework code:

1. ``TorchPlatform`` has every protocol member; each method has the protocol's parameters, in the
   same order, with the same names and kinds, and a default wherever the protocol has one (it may
   add trailing parameters only if they are optional). ``get_platform()`` returns a ``Platform``.
2. New code uses no platform member that the protocol lacks. The scan (``platform_uses``) reads
   each new-code module with ``ast`` and collects every attribute *read* on an expression that
   holds the platform, where such an expression is, within one module:

   - a call ``get_platform()`` (also ``x.get_platform()``), or a call of a module-level function or
     method whose ``return`` gives a platform expression (``def _platform(): return get_platform()``,
     ``def platform(self): ... return self._platform``), found to a fixpoint;
   - a name assigned a platform expression anywhere in the module (``platform = get_platform()``,
     ``platform = platform or get_platform()``), or ``self.<attr>`` assigned one
     (``self._platform = get_platform()``);
   - ``getattr(<platform expression>, "member")`` with a literal name counts as a read.

   Names are tracked per module, not per scope: a name bound to the platform anywhere counts
   everywhere in that module (over-approximation: a false hit fails loudly and is fixed by renaming,
   never a silent miss). Not seen: a platform passed under another name into a function that never
   rebinds it from ``get_platform()``; new code keeps the ``platform = platform or get_platform()``
   idiom for that reason. Attribute writes (tests' monkeypatching) are not uses.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import typing
from collections import Counter
from pathlib import Path

import pytest

from hyper_parallel.platform import Platform, get_platform
from hyper_parallel.platform.torch_platform import TorchPlatform

ROOT = Path(__file__).resolve().parents[3]

# The modules that must reach the framework only through the protocol:
# protocols, config, components, recipes, the new trainer, its entry points and what it shares,
# and the parity harness.
NEW_CODE_GLOBS = (
    "hyper_parallel/protocols/**/*.py",
    "hyper_parallel/config/**/*.py",
    "hyper_parallel/components/**/*.py",
    "hyper_parallel/recipes/**/*.py",
    "hyper_parallel/train.py",  # the new path's entry points
    "hyper_parallel/entry.py",
    "hyper_parallel/trainer/hyper_trainer.py",
    "hyper_parallel/trainer/init_helpers.py",  # what HyperTrainer shares with BaseTrainer
    "hyper_parallel/trainer/legacy_mapping.py",
    "hyper_parallel/trainer/parallel_dims.py",  # HyperTrainer builds its mesh with it
    "parity/**/*.py",
)
# Functions of legacy modules that are new-code contract (none: the shared ones are init_helpers.py).
SHARED_HELPERS: dict[str, str] = {}


def protocol_members() -> list[str]:
    """Every member the protocol declares (methods and data attributes), sorted."""
    members = set(typing.get_type_hints(Platform))
    members |= {
        name
        for name, value in vars(Platform).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }
    return sorted(members)


# ------------------------------------------------------------------- the scan
def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


class _PlatformScan:
    """Platform expressions and the members read on them, for one module (see the module docstring)."""

    def __init__(self, tree: ast.AST) -> None:
        self.tree = tree
        self.getters = {"get_platform"}
        self.names: set[str] = set()
        self.self_attrs: set[str] = set()
        self._fixpoint()

    def is_platform(self, expr: ast.expr | None) -> bool:
        if isinstance(expr, ast.Call):
            return _call_name(expr.func) in self.getters
        if isinstance(expr, ast.Name):
            return expr.id in self.names
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return expr.attr in self.self_attrs
        if isinstance(expr, ast.BoolOp):
            return any(self.is_platform(value) for value in expr.values)
        if isinstance(expr, ast.IfExp):
            return self.is_platform(expr.body) or self.is_platform(expr.orelse)
        return False

    def _fixpoint(self) -> None:
        changed = True
        while changed:
            changed = False
            for node in ast.walk(self.tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name not in self.getters:
                    if any(isinstance(r, ast.Return) and self.is_platform(r.value) for r in ast.walk(node)):
                        self.getters.add(node.name)
                        changed = True
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign) and self.is_platform(node.value):
                    targets = list(node.targets)
                elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and self.is_platform(node.value):
                    targets = [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id not in self.names:
                        self.names.add(target.id)
                        changed = True
                    elif (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                        and target.attr not in self.self_attrs
                    ):
                        self.self_attrs.add(target.attr)
                        changed = True

    def uses(self, within: ast.AST) -> Counter[str]:
        found: Counter[str] = Counter()
        for node in ast.walk(within):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and self.is_platform(node.value)
            ):
                found[node.attr] += 1
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "hasattr"}
                and len(node.args) >= 2
                and self.is_platform(node.args[0])
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                found[node.args[1].value] += 1
        return found


def platform_uses(source: str, only_functions: str | None = None) -> Counter[str]:
    """Members read on the platform in ``source`` (only inside functions named ``only_functions*``)."""
    tree = ast.parse(source)
    scan = _PlatformScan(tree)
    if only_functions is None:
        return scan.uses(tree)
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(only_functions):
            found.update(scan.uses(node))
    return found


def new_code_files() -> list[Path]:
    files = {path for pattern in NEW_CODE_GLOBS for path in ROOT.glob(pattern)}
    return sorted(path for path in files if "golden" not in path.parts)


def _all_new_code_uses() -> dict[str, set[str]]:
    """member -> the modules that read it."""
    where: dict[str, set[str]] = {}
    sources = [(path.relative_to(ROOT).as_posix(), path.read_text(), None) for path in new_code_files()]
    sources += [(rel, (ROOT / rel).read_text(), prefix) for rel, prefix in SHARED_HELPERS.items()]
    for rel, text, prefix in sources:
        for member in platform_uses(text, prefix):
            where.setdefault(member, set()).add(rel)
    return where


# ------------------------------------------------------------------ the tests
def test_scanner_sees_every_binding_form() -> None:
    source = """
from hyper_parallel.platform import get_platform

def _platform():
    return get_platform()

class C:
    def __init__(self):
        self._p = get_platform()
    def platform(self):
        return self._p
    def run(self, platform=None):
        platform = platform or get_platform()
        platform.a()
        self._p.b
        self.platform().c()
        getattr(platform, "d")
        get_platform().e(1).not_a_member()
        _platform().f
        platform.g = None       # a write: not a use
        other.h()               # not the platform
"""
    assert set(platform_uses(source)) == {"a", "b", "c", "d", "e", "f"}
    helpers = "def _helper_x(self):\n    get_platform().a()\ndef _build_y(self):\n    get_platform().b()\n"
    assert set(platform_uses(helpers, "_helper_")) == {"a"}


def test_protocol_is_not_empty_and_documented() -> None:
    members = protocol_members()
    assert len(members) > 40, members
    undocumented = [
        name for name in members if name != "name" and not (getattr(Platform, name).__doc__ or "").strip()
    ]
    assert not undocumented, f"protocol methods without a docstring: {undocumented}"


@pytest.mark.parametrize("member", protocol_members())
def test_torch_platform_implements_member(member: str) -> None:
    _check_implements(TorchPlatform, member)


@pytest.mark.skipif(importlib.util.find_spec("mindspore") is None, reason="MindSpore is not installed")
@pytest.mark.parametrize("member", protocol_members())
def test_mindspore_platform_implements_member(member: str) -> None:
    from hyper_parallel.platform.mindspore_platform import MindSporePlatform

    _check_implements(MindSporePlatform, member)


def _check_implements(cls: type, member: str) -> None:
    assert hasattr(cls, member), f"{cls.__name__} lacks Platform.{member}"
    expected = getattr(Platform, member, None)
    if not inspect.isfunction(expected):
        return  # a data attribute (``name``): presence is the contract
    actual = getattr(cls, member)
    assert callable(actual), f"{cls.__name__}.{member} is not callable"
    want = list(inspect.signature(expected).parameters.values())
    have = list(inspect.signature(actual).parameters.values())
    described = f"Platform.{member}{inspect.signature(expected)} vs {cls.__name__}.{member}{inspect.signature(actual)}"
    assert len(have) >= len(want), f"missing parameters: {described}"
    for w, h in zip(want, have, strict=False):
        assert (w.name, w.kind) == (h.name, h.kind), f"parameter {w.name!r} differs: {described}"
        if w.default is not inspect.Parameter.empty:
            assert h.default is not inspect.Parameter.empty, f"{w.name!r} needs a default: {described}"
    for extra in have[len(want) :]:
        optional = extra.default is not inspect.Parameter.empty or extra.kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        )
        assert optional, f"extra required parameter {extra.name!r}: {described}"


def test_get_platform_returns_a_platform() -> None:
    assert typing.get_type_hints(get_platform)["return"] is Platform
    assert isinstance(get_platform(), Platform)


def test_new_code_uses_only_protocol_members() -> None:
    where = _all_new_code_uses()
    assert len(where) > 40, f"the scan found too few platform uses; is it broken? {sorted(where)}"
    declared = set(protocol_members())
    missing = {member: sorted(mods) for member, mods in where.items() if member not in declared}
    assert not missing, (
        "new code uses platform members that hyper_parallel/platform/base.py does not declare "
        f"(add them to the Platform protocol, with a signature and a docstring): {missing}"
    )
