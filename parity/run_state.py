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
    "record_refusal",
    "failed_goldens",
    "update_status",
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


def record_update(
    report_dir: Path, tree: str, refreshed: Iterable[tuple[str, str]], backends: Sequence[str] = ()
) -> None:
    """``update`` wrote (or found unchanged) these ``(case_id, backend)`` goldens on ``tree``: their
    failures are accepted, and ``--failed`` does not take them again. Each of ``backends`` (those the
    update ran on) records that it was updated after its last run (:func:`update_status`)."""
    by_backend: dict[str, list[str]] = {b: [] for b in backends}
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
            entry["update"] = {"status": "updated", "at": _now(), "at_ns": now_ns, "goldens": len(ids)}

        _change(report_dir, backend, tree, edit, create=False)


def record_refusal(report_dir: Path, tree: str, backends: Sequence[str], why: str) -> None:
    """``update --failed`` refused ``backends`` on ``tree`` for ``why`` (one line): a combined review
    names them as not updated, never as updated by an earlier update of the same tree (a backend with
    no record of this tree gets none: it has no run here, which says as much)."""
    fields = {"status": "refused", "at": _now(), "at_ns": time.time_ns(), "why": why}
    for backend in backends:
        _change(report_dir, backend, tree, lambda entry: entry.update(update=dict(fields)), create=False)


def _started(run: dict[str, Any]) -> str:
    return str(run.get("started") or "?")


def _unfinished(run: dict[str, Any]) -> str:
    status = run.get("status")
    if status == "interrupted":
        return f"was interrupted ({run.get('signal') or 'a signal'})"
    if status == "stopped":
        return f"stopped on an error ({run.get('error') or '?'})"
    return f"did not finish (its process {run.get('pid', '?')} on {run.get('host', '?')} is gone)"


def _run_command(backend: str, run_args: Sequence[str]) -> str:
    from parity import commands

    return commands.parity("run", "--backend", backend, *run_args)


def _last_run(entry: dict[str, Any]) -> dict[str, Any] | None:
    runs = [r for r in entry.get("runs", []) if isinstance(r, dict)]
    return max(runs, key=lambda r: r.get("started_ns", 0)) if runs else None


def failed_goldens(
    report_dir: Path, tree: str, backends: Sequence[str] | None = None, run_args: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """``(case_id, backend)`` of every tier B golden whose latest result on this tree is a failure,
    over ``backends`` (default: every backend with a run state); ``FailedRunError`` (one line) when
    that cannot be known yet: a backend asked has no run on this tree (missing), its last run was made
    on another tree (stale), is still going, or did not finish. ``run_args`` (``--report-dir R``) go
    into the ``parity run`` command each refusal names (in the form that runs where the user stands)."""
    report_dir = Path(report_dir)
    asked = list(backends) if backends else _backends_with_state(report_dir)
    if not asked:
        raise FailedRunError(
            f"no last run to take failures from (no {STATE_PREFIX}*.json in {report_dir}): run "
            f"`{_run_command('torch', run_args)}` (and each other backend's) first"
        )
    entries: dict[str, dict[str, Any]] = {}
    problems: dict[str, str] = {}  # backend -> why it cannot say (one line)
    for backend in asked:
        path = state_path(report_dir, backend)
        try:
            data = _read_state(path)
        except FileNotFoundError:
            problems[backend] = (
                f"no last run to take failures from for backend {backend} ({path} does not exist): run "
                f"`{_run_command(backend, run_args)}` first"
            )
            continue
        except (OSError, ValueError) as exc:
            raise FailedRunError(f"cannot read {path}: {exc}") from None
        entry = data["trees"].get(tree)
        if isinstance(entry, dict) and _last_run(entry) is not None:
            entries[backend] = entry
            continue
        older = [t for t in data["trees"].values() if isinstance(t, dict) and _last_run(t) is not None]
        if older:
            last = max((_last_run(t) or {} for t in older), key=lambda r: r.get("started_ns", 0))
            problems[backend] = (
                f"the last run of backend {backend} ({path}, started {_started(last)}) was made on another "
                f"tree than this one (sources changed since): rerun `{_run_command(backend, run_args)}` first"
            )
        else:
            problems[backend] = (
                f"no run of backend {backend} on this tree ({path}): run `{_run_command(backend, run_args)}` first"
            )
    ready = [b for b in asked if b not in problems]
    for backend, entry in sorted(entries.items()):
        path = state_path(report_dir, backend)
        runs = sorted((r for r in entry["runs"] if isinstance(r, dict)), key=lambda r: r.get("started_ns", 0))
        live = [r for r in runs if r.get("status") == "running" and _alive(r)]
        if live:
            run = live[-1]
            problems[backend] = (
                f"a run of backend {backend} on this tree is still running (pid {run.get('pid')}, started "
                f"{_started(run)}; {path}): wait for it to end, then run --failed"
            )
        elif runs[-1].get("status") != "finished":
            last = runs[-1]
            problems[backend] = (
                f"the last run of backend {backend} on this tree ({path}, started {_started(last)}) "
                f"{_unfinished(last)}, not finished: rerun `{_run_command(backend, run_args)}` and then --failed"
            )
    if problems:
        # The first problem, in the order asked; with several backends, the ready ones need not wait.
        backend = next(b for b in asked if b in problems)
        ready = [b for b in asked if b not in problems]
        others = f" (or take {', '.join(ready)}'s now with {' '.join('--backend ' + b for b in ready)})"
        more = f"; {len(problems) - 1} other backend(s) not ready either" if len(problems) > 1 else ""
        raise FailedRunError(problems[backend] + more + (others if ready else ""))
    out = []
    for backend, entry in sorted(entries.items()):
        for case_id, result in sorted(entry.get("results", {}).items()):
            if isinstance(result, dict) and result.get("tier") == "B" and result.get("status") == "fail":
                out.append((case_id, backend))
    return out


def current_goldens(report_dir: Path, tree: str, backend: str) -> set[str]:
    """Cases whose ``backend`` golden is known current on this tree: its latest result here is a
    pass or a refresh (an update of that backend, e.g. its own nox session, wrote or confirmed it).
    Empty when nothing is recorded or the state cannot be read: then nothing is known current."""
    try:
        entry = _read_state(state_path(Path(report_dir), backend))["trees"].get(tree)
    except (OSError, ValueError):
        return set()
    if not isinstance(entry, dict):
        return set()
    return {
        case_id
        for case_id, result in entry.get("results", {}).items()
        if isinstance(result, dict) and result.get("status") in ("pass", "refreshed")
    }


def update_status(report_dir: Path, tree: str, backends: Sequence[str] = ()) -> dict[str, str | None]:
    """Per backend with a record on this tree (and each of ``backends``): ``None`` when an update
    ran on it after its last run (its ``update-<backend>.json`` review is of that run), else one line
    saying why not: ``not updated: <why --failed refused>``, ``not updated since its last run ...``
    (with the count of its failing goldens), ``not updated: no run on this tree``, or ``up to date``
    (its last run has no failing golden)."""
    report_dir = Path(report_dir)
    out: dict[str, str | None] = {}
    for backend in sorted({*_backends_with_state(report_dir), *backends}):
        try:
            entry = _read_state(state_path(report_dir, backend))["trees"].get(tree)
        except FileNotFoundError:
            entry = None
        except (OSError, ValueError) as exc:
            out[backend] = f"not updated: cannot read {state_path(report_dir, backend)}: {exc}"
            continue
        if not isinstance(entry, dict):
            if backend in backends:
                out[backend] = "not updated: no run on this tree"
            continue
        last = _last_run(entry)
        recorded = entry.get("update")
        update: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        after_run = last is None or update.get("at_ns", 0) > last.get("started_ns", 0)
        if update and after_run:
            out[backend] = (
                None if update.get("status") == "updated" else f"not updated: {update.get('why', '?')}"
            )
            continue
        if last is None:
            out[backend] = "not updated: no run on this tree"
            continue
        failing = sum(
            isinstance(r, dict) and r.get("tier") == "B" and r.get("status") == "fail"
            for r in entry.get("results", {}).values()
        )
        out[backend] = (
            f"not updated since its last run (started {_started(last)}), which has {failing} failing golden(s)"
            if failing
            else f"up to date: its last run (started {_started(last)}) has no failing golden"
        )
    return out
