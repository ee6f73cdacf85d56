"""``python -m parity selfcheck --quick``: every case proves, in CI, that it still has power.

Each registered case claims at least one plant it must catch (``parity.tools.claims.CLAIMS``).
The quick self-check applies each claimed plant once, in a copy of the project of its own, and
runs there only the cases that claim it (one ``python -m parity run --id ...`` per plant, plants
in parallel). A claimed case that stays green under its plant has lost its power (both producers
now share the code, a golden no longer reaches the artifact ...): one line names the case and the
plant, and the exit status is 1. A case that claims no plant, or a claim naming an unknown plant
or case, fails the same way: the table must keep up with the suite.

The full self-check (``python -m parity selfcheck``) still runs every plant against the whole
suite; this one runs each plant against its claimants only, so it fits a CI budget. Without a
baseline run: a case that is red with no plant is the ordinary suite's news, and ``.ci/run``
runs that first.

Scheduling: a plant's claimants are cut into chunks of about ``CHUNK_COST`` seconds (cases that
share one training run stay together: ``Case.share``), and chunks start longest first, so one plant
carrying many end-to-end cases no longer runs alone at the end while the other cores idle. The
chunks of a plant share its one planted copy.

Warm starts: each run is forked from one helper interpreter that already imported torch,
transformers and the other third-party libraries (``parity.tools.warm_start``), which saves about
5 s of imports per run. ``PARITY_SELFCHECK_WARM=0`` starts a fresh interpreter per run instead.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from parity.cases import Case
from parity.tools.claims import CLAIMS, UNMEASURED
from parity.tools.plants import PLANTS, Plant, PlantError
from parity.tools.selfcheck_runner import RunResult, copy_project, default_jobs, project_root, run_suite
from parity.tools.warm_start import WarmStarter
from parity.tools.warm_start import enabled as warm_enabled

__all__ = ["Chunk", "QuickPlan", "QuickResult", "chunks_of", "claims_of", "main", "make_plan", "misses"]

BACKEND = "torch"  # the backend every CI machine has

# Rough seconds per case (a training run shared by several cases counts once), by kind; only the
# order and size of chunks depend on it, never a verdict.
KIND_COST = {"e2e_explore": 6.0, "e2e": 5.0, "train_curve": 3.0}
DEFAULT_COST = 0.5
CHUNK_COST = 30.0


def claims_of(case: Case, claims: Mapping[str, Sequence[str]] = CLAIMS) -> tuple[str, ...]:
    """The plants ``case`` claims: its id's entry, else its name's (every case of a grid)."""
    return tuple(claims.get(case.id, claims.get(case.name, ())))


@dataclass
class QuickPlan:
    """Which cases each plant runs against, and what is wrong with the claims table."""

    cases_of: dict[str, list[str]] = field(default_factory=dict)  # plant name -> case ids
    problems: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)  # cases no plant is known to turn red (yet)
    by_mutants: list[str] = field(default_factory=list)  # no plant claim; killed a recorded mutant


def make_plan(
    cases: Iterable[Case],
    plants: Sequence[Plant] = PLANTS,
    claims: Mapping[str, Sequence[str]] = CLAIMS,
    unmeasured: Collection[str] = UNMEASURED,
    kills: Mapping[str, Sequence[str]] | None = None,
) -> QuickPlan:
    """Group the torch cases by claimed plant. A case that claims no plant is measured by the
    mutation run when it (or another cell of its grid) killed a recorded mutant (``kills``:
    ``parity.tools.mutation.kills``);
    one with neither (unless listed in ``unmeasured``, the known debt), a claim naming no case or
    an unknown plant, and a claim of an inert plant are problems."""
    if kills is None:
        from parity.tools.mutation import kills as recorded

        kills = recorded.load()
    plan = QuickPlan()
    by_name = {p.name: p for p in plants}
    cases = list(cases)
    # A grid's cells share their producer: a kill by any cell vouches for the grid, as a claim by
    # the grid's name does.
    killed_names = {c.name for c in cases if kills.get(c.id)}
    keys = {c.id for c in cases} | {c.name for c in cases}
    for key in sorted(set(claims) - keys):
        plan.problems.append(f"claim {key!r} names no registered case (id or name)")
    for key in sorted(set(unmeasured) - keys):
        plan.problems.append(f"UNMEASURED entry {key!r} names no registered case (id or name)")
    for case in cases:
        if BACKEND not in case.backends:
            continue
        claimed = claims_of(case, claims)
        if not claimed and (case.id in unmeasured or case.name in unmeasured):
            plan.unmeasured.append(case.id)
            continue
        if claimed and (case.id in unmeasured or case.name in unmeasured):
            plan.problems.append(
                f"case {case.id} claims a plant and is listed UNMEASURED: drop it from UNMEASURED"
            )
        if not claimed and (kills.get(case.id) or case.name in killed_names):
            plan.by_mutants.append(case.id)
            continue
        if not claimed:
            plan.problems.append(
                f"case {case.id} claims no plant and killed no recorded mutant "
                "(add a claim to parity/tools/claims.py, or a kill with `parity mutation`)"
            )
        for name in claimed:
            plant = by_name.get(name)
            if plant is None:
                plan.problems.append(f"case {case.id} claims unknown plant {name!r}")
            elif plant.expected != "caught":
                plan.problems.append(
                    f"case {case.id} claims plant {name}, which is inert (it must change nothing)"
                )
            else:
                plan.cases_of.setdefault(name, []).append(case.id)
    return plan


@dataclass
class QuickResult:
    plant: str
    cases: list[str]
    run: RunResult | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass
class Chunk:
    """Some of one plant's claimants, run by one ``parity run`` in the plant's copy."""

    plant: str
    index: int
    cases: list[str]
    cost: float


def chunks_of(
    plant: str, case_ids: Sequence[str], cases: Mapping[str, Case], limit: float = CHUNK_COST
) -> list[Chunk]:
    """``case_ids`` cut into chunks of cost <= ``limit`` (a single larger unit is a chunk alone);
    the cases of one shared run (``Case.share``) are one unit, in first-seen order."""
    units: dict[str, list[str]] = {}
    for case_id in case_ids:
        case = cases.get(case_id)
        key = (case.share if case is not None else None) or case_id
        units.setdefault(key, []).append(case_id)
    out: list[Chunk] = []
    current: list[str] = []
    cost = 0.0
    for ids in units.values():
        unit = max(_cost(cases.get(i)) for i in ids)
        if current and cost + unit > limit:
            out.append(Chunk(plant, len(out), current, cost))
            current, cost = [], 0.0
        current = [*current, *ids]
        cost += unit
    if current:
        out.append(Chunk(plant, len(out), current, cost))
    return out


def _cost(case: Case | None) -> float:
    return KIND_COST.get(case.kind, DEFAULT_COST) if case is not None else DEFAULT_COST


def misses(result: QuickResult) -> list[str]:
    """One line per claimed case the plant left green (or one for a plant that did not run)."""
    if result.error is not None:
        return [f"plant {result.plant}: {result.error} ({len(result.cases)} claimed case(s) unchecked)"]
    assert result.run is not None
    if result.run.error is not None:
        return [f"plant {result.plant}: the run gave no result: {result.run.error}"]
    red = set(result.run.failed)
    return [
        f"case {case} stayed green under plant {result.plant}" for case in result.cases if case not in red
    ]


class _PlantedCopy:
    """One plant's copy of the project, made (and planted) by whichever of its chunks runs first."""

    def __init__(self, plant: Plant, folder: Path, source: Path) -> None:
        self.plant, self.folder, self.source = plant, folder, source
        self._lock = threading.Lock()
        self._copy: Path | None = None
        self._error: str | None = None

    def get(self) -> Path:
        with self._lock:
            if self._copy is None and self._error is None:
                try:
                    copy = copy_project(self.source, self.folder / "project")
                    self.plant.apply(copy)
                    self._copy = copy
                except PlantError as exc:
                    self._error = str(exc)
                except OSError as exc:
                    self._error = f"{type(exc).__name__}: {exc}"
            if self._error is not None:
                raise _CopyFailed(self._error)
            assert self._copy is not None
            return self._copy


class _CopyFailed(Exception):
    pass


def _run_chunk(
    chunk: Chunk, planted: _PlantedCopy, *, timeout: float, warm: WarmStarter | None = None
) -> tuple[Chunk, RunResult | None, str | None, float]:
    start = time.perf_counter()
    try:
        copy = planted.get()
    except _CopyFailed as exc:
        return chunk, None, str(exc), time.perf_counter() - start
    ids = [arg for case in chunk.cases for arg in ("--id", case)]
    work = planted.folder / f"chunk{chunk.index}"
    work.mkdir(parents=True, exist_ok=True)
    try:
        run = run_suite(copy, ["--backend", BACKEND, *ids], timeout=timeout, work=work, warm=warm)
    except OSError as exc:
        return chunk, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - start
    return chunk, run, None, time.perf_counter() - start


def _merge(result: QuickResult, run: RunResult | None, error: str | None, seconds: float) -> None:
    """Fold one chunk's run into its plant's result (the first error wins; failed ids add up)."""
    result.seconds += seconds
    if result.error is not None:
        return
    if error is not None:
        result.error = error
        return
    assert run is not None
    if result.run is None:
        result.run = RunResult(rc=0, seconds=0.0)
    if run.error is not None and result.run.error is None:
        result.run.error = run.error
    result.run.failed = [*result.run.failed, *run.failed]
    result.run.seconds += run.seconds
    if run.rc != 0:
        result.run.rc = run.rc


def run_quick(
    plan: QuickPlan,
    *,
    console: Console,
    plants: Sequence[Plant] = PLANTS,
    source: Path | None = None,
    jobs: int | None = None,
    timeout: float = 300.0,
    keep: bool = False,
    cases: Mapping[str, Case] | None = None,
) -> int:
    """Run the plan; 0 when every claimed case went red under its plant, else 1. ``cases`` (id ->
    case, default the registry) only sizes the chunks."""
    start = time.perf_counter()
    lines = list(plan.problems)
    by_name = {p.name: p for p in plants}
    source = Path(source) if source is not None else project_root()
    jobs = jobs or default_jobs()
    if cases is None:
        from parity.suites import REGISTRY

        cases = {c.id: c for c in REGISTRY}
    chunks = [c for name, ids in plan.cases_of.items() for c in chunks_of(name, ids, cases)]
    chunks.sort(key=lambda c: (-c.cost, c.plant, c.index))  # longest first: the cores finish together
    n_cases = len({c for ids in plan.cases_of.values() for c in ids})
    console.print(
        f"selfcheck --quick: {len(plan.cases_of)} plant(s) against the {n_cases} case(s) that claim them "
        f"({len(chunks)} run(s)), {jobs} job(s), backend {BACKEND}"
        + (
            f"; {len(plan.by_mutants)} case(s) vouched for by their recorded mutant kills"
            if plan.by_mutants
            else ""
        )
        + (
            f"; {len(plan.unmeasured)} case(s) still without a measured plant (UNMEASURED)"
            if plan.unmeasured
            else ""
        ),
        highlight=False,
    )
    workdir = Path(tempfile.mkdtemp(prefix="parity-quick-"))
    results = {name: QuickResult(name, list(ids)) for name, ids in plan.cases_of.items()}
    pending = {name: 0 for name in plan.cases_of}
    for chunk in chunks:
        pending[chunk.plant] += 1
    copies = {name: _PlantedCopy(by_name[name], workdir / name, source) for name in plan.cases_of}
    try:
        warm_cm = WarmStarter() if warm_enabled() else contextlib.nullcontext(None)
        with warm_cm as warm, ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [
                pool.submit(_run_chunk, c, copies[c.plant], timeout=timeout, warm=warm) for c in chunks
            ]
            for future in as_completed(futures):
                chunk, run, error, seconds = future.result()
                result = results[chunk.plant]
                _merge(result, run, error, seconds)
                pending[chunk.plant] -= 1
                if pending[chunk.plant]:
                    continue
                missed = misses(result)
                status = "[green]ok[/]" if not missed else f"[bold red]{len(missed)} miss(es)[/]"
                console.print(
                    f"  {status} plant {result.plant}: {len(result.cases)} case(s), {result.seconds:.1f}s",
                    highlight=False,
                )
                lines.extend(missed)
    finally:
        if keep:
            console.print(f"planted copies kept in {workdir}", highlight=False)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    for line in lines:
        console.print(line, markup=False, highlight=False)
    seconds = time.perf_counter() - start
    verdict = "every claimed case caught its plant" if not lines else f"{len(lines)} problem(s)"
    console.print(f"selfcheck --quick: {verdict} in {seconds:.0f}s", highlight=False)
    return 0 if not lines else 1


def main(args: argparse.Namespace, console: Console) -> int:
    """``python -m parity selfcheck --quick`` from parsed arguments (``--plant`` narrows the plants)."""
    from parity.suites import REGISTRY

    if args.jobs is not None and args.jobs < 1:
        console.print("[bold red]error:[/] --jobs must be >= 1", highlight=False)
        return 2
    plan = make_plan(REGISTRY)
    if args.plants:
        unknown = sorted(set(args.plants) - {p.name for p in PLANTS})
        if unknown:
            console.print(f"[bold red]error:[/] unknown plant(s): {', '.join(unknown)}", highlight=False)
            return 2
        plan.cases_of = {k: v for k, v in plan.cases_of.items() if k in args.plants}
    return run_quick(plan, console=console, jobs=args.jobs, timeout=args.timeout, keep=args.keep)
