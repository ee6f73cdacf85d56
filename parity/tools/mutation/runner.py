"""``python -m parity mutation``: run mutmut's mutants against the parity cases that execute them.

The steps, each cached under ``.mutation/`` by the content of the repository's files:

1. **Mutants** (:mod:`parity.tools.mutation.mutants`): a copy of the repository with every product
   function rewritten by mutmut (its trampolines and operators), and one record per mutant.
2. **Coverage map** (:mod:`parity.tools.mutation.coverage`): every torch case group run once in the
   mutated tree under coverage.py; which product lines each group runs, in every process, and
   how long it takes. A group that is red here can kill nothing and is left out.
3. **Forced fail**: every mutated function raising at entry must turn each selected group red
   (``MUTANT_UNDER_TEST=fail``); a group that stays green would hide every mutant it is chosen for.
4. **Mutants**, each in a process forked from one warm interpreter that has imported the mutated
   tree and registered the cases (mutants of code that runs at import get a fresh interpreter),
   running only the groups that execute the statement it changes, cheapest first, until one
   turns red. A mutant of a statement no case runs is ``not_covered`` without a run.

The verdicts (:mod:`parity.tools.mutation.score`) go to the terminal, to ``mutation.json`` in the report
folder, and to ``parity report --html``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from parity.tools.mutation import changed as changed_mod
from parity.tools.mutation import coverage, kills, score
from parity.tools.mutation.child import CHILD_CODE, child_env
from parity.tools.mutation.mutants import Mutant
from parity.tools.mutation.workspace import Workspace

__all__ = ["Verdict", "add_arguments", "main", "run_mutants"]

DEFAULT_REPORT_DIR = Path("parity/reports")
# Per mutant: this many times the map's seconds for its groups, plus the constant (fork, load).
TIMEOUT_FACTOR = 3.0
TIMEOUT_CONSTANT = 30.0


@dataclass
class Verdict:
    """One mutant's result: killed | survived | not_covered | timeout | harness_error."""

    mutant: Mutant
    status: str
    case: str | None = None
    evidence: str = ""
    seconds: float = 0.0
    groups: int = 0  # groups run
    covering: int = 0  # groups that run the mutated statement (more than run when --max-groups cut it)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.mutant.to_dict(),
            "status": self.status,
            "case": self.case,
            "evidence": self.evidence,
            "seconds": round(self.seconds, 3),
            "groups": self.groups,
            "covering": self.covering,
        }


@dataclass
class _Launcher:
    """Starts one child per spec: forked from the warm interpreter, or fresh when asked."""

    tree: Path
    env: dict[str, str]
    logs: Path
    starter: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _live: set[Any] = field(default_factory=set)  # children in flight: killed by close()
    _closed: bool = False

    def close(self) -> None:
        """Kill the children still running (a stopped run must not leave mutants running)."""
        with self._lock:
            self._closed = True
            live, self._live = list(self._live), set()
        for child in live:
            with contextlib.suppress(OSError):
                if isinstance(child, subprocess.Popen):
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
                else:
                    child.kill()
                    child.wait(30)

    def _track(self, child: Any) -> None:
        with self._lock:
            if self._closed:
                raise SystemExit(143)  # the run is stopping: no new child
            self._live.add(child)

    def _untrack(self, child: Any) -> None:
        with self._lock:
            self._live.discard(child)

    def run(self, spec: dict[str, Any], *, fresh: bool, timeout: float) -> tuple[dict[str, Any] | None, bool]:
        """(verdict or None, timed_out)."""
        from parity.tools.warm_start import WarmStartError

        spec_path = Path(spec["out"]).with_suffix(".spec.json")
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        log = Path(spec["out"]).with_suffix(".log")
        env = {**self.env, "MUTANT_UNDER_TEST": spec["mutant"]}
        if not fresh and self.starter is not None:
            try:
                child = self.starter.launch(self.tree, env, [str(spec_path)], log, code=CHILD_CODE)
            except WarmStartError:
                fresh = True
            else:
                self._track(child)
                try:
                    status = child.wait(timeout)
                    if status is None:
                        child.kill()
                        child.wait(30)
                        return None, True
                finally:
                    self._untrack(child)
        if fresh:
            with open(log, "wb") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-c", CHILD_CODE, str(spec_path)],
                    cwd=self.tree,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self._track(proc)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
                return None, True
            finally:
                self._untrack(proc)
        out_path = Path(spec["out"])
        if not out_path.exists():
            return None, False
        return json.loads(out_path.read_text(encoding="utf-8")), False


def warm_starter(tree: Path, env: dict[str, str], preload: Sequence[str] = ()) -> Any:
    """The warm interpreter: the third-party modules, then every module the coverage map's run
    imported (the mutated tree's product and cases included), so that a forked mutant starts with
    nothing left to import or compile. Module-level code is never mutated, so importing the tree
    here chooses no mutant."""
    from parity.tools.warm_start import ZYGOTE_MODULES, WarmStarter

    modules = (*ZYGOTE_MODULES, "mutmut.mutation.trampoline", "parity.tools.mutation.child", "parity.suites")
    return WarmStarter((*modules, *preload), forbidden=(), home=tree, env=env)


def run_mutants(
    mutants: Sequence[Mutant],
    cmap: coverage.CoverageMap,
    launcher: _Launcher,
    *,
    jobs: int,
    on_verdict: Callable[[Verdict], None],
    max_groups: int | None = None,
    deadline: float | None = None,
    only_cases: Sequence[str] = (),
) -> list[Verdict]:
    """Run each mutant against its groups on ``jobs`` threads; ``on_verdict`` sees each verdict.

    Past ``deadline`` (``time.monotonic()``) no mutant is started: the verdicts so far are returned
    (in drawn order, so a sample stopped there is still uniform)."""
    todo: queue.Queue[Mutant] = queue.Queue()
    verdicts: list[Verdict] = []
    killers = Killers(cmap)
    lock = threading.Lock()
    for m in mutants:
        todo.put(m)

    def work() -> None:
        while True:
            if deadline is not None and time.monotonic() > deadline:
                return
            try:
                m = todo.get_nowait()
            except queue.Empty:
                return
            verdict = _run_one(m, cmap, launcher, killers, max_groups, only_cases)
            with lock:
                verdicts.append(verdict)
                if verdict.status == "killed" and verdict.case:
                    killers.record(m, verdict.case)
                on_verdict(verdict)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return verdicts


class Killers:
    """Which groups killed mutants so far, per function and per file: a mutant tries those first.

    Mutants of one statement or function tend to die in the same group; a group that killed
    none of them goes after the ones that did, cheapest first among equals."""

    def __init__(
        self,
        cmap: coverage.CoverageMap,
        tiers: dict[str, str] | None = None,
        recorded: dict[str, list[str]] | None = None,
    ) -> None:
        self.label_of = {case: g.label for g in cmap.groups for case in g.cases}
        self.tier_of = cmap.tiers() if tiers is None else tiers
        # Kills per second of each group in the recorded runs (kills.json): a group that killed
        # many mutants before is tried before one as cheap that never killed any.
        recorded = kills.load() if recorded is None else recorded
        self.rate = {
            g.label: sum(len(recorded.get(case, ())) for case in g.cases) / max(g.seconds, 0.1)
            for g in cmap.groups
        }
        # The groups that killed mutants of each function in the recorded runs: a mutant of that
        # function tries them right after this run's own killers. A function's refusals die in
        # the sweep that words them, which a capped run would otherwise meet only by chance
        # among the hundred families that also run the function.
        self.recorded_by_function: dict[str, dict[str, int]] = {}
        for case, keys in recorded.items():
            label = self.label_of.get(case)
            if label is None:
                continue
            for key in keys:
                counts = self.recorded_by_function.setdefault(key.rsplit(":", 1)[0], {})
                counts[label] = counts.get(label, 0) + 1
        self.by_function: dict[str, dict[str, int]] = {}
        self.by_file: dict[str, dict[str, int]] = {}
        self.lock = threading.Lock()

    def record(self, m: Mutant, case: str) -> None:
        label = self.label_of.get(case)
        if label is None:
            return
        with self.lock:
            for table, key in ((self.by_function, m.function), (self.by_file, m.path)):
                counts = table.setdefault(key, {})
                counts[label] = counts.get(label, 0) + 1

    def order(self, m: Mutant, groups: list[coverage.Group]) -> list[coverage.Group]:
        """Killers of its neighbours first, then the groups that killed its function's mutants in the
        recorded runs; then one group of each family (a case name's grid) before
        a second of any, the tiers alternating and, within each, the groups that killed most per
        second in the recorded runs first (then the cheapest): tier A pairs see a
        change on one side, only tier B goldens see one in code both sides share, so a mutant must
        meet both early."""
        with self.lock:
            fn = dict(self.by_function.get(m.function, {}))
            fl = dict(self.by_file.get(m.path, {}))
        proven = sorted(
            (g for g in groups if fn.get(g.label) or fl.get(g.label)),
            key=lambda g: (-fn.get(g.label, 0), -fl.get(g.label, 0), g.seconds, g.label),
        )
        past = self.recorded_by_function.get(f"{m.path}:{m.qualname}", {})
        taken_labels = {g.label for g in proven}
        recalled = sorted(
            (g for g in groups if past.get(g.label) and g.label not in taken_labels),
            key=lambda g: (-past[g.label], g.seconds, g.label),
        )
        taken_labels.update(g.label for g in recalled)
        rest = [
            g
            for g in sorted(groups, key=lambda g: (-self.rate.get(g.label, 0.0), g.seconds, g.label))
            if g.label not in taken_labels
        ]
        # Round n holds each family's n-th cheapest group: one cheap group of every family before a
        # second of any, so that a capped run (--max-groups) meets as many behaviours as it can.
        rounds: list[list[coverage.Group]] = []
        taken: dict[str, int] = {}
        for g in rest:
            n = taken[_family(g)] = taken.get(_family(g), -1) + 1
            if n == len(rounds):
                rounds.append([])
            rounds[n].append(g)
        return proven + recalled + [g for r in rounds for g in self._alternate_tiers(r)]

    def _alternate_tiers(self, groups: list[coverage.Group]) -> list[coverage.Group]:
        by_tier = [[g for g in groups if self.tier_of.get(g.label) == t] for t in ("A", "B")]
        by_tier.append([g for g in groups if self.tier_of.get(g.label) not in ("A", "B")])
        return [g for row in itertools.zip_longest(*by_tier) for g in row if g is not None]


def _family(group: coverage.Group) -> str:
    """A group's family: its first case's kind and name, without the parameters (``cli.config_values``)."""
    return group.cases[0].split("-", 1)[0] if group.cases else group.label


def _run_one(
    m: Mutant,
    cmap: coverage.CoverageMap,
    launcher: _Launcher,
    killers: Killers,
    max_groups: int | None,
    only_cases: Sequence[str] = (),
) -> Verdict:
    covering = killers.order(m, cmap.groups_of(m))
    if only_cases:
        covering = [g for g in covering if any(part in case for case in g.cases for part in only_cases)]
    if not covering:
        return Verdict(m, "not_covered")
    groups = covering[:max_groups] if max_groups else covering
    budget = sum(g.seconds for g in groups)
    out = launcher.logs / f"{abs(hash(m.name)):x}.json"
    out.unlink(missing_ok=True)
    spec = {
        "mutant": m.name,
        "groups": [g.cases for g in groups],
        "stop_at_first": True,
        "out": str(out),
        "tree": str(launcher.tree),
    }
    start = time.perf_counter()
    result, timed_out = launcher.run(
        spec,
        fresh=cmap.runs_at_import(m.path, m.tree_line),
        timeout=TIMEOUT_FACTOR * budget + TIMEOUT_CONSTANT,
    )
    seconds = time.perf_counter() - start
    if timed_out:
        return Verdict(m, "timeout", seconds=seconds, groups=len(groups), evidence=f"over {budget:.0f}s x3")
    if result is None:
        log = out.with_suffix(".log")
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        return Verdict(m, "harness_error", evidence="no verdict: " + " ".join(tail)[:200], seconds=seconds)
    return Verdict(
        m,
        result["status"],
        case=result.get("case"),
        evidence=result.get("evidence", ""),
        seconds=seconds,
        groups=len(result.get("groups", [])),
        covering=len(covering),
    )


def forced_fail(
    cmap: coverage.CoverageMap, groups: Sequence[coverage.Group], launcher: _Launcher
) -> list[str]:
    """Every function raising at entry (``MUTANT_UNDER_TEST=fail``): the labels of groups left green."""
    out = launcher.logs / "forced-fail.json"
    out.unlink(missing_ok=True)
    spec = {
        "mutant": "fail",
        "groups": [g.cases for g in groups],
        "stop_at_first": False,
        "out": str(out),
        "tree": str(launcher.tree),
    }
    budget = sum(g.seconds for g in groups)
    result, timed_out = launcher.run(spec, fresh=False, timeout=budget + 120)
    if timed_out or result is None:
        raise RuntimeError("the forced-fail check did not finish: see " + str(out.with_suffix(".log")))
    statuses = [g["status"] for g in result["groups"]]
    if len(statuses) != len(groups):
        raise RuntimeError(
            f"the forced-fail check stopped after {len(statuses)} of {len(groups)} groups: "
            f"{result.get('evidence')} (log: {out.with_suffix('.log')})"
        )
    return [g.label for g, s in zip(groups, statuses) if s != "killed"]


# ---------------------------------------------------------------------------------------------- CLI
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--changed",
        nargs="?",
        const="auto",
        default=None,
        metavar="REV",
        help="only mutants of functions changed against REV (default: the merge base with main; "
        "on main itself, the uncommitted changes)",
    )
    p.add_argument("--sample", type=int, default=None, metavar="N", help="N mutants drawn uniformly")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument("--module", action="append", default=[], help="only these product files (repeatable)")
    p.add_argument(
        "--function",
        action="append",
        default=[],
        metavar="FILE:QUALNAME",
        help="only mutants of these functions, named as the report names them "
        "(hyper_parallel/x.py:Class.method; repeatable)",
    )
    p.add_argument(
        "--survivors-of",
        type=Path,
        default=None,
        metavar="REPORT",
        help="only the mutants a previous report (mutation.json) did not kill (survived, not covered, "
        "timed out, harness error) and that still exist: what a new or widened case kills of them",
    )
    p.add_argument("-j", "--jobs", type=int, default=max(1, os.cpu_count() or 1), help="mutants at once")
    p.add_argument("--report-dir", type=Path, default=DEFAULT_REPORT_DIR, help="where mutation.json goes")
    p.add_argument("--work", type=Path, default=Path(".mutation"), help="cache folder (tree, map, logs)")
    p.add_argument(
        "--list",
        action="store_true",
        help="list the mutants a run would run (with --sample, the drawn ones, in order) and stop",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the verdicts of a stopped run of the same selection (mutation.partial.jsonl) and run the rest",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="start no mutant after SECONDS of wall time (map included); with --sample, the verdicts "
        "so far are a uniform sample (the selection runs in drawn order): the nightly job's bound",
    )
    p.add_argument(
        "--record-kills",
        action="store_true",
        help="add each killing case's mutants to parity/tools/mutation/kills.json (the quick self-check "
        "counts a case without a plant claim as measured when it killed a recorded mutant)",
    )
    p.add_argument(
        "--cases",
        action="append",
        default=[],
        metavar="TEXT",
        help="run only the case groups with a case id containing TEXT (repeatable): what those cases "
        "kill, e.g. a new case's power with --record-kills; the score is then theirs, not the harness's",
    )
    p.add_argument(
        "--max-groups",
        type=int,
        default=None,
        metavar="K",
        help="run at most K of the groups that cover a mutant (those that killed its neighbours first, "
        "then the cheapest); a survivor then survived K groups, and the report says so",
    )


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop the children


def main(args: argparse.Namespace, console: Console) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    repo = Path.cwd()
    ws = Workspace(repo, args.work)
    t0 = time.perf_counter()
    tree, mutants = ws.mutants(console, jobs=args.jobs)
    reviewed = score.Reviewed.load(score.REVIEWED_FILE)
    scope = select(mutants, args, console, repo)
    listed = [m for m in scope if reviewed.get(m.key) is not None]
    pool = [m for m in scope if reviewed.get(m.key) is None]
    population = len(pool)
    if (args.sample is not None and args.sample < len(pool)) or args.budget is not None:
        # Drawn order, not file order: a run stopped early (by --budget, or by hand) is still a
        # uniform sample of what it ran.
        pool = random.Random(args.seed).sample(pool, min(args.sample or len(pool), len(pool)))
    if args.list:  # what a run of these arguments would run, in its order
        for m in pool:
            console.print(f"{m.location()}  {m.operator}  [dim]{m.key}[/]", highlight=False, markup=True)
        console.print(
            f"{len(pool)} mutants ({len(listed)} more in scope are listed in {score.REVIEWED_FILE.name})"
        )
        return 0
    partial = args.report_dir / "mutation.partial.jsonl"
    done: list[dict[str, Any]] = []
    if args.resume:  # the same selection again: skip what the stopped run already judged
        names = {m.name for m in pool}
        if partial.exists():
            rows = [json.loads(line) for line in partial.read_text(encoding="utf-8").splitlines() if line]
            done = [r for r in rows if r["name"] in names]
        pool = [m for m in pool if m.name not in {r["name"] for r in done}]
        console.print(f"--resume: {len(done)} verdicts kept from {partial}, {len(pool)} mutants to go")
    if not pool and not done:  # nothing to measure: no map to build, no score to write
        console.print(f"no mutant to run ({len(listed)} in scope are listed in {score.REVIEWED_FILE.name})")
        return 0
    env = child_env(tree)
    # A run of part of the product measures only the files it mutates (a full run: every file).
    files = None if len(scope) == len(mutants) else {m.path for m in pool}
    cmap = ws.coverage_map(console, tree, jobs=args.jobs, mutants=mutants, pool=pool, files=files)
    t_prep = time.perf_counter() - t0
    logs = Path(tempfile.mkdtemp(prefix="parity-mutation-"))
    starter = warm_starter(tree, env, cmap.modules)
    starter.start()
    launcher = _Launcher(tree=tree, env=env, logs=logs, starter=starter)
    try:
        needed = cmap.groups_needed(pool)
        console.print(f"forced fail: every function raising, over the {len(needed)} groups this run uses")
        green = forced_fail(cmap, needed, launcher)
        if green:
            console.print(
                f"[bold red]error:[/] {len(green)} case groups stay green when every product function "
                f"raises ({', '.join(green[:5])}): the harness swallows product errors there",
                highlight=False,
            )
            return 2
        progress = score.Progress(console, len(pool), partial, append=args.resume)
        t_run = time.perf_counter()
        deadline = (
            None if args.budget is None else time.monotonic() + args.budget - (time.perf_counter() - t0)
        )
        verdicts = run_mutants(
            pool,
            cmap,
            launcher,
            jobs=args.jobs,
            on_verdict=progress.add,
            max_groups=args.max_groups,
            deadline=deadline,
            only_cases=args.cases,
        )
        run_seconds = time.perf_counter() - t_run
        if len(verdicts) < len(pool):
            console.print(
                f"--budget {args.budget:.0f}s reached: {len(verdicts)} of {len(pool)} mutants run "
                "(in drawn order: a uniform sample of the selection); `--resume` runs the rest"
            )
    finally:
        launcher.close()  # Ctrl-C or SIGTERM: no mutant keeps running after the run
        starter.close()
    result = score.Result(
        verdicts=sorted([*done, *(v.to_dict() for v in verdicts)], key=lambda v: v["name"]),
        reviewed=[{**m.to_dict(), **reviewed.entry(m.key)} for m in listed],
        population=population,
        sample=args.sample,
        seed=args.seed,
        scope=_scope_name(args),
        max_groups=args.max_groups,
        seconds={"prepare": round(t_prep, 1), "mutants": round(run_seconds, 1)},
        module_notes=reviewed.module_notes,
    )
    path = score.write(result, args.report_dir)
    if args.record_kills:
        recorded = kills.merge(result.verdicts)
        console.print(f"kills recorded in {kills.KILLS_FILE} ({len(recorded)} cases): commit it with the run")
    score.print_summary(result, console)
    console.print(f"written: {path}")
    return 0


def _survivor_keys(report: Path) -> set[str]:
    try:
        rows = json.loads(report.read_text(encoding="utf-8"))["survivors"]
        return {row["key"] for row in rows}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(
            f"parity mutation: error: --survivors-of {report}: expected a mutation.json with a "
            f"'survivors' list ({type(exc).__name__}: {exc})"
        ) from None


def _scope_name(args: argparse.Namespace) -> str:
    scope = (
        "survivors of a report"
        if args.survivors_of is not None
        else "changed"
        if args.changed
        else ("functions" if args.function else ("modules" if args.module else "all"))
    )
    return f"{scope}, cases containing {' or '.join(args.cases)}" if args.cases else scope


def select(mutants: list[Mutant], args: argparse.Namespace, console: Console, repo: Path) -> list[Mutant]:
    scope = mutants
    if args.module:
        wanted = {Path(m).as_posix() for m in args.module}
        unknown = wanted - {m.path for m in mutants}
        if unknown:
            raise SystemExit(
                f"parity mutation: error: --module {sorted(unknown)[0]}: no mutants in that file"
            )
        scope = [m for m in scope if m.path in wanted]
    if args.function:
        wanted = set(args.function)
        unknown = wanted - {f"{m.path}:{m.qualname}" for m in mutants}
        if unknown:
            raise SystemExit(
                f"parity mutation: error: --function {sorted(unknown)[0]}: no mutants in that function "
                "(expected FILE:QUALNAME, e.g. hyper_parallel/components/loss.py:CrossEntropyLoss.__call__)"
            )
        scope = [m for m in scope if f"{m.path}:{m.qualname}" in wanted]
    if args.survivors_of is not None:
        keys = _survivor_keys(args.survivors_of)
        scope = [m for m in scope if m.key in keys]
        console.print(
            f"--survivors-of {args.survivors_of}: {len(keys)} not killed there, {len(scope)} of them still exist"
        )
    if args.changed:
        base, functions = changed_mod.changed_functions(
            repo, None if args.changed == "auto" else args.changed
        )
        scope = [m for m in scope if m.function in functions]
        console.print(f"changed against {base}: {len(functions)} functions, {len(scope)} mutants")
    return scope
