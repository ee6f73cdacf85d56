"""Run the cases of one ``parity run`` in several forked worker processes.

Cases that read one cached run (same ``Case.share``: every artifact of one trainer run, say) go to
the same worker as one unit, so the run happens once; shared groups start first (they are the
long ones), then the single cases, each worker taking the next unit when it is free. Workers are
forked after the parent has loaded the framework and the registry, so starting one costs nothing
and every worker runs the same code under the same CPU profile (one intra-op thread each).

Outcomes come back in registry order whatever the schedule; each case's result does not depend
on the worker that ran it (every case is seeded on its own, and a shared run seeds itself).

Each worker leads a process group of its own, so that the processes a case starts (ranks, a
launcher) go with it: when the run stops early (SIGTERM or Ctrl-C to the harness, a lost
worker), ``end_process`` ends each worker's whole group, and nothing is left running.
"""

from __future__ import annotations

import dataclasses
import gc
import multiprocessing as mp
import os
import queue
import signal
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from parity import scratch
from parity.cases import Case
from parity.engine import Engine, Outcome

__all__ = ["default_workers", "end_process", "run_cases", "schedule"]

Job = tuple[Case, str]


def default_workers() -> int:
    """One worker per usable core (``PARITY_JOBS`` overrides), at most 8."""
    value = os.environ.get("PARITY_JOBS", "").strip()
    if value:
        try:
            count = int(value)
        except ValueError:
            raise ValueError(f"PARITY_JOBS={value!r}: expected a positive integer") from None
        if count < 1:
            raise ValueError(f"PARITY_JOBS={value!r}: expected a positive integer")
        return count
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def schedule(jobs: Sequence[Job]) -> list[list[int]]:
    """Units of work as lists of job indices: one per ``(share, backend)``, then one per other job."""
    shared: dict[tuple[str, str], list[int]] = {}
    single: list[list[int]] = []
    for index, (case, backend) in enumerate(jobs):
        if case.share:
            shared.setdefault((case.share, backend), []).append(index)
        else:
            single.append([index])
    return [*shared.values(), *single]


def run_cases(
    engine: Engine,
    jobs: Sequence[Job],
    workers: int,
    *,
    on_start: Callable[[Job], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    hypothesis_blob: str | None = None,
) -> list[Outcome]:
    """Every job's outcome, in the order of ``jobs``; in this process when one worker is enough.

    Temporary files of every worker (and of the processes they start) go into this process's
    scratch folder (``parity.scratch``), which it removes when it exits; a warning logged by many
    cases prints once per run (``say_once_per_run``).
    """
    from hyper_parallel.platform.quiet import say_once_per_run

    say_once_per_run(scratch.install() / "warned")  # a warning of many cases prints once per run
    units = schedule(jobs)
    workers = min(workers, len(units))
    if workers <= 1 or not hasattr(os, "fork"):
        serial: list[Outcome] = []
        for case, backend in jobs:
            if on_start is not None:
                on_start((case, backend))
            outcome = engine.check(case, backend, hypothesis_blob=hypothesis_blob)
            if on_done is not None:
                on_done(outcome)
            serial.append(outcome)
        return serial

    context = mp.get_context("fork")
    tasks: Any = context.SimpleQueue()
    results: Any = context.Queue()
    for unit in units:
        tasks.put(unit)
    for _ in range(workers):
        tasks.put(None)
    # Nothing the children inherit may be collected there (a framework object's destructor can
    # wait for threads that exist only in this process).
    gc.collect()
    gc.freeze()
    # Not daemonic: a case may start processes of its own (the MindSpore profiler does), which a
    # daemonic process may not. ``_collect`` ends them when the run stops early.
    procs = [
        context.Process(target=_worker, args=(engine, list(jobs), tasks, results, hypothesis_blob))
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
        assert proc.pid is not None, "a started process has a pid"
        _own_group(proc.pid)  # here too, so that no signal finds the worker between fork and its own call
    gc.unfreeze()
    try:
        outcomes = _collect(engine, jobs, procs, results, workers, on_start, on_done)
    finally:
        for proc in procs:  # a worker that is gone may have left what it started: its group goes too
            end_process(proc)
        for proc in procs:
            proc.join(timeout=5)
    return outcomes


def _own_group(pid: int) -> None:
    try:
        os.setpgid(pid, pid)
    except OSError:  # already its own (or already gone)
        pass


def end_process(proc: Any, sig: int = signal.SIGTERM) -> None:
    """End a worker and every process in its group (what its cases started); SIGKILL if it lingers."""
    for attempt in (sig, signal.SIGKILL):
        try:
            os.killpg(proc.pid, attempt)
        except (ProcessLookupError, PermissionError):  # no such group: the worker alone, if alive
            if proc.is_alive():
                try:
                    os.kill(proc.pid, attempt)
                except ProcessLookupError:
                    pass
        proc.join(timeout=5)
        if not proc.is_alive() and attempt == sig:
            try:  # the worker is gone; make sure nothing it started stays behind
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            return


def _collect(
    engine: Engine,
    jobs: Sequence[Job],
    procs: list[Any],
    results: Any,
    workers: int,
    on_start: Callable[[Job], None] | None,
    on_done: Callable[[Outcome], None] | None,
) -> list[Outcome]:
    """The outcomes the workers send back, in the order of ``jobs`` (an error for a lost one)."""
    outcomes: list[Outcome | None] = [None] * len(jobs)
    remaining, alive = len(jobs), workers
    while remaining and alive:
        try:
            kind, index, payload = results.get(timeout=1.0)
        except queue.Empty:
            alive = sum(p.is_alive() for p in procs)  # a killed worker never says goodbye
            continue
        if kind == "exit":
            alive -= 1
        elif kind == "start":
            if on_start is not None:
                on_start(jobs[index])
        else:
            done = _restore(payload, jobs[index][0])
            outcomes[index] = done
            remaining -= 1
            if on_done is not None:
                on_done(done)
    for proc in procs:
        proc.join(timeout=30)
    for index, slot in enumerate(outcomes):
        if slot is None:  # a worker died under this case (killed, out of memory)
            case, backend = jobs[index]
            outcomes[index] = Outcome(
                case=case,
                backend=backend,
                platform=engine.platform_key(),
                status="error",
                message=f"PARITY ERROR  case={case.id}  backend={backend}: its worker process died "
                f"(exit codes {[p.exitcode for p in procs]}); rerun it alone with --id {case.id}",
            )
    return outcomes  # type: ignore[return-value]


def _worker(engine: Engine, jobs: list[Job], tasks: Any, results: Any, hypothesis_blob: str | None) -> None:
    # A group of its own (its cases' processes join it), and SIGTERM ends it: the parent's handler,
    # inherited through fork, is for the parent only.
    _own_group(0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        while (unit := tasks.get()) is not None:
            for index in unit:
                results.put(("start", index, None))
                case, backend = jobs[index]
                try:
                    outcome = engine.check(case, backend, hypothesis_blob=hypothesis_blob)
                except BaseException:  # the engine catches case errors; this is a bug
                    outcome = Outcome(
                        case=case,
                        backend=backend,
                        platform=engine.platform_key(),
                        status="error",
                        message=f"PARITY ERROR  case={case.id}  backend={backend}:\n{traceback.format_exc()}",
                    )
                results.put(("done", index, _portable(outcome)))
    finally:
        results.put(("exit", -1, None))


def _portable(outcome: Outcome) -> dict[str, Any]:
    """The outcome without its case (producers need not pickle): the parent puts its own back."""
    fields = {f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome) if f.name != "case"}
    return fields


def _restore(fields: dict[str, Any], case: Case) -> Outcome:
    return Outcome(case=case, **fields)
