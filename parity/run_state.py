"""The state of ``parity run``s on a tree, per backend, and the last run's ``last_run.json``.

``<report dir>/last_run.json`` is the last run's summary (``parity report`` shows its reports): a
run writes ``status: running`` there before its first case (so an earlier run's file never passes
for this one), ``interrupted`` on Ctrl-C or SIGTERM (with the signal's name) and ``finished`` with
every case at the end.

What ``parity update --failed`` reads is kept apart, one file per backend,
``<report dir>/run_state-<backend>.json``, so that runs that overlap (two ``-k`` selections started
together, ``--backend torch`` and ``--backend mindspore`` side by side) never erase each other's
failures. Each record is keyed by ``tree``, a fingerprint of the source files a golden depends on
(product, harness, recipes, assets; not the goldens nor the reports). Per tree it lists the runs
(``running`` with their pid from before the first case, then ``finished``, ``interrupted`` with the
signal, or ``stopped`` on an error) and each case's latest result: a finished run merges its
results when it ends (a skip tells nothing and changes none), and ``update`` marks the goldens it
wrote or found unchanged as ``refreshed``. Every change takes the backend's lock
(``.run_state-<backend>.lock``, ``fcntl.flock``), reads the file, and writes it back atomically.

``failed_goldens`` is the union over the backends: every tier B golden whose latest result on this
tree is a failure. It refuses in one line while a run of a backend on this tree is still going, when
the last run of a backend did not finish, or when no run was made on this tree.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from parity.report import run_summary_path, write_json_atomic

__all__ = [
    "REPO_ROOT",
    "SOURCE_DIRS",
    "tree_fingerprint",
    "mark_started",
    "mark_interrupted",
    "mark_stopped",
    "mark_finished",
    "record_update",
    "failed_goldens",
    "state_path",
    "FailedRunError",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
# What a golden's bits can depend on; goldens and reports are outputs.
SOURCE_DIRS = ("hyper_parallel", "parity", "examples", "scripts", "pyproject.toml")
_EXCLUDED = ("parity/golden/", "parity/reports/")
_SKIP_PARTS = {"__pycache__", ".pytest_cache", ".hypothesis", "golden", "reports"}


class FailedRunError(Exception):
    """The run state cannot say (yet) which goldens to regenerate (one line: why)."""


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


# --------------------------------------------------------------------------- the per-backend state
STATE_PREFIX = "run_state-"
STATE_FORMAT = 1
# Trees kept per backend file (the newest touched) and runs kept per tree (the newest started,
# besides those still going): only the last run and the running ones decide anything.
MAX_TREES = 4
MAX_RUNS = 20
# Results a later run's result replaces (a skipped case says nothing about its golden).
_NO_RESULT = ("skip",)


def state_path(report_dir: Path, backend: str) -> Path:
    """``<report dir>/run_state-<backend>.json`` (directly in the folder: not a case report)."""
    return Path(report_dir) / f"{STATE_PREFIX}{backend}.json"


def _all_backends() -> tuple[str, ...]:
    from parity.cases import SUPPORTED_BACKENDS

    return SUPPORTED_BACKENDS


def _backends_with_state(report_dir: Path) -> list[str]:
    root = Path(report_dir)
    if not root.is_dir():
        return []
    return sorted(p.name[len(STATE_PREFIX) : -len(".json")] for p in root.glob(f"{STATE_PREFIX}*.json"))


def _proc_start(pid: int) -> str | None:
    """The start time of process ``pid`` (``/proc``), to tell it from a later process with its pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(run: dict[str, Any]) -> bool:
    """Whether the process of a ``running`` record still runs (on this host, the same process)."""
    pid = run.get("pid")
    if run.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = run.get("pid_start")
    return started is None or _proc_start(pid) in (None, started)


@contextlib.contextmanager
def _locked(report_dir: Path, backend: str) -> Iterator[None]:
    root = Path(report_dir)
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / f".{STATE_PREFIX}{backend}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _read_state(path: Path) -> dict[str, Any]:
    """The backend's state; ``ValueError`` when it does not parse, ``FileNotFoundError`` when absent."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("trees"), dict):
        raise ValueError("expected an object with 'trees'")
    return data


def _change(
    report_dir: Path, backend: str, tree: str, edit: Callable[[dict[str, Any]], None], *, create=True
) -> None:
    """Apply ``edit`` to the record of ``tree`` in the backend's state, under its lock, and write the
    file back atomically (``create=False``: nothing when the tree has no record)."""
    path = state_path(report_dir, backend)
    with _locked(report_dir, backend):
        try:
            data = _read_state(path)
        except (OSError, ValueError):  # none yet, or unreadable: this run's record starts it afresh
            data = {"format": STATE_FORMAT, "backend": backend, "trees": {}}
        trees = data["trees"]
        if tree not in trees and not create:
            return
        entry = trees.setdefault(tree, {"runs": [], "results": {}})
        edit(entry)
        entry["touched_ns"] = time.time_ns()
        for old in sorted(trees, key=lambda t: trees[t].get("touched_ns", 0), reverse=True)[MAX_TREES:]:
            del trees[old]
        runs = sorted(entry["runs"], key=lambda r: r.get("started_ns", 0))
        keep = runs[-MAX_RUNS:]
        entry["runs"] = [r for r in runs if r in keep or (r.get("status") == "running" and _alive(r))]
        write_json_atomic(path, data)


def _set_run(entry: dict[str, Any], run_id: str, fields: dict[str, Any]) -> None:
    for run in entry["runs"]:
        if run.get("id") == run_id:
            run.update(fields)
            return
    entry["runs"].append({"id": run_id, "started": _now(), "started_ns": time.time_ns(), **fields})


def _new_id() -> str:
    return f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def mark_started(report_dir: Path, argv: list[str], tree: str, backends: Sequence[str] | None = None) -> str:
    """Before the first case: ``last_run.json`` says ``running`` (the previous record is replaced) and
    each of ``backends`` (default: every supported one) records this run as running. Returns the
    run's id for :func:`mark_finished` / :func:`mark_interrupted` / :func:`mark_stopped`."""
    run_id = _new_id()
    write_json_atomic(
        run_summary_path(report_dir),
        {"status": "running", "started": _now(), "argv": list(argv), "tree": tree, "cases": []},
    )
    record = {
        "status": "running",
        "started": _now(),
        "started_ns": time.time_ns(),
        "argv": list(argv),
        "pid": os.getpid(),
        "pid_start": _proc_start(os.getpid()),
        "host": socket.gethostname(),
    }
    for backend in backends if backends is not None else _all_backends():
        _change(report_dir, backend, tree, lambda entry: _set_run(entry, run_id, dict(record)))
    return run_id


def mark_interrupted(
    report_dir: Path,
    argv: list[str],
    tree: str,
    *,
    signal_name: str = "SIGINT",
    run_id: str | None = None,
    backends: Sequence[str] | None = None,
) -> None:
    """The run stopped on a signal (Ctrl-C, SIGTERM): no result, and ``--failed`` refuses it while it
    is the last run of its backends. Without ``run_id``, a run that was interrupted is recorded."""
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
    fields = {"status": "interrupted", "ended": _now(), "signal": signal_name, "argv": list(argv)}
    run_id = run_id or _new_id()
    for backend in backends if backends is not None else _all_backends():
        _change(report_dir, backend, tree, lambda entry: _set_run(entry, run_id, dict(fields)))


def mark_stopped(report_dir: Path, run_id: str, tree: str, backends: Sequence[str], error: str) -> None:
    """The run ended on an error of the harness before its results: no result, like an interrupt."""
    fields = {"status": "stopped", "ended": _now(), "error": error}
    for backend in backends:
        _change(report_dir, backend, tree, lambda entry: _set_run(entry, run_id, dict(fields)))


def mark_finished(
    report_dir: Path, run_id: str, tree: str, backends: Sequence[str], cases: Iterable[dict[str, Any]]
) -> None:
    """The run ended with a result for each case (``last_run.json``'s rows: ``case_id``, ``tier``,
    ``backend``, ``status``): merged into each backend's latest results, the run marked finished."""
    rows = [row for row in cases if isinstance(row, dict)]
    now_ns = time.time_ns()
    for backend in backends:

        def edit(entry: dict[str, Any], backend: str = backend) -> None:
            for row in rows:
                if row.get("backend") != backend or row.get("status") in _NO_RESULT:
                    continue
                entry["results"][str(row.get("case_id"))] = {
                    "tier": row.get("tier"),
                    "status": row.get("status"),
                    "at": _now(),
                    "at_ns": now_ns,
                    "run": run_id,
                }
            _set_run(entry, run_id, {"status": "finished", "ended": _now()})

        _change(report_dir, backend, tree, edit)


def record_update(report_dir: Path, tree: str, refreshed: Iterable[tuple[str, str]]) -> None:
    """``update`` wrote (or found unchanged) these ``(case_id, backend)`` goldens on ``tree``: their
    failures are accepted, and ``--failed`` does not take them again."""
    by_backend: dict[str, list[str]] = {}
    for case_id, backend in refreshed:
        by_backend.setdefault(backend, []).append(case_id)
    now_ns = time.time_ns()
    for backend, ids in sorted(by_backend.items()):

        def edit(entry: dict[str, Any], ids: list[str] = ids) -> None:
            for case_id in ids:
                entry["results"][case_id] = {
                    "tier": "B",
                    "status": "refreshed",
                    "at": _now(),
                    "at_ns": now_ns,
                }

        _change(report_dir, backend, tree, edit, create=False)


def _started(run: dict[str, Any]) -> str:
    return str(run.get("started") or "?")


def _unfinished(run: dict[str, Any]) -> str:
    status = run.get("status")
    if status == "interrupted":
        return f"was interrupted ({run.get('signal') or 'a signal'})"
    if status == "stopped":
        return f"stopped on an error ({run.get('error') or '?'})"
    return f"did not finish (its process {run.get('pid', '?')} on {run.get('host', '?')} is gone)"


def failed_goldens(
    report_dir: Path, tree: str, backends: Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """``(case_id, backend)`` of every tier B golden whose latest result on this tree is a failure,
    over ``backends`` (default: every backend with a run state); ``FailedRunError`` (one line) when
    that cannot be known yet."""
    report_dir = Path(report_dir)
    asked = list(backends) if backends else _backends_with_state(report_dir)
    entries: dict[str, dict[str, Any]] = {}
    other_tree = ""
    for backend in asked:
        path = state_path(report_dir, backend)
        try:
            data = _read_state(path)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            raise FailedRunError(f"cannot read {path}: {exc}") from None
        entry = data["trees"].get(tree)
        if isinstance(entry, dict) and entry.get("runs"):
            entries[backend] = entry
        elif data["trees"]:
            other_tree = str(path)
    if not entries:
        if other_tree:
            raise FailedRunError(
                f"the last run ({other_tree}) was made on another tree than this one (sources changed "
                "since): rerun `python -m parity run` first"
            )
        where = (
            ", ".join(str(state_path(report_dir, b)) for b in asked)
            or f"no {STATE_PREFIX}*.json in {report_dir}"
        )
        raise FailedRunError(f"no last run to take failures from ({where}): run `python -m parity run` first")
    for backend in asked:
        if backend not in entries and backends:
            raise FailedRunError(
                f"no run of backend {backend} on this tree ({state_path(report_dir, backend)}): run "
                f"`python -m parity run --backend {backend}` first"
            )
    # With several backends, the one that is not ready need not hold up the others.
    others = " (or take the other backends' now with --backend)" if len(entries) > 1 else ""
    out = []
    for backend, entry in sorted(entries.items()):
        path = state_path(report_dir, backend)
        runs = sorted((r for r in entry["runs"] if isinstance(r, dict)), key=lambda r: r.get("started_ns", 0))
        live = [r for r in runs if r.get("status") == "running" and _alive(r)]
        if live:
            run = live[-1]
            raise FailedRunError(
                f"a run of backend {backend} on this tree is still running (pid {run.get('pid')}, started "
                f"{_started(run)}; {path}): wait for it to end, then run --failed{others}"
            )
        last = runs[-1]
        if last.get("status") != "finished":
            raise FailedRunError(
                f"the last run of backend {backend} on this tree ({path}, started {_started(last)}) "
                f"{_unfinished(last)}, not finished: rerun `python -m parity run` and then --failed{others}"
            )
        for case_id, result in sorted(entry.get("results", {}).items()):
            if isinstance(result, dict) and result.get("tier") == "B" and result.get("status") == "fail":
                out.append((case_id, backend))
    return out


def summary_extra(tree: str, argv: list[str]) -> dict[str, Any]:
    """The fields a finished run adds to its summary."""
    return {"status": "finished", "tree": tree, "argv": list(argv)}
