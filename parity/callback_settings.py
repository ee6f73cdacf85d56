"""What each legacy callback makes of its config section: absent, at the schema's defaults, and each
field moved off its default.

The legacy callbacks read ``train.<section>`` (else ``<section>``) with ``getattr(cfg, name,
default)`` (``spec/legacy-trainer.md`` D1 and 13.1), so each setting has two sources: the schema's
default and the callback's own fallback when the field or the section is absent. The e2e runs
reach neither a field at a value no recipe sets nor an args object without sections (what tests
and user code pass as ``SimpleNamespace``). Here every callback ``_init_callbacks`` builds is made
from a bare trainer whose ``args`` is:

- ``absent``: no section at all (the callback's fallbacks);
- ``defaults``: the schema's defaults (``LegacyTrainerArgs()``);
- ``<section>.<field>=<value>``: the defaults with one field of a section the callbacks read moved
  off its default (a bool flipped, a number moved, another ``Literal`` member, a string changed).

A row holds the callback's plain public attributes (numbers, strings, bools, None and lists of
them) or the one error line its constructor raised, paths under the row's folder as ``<tmp>``.
Used by the ``legacy_callback_settings`` golden (``parity/suites/legacy_trainer.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import typing
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, Literal

__all__ = ["CALLBACKS", "SECTIONS", "callback_rows", "moved"]

# The callbacks ``BaseTrainer._init_callbacks`` builds, by their ``hyper_parallel.trainer.callbacks`` name.
CALLBACKS = (
    "LoggingCallback",
    "CheckpointCallback",
    "SafetensorsExportCallback",
    "EvalCallback",
    "ProfilerCallback",
    "WandbCallback",
    "TensorBoardCallback",
    "ProgressCallback",
    "MoEMonitorCallback",
    "GradientHealthCallback",
    "MemoryMonitorCallback",
    "GCCallback",
)
# The sections of ``train:`` the callbacks read (``_sub_cfg`` names).
SECTIONS = (
    "logging",
    "checkpoint",
    "eval",
    "profile",
    "wandb",
    "tensorboard",
    "memory_monitor",
    "moe_monitor",
    "debug",
)
_PLAIN = (str, int, float, bool, type(None))


def moved(annotation: Any, default: Any, folder: str) -> Any:
    """One value off ``default`` of the field's type: bool flipped, number moved, another Literal
    member, a changed string (a folder under ``folder`` for paths); None -> a value of the type."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is Literal:
        return next(v for v in args if v != default)
    if default is None and args:
        return moved(args[0], args[0](), folder) if args[0] in (int, float, str, bool) else None
    if isinstance(default, bool) or annotation is bool:
        return not default
    if isinstance(default, int) or annotation is int:
        return (default or 0) + 3
    if isinstance(default, float) or annotation is float:
        return (default or 0.0) * 2 + 0.5
    if isinstance(default, str) or annotation is str:
        return os.path.join(folder, f"moved_{default or 'value'}")
    return None


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, _PLAIN) for v in value)
    return isinstance(value, _PLAIN)


def _state(callback: Any, folder: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in sorted(vars(callback).items()):
        if name.startswith("_") or not _plain(value):
            continue
        if isinstance(value, str):
            value = value.replace(folder, "<tmp>")
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _section_fields(train_args: Any) -> Iterator[tuple[str, dataclasses.Field, Any]]:
    hints_of: dict[type, dict[str, Any]] = {}
    for section in SECTIONS:
        cfg = getattr(train_args, section)
        cls = type(cfg)
        hints = hints_of.setdefault(cls, typing.get_type_hints(cls))
        for spec in dataclasses.fields(cfg):
            yield section, spec, hints[spec.name]


@contextlib.contextmanager
def _row_folder() -> Iterator[str]:
    """A fresh working folder per row (W&B and relative output folders land there)."""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="parity-callbacks-") as folder:
        real = os.path.realpath(folder)
        old = os.environ.get("WANDB_DIR")
        os.environ["WANDB_DIR"] = real
        os.chdir(real)
        try:
            yield real
        finally:
            os.chdir(cwd)
            if old is None:
                os.environ.pop("WANDB_DIR", None)
            else:
                os.environ["WANDB_DIR"] = old


def _built(args: Any, folder: str) -> dict[str, Any]:
    from hyper_parallel.trainer import callbacks

    trainer = SimpleNamespace(args=args, state=SimpleNamespace(global_step=0, max_steps=0))
    row: dict[str, Any] = {}
    for name in CALLBACKS:
        try:
            row[name] = _state(getattr(callbacks, name)(trainer), folder)
        except Exception as exc:
            row[name] = f"{type(exc).__name__}: {' '.join(str(exc).replace(folder, '<tmp>').split())}"
    return row


def callback_rows() -> dict[str, Any]:
    """``{row label: {callback: state or error line}}`` (module docstring)."""
    from hyper_parallel.trainer.config import LegacyTrainerArgs

    rows: dict[str, Any] = {}
    with _row_folder() as folder:
        rows["absent"] = _built(SimpleNamespace(train=SimpleNamespace()), folder)
    with _row_folder() as folder:
        rows["defaults"] = _built(LegacyTrainerArgs(), folder)
    for section, spec, annotation in _section_fields(LegacyTrainerArgs().train):
        with _row_folder() as folder:
            args = LegacyTrainerArgs()
            value = moved(annotation, getattr(getattr(args.train, section), spec.name), folder)
            if value is None:
                continue
            setattr(getattr(args.train, section), spec.name, value)
            shown = value.replace(folder, "<tmp>") if isinstance(value, str) else value
            rows[f"{section}.{spec.name}={shown!r}"] = _built(args, folder)
    return rows
