"""Where a surviving mutant sits, so that the survivors say what kind of case the harness lacks.

- ``message``: the mutated statement is a ``raise`` or a logging/warning call: only the text a
  user reads changed. No parity case compares error or log text (``parity/outputs.py`` lists log
  lines and refusals as not compared); the unit tests pin the messages that matter.
- ``error_path``: the statement is the condition of, or inside, a branch that ends in ``raise``, or in an ``except``
  handler: the path a bad input or a failure takes. Parity cases run valid configurations on a
  working machine; refusals and failures are the fault suite's and the unit tests'
  (``tests/torch/ut/trainer/test_cli_fault_suite.py``, the checkpoint kill matrix).
- ``behaviour``: anything else: a statement every valid run can reach, the survivors that name a
  missing or too narrow parity case.

Read from the source file as it is now (``ast``), by the mutant's first changed line.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

__all__ = ["KINDS", "Where", "where"]

Where = Literal["message", "error_path", "behaviour"]
KINDS: tuple[Where, ...] = ("message", "error_path", "behaviour")
_LOG_METHODS = {
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "critical",
    "info_rank0",
    "warning_rank0",
}


@functools.cache
def _tree(path: str, root: str) -> ast.Module | None:
    try:
        return ast.parse((Path(root) / path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return None


def _is_message(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Raise):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _LOG_METHODS or name in ("warn", "print")
    return False


def _ends_in_raise(body: Iterable[ast.stmt]) -> bool:
    body = list(body)
    return bool(body) and isinstance(body[-1], ast.Raise)


def where(path: str, line: int, root: Path) -> Where:
    """The kind of the innermost statement holding ``line`` in ``path`` (repository-relative)."""
    tree = _tree(path, str(root))
    if tree is None:
        return "behaviour"
    stack: list[ast.AST] = []

    def visit(node: ast.AST) -> bool:
        for child in ast.iter_child_nodes(node):
            start, end = getattr(child, "lineno", None), getattr(child, "end_lineno", None)
            if start is None or end is None or not start <= line <= end:
                continue
            stack.append(child)
            visit(child)
            return True
        return False

    visit(tree)
    statements = [n for n in stack if isinstance(n, ast.stmt | ast.ExceptHandler)]
    if not statements:
        return "behaviour"
    if isinstance(statements[-1], ast.stmt) and _is_message(statements[-1]):
        return "message"
    for node in reversed(statements):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            break
        if isinstance(node, ast.If) and _ends_in_raise(node.body):
            in_test = node.test.lineno <= line <= (node.test.end_lineno or node.test.lineno)
            in_body = any(st.lineno <= line <= (st.end_lineno or st.lineno) for st in node.body)
            if in_test or in_body:  # the refusal's condition, or what it does
                return "error_path"
        if isinstance(node, ast.ExceptHandler):
            return "error_path"
    return "behaviour"
