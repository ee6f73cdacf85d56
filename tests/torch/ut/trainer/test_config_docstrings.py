"""Every field of the new path's Config tree has an attribute docstring (the string on the next line).

tyro prints that docstring as the field's ``--help`` text. A field without one gets the comment
above the next field instead, so the help of one flag would describe another.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
import typing

import pytest

from hyper_parallel.components import (
    checkpoint,
    dataloader,
    loss,
    lr_scheduler,
    metrics,
    optimizer,
    profiler,
    tokenizer,
)
from hyper_parallel.config import parallelism, runtime, training
from hyper_parallel.protocols.configurable import ConfigMixin, Configurable
from hyper_parallel.trainer import hyper_trainer
from hyper_parallel.trainer.hyper_trainer import HyperTrainer

NEW_PATH_MODULES = (
    checkpoint,
    dataloader,
    loss,
    lr_scheduler,
    metrics,
    optimizer,
    profiler,
    tokenizer,
    parallelism,
    runtime,
    training,
    hyper_trainer,
)


def _is_classvar(annotation: ast.expr) -> bool:
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def fields_without_docstring(source: str) -> list[str]:
    """``Class.field`` for each annotated field in a class body of ``source`` not followed by a string."""
    missing = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for i, stmt in enumerate(body):
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            if _is_classvar(stmt.annotation):
                continue
            after = body[i + 1] if i + 1 < len(body) else None
            documented = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
                and after.value.value.strip()
            )
            if not documented:
                missing.append(f"{node.name}.{stmt.target.id}")
    return missing


def _config_classes() -> list[type]:
    """Every config dataclass defined in the new-path modules (component Configs and value configs)."""
    found: dict[str, type] = {}
    visited: set[type] = set()

    def visit(owner: object) -> None:
        for value in list(vars(owner).values()):
            if not isinstance(value, type) or value.__module__ != module.__name__ or value in visited:
                continue
            visited.add(value)
            if issubclass(value, ConfigMixin) and dataclasses.is_dataclass(value):
                found[f"{value.__module__}.{value.__qualname__}"] = value
            visit(value)

    for module in NEW_PATH_MODULES:
        visit(module)
    return [found[name] for name in sorted(found)]


def _nested_config_types(annotation: object) -> list[type]:
    """The config dataclasses a field annotation can hold (through Optional, unions and Annotated)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _nested_config_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _nested_config_types(arg)]
    if isinstance(annotation, type) and issubclass(annotation, ConfigMixin):
        return [annotation]
    return []


def _reachable_configs(root: type) -> set[type]:
    seen: set[type] = set()
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        hints = typing.get_type_hints(cls, include_extras=True)
        for field in dataclasses.fields(cls):
            todo.extend(_nested_config_types(hints[field.name]))
    return seen


CONFIG_CLASSES = _config_classes()


def test_the_scan_covers_the_whole_cli_tree():
    """A Config that the trainer's tree reaches from a module not scanned here would go unchecked."""
    scanned = set(CONFIG_CLASSES)
    outside = sorted(
        c.__qualname__
        for c in _reachable_configs(HyperTrainer.Config) - scanned
        if c is not Configurable.Config
    )
    assert not outside, f"config classes outside NEW_PATH_MODULES: {outside}"
    assert len(CONFIG_CLASSES) >= 20


@pytest.mark.parametrize(
    "cls", CONFIG_CLASSES, ids=lambda c: f"{c.__module__.rsplit('.', 1)[-1]}.{c.__qualname__}"
)
def test_every_config_field_has_a_docstring(cls):
    source = textwrap.dedent(inspect.getsource(cls))
    assert fields_without_docstring(source) == []


def test_a_field_without_a_docstring_is_named():
    """The checker fails on a planted field that only has a comment above it (the old style)."""
    source = textwrap.dedent(
        '''
        class Config:
            lr: float = 1e-4
            """Peak learning rate."""
            # Not in the legacy schema.
            foreach: bool | None = None
            fused: bool | None = None
            """Fused kernel."""
            _owner: ClassVar[type | None] = None
        '''
    )
    assert fields_without_docstring(source) == ["Config.foreach"]
