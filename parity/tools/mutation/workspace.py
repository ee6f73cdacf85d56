"""The mutation cache folder (``.mutation/`` by default): the mutated tree, its mutants and map.

Each is keyed by a hash of the files a case run reads (the product, the harness core and its
cases, examples, scripts, pyproject.toml: tracked and untracked-but-not-ignored) and the mutmut
version, so a run on an unchanged tree reuses them; an edit of the tests, the documents or the
harness's tools does not count (the tools are copied into the tree afresh on every run).
Each product file's mutants are cached by its content, so a rebuild mutates only what changed.

The last map of every file is also kept apart (``map-full.json``) with the hash of each product
file and of the rest of what a case run reads. A run of part of the product (``--changed``,
``--module``) on a tree where only product files changed since then reuses it: an unchanged
file keeps its lines, and a mutant of an edited file takes the groups that ran any statement of its
function then. That spares the map's run (minutes) on every edit of the product; a new function,
or any edit of the cases, the harness or the settings, measures again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from rich.console import Console

from parity.tools.mutation import coverage
from parity.tools.mutation.mutants import PRODUCT as PRODUCT_DIR
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
        self._files: dict[str, str] | None = None

    def _hashes(self) -> dict[str, str]:
        """sha256 of each file a case run reads (tracked, or untracked and not ignored)."""
        if self._files is None:
            self._files = {
                rel: hashlib.sha256((self.repo / rel).read_bytes()).hexdigest()
                for rel in tracked_files(self.repo)
                if rel.startswith(KEYED) and not rel.startswith(UNKEYED) and not rel.endswith(".md")
            }
        return self._files

    def _digest(self, rels: list[str]) -> str:
        digest = hashlib.sha256(metadata.version("mutmut").encode())
        hashes = self._hashes()
        for rel in rels:
            digest.update(rel.encode() + b"\0" + bytes.fromhex(hashes[rel]))
        return digest.hexdigest()[:16]

    def key(self) -> str:
        """Hash of the files a case run reads and the mutmut version."""
        return self._digest(list(self._hashes()))

    def harness_key(self) -> str:
        """``key`` less the product: what must not change for an older map to serve."""
        return self._digest([rel for rel in self._hashes() if not rel.startswith(f"{PRODUCT_DIR}/")])

    def product_hashes(self) -> dict[str, str]:
        return {rel: h for rel, h in self._hashes().items() if rel.startswith(f"{PRODUCT_DIR}/")}

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
        self,
        console: Console,
        tree: Path,
        *,
        jobs: int,
        mutants: list[Mutant],
        pool: list[Mutant],
        files: set[str] | None = None,
    ) -> coverage.CoverageMap:
        """Which case groups run which product line, measured when the repository changed.

        A map of this tree that measured ``files`` (or every file) is reused; then, for ``files``,
        the last full map when only the product changed since (``pool``'s functions all in it);
        otherwise only ``files`` are measured when given: a ``--changed`` run then pays for its
        cases' runs, not for tracing every product line. ``mutants`` (all of them) give a full
        map its per-function groups.
        """
        path, full = self.folder / "map.json", self.folder / "map-full.json"
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") == self.key():
                cached = coverage.CoverageMap.from_dict(data)
                enough = cached.files is None if files is None else cached.measures(files)
                if enough:
                    return cached
        if files is not None and full.exists():
            data = json.loads(full.read_text(encoding="utf-8"))
            if data.get("harness") == self.harness_key():
                now = self.product_hashes()
                edited = sorted(f for f, h in now.items() if data.get("product", {}).get(f) != h)
                reused = coverage.CoverageMap.from_dict(data).edited(edited, pool)
                if reused is not None:
                    console.print(
                        f"coverage map: the full map of {data.get('when', 'an earlier tree')} serves "
                        f"({len(edited)} product file(s) edited since: their mutants take the groups "
                        "that ran their function then)"
                    )
                    return reused
        cmap = coverage.measure(
            tree, self.folder / "hits", console, jobs=jobs, files=None if files is None else sorted(files)
        )
        _write(path, {"key": self.key(), **cmap.to_dict()})
        if files is None:
            cmap.with_functions(mutants)
            _write(
                full,
                {
                    "harness": self.harness_key(),
                    "product": self.product_hashes(),
                    "when": time.strftime("%Y-%m-%d %H:%M"),
                    **cmap.to_dict(),
                },
            )
        return cmap


def _write(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)
