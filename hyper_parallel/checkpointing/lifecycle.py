"""One save lifecycle for both trainers: claim the run folder, stage, write, commit, wait.

``CheckpointManager`` (the component) and the legacy ``CheckpointCallback`` each decide when to
save and what a checkpoint holds; :class:`StepWriter` does the rest the same way for both, so a
folder one trainer writes is committed, replaced and locked exactly as the other's:

1. at build, a run that saves checks that its folder is writable and holds no checkpoint it would
   replace unasked (``run_lock``), then rank 0 takes the folder's lock;
2. ``save`` stages ``.partial.step_<N>/``, calls the trainer's ``write_model`` (DCP shards, in the
   background when async) and ``write_rest`` (per-rank state files, the HF export), and starts the
   commit: manifest last, then the rename to ``step_<N>/`` (``staging.StepCommitter``);
3. ``wait`` finishes what is in flight: the async shards, then their commit; a failure is one
   ``CheckpointSaveError`` naming the folder;
4. ``close`` waits and gives the lock back.

The framework stays with the caller: ``write_model`` and ``wait_model`` are the trainer's (torch's
DCP for the legacy callback, the platform's for the component); barriers and ranks come from the
platform.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hyper_parallel.checkpointing.errors import CheckpointSaveError
from hyper_parallel.checkpointing.layout import partial_step_dir, step_dir
from hyper_parallel.checkpointing.run_lock import (
    acquire_run_folder,
    check_fresh_output_dir,
    release_run_folder,
)
from hyper_parallel.checkpointing.staging import (
    StepCommitter,
    check_writable_dir,
    dcp_files_written,
    discard_partial,
    fault_point,
    prepare_partial_dir,
)
from hyper_parallel.platform import get_platform

__all__ = ["StepWriter"]


class StepWriter:
    """The save side of one run's checkpoints in ``output_dir``.

    ``fields`` is the config section the user set (``"train.checkpoint"`` or ``"checkpoint"``): every
    refusal names ``<fields>.output_dir``, ``.load_path`` or ``.overwrite``. ``settings()`` gives
    the run settings recorded in each manifest (and compared on resume, ``reader.StepReader``); ``errors()`` gives the failures a save turns into
    ``CheckpointSaveError`` (DCP's ``CheckpointException`` is a ``BaseException``); it is called only
    when a save raises, so building stays cheap.
    """

    def __init__(
        self,
        output_dir: str,
        *,
        save_steps: int,
        resuming: bool,
        overwrite: bool,
        fields: str,
        settings: Callable[[], dict[str, Any]],
        wait_model: Callable[[Any], None],
        errors: Callable[[], tuple[type[BaseException], ...]],
    ) -> None:
        self.output_dir = output_dir
        self.fields = fields
        self.save_steps = save_steps
        self.overwrite = overwrite
        self.settings = settings
        self._wait_model = wait_model
        self._errors = errors
        self._lock_key: str | None = None
        self._pending: Any = None  # the async model write in flight
        self._pending_step: int | None = None
        self._pending_commit: tuple[str, str, int] | None = None
        self._committer = StepCommitter()
        self._async_group: Any = None
        self._async_group_made = False
        if save_steps > 0:
            # Before the first step: a run must not train for hours and then fail to save, nor
            # replace checkpoints already in the folder without being asked (``run_lock``).
            check_writable_dir(output_dir, f"{fields}.output_dir")
            if not resuming:
                check_fresh_output_dir(
                    output_dir,
                    field=f"{fields}.output_dir",
                    load_field=f"{fields}.load_path",
                    overwrite_field=f"{fields}.overwrite",
                    overwrite=overwrite,
                )
            self.lock()

    # ------------------------------------------------------------------ one writer
    def lock(self) -> None:
        """Rank 0 holds the run folder's lock while this run may save (``run_lock``)."""
        if self._lock_key is None and get_platform().get_rank() == 0:
            self._lock_key = acquire_run_folder(self.output_dir, field=f"{self.fields}.output_dir")

    def unlock(self) -> None:
        release_run_folder(self._lock_key)
        self._lock_key = None

    # ------------------------------------------------------------------ save
    def save(
        self,
        step: int,
        *,
        async_save: bool,
        write_model: Callable[[str, bool], Any],
        write_rest: Callable[[str], None],
    ) -> str:
        """Stage ``step_<step>/``: ``write_model(folder, async_save)`` (returns the async handle, or
        None), then ``write_rest(folder)``; the commit starts now, or for an async save at ``wait``
        once the shards are written. Returns the final folder; ``CheckpointSaveError`` on failure."""
        ckpt_dir = step_dir(self.output_dir, step)
        self.wait()
        self.lock()
        platform = get_platform()
        try:
            partial = prepare_partial_dir(
                self.output_dir, step, coordinator=platform.get_rank() == 0, hash_while_writing=async_save
            )
            platform.barrier()
            os.makedirs(partial, exist_ok=True)
            fault_point("before:model")
            handle = write_model(partial, async_save)
            if async_save:
                self._pending, self._pending_step = handle, step
            else:
                dcp_files_written(partial)
                fault_point("after:model")
            write_rest(partial)
            if async_save:
                self._pending_commit = (partial, ckpt_dir, step)
            else:
                self._start_commit(partial, ckpt_dir, step)
        except CheckpointSaveError:
            discard_partial(partial_step_dir(self.output_dir, step))
            raise
        except self._errors() as exc:
            discard_partial(partial_step_dir(self.output_dir, step))
            raise CheckpointSaveError(ckpt_dir, step, exc) from exc
        return ckpt_dir

    def async_group(self) -> Any:
        """A gloo group made once, so background shard writes never share the training group."""
        if not self._async_group_made:
            self._async_group_made = True
            platform = get_platform()
            if platform.is_distributed():
                self._async_group = platform.new_group(backend="gloo")
        return self._async_group

    def _start_commit(self, partial: str, ckpt_dir: str, step: int) -> None:
        """Every rank's files are on disk (barrier); rank 0's background thread writes the manifest
        last and renames (joined, with the second barrier, by ``wait``)."""
        platform = get_platform()
        platform.barrier()
        coordinator = platform.get_rank() == 0
        settings = self.settings() if coordinator else None
        self._committer.start(partial, ckpt_dir, step, coordinator=coordinator, settings=settings)

    def wait(self) -> None:
        """Block until the save in flight (if any) is committed: an async save's shards written,
        then its folder committed, or the background commit of a synchronous save joined.

        Collective. A failure raises ``CheckpointSaveError`` naming the folder.
        """
        if self._pending is None and self._pending_commit is None and not self._committer.pending:
            return
        handle, step, commit = self._pending, self._pending_step, self._pending_commit
        self._pending = self._pending_step = self._pending_commit = None
        try:
            if handle is not None:
                self._wait_model(handle)
                if commit is not None:
                    dcp_files_written(commit[0])
                fault_point("after:model")
            if commit is not None:
                self._start_commit(*commit)
        except self._errors() as exc:
            folder = commit[1] if commit is not None else step_dir(self.output_dir, step or 0)
            raise CheckpointSaveError(folder, commit[2] if commit else step or 0, exc) from exc
        if self._committer.join():
            get_platform().barrier()  # the folder is in place for every rank

    def close(self) -> None:
        """Join the commit in flight and give back the run folder's lock."""
        try:
            self.wait()
        finally:
            self.unlock()
