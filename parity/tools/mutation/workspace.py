"""The mutation cache folder (``.mutation/`` by default): the mutated tree, its mutants and map.

Each is keyed by a hash of the files a case run reads (the product, the harness core and its
cases, examples, scripts, pyproject.toml: tracked and untracked-but-not-ignored) and the mutmut
version, so a run on an unchanged tree reuses them; an edit of the tests, the documents or the
harness's tools does not count (the tools are copied into the tree afresh on every run).
Each product file's mutants are cached by its content, so a rebuild mutates only what changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from rich.console import Console

from parity.tools.mutation import coverage
from parity.tools.mutation.mutants import Mutant, build_tree, tracked_files

__all__ = ["Workspace"]

KEYED = ("hyper_parallel/", "parity/", "examples/", "scripts/", "pyproject.toml")
# The harness's tools (the self-check, this runner) change no case's result: copied fresh into the
# tree on every run, never a reason to rebuild the map.
UNKEYED = ("parity/tools/",)


@dataclass
class Workspace:
    repo: Path
    folder: Path

    def __post_init__(self) -> None:
        self.folder = self.folder if self.folder.is_absolute() else self.repo / self.folder
        self._key: str | None = None

    def key(self) -> str:
        """Hash of the files a case run reads and the mutmut version."""
        if self._key is None:
            digest = hashlib.sha256(metadata.version("mutmut").encode())
            for rel in tracked_files(self.repo):
                if not rel.startswith(KEYED) or rel.startswith(UNKEYED) or rel.endswith(".md"):
                    continue
                digest.update(rel.encode() + b"\0")
                digest.update(hashlib.sha256((self.repo / rel).read_bytes()).digest())
            self._key = digest.hexdigest()[:16]
        return self._key

    def mutants(self, console: Console, *, jobs: int) -> tuple[Path, list[Mutant]]:
        """The mutated tree and its mutants, built when the repository changed."""
        tree = self.folder / "tree"
        index = self.folder / "mutants.json"
        if index.exists():
            data = json.loads(index.read_text(encoding="utf-8"))
            if data.get("key") == self.key() and tree.is_dir():
                for rel in tracked_files(self.repo):  # the tools as they are now
                    if rel.startswith(UNKEYED):
                        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(self.repo / rel, tree / rel)
                return tree, [Mutant(**m) for m in data["mutants"]]
        console.print("generating mutants (mutmut) ...")
        mutants = build_tree(self.repo, tree, self.folder / "files", jobs=jobs)
        _write(index, {"key": self.key(), "mutants": [m.to_dict() for m in mutants]})
        console.print(f"{len(mutants)} mutants in {len({m.path for m in mutants})} files")
        return tree, mutants

    def coverage_map(
        self, console: Console, tree: Path, *, jobs: int, files: set[str] | None = None
    ) -> coverage.CoverageMap:
        """Which case groups run which product line, measured when the repository changed.

        A map of this tree that measured ``files`` (or every file) is reused; otherwise only
        ``files`` are measured when given: a ``--changed`` run then pays for its cases' runs, not
        for tracing every product line (the full map costs several times the cases' own time).
        """
        path = self.folder / "map.json"
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") == self.key():
                cached = coverage.CoverageMap.from_dict(data)
                enough = cached.files is None if files is None else cached.measures(files)
                if enough:
                    return cached
        cmap = coverage.measure(
            tree, self.folder / "hits", console, jobs=jobs, files=None if files is None else sorted(files)
        )
        _write(path, {"key": self.key(), **cmap.to_dict()})
        return cmap


def _write(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)
