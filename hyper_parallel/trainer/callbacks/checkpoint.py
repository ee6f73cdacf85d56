"""Checkpointing (spec 14): ``step_<N>/`` saves, resume, and the HF safetensors export.

Layout of one save, ``<train.checkpoint.output_dir>/step_<N>/``:

- ``.metadata`` + ``__<rank>_0.distcp``: ``dcp.save(model.state_dict())`` (all ranks)
- ``optimizer_rank{r}.pt`` (every rank), ``scheduler.pt`` and ``extra_state.json`` (rank 0)
- ``rng_rank{r}.pt`` and ``dataloader_rank{r}.pt`` (every rank)
- ``hf_ckpt/model.safetensors`` + ``hf_ckpt/config.json`` (rank 0, SafetensorsExportCallback)

Every non-DCP file is written to a temporary file in the same folder and moved into place with
``os.replace``, so a crash never leaves a truncated artifact that a resume would then trust.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException

from hyper_parallel.platform import get_platform
from hyper_parallel.trainer.callbacks.base import Callback, _rank, _sub_cfg

logger = logging.getLogger(__name__)

# Code defaults when neither `train.checkpoint` nor `checkpoint` is configured (schema defaults, 2.4).
DEFAULT_OUTPUT_DIR = "outputs"
DEFAULT_SAVE_STEPS = 500
DEFAULT_SAVE_HF_WEIGHTS = True

# (lenient) Failures that only warn. DCP wraps per-rank failures in CheckpointException, which
# derives from BaseException, so it is listed explicitly.
LENIENT_ERRORS: tuple[type[BaseException], ...] = (OSError, RuntimeError, ValueError, CheckpointException)

EXTRA_STATE_FILE = "extra_state.json"
SCHEDULER_FILE = "scheduler.pt"
HF_SUBDIR = "hf_ckpt"
HF_WEIGHTS_FILE = "model.safetensors"
HF_CONFIG_FILE = "config.json"


def optimizer_file(rank: int) -> str:
    return f"optimizer_rank{rank}.pt"


def rng_file(rank: int) -> str:
    return f"rng_rank{rank}.pt"


def dataloader_file(rank: int) -> str:
    return f"dataloader_rank{rank}.pt"


def step_dir(output_dir: str, step: int) -> str:
    return os.path.join(output_dir, f"step_{step}")


# --------------------------------------------------------------------------- atomic writes
def _fsync_path(path: str) -> None:
    """Flush a file or folder to disk; best effort (some filesystems refuse folder fsync)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str, writer: Callable[[str], None]) -> None:
    """Run ``writer(tmp_path)`` on a temporary file next to ``path``, then ``os.replace`` it.

    The temporary name is hidden and unique per process, so concurrent ranks never collide and
    a crash leaves at most a ``.<name>.*.tmp`` file, never a half-written ``path``.
    """
    directory, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        writer(tmp)
        _fsync_path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_path(directory)


def atomic_torch_save(obj: Any, path: str) -> None:
    atomic_write(path, lambda tmp: torch.save(obj, tmp))


def atomic_write_json(obj: Any, path: str) -> None:
    def _write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")

    atomic_write(path, _write)


def _load_pt(path: str) -> Any:
    return torch.load(path, weights_only=True)


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
        # Step 0 is the untrained state: a run that trains nothing writes nothing.
        self.last_saved_step: int | None = 0
        self._pending: Any = None
        self._pending_step: int | None = None
        self._async_pg: Any = None
        self._async_pg_created = False

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
        self.wait_for_pending()
        if self.save_steps > 0 and state.global_step != self.last_saved_step:
            self.save(state, async_save=False)

    # ------------------------------------------------------------------- save
    def save(self, state: Any, *, async_save: bool = False) -> str | None:
        """Write ``step_<global_step>/``; returns the folder, or None when the save failed."""
        step = state.global_step
        ckpt_dir = step_dir(self.output_dir, step)
        self.wait_for_pending()
        try:
            os.makedirs(ckpt_dir, exist_ok=True)
            self._save_model(ckpt_dir, async_save=async_save, step=step)
            self._save_artifacts(ckpt_dir, state)
        except LENIENT_ERRORS as exc:
            logger.warning(
                f"Checkpoint save to {ckpt_dir} failed at step {step}: {exc!r}; training continues"
            )
            return None
        self.last_saved_step = step
        kind = "async checkpoint issued" if async_save else "Saved checkpoint"
        logger.info_rank0(f"{kind} at step {step} to {ckpt_dir}")
        self.trainer.dispatch_save_event(ckpt_dir)
        return ckpt_dir

    def _save_model(self, ckpt_dir: str, *, async_save: bool, step: int) -> None:
        model_sd = self.trainer.model.state_dict()
        if async_save:
            self._pending = dcp.async_save(
                model_sd, checkpoint_id=ckpt_dir, process_group=self._async_group()
            )
            self._pending_step = step
        else:
            dcp.save(model_sd, checkpoint_id=ckpt_dir)

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

    def _async_group(self) -> Any:
        """A gloo group, created once, so async shard writes never contend with training collectives."""
        if not self._async_pg_created:
            self._async_pg_created = True
            platform = get_platform()
            if platform.is_distributed():
                self._async_pg = platform.new_group(backend="gloo")
        return self._async_pg

    def wait_for_pending(self) -> None:
        """Block until the in-flight async save (if any) has finished writing."""
        if self._pending is None:
            return
        pending, step = self._pending, self._pending_step
        self._pending = self._pending_step = None
        try:
            future = getattr(pending, "upload_completion", pending)
            future.result()
        except LENIENT_ERRORS as exc:
            logger.warning(f"Async checkpoint save of step {step} failed: {exc!r}; training continues")
            if self.last_saved_step == step:
                self.last_saved_step = None  # the final save at train end will retry

    # ----------------------------------------------------------------- resume
    def resume(self, load_path: str, state: Any) -> None:
        """Restore model, extra state, optimizer, scheduler, RNG and dataloader, in that order."""
        if not os.path.isdir(load_path):
            raise ValueError(
                f"train.checkpoint.load_path={load_path!r} is not an existing directory; "
                "expected a step_<N> checkpoint folder written by CheckpointCallback"
            )
        trainer = self.trainer
        rank = _rank()
        self._restore("model", load_path, self._load_model)
        self._restore_file(load_path, EXTRA_STATE_FILE, lambda path: self._load_extra_state(path, state))
        optimizer = getattr(trainer, "optimizer", None)
        if optimizer is not None:
            self._restore_file(
                load_path, optimizer_file(rank), lambda p: optimizer.load_state_dict(_load_pt(p))
            )
        scheduler = getattr(trainer, "lr_scheduler", None)
        if scheduler is not None:
            self._restore_file(load_path, SCHEDULER_FILE, lambda p: scheduler.load_state_dict(_load_pt(p)))
        self._restore_file(load_path, rng_file(rank), lambda p: get_platform().set_rng_state(_load_pt(p)))
        loader = getattr(trainer, "train_dataloader", None)
        if loader is not None and hasattr(loader, "load_state_dict"):
            self._restore_file(
                load_path, dataloader_file(rank), lambda p: loader.load_state_dict(_load_pt(p))
            )
        # The loaded step is on disk already: do not write it again at train end.
        self.last_saved_step = state.global_step
        logger.info_rank0(
            f"Resumed from checkpoint {load_path} (global_step={state.global_step}, epoch={state.epoch})"
        )
        trainer.dispatch_load_event(load_path)

    def _load_model(self, load_path: str) -> None:
        if not any(name.endswith(".metadata") for name in os.listdir(load_path)):
            logger.warning(f"Checkpoint {load_path} has no DCP .metadata; model weights not restored")
            return
        model = self.trainer.model
        model_sd = model.state_dict()
        dcp.load(model_sd, checkpoint_id=load_path)
        model.load_state_dict(model_sd)

    @staticmethod
    def _load_extra_state(path: str, state: Any) -> None:
        with open(path, encoding="utf-8") as f:
            extra = json.load(f)
        if not isinstance(extra, dict):
            raise ValueError(
                f"{path}: expected a JSON object with global_step and epoch, got {type(extra).__name__}"
            )
        state.global_step = int(extra.get("global_step", 0))
        state.epoch = int(extra.get("epoch", 0))

    @staticmethod
    def _restore(what: str, target: str, fn: Callable[[str], None]) -> None:
        try:
            fn(target)
        except LENIENT_ERRORS as exc:
            logger.warning(f"Could not restore {what} from {target}: {exc!r}; training continues without it")

    def _restore_file(self, load_path: str, filename: str, fn: Callable[[str], None]) -> None:
        path = os.path.join(load_path, filename)
        if not os.path.isfile(path):
            logger.warning(f"Checkpoint artifact {path} is missing; skipped")
            return
        self._restore(filename, path, fn)


class SafetensorsExportCallback(Callback):
    """Exports HF weights to ``step_<N>/hf_ckpt/`` on the checkpoint cadence
    (enabled by ``train.checkpoint.save_hf_weights``)."""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg, self.output_dir, self.save_steps = _checkpoint_cfg(trainer.args)
        self.enabled = bool(getattr(cfg, "save_hf_weights", DEFAULT_SAVE_HF_WEIGHTS))
        self.last_exported_step: int | None = 0

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        step = state.global_step
        if (
            self.enabled
            and self.save_steps > 0
            and step % self.save_steps == 0
            and step != self.last_exported_step
        ):
            self.export(state)

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        if self.enabled and self.save_steps > 0 and state.global_step != self.last_exported_step:
            self.export(state)

    def on_load(self, state: Any, *, checkpoint_dir: str, **kwargs: Any) -> None:
        # The resumed step was exported by the run that saved it.
        self.last_exported_step = state.global_step

    def export(self, state: Any) -> str | None:
        """Export the current weights; returns the folder on rank 0, None elsewhere or on failure."""
        step = state.global_step
        out_dir = os.path.join(step_dir(self.output_dir, step), HF_SUBDIR)
        adapter_cls = getattr(getattr(self.trainer, "spec", None), "state_dict_adapter", None)
        try:
            result = export_hf_checkpoint(self.trainer.model, adapter_cls, out_dir)
        except LENIENT_ERRORS as exc:
            logger.warning(f"HF export to {out_dir} failed at step {step}: {exc!r}; training continues")
            return None
        self.last_exported_step = step
        logger.info_rank0(f"Exported HF weights at step {step} to {out_dir}")
        return result
