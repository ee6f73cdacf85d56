"""Config values the command line cannot spell: typed YAML values, unknown keys, Python-built configs.

``parity.config_sweep`` sends strings through both command lines. Two other ways in reach checks it
never does:

- **the YAML file**: a field set to ``null``, a list or a mapping (values no ``--a.b=v`` string
  becomes), and a key that is no field (the legacy reader warns, with a close match when there is
  one, and goes on), through ``scripts/train_lm.py CONFIG.yaml`` and ``python -m
  hyper_parallel.train CONFIG.yaml``: the status, the error line and every warning;
- **a Python recipe**: ``HyperTrainer.Config`` built in code, where no parser checks a type first;
  every field of every Config node of the debug recipe (the model's config and each dataloader
  subcommand's Config included) gets one value per class, and the row holds what the node's
  ``__post_init__`` and the root's build-time checks (``HyperTrainer.check_config``) say.

Used by the ``config_values`` goldens (``parity/suites/cli_refusals.py``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from parity.case_log import warnings_of
from parity.config_sweep import (
    LEGACY_PROG,
    NEW_PROG,
    Outcome,
    legacy_fields,
    parse_legacy,
    parse_new,
    recipe_default,
    run_parse,
    union_members,
    without_debug_env,
)
from parity.legacy_driver import DEBUG_YAML, REPO_ROOT

__all__ = [
    "PYTHON_VALUES",
    "VALUE_ROUTES",
    "YAML_VALUES",
    "config_nodes",
    "python_rows",
    "value_rows",
    "yaml_rows",
]

# The routes ``config_values`` takes: the YAML file through each entry point, and Python recipes.
VALUE_ROUTES = ("legacy_yaml", "new_yaml", "python_recipe")
# What a YAML file can hold that a command-line string cannot: the row label and the loaded value.
YAML_VALUES: tuple[tuple[str, Any], ...] = (("null", None), ("list", [1]), ("mapping", {"a": 1}))
# One Python value per class a field can be wrong in: sign, size, kind, emptiness, NaN; and 1 and 2,
# where a bound or a rule between two fields (a degree that needs another) turns.
PYTHON_VALUES: tuple[tuple[str, Any], ...] = (
    ("-1", -1),
    ("0", 0),
    ("1", 1),
    ("2", 2),
    ("10**9", 10**9),
    ("1.5", 1.5),
    ("nan", math.nan),
    ("True", True),
    ("None", None),
    ("'abc'", "abc"),
    ("''", ""),
    ("[]", []),
)
# The far unknown key each section gets besides its near miss (no close match to suggest).
FAR_KEY = "zz_not_a_field"


# ----------------------------------------------------------------------------- YAML files


def _sections() -> list[str]:
    """The legacy sections that hold swept fields, in field order (``train.optimizer`` ...)."""
    seen: dict[str, None] = {}
    for field in legacy_fields():
        seen.setdefault(field.path.rpartition(".")[0], None)
    return list(seen)


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for name in parents:
        data = data.setdefault(name, {})
    data[leaf] = value


def _yaml_cases() -> Iterator[tuple[str, str, Any]]:
    """``(row label, dotted key, value)``: each field once per YAML value class, then each section's
    near miss (its first field with an ``s`` appended) and one far unknown key."""
    for field in legacy_fields():
        for label, value in YAML_VALUES:
            yield f"{field.path}: {label}", field.path, value
    firsts: dict[str, str] = {}
    for field in legacy_fields():
        firsts.setdefault(field.path.rpartition(".")[0], field.path)
    for section in _sections():
        near = f"{firsts[section]}s"
        yield f"{near}: 1 (unknown key)", near, 1
        far = f"{section}.{FAR_KEY}" if section else FAR_KEY
        yield f"{far}: 1 (unknown key)", far, 1


def _parse_with_warnings(
    prog: str, parse: Callable[[list[str]], Any], argv: list[str]
) -> tuple[Outcome, list[str]]:
    with warnings_of() as warned:
        return run_parse(prog, parse, argv), warned


def _row(outcome: Outcome, warnings: list[str], scrub: Callable[[str], str]) -> str:
    """``ok`` or the status and error lines, then each warning: one line."""
    if outcome.code == 0 and not outcome.errors:
        text = "ok"
    else:
        messages = [line.partition(": error: ")[2] for line in outcome.errors]
        text = f"{outcome.code} " + " | ".join(messages or ["(no error line)"])
    return scrub(" | ".join([text, *(f"warning: {w}" for w in warnings)]))


def yaml_rows(route: str) -> dict[str, str]:
    """Every legacy field once per YAML value class, and each section's unknown keys, written into
    a copy of the debug YAML and read by ``route``'s entry point: ``"<key>: <value>" -> row``."""
    if route not in VALUE_ROUTES[:2]:
        raise ValueError(f"route must be one of {', '.join(VALUE_ROUTES[:2])}, got {route!r}")
    prog, parse = (LEGACY_PROG, parse_legacy) if route == "legacy_yaml" else (NEW_PROG, parse_new)
    base = yaml.safe_load(DEBUG_YAML.read_text(encoding="utf-8"))
    rows: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="parity-values-") as tmp, without_debug_env():
        path = os.path.join(tmp, "config.yaml")

        def scrub(text: str) -> str:
            return text.replace(path, "<config.yaml>").replace(str(REPO_ROOT), "<repo>")

        for label, key, value in _yaml_cases():
            data = copy.deepcopy(base)
            _set(data, key, value)
            with open(path, "w", encoding="utf-8") as fh:
                yaml.safe_dump(data, fh, sort_keys=False)
            rows[label] = _row(*_parse_with_warnings(prog, parse, [path]), scrub)
    return rows


# ----------------------------------------------------------------------------- Python recipes


def config_nodes(root: Any) -> Iterator[tuple[str, Any, Callable[[Any], Any]]]:
    """``(dotted path, node, put)`` for every Config dataclass under ``root`` (the model's config
    through its ``ModelSpec``; each dataloader subcommand's default Config in place of the
    recipe's), where ``put(new_node)`` returns a copy of ``root`` holding ``new_node`` there."""

    def visit(
        node: Any, path: str, put: Callable[[Any], Any]
    ) -> Iterator[tuple[str, Any, Callable[[Any], Any]]]:
        if type(node).__name__ != "ModelSpec":  # a spec's own fields are functions, not settings
            yield path, node, put
        for spec in dataclasses.fields(node):
            value = getattr(node, spec.name)
            if not spec.init or not dataclasses.is_dataclass(value) or isinstance(value, type):
                continue

            def put_child(child: Any, _node: Any = node, _name: str = spec.name, _put: Any = put) -> Any:
                return _put(dataclasses.replace(_node, **{_name: child}))

            yield from visit(value, f"{path}.{spec.name}" if path else spec.name, put_child)

    def put_root(new: Any) -> Any:
        return new

    yield from visit(root, "", put_root)
    for member in _loader_members(root):
        if not isinstance(root.dataloader, member):
            yield f"dataloader:{member.__qualname__}", member(), functools.partial(_with_loader, root)


def _with_loader(root: Any, loader: Any) -> Any:
    return dataclasses.replace(root, dataloader=loader)


def _loader_members(root: Any) -> list[type]:
    """The Config classes the root's ``dataloader`` field takes (its subcommands)."""
    import typing

    hints = typing.get_type_hints(type(root), include_extras=True)
    members = []
    for member in union_members(hints["dataloader"]):
        while typing.get_origin(member) is typing.Annotated:
            member = typing.get_args(member)[0]
        if isinstance(member, type) and dataclasses.is_dataclass(member):
            members.append(member)
    return members


def _built(make: Callable[[], Any]) -> str:
    """``ok`` when the config is accepted, else the refusal as ``Type: message``."""
    from hyper_parallel.trainer.hyper_trainer import HyperTrainer

    try:
        HyperTrainer.check_config(make())
    except Exception as exc:  # any refusal (or crash) is the row
        return f"{type(exc).__name__}: {exc}".replace(str(REPO_ROOT), "<repo>")
    return "ok"


def python_rows() -> dict[str, str]:
    """Every field of every Config node of the debug recipe once per ``PYTHON_VALUES`` class, set
    in code, and every section (a Config-valued field) set to None: ``"<path>.<field> = <value>" -> row``."""
    rows: dict[str, str] = {}
    for path, node, put in config_nodes(recipe_default()):
        for spec in dataclasses.fields(node):
            if not spec.init or spec.name.startswith("_"):
                continue
            if dataclasses.is_dataclass(getattr(node, spec.name)):  # a whole section left out

                def cleared(_node: Any = node, _name: str = spec.name, _put: Any = put) -> Any:
                    return _put(dataclasses.replace(_node, **{_name: None}))

                rows[
                    f"{path}.{spec.name} = None (the section)"
                    if path
                    else f"{spec.name} = None (the section)"
                ] = _built(cleared)
                continue
            for label, value in PYTHON_VALUES:

                def make(
                    _node: Any = node, _name: str = spec.name, _value: Any = value, _put: Any = put
                ) -> Any:
                    return _put(dataclasses.replace(_node, **{_name: copy.copy(_value)}))

                rows[f"{path}.{spec.name} = {label}"] = _built(make)
    return rows


def value_rows(route: str) -> dict[str, str]:
    """The rows of one ``VALUE_ROUTES`` route: the producer of the ``config_values`` goldens."""
    if route == "python_recipe":
        return python_rows()
    return yaml_rows(route)
