"""Both command lines, field by field: the config trees walked, one value per refusing class.

The fields come from the config dataclasses themselves (the legacy schema ``LegacyTrainerArgs`` and
the new ``HyperTrainer.Config`` tree of the debug recipe, each dataloader subcommand included), so
a new field is swept as soon as it exists. A field is swept when it is numeric (int, float, a tuple
of numbers), a closed set (``Literal``, bool) or a string. Three ways in:
``scripts/train_lm.py CONFIG.yaml --a.b=v``, ``python -m hyper_parallel.train CONFIG.yaml --a.b=v``
and ``python -m hyper_parallel.train --module qwen3_5 --config debug --a.b v``, each through the
entry point's own parse step (``parse_config``) under its own error reporting (``run_main``).

Used by the ``cli_refusals`` goldens (``parity/suites/cli_refusals.py``: the exact line each value
gets) and by the command-line fault suite (``tests/torch/ut/trainer/test_cli_fault_suite.py``:
every line names the field, drawn values included).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import io
import os
import tempfile
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, Literal, Union
from unittest import mock

from hyper_parallel.entry import DEBUG_ENV, run_main
from parity.case_log import warnings_of
from parity.legacy_driver import DEBUG_YAML, REPO_ROOT

__all__ = [
    "LEGACY_PROG",
    "NEW_PROG",
    "RECIPE",
    "ROUTES",
    "Field",
    "Outcome",
    "default_subcommand",
    "legacy_fields",
    "legacy_tokens",
    "new_fields",
    "parse_legacy",
    "parse_new",
    "recipe_default",
    "recipe_subcommands",
    "run_parse",
    "MISUSE",
    "MISUSE_ENV",
    "boundaries",
    "boundary_values",
    "misuse",
    "sweep",
    "sweep_values",
    "union_members",
    "walk",
    "without_debug_env",
    "YAML_FILES",
    "yaml_files",
    "OVERRIDE_TYPES",
    "override_types",
]

RECIPE = ("--module", "qwen3_5", "--config", "debug")
LEGACY_PROG = "train_lm.py"
NEW_PROG = "hyper_parallel.train"
# The routes ``sweep`` takes: the legacy YAML through either entry point, the recipe through the new.
ROUTES = ("legacy_cli", "new_cli_yaml", "new_cli_recipe")


@dataclasses.dataclass(frozen=True)
class Field:
    """One leaf of a config tree that takes a number, a closed-set value or a string."""

    path: str  # dotted, as on the command line: train.optimizer.lr / training.steps
    kind: str  # int, float, bool, choice, str, numbers
    optional: bool = False
    choices: tuple[str, ...] = ()  # choice: the Literal's values; numbers: the tuple's length as ("2",)
    subcommand: str | None = None  # the new tree: the dataloader subcommand this field belongs to

    @property
    def leaf(self) -> str:
        return self.path.rpartition(".")[2]


def _strip_annotated(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def union_members(tp: Any) -> tuple[Any, ...]:
    tp = _strip_annotated(tp)
    if typing.get_origin(tp) in (Union, types.UnionType):
        return typing.get_args(tp)
    return ()


def _leaf_kind(annotation: Any) -> tuple[str, bool, tuple[str, ...]] | None:
    """``(kind, optional, choices)`` of a leaf annotation; None for lists, dicts and other types."""
    tp = _strip_annotated(annotation)
    optional = False
    members = union_members(tp)
    if members:
        rest = [m for m in members if m is not type(None)]
        optional = len(rest) < len(members)
        if len(rest) != 1:
            return None
        tp = _strip_annotated(rest[0])
    if tp is bool:
        return "bool", optional, ()
    if tp in (int, float):
        return tp.__name__, optional, ()
    if tp is str:
        return "str", optional, ()
    if typing.get_origin(tp) is Literal:
        return "choice", optional, tuple(str(v) for v in typing.get_args(tp))
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and args and all(a in (int, float) for a in args):
        return "numbers", optional, (str(len(args)),)
    return None


def _subcommand_name(member: Any) -> str | None:
    """The ``tyro.conf.subcommand(name)`` of an ``Annotated`` union member, if it has one."""
    for meta in getattr(member, "__metadata__", ()):
        name = getattr(meta, "name", None)
        if isinstance(name, str):
            return name
    return None


def walk(instance: Any, prefix: str = "", subcommand: str | None = None) -> Iterator[Field]:
    """Every leaf Field of a config instance: its dataclass fields, recursively.

    A field typed as a union of Config classes is a subcommand group (``dataloader:NAME``): each
    member's fields are walked from its default instance, tagged with the subcommand.
    """
    hints = typing.get_type_hints(type(instance), include_extras=True)
    for spec in dataclasses.fields(instance):
        if not spec.init or spec.name.startswith("_"):
            continue
        path = f"{prefix}{spec.name}"
        value = getattr(instance, spec.name)
        annotation = hints[spec.name]
        members = [m for m in union_members(annotation) if dataclasses.is_dataclass(_strip_annotated(m))]
        if members:
            for member in members:
                name = _subcommand_name(member)
                if name is not None:
                    yield from walk(_strip_annotated(member)(), f"{path}.", f"{spec.name}:{name}")
        elif dataclasses.is_dataclass(value):
            yield from walk(value, f"{path}.", subcommand)
        else:
            kind = _leaf_kind(annotation)
            if kind is not None:
                yield Field(path, kind[0], kind[1], kind[2], subcommand)


@functools.cache
def legacy_fields() -> tuple[Field, ...]:
    from hyper_parallel.trainer.config import LegacyTrainerArgs

    return tuple(walk(LegacyTrainerArgs()))


@functools.cache
def recipe_default() -> Any:
    from hyper_parallel.trainer.legacy_mapping import config_manager

    return config_manager().load_recipe("qwen3_5", "debug")


@functools.cache
def new_fields() -> tuple[Field, ...]:
    """The new tree's fields that are flags (a field hidden from the CLI, ``model_spec``, is not)."""
    from hyper_parallel.trainer.legacy_mapping import config_manager

    flags = set(config_manager().cli_flags(recipe_default()))
    return tuple(f for f in walk(recipe_default()) if f"--{f.path}" in flags)


@functools.cache
def recipe_subcommands() -> tuple[str | None, ...]:
    """The dataloader subcommands, and None (no subcommand: the recipe's own loader)."""
    return (None, *sorted({f.subcommand for f in new_fields() if f.subcommand is not None}))


@functools.cache
def default_subcommand() -> str:
    """The subcommand of the recipe's loader (its fields need no subcommand token)."""
    loader = type(recipe_default().dataloader)
    hints = typing.get_type_hints(type(recipe_default()), include_extras=True)
    names = [
        f"dataloader:{_subcommand_name(m)}"
        for m in union_members(hints["dataloader"])
        if _strip_annotated(m) is loader
    ]
    if len(names) != 1:
        raise LookupError(f"the recipe's dataloader is not one subcommand: {names}")
    return names[0]


def sweep_values(field: Field) -> list[list[str]]:
    """One value per class that refuses where a field refuses: out of range and of the wrong type."""
    if field.kind in ("int", "float"):
        return [["-1"], ["abc"]]
    if field.kind == "bool":
        return [["maybe"]]
    if field.kind == "choice":
        return [["bogus"]]
    if field.kind == "numbers":
        return [["0.5"], ["abc", "0.5"]]
    return [[""]]


def legacy_tokens(assigned: list[tuple[Field, list[str]]]) -> list[str]:
    """``--a.b=v``; a tuple field as a YAML list."""
    tokens = []
    for field, values in assigned:
        value = f"[{', '.join(values)}]" if field.kind == "numbers" else values[0]
        tokens.append(f"--{field.path}={value}")
    return tokens


# ----------------------------------------------------------------------------- the entry points


@functools.cache
def _legacy_script() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("train_lm_sweep", REPO_ROOT / "scripts" / "train_lm.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {REPO_ROOT / 'scripts' / 'train_lm.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_legacy(argv: list[str]) -> Any:
    return _legacy_script().parse_config(argv)


def parse_new(argv: list[str]) -> Any:
    from hyper_parallel.train import parse_config

    return parse_config(argv)


@dataclasses.dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        return [line for line in self.err.splitlines() if ": error: " in line]


def run_parse(prog: str, parse: Callable[[list[str]], Any], argv: list[str]) -> Outcome:
    """The entry point's parse step under its own error reporting, as ``main`` runs it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_main(prog, functools.partial(_parsed, parse, argv))
    return Outcome(code, out.getvalue(), err.getvalue())


def _parsed(parse: Callable[[list[str]], Any], argv: list[str]) -> int:
    parse(argv)
    return 0


def sweep(route: str) -> dict[str, str]:
    """Every field of ``route`` once per refusing value class: ``"<tokens>" -> "ok"`` when the
    entry point parses it, else its exit status and error line (``"2 <message>"``)."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {', '.join(ROUTES)}, got {route!r}")
    rows: dict[str, str] = {}
    with without_debug_env():
        if route == "new_cli_recipe":
            for field in new_fields():
                head = [] if field.subcommand in (None, default_subcommand()) else [field.subcommand]
                for values in sweep_values(field):
                    tokens = [*head, f"--{field.path}", *values]
                    rows[" ".join(tokens)] = _line(run_parse(NEW_PROG, parse_new, [*RECIPE, *tokens]))
            return rows
        prog, parse = (LEGACY_PROG, parse_legacy) if route == "legacy_cli" else (NEW_PROG, parse_new)
        for field in legacy_fields():
            for values in sweep_values(field):
                tokens = legacy_tokens([(field, values)])
                rows[" ".join(tokens)] = _line(run_parse(prog, parse, [str(DEBUG_YAML), *tokens]))
    return rows


def _current(root: Any, path: str) -> Any:
    """The value at a dotted path of a config tree, or None where the path leads nowhere."""
    node = root
    for part in path.split("."):
        node = getattr(node, part, None)
    return node


def boundary_values(field: Field, fields: tuple[Field, ...], root: Any) -> list[str]:
    """Accepted-looking values where checks turn: 0, 1 and 2 for an int, 0 and 1 for a float, and
    the current value of each number field beside it in its section (a rule between two fields
    turns where they are equal)."""
    if field.kind not in ("int", "float"):
        return []
    values = ["0", "1", "2"] if field.kind == "int" else ["0", "1"]
    parent = field.path.rpartition(".")[0]
    for other in fields:
        if other is field or other.kind not in ("int", "float") or other.subcommand != field.subcommand:
            continue
        if other.path.rpartition(".")[0] != parent:
            continue
        value = _current(root, other.path)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if field.kind == "int" and not float(value).is_integer():
            continue
        text = str(int(value)) if field.kind == "int" else repr(float(value))
        if text not in values:
            values.append(text)
    return values


def boundaries(route: str) -> dict[str, str]:
    """Every number field of ``route`` at ``boundary_values``: ``"<tokens>" -> "ok"`` or the exit
    status and error line, as ``sweep`` records them."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {', '.join(ROUTES)}, got {route!r}")
    rows: dict[str, str] = {}
    with without_debug_env():
        if route == "new_cli_recipe":
            fields, root = new_fields(), recipe_default()
            for field in fields:
                head = [] if field.subcommand in (None, default_subcommand()) else [field.subcommand]
                for value in boundary_values(field, fields, root):
                    tokens = [*head, f"--{field.path}", value]
                    rows[" ".join(tokens)] = _line(run_parse(NEW_PROG, parse_new, [*RECIPE, *tokens]))
            return rows
        prog, parse = (LEGACY_PROG, parse_legacy) if route == "legacy_cli" else (NEW_PROG, parse_new)
        fields, root = legacy_fields(), parse_legacy([str(DEBUG_YAML)])
        for field in fields:
            for value in boundary_values(field, fields, root):
                tokens = legacy_tokens([(field, [value])])
                rows[" ".join(tokens)] = _line(run_parse(prog, parse, [str(DEBUG_YAML), *tokens]))
    return rows


# Command lines that go wrong outside any one value: the shape of the command itself. ``{yaml}``
# is the debug YAML, ``{missing}`` a file that does not exist.
MISUSE: dict[str, tuple[tuple[str, ...], ...]] = {
    "legacy": (
        (),
        ("{missing}",),
        ("{yaml}", "--train.max_steps"),
        ("{yaml}", "--train.max_step=5"),
        ("{yaml}", "--zz.not_a_field=1"),
        ("{yaml}", "train.max_steps=5"),
        ("{yaml}", "--train.max_steps=5", "--train.max_steps=6"),
        ("{yaml}", "--train=5"),
        ("{yaml}", "--help"),
        # torchrun's --local-rank token (either spelling) is dropped; LOCAL_RANK sets train.local_rank.
        ("{yaml}", "--local-rank=3"),
        ("{yaml}", "--local_rank=3"),
        # A near miss two sections deep: the hint keeps the whole parent path.
        ("{yaml}", "--train.optimizer.lrr=1"),
        # A warmup longer than the run (check_run_values).
        ("{yaml}", "--train.optimizer.lr_warmup_ratio=2"),
    ),
    "new": (
        (),
        ("{missing}",),
        ("--module", "zz_no_module", "--config", "debug"),
        ("--module", "qwen3_5", "--config", "zz_no_recipe"),
        ("--module", "qwen3_5"),
        ("--config", "debug"),
        ("--module", "qwen3_5", "--config", "debug", "--optimizer.lr"),
        ("--module", "qwen3_5", "--config", "debug", "--optimizer.lr", "1", "2"),
        ("--module", "qwen3_5", "--config", "debug", "--optimizer.lrr", "1"),
        ("--module", "qwen3_5", "--config", "debug", "--zz.not_a_flag", "1"),
        ("--module", "qwen3_5", "--config", "debug", "dataloader:zz_no_loader"),
        ("--module", "qwen3_5", "--config", "debug", "zz_stray"),
        ("--module", "qwen3_5", "--config", "debug", "--optimizer.lr", "1", "--optimizer.lr", "2"),
        ("{yaml}", "--train.max_step=5"),
        ("{yaml}", "--module", "qwen3_5"),
        ("--module", "qwen3_5", "--config", "debug", "--help"),
        ("{yaml}", "--local-rank=3"),
        # A flag spelled with hyphens: the value as typed, and the near miss, under the underscore name.
        ("--module", "qwen3_5", "--config", "debug", "--optimizer.weight-decay", "abc"),
        ("--module", "qwen3_5", "--config", "debug", "--optimizer.weight-decayy", "1"),
        # An extra value after a '--a.b=v' flag.
        ("--module", "qwen3_5", "--config", "debug", "--optimizer.lr=1", "2"),
        # A warmup longer than the run (validate_cross_fields).
        ("--module", "qwen3_5", "--config", "debug", "--lr_scheduler.lr_warmup_ratio", "2"),
        # A Config's own refusal names warmup_steps, a field of another section too: the flag blamed
        # is the one under the section that refused.
        (*RECIPE, "--lr_scheduler.warmup_steps", "5", "--profiler.warmup_steps", "1"),
    ),
}
# The same, under an environment a launcher sets: ``(variables, command line)``.
MISUSE_ENV: dict[str, tuple[tuple[tuple[tuple[str, str], ...], tuple[str, ...]], ...]] = {
    "legacy": (((("LOCAL_RANK", "abc"),), ("{yaml}",)),),
    "new": (((("LOCAL_RANK", "abc"),), ("{yaml}",)),),
}


def misuse(entry: str) -> dict[str, str]:
    """Each command line of ``MISUSE[entry]``: ``ok``, the status and error line, or for ``--help``
    the status and the help text's description (its wording, not the layout of the flags); then
    those of ``MISUSE_ENV[entry]``, each under its variables (``LOCAL_RANK=abc <tokens>``)."""
    if entry not in MISUSE:
        raise ValueError(f"entry must be one of {', '.join(MISUSE)}, got {entry!r}")
    prog, parse = (LEGACY_PROG, parse_legacy) if entry == "legacy" else (NEW_PROG, parse_new)
    rows: dict[str, str] = {}
    # A fixed terminal width, so help text wraps the same on every machine.
    with without_debug_env(), mock.patch.dict(os.environ, {"COLUMNS": "100"}):
        for argv in MISUSE[entry]:
            tokens = [t.format(yaml=DEBUG_YAML, missing=REPO_ROOT / "zz_missing.yaml") for t in argv]
            label = " ".join(argv) or "(no arguments)"
            if "--help" in argv:  # printed, then SystemExit(0) as from the real entry point
                out = io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                    try:
                        code = run_main(prog, functools.partial(_parsed, parse, tokens))
                    except SystemExit as exc:
                        code = exc.code if isinstance(exc.code, int) else 1
                rows[label] = f"{code} " + " | ".join(_help_description(out.getvalue()))
            else:
                rows[label] = _line(run_parse(prog, parse, tokens)).replace(str(REPO_ROOT), "<repo>")
        for env, argv in MISUSE_ENV[entry]:
            tokens = [t.format(yaml=DEBUG_YAML) for t in argv]
            label = " ".join([*(f"{name}={value}" for name, value in env), *argv])
            with mock.patch.dict(os.environ, dict(env)):
                rows[label] = _line(run_parse(prog, parse, tokens)).replace(str(REPO_ROOT), "<repo>")
    return rows


# The entry points as a user starts them: a process of its own, its arguments read from sys.argv,
# its logging set up by main and its exit status the process's. ``{yaml}`` is the debug YAML.
# The new entry's main is called as a console script calls it, not through ``-m``: code run as
# ``__main__`` is a module mutmut's trampolines do not know, so no mutant of it could be selected.
PROCESS_COMMANDS: dict[str, tuple[str, ...]] = {
    "legacy": ("scripts/train_lm.py",),
    "new": ("-c", "import sys; from hyper_parallel.train import main; sys.exit(main())"),
}
PROCESS_ARGV: dict[str, tuple[tuple[str, ...], ...]] = {
    "legacy": (("{yaml}", "--train.max_steps=-1"),),
    "new": (
        ("{yaml}", "--train.max_steps=-1"),
        ("--module", "qwen3_5", "--config", "debug", "--optimizer.lr", "x"),
        # Parses, then an init step refuses (no tokenizer for hf_text): its one line, status 2.
        ("--module", "qwen3_5", "--config", "debug", "dataloader:hf_text"),
    ),
}


def processes(entry: str) -> dict[str, str]:
    """Each command line of ``PROCESS_ARGV[entry]`` run as ``python <entry> ...``: the exit status
    and the lines of stderr that say ``error``, repository paths relative."""
    import subprocess
    import sys

    if entry not in PROCESS_COMMANDS:
        raise ValueError(f"entry must be one of {', '.join(PROCESS_COMMANDS)}, got {entry!r}")
    env = {k: v for k, v in os.environ.items() if k != DEBUG_ENV}
    env.update(COLUMNS="100", PYTHONHASHSEED="0", HYPER_PARALLEL_PROGRESS="0")
    rows: dict[str, str] = {}
    for argv in PROCESS_ARGV[entry]:
        tokens = [t.format(yaml=DEBUG_YAML) for t in argv]
        done = subprocess.run(
            [sys.executable, *PROCESS_COMMANDS[entry], *tokens],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
        rows[" ".join(argv)] = f"{done.returncode} " + " | ".join(errors).replace(str(REPO_ROOT), "<repo>")
    return rows


# The debug recipe's YAML file changed in one way each: what either entry point reads from a file
# rather than from flags (its parser, the top-level and section checks, the lenient unknown keys).
_BASE_YAML = DEBUG_YAML.read_text(encoding="utf-8")
YAML_FILES: dict[str, str] = {
    "not valid YAML": "model: {name: qwen3_5\ntrain: [\n",
    "a list at the top": "- model\n- train\n",
    "only a comment": "# no settings\n",
    "two unknown top-level keys": _BASE_YAML + "zz_one: 1\nzz_two: 2\n",
    "a top-level key that moved": _BASE_YAML + "optim: {lr: 0.5}\n",
    "a section that is not a mapping": _BASE_YAML.replace("data: {type: dummy, max_seq_len: 64}", "data: 5"),
    "a null section": _BASE_YAML.replace("data: {type: dummy, max_seq_len: 64}", "data:"),
    "an unknown key before known ones": _BASE_YAML.replace(
        "  max_steps: 20\n", "  zz_unknown: 1\n  max_steps: 7\n"
    ),
    "a near-miss key in a section": _BASE_YAML.replace("  max_steps: 20\n", "  max_step: 7\n"),
    "a duplicate key": _BASE_YAML.replace("  max_steps: 20\n", "  max_steps: 20\n  max_steps: 7\n"),
    "a string where a number goes": _BASE_YAML.replace("  max_steps: 20\n", "  max_steps: seven\n"),
    "a mapping where a number goes": _BASE_YAML.replace("  max_steps: 20\n", "  max_steps: {a: 1}\n"),
    "a number as a key": _BASE_YAML.replace("  max_steps: 20\n", "  max_steps: 20\n  5: x\n"),
}
# What a file that parses set, per entry point: the values the variants above move.
_PROBES = {
    "legacy": ("train.max_steps", "data.max_seq_len", "train.optimizer.lr"),
    "new": ("training.steps", "training.seq_len", "optimizer.lr"),
}


def _yaml_row(prog: str, parse: Callable[[list[str]], Any], path: str, probes: tuple[str, ...]) -> str:
    parsed: list[Any] = []

    def keep(argv: list[str]) -> Any:
        parsed.append(parse(argv))

    with warnings_of() as warned:
        line = _line(run_parse(prog, keep, [path]))
    if line == "ok" and parsed:
        line += " " + " ".join(f"{p}={_current(parsed[0], p)!r}" for p in probes)
    return line + "".join(f" | warning: {w}" for w in warned)


def yaml_files(entry: str) -> dict[str, str]:
    """Each file of ``YAML_FILES`` through ``entry``'s parse step: the status and error line, or
    ``ok`` with the probed values; and the warnings the parse logged, paths as ``<file>``."""
    if entry not in _PROBES:
        raise ValueError(f"entry must be one of {', '.join(_PROBES)}, got {entry!r}")
    prog, parse = (LEGACY_PROG, parse_legacy) if entry == "legacy" else (NEW_PROG, parse_new)
    rows: dict[str, str] = {}
    with without_debug_env(), tempfile.TemporaryDirectory(prefix="parity-yaml-") as folder:
        path = os.path.join(folder, "train.yaml")
        for label, text in YAML_FILES.items():
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            line = _yaml_row(prog, parse, path, _PROBES[entry])
            rows[label] = " ".join(line.replace(path, "<file>").replace(folder, "<tmp>").split())
    return rows


# ``--a.b=v`` overrides whose target type decides the value: into a mapping field (no type below
# it: int, float, bool, null or the string), a string field given number- or bool-like text, a
# number field given a bool or a non-finite number, a list field given YAML, broken YAML, a scalar
# or three numbers, a closed set given another case, a section given a YAML mapping or a scalar.
OVERRIDE_TYPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("model.config_overrides.zz_key", ("true", "False", "7", "1.5", "1e3", "text", "null", "[1, 2]")),
    ("model.tp_plan.zz_layer", ("true", "7", "text")),
    ("model.flavor", ("7", "1.5", "true", "null")),
    ("data.text_key", ("7", "true")),
    ("train.optimizer.lr", ("true", "inf", "nan", "1e-3")),
    ("train.max_steps", ("true", "7.0", "1e3")),
    ("train.optimizer.betas", ("[0.8, 0.9]", "[0.9,", "{a: 1}", "0.9", "[0.8, 0.9, 0.99]")),
    ("model.freeze_modules", ("[a, b]", "[a, a: b", "a")),
    # A closed set of strings: case folded (type, activation_checkpoint) or not, and a value outside it.
    ("train.optimizer.type", ("AdamW",)),
    ("train.gradient_checkpointing.activation_checkpoint", ("FULL", "bogus")),
    # A whole section given as a YAML mapping.
    ("train.gradient_checkpointing", ("{activation_checkpoint: full}", "full")),
)


def override_types() -> dict[str, str]:
    """Each ``OVERRIDE_TYPES`` override on the debug YAML through the legacy entry point: ``ok``
    with the value and its type where it lands, or the status and error line."""
    rows: dict[str, str] = {}
    with without_debug_env():
        for path, values in OVERRIDE_TYPES:
            for raw in values:
                token = f"--{path}={raw}"
                rows[token] = _override_row(path, token)
    return rows


def _override_row(path: str, token: str) -> str:
    parsed: list[Any] = []

    def keep(argv: list[str]) -> Any:
        parsed.append(parse_legacy(argv))

    line = _line(run_parse(LEGACY_PROG, keep, [str(DEBUG_YAML), token]))
    if line == "ok" and parsed:
        value = _current(parsed[0], path) if ".zz_" not in path else _landed(parsed[0], path)
        line += f" {value!r} ({type(value).__name__})"
    return line


def _landed(root: Any, path: str) -> Any:
    """The value under a mapping field's key (``model.config_overrides.zz_key``)."""
    head, _, key = path.rpartition(".")
    mapping = _current(root, head)
    return mapping.get(key, "<absent>") if isinstance(mapping, dict) else f"<not a mapping: {mapping!r}>"


def _help_description(text: str) -> list[str]:
    """The lines of a help text between its usage paragraph and the flags: the product's own words
    (the usage line names the running program, the flag boxes are the parser library's layout)."""
    lines: list[str] = []
    for paragraph in text.strip().split("\n\n")[1:]:
        head = paragraph.strip().splitlines()[0].strip(" ╭─│|+-").strip()
        if head.startswith(("positional arguments", "options")):  # argparse's or tyro's flag list
            break
        lines.extend(line.strip() for line in paragraph.splitlines())
    return lines


def _line(outcome: Outcome) -> str:
    """``ok``, or the status and the error lines without the program's name."""
    if outcome.code == 0 and not outcome.errors:
        return "ok"
    messages = [line.partition(": error: ")[2] for line in outcome.errors]
    return f"{outcome.code} " + " | ".join(messages or ["(no error line)"])


@contextlib.contextmanager
def without_debug_env() -> Iterator[None]:
    """``HYPER_PARALLEL_DEBUG`` adds tracebacks to the lines: the sweep records them without."""
    saved = os.environ.pop(DEBUG_ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[DEBUG_ENV] = saved
