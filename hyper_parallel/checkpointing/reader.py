"""One resume for both trainers: verify, check, then restore a ``step_<N>/`` folder in one order.

``CheckpointManager.load`` (the component) and the legacy ``CheckpointCallback.resume`` each say
what their run holds (model parts, the state files and the ``load_state_dict`` each feeds);
:class:`StepReader` reads it back the same way for both, so a folder either trainer wrote resumes
in the other with the same refusals:

1. the save in flight is committed first (``StepWriter.wait``): it may be the one to load;
2. ``load_path`` is verified (``verify.resolve_checkpoint``: the manifest, or the policy for
   folders without one); a run folder resolves to its newest complete step;
3. ``extra_state.json`` gives the step and epoch; a run that saves must not replace later steps;
4. the checkpoint's tensors must fit the live model before the run settings are compared: another
   model's checkpoint is never a setting that ``resume_config_changes: apply`` could change;
5. model, optimizer and scheduler state; with ``apply``, the configured optimizer settings again;
   then the run state (RNG, dataloader).

Still lenient, as the legacy callbacks always were: a state file the folder lacks is skipped with a
warning, and a readable one that does not fit (``load_state_dict`` raises) is warned about.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hyper_parallel.checkpointing.errors import (
    CheckpointCorruptError,
    CheckpointMismatchError,
    UnsafeCheckpointError,
    load_error,
)
from hyper_parallel.checkpointing.layout import DCP_METADATA_FILE, EXTRA_STATE_FILE, MANIFEST_FILE
from hyper_parallel.checkpointing.lifecycle import StepWriter
from hyper_parallel.checkpointing.resume_settings import (
    apply_optimizer_settings,
    capture_groups,
    check_resume,
)
from hyper_parallel.checkpointing.run_lock import check_resume_output_dir
from hyper_parallel.checkpointing.verify import resolve_checkpoint
from hyper_parallel.checkpointing.weights_fit import check_checkpoint_fits
from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger

__all__ = [
    "Resumed",
    "StateFile",
    "StepReader",
    "lenient_errors",
    "part_state_dicts",
    "raise_if_damaged",
    "read_state_file",
]

logger = get_logger(__name__)


@dataclass(frozen=True)
class StateFile:
    """A state file a resume reads back (``optimizer_rank0.pt``...) and what takes its value."""

    name: str
    restore: Callable[[Any], Any]


@dataclass(frozen=True)
class Resumed:
    """Where a resume read from (a run folder resolved to its step) and what it restored."""

    path: str
    step: int
    epoch: int


def lenient_errors() -> tuple[type[BaseException], ...]:
    """Failures of ``load_state_dict`` on a readable file that only warn; DCP's
    CheckpointException is a BaseException, so the platform names it."""
    return (OSError, RuntimeError, ValueError, *get_platform().dcp_errors())


def read_state_file(path: str) -> Any:
    """A ``.pt`` state file (``weights_only``, onto the device it was saved from); unreadable is a
    ``CheckpointCorruptError`` naming it."""
    try:
        return get_platform().load(path, weights_only=True, map_location=None)
    except Exception as exc:  # zip, pickle and EOF errors all mean "unreadable"
        raise load_error(path, exc) from exc


def part_state_dicts(parts: Sequence[Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each part's state dict (live tensors, loaded in place by DCP) and all of them merged into one
    DCP target; a key two parts share is a ``ValueError``."""
    states: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    for index, part in enumerate(parts):
        state = part.state_dict()
        clash = sorted(merged.keys() & state.keys())
        if clash:
            raise ValueError(f"model_parts[{index}] repeats state-dict keys of an earlier part: {clash[:5]}")
        merged.update(state)
        states.append(state)
    return states, merged


def raise_if_damaged(path: str, exc: BaseException) -> None:
    """After a failed DCP load: a damaged ``.metadata`` or shard is an error naming the file."""
    damaged = get_platform().dcp_damaged_file(path)
    if damaged is not None:
        raise CheckpointCorruptError(*damaged) from exc


def read_extra_state(path: str) -> tuple[int, int]:
    """``(global_step, epoch)`` of ``extra_state.json`` in ``path``; ``(0, 0)`` with a warning when
    the folder lacks it (a folder without a manifest may), an error naming it when unreadable."""
    file = os.path.join(path, EXTRA_STATE_FILE)
    if not os.path.isfile(file):
        logger.warning(f"Checkpoint artifact {file} is missing; skipped")
        return 0, 0
    try:
        with open(file, encoding="utf-8") as fh:
            extra = json.load(fh)
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CheckpointCorruptError(file, f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(extra, dict):
        raise CheckpointCorruptError(file, f"expected a JSON object, got {type(extra).__name__}")
    values = (extra.get("global_step", 0), extra.get("epoch", 0))
    # int() would read 2.7 as step 2 and "3" as 3: a damaged file must not resume at a made-up step.
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise CheckpointCorruptError(
            file, f"global_step/epoch must be integers >= 0, got {values[0]!r}/{values[1]!r}"
        )
    return values[0], values[1]


class StepReader:
    """The resume side of the run whose saves ``writer`` makes.

    ``mode`` is ``resume_config_changes`` and ``max_steps()`` the run's step budget (both compared
    by ``resume_settings.check_resume``); refusals name ``<writer.fields>.<setting>``.
    """

    def __init__(
        self,
        writer: StepWriter,
        *,
        mode: str,
        allow_unverified: bool,
        max_steps: Callable[[], int | None],
    ) -> None:
        self.writer = writer
        self.mode = mode
        self.allow_unverified = allow_unverified
        self._max_steps = max_steps

    def resume(
        self,
        load_path: str,
        *,
        model_parts: Sequence[Any],
        optimizer_files: Sequence[StateFile],
        param_groups: Callable[[], Any],
        scheduler: Any,
        run_files: Sequence[StateFile],
    ) -> Resumed:
        """Restore ``load_path`` into the live run (the steps in the module docstring).

        ``optimizer_files`` (optimizer, scheduler) are restored before the configured optimizer
        settings are applied again (``mode == "apply"``: ``param_groups()`` after the load, since
        ``load_state_dict`` replaces the list), ``run_files`` (RNG, dataloader) after.
        """
        self.writer.wait()  # a save of this run still being committed may be the one to load
        platform = get_platform()
        fields = self.writer.fields
        files = [*optimizer_files, *run_files]
        path = resolve_checkpoint(
            load_path,
            field=f"{fields}.load_path",
            required=[DCP_METADATA_FILE, EXTRA_STATE_FILE, *(file.name for file in files)],
            dcp_check=platform.dcp_damaged_file,
            allow_unverified=self.allow_unverified,
        )
        step, epoch = read_extra_state(path)
        if self.writer.save_steps > 0:  # a run that saves must not replace the steps after this one
            check_resume_output_dir(
                self.writer.output_dir,
                step,
                resumed=path,
                field=f"{fields}.output_dir",
                load_field=f"{fields}.load_path",
                overwrite_field=f"{fields}.overwrite",
                overwrite=self.writer.overwrite,
            )
        states, merged = part_state_dicts(model_parts)
        check_model_fits(path, merged)
        self._check_settings(path, step)
        configured = capture_groups(param_groups() or [])
        load_model(path, model_parts, states, merged)
        for file in optimizer_files:
            restore_file(path, file)
        if self.mode == "apply" and param_groups() is not None:
            apply_optimizer_settings(param_groups(), configured, scheduler)
        for file in run_files:
            restore_file(path, file)
        logger.info_rank0(f"Resumed from checkpoint {path} (global_step={step}, epoch={epoch})")
        return Resumed(path, step, epoch)

    def _check_settings(self, path: str, step: int) -> None:
        """The config against the settings the checkpoint was trained with (``resume_settings``)."""
        saved = None
        manifest = os.path.join(path, MANIFEST_FILE)
        if os.path.isfile(manifest):
            with open(manifest, encoding="utf-8") as fh:
                saved = json.load(fh).get("settings")
        fields = self.writer.fields
        check_resume(
            saved,
            self.writer.settings(),
            folder=path,
            step=step,
            max_steps=self._max_steps(),
            mode=self.mode,
            field=f"{fields}.resume_config_changes",
            allow_unverified=self.allow_unverified,
            unverified_field=f"{fields}.allow_unverified",
        )


def check_model_fits(path: str, model_state: dict[str, Any]) -> None:
    """The checkpoint's tensors (``.metadata``) against the live model's: another shape, another
    layer count or tensors only one side has are a ``CheckpointMismatchError`` (``weights_fit``)."""
    platform = get_platform()
    meta = os.path.join(path, DCP_METADATA_FILE)
    try:
        stored = platform.dcp_entries(path)
    except platform.unsafe_pickle_error() as exc:
        raise UnsafeCheckpointError(meta, exc, problem="is refused") from None
    except Exception as exc:  # any failure means an unreadable file
        raise CheckpointCorruptError(meta, f"unreadable DCP metadata ({type(exc).__name__}: {exc})") from exc
    model = {key: tuple(platform.shape(v)) for key, v in model_state.items() if platform.is_tensor(v)}
    check_checkpoint_fits(path, stored, model)


def load_model(path: str, parts: Sequence[Any], states: list[dict[str, Any]], merged: dict[str, Any]) -> None:
    """DCP shards into the live parts (``check_model_fits`` ran); a damaged, crafted or foreign
    checkpoint is an error."""
    platform = get_platform()
    meta = os.path.join(path, DCP_METADATA_FILE)
    try:
        platform.dcp_load(merged, path)
    except platform.unsafe_pickle_error() as exc:
        raise UnsafeCheckpointError(meta, exc, problem="is refused") from None
    except lenient_errors() as exc:
        raise_if_damaged(path, exc)
        raise CheckpointMismatchError(f"checkpoint {path} does not fit the model: {exc}") from exc
    for part, state in zip(parts, states, strict=True):
        part.load_state_dict({key: merged[key] for key in state})


def restore_file(path: str, file: StateFile) -> None:
    """Missing: skipped with a warning; unreadable: an error; readable but not fitting: warned."""
    full = os.path.join(path, file.name)
    if not os.path.isfile(full):
        logger.warning(f"Checkpoint artifact {full} is missing; skipped")
        return
    value = read_state_file(full)
    try:
        file.restore(value)
    except lenient_errors() as exc:
        logger.warning(f"Could not restore {file.name} from {full}: {exc!r}; training continues without it")
