"""Checkpointing: ``step_<N>/`` saves, resume, and the HF safetensors export.

Layout of one save, ``<train.checkpoint.output_dir>/step_<N>/``:

- ``.metadata`` + ``__<rank>_0.distcp``: ``dcp.save(model.state_dict())`` (all ranks)
- ``optimizer_rank{r}.pt`` (every rank), ``scheduler.pt`` and ``extra_state.json`` (rank 0)
- ``rng_rank{r}.pt`` and ``dataloader_rank{r}.pt`` (every rank)
- ``hf_ckpt/model.safetensors`` + ``hf_ckpt/config.json`` (rank 0, SafetensorsExportCallback)

A save writes everything (HF export included) into ``<output_dir>/.partial.step_<N>/``; when every
rank's files are on disk, rank 0 writes ``manifest.json`` last and renames the folder to
``step_<N>/`` (``hyper_parallel.checkpointing``), so a checkpoint is complete or absent. That commit
runs on rank 0's background thread (``StepCommitter``), joined by ``wait_for_pending`` before the
next save, before a resume and at train end (after the final save). A failed save or commit raises
``CheckpointSaveError`` and stops the run (once the new folder is committed, an old copy that
cannot be removed is only a warning naming it). Resume verifies the manifest first and
refuses damaged state with ``CheckpointCorruptError``, the same type and message as
``CheckpointManager``; ``load_path`` may also be the run folder (newest complete ``step_<N>/``).
A checkpoint of another model is a ``CheckpointMismatchError`` before the run settings are
compared (``weights_fit.check_checkpoint_fits``).

No checkpoint already in ``output_dir`` is replaced unasked (``hyper_parallel.checkpointing.run_lock``):
a run without ``load_path`` into a folder holding ``step_<N>/`` folders (with or without a manifest)
stops at setup, and a resume stops before training when the folder holds steps after the resumed
one. ``train.checkpoint.overwrite: true`` lets the run replace the ``step_<N>/`` folders it saves
again (the others stay); a ``.replaced.step_<N>/`` left by an interrupted replacement is refused
even then (resume it, or move it away).
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException

from hyper_parallel.checkpointing import (
    HF_SUBDIR,
    CheckpointSaveError,
    atomic_write,
    atomic_write_json,
    step_dir,
)
from hyper_parallel.checkpointing.layout import (
    EXTRA_STATE_FILE,
    HF_CONFIG_FILE,
    HF_WEIGHTS_FILE,
    SCHEDULER_FILE,
    dataloader_file,
    optimizer_file,
    rng_file,
)
from hyper_parallel.checkpointing.lifecycle import StepWriter
from hyper_parallel.checkpointing.reader import StateFile, StepReader
from hyper_parallel.checkpointing.resume_settings import (
    RESUME_MODES,
    run_settings,
)
from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.trainer.callbacks.base import Callback, _rank, _sub_cfg

logger = get_logger(__name__)

# Code defaults when neither `train.checkpoint` nor `checkpoint` is configured (schema defaults, 2.4).
DEFAULT_OUTPUT_DIR = "outputs"
DEFAULT_SAVE_STEPS = 500
DEFAULT_SAVE_HF_WEIGHTS = True

# Failures of a save (they stop the run as CheckpointSaveError) and of applying a readable artifact
# that does not fit (lenient: warned). DCP wraps per-rank failures in CheckpointException, which
# derives from BaseException, so it is listed explicitly.
LENIENT_ERRORS: tuple[type[BaseException], ...] = (OSError, RuntimeError, ValueError, CheckpointException)
# Every failure of a save or load step: any Exception, and DCP's CheckpointException.
ANY_ERROR: tuple[type[BaseException], ...] = (Exception, *LENIENT_ERRORS)


# --------------------------------------------------------------------------- atomic writes
def atomic_torch_save(obj: Any, path: str) -> None:
    atomic_write(path, lambda tmp: torch.save(obj, tmp))


# --------------------------------------------------------------------------- HF export
def _dtype_name(tensors: dict[str, torch.Tensor]) -> str:
    """Name of the exported floating dtype (``"float32"``, ``"bfloat16"``...)."""
    for tensor in tensors.values():
        if tensor.is_floating_point():
            return str(tensor.dtype).removeprefix("torch.")
    return "float32"


def export_hf_checkpoint(model: torch.nn.Module, adapter_cls: Any, out_dir: str) -> str | None:
    """Write ``<out_dir>/model.safetensors`` (+ ``config.json`` with an adapter) from rank 0.

    Collective: every rank must call it (the full state dict is gathered from the FSDP shards).
    ``adapter_cls`` is the ModelSpec's ``state_dict_adapter`` (a class or an instance) or None;
    without one the full state dict is written under its own names and no config is written.
    Returns ``out_dir`` on rank 0 and None on the other ranks.
    """
    from safetensors.torch import save_file
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    full_sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if _rank() != 0:
        return None
    model_config = getattr(model, "config", None)
    adapter = None
    if adapter_cls is not None:
        adapter = adapter_cls() if isinstance(adapter_cls, type) else adapter_cls
        hf_sd = adapter.save_hf_state_dict(full_sd, model_config)
    else:
        hf_sd = full_sd
    # Tied weights share storage, which safetensors rejects: every tensor gets its own copy.
    tensors = {
        key: value.detach().contiguous().clone()
        for key, value in hf_sd.items()
        if isinstance(value, torch.Tensor)
    }
    os.makedirs(out_dir, exist_ok=True)
    atomic_write(
        os.path.join(out_dir, HF_WEIGHTS_FILE),
        lambda tmp: save_file(tensors, tmp, metadata={"format": "pt"}),
    )
    if adapter is not None:
        hf_config = adapter.export_hf_config(model_config, _dtype_name(tensors))
        atomic_write_json(hf_config, os.path.join(out_dir, HF_CONFIG_FILE))
    return out_dir


# --------------------------------------------------------------------------- callbacks
def _checkpoint_cfg(args: Any) -> tuple[Any, str, int]:
    """``train.checkpoint`` (else ``checkpoint``) with its output folder and save interval
    (schema defaults when absent); shared by the checkpoint and HF export callbacks."""
    cfg = _sub_cfg(args, "checkpoint")
    output_dir = getattr(cfg, "output_dir", DEFAULT_OUTPUT_DIR)
    save_steps = int(getattr(cfg, "save_steps", DEFAULT_SAVE_STEPS) or 0)
    return cfg, output_dir, save_steps


class CheckpointCallback(Callback):
    """Saves ``step_<N>/`` every ``save_steps`` and at train end; resumes from ``load_path``."""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg, self.output_dir, self.save_steps = _checkpoint_cfg(trainer.args)
        self.load_path: str | None = getattr(cfg, "load_path", None) or None
        self.save_async = bool(getattr(cfg, "save_async", False))
        self.allow_unverified = bool(getattr(cfg, "allow_unverified", False))
        self.resume_config_changes = getattr(cfg, "resume_config_changes", "refuse")
        if self.resume_config_changes not in RESUME_MODES:
            raise ValueError(
                f"train.checkpoint.resume_config_changes must be one of {', '.join(RESUME_MODES)}, "
                f"got {self.resume_config_changes!r}"
            )
        self.overwrite = bool(getattr(cfg, "overwrite", False))
        self.writer = StepWriter(
            self.output_dir,
            save_steps=self.save_steps,
            resuming=bool(self.load_path),
            overwrite=self.overwrite,
            fields="train.checkpoint",
            settings=self.current_settings,
            wait_model=lambda pending: getattr(pending, "upload_completion", pending).result(),
            errors=lambda: ANY_ERROR,
        )
        self.reader = StepReader(
            self.writer,
            mode=self.resume_config_changes,
            allow_unverified=self.allow_unverified,
            max_steps=lambda: getattr(getattr(self.trainer, "state", None), "max_steps", None),
        )
        # Step 0 is the untrained state: a run that trains nothing writes nothing.
        self.last_saved_step: int | None = 0

    # ------------------------------------------------------------------ settings
    def current_settings(self) -> dict[str, Any]:
        """The settings a resume compares (``resume_settings``), named as ``CheckpointManager``
        names them, so that a checkpoint of either trainer is compared in the other."""
        trainer = self.trainer
        args = getattr(trainer, "args", None)
        train = getattr(args, "train", None)
        opt = getattr(train, "optimizer", None)
        optimizer = getattr(trainer, "optimizer", None)
        trainable = [
            name.replace("._checkpoint_wrapped_module", "")
            for name, param in trainer.model.named_parameters()
            if param.requires_grad
        ]
        scheduler = None
        if getattr(trainer, "lr_scheduler", None) is not None and opt is not None:
            scheduler = {
                "lr_warmup_ratio": getattr(opt, "lr_warmup_ratio", None),
                "decay_style": getattr(opt, "lr_decay_style", None),
                "lr_min": getattr(opt, "lr_min", None),
            }
        data = getattr(args, "data", None)
        return run_settings(
            param_groups=optimizer.param_groups if optimizer is not None else None,
            trainable=trainable,
            scheduler=scheduler,
            global_batch_size=getattr(train, "global_batch_size", None),
            seq_len=getattr(data, "max_seq_len", None),
            max_steps=getattr(getattr(trainer, "state", None), "max_steps", None),
        )

    # ------------------------------------------------------------------ hooks
    def on_train_begin(self, state: Any, **kwargs: Any) -> None:
        if self.load_path:
            self.resume(self.load_path, state)

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        step = state.global_step
        if self.save_steps > 0 and step % self.save_steps == 0 and step != self.last_saved_step:
            self.save(state, async_save=self.save_async)

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        try:
            self.wait_for_pending()
            if self.save_steps > 0 and state.global_step != self.last_saved_step:
                self.save(state, async_save=False, final=True)
                self.wait_for_pending()  # the run ends with every checkpoint committed
        finally:
            self.writer.unlock()

    # ------------------------------------------------------------------- save
    def save(self, state: Any, *, async_save: bool = False, final: bool = False) -> str:
        """Write ``step_<global_step>/`` (staged, manifest last, renamed in the background: it exists
        once ``wait_for_pending`` returned); ``CheckpointSaveError`` on failure."""
        step = state.global_step

        def write_rest(partial: str) -> None:
            # The export right after the shards: the large files first, so that (async saves)
            # hashing the last one overlaps the small writes that follow.
            exporter = self._exporter_due(step, final=final)
            if exporter is not None:
                exporter.export(state, into=partial)
            self._save_artifacts(partial, state)

        ckpt_dir = self.writer.save(
            step, async_save=async_save, write_model=self._save_model, write_rest=write_rest
        )
        self.last_saved_step = step
        kind = "async checkpoint issued" if async_save else "Saved checkpoint (committing in the background)"
        logger.info_rank0(f"{kind} at step {step} to {ckpt_dir}")
        self.trainer.dispatch_save_event(ckpt_dir)
        return ckpt_dir

    def _exporter_due(self, step: int, *, final: bool) -> Any:
        """The HF export callback when it is due at ``step``: it then exports into the staged folder."""
        exporter = getattr(self.trainer, "hf_export_callback", None)
        if exporter is not None and exporter.due(step, final=final):
            return exporter
        return None

    def _save_model(self, ckpt_dir: str, async_save: bool) -> Any:
        """``dcp.save`` of the model's state dict; the future of an async save."""
        model_sd = self.trainer.model.state_dict()
        if async_save:
            return dcp.async_save(model_sd, checkpoint_id=ckpt_dir, process_group=self.writer.async_group())
        dcp.save(model_sd, checkpoint_id=ckpt_dir)
        return None

    def _save_artifacts(self, ckpt_dir: str, state: Any) -> None:
        trainer = self.trainer
        rank = _rank()
        optimizer = getattr(trainer, "optimizer", None)
        if optimizer is not None:
            atomic_torch_save(optimizer.state_dict(), os.path.join(ckpt_dir, optimizer_file(rank)))
        scheduler = getattr(trainer, "lr_scheduler", None)
        if rank == 0 and scheduler is not None:
            atomic_torch_save(scheduler.state_dict(), os.path.join(ckpt_dir, SCHEDULER_FILE))
        if rank == 0:
            extra = {"global_step": state.global_step, "epoch": state.epoch}
            atomic_write_json(extra, os.path.join(ckpt_dir, EXTRA_STATE_FILE))
        atomic_torch_save(get_platform().get_rng_state(), os.path.join(ckpt_dir, rng_file(rank)))
        loader = getattr(trainer, "train_dataloader", None)
        if loader is not None and hasattr(loader, "state_dict"):
            atomic_torch_save(loader.state_dict(), os.path.join(ckpt_dir, dataloader_file(rank)))

    def wait_for_pending(self) -> None:
        """Block until the save in flight (if any) is committed (``StepWriter.wait``); collective."""
        self.writer.wait()

    # ----------------------------------------------------------------- resume
    def resume(self, load_path: str, state: Any) -> None:
        """Restore model, extra state, optimizer, scheduler, RNG and dataloader (``StepReader``).

        ``load_path`` is verified first (manifest, or the pre-manifest policy of
        ``hyper_parallel.checkpointing``); a run folder resolves to its newest complete step.
        """
        trainer = self.trainer
        rank = _rank()
        optimizer = getattr(trainer, "optimizer", None)
        scheduler = getattr(trainer, "lr_scheduler", None)
        loader = getattr(trainer, "train_dataloader", None)
        optimizer_files = []
        if optimizer is not None:
            optimizer_files.append(StateFile(optimizer_file(rank), optimizer.load_state_dict))
        if scheduler is not None:
            optimizer_files.append(StateFile(SCHEDULER_FILE, scheduler.load_state_dict))
        run_files = [StateFile(rng_file(rank), get_platform().set_rng_state)]
        if loader is not None and hasattr(loader, "load_state_dict"):
            run_files.append(StateFile(dataloader_file(rank), loader.load_state_dict))
        resumed = self.reader.resume(
            load_path,
            model_parts=[trainer.model],
            optimizer_files=optimizer_files,
            param_groups=lambda: optimizer.param_groups if optimizer is not None else None,
            scheduler=scheduler,
            run_files=run_files,
        )
        state.global_step, state.epoch = resumed.step, resumed.epoch
        # The loaded step is on disk already: do not write it again at train end.
        self.last_saved_step = state.global_step
        trainer.dispatch_load_event(resumed.path)


class SafetensorsExportCallback(Callback):
    """Exports HF weights to ``step_<N>/hf_ckpt/`` on the checkpoint cadence
    (enabled by ``train.checkpoint.save_hf_weights``).

    When the checkpoint callback saves the same step, it calls :meth:`export` with its staged
    folder, so the export is part of the checkpoint and of its manifest.
    """

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg, self.output_dir, self.save_steps = _checkpoint_cfg(trainer.args)
        self.enabled = bool(getattr(cfg, "save_hf_weights", DEFAULT_SAVE_HF_WEIGHTS))
        self.last_exported_step: int | None = 0

    def due(self, step: int, *, final: bool = False) -> bool:
        if not (self.enabled and self.save_steps > 0 and step != self.last_exported_step):
            return False
        return final or step % self.save_steps == 0

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        if self.due(state.global_step):
            self.export(state)

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        if self.due(state.global_step, final=True):
            self.export(state)

    def on_load(self, state: Any, *, checkpoint_dir: str, **kwargs: Any) -> None:
        # The resumed step was exported by the run that saved it.
        self.last_exported_step = state.global_step

    def export(self, state: Any, *, into: str | None = None) -> str | None:
        """Export the current weights to ``<into or step_<N>>/hf_ckpt``; folder on rank 0, else None.

        A failure raises ``CheckpointSaveError`` naming the folder (the run stops).
        """
        step = state.global_step
        checkpoint = getattr(self.trainer, "checkpoint_callback", None)
        if into is None and checkpoint is not None:
            checkpoint.wait_for_pending()  # ``step_<N>/`` may be a commit in flight: let its rename land first
        out_dir = os.path.join(into or step_dir(self.output_dir, step), HF_SUBDIR)
        adapter_cls = getattr(getattr(self.trainer, "spec", None), "state_dict_adapter", None)
        try:
            result = export_hf_checkpoint(self.trainer.model, adapter_cls, out_dir)
        except ANY_ERROR as exc:  # safetensors' SafetensorError is an Exception
            raise CheckpointSaveError(out_dir, step, exc) from exc
        self.last_exported_step = step
        logger.info_rank0(f"Exported HF weights at step {step} to {out_dir}")
        return result
