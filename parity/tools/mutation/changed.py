"""``--changed``: the product functions whose source differs from a base revision.

Functions are compared by mutmut's own per-function hash (the key its mutants carry), so a change
of a docstring elsewhere in a file selects nothing, and a new function counts as changed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from parity.tools.mutation.mutants import function_hashes, mutated, product_files

__all__ = ["changed_functions", "default_base"]


def _git(repo: Path, *args: str) -> str | None:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def default_base(repo: Path) -> str:
    """The merge base with ``main`` (``origin/main`` first); on ``main`` itself, ``HEAD`` (so the
    uncommitted changes are what changed)."""
    head = _git(repo, "rev-parse", "HEAD")
    for ref in ("origin/main", "main"):
        base = _git(repo, "merge-base", "HEAD", ref)
        if base and base != head:
            return base
    return "HEAD"


def changed_functions(repo: Path, base: str | None) -> tuple[str, set[str]]:
    """(the base used, the mangled names ``module.x_f`` of functions changed since it)."""
    base = base or default_base(repo)
    if _git(repo, "rev-parse", "--verify", f"{base}^{{commit}}") is None:
        raise SystemExit(f"parity mutation: error: --changed {base}: not a git revision here")
    out: set[str] = set()
    for rel in product_files(repo):
        if not mutated(rel):
            continue
        now = function_hashes((repo / rel).read_text(encoding="utf-8"))
        old_text = _git(repo, "show", f"{base}:{rel.as_posix()}")
        old = function_hashes(old_text) if old_text is not None else {}
        module = rel.with_suffix("").as_posix().replace("/", ".").replace(".__init__", "")
        out.update(f"{module}.{name}" for name, digest in now.items() if old.get(name) != digest)
    return base, out
