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
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
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

__all__ = ["QuickPlan", "QuickResult", "claims_of", "main", "make_plan", "misses"]

BACKEND = "torch"  # the backend every CI machine has


def claims_of(case: Case, claims: Mapping[str, Sequence[str]] = CLAIMS) -> tuple[str, ...]:
    """The plants ``case`` claims: its id's entry, else its name's (every case of a grid)."""
    return tuple(claims.get(case.id, claims.get(case.name, ())))


@dataclass
class QuickPlan:
    """Which cases each plant runs against, and what is wrong with the claims table."""

    cases_of: dict[str, list[str]] = field(default_factory=dict)  # plant name -> case ids
    problems: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)  # cases no plant is known to turn red (yet)


def make_plan(
    cases: Iterable[Case],
    plants: Sequence[Plant] = PLANTS,
    claims: Mapping[str, Sequence[str]] = CLAIMS,
    unmeasured: Collection[str] = UNMEASURED,
) -> QuickPlan:
    """Group the torch cases by claimed plant; a case without a claim (unless listed in
    ``unmeasured``, the known debt), a claim naming no case or an unknown plant, and a claim of an
    inert plant are problems."""
    plan = QuickPlan()
    by_name = {p.name: p for p in plants}
    cases = list(cases)
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
        if not claimed:
            plan.problems.append(f"case {case.id} claims no plant (add it to parity/tools/claims.py)")
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


def _check_one(plant: Plant, cases: list[str], *, source: Path, workdir: Path, timeout: float) -> QuickResult:
    start = time.perf_counter()
    result = QuickResult(plant.name, cases)
    folder = workdir / plant.name
    try:
        copy = copy_project(source, folder / "project")
        plant.apply(copy)
        ids = [arg for case in cases for arg in ("--id", case)]
        result.run = run_suite(copy, ["--backend", BACKEND, *ids], timeout=timeout, work=folder)
    except PlantError as exc:
        result.error = str(exc)
    except OSError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    result.seconds = time.perf_counter() - start
    return result


def run_quick(
    plan: QuickPlan,
    *,
    console: Console,
    plants: Sequence[Plant] = PLANTS,
    source: Path | None = None,
    jobs: int | None = None,
    timeout: float = 300.0,
    keep: bool = False,
) -> int:
    """Run the plan; 0 when every claimed case went red under its plant, else 1."""
    start = time.perf_counter()
    lines = list(plan.problems)
    by_name = {p.name: p for p in plants}
    source = Path(source) if source is not None else project_root()
    jobs = jobs or default_jobs()
    n_cases = len({c for ids in plan.cases_of.values() for c in ids})
    console.print(
        f"selfcheck --quick: {len(plan.cases_of)} plant(s) against the {n_cases} case(s) that claim them, "
        f"{jobs} job(s), backend {BACKEND}"
        + (
            f"; {len(plan.unmeasured)} case(s) still without a measured plant (UNMEASURED)"
            if plan.unmeasured
            else ""
        ),
        highlight=False,
    )
    workdir = Path(tempfile.mkdtemp(prefix="parity-quick-"))
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [
                pool.submit(_check_one, by_name[name], ids, source=source, workdir=workdir, timeout=timeout)
                for name, ids in sorted(plan.cases_of.items(), key=lambda item: -len(item[1]))
            ]
            for future in as_completed(futures):
                result = future.result()
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
