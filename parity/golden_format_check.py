"""Check that a regeneration of the goldens changed their format only, never a value.

``python -m parity.golden_format_check OLD_ROOT NEW_ROOT`` (or ``--git REV`` for the goldens of a
commit as the old side): for every golden present on both sides, the documents must be equal once
the fields a format change may add are set aside (``stats`` on tensor leaves, ``made_with`` at the
top); every tensor hash, inline value, float hex, the case block and the must-match fingerprint
fields must be unchanged (informational fingerprint fields, such as the CPU environment variables,
may differ: they describe the run that rewrote the file).
Prints one line per golden that moved and exits 1 if any did; a golden on one side only is listed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from parity.canonical import MARK

__all__ = ["strip_format", "compare_roots"]

_FORMAT_ONLY_TOP = ("made_with",)
_FORMAT_ONLY_TENSOR = ("stats",)


def strip_format(node: Any) -> Any:
    """The document without the fields a format-only regeneration may add."""
    if isinstance(node, dict):
        drop = _FORMAT_ONLY_TENSOR if node.get(MARK) == "tensor" else ()
        return {k: strip_format(v) for k, v in node.items() if k not in drop}
    if isinstance(node, list):
        return [strip_format(v) for v in node]
    return node


def compare_roots(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """``old``/``new``: relative path -> golden text. One line per problem."""
    out = []
    for rel in sorted(old.keys() | new.keys()):
        if rel not in new:
            out.append(f"{rel}: only in the old goldens")
            continue
        if rel not in old:
            out.append(f"{rel}: only in the new goldens")
            continue
        a, b = json.loads(old[rel]), json.loads(new[rel])
        for key in _FORMAT_ONLY_TOP:
            a.pop(key, None)
            b.pop(key, None)
        moved = [
            k
            for k in ("artifacts", "case", "schema_version")
            if strip_format(a.get(k)) != strip_format(b.get(k))
        ]
        fa, fb = a.get("fingerprint", {}), b.get("fingerprint", {})
        must = [f for f in _must_match(fa) if fa.get(f) != fb.get(f)]
        if moved or must:
            out.append(
                f"{rel}: changed beyond the format: {', '.join(moved + [f'fingerprint.{f}' for f in must])}"
            )
    return out


def _must_match(fingerprint: dict[str, Any]) -> list[str]:
    """The fingerprint fields a check must match (the others only explain a difference)."""
    from parity.env import REQUIRED_FINGERPRINT_FIELDS

    return [*REQUIRED_FINGERPRINT_FIELDS, str(fingerprint.get("backend"))]


def _read_dir(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text("utf-8") for p in sorted(root.glob("*/*/*.json"))}


def _read_git(rev: str, root: Path) -> dict[str, str]:
    top = Path(subprocess.check_output(["git", "rev-parse", "--show-toplevel"], cwd=root, text=True).strip())
    prefix = root.resolve().relative_to(top).as_posix()
    names = subprocess.check_output(["git", "ls-tree", "-r", "--name-only", rev, prefix], cwd=top, text=True)
    out = {}
    for name in names.splitlines():
        if name.endswith(".json"):
            out[name[len(prefix) + 1 :]] = subprocess.check_output(
                ["git", "show", f"{rev}:{name}"], cwd=top, text=True
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m parity.golden_format_check", description=__doc__.splitlines()[0]
    )
    parser.add_argument("new_root", type=Path, help="the regenerated golden root")
    parser.add_argument("--old-root", type=Path, default=None, help="the golden root before regeneration")
    parser.add_argument("--git", default=None, help="take the old goldens from this commit (e.g. HEAD)")
    args = parser.parse_args(argv)
    if (args.old_root is None) == (args.git is None):
        parser.error("give exactly one of --old-root and --git")
    old = _read_git(args.git, args.new_root) if args.git else _read_dir(args.old_root)
    new = _read_dir(args.new_root)
    problems = compare_roots(old, new)
    for line in problems:
        print(line)
    print(f"{len(new)} golden(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
