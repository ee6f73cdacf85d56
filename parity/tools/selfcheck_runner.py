"""``python -m parity selfcheck``: plant divergences and measure how many the suite catches.

For each plant of ``parity.tools.plants`` (or the ones named with ``--plant``):

1. the project (everything the suite reads: ``hyper_parallel/``, ``parity/`` with its goldens and
   assets, ``examples/``, ``scripts/``, ...) is copied from one snapshot taken at the start into a
   temporary folder, and the plant's single edit is applied there (a snippet that does not occur
   exactly once refuses the plant with one line naming it and the file: ``broken-patch``);
2. ``python -m parity run --report-dir <tmp>`` runs in the copy as a subprocess, with the copy as
   its working folder and first on ``PYTHONPATH``. The project is usually pip-installed in editable
   mode, so a bootstrap in that subprocess checks where ``hyper_parallel`` and ``parity`` were
   imported from before the run starts: a module from outside the copy is an error, never a
   silent run of the unpatched tree;
3. the failing case ids come from the run's JSON reports (one per failing case) and from its
   ``PARITY FAIL`` / ``PARITY ERROR`` lines (an erroring producer writes no report).

A baseline run (the snapshot, no plant) comes first and must be green. Each outcome is one of
``caught`` (an expected-caught plant turned the suite red), ``survived`` (it stayed green),
``inert-ok`` (an inert plant stayed green), ``FALSE ALARM`` (an inert plant turned it red),
``broken-patch`` and ``error`` (timeout, a failed probe, a runner failure). The exit status is 0
only when every ``caught`` plant was caught and every ``inert`` plant stayed green.

Children run in parallel (``--jobs``, default: the CPUs this process may use); each runs its cases
in one process (``PARITY_JOBS=1``), and its CPU profile (``parity.numerics``, portable by default)
pins it to one intra-op thread. Hypothesis runs
under its derandomized ``selfcheck`` profile (``ci`` without shrinking) unless
``HYPOTHESIS_PROFILE`` is set, so that two self-checks of the same tree give the same table. Arguments after ``--`` go to every ``parity run``
(``-- --tag optimizer``), the baseline's included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from parity.tools.child import _BOOTSTRAP, _child_env
from parity.tools.plants import PLANTS, Plant, PlantError, select

if TYPE_CHECKING:
    from parity.tools.warm_start import WarmStarter

__all__ = [
    "OUTCOMES",
    "PlantResult",
    "ProbeError",
    "RunResult",
    "SelfCheck",
    "add_arguments",
    "copy_project",
    "default_jobs",
    "main",
    "project_root",
    "run_suite",
]

# What a run needs is everything but these (top level of the project) ...
_SKIP_TOP = frozenset(
    {
        ".git",
        ".nox",
        ".venv",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        ".benchmarks",
        ".whl",
        "build",
        "dist",
        "outputs",
        "wandb",
        "tb_traces",
        "profiler_traces",
    }
)
# ... and these anywhere (stale bytecode of a patched file must never be what runs).
_SKIP_ANY = frozenset({"__pycache__"})
_SKIP_SUFFIXES = (".pyc", ".egg-info")
# The folder of the harness's own JSON reports: not copied (each run writes its own elsewhere).
_SKIP_PATHS = frozenset({("parity", "reports")})

OUTCOMES = ("caught", "survived", "inert-ok", "FALSE ALARM", "broken-patch", "error")
_STYLE = {
    "caught": "green",
    "inert-ok": "green",
    "survived": "bold yellow",
    "FALSE ALARM": "bold red",
    "broken-patch": "bold red",
    "error": "bold red",
}
_CASE_LINE = re.compile(r"^PARITY (?:FAIL|ERROR)  case=(\S+)", re.MULTILINE)
_UNUSED_LINE = re.compile(r"^unused golden (\S+?):? ", re.MULTILINE)
_SUMMARY_LINE = re.compile(r"^\d+ passed, \d+ failed, \d+ skipped, \d+ unused golden\(s\)$", re.MULTILINE)


class ProbeError(RuntimeError):
    """The child imported ``hyper_parallel`` or ``parity`` from somewhere other than its copy."""


def project_root() -> Path:
    """The project this ``parity`` package belongs to (the folder holding ``parity/``)."""
    return Path(__file__).resolve().parents[2]


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _ignore(root: Path) -> Callable[[str, list[str]], set[str]]:
    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).resolve().relative_to(root).parts
        skipped = {n for n in names if n in _SKIP_ANY or n.endswith(_SKIP_SUFFIXES)}
        if not rel:
            skipped |= {n for n in names if n in _SKIP_TOP}
        skipped |= {n for n in names if (*rel, n) in _SKIP_PATHS}
        return skipped

    return ignore


def copy_project(source: str | Path, dest: str | Path) -> Path:
    """Copy the project at ``source`` to ``dest`` (a new folder), without caches, VCS and outputs."""
    source = Path(source).resolve()
    dest = Path(dest)
    shutil.copytree(source, dest, ignore=_ignore(source), symlinks=True)
    return dest


# ----------------------------------------------------------------------------- one suite run


@dataclass
class RunResult:
    """What one ``python -m parity run`` in a copy gave."""

    rc: int | None  # None: killed at the timeout
    seconds: float
    failed: list[str] = field(default_factory=list)  # case ids (and "unused golden <file>")
    summary: str = ""  # the run's last line ("N passed, M failed, ...")
    error: str | None = None  # the run did not give a usable result
    tail: str = ""  # the end of the run's output, for a report

    @property
    def green(self) -> bool:
        return self.error is None and self.rc == 0


def _check_probe(probe: Path, copy: Path) -> None:
    """``ProbeError`` unless the child reported both packages imported from inside ``copy``."""
    if not probe.is_file():
        raise ProbeError(f"the child wrote no import probe ({probe}): cannot tell which tree it ran")
    data = json.loads(probe.read_text(encoding="utf-8"))
    root = os.path.realpath(copy)
    modules = data.get("modules") or {}
    for name in ("hyper_parallel", "parity"):
        path = modules.get(name)
        if not path or not str(path).startswith(root + os.sep):
            raise ProbeError(
                f"the child imported {name} from {path}, not from the copy {root}: it would have "
                "tested another tree (check PYTHONPATH and the editable install)"
            )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _failed_cases(report_dir: Path, output: str) -> list[str]:
    """Failing case ids in run order (output lines, the run summary), then any that only a case
    report names (``<backend>/<platform>/<id>.json``), then unused goldens."""
    ids: list[str] = [m.group(1) for m in _CASE_LINE.finditer(output)]
    # ``last_run.json`` (where the run writes one): every case with its status.
    summary = _read_json(report_dir / "last_run.json")
    cases = summary.get("cases") if isinstance(summary, dict) else None
    for entry in cases if isinstance(cases, list) else []:
        if isinstance(entry, dict) and entry.get("status") in ("fail", "error") and entry.get("case_id"):
            ids.append(str(entry["case_id"]))
    if report_dir.is_dir():
        for path in sorted(p for p in report_dir.rglob("*.json") if p.parent != report_dir):
            data = _read_json(path)
            case_id = data.get("case_id") if isinstance(data, dict) else f"unreadable report {path.name}"
            if case_id:
                ids.append(str(case_id))
    ids = list(dict.fromkeys(ids))
    for match in _UNUSED_LINE.finditer(output):
        entry = f"unused golden {Path(match.group(1)).name}"
        if entry not in ids:
            ids.append(entry)
    return ids


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: it and what it started


def run_suite(
    copy: str | Path,
    run_args: Sequence[str] = (),
    *,
    timeout: float = 600.0,
    work: str | Path | None = None,
    on_start: Callable[[subprocess.Popen[str]], None] | None = None,
    warm: WarmStarter | None = None,
) -> RunResult:
    """``python -m parity run --report-dir <work>/reports *run_args`` in ``copy``; never raises for
    a red suite (only ``ProbeError`` is an error result, folded into ``RunResult.error``).

    With ``warm`` (``parity.tools.warm_start``), the child is forked from its zygote instead of a
    fresh interpreter, with the same bootstrap and the same result; a zygote that is gone falls
    back to a fresh interpreter (one line on stderr). ``on_start`` sees only fresh children (the
    warm starter kills its own when it closes). A run that picks its own ``--cpu-profile`` always
    starts fresh: the zygote was started with the default profile's knobs.
    """
    copy = Path(copy).resolve()
    work = Path(work) if work is not None else copy.parent
    report_dir = work / "reports"
    probe = work / "probe.json"
    probe.unlink(missing_ok=True)
    shutil.rmtree(report_dir, ignore_errors=True)
    argv = ["run", "--report-dir", str(report_dir), *run_args]
    start = time.perf_counter()
    ran: tuple[int | None, str] | None = None
    if warm is not None and not any(a.startswith("--cpu-profile") for a in run_args):
        ran = _run_warm(warm, copy, probe, argv, work / "output.txt", timeout)
    if ran is None:
        ran = _run_fresh(copy, probe, argv, timeout, on_start)
    rc, output = ran
    seconds = time.perf_counter() - start
    tail = "\n".join(output.strip().splitlines()[-25:])
    summary = (_SUMMARY_LINE.findall(output) or [""])[-1]
    result = RunResult(rc=rc, seconds=seconds, summary=summary, tail=tail)
    if rc is None:
        result.error = f"timed out after {timeout:.0f}s"
        return result
    try:
        _check_probe(probe, copy)
    except ProbeError as exc:
        result.error = f"probe: {exc}"
        return result
    result.failed = _failed_cases(report_dir, output)
    if rc != 0 and not result.failed:
        last = output.strip().splitlines()[-1:] or [""]
        result.failed = [f"(run exit {rc}: {last[0][:160]})"]
    return result


def _run_fresh(
    copy: Path,
    probe: Path,
    argv: list[str],
    timeout: float,
    on_start: Callable[[subprocess.Popen[str]], None] | None,
) -> tuple[int | None, str]:
    """A fresh interpreter: (exit code or None at the timeout, its output)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOTSTRAP, *argv],
        cwd=copy,
        env=_child_env(copy, probe),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    if on_start is not None:
        on_start(proc)
    try:
        output, _ = proc.communicate(timeout=timeout)
        return proc.returncode, output
    except subprocess.TimeoutExpired:
        _kill(proc)
        output, _ = proc.communicate()
        return None, output


def _run_warm(
    warm: WarmStarter, copy: Path, probe: Path, argv: list[str], output: Path, timeout: float
) -> tuple[int | None, str] | None:
    """A child forked from ``warm``'s zygote: like ``_run_fresh``; None when the zygote is gone
    (the caller then starts a fresh interpreter)."""
    from parity.tools.warm_start import WarmStartError

    try:
        child = warm.launch(copy, _child_env(copy, probe), argv, output)
    except WarmStartError as exc:
        warm.warn_once(str(exc))
        return None
    try:
        rc = child.wait(timeout)
    except WarmStartError as exc:  # the zygote died while the child ran: run it again, fresh
        child.kill()
        warm.warn_once(str(exc))
        probe.unlink(missing_ok=True)
        return None
    if rc is None:
        child.kill()
        with contextlib.suppress(WarmStartError):
            child.wait(60.0)
    try:
        text = output.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return rc, text


# ----------------------------------------------------------------------------- the self-check


@dataclass
class PlantResult:
    plant: Plant
    outcome: str
    seconds: float = 0.0
    caught_by: list[str] = field(default_factory=list)
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        p = self.plant
        return {
            "name": p.name,
            "category": p.category,
            "side": p.side,
            "file": p.file,
            "models": p.models,
            "expected": p.expected,
            "needs": p.needs,
            "outcome": self.outcome,
            "caught_by_count": len(self.caught_by),
            "caught_by": self.caught_by,
            "seconds": round(self.seconds, 2),
            "detail": self.detail,
        }


def classify(plant: Plant, run: RunResult) -> str:
    if run.error is not None:
        return "error"
    red = run.rc != 0
    if plant.expected == "inert":
        return "FALSE ALARM" if red else "inert-ok"
    return "caught" if red else "survived"


def _case_name(case_id: str) -> str:
    """``kind.name-params`` -> ``name`` (what the table shows; JSON keeps the ids)."""
    if case_id.startswith(("(", "unused golden")):
        return case_id
    head = case_id.split("-", 1)[0]
    return head.split(".", 1)[1] if "." in head else head


def caught_by_text(ids: Sequence[str], limit: int = 3) -> str:
    if not ids:
        return "-"
    names: list[str] = []
    counts: dict[str, int] = {}
    for case_id in ids:
        name = _case_name(case_id)
        if name not in counts:
            names.append(name)
        counts[name] = counts.get(name, 0) + 1
    shown = [f"{n}×{counts[n]}" if counts[n] > 1 else n for n in names[:limit]]
    more = f", +{len(names) - limit} more" if len(names) > limit else ""
    return f"{len(ids)}: {', '.join(shown)}{more}"


class SelfCheck:
    """One self-check: snapshot, baseline, then every plant in parallel (see the module doc)."""

    def __init__(
        self,
        plants: Sequence[Plant],
        *,
        source: str | Path | None = None,
        jobs: int | None = None,
        run_args: Sequence[str] = (),
        timeout: float = 600.0,
        keep: bool = False,
        console: Console | None = None,
    ) -> None:
        self.plants = list(plants)
        self.source = Path(source).resolve() if source is not None else project_root()
        self.jobs = max(1, jobs or default_jobs())
        self.run_args = list(run_args)
        self.timeout = timeout
        self.keep = keep
        self.console = console or Console(stderr=False, width=None if sys.stdout.isatty() else 160)
        self.baseline: RunResult | None = None
        self.results: list[PlantResult] = []
        self.workdir: Path | None = None
        self.wall_seconds = 0.0
        self._procs: set[subprocess.Popen[str]] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------ pieces
    def _track(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            self._procs.add(proc)

    def _run_in(self, folder: Path) -> RunResult:
        return run_suite(
            folder / "project",
            self.run_args,
            timeout=self.timeout,
            work=folder,
            on_start=self._track,
        )

    def _run_plant(self, snapshot: Path, plant: Plant, index: int) -> PlantResult:
        assert self.workdir is not None
        folder = self.workdir / f"{index:03d}-{plant.name}"
        start = time.perf_counter()
        try:
            copy_project(snapshot, folder / "project")
            plant.apply(folder / "project")
            run = self._run_in(folder)
        except PlantError as exc:
            return PlantResult(plant, "broken-patch", time.perf_counter() - start, detail=str(exc))
        except Exception as exc:  # reported as the plant's outcome
            return PlantResult(
                plant, "error", time.perf_counter() - start, detail=f"{type(exc).__name__}: {exc}"
            )
        finally:
            if not self.keep:
                shutil.rmtree(folder, ignore_errors=True)
        outcome = classify(plant, run)
        detail = run.error or run.summary
        if outcome == "error" and run.tail:
            detail += "\n" + run.tail
        return PlantResult(plant, outcome, run.seconds, caught_by=run.failed, detail=detail)

    def _refused(self, snapshot: Path) -> dict[str, str]:
        """Plants whose snippet does not apply to the snapshot: name -> the one-line error."""
        refused = {}
        for plant in self.plants:
            path = snapshot / plant.file
            try:
                if not path.is_file():
                    raise PlantError(f"plant {plant.name}: {plant.file} does not exist in the project")
                plant.apply_text(path.read_text(encoding="utf-8"))
            except PlantError as exc:
                refused[plant.name] = str(exc)
        return refused

    # ------------------------------------------------------------ the whole check
    def run(self) -> int:
        console = self.console
        start = time.perf_counter()
        self.workdir = Path(tempfile.mkdtemp(prefix="parity-selfcheck-"))
        try:
            return self._run(start)
        finally:
            self.wall_seconds = time.perf_counter() - start
            if not self.keep:
                shutil.rmtree(self.workdir, ignore_errors=True)
            else:
                console.print(f"kept the copies under {self.workdir}")

    def _run(self, start: float) -> int:
        assert self.workdir is not None
        console = self.console
        snapshot = copy_project(self.source, self.workdir / "snapshot")
        refused = self._refused(snapshot)
        for line in refused.values():
            console.print(f"[bold red]error:[/] {line}", highlight=False)
        runnable = [p for p in self.plants if p.name not in refused]
        extra = f" (run args: {' '.join(self.run_args)})" if self.run_args else ""
        if runnable:
            console.print(
                f"selfcheck: {len(runnable)} plant(s) of {len(self.plants)}, {self.jobs} job(s), "
                f"project {self.source}{extra}; baseline first",
                highlight=False,
            )
            base_folder = self.workdir / "baseline"
            copy_project(snapshot, base_folder / "project")
            self.baseline = self._run_in(base_folder)
            if not self.baseline.green:
                why = self.baseline.error or f"{len(self.baseline.failed)} failing: " + ", ".join(
                    self.baseline.failed[:8]
                )
                console.print(
                    f"[bold red]baseline is not green[/] ({why}); refusing to plant anything. "
                    f"Make `python -m parity run{extra and ' ' + ' '.join(self.run_args)}` pass first.",
                    highlight=False,
                )
                if self.baseline.tail:
                    console.print(self.baseline.tail, markup=False, highlight=False)
                return 2
            console.print(
                f"baseline green in {self.baseline.seconds:.1f}s: {self.baseline.summary}", highlight=False
            )
        by_name: dict[str, PlantResult] = {
            name: PlantResult(next(p for p in self.plants if p.name == name), "broken-patch", detail=line)
            for name, line in refused.items()
        }
        self._run_all(snapshot, runnable, by_name)
        self.results = [by_name[p.name] for p in self.plants]
        return 0 if self.ok else 1

    def _run_all(self, snapshot: Path, plants: list[Plant], out: dict[str, PlantResult]) -> None:
        if not plants:
            return
        console = self.console
        progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="selfcheck")
        futures: dict[Future[PlantResult], Plant] = {}
        try:
            with progress:
                task = progress.add_task("selfcheck", total=len(plants))
                for index, plant in enumerate(plants):
                    futures[pool.submit(self._run_plant, snapshot, plant, index)] = plant
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                    for future in done:
                        result = future.result()
                        out[result.plant.name] = result
                        progress.advance(task)
                        style = _STYLE.get(result.outcome, "")
                        console.print(
                            f"[{style}]{result.outcome:>12}[/]  {result.plant.name}  "
                            f"({caught_by_text(result.caught_by, limit=2)}; {result.seconds:.0f}s)",
                            highlight=False,
                        )
                    progress.update(task, description=f"selfcheck ({min(len(pending), self.jobs)} running)")
        except KeyboardInterrupt:
            with self._lock:
                for proc in self._procs:
                    _kill(proc)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------ summary
    @property
    def expected_caught(self) -> list[PlantResult]:
        return [r for r in self.results if r.plant.expected == "caught"]

    @property
    def caught(self) -> list[PlantResult]:
        return [r for r in self.results if r.outcome == "caught"]

    @property
    def survivors(self) -> list[PlantResult]:
        return [r for r in self.results if r.outcome == "survived"]

    @property
    def ok(self) -> bool:
        return all(r.outcome in ("caught", "inert-ok") for r in self.results)

    def catch_rate(self) -> float | None:
        total = len(self.expected_caught)
        return len(self.caught) / total if total else None

    def to_dict(self) -> dict[str, Any]:
        counts = {o: sum(r.outcome == o for r in self.results) for o in OUTCOMES}
        rate = self.catch_rate()
        return {
            "project": str(self.source),
            "run_args": self.run_args,
            "jobs": self.jobs,
            "wall_seconds": round(self.wall_seconds, 1),
            "baseline": None
            if self.baseline is None
            else {
                "green": self.baseline.green,
                "seconds": round(self.baseline.seconds, 2),
                "summary": self.baseline.summary,
                "failed": self.baseline.failed,
            },
            "plants": [r.to_dict() for r in self.results],
            "counts": counts,
            "catch_rate": {
                "caught": len(self.caught),
                "expected_caught": len(self.expected_caught),
                "rate": None if rate is None else round(rate, 4),
            },
            "survivors": [{"name": r.plant.name, "needs": r.plant.needs} for r in self.survivors],
            "false_alarms": [r.plant.name for r in self.results if r.outcome == "FALSE ALARM"],
            "ok": self.ok,
        }

    def print_table(self) -> None:
        console = self.console
        table = Table(title="parity selfcheck")
        for column in ("plant", "category", "side", "expected", "outcome", "caught by", "time"):
            table.add_column(column, overflow="fold", no_wrap=column in ("outcome", "time"))
        for r in self.results:
            table.add_row(
                r.plant.name,
                r.plant.category,
                r.plant.side,
                r.plant.expected,
                Text(r.outcome, style=_STYLE.get(r.outcome, "")),
                caught_by_text(r.caught_by),
                f"{r.seconds:.0f}s",
            )
        console.print(table)
        for r in self.results:
            if r.outcome in ("broken-patch", "error", "FALSE ALARM"):
                console.rule(f"[red]{r.outcome}: {r.plant.name}", style="red")
                text = r.detail
                if r.outcome == "FALSE ALARM":
                    text = f"{r.plant.models}\nred cases: {', '.join(r.caught_by)}\n{r.detail}"
                console.print(text, markup=False, highlight=False)
        rate = self.catch_rate()
        if rate is not None:
            style = "bold green" if not self.survivors else "bold yellow"
            console.print(
                f"[{style}]catch rate: {len(self.caught)}/{len(self.expected_caught)} "
                f"({rate:.1%}) of the plants expected to be caught[/]"
            )
        inert = [r for r in self.results if r.plant.expected == "inert"]
        if inert:
            quiet = sum(r.outcome == "inert-ok" for r in inert)
            console.print(f"inert plants that stayed green: {quiet}/{len(inert)}")
        if self.survivors:
            console.print(f"[bold yellow]{len(self.survivors)} survivor(s)[/] (what would catch them):")
            for r in self.survivors:
                console.print(f"  {r.plant.name}: {r.plant.needs}", highlight=False)
        console.print(
            f"wall time {self.wall_seconds:.0f}s with {self.jobs} job(s)"
            + (f", baseline {self.baseline.seconds:.0f}s" if self.baseline else ""),
            highlight=False,
        )

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path


# ----------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``selfcheck`` subcommand's options (``parity.cli`` builds the parser)."""
    parser.add_argument(
        "--plant",
        dest="plants",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME",
        help="run only these plants (repeatable; default: the whole catalogue)",
    )
    parser.add_argument(
        "--jobs", "-j", type=int, default=None, help=f"plants run in parallel (default: {default_jobs()})"
    )
    parser.add_argument("--list", action="store_true", help="print the catalogue and exit")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="run each plant only against the cases that claim it (parity/tools/claims.py); for CI",
    )
    parser.add_argument(
        "--json",
        dest="json_path",
        type=Path,
        default=None,
        help="where the result table goes as JSON (default: parity/reports/selfcheck.json)",
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds one suite run may take (default 600)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the planted copies (their path is printed)")
    parser.add_argument(
        "run_args",
        nargs="*",
        metavar="-- RUN_ARGS",
        help="after --: arguments for every `python -m parity run` (e.g. -- --tag optimizer)",
    )


def _print_catalogue(console: Console, plants: Sequence[Plant]) -> None:
    table = Table(title=f"planted divergences ({len(plants)})")
    for column in ("plant", "category", "side", "expected", "file", "models"):
        table.add_column(column, overflow="fold")
    for p in plants:
        table.add_row(p.name, p.category, p.side, p.expected, p.file, p.models)
    console.print(table)


def main(args: argparse.Namespace, console: Console) -> int:
    """Run ``python -m parity selfcheck`` from parsed arguments; returns the exit status."""
    try:
        plants = select(args.plants, PLANTS)
    except KeyError as exc:
        console.print(f"[bold red]error:[/] {exc.args[0]}", highlight=False)
        return 2
    if args.list:
        _print_catalogue(console, plants)
        return 0
    if args.jobs is not None and args.jobs < 1:
        console.print("[bold red]error:[/] --jobs must be >= 1", highlight=False)
        return 2
    if any(a == "--report-dir" or a.startswith("--report-dir=") for a in args.run_args):
        console.print(
            "[bold red]error:[/] --report-dir is the self-check's own (one per run); leave it out of the run args",
            highlight=False,
        )
        return 2
    check = SelfCheck(
        plants,
        jobs=args.jobs,
        run_args=args.run_args,
        timeout=args.timeout,
        keep=args.keep,
        console=console,
    )
    status = check.run()
    if status == 2:  # the baseline refused: no table to show
        return status
    check.print_table()
    json_path = args.json_path or (check.source / "parity" / "reports" / "selfcheck.json")
    console.print(f"result table as JSON: {check.write_json(json_path)}", highlight=False)
    return status
