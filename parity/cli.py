"""``python -m parity list | run | update | report``: the harness from a shell, with rich output.

- ``list``   the registered cases (id, tier, kind, seed, backends, golden present?);
- ``run``    check the selected cases: progress bar, summary table (case x backend -> pass / FAIL /
             skipped, time), each failure's report; unused goldens fail the run; exit 1 on any failure;
- ``update`` regenerate the selected tier B goldens, serially, printing a unified diff per change;
- ``report`` pretty-print the JSON reports under ``parity/reports/`` (``--html PATH``: one
             self-contained HTML page of them, with curves and heat maps);
- ``bisect`` localise a tier A case: the first step, phase, artifact and component where its two
             sides diverge (cases registered with a localiser: the e2e pairs);
- ``env``    print the CPU profile and the environment fingerprint goldens are keyed and checked by.

``--cpu-profile {portable,native}`` (or ``PARITY_CPU_PROFILE``; default portable) pins the CPU
numerics before the framework loads (``parity.numerics``).

``--cases`` names the registry (``module[:ATTR]`` or ``file.py[:ATTR]``; default: the suites in
``parity/suites``), ``-k`` selects by id like pytest's ``-k``, ``--id`` by exact id, ``--tag`` by
tag (a case with any of the given tags; ``list`` shows each case's tags).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from parity import commands, golden, numerics, parallel
from parity.cases import SUPPORTED_BACKENDS, Case, Registry, load_registry
from parity.engine import DEFAULT_REPORT_DIR, CliCommands, Engine, Outcome
from parity.report import load_last_run, localisation_lines, run_summary_path, with_decimal, write_json_atomic
from parity.select import keyword_matches
from parity.verdict import Failure, component_of, counts_lines, run_failures, verdict

DEFAULT_CASES = "parity.suites:REGISTRY"
_STYLE = {
    "pass": "green",
    "unchanged": "green",
    "created": "cyan",
    "updated": "cyan",
    "skip": "yellow",
    "fail": "bold red",
    "error": "bold red",
}
_LABEL = {"pass": "pass", "skip": "skipped", "fail": "FAIL", "error": "ERROR"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m parity", description=__doc__.splitlines()[0])
    # Taken out of argv before parsing (so it works after the subcommand too); listed for --help.
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show third-party warnings and the trainers' progress bars; case by case: `run` prints its "
        "table when green and every failure's report, `report` every case's report",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def selection(p: argparse.ArgumentParser) -> None:
        p.add_argument("--cases", default=DEFAULT_CASES, help=f"registry to load (default {DEFAULT_CASES})")
        p.add_argument("-k", dest="keyword", default=None, help="select case ids by expression (and/or/not)")
        p.add_argument(
            "--id", dest="ids", action="append", default=[], help="select an exact case id (repeatable)"
        )
        p.add_argument(
            "--tag",
            dest="tags",
            action="append",
            default=[],
            help="select cases by tag (repeatable: any of them)",
        )
        p.add_argument(
            "--backend",
            dest="backends",
            action="append",
            choices=SUPPORTED_BACKENDS,
            default=[],
            help="backend to run (repeatable; default: every backend a case names)",
        )
        p.add_argument("--golden-dir", type=Path, default=golden.DEFAULT_ROOT, help="golden root directory")

    def profile(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--cpu-profile",
            choices=numerics.PROFILES,
            default=None,
            help=f"CPU numerics profile (default: ${numerics.PROFILE_ENV}, else {numerics.DEFAULT_PROFILE})",
        )

    p_list = sub.add_parser("list", help="list the registered cases")
    selection(p_list)
    profile(p_list)
    p_run = sub.add_parser("run", help="check the selected cases")
    selection(p_run)
    profile(p_run)
    p_run.add_argument("--report-dir", type=Path, default=DEFAULT_REPORT_DIR, help="where JSON reports go")
    p_run.add_argument("--hypothesis-blob", default=None, help="replay one example of a hypothesis case")
    p_run.add_argument(
        "--explore-budget",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="time each drawn `explore` case may spend on new examples (default: one example each)",
    )
    p_run.add_argument(
        "-j",
        "--jobs",
        type=_positive_int,
        default=None,
        help="worker processes (default: $PARITY_JOBS, else one per core, at most 8); "
        "cases that share a cached run stay on one worker",
    )
    p_update = sub.add_parser("update", help="regenerate tier B goldens (serially) and show their diffs")
    selection(p_update)
    profile(p_update)
    p_update.add_argument("--prune-unused", action="store_true", help="delete golden files no case uses")
    p_update.add_argument(
        "--failed",
        action="store_true",
        help="regenerate exactly the goldens still failing in the `parity run`s on this tree "
        "(run_state-<backend>.json: the union over backends and selections)",
    )
    p_update.add_argument(
        "--diff",
        action="store_true",
        help="also print the full unified diff (always written to the report dir)",
    )
    p_update.add_argument(
        "--report-dir",
        type=Path,
        default=DEFAULT_REPORT_DIR,
        help="where the run state (run_state-<backend>.json) is read and update-<backend>.diff written",
    )
    p_update.add_argument(
        "--combined",
        action="store_true",
        help="end with the reviews of every backend updated on this tree (nox -s parity_update)",
    )
    p_report = sub.add_parser("report", help="pretty-print the JSON reports")
    p_report.add_argument("--report-dir", type=Path, default=DEFAULT_REPORT_DIR)
    p_report.add_argument("-k", dest="keyword", default=None, help="select reports by case id expression")
    p_report.add_argument(
        "--html",
        type=Path,
        default=None,
        help="write one self-contained HTML page of the reports to this path",
    )
    p_report.add_argument(
        "--png-dir", type=Path, default=None, help="with --html: also write the page's images to this folder"
    )
    p_bisect = sub.add_parser(
        "bisect",
        help="name the first step, phase, artifact and component where a tier A case diverges "
        "(exit 1: it diverges, 0: it does not)",
    )
    p_bisect.add_argument("case_id", help="the case id (`python -m parity list`)")
    p_bisect.add_argument(
        "--cases", default=DEFAULT_CASES, help=f"registry to load (default {DEFAULT_CASES})"
    )
    p_bisect.add_argument("--json", type=Path, default=None, help="also write the result as JSON here")
    profile(p_bisect)
    p_env = sub.add_parser("env", help="print the CPU profile and environment fingerprint")
    profile(p_env)
    p_env.add_argument("--backend", default=None, choices=SUPPORTED_BACKENDS, help="framework to describe")
    p_env.add_argument("--json", action="store_true", help="print the fingerprint as JSON")
    p_cross = sub.add_parser(
        "cross",
        help="tier C: the torch legacy trainer vs the new path on MindSpore, under the limitations table",
    )
    p_cross.add_argument(
        "--keep", type=Path, default=None, help="keep both sides' runs and exports in this folder"
    )
    p_cross.add_argument("--report-dir", type=Path, default=DEFAULT_REPORT_DIR, help="where cross.json goes")
    profile(p_cross)
    p_cross.add_argument("--side", choices=("legacy", "new"), default=None, help=argparse.SUPPRESS)
    p_cross.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    p_cross.add_argument("--weights", type=Path, default=None, help=argparse.SUPPRESS)
    p_cross.add_argument(
        "--recipe", action="append", default=None, help="a single-rank recipe (repeatable; default: all)"
    )
    p_cross.add_argument(
        "--seed", action="append", type=int, default=None, help="initial weights and train.seed (repeatable)"
    )
    p_cross.add_argument(
        "--new-override", dest="new_overrides", action="append", default=[], help=argparse.SUPPRESS
    )
    p_self = sub.add_parser("selfcheck", help="plant divergences and measure how many the suite catches")
    from parity.tools import selfcheck_runner  # a tool: the CLI dispatches to it, the core never imports it

    selfcheck_runner.add_arguments(p_self)
    p_mut = sub.add_parser(
        "mutation", help="mutmut's mutants of the product against the cases that run them: the score"
    )
    from parity.tools.mutation import runner as mutation_runner  # a tool, like selfcheck

    mutation_runner.add_arguments(p_mut)
    return parser


def main(argv: Sequence[str] | None = None, console: Console | None = None, *, reexec: bool = False) -> int:
    """Run the CLI; ``reexec`` lets it restart itself when the CPU profile needs a fresh process."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from hyper_parallel.platform.quiet import progress_bars_off, quiet_third_party, split_verbose

    parsed_argv, verbose = split_verbose(argv)
    quiet_third_party(verbose)
    # The legacy trainer's tqdm bar would cut through the harness's own progress display.
    with progress_bars_off(not verbose):
        return _main(parsed_argv, argv, console, reexec)


def _main(parsed_argv: list[str], argv: list[str], console: Console | None, reexec: bool) -> int:
    args = build_parser().parse_args(parsed_argv)
    from hyper_parallel.platform.quiet import split_verbose

    args.verbose = split_verbose(argv)[1]  # taken out of argv before parsing (``main``)
    # Logs (CI, nox) are not terminals: give the tables room so case ids stay on one line.
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    if args.command == "report":
        return _report(args, console)
    if args.command == "selfcheck":  # each plant's suite runs in a child process of its own
        if args.quick:  # each plant against only the cases that claim it
            from parity.tools import quick

            return quick.main(args, console)
        from parity.tools import selfcheck_runner

        return selfcheck_runner.main(args, console)
    if args.command == "mutation":  # each mutant runs in a child process of its own
        from parity.tools.mutation import runner as mutation_runner

        return mutation_runner.main(args, console)
    if args.command == "env":
        backends = [args.backend] if args.backend else []
    else:
        backends = getattr(args, "backends", None) or []
    args.argv = list(argv)
    if args.command == "update" and args.failed:
        from parity import run_state

        tree = run_state.tree_fingerprint()
        try:
            failed = run_state.failed_goldens(args.report_dir, tree, backends or None, _where(args))
        except run_state.FailedRunError as exc:  # one line, however long (never wrapped)
            with contextlib.suppress(OSError):  # a combined review names them as not updated
                run_state.record_refusal(args.report_dir, tree, backends, str(exc))
            console.print(Text("error: ", style="bold red") + Text(str(exc)), highlight=False, soft_wrap=True)
            return 2
        args.failed_jobs = [(c, b) for c, b in failed if not backends or b in backends]
        if not backends:
            backends = args.backends = sorted({b for _, b in args.failed_jobs})
    if len(backends) == 1:
        # Pick the platform before anything loads it (unset, the platform layer tries mindspore first).
        from hyper_parallel.platform import PLATFORM_ENV

        os.environ.setdefault(PLATFORM_ENV, backends[0])
    try:
        profile = numerics.resolve(args.cpu_profile)
        if reexec and numerics.needs_reexec(profile):
            # Only a fresh process pins libm and numpy (read at start), and MKL and oneDNN once the
            # framework was loaded before the profile.
            numerics.export(profile)
            os.execv(sys.executable, [sys.executable, "-m", "parity", *argv])
        numerics.apply(profile)  # before the registry imports the framework
    except numerics.ProfileError as exc:
        console.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
        return 2
    if args.command == "env":
        return _env(args, console)
    if args.command == "cross":  # both sides inherit the pinned profile (it lives in os.environ)
        return _cross(args, console)
    if args.command == "bisect":
        return _bisect(args, console)
    try:
        registry = load_registry(args.cases)
        cases = registry.select(args.keyword, args.ids, args.tags)
    except (ImportError, OSError, TypeError, KeyError, ValueError) as exc:
        console.print(f"[bold red]error:[/] {escape(missing_extra(exc) or str(exc))}", highlight=False)
        return 2
    if not cases and (args.keyword or args.ids or args.tags):
        asked = " and ".join(
            part
            for part in (
                f"-k {args.keyword!r}" if args.keyword else "",
                _ids_text(args.ids),
                " ".join(f"--tag {t}" for t in args.tags),
            )
            if part
        )
        console.print(
            f"[bold red]error:[/] no case matches {asked} ({len(registry)} cases registered; "
            f"`{commands.parity('list', *_where(args)[:2])}` shows them)",
            highlight=False,
        )
        return 2
    return {"list": _list, "run": _run, "update": _update}[args.command](args, console, registry, cases)


# Modules the harness imports from an optional extra of pyproject.toml, and that extra.
EXTRA_OF_MODULE = {
    "hypothesis": "dev",
    "syrupy": "dev",
    "pytest": "dev",
    "matplotlib": "report",
    "mindspore": "mindspore",
}


def missing_extra(exc: BaseException) -> str | None:
    """One line naming the extra to install when ``exc`` is the import of a module of one, else None."""
    if not isinstance(exc, ImportError):
        return None
    name = (exc.name or "").partition(".")[0]
    if not name:  # "import of X halted; None in sys.modules" carries no name
        found = re.search(r"(?:module named|import of) '?([\w.]+)", str(exc))
        name = found.group(1).partition(".")[0] if found else ""
    extra = EXTRA_OF_MODULE.get(name)
    if extra is None:
        return None
    return f"{name} is not installed; it comes with the `{extra}` extra: pip install -e '.[{extra}]'"


def _bisect(args: argparse.Namespace, console: Console) -> int:
    """Localise one case: exit 1 when its sides diverge (like a failing ``run``), 0 when they do
    not, 2 on bad input, 3 when the localiser itself failed (nothing is known about the case)."""

    def error(text: str) -> int:
        console.print(f"[bold red]error:[/] {text}", highlight=False)
        return 2

    try:
        registry = load_registry(args.cases)
    except (ImportError, OSError, TypeError, KeyError, ValueError) as exc:
        return error(escape(missing_extra(exc) or str(exc)))
    case = registry.get(args.case_id)
    if case is None:
        return error(
            f"unknown case id {args.case_id!r} ({len(registry)} cases registered; "
            f"`{commands.parity('list', *_where(args)[:2])}` shows them)"
        )
    if case.localise is None:
        with_one = sum(c.localise is not None for c in registry)
        return error(
            f"case {case.id!r} has no localiser ({with_one} of {len(registry)} cases have one: the tier A pairs "
            "registered with `localise=`, such as the e2e trainer pairs)"
        )
    from parity.env import ensure_deterministic

    engine = _engine_for(registry)
    ensure_deterministic(engine.platform())
    result = engine.localise(case)
    console.rule(f"bisect {case.id}")
    console.print("\n".join(localisation_lines(result)), soft_wrap=True, markup=False, highlight=False)
    if args.json is not None:
        write_json_atomic(args.json, result)
    return {"diverged": 1, "equal": 0}.get(str(result.get("status")), 3)


def _engine_for(registry: Registry) -> Engine:
    return Engine(registry, report_dir=None, commands=CliCommands(registry.source, golden.DEFAULT_ROOT))


def _ids_text(ids: list[str]) -> str:
    return " ".join(f"--id {i!r}" for i in ids)


def _env(args: argparse.Namespace, console: Console) -> int:
    """The effective CPU profile and fingerprint: what goldens are keyed by and checked against."""
    from parity.env import (
        REQUIRED_FINGERPRINT_FIELDS,
        ensure_deterministic,
        fingerprint,
        get_platform,
        platform_key,
    )

    platform = get_platform()
    ensure_deterministic(platform)  # as every check does: the fingerprint a run would record
    backend = platform.name
    printed = fingerprint(backend, platform)
    if args.json:
        console.print_json(json.dumps(printed, sort_keys=True))
        return 0
    must = {*REQUIRED_FINGERPRINT_FIELDS, backend}
    table = Table(title=f"parity environment (golden key {platform_key(platform)})")
    for column in ("field", "value", "must match"):
        table.add_column(column, overflow="fold")
    for name, value in sorted(printed.items()):
        text = json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)
        table.add_row(name, text, "yes" if name in must else "")
    console.print(table)
    pinned = "nothing"
    if printed["cpu_profile"] == "portable":
        pinned = ", ".join(f"{k.env}={k.value}" for k in numerics.knobs())
    console.print(f"cpu profile {printed['cpu_profile']}: pins {pinned}", highlight=False)
    return 0


def _jobs(
    args: argparse.Namespace, registry: Registry, cases: list[Case], tier: str | None = None
) -> list[tuple[Case, str]]:
    backends = args.backends or registry.backends()
    return [(c, b) for c in cases for b in backends if b in c.backends and (tier is None or c.tier == tier)]


def _engine(args: argparse.Namespace, registry: Registry, report_dir: Path | None) -> Engine:
    return Engine(
        registry,
        golden_root=args.golden_dir,
        report_dir=report_dir,
        commands=CliCommands(registry.source, args.golden_dir),
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def _list(args: argparse.Namespace, console: Console, registry: Registry, cases: list[Case]) -> int:
    """The selected cases, one row each, readable at 100 columns; a count per tier at the end.

    The case id carries the kind (its prefix) and the parameters; the other columns are short:
    tier (``A``, ``A+h`` when hypothesis draws its inputs, ``B``), tags, and per backend whether
    its golden for this platform is there (tier B) or that the case runs on it (tier A).
    """
    engine = _engine(args, registry, None)
    key = engine.platform_key()
    from rich import box

    # COLUMNS wins over the 160 columns a pipe gets (``COLUMNS=100 python -m parity list | less``).
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() else console.width
    table = Table(
        title=f"parity cases ({registry.source}), goldens for {key}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
    )
    id_width = max(30, width - 4 - 13 - 17 - 6)
    table.add_column("case", no_wrap=True, width=id_width)
    table.add_column("tier", no_wrap=True, width=4)
    table.add_column("tags", overflow="fold", max_width=13)
    table.add_column("backends", overflow="fold", max_width=17)
    for case in cases:
        if case.tier == "B":
            backends = ", ".join(
                b + (" ok" if engine.golden_path(case, b).exists() else " missing") for b in case.backends
            )
        else:
            backends = ", ".join(case.backends)
        tier = case.tier + ("+h" if case.strategies else "")
        table.add_row(_wrap_id(case.id, id_width), tier, ", ".join(case.tags), backends)
    console.print(table, width=width)
    console.print(_tier_counts(cases), highlight=False)
    return 0


def _wrap_id(case_id: str, width: int) -> str:
    """``case_id`` in lines of at most ``width`` characters, broken after a ``-`` where it can."""
    import re

    lines = [""]
    for token in re.findall(r"[^-]*-|[^-]+$", case_id):
        while len(token) > width:  # a part longer than a line: cut it
            lines.append(token[:width])
            token = token[width:]
        if len(lines[-1]) + len(token) > width:
            lines.append("")
        lines[-1] += token
    return "\n".join(line for line in lines if line)


def _tier_counts(cases: list[Case]) -> str:
    """``N cases: a tier A (h with hypothesis), b tier B``."""
    pairs = [c for c in cases if c.tier == "A"]
    drawn = sum(bool(c.strategies) for c in pairs)
    goldens = len(cases) - len(pairs)
    return f"{len(cases)} case(s): {len(pairs)} tier A ({drawn} with hypothesis), {goldens} tier B"


def _seconds(raw: str) -> float:
    """A number of seconds >= 0 (argparse type of ``--explore-budget``)."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {raw!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {raw!r}")
    return value


def _run(args: argparse.Namespace, console: Console, registry: Registry, cases: list[Case]) -> int:
    if args.explore_budget is not None:  # read by parity.explore.strategies, in workers too
        os.environ["PARITY_EXPLORE_BUDGET"] = repr(args.explore_budget)
    if any(c.strategies for c in cases):
        from parity.hypothesis_profiles import load_selected_profile

        load_selected_profile()
    from parity import run_state
    from parity.env import backend_skip_reason
    from parity.golden_lint import lint

    engine = _engine(args, registry, args.report_dir)
    jobs = _jobs(args, registry, cases)
    engine._key_or_unknown()  # load the framework once, outside the per-case timings
    try:
        workers = 1 if args.hypothesis_blob else args.jobs or parallel.default_workers()
    except ValueError as exc:
        console.print(f"[bold red]error:[/] {exc}", highlight=False)
        return 2
    argv = getattr(args, "argv", [])
    tree = run_state.tree_fingerprint()
    run_backends = sorted({backend for _case, backend in jobs})
    run_id = None
    if args.report_dir is not None:
        try:  # from here on, an earlier run's record never passes for this one
            run_id = run_state.mark_started(args.report_dir, argv, tree, run_backends)
        except OSError:
            pass
    runnable = {b for b in (args.backends or registry.backends()) if backend_skip_reason(b) is None}
    problems = lint(args.golden_dir, registry, include_unused=False, stale_backends=runnable)
    for problem in problems:
        console.print(Text("golden lint: ", style="bold red") + Text(problem), soft_wrap=True)
    try:
        with _run_temp_dir(), _progress(console) as progress:
            task = progress.add_task("parity run", total=len(jobs))
            outcomes = parallel.run_cases(
                engine,
                jobs,
                workers,
                on_start=lambda job: progress.update(task, description=f"{job[1]} {job[0].id}"),
                on_done=lambda _outcome: progress.advance(task),
                hypothesis_blob=args.hypothesis_blob,
            )
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGINT sent to the harness (RunInterrupted)
        signum = getattr(exc, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        if args.report_dir is not None:
            try:
                run_state.mark_interrupted(
                    args.report_dir, argv, tree, signal_name=name, run_id=run_id, backends=run_backends
                )
            except OSError:
                pass
        console.print(
            f"[bold red]interrupted[/]: {name}; no result, every worker ended; the run is marked interrupted in "
            f"{run_summary_path(args.report_dir) if args.report_dir else 'no report dir'}",
            highlight=False,
            soft_wrap=True,
        )
        return 128 + signum
    except BaseException as exc:  # a harness error: this run has no result (its backends' last run)
        if run_id is not None:
            with contextlib.suppress(OSError):
                run_state.mark_stopped(args.report_dir, run_id, tree, run_backends, type(exc).__name__)
        raise
    failing = [o for o in outcomes if o.status in ("fail", "error")]
    if failing or args.verbose:
        _summary_table(console, "parity run", outcomes, args.backends or registry.backends())
    else:  # green: the counts; the table of every case with --verbose
        _green_summary(console, outcomes)
    if args.report_dir is not None:
        rows = _write_run_summary(args.report_dir, engine, outcomes, tree, argv)
        if run_id is not None:
            try:
                run_state.mark_finished(args.report_dir, run_id, tree, run_backends, rows)
            except OSError as exc:  # --failed then refuses this run as unfinished, by name
                console.print(
                    f"[yellow]could not record the run's results for --failed: {exc}[/]", highlight=False
                )
    _print_messages(console, failing, args.verbose)
    unused = engine.unused_goldens()
    _print_unused(console, unused)
    _short_summary(console, outcomes, args.report_dir is not None, where=_where(args))
    failed = sum(o.status in ("fail", "error") for o in outcomes)
    passed = sum(o.status == "pass" for o in outcomes)
    skipped = sum(o.status == "skip" for o in outcomes)
    bad = failed or unused or problems
    style = "bold red" if bad else "bold green"
    lint_text = f", {len(problems)} golden lint problem(s)" if problems else ""
    console.print(
        f"[{style}]{passed} passed, {failed} failed, {skipped} skipped, "
        f"{len(unused)} unused golden(s){lint_text}[/]"
    )
    if bad:
        return 1
    if passed == 0:  # a run that checked nothing is no pass (pytest's exit status 5: no tests ran)
        why = _nothing_ran(outcomes, cases, args.backends or registry.backends())
        console.print(Text("error: ", style="bold red") + Text(why), soft_wrap=True, highlight=False)
        return NOTHING_RAN
    return 0


# The exit status of a run whose selection ran no case (pytest's "no tests ran").
NOTHING_RAN = 5


def _nothing_ran(outcomes: list[Outcome], cases: list[Case], backends: list[str]) -> str:
    """One line: why a run ran no case (each selected job skipped, or no job for the backends)."""
    if outcomes:
        first_lines = (next((x.strip() for x in o.message.splitlines() if x.strip()), "") for o in outcomes)
        reasons = sorted({line for line in first_lines if line})
        why = f"all {len(outcomes)} selected case run(s) were skipped ({'; '.join(reasons) or 'no reason given'})"
    else:
        why = (
            f"none of the {len(cases)} selected case(s) runs on backend {', '.join(backends)} "
            f"(their backends: {', '.join(sorted({b for c in cases for b in c.backends}))})"
        )
    return f"nothing ran: {why}; exit status {NOTHING_RAN}"


class RunInterrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT reached the harness: the run stops, its workers are ended, the run is marked
    interrupted and the exit status is 128 + ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _run_temp_dir() -> Iterator[Path]:
    """Every temp folder of the run (forked workers and their subprocesses included) under one
    folder, removed at the end whatever happens; Ctrl-C or SIGTERM interrupts the parent only:
    forked workers ignore SIGINT, die of SIGTERM, and the parent ends them (``parallel``: each
    worker with what it started)."""
    import multiprocessing
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="parity-run-"))
    saved_env, saved_tempdir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(root), str(root)
    parent = os.getpid()

    def on_signal(signum: int, frame: Any) -> None:
        if os.getpid() == parent:
            raise RunInterrupted(signum)
        if signum == signal.SIGTERM:  # a process forked from this one ends as SIGTERM would end it
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield root
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        children = multiprocessing.active_children()
        for child in children:
            parallel.end_process(child)
        for child in children:
            child.join(timeout=10)
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
        tempfile.tempdir = saved_tempdir
        shutil.rmtree(root, ignore_errors=True)


def _where(args: argparse.Namespace) -> list[str]:
    """This command line's ``--cases``, ``--golden-dir`` and ``--report-dir`` where they are not the
    defaults: a printed command must read the same registry, goldens and run state."""
    out: list[str] = []
    cases = getattr(args, "cases", DEFAULT_CASES)
    if cases != DEFAULT_CASES:
        out += ["--cases", cases]
    root = getattr(args, "golden_dir", None)
    if root is not None and Path(root).resolve() != golden.DEFAULT_ROOT:
        out += ["--golden-dir", str(root)]
    reports = getattr(args, "report_dir", None)
    if reports is not None and Path(reports).resolve() != Path(DEFAULT_REPORT_DIR).resolve():
        out += ["--report-dir", str(reports)]
    return out


def _short_summary(
    console: Console, outcomes: list[Outcome], has_last_run: bool, where: Sequence[str] = ()
) -> None:
    """pytest's "short test summary info", by cause: the verdict, the failures grouped by where they
    first went wrong (``parity.verdict``: step and component when localised), a few ids of each,
    then the ways out, each printed once whatever the number of cases it concerns; a real
    divergence (a tier A pair) comes first, accepting goldens last (``where``: the run's
    non-default ``--cases``/``--golden-dir``/``--report-dir``, which the printed commands repeat)."""
    failing = [o for o in outcomes if o.status in ("fail", "error")]
    if not failing:
        return
    console.rule("short summary of failures")
    judged = verdict([Failure.from_outcome(o) for o in failing], total=len(outcomes))
    for line in judged.lines():
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    ways: list[str] = []
    golden_fails = [o for o in failing if o.case.tier == "B" and o.status == "fail"]
    environment = [o for o in golden_fails if o.report is not None and o.report.environment]
    if environment:
        ways.append(
            f"tier B: {len(environment)} golden(s) were recorded in another environment (each report's "
            "first line names the fields); rerun under the golden's profile, or regenerate for this one"
        )
    if golden_fails:
        ids = [arg for o in golden_fails[:3] for arg in ("--id", o.case.id)]
        fail_backends = sorted({o.backend for o in golden_fails})
        backend = fail_backends[0] if len(fail_backends) == 1 else None
        command = (
            commands.parity("update", "--failed", *where, backend=backend)
            if has_last_run
            else commands.parity("update", *ids, *where, backend=backend)
            + (" ..." if len(golden_fails) > 3 else "")
        )
        ways.append(
            "tier B: "
            + _AFTER_TIER_A * judged.real_divergence
            + f"if the change is intended, accept exactly these {len(golden_fails)} golden(s): "
            f"{command}  (it prints a review; the full diff goes to update-<backend>.diff in the report folder)"
        )
    errors = [o for o in failing if o.status == "error"]
    if errors:
        ways.append(
            f"errors: {len(errors)} case(s) raised instead of producing a result: fix that first "
            "(no update accepts an error); each traceback is above"
        )
    pairs = [o for o in failing if o.case.tier == "A" and o.status == "fail"]
    if pairs:
        modules = sorted({_source_file(o.case) for o in pairs} - {""})
        ways.append(
            f"tier A: a real divergence: legacy and new disagree in {len(pairs)} pair(s) (the tier A causes "
            "above); there is no golden, so regenerating cannot accept it; make the two sides agree. Each "
            "side's value comes from its "
            "product default (legacy: hyper_parallel/trainer/config.py; new: the component's Config under "
            "hyper_parallel/components/), the harness fixture ("
            + (", ".join(modules) or "parity/suites/")
            + ") or the recipe YAML (examples/debug/train.yaml); `"
            + commands.parity("bisect", "ID", *(where[:2] if where[:1] == ["--cases"] else []))
            + "` localises an e2e pair"
        )
    if has_last_run:
        at = where.index("--report-dir") if "--report-dir" in where else -1
        reports = list(where[at : at + 2]) if at >= 0 else []
        ways.append(
            f"every case's report, by cause: `{commands.parity('report', '--verbose', *reports)}` "
            "(`--verbose` on this run prints them all here)"
        )
    console.print("ways out:", highlight=False)
    # A real divergence first, then what raised, then goldens: accepting is never the first offer
    # while legacy and new disagree.
    for line in sorted(ways, key=_way_rank):
        console.print(f"  {line}", soft_wrap=True, markup=False, highlight=False)


_AFTER_TIER_A = "once the tier A pairs agree (their divergence may be what moved these), "
_WAYS_ORDER = ("tier A:", "errors:", "tier B:")


def _way_rank(way: str) -> int:
    return next((i for i, prefix in enumerate(_WAYS_ORDER) if way.startswith(prefix)), len(_WAYS_ORDER))


def _source_file(case: Case) -> str:
    module = getattr(case.legacy, "__module__", "") or ""
    if not module.startswith("parity."):
        return ""
    return module.replace(".", "/") + ".py"


def _write_run_summary(
    report_dir: Path, engine: Engine, outcomes: list[Outcome], tree: str = "", argv: list[str] | None = None
) -> list[dict[str, Any]]:
    """``<report dir>/last_run.json``: every case of this run (the HTML report's summary table), with
    the tree fingerprint the run checked; returns its rows (``run_state.mark_finished`` merges them
    into the state ``update --failed`` reads)."""
    import datetime

    from parity.env import ensure_deterministic

    backends = sorted({o.backend for o in outcomes})
    try:
        ensure_deterministic(engine.platform())  # as every check ran (workers may have been forked)
    except Exception:  # the fingerprint is informational
        pass
    rows: list[dict[str, Any]] = [
        {
            "case_id": o.case.id,
            "tier": o.case.tier,
            "kind": o.case.kind,
            "component": component_of(o.case.tags, o.case.kind),
            "backend": o.backend,
            "platform": o.platform,
            "status": o.status,
            "seconds": round(o.seconds, 3),
            "message": o.message.splitlines()[0] if o.message and o.status != "pass" else "",
        }
        for o in outcomes
    ]
    summary = {
        "status": "finished",
        "tree": tree,
        "argv": list(argv or []),
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "platform": engine._key_or_unknown(),
        "fingerprint": {b: engine._fingerprint_or_none(b) for b in backends},
        "cases": rows,
    }
    try:
        write_json_atomic(run_summary_path(report_dir), summary)
    except OSError:
        pass  # the summary is a convenience for `report --html`; the run's result stands
    return rows


def _update(args: argparse.Namespace, console: Console, registry: Registry, cases: list[Case]) -> int:
    from parity import review, run_state
    from parity.env import backend_skip_reason

    engine = _engine(args, registry, None)
    if args.failed:
        failed = set(args.failed_jobs)
        backends = args.backends or registry.backends()
        # Registry order, as a run lists them.
        jobs = [
            (c, b)
            for c in cases
            for b in backends
            if c.tier == "B" and b in c.backends and (c.id, b) in failed
        ]
        if not jobs:
            console.print(
                f"nothing to update on {', '.join(backends)}: no tier B golden is failing in the finished "
                "runs on this tree",
                highlight=False,
            )
            if args.combined and args.report_dir is not None:
                _combined_review(console, args.report_dir, run_state.tree_fingerprint())
            return 0
    else:
        jobs = _jobs(args, registry, cases, tier="B")
    engine._key_or_unknown()  # load the framework once, outside the per-case timings
    outcomes: list[Outcome] = []
    before: dict[tuple[str, str], str] = {}  # each golden's text before its update, for the review
    with _progress(console) as progress:
        task = progress.add_task("parity update", total=len(jobs))
        for case, backend in jobs:  # serially, on purpose: one writer per golden directory
            progress.update(task, description=f"{backend} {case.id}")
            before[(case.id, backend)] = _read_or_empty(engine, case, backend)
            outcomes.append(engine.update(case, backend))
            progress.advance(task)
    changed = [o for o in outcomes if o.status in ("created", "updated")]
    errors = [o for o in outcomes if o.status == "error"]
    review_lines: list[str] = []
    for outcome in changed:
        review_lines.append(f"{outcome.status} {outcome.backend} {outcome.case.id}")
        old = before.get((outcome.case.id, outcome.backend), "") if outcome.status == "updated" else ""
        try:
            review_lines.extend(review.review(old, outcome.document or ""))
        except (ValueError, KeyError, TypeError) as exc:  # the review is a reading aid
            review_lines.append(f"  (no review: {exc})")
    unchanged = sum(o.status == "unchanged" for o in outcomes)
    skipped = [o for o in outcomes if o.status == "skip"]
    for line in review_lines:
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    for outcome in errors:
        _print_message(console, outcome)
    console.print(f"{unchanged} golden(s) unchanged", highlight=False)
    diff_text = "".join(_diff_of(o) for o in changed)
    if args.report_dir is not None:
        # One diff per backend: a later update of another backend (its own nox session) keeps it.
        from parity.fileio import write_text_atomic

        for backend in sorted({o.backend for o in changed}):
            diff_path = Path(args.report_dir) / f"update-{backend}.diff"
            text = "".join(_diff_of(o) for o in changed if o.backend == backend)
            try:
                write_text_atomic(diff_path, text)
                console.print(
                    f"full diff ({backend}): {_rel(diff_path)} ({text.count(chr(10))} lines; --diff prints it)",
                    highlight=False,
                )
            except OSError as exc:
                console.print(f"[yellow]could not write {diff_path}: {exc}[/]", highlight=False)
    if args.diff and diff_text:
        console.print(Syntax(diff_text, "diff", theme="ansi_dark", word_wrap=True))
    tree = run_state.tree_fingerprint()

    def current(backend: str) -> set[str]:
        if args.report_dir is None:
            return set()
        return run_state.current_goldens(args.report_dir, tree, backend)

    not_refreshed = _not_refreshed(args.golden_dir, changed, backend_skip_reason, current)
    for line in not_refreshed:
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    unused = engine.unused_goldens()
    if unused and args.prune_unused:
        for path, why in unused:
            path.unlink()
            console.print(f"[yellow]deleted unused golden[/] {path} ({why})")
        unused = []
    _print_unused(console, unused)
    if args.report_dir is not None:
        refreshed = [
            (o.case.id, o.backend) for o in outcomes if o.status in ("created", "updated", "unchanged")
        ]
        try:  # accepted: `update --failed` does not take them again
            run_state.record_update(args.report_dir, tree, refreshed, sorted({b for _, b in jobs}))
        except OSError:
            pass
        for backend in sorted({b for _, b in jobs}):
            mine = [line for o in changed if o.backend == backend for line in _lines_of(review_lines, o)]
            mine.append(
                f"{sum(o.status == 'unchanged' and o.backend == backend for o in outcomes)} unchanged"
            )
            try:
                review.write_update_summary(
                    Path(args.report_dir) / f"update-{backend}.json", backend, tree, mine
                )
            except OSError:
                pass
    if args.combined and args.report_dir is not None:
        _combined_review(console, args.report_dir, tree)
    console.print(
        f"{len(changed)} golden(s) written, {unchanged} unchanged, {len(skipped)} skipped, {len(errors)} error(s)",
        highlight=False,
    )
    return 1 if errors or unused else 0


def _diff_of(outcome: Outcome) -> str:
    return outcome.diff if not outcome.diff or outcome.diff.endswith("\n") else outcome.diff + "\n"


def _combined_review(console: Console, report_dir: Path, tree: str) -> None:
    """The reviews of the backends updated after their last run on this tree; each other backend is
    named with why it was not updated (never shown as updated by an earlier update)."""
    from parity import review, run_state

    status = run_state.update_status(report_dir, tree, SUPPORTED_BACKENDS)
    updated = [b for b, why in status.items() if why is None]
    left = {b: why for b, why in status.items() if why is not None}
    title = "every backend updated on this tree"
    if left:
        title = f"updated on this tree: {', '.join(updated) or 'no backend'}; not updated: {', '.join(left)}"
    console.rule(title)
    paths = [Path(report_dir) / f"update-{b}.json" for b in updated]
    for line in review.combined_summary(paths, tree):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    for backend, why in left.items():
        console.print(f"== {backend}: {why}", soft_wrap=True, markup=False, highlight=False)


def _lines_of(lines: list[str], outcome: Outcome) -> list[str]:
    """The review lines of one outcome (its header and the indented lines under it)."""
    header = f"{outcome.status} {outcome.backend} {outcome.case.id}"
    try:
        start = lines.index(header)
    except ValueError:
        return []
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[start:end]


def _read_or_empty(engine: Engine, case: Case, backend: str) -> str:
    try:
        return engine.golden_path(case, backend).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ImportError):
        return ""


def _not_refreshed(
    root: Path, changed: list[Outcome], skip_reason: Any, current: Callable[[str], set[str]]
) -> list[str]:
    """Goldens of backends this environment cannot run, for the cases whose golden just changed,
    less those ``current(backend)`` knows are current on this tree (that backend's own update or a
    passing run wrote or checked them here): a warning names only goldens that may be stale."""
    cannot = sorted({b for o in changed for b in o.case.backends if skip_reason(b) is not None})
    out: list[str] = []
    for backend in cannot:
        known = current(backend)
        paths = []
        for outcome in changed:
            if backend in outcome.case.backends and outcome.case.id not in known:
                paths += sorted(Path(root).glob(f"{backend}/*/{outcome.case.id}.json"))
        if not paths:
            continue
        out.append(
            f"not refreshed here ({backend} cannot run in this environment): {len(paths)} {backend} golden(s) "
            f"of the same cases with no pass or update on this tree; refresh them with: "
            f'nox -s "parity_update({backend})"'
        )
        out += [f"  {_rel(p)}" for p in paths]
    return out


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _green_summary(console: Console, outcomes: list[Outcome]) -> None:
    """A green run in a few lines: the case runs per tier and backend, then skip reasons (as under
    the table)."""
    console.print(
        f"parity run: {len(outcomes)} case run(s), none failing (--verbose: the table of every case)",
        highlight=False,
    )
    for line in counts_lines((o.case.tier, o.backend, o.status) for o in outcomes):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    _print_skipped(console, outcomes)


def _print_messages(console: Console, failing: list[Outcome], verbose: bool) -> None:
    """The report of the first failure of each cause (``parity.verdict``), the others of that cause
    in one line; every report with ``verbose``."""
    if verbose:
        for outcome in failing:
            _print_message(console, outcome)
        return
    judged = verdict(Failure.from_outcome(o) for o in failing)
    by_id = {(o.case.id, o.backend): o for o in failing}
    for index, group in enumerate(judged.groups, 1):
        first = group.failures[0]
        _print_message(console, by_id[(first.case_id, first.backend)])
        if len(group) > 1:
            console.print(
                f"... and {len(group) - 1} more failure(s) of cause {index} ({group.headline()}): their "
                "reports are written, not printed here (`--verbose` prints them)",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )


def _print_message(console: Console, outcome: Outcome) -> None:
    """A failure report, unwrapped so its reproduce command stays one copyable line."""
    console.rule(f"[red]{outcome.backend} {outcome.case.id}", style="red")
    console.print(outcome.message, soft_wrap=True, markup=False, highlight=False)


def _summary_table(console: Console, title: str, outcomes: list[Outcome], backends: list[str]) -> None:
    table = Table(title=title)
    table.add_column("case", overflow="fold")
    table.add_column("tier")
    for backend in backends:
        table.add_column(backend)
    rows: dict[str, dict[str, Outcome]] = {}
    for outcome in outcomes:
        rows.setdefault(outcome.case.id, {})[outcome.backend] = outcome
    tiers = {o.case.id: o.case.tier for o in outcomes}
    for case_id, by_backend in rows.items():
        cells: list[Any] = [case_id, tiers[case_id]]
        for backend in backends:
            cell = by_backend.get(backend)
            if cell is None:
                cells.append(Text("-", style="dim"))
                continue
            label = _LABEL.get(cell.status, cell.status)
            timing = f" {cell.seconds:.2f}s" if cell.status != "skip" else ""
            cells.append(Text(label + timing, style=_STYLE.get(cell.status, "")))
        table.add_row(*cells)
    console.print(table)
    _print_skipped(console, outcomes)


def _print_skipped(console: Console, outcomes: list[Outcome]) -> None:
    # One line per reason: 33 MindSpore goldens skipped for one missing package are one fact.
    skipped: dict[tuple[str, str], list[str]] = {}
    for outcome in outcomes:
        if outcome.status == "skip" and outcome.message:
            skipped.setdefault((outcome.backend, outcome.message), []).append(outcome.case.id)
    for (backend, message), case_ids in skipped.items():
        what = case_ids[0] if len(case_ids) == 1 else f"{len(case_ids)} cases"
        console.print(f"[yellow]skipped[/] {backend} {what}: {message}")


def _print_unused(console: Console, unused: list[tuple[Path, str]]) -> None:
    for path, why in unused:
        console.print(f"[bold red]unused golden[/] {path}: {why}")
    if unused:
        prune = commands.parity("update", "--prune-unused")
        console.print(f"register their cases, or delete them with `{prune}`", markup=False, highlight=False)


def _cross(args: argparse.Namespace, console: Console) -> int:
    """``parity cross``: drive both sides (or, with the hidden ``--side``, be one of them)."""
    import importlib.util

    from parity import cross

    if args.side is not None:  # one side, in the process the driver started for it
        if args.out is None or args.weights is None:
            raise SystemExit("parity cross --side needs --out and --weights")
        cross.produce(
            args.side, args.out, args.weights, args.new_overrides if args.side == "new" else (),
            recipe=(args.recipe or ["dummy"])[0], seed=(args.seed or [None])[0],
        )  # fmt: skip
        return 0
    if importlib.util.find_spec("mindspore") is None:
        console.print(
            "parity cross: MindSpore is not installed in this environment; run `nox -s parity` (its "
            "parity(cross) session installs it) or `pip install -e '.\\[dev,mindspore]'`"
        )
        return 2
    return cross.run_cross(
        console, keep=args.keep, report_dir=args.report_dir, new_overrides=args.new_overrides,
        recipes=args.recipe, seeds=args.seed,
    )  # fmt: skip


def _report(args: argparse.Namespace, console: Console) -> int:
    if args.html is not None:
        try:
            import matplotlib  # noqa: F401  (the optional `report` extra)
        except ImportError:
            console.print(
                "[bold red]error:[/] report --html needs matplotlib: pip install hyper-parallel\\[report]",
                highlight=False,
            )
            return 2
        from parity.tools.html_report import write_html

        try:
            written = write_html(args.report_dir, args.html, png_dir=args.png_dir, keyword=args.keyword)
        except OSError as exc:
            console.print(f"[bold red]error:[/] {exc}", highlight=False)
            return 2
        console.print(
            f"wrote {args.html} ({written.failing} failing case(s), {written.images} image(s))",
            highlight=False,
        )
        return 0
    last = load_last_run(args.report_dir)  # the run `report --html` shows too, never an earlier one's
    console.print(last.stamp, highlight=False)

    def selected(case_id: Any) -> bool:
        return not args.keyword or keyword_matches(args.keyword, str(case_id or ""))

    reports = [(p, d, e) for p, d, e in last.reports if d is None or selected(d.get("case_id"))]
    rows = [r for r in (last.summary or {}).get("cases") or [] if isinstance(r, dict)]
    rows = [r for r in rows if selected(r.get("case_id"))]
    failures = run_failures([d for _, d, _ in reports if d is not None], rows)
    judged = verdict(failures, total=len(rows) if last.summary else None)
    # The verdict and the causes first; the cases one by one on request.
    for line in judged.lines():
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    for _path, _data, error in reports:
        if error is not None:
            console.print(f"[bold red]{error}[/]")
    if not reports and not judged.groups:
        console.print(f"no parity reports under {args.report_dir}")
        return 0
    if not args.verbose:
        if judged.groups:
            again = ["report", "--verbose", *(["-k", args.keyword] if args.keyword else [])]
            if Path(args.report_dir).resolve() != Path(DEFAULT_REPORT_DIR).resolve():
                again += ["--report-dir", str(args.report_dir)]
            console.print(
                f"each case's report, by cause: `{commands.parity(*again)}`",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )
        return 0
    group_of = {(f.backend, f.case_id): judged.group_of(f) for f in judged.failures}

    def cause_number(data: dict[str, Any] | None) -> int:
        return group_of.get((str((data or {}).get("backend")), str((data or {}).get("case_id"))), 0) + 1

    reports.sort(key=lambda r: cause_number(r[1]))
    for path, data, error in reports:
        if error is not None:
            continue
        assert data is not None
        summary = data.get("summary") or {}
        table = Table(show_header=False, box=None)
        table.add_column(style="bold")
        table.add_column()
        for label, value in (
            ("backend / platform", f"{data.get('backend')} / {data.get('platform')}"),
            ("tier / kind", f"{data.get('tier')} / {data.get('kind')}"),
            ("error", data.get("error")),
            ("artifact path", summary.get("artifact_path")),
            ("first index", summary.get("first_index")),
            ("expected", with_decimal(summary.get("expected"))),
            ("actual", with_decimal(summary.get("actual"))),
            ("mismatches", summary.get("mismatch_count")),
            ("max |diff|", summary.get("max_abs_diff")),
            ("max ULP", summary.get("max_ulp")),
            ("max rel diff (sign changed or infinite)", summary.get("max_rel_diff")),
            ("hypothesis blob", (data.get("hypothesis") or {}).get("blob")),
            ("localisation", (data.get("localisation") or {}).get("line")),
            ("reproduce", data.get("reproduce")),
            ("file", str(path)),
        ):
            if value is not None:
                table.add_row(label, Text(str(value)))
        for diff in (data.get("differences") or [])[:10]:
            table.add_row(
                f"  {diff.get('phase')}/{diff.get('kind')}",
                Text(f"{diff.get('path')}: {diff.get('message')}"),
            )
        title = f"cause {cause_number(data)}: {data.get('case_id')}"
        console.print(Panel(table, title=title, border_style="red"))
    return 0
