"""The coverage map: which case groups run which product line, and how long each group takes.

A group is the unit a mutant runs: the cases that share one cached run (``share=``), or one case.
The map comes from one run of every torch group in the mutated tree with no mutant chosen (the
trampolines call the original copies), measured by coverage.py in every process the cases start:
the group processes switch coverage's dynamic context per group, forked ranks inherit it
(``patch = fork, _exit``), and fresh interpreters (torchrun workers, the long-horizon child) start
coverage from ``sitecustomize`` with the group as their static context. A mutant then runs only
the groups that execute the statement it changes. Lines run while the cases register (context
``import``) run in the warm interpreter before any mutant is chosen, so their mutants get a fresh
interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from parity.tools.mutation.child import CHILD_CODE, child_env

__all__ = ["CoverageMap", "Group", "groups_of", "measure"]

IMPORT = "import"


@dataclass
class Group:
    label: str
    cases: list[str]
    seconds: float = 0.0
    status: str = "pass"  # the map run's result: a red group is never selected


@dataclass
class CoverageMap:
    groups: list[Group]
    lines: dict[str, dict[int, list[str]]]  # tree-relative file -> line -> group labels
    at_import: dict[str, list[int]] = field(default_factory=dict)  # file -> lines run at import
    modules: list[str] = field(default_factory=list)  # what the groups' processes imported
    files: list[str] | None = None  # the product files measured (None: every one)
    # file -> mutmut function name -> the groups that ran any of its mutated statements: what a
    # later map of an edited file falls back on (``by_function``), since its lines moved.
    functions: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # Files edited since this map was measured: their mutants take their function's groups.
    by_function: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._by_label = {g.label: g for g in self.groups if g.status == "pass"}
        self._import = {f: set(v) for f, v in self.at_import.items()}

    def groups_for(self, path: str, line: int, function: str | None = None) -> list[Group]:
        """The green groups that run ``path``'s statement at ``line`` (in a file edited since the
        map: that ``function``'s groups; a statement run at import: the file's groups), cheapest
        first."""
        if path in self.by_function:
            labels = self.functions.get(path, {}).get(function or "", [])
        elif line in self._import.get(path, ()):
            # A statement run at import (a registration, a table) serves every later use of the
            # module: the groups that ran any line of the file, not only those that imported it.
            labels = sorted({x for rows in self.lines.get(path, {}).values() for x in rows})
        else:
            labels = self.lines.get(path, {}).get(line, [])
        chosen = [self._by_label[x] for x in labels if x in self._by_label]
        return sorted(chosen, key=lambda g: (g.seconds, g.label))

    def groups_of(self, m: Any) -> list[Group]:
        """``groups_for`` of a mutant."""
        return self.groups_for(m.path, m.tree_line, m.function)

    def with_functions(self, mutants: Iterable[Any]) -> CoverageMap:
        """This map with each mutated function's groups (the union over its mutants' statements)."""
        table: dict[str, dict[str, set[str]]] = {}
        for m in mutants:
            labels = self.lines.get(m.path, {}).get(m.tree_line, [])
            table.setdefault(m.path, {}).setdefault(m.function, set()).update(labels)
        self.functions = {f: {fn: sorted(v) for fn, v in rows.items()} for f, rows in table.items()}
        return self

    def edited(self, paths: Iterable[str], mutants: Iterable[Any]) -> CoverageMap | None:
        """This map for a tree where ``paths`` were edited since it was measured: their mutants take
        their function's groups. None when a mutant of those files is in a function the map never
        saw (a new function: nothing to fall back on)."""
        paths = set(paths)
        for m in mutants:
            if m.path in paths and m.function not in self.functions.get(m.path, {}):
                return None
        return CoverageMap(
            self.groups,
            {f: rows for f, rows in self.lines.items() if f not in paths},
            {f: rows for f, rows in self.at_import.items() if f not in paths},
            self.modules,
            self.files,
            self.functions,
            paths,
        )

    def measures(self, paths: Iterable[str]) -> bool:
        """Whether this map measured every file of ``paths`` (a map of some files serves only them)."""
        return self.files is None or set(paths) <= set(self.files)

    def runs_at_import(self, path: str, line: int) -> bool:
        """Whether the statement runs while the cases register (an edited file: assumed so, which
        costs a fresh interpreter and is always right)."""
        return path in self.by_function or line in self._import.get(path, ())

    def groups_needed(self, mutants: Iterable[Any]) -> list[Group]:
        seen: dict[str, Group] = {}
        for m in mutants:
            for g in self.groups_of(m):
                seen.setdefault(g.label, g)
        return sorted(seen.values(), key=lambda g: int(g.label[1:]))

    def tiers(self) -> dict[str, str]:
        """label -> the tier of its cases (A, B, or "A+B" for a group holding both)."""
        from parity.cases import load_registry

        registry = load_registry("parity.suites:REGISTRY")
        out = {}
        for g in self.groups:
            found = sorted({c.tier for c in map(registry.get, g.cases) if c is not None})
            out[g.label] = "+".join(found)
        return out

    def red(self) -> list[Group]:
        return [g for g in self.groups if g.status != "pass"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "groups": [
                {"label": g.label, "cases": g.cases, "seconds": round(g.seconds, 3), "status": g.status}
                for g in self.groups
            ],
            "lines": {
                f: {str(n): v for n, v in sorted(rows.items())} for f, rows in sorted(self.lines.items())
            },
            "at_import": {f: sorted(v) for f, v in sorted(self.at_import.items())},
            "modules": self.modules,
            "files": self.files,
            "functions": self.functions,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CoverageMap:
        groups = [Group(g["label"], list(g["cases"]), g["seconds"], g["status"]) for g in data["groups"]]
        lines = {f: {int(n): list(v) for n, v in rows.items()} for f, rows in data["lines"].items()}
        at_import = {f: list(v) for f, v in data["at_import"].items()}
        files = data.get("files")
        return cls(
            groups,
            lines,
            at_import,
            list(data.get("modules", [])),
            None if files is None else list(files),
            {f: {fn: list(v) for fn, v in rows.items()} for f, rows in data.get("functions", {}).items()},
        )


def groups_of(registry: Any, backend: str = "torch") -> list[Group]:
    """The registry's groups on ``backend``: cases sharing a run together, in registration order."""
    by_key: dict[str, Group] = {}
    for case in registry:
        if backend not in case.backends:
            continue
        key = f"share:{case.share}" if case.share else f"case:{case.id}"
        if key not in by_key:
            by_key[key] = Group(label=f"g{len(by_key)}", cases=[])
        by_key[key].cases.append(case.id)
    return list(by_key.values())


_SITECUSTOMIZE = """import os
if os.environ.get("COVERAGE_PROCESS_START"):
    import coverage
    coverage.process_startup()
"""


def _rcfile(folder: Path, tree: Path, files: Sequence[str] | None = None) -> Path:
    """coverage.py's settings: every product file, or only ``files`` (tree-relative), which costs
    the cases little: coverage.py traces lines only in the files it measures."""
    rc = folder / "coveragerc"
    where = (
        f"source = {tree / 'hyper_parallel'}\n"
        if files is None
        else "include =\n" + "".join(f"    {tree / f}\n" for f in sorted(files))
    )
    rc.write_text(
        "[run]\n" + where + f"data_file = {folder / 'data' / '.coverage'}\n"
        "parallel = true\n"
        "patch = fork, _exit\n"
        # A fresh interpreter works for the group its parent ran when it started.
        "context = ${PARITY_MUTATION_GROUP-import}\n",
        encoding="utf-8",
    )
    return rc


def _preloadable(module: str) -> bool:
    """A module the warm interpreter may import ahead of the mutants: not the run's own entry, not a
    case file loaded by path, not coverage.py (the mutants run unmeasured)."""
    top = module.split(".")[0]
    return top not in ("__main__", "coverage", "sitecustomize") and not top.startswith("_parity_cases_")


def measure(
    tree: Path, folder: Path, console: Console, *, jobs: int, files: Sequence[str] | None = None
) -> CoverageMap:
    """Run every group once under coverage.py and read back the lines, contexts and timings, of every
    product file or only of ``files`` (the files a ``--changed`` or ``--module`` run mutates)."""
    import shutil

    import coverage

    from parity.cases import load_registry

    start = time.perf_counter()
    registry = load_registry("parity.suites:REGISTRY")
    groups = groups_of(registry)
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "boot").mkdir(parents=True)
    (folder / "data").mkdir()
    (folder / "boot" / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    rc = _rcfile(folder, tree, files)
    env = child_env(tree, extra_path=[folder / "boot"])
    env["COVERAGE_PROCESS_START"] = str(rc)
    env.pop("PARITY_MUTATION_GROUP", None)
    shards = [groups[i :: max(1, jobs)] for i in range(max(1, jobs))]
    what = "every product file" if files is None else f"{len(files)} product file(s)"
    console.print(
        f"coverage map of {what}: {len(groups)} case groups under coverage.py, {len(shards)} processes ..."
    )
    procs = []
    for n, shard in enumerate(shards):
        out = folder / f"shard{n}.json"
        spec = {
            "mutant": "",
            "groups": [g.cases for g in shard],
            "labels": [g.label for g in shard],
            "stop_at_first": False,
            "out": str(out),
            "tree": str(tree),
            "modules_out": str(folder / f"shard{n}.modules"),
        }
        spec_path = folder / f"shard{n}.spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        log = open(folder / f"shard{n}.log", "wb")  # closed below
        procs.append((shard, out, log, subprocess.Popen(
            [sys.executable, "-c", CHILD_CODE, str(spec_path)],
            cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT,
        )))  # fmt: skip
    try:
        for shard, out, log, proc in procs:
            proc.wait()
            log.close()
            if not out.exists():
                raise RuntimeError(f"the coverage map's run wrote no result: see {log.name} in {folder}")
            verdict = json.loads(out.read_text(encoding="utf-8"))
            if len(verdict["groups"]) != len(shard):
                raise RuntimeError(
                    f"the coverage map's run stopped early ({verdict.get('evidence')}): see {folder}"
                )
            for g, result in zip(shard, verdict["groups"]):
                g.seconds, g.status = float(result["seconds"]), result["status"]
    finally:  # stopped (Ctrl-C, SIGTERM, a failed shard): the other shards stop too
        for _, _, log, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
    cov = coverage.Coverage(data_file=str(folder / "data" / ".coverage"), config_file=str(rc))
    cov.combine([str(folder / "data")], keep=False)
    data = cov.get_data()
    root = str(tree) + os.sep
    lines: dict[str, dict[int, list[str]]] = {}
    at_import: dict[str, list[int]] = {}
    for measured in data.measured_files():
        if not measured.startswith(root):
            continue
        rel = measured[len(root) :]
        rows: dict[int, list[str]] = {}
        imported: list[int] = []
        for line, contexts in data.contexts_by_lineno(measured).items():
            labels = sorted({c.rpartition("|")[2] for c in contexts if c} - {"import"})
            if labels:
                rows[line] = labels
            if "import" in contexts:
                imported.append(line)
        lines[rel] = rows
        at_import[rel] = sorted(imported)
    modules: set[str] = set()
    for n in range(len(shards)):
        modules.update((folder / f"shard{n}.modules").read_text(encoding="utf-8").split())
    cmap = CoverageMap(
        groups,
        lines,
        at_import,
        sorted(m for m in modules if _preloadable(m)),
        None if files is None else sorted(files),
    )
    red = cmap.red()
    console.print(
        f"coverage map: {sum(len(r) for r in lines.values())} product lines run by "
        f"{len(groups) - len(red)} green groups, in {time.perf_counter() - start:.0f}s"
        + (
            f"; {len(red)} groups red on the unmutated tree, left out: {', '.join(g.cases[0] for g in red[:3])}"
            if red
            else ""
        )
    )
    return cmap
