"""The state of the last ``parity run``: ``<report dir>/last_run.json``, and the tree it ran on.

A run writes ``status: running`` before its first case (so an earlier run's file never passes for
this one), ``interrupted`` on Ctrl-C or SIGTERM (with the signal's name) and ``finished`` with
every case at the end. Each record
carries ``tree``, a fingerprint of the source files a golden depends on (product, harness, recipes,
assets; not the goldens nor the reports), so ``parity update --failed`` can refuse a run made on
another tree in one line.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from parity.report import run_summary_path, write_json_atomic

__all__ = [
    "REPO_ROOT",
    "SOURCE_DIRS",
    "tree_fingerprint",
    "mark_started",
    "mark_interrupted",
    "failed_goldens",
    "FailedRunError",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
# What a golden's bits can depend on; goldens and reports are outputs.
SOURCE_DIRS = ("hyper_parallel", "parity", "examples", "scripts", "pyproject.toml")
_EXCLUDED = ("parity/golden/", "parity/reports/")
_SKIP_PARTS = {"__pycache__", ".pytest_cache", ".hypothesis", "golden", "reports"}


class FailedRunError(Exception):
    """``last_run.json`` cannot say which goldens to regenerate (one line: why)."""


def _source_files(root: Path) -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *SOURCE_DIRS],
            cwd=root,
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout.decode("utf-8", "surrogateescape")
        names = [n for n in listed.split("\0") if n and not n.startswith(_EXCLUDED)]
        if names:
            return sorted(set(names))
    except (OSError, subprocess.SubprocessError):
        pass
    out = []  # not a git checkout (an installed copy, a temporary copy)
    for top in SOURCE_DIRS:
        base = root / top
        paths = [base] if base.is_file() else base.rglob("*") if base.is_dir() else []
        for path in paths:
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not rel.startswith(_EXCLUDED) and not _SKIP_PARTS & set(path.parts):
                out.append(rel)
    return sorted(out)


def tree_fingerprint(root: Path = REPO_ROOT) -> str:
    """sha256 over the names and contents of the source files (``SOURCE_DIRS``) under ``root``."""
    digest = hashlib.sha256()
    for rel in _source_files(Path(root)):
        try:
            data = (Path(root) / rel).read_bytes()
        except OSError:  # listed by git but deleted in the working tree
            data = b"<missing>"
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def mark_started(report_dir: Path, argv: list[str], tree: str) -> None:
    """Replace the previous record before the first case runs."""
    write_json_atomic(
        run_summary_path(report_dir),
        {"status": "running", "started": _now(), "argv": list(argv), "tree": tree, "cases": []},
    )


def mark_interrupted(report_dir: Path, argv: list[str], tree: str, *, signal_name: str = "SIGINT") -> None:
    """The run stopped on a signal (Ctrl-C, SIGTERM): no result, and ``--failed`` refuses it."""
    write_json_atomic(
        run_summary_path(report_dir),
        {
            "status": "interrupted",
            "interrupted": _now(),
            "signal": signal_name,
            "argv": list(argv),
            "tree": tree,
            "cases": [],
        },
    )


def failed_goldens(report_dir: Path, tree: str) -> list[tuple[str, str]]:
    """``(case_id, backend)`` of every tier B check that failed in the last run on this tree."""
    path = run_summary_path(report_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FailedRunError(
            f"no last run to take failures from ({path} is missing): run `python -m parity run` first"
        ) from None
    except (OSError, ValueError) as exc:
        raise FailedRunError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise FailedRunError(f"{path}: expected a JSON object")
    status = data.get("status", "finished")
    if status != "finished":
        raise FailedRunError(
            f"the last run ({path}) was {status}, not finished: rerun `python -m parity run` and then --failed"
        )
    if data.get("tree") != tree:
        raise FailedRunError(
            f"the last run ({path}, finished {data.get('finished', '?')}) was made on another tree than this one "
            "(sources changed since): rerun `python -m parity run` first"
        )
    out = []
    for row in data.get("cases", []):
        if isinstance(row, dict) and row.get("tier") == "B" and row.get("status") == "fail":
            out.append((str(row.get("case_id")), str(row.get("backend"))))
    return out


def summary_extra(tree: str, argv: list[str]) -> dict[str, Any]:
    """The fields a finished run adds to its summary."""
    return {"status": "finished", "tree": tree, "argv": list(argv)}
