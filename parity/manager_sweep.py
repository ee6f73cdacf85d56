"""``ConfigManager`` as a library: a root Config and recipe modules of the caller's own.

``python -m hyper_parallel.train`` is one ``ConfigManager`` (``HyperTrainer.Config`` and the recipes
of ``hyper_parallel.recipes``); the class takes any root dataclass and recipe package. Some of its
behaviour only such a caller reaches, and ``manager_rows`` records it on a small root of its own
(``ToyRoot``) and a recipe package written to a temporary folder:

- refusals the shipped tree cannot produce: fields a recipe leaves to the command line
  (``tyro.MISSING``: one, or three at once), a required mutually exclusive pair (neither given, both
  given), a Config two sections deep refusing a value in ``__post_init__``;
- recipe modules that fail: one whose own import fails, one that raises while importing, one
  without a ``RECIPES`` dict, an unknown one; by ``--module`` and in the help text's recipe listing;
- ``cli_flags`` with and without a recipe's default (a dict field's keys are flags);
- the same refusals under a tyro without the parse-error hook (``hyper_parallel.config.refusals``
  then flattens tyro's own report), with stdout captured and with a UTF-8 stdout (a terminal's:
  tyro then draws the report's box with UTF-8 borders);
- ``parse_args()`` of both entry points reading ``sys.argv``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import io
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from typing import Annotated, Any
from unittest import mock

import tyro

from hyper_parallel.entry import run_main
from parity.config_sweep import (
    LEGACY_PROG,
    NEW_PROG,
    RECIPE,
    Outcome,
    _line,
    _parsed,
    parse_legacy,
    parse_new,
    run_parse,
    without_debug_env,
)
from parity.legacy_driver import DEBUG_YAML, REPO_ROOT

__all__ = ["TOY_COMMANDS", "ToyRoot", "manager_rows"]

_ONE_OF = tyro.conf.create_mutex_group(required=True)


@dataclasses.dataclass
class ToyInner:
    depth: int = 1

    def __post_init__(self) -> None:
        if self.depth < 0:
            raise ValueError(f"ToyInner.depth: expected an int >= 0, got {self.depth!r}")


@dataclasses.dataclass
class ToySection:
    inner: ToyInner = dataclasses.field(default_factory=ToyInner)
    size: int = 1


@dataclasses.dataclass
class ToyRoot:
    """A root Config with what ``HyperTrainer.Config`` lacks: a mutex pair and a dict field."""

    first: int = 0
    second: float = 0.0
    third: str = ""
    by_name: Annotated[str | None, _ONE_OF] = None
    by_index: Annotated[int | None, _ONE_OF] = None
    options: dict[str, int] = dataclasses.field(default_factory=dict)
    section: ToySection = dataclasses.field(default_factory=ToySection)


_PACKAGE = "zz_parity_recipes"
# The recipe package: module name -> source.
_MODULES = {
    "toy": """
        import tyro

        from parity.manager_sweep import ToyRoot

        RECIPES = {
            "complete": lambda: ToyRoot(options={"alpha": 1, "beta": 2}),
            "needs_all": lambda: ToyRoot(first=tyro.MISSING, second=tyro.MISSING, third=tyro.MISSING),
            "needs_one": lambda: ToyRoot(second=tyro.MISSING),
        }
    """,
    "needs_dep": """
        import zz_parity_no_such_dependency

        RECIPES = {}
    """,
    "raises": """
        raise RuntimeError("recipe table not ready")
    """,
    "no_table": """
        RECIPES = ["complete"]
    """,
}
_TOY = ("--module", "toy", "--config")
# Command lines of the toy manager (prog ``toy``).
TOY_COMMANDS: tuple[tuple[str, ...], ...] = (
    (*_TOY, "complete", "--by_index", "1"),
    (*_TOY, "needs_all", "--by_index", "1"),
    (*_TOY, "needs_one", "--by_index", "1"),
    (*_TOY, "complete"),
    (*_TOY, "complete", "--by_name", "a", "--by_index", "1"),
    (*_TOY, "complete", "--by_index", "1", "--section.inner.depth", "-1"),
    (*_TOY, "complete", "--by_index", "1", "--options.alpha", "x"),
    ("--module", "needs_dep", "--config", "complete"),
    ("--module", "raises", "--config", "complete"),
    ("--module", f"{_PACKAGE}.raises", "--config", "complete"),
    ("--module", "no_table", "--config", "complete"),
    ("--module", "zz_absent", "--config", "complete"),
)
# Those again under a tyro without the parse-error hook.
_WITHOUT_HOOK: tuple[tuple[str, ...], ...] = (
    (*_TOY, "needs_all", "--by_index", "1"),
    (*_TOY, "complete"),
    (*_TOY, "complete", "--by_index", "1", "--optionz.alpha", "1"),
)
# ``parse_args()`` reading sys.argv: (entry, sys.argv[1:]).
_SYS_ARGV: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("legacy", ("{yaml}", "--train.max_steps=-1")),
    ("new", (*RECIPE, "--optimizer.lr", "x")),
    ("new", ("{yaml}", "--train.max_steps=-1")),
)


@contextlib.contextmanager
def _recipe_package() -> Iterator[None]:
    """``_MODULES`` importable as ``zz_parity_recipes`` while inside; nothing of it left after."""
    with tempfile.TemporaryDirectory(prefix="parity-recipes-") as folder:
        package = os.path.join(folder, _PACKAGE)
        os.mkdir(package)
        with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8") as fh:
            fh.write('"""Recipe modules written by parity.manager_sweep."""\n')
        for name, source in _MODULES.items():
            with open(os.path.join(package, f"{name}.py"), "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(source).lstrip())
        sys.path.insert(0, folder)
        importlib.invalidate_caches()
        try:
            yield
        finally:
            sys.path.remove(folder)
            for name in [n for n in sys.modules if n == _PACKAGE or n.startswith(f"{_PACKAGE}.")]:
                del sys.modules[name]


def _recipe_listing(text: str) -> str:
    """The help text's recipe paragraph, lines joined."""
    paragraph = text.split("\n\n")[-1]
    return " | ".join(line.strip() for line in paragraph.splitlines())


def manager_rows() -> dict[str, str]:
    """``label -> outcome`` for the toy manager's listing, surface and command lines, then the
    shipped entry points' ``parse_args()`` from ``sys.argv``."""
    from hyper_parallel.config import refusals
    from hyper_parallel.config.manager import ConfigManager

    rows: dict[str, str] = {}
    manager = ConfigManager(root=ToyRoot, recipe_package=_PACKAGE, prog="toy")
    with without_debug_env(), mock.patch.dict(os.environ, {"COLUMNS": "100"}), _recipe_package():
        rows["describe: recipes"] = _recipe_listing(manager.describe())
        rows["available_recipes"] = repr(manager.available_recipes())
        rows["cli_flags()"] = " ".join(manager.cli_flags())
        rows["cli_flags(toy:complete)"] = " ".join(manager.cli_flags(manager.load_recipe("toy", "complete")))
        for argv in TOY_COMMANDS:
            rows[" ".join(argv)] = _line(run_parse("toy", manager.parse_args, list(argv)))
        with mock.patch.object(refusals, "_tyro_errors", lambda: None):
            for argv in _WITHOUT_HOOK:
                label = "without the parse-error hook: " + " ".join(argv)
                rows[label] = _line(run_parse("toy", manager.parse_args, list(argv)))
                # tyro draws its report's box with UTF-8 borders where stdout is UTF-8 (a terminal).
                rows[f"{label} (UTF-8 stdout)"] = _line(_run_utf8("toy", manager.parse_args, list(argv)))
        for entry, argv in _SYS_ARGV:
            prog, parse = (LEGACY_PROG, parse_legacy) if entry == "legacy" else (NEW_PROG, parse_new)
            tokens = [t.format(yaml=DEBUG_YAML) for t in argv]
            with mock.patch.object(sys, "argv", [prog, *tokens]):
                line = _line(run_parse(prog, functools.partial(_from_sys_argv, parse), []))
            rows[f"sys.argv: {prog} {' '.join(argv)}"] = line.replace(str(REPO_ROOT), "<repo>")
    return rows


def _run_utf8(prog: str, parse: Callable[[list[str]], Any], argv: list[str]) -> Outcome:
    """``run_parse`` with a stdout whose encoding is UTF-8, as a terminal's."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_main(prog, functools.partial(_parsed, parse, argv))
    out.flush()
    return Outcome(code, out.buffer.getvalue().decode("utf-8"), err.getvalue())


def _from_sys_argv(parse: Callable[[Any], Any], _argv: list[str]) -> Any:
    """``parse(None)``: the entry point reads ``sys.argv[1:]`` itself."""
    return parse(None)
