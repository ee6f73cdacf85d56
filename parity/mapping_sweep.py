"""Where each legacy field lands in the new Config: the legacy YAML through the new entry point,
one field changed at a time.

``python -m hyper_parallel.train CONFIG.yaml`` maps the legacy tree onto ``HyperTrainer.Config``
(``trainer/legacy_mapping.py``: each legacy field to exactly one place, some through a rule). A
field dropped, sent to the wrong place or through the wrong rule parses without a word and trains
differently only where a case happens to set it. Here every legacy field gets accepted values it
does not hold in the debug YAML (the other member of a bool, each other choice, numbers where
checks turn, a changed string), and the row is every leaf of the parsed Config that moved from
the unchanged parse, ``path=value``, or the error line where the entry point refuses the value.

Used by the ``config_mapping`` golden (``parity/suites/cli_refusals.py``).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from parity.config_sweep import (
    NEW_PROG,
    Field,
    _current,
    boundary_values,
    legacy_fields,
    legacy_tokens,
    parse_legacy,
    parse_new,
    run_parse,
    without_debug_env,
)
from parity.legacy_driver import DEBUG_YAML

__all__ = ["changed_values", "config_leaves", "mapping_rows"]


def config_leaves(node: Any, prefix: str = "") -> dict[str, str]:
    """``path -> value`` of every leaf of a Config tree: plain values by ``repr`` (exact for a
    float), anything else (a model spec, a callable) by its type's name."""
    out: dict[str, str] = {}
    for spec in dataclasses.fields(node):
        value = getattr(node, spec.name)
        path = f"{prefix}{spec.name}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out.update(config_leaves(value, f"{path}."))
        elif value is None or isinstance(value, (bool, int, float, str, enum.Enum)):
            out[path] = repr(value)
        elif isinstance(value, (list, tuple, dict)) and _plain(value):
            out[path] = repr(value)
        else:
            out[path] = f"<{type(value).__name__}>"
    return out


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def changed_values(field: Field, fields: tuple[Field, ...], root: Any) -> list[list[str]]:
    """Values ``field`` accepts besides the one it holds in ``root``."""
    current = _current(root, field.path)
    if field.kind == "bool":
        return [["false" if current else "true"]]
    if field.kind == "choice":
        return [[c] for c in field.choices if c != str(current)]
    if field.kind == "numbers":
        width = int(field.choices[0]) if field.choices else 2
        return [[f"0.{n + 5}" for n in range(width)]]
    if field.kind in ("int", "float"):
        shown = None if current is None else str(current)
        return [[v] for v in boundary_values(field, fields, root) if v != shown]
    return [[f"{current}_changed" if current else "changed"]]


def mapping_rows() -> dict[str, Any]:
    """``"<override>" -> [path=value, ...]`` (the leaves of the new Config it moved) or the error."""
    rows: dict[str, Any] = {}
    with without_debug_env():
        base = config_leaves(parse_new([str(DEBUG_YAML)]))
        fields, root = legacy_fields(), parse_legacy([str(DEBUG_YAML)])
        for field in fields:
            for values in changed_values(field, fields, root):
                tokens = legacy_tokens([(field, values)])
                argv = [str(DEBUG_YAML), *tokens]
                outcome = run_parse(NEW_PROG, parse_new, argv)
                if outcome.code != 0 or outcome.errors:
                    rows[" ".join(tokens)] = f"{outcome.code} " + " | ".join(
                        line.partition(": error: ")[2] for line in outcome.errors
                    )
                    continue
                moved = config_leaves(parse_new(argv))
                rows[" ".join(tokens)] = [
                    f"{path}={value}" for path, value in sorted(moved.items()) if base.get(path) != value
                ] + [f"{path} (gone)" for path in sorted(set(base) - set(moved))]
    return rows
