"""Wall time of the parity suite: ``python -m parity run`` serial vs parallel, and the pytest suite
``-n 0`` vs ``-n 2``, interleaved, optionally against an older revision of the project side by side.

Run: ``python benchmarks/bench_parity_suite.py [--rounds 2] [--rev <git revision> ...] [--only TEXT ...]``.
Each revision is checked out into a temporary ``git worktree`` (HEAD's working tree is measured as
``work``); every round runs every command of every tree once, in turn, so all see the same machine
load. ``--only`` keeps the commands whose name contains one of the texts (``--only pytest``: the
two pytest commands). Printed: every measurement with its CPU time (user + system, the command and
its children) and the 1-minute load average when it started, then the median wall time of each
command per tree and the number of cases it ran.

On a shared machine read the CPU time beside the wall time: with the scheduler's autogroups
(``/proc/sys/kernel/sched_autogroup_enabled``) the CPU is shared between sessions, not processes,
so while other sessions keep the cores busy ``-n 2`` gets no more CPU than ``-n 0`` and only its
extra cost shows (a second interpreter, framework imports and first-use warm-up per worker); its
gain needs idle cores.
Targets (issue 9): ``parity run`` under 30 s warm on 2 cores, ``pytest -n 2`` faster than ``-n 0``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# ``python -c`` with the tree as working folder imports the tree's packages even when the project is
# pip-installed in editable mode (``-m`` would find the editable install); the probe prints which.
_CLI = (
    "import runpy, sys, parity; sys.stderr.write('parity from %s\\n' % parity.__file__); "
    "sys.argv = ['python -m parity', *sys.argv[1:]]; runpy.run_module('parity', run_name='__main__', alter_sys=True)"
)
COMMANDS = {
    "parity run -j 1": [sys.executable, "-c", _CLI, "run", "-j", "1"],
    "parity run (default -j)": [sys.executable, "-c", _CLI, "run"],
    "pytest suite -n 0": [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "tests/parity/test_parity_suite.py",
    ],
    "pytest suite -n 2": [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-n",
        "2",
        "tests/parity/test_parity_suite.py",
    ],
}


def _env(tree: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}
    env.pop("PARITY_JOBS", None)
    return env


def _supports_jobs(tree: Path) -> bool:
    return (tree / "parity" / "parallel.py").exists()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(name: str, tree: Path) -> tuple[float, float, str]:
    cmd = list(COMMANDS[name])
    if name.startswith("parity run") and not _supports_jobs(tree):
        cmd = cmd[:4]  # that revision has no -j: it is serial either way
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(cmd, cwd=tree, env=_env(tree), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    result = [line for line in lines if " passed" in line][-1:] or lines[-1:] or [""]
    origin = [line.split(" from ", 1)[1] for line in lines if line.startswith("parity from ")][:1]
    summary = re.sub(r"\s+", " ", result[0])[:70] + (f"  [parity from {origin[0]}]" if origin else "")
    if proc.returncode != 0:
        summary = f"EXIT {proc.returncode}: {summary}"
    return seconds, cpu, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--rev", action="append", default=[], help="older revision to measure beside the work tree"
    )
    parser.add_argument(
        "--only", action="append", default=[], help="measure only the commands whose name contains this"
    )
    parser.add_argument(
        "--no-work",
        action="store_true",
        help="measure only the --rev trees, not the working tree (which may hold others' uncommitted edits)",
    )
    args = parser.parse_args()
    if args.no_work and not args.rev:
        parser.error("--no-work needs at least one --rev")
    names = [n for n in COMMANDS if not args.only or any(text in n for text in args.only)]
    if not names:
        parser.error(f"--only {args.only} matches none of {list(COMMANDS)}")
    trees: dict[str, Path] = {} if args.no_work else {"work": REPO}
    with tempfile.TemporaryDirectory(prefix="bench-parity-") as tmp:
        for rev in args.rev:
            path = Path(tmp) / rev.replace("/", "_")
            subprocess.run(["git", "worktree", "add", "--detach", str(path), rev], cwd=REPO, check=True,
                           capture_output=True)  # fmt: skip
            trees[rev] = path
        try:
            times: dict[tuple[str, str], list[float]] = {}
            summaries: dict[tuple[str, str], str] = {}
            # One warm-up pass (page cache, .pyc files), then the measured rounds.
            for round_ in range(args.rounds + 1):
                for name in names:
                    for label, tree in trees.items():
                        load = os.getloadavg()[0]
                        seconds, cpu, summary = _run(name, tree)
                        tag = "warm-up" if round_ == 0 else f"round {round_}"
                        print(
                            f"  {tag:8s} {name:24s} {label:10s} {seconds:6.1f} s  cpu {cpu:6.1f} s  (load {load:.1f})",
                            flush=True,
                        )
                        if round_ > 0:
                            times.setdefault((label, name), []).append(seconds)
                            summaries[(label, name)] = summary
            print(
                f"{args.rounds} interleaved round(s), {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
            )
            for name in names:
                for label in trees:
                    median = statistics.median(times[(label, name)])
                    print(f"  {name:24s} {label:10s} {median:6.1f} s   {summaries[(label, name)]}")
        finally:
            for label, path in trees.items():
                if label != "work":
                    subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO,
                                   capture_output=True)  # fmt: skip


if __name__ == "__main__":
    main()
