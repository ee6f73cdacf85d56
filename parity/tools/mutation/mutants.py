"""The mutants: mutmut's generated divergences, one record per mutant, and the mutated tree.

mutmut 3 rewrites each product function into a trampoline plus one copy per mutation (its
operators: numbers, strings, comparisons, boolean and arithmetic operators, removed arguments,
``None`` returns ...). The trampoline picks the copy named by ``MUTANT_UNDER_TEST`` at call time,
so ONE mutated tree serves every mutant, and every process a case starts (forked ranks, torchrun
workers, a re-executed interpreter) runs the mutant its parent chose.

:func:`describe` turns each generated copy into a :class:`Mutant`: the file, function and source
line it changes, the change in a few tokens (``'<' -> '<='``) and a key that survives edits
elsewhere in the file (the reviewed list of equivalent mutants, ``equivalents.toml``, names
mutants by it).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tokenize
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PRODUCT",
    "Mutant",
    "area_of",
    "build_tree",
    "describe",
    "function_hashes",
    "product_files",
]

# Every product module the parity suite covers: both trainers, the components, init_helpers,
# the legacy builders and mapping, config, checkpointing, data, the torch model and platform.
# The MindSpore platform and model are checked by their own tier B/C runs, not by these cases.
PRODUCT = "hyper_parallel"
EXCLUDED = ("mindspore",)  # file names containing these are copied unmutated
_SEP = "ǁ"
RECORD_FORMAT = 2  # bump when describe() changes what a record holds (the per-file cache is keyed by it)


@dataclass(frozen=True)
class Mutant:
    """One generated divergence. ``name`` is what ``MUTANT_UNDER_TEST`` takes."""

    name: str  # e.g. hyper_parallel.components.loss.xǁCrossEntropyLossǁ__call____mutmut_3
    function: str  # the mangled function name the trampoline records in stats mode
    path: str  # source file, relative to the repository
    qualname: str  # Class.method or function
    line: int  # the first changed line in the source file (1-based)
    tree_line: int  # where the coverage map looks: that statement's first line in the mutated file
    operator: str  # the change in tokens, e.g. "'<' -> '<='"
    before: str  # the source line (stripped)
    after: str  # the mutated line (stripped)
    key: str  # path:qualname:hash of the change; stable across edits elsewhere

    def location(self) -> str:
        return f"{self.path}:{self.qualname}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def product_files(root: Path) -> list[Path]:
    """Product sources under ``root`` (relative paths, sorted), mutated or not."""
    return sorted(p.relative_to(root) for p in (root / PRODUCT).rglob("*.py"))


def mutated(path: Path) -> bool:
    return not any(word in path.name for word in EXCLUDED)


def area_of(path: str) -> str:
    """The component or area a product file belongs to (the report's second grouping)."""
    parts = Path(path).with_suffix("").parts
    if len(parts) >= 3 and parts[1] == "components":
        return parts[2]  # optimizer, lr_scheduler, loss, tokenizer, dataloader, checkpoint, ...
    if len(parts) >= 3 and parts[1] == "trainer":
        if parts[2] in ("hyper_trainer", "init_helpers"):
            return "hyper_trainer" if parts[2] == "hyper_trainer" else "init_helpers"
        if parts[2] == "legacy_mapping":
            return "legacy_mapping"
        return "legacy_trainer"
    return parts[1] if len(parts) >= 2 else parts[0]


def _module_name(path: Path) -> str:
    name = str(path.with_suffix("")).replace(os.sep, ".")
    return name.replace(".__init__", "")


def _def_lines(source: str) -> dict[str, int]:
    """mutmut's mangled key (``x_f`` / ``xǁClsǁf``) -> the line of its ``def`` in ``source``."""
    out: dict[str, int] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[f"x_{node.name}"] = node.lineno
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    out[f"x{_SEP}{node.name}{_SEP}{item.name}"] = item.lineno
    return out


def _qualname(mangled: str) -> str:
    if mangled.startswith(f"x{_SEP}"):
        _, cls, func = mangled.split(_SEP)
        return f"{cls}.{func}"
    return mangled[2:]


_TOKEN = re.compile(r"\s*(\"(?:\\.|[^\"])*\"|'(?:\\.|[^'])*'|\w+|==|!=|<=|>=|//|\*\*|<<|>>|\S)")


def _tokens(text: str) -> list[str]:
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.string.strip()]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _TOKEN.findall(text)


def operator_of(before: str, after: str) -> str:
    """The smallest token change that turns ``before`` into ``after``."""
    a, b = _tokens(before), _tokens(after)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    parts = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = " ".join(a[i1:i2]), " ".join(b[j1:j2])
        if tag == "replace":
            parts.append(f"{old!r} -> {new!r}")
        elif tag == "delete":
            parts.append(f"{old!r} removed")
        elif tag == "insert":
            parts.append(f"{new!r} added")
    text = "; ".join(parts) or "whitespace"
    return text if len(text) <= 120 else text[:117] + "..."


def _generated_functions(code: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Name -> node of every function in mutmut's output (top level and in classes).

    Read from the code itself: mutmut's own line-span index misses the ``def`` line of a few
    methods."""
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.parse(code).body:
        items = node.body if isinstance(node, ast.ClassDef) else [node]
        for item in items:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.end_lineno:
                out[item.name] = item
    return out


def _statement_line(function: ast.AST, line: int) -> int:
    """The first line of the innermost statement of ``function`` that spans ``line`` (1-based):
    the line coverage.py records for it."""
    best = getattr(function, "lineno", line)
    for node in ast.walk(function):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            best = max(best, node.lineno)
    return best


def _first_statement(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The first body statement that runs (a docstring is no bytecode, so coverage never sees it)."""
    body = function.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[1].lineno
    return body[0].lineno


def describe(path: Path, source: str, code: str, mutant_names: Iterable[str]) -> list[Mutant]:
    """One :class:`Mutant` per generated copy of ``path``'s functions."""
    lines = code.splitlines()
    spans = _generated_functions(code)
    defs = _def_lines(source)
    module = _module_name(path)
    seen: dict[str, int] = {}
    out = []
    for local in mutant_names:
        mangled = local.partition("__mutmut_")[0]
        # The def lines differ by the generated name: compare the bodies.
        orig_node, mine_node = spans[f"{mangled}__mutmut_orig"], spans[local]
        o_first, m_first = orig_node.lineno - 1, mine_node.lineno - 1
        o_body = lines[o_first + 1 : orig_node.end_lineno]
        m_body = lines[m_first + 1 : mine_node.end_lineno]
        first = next(
            (i for i, (x, y) in enumerate(zip(o_body, m_body)) if x != y), min(len(o_body), len(m_body))
        )
        before = o_body[first].strip() if first < len(o_body) else ""
        after = m_body[first].strip() if first < len(m_body) else ""
        if len(o_body) != len(m_body):  # a change that joins or splits lines: show the whole tail
            before = " ".join(t.strip() for t in o_body[first:])
            after = " ".join(t.strip() for t in m_body[first:])
        line = defs.get(mangled, 0) + 1 + first
        tree_line = _statement_line(orig_node, o_first + 2 + first)
        if not before and not after:  # a default value in the signature: the def line changed
            before = lines[o_first].strip().replace(f"{mangled}__mutmut_orig", mangled[2:])
            after = lines[m_first].strip().replace(local, mangled[2:])
            line = defs.get(mangled, 0)
            # A default matters when the function runs: look where its body starts.
            tree_line = _first_statement(orig_node)
        qual = _qualname(mangled)
        digest = hashlib.sha1(f"{before}\0{after}".encode()).hexdigest()[:8]
        key = f"{path.as_posix()}:{qual}:{digest}"
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}#{seen[key]}"
        out.append(
            Mutant(
                name=f"{module}.{local}",
                function=f"{module}.{mangled}",
                path=path.as_posix(),
                qualname=qual,
                line=line,
                tree_line=tree_line,
                operator=operator_of(before, after),
                before=before[:200],
                after=after[:200],
                key=key,
            )
        )
    return out


def _mutate_one(args: tuple[str, str, str]) -> tuple[str, str, list[dict[str, Any]]]:
    """Worker: mutate one file (relative path) of the repository at ``root``; cached by content."""
    root, rel, cache = args
    path = Path(rel)
    source = (Path(root) / path).read_text(encoding="utf-8")
    digest = hashlib.sha256(f"{RECORD_FORMAT}\0{rel}\0{source}".encode()).hexdigest()[:24]
    cached = Path(cache) / f"{digest}.json"
    if cached.exists():
        data = json.loads(cached.read_text(encoding="utf-8"))
        return rel, data["code"], data["mutants"]
    from mutmut.mutation.file_mutation import mutate_file_contents

    result = mutate_file_contents(str(path), source)
    records = [m.to_dict() for m in describe(path, source, result.code, result.mutant_names)]
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"code": result.code, "mutants": records}), encoding="utf-8")
    os.replace(tmp, cached)
    return rel, result.code, records


def tracked_files(root: Path) -> list[str]:
    """The repository's files as git lists them (tracked and untracked-but-not-ignored)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return sorted(p for p in out.split("\0") if p and (root / p).is_file())


def build_tree(root: Path, dest: Path, cache: Path, *, jobs: int = 2) -> list[Mutant]:
    """Copy the repository at ``root`` into ``dest`` with every product file mutated; return the mutants.

    Each file's mutants are cached in ``cache`` by its content. mutmut's generator needs its
    configuration (``[tool.mutmut]`` in pyproject.toml), read from the working directory, so the
    workers run in ``root``.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for rel in tracked_files(root):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    todo = [(str(root), str(p), str(cache)) for p in product_files(root) if mutated(p)]
    mutants: list[Mutant] = []
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
            for rel, code, records in pool.map(_mutate_one, todo, chunksize=1):
                (dest / rel).write_text(code, encoding="utf-8")
                mutants.extend(Mutant(**r) for r in records)
    finally:
        os.chdir(cwd)
    return mutants


def function_hashes(source: str) -> dict[str, str]:
    """mangled function key -> hash of its source (what ``--changed`` compares with the merge base)."""
    from mutmut.mutation.file_mutation import compute_function_hashes

    return dict(compute_function_hashes(source))
