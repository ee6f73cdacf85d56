"""CheckpointManager: ``step_<N>/`` checkpoints, resume, HF export and initial weights (RFC Part 3).

One component takes over what the legacy path spreads over ``CheckpointCallback``,
``SafetensorsExportCallback`` and ``BaseTrainer._load_weights``. It
writes the legacy layout byte-compatibly, so a checkpoint written by either path resumes in the
other. One save, ``<output_dir>/step_<N>/``:

- ``.metadata`` + ``__<rank>_0.distcp``: DCP shards of the model state dict (every rank);
- ``optimizer_rank{r}.pt`` and ``rng_rank{r}.pt`` (every rank), ``dataloader_rank{r}.pt`` (every
  rank whose loader has a ``state_dict``);
- ``scheduler.pt`` and ``extra_state.json`` ``{"global_step", "epoch"}`` (rank 0);
- ``hf_ckpt/model.safetensors`` + ``hf_ckpt/config.json`` (rank 0, when ``save_hf_weights``).

A save writes all of it into ``<output_dir>/.partial.step_<N>/`` (each non-DCP file through a
temporary name and ``os.replace``); when every rank's files are on disk, rank 0 writes
``manifest.json`` (names, sizes, sha256) last and renames the folder to ``step_<N>/``
(``hyper_parallel.checkpointing``). A checkpoint is therefore complete or absent, and a failed save
raises ``CheckpointSaveError`` naming the folder: the run stops (once the new folder is committed,
an old copy that cannot be removed is only a warning naming it).

No checkpoint already in ``output_dir`` is replaced unasked (``hyper_parallel.checkpointing.run_lock``):
a run without ``load_path`` into a folder holding ``step_<N>/`` folders (with or without a manifest)
stops at setup, and a resume stops before reading the model when the folder holds steps after the
resumed one. ``checkpoint.overwrite: true`` lets the run replace the ``step_<N>/`` folders it saves
again (the others stay); a ``.replaced.step_<N>/`` left by an interrupted replacement is refused
even then (resume it, or move it away).

That commit runs on rank 0's background thread (``StepCommitter``): ``save`` returns once the files
are written, and :meth:`CheckpointManager.wait` joins the commit. ``wait`` runs before the next
save, before a load, at the end of ``save_final`` and of a forced save, and in ``close``; a failed
commit raises ``CheckpointSaveError`` there.

Resume verifies the manifest before reading anything: a missing, truncated or altered file is a
``CheckpointCorruptError`` naming the folder and the file; ``load_path`` may also be the run folder
(then its newest complete ``step_<N>/``). ``.metadata`` is read by a restricted unpickler
(``platform.dcp_load``), and a checkpoint of another model (a tensor of another shape, another
layer count, tensors only one side has) is a ``CheckpointMismatchError`` naming the tensor and both
shapes, or the counts, before the run settings are compared (``weights_fit.check_checkpoint_fits``).
Initial weights are checked from the file's header or metadata before any cast, every layer of an
HF folder kept, and a file read from inside a checkpoint folder against its manifest. Still lenient, as in the legacy
callbacks: an artifact the manifest does not list is skipped with a warning, and a readable
optimizer/scheduler/RNG/dataloader state that does not fit (``load_state_dict`` raises) is warned
about.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyper_parallel.checkpointing import (
    HF_SUBDIR,
    MANIFEST_FILE,
    CheckpointCorruptError,
    CheckpointMismatchError,
    CheckpointSaveError,
    UnsafeCheckpointError,
    WeightsLoadError,
    atomic_write,
    atomic_write_json,
    check_weights_fit,
    load_error,
    step_dir,
    verify_files_in_checkpoint,
    verify_manifest,
)
from hyper_parallel.checkpointing.layout import (
    DCP_METADATA_FILE,
    EXTRA_STATE_FILE,
    HF_CONFIG_FILE,
    HF_INDEX_FILE,
    HF_WEIGHTS_FILE,
    SCHEDULER_FILE,
    dataloader_file,
    optimizer_file,
    rng_file,
)
from hyper_parallel.checkpointing.lifecycle import StepWriter
from hyper_parallel.checkpointing.reader import (
    StateFile,
    StepReader,
    lenient_errors,
    part_state_dicts,
    raise_if_damaged,
)
from hyper_parallel.checkpointing.resume_settings import (
    RESUME_MODES,
    run_settings,
)
from hyper_parallel.checkpointing.weights_fit import (
    hf_folder_entries,
    hf_folder_shards,
)
from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.protocols.configurable import Configurable

if TYPE_CHECKING:
    import torch

__all__ = [
    "CheckpointCorruptError",
    "CheckpointMismatchError",
    "CheckpointSaveError",
    "CheckpointManager",
    "EXTRA_STATE_FILE",
    "HF_CONFIG_FILE",
    "HF_SUBDIR",
    "HF_WEIGHTS_FILE",
    "SCHEDULER_FILE",
    "dataloader_file",
    "optimizer_file",
    "rng_file",
]

logger = get_logger(__name__)


# torch's activation-checkpoint wrapper inserts this into parameter names; HF keys never have it.
_AC_WRAPPER_INFIX = "._checkpoint_wrapped_module"
# Dtype names an HF config may carry that the weight loader casts to; anything else: no cast.
_HF_LOAD_DTYPES = frozenset({"bfloat16", "bf16", "float16", "fp16", "float32", "fp32"})


# --------------------------------------------------------------------------- file helpers
def _save_object(obj: Any, path: str) -> None:
    platform = get_platform()
    atomic_write(path, lambda tmp: platform.save(obj, tmp))


def _logical_name(name: str) -> str:
    return name.replace(_AC_WRAPPER_INFIX, "")


def _check_type(field: str, value: Any, kinds: tuple[type, ...], expected: str) -> None:
    if isinstance(value, bool) and bool not in kinds:
        raise TypeError(f"checkpoint.{field} must be {expected}, got {value!r}")
    if not isinstance(value, kinds):
        raise TypeError(f"checkpoint.{field} must be {expected}, got {type(value).__name__} {value!r}")


class CheckpointManager(Configurable):
    """Checkpoint save/resume on the legacy ``step_<N>/`` layout, plus HF export and weight loading.

    Runtime objects are duck-typed: ``optimizers``, ``lr_schedulers`` and ``dataloader`` need
    ``state_dict()`` / ``load_state_dict()`` (any may be None and is then skipped), the model
    parts are modules whose state dicts are merged (their keys must not collide), ``sd_adapter``
    is the ModelSpec's state-dict adapter (class or instance) or None.
    """

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        """Legacy ``train.checkpoint`` fields under their YAML names.

        ``save_steps <= 0`` turns saving off (also at train end), as in the legacy callbacks;
        an empty ``load_path`` means no resume; it names a ``step_<N>`` folder, or the run folder
        (an ``output_dir``), which resumes from its newest complete ``step_<N>``.
        """

        output_dir: str = "outputs"
        """Run folder; each save is ``<output_dir>/step_<N>/``."""
        save_steps: int = 500
        """Save every N steps and at train end; <= 0 turns saving off."""
        save_async: bool = False
        """Write the model shards in the background (a forced save is always synchronous)."""
        save_hf_weights: bool = True
        """Also export ``hf_ckpt/model.safetensors`` + ``config.json`` with each save (rank 0)."""
        load_path: str | None = None
        """Resume from a ``step_<N>`` folder, or the newest complete one in a run folder; None: no resume."""
        overwrite: bool = False
        """Let the run replace the step_<N> folders of output_dir it saves again (else a run without
        load_path into a folder with checkpoints, or a resume with later steps there, is refused;
        a .replaced.step_<N> folder is refused even then)."""
        allow_unverified: bool = False
        """Load a folder without manifest.json, or a .partial.* one, without an integrity check."""
        resume_config_changes: str = "refuse"
        """A config that differs from the checkpoint's settings on resume: "refuse" or "apply"."""
        allow_partial_weights: bool = False
        """Initial weights that do not fit the model: load what fits, keep the rest random."""

        def __post_init__(self) -> None:
            _check_type("output_dir", self.output_dir, (str,), "a folder path (str)")
            if not self.output_dir:
                raise ValueError("checkpoint.output_dir must be a non-empty folder path")
            _check_type("save_steps", self.save_steps, (int,), "an int (<= 0 disables saving)")
            _check_type("save_async", self.save_async, (bool,), "a bool")
            _check_type("save_hf_weights", self.save_hf_weights, (bool,), "a bool")
            if self.load_path is not None:
                _check_type(
                    "load_path", self.load_path, (str,), "a step_<N> or run folder path (str) or None"
                )
            for name in ("overwrite", "allow_unverified", "allow_partial_weights"):
                _check_type(name, getattr(self, name), (bool,), "a bool")
            if self.resume_config_changes not in RESUME_MODES:
                raise ValueError(
                    f"checkpoint.resume_config_changes must be one of {', '.join(RESUME_MODES)}, got "
                    f"{self.resume_config_changes!r}"
                )

    def __init__(
        self,
        config: CheckpointManager.Config,
        *,
        model_parts: Sequence[torch.nn.Module],
        optimizers: Any,
        lr_schedulers: Any,
        dataloader: Any,
        sd_adapter: Any = None,
        run_settings: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model_parts, (list, tuple)) or not model_parts:
            raise TypeError(
                f"model_parts must be a non-empty list of models, got {type(model_parts).__name__}"
            )
        self.config = config
        self.model_parts = list(model_parts)
        self.optimizers = optimizers
        self.lr_schedulers = lr_schedulers
        self.dataloader = dataloader
        self.sd_adapter = sd_adapter() if isinstance(sd_adapter, type) else sd_adapter
        # global_batch_size, seq_len, max_steps and lr_scheduler fields, recorded in each manifest.
        self.run_settings = dict(run_settings or {})
        self.writer = StepWriter(
            config.output_dir,
            save_steps=config.save_steps,
            resuming=bool(config.load_path),
            overwrite=config.overwrite,
            fields="checkpoint",
            settings=self.current_settings,
            wait_model=lambda handle: get_platform().dcp_wait(handle),
            errors=lambda: self._any_error,
        )
        self.reader = StepReader(
            self.writer,
            mode=config.resume_config_changes,
            allow_unverified=config.allow_unverified,
            max_steps=lambda: self.run_settings.get("max_steps"),
        )
        # Step 0 is the untrained state: a run that trains nothing writes nothing.
        self.last_saved_step: int | None = 0
        self.last_exported_step: int | None = 0

    @property
    def _any_error(self) -> tuple[type[BaseException], ...]:
        """Every failure of a save or load step: any Exception, and DCP's CheckpointException.

        Only evaluated when an exception reaches an ``except`` clause, so building stays cheap.
        """
        return (Exception, *lenient_errors())

    # ------------------------------------------------------------------ own state
    def state_dict(self) -> dict[str, Any]:
        return {"last_saved_step": self.last_saved_step, "last_exported_step": self.last_exported_step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.last_saved_step = state.get("last_saved_step", 0)
        self.last_exported_step = state.get("last_exported_step", 0)

    def _param_groups(self) -> Any:
        return getattr(self.optimizers, "param_groups", None) if self.optimizers is not None else None

    def current_settings(self) -> dict[str, Any]:
        """The settings a resume compares (``resume_settings``): optimizer groups, trainable
        names, schedule and the ``run_settings`` given by the trainer."""
        trainable = [
            _logical_name(name)
            for part in self.model_parts
            for name, param in part.named_parameters()
            if getattr(param, "requires_grad", True)
        ]
        extra = dict(self.run_settings)
        scheduler = extra.pop("lr_scheduler", None)
        if scheduler is None:
            config = getattr(self.lr_schedulers, "config", None)
            if config is not None:
                scheduler = {
                    "lr_warmup_ratio": getattr(config, "lr_warmup_ratio", None),
                    "decay_style": getattr(config, "decay_style", None),
                    "lr_min": getattr(config, "lr_min", None),
                    "warmup_steps": getattr(config, "warmup_steps", None),
                    "lr_max": getattr(config, "lr_max", None),
                }
        return run_settings(
            param_groups=self._param_groups(), trainable=trainable, scheduler=scheduler, **extra
        )

    # ------------------------------------------------------------------ paths
    def step_dir(self, step: int) -> str:
        return step_dir(self.config.output_dir, step)

    def _model_config(self) -> Any:
        for part in self.model_parts:
            config = getattr(part, "config", None)
            if config is not None:
                return config
        return None

    # ------------------------------------------------------------------ save
    def _due(self, step: int, last: int | None) -> bool:
        save_steps = self.config.save_steps
        return save_steps > 0 and step % save_steps == 0 and step != last

    def maybe_save(self, step: int, epoch: int = 0) -> str | None:
        """Per-step hook: checkpoint (and HF export) when ``step`` is on the cadence and unsaved."""
        return self.save(step, epoch)

    def save(self, step: int, epoch: int = 0, *, force: bool = False) -> str | None:
        """Write ``step_<step>/`` when due (``force``: now, committed on return); returns it or None.

        Due means ``save_steps > 0``, ``step % save_steps == 0`` and ``step`` not saved yet. The HF
        export follows the same rule with its own bookkeeping when ``save_hf_weights`` is on. The
        folder is committed in the background: it exists once :meth:`wait` returned.
        """
        export = self.config.save_hf_weights and (force or self._due(step, self.last_exported_step))
        if force or self._due(step, self.last_saved_step):
            async_save = self.config.save_async and not force
            saved = self._save_checkpoint(step, epoch, async_save=async_save, export=export)
            if force:
                self.wait()
            return saved
        if export:
            self._export_step(step)
        return None

    def save_final(self, step: int, epoch: int = 0) -> str | None:
        """Train end: finish the save in flight, then save ``step`` if it is still unsaved; on return
        every checkpoint of the run is committed and the run folder's lock is given back."""
        try:
            self.wait()
            export = (
                self.config.save_hf_weights and self.config.save_steps > 0 and step != self.last_exported_step
            )
            if self.config.save_steps > 0 and step != self.last_saved_step:
                saved = self._save_checkpoint(step, epoch, async_save=False, export=export)
                self.wait()
                return saved
            if export:
                self._export_step(step)
            return None
        finally:
            self.writer.unlock()

    def _save_checkpoint(self, step: int, epoch: int, *, async_save: bool, export: bool) -> str:
        """Stage ``step_<step>/`` (with the HF export when ``export``) and start its commit in the
        background (async: at ``wait``, once the shards are written)."""

        def write_rest(partial: str) -> None:
            # The export right after the shards: the large files first, so that (async saves)
            # hashing the last one overlaps the small writes that follow.
            if export:
                self._export_step(step, into=partial)
            self._write_states(partial, step, epoch)

        ckpt_dir = self.writer.save(
            step, async_save=async_save, write_model=self._write_model, write_rest=write_rest
        )
        self.last_saved_step = step
        kind = "Async checkpoint issued" if async_save else "Saved checkpoint (committing in the background)"
        logger.info_rank0(f"{kind} at step {step} to {ckpt_dir}")
        return ckpt_dir

    def _write_model(self, ckpt_dir: str, async_save: bool) -> Any:
        """The model's DCP shards (all parts in one state dict); the handle of an async write."""
        _states, merged = part_state_dicts(self.model_parts)
        if async_save:
            return get_platform().dcp_save(
                merged, ckpt_dir, async_op=True, process_group=self.writer.async_group()
            )
        get_platform().dcp_save(merged, ckpt_dir)
        return None

    def _write_states(self, ckpt_dir: str, step: int, epoch: int) -> None:
        platform = get_platform()
        rank = platform.get_rank()
        if self.optimizers is not None:
            _save_object(self.optimizers.state_dict(), os.path.join(ckpt_dir, optimizer_file(rank)))
        if rank == 0 and self.lr_schedulers is not None:
            _save_object(self.lr_schedulers.state_dict(), os.path.join(ckpt_dir, SCHEDULER_FILE))
        if rank == 0:
            atomic_write_json({"global_step": step, "epoch": epoch}, os.path.join(ckpt_dir, EXTRA_STATE_FILE))
        _save_object(platform.get_rng_state(), os.path.join(ckpt_dir, rng_file(rank)))
        if self.dataloader is not None and hasattr(self.dataloader, "state_dict"):
            _save_object(self.dataloader.state_dict(), os.path.join(ckpt_dir, dataloader_file(rank)))

    def wait(self) -> None:
        """Block until the save in flight (if any) is committed (``StepWriter.wait``); collective."""
        self.writer.wait()

    def close(self) -> None:
        """Join the commit in flight and give back the run folder's lock."""
        self.writer.close()

    # ------------------------------------------------------------------ HF export
    def _export_step(self, step: int, *, into: str | None = None) -> str | None:
        """HF export to ``<into or step_<step>>/hf_ckpt``; ``CheckpointSaveError`` on failure."""
        if into is None:
            self.wait()  # ``step_<step>/`` may be a commit in flight: let its rename land first
        out_dir = os.path.join(into or self.step_dir(step), HF_SUBDIR)
        try:
            result = self.export_hf(out_dir)
        except self._any_error as exc:  # safetensors' SafetensorError is an Exception
            raise CheckpointSaveError(out_dir, step, exc) from exc
        self.last_exported_step = step
        logger.info_rank0(f"Exported HF weights at step {step} to {out_dir}")
        return result

    def export_hf(self, out_dir: str) -> str | None:
        """Write ``model.safetensors`` (+ ``config.json`` with an adapter) to ``out_dir`` from rank 0.

        Collective: every rank gathers the full state dict from its shards. Without an adapter the
        weights keep their own names and no config is written. Returns ``out_dir`` on rank 0.
        """
        platform = get_platform()
        full: dict[str, Any] = {}
        for part in self.model_parts:
            full.update(platform.full_model_state_dict(part))
        if platform.get_rank() != 0:
            return None
        model_config = self._model_config()
        hf_state = (
            self.sd_adapter.save_hf_state_dict(full, model_config) if self.sd_adapter is not None else full
        )
        # Tied weights share storage, which safetensors refuses: every tensor gets its own copy.
        tensors = {key: platform.detached_copy(v) for key, v in hf_state.items() if platform.is_tensor(v)}
        os.makedirs(out_dir, exist_ok=True)
        atomic_write(
            os.path.join(out_dir, HF_WEIGHTS_FILE),
            lambda tmp: platform.save_safetensors(tensors, tmp, metadata={"format": "pt"}),
        )
        if self.sd_adapter is not None:
            dtype = next(
                (platform.dtype_name(t) for t in tensors.values() if platform.is_floating(t)), "float32"
            )
            atomic_write_json(
                self.sd_adapter.export_hf_config(model_config, dtype), os.path.join(out_dir, HF_CONFIG_FILE)
            )
        return out_dir

    # ------------------------------------------------------------------ resume
    def load(self, load_path: str | None = None) -> tuple[int, int]:
        """Resume from ``load_path`` (default ``config.load_path``); returns ``(global_step, epoch)``.

        ``reader.StepReader`` verifies and restores: model, optimizer, scheduler, RNG, dataloader.
        No path: nothing is touched and ``(0, 0)`` comes back.
        """
        path = load_path if load_path is not None else self.config.load_path
        if not path:
            return 0, 0
        platform = get_platform()
        rank = platform.get_rank()
        optimizer_files = []
        if self.optimizers is not None:
            optimizer_files.append(StateFile(optimizer_file(rank), self.optimizers.load_state_dict))
        if self.lr_schedulers is not None:
            optimizer_files.append(StateFile(SCHEDULER_FILE, self.lr_schedulers.load_state_dict))
        run_files = [StateFile(rng_file(rank), platform.set_rng_state)]
        if self.dataloader is not None and hasattr(self.dataloader, "load_state_dict"):
            run_files.append(StateFile(dataloader_file(rank), self.dataloader.load_state_dict))
        resumed = self.reader.resume(
            path,
            model_parts=self.model_parts,
            optimizer_files=optimizer_files,
            param_groups=self._param_groups,
            scheduler=self.lr_schedulers,
            run_files=run_files,
        )
        step, epoch = resumed.step, resumed.epoch
        # The loaded step is on disk already (with its export): train end must not write it again.
        self.last_saved_step = step
        self.last_exported_step = step
        return step, epoch

    # ------------------------------------------------------------------ initial weights
    def load_weights(self, path: str) -> None:
        """Initial weights (``model.weights_path``): HF folder with an adapter, DCP folder or one file.

        Whole or not at all: a file that misses a parameter, carries an unknown tensor or one of
        another shape or dtype class is an error before anything is copied (``weights_fit``;
        ``allow_partial_weights`` loads what fits). Every failure is a ``WeightsLoadError``
        ("Failed to load weights from <path>: <cause>"); nothing falls back to the random init.
        """
        self.wait()  # the path may be a checkpoint of this run still being committed
        if not os.path.exists(path):
            raise WeightsLoadError(path, "model.weights_path does not exist")
        try:
            if os.path.isdir(path):
                has_hf = os.path.isfile(os.path.join(path, HF_INDEX_FILE)) or os.path.isfile(
                    os.path.join(path, HF_WEIGHTS_FILE)
                )
                if has_hf and self.sd_adapter is not None:
                    self._load_hf_weights(path)
                elif os.path.isfile(os.path.join(path, DCP_METADATA_FILE)):
                    self._load_dcp_weights(path)
                else:
                    raise ValueError(
                        "model.weights_path directory must hold model.safetensors(.index.json) with a "
                        "state-dict adapter, or a DCP checkpoint (.metadata)"
                    )
            else:
                self._load_weights_file(path)
        except self._any_error as exc:
            raise WeightsLoadError(path, " ".join(str(exc).split()) or type(exc).__name__) from exc

    def _model_entries(self, part: Any) -> tuple[dict[str, Any], list[str], dict[str, str]]:
        """``{name: (shape, is_floating)}`` of a part's state dict (logical names), the parameters
        that must be loaded (one name per tied parameter) and the aliases of tied names."""
        platform = get_platform()
        entries = {
            _logical_name(n): (tuple(platform.shape(t)), platform.is_floating(t))
            for n, t in part.state_dict().items()
            if platform.is_tensor(t)
        }
        first: dict[int, str] = {}
        aliases: dict[str, str] = {}
        try:
            named = list(part.named_parameters(remove_duplicate=False))
        except (TypeError, NotImplementedError):  # a module API without the switch (MindSpore's
            # Cell tree): tied names then come once
            named = list(part.named_parameters())
        for name, param in named:
            logical = _logical_name(name)
            entries.setdefault(logical, (tuple(platform.shape(param)), platform.is_floating(param)))
            if id(param) in first:
                aliases[logical] = first[id(param)]
            else:
                first[id(param)] = logical
        return entries, list(first.values()), aliases

    def _fit(self, path: str, part: Any, loaded: Mapping[str, Any]) -> set[str]:
        """The keys of ``loaded`` (tensors as stored in the file) that fit ``part``."""
        platform = get_platform()
        described = {
            key: (tuple(platform.shape(t)), platform.is_floating(t))
            for key, t in loaded.items()
            if platform.is_tensor(t)
        }
        return self._fit_entries(path, part, described)

    def _fit_entries(self, path: str, part: Any, described: Mapping[str, Any]) -> set[str]:
        """The names of ``described`` (``{name: (shape, is_floating)}``, from the file's header or
        metadata, before any cast) that fit ``part`` (``weights_fit``)."""
        entries, required, aliases = self._model_entries(part)
        return check_weights_fit(
            path,
            entries,
            described,
            required=required,
            aliases=aliases,
            allow_partial=self.config.allow_partial_weights,
        )

    def _hf_load_dtype(self, path: str) -> Any:
        """Cast target: the model config's dtype, else ``dtype``/``torch_dtype`` of ``config.json``."""
        platform = get_platform()
        config = self._model_config()
        name = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
        if name is None:
            cfg_file = os.path.join(path, HF_CONFIG_FILE)
            if os.path.isfile(cfg_file):
                with open(cfg_file, encoding="utf-8") as fh:
                    hf_config = json.load(fh)
                name = hf_config.get("dtype") or hf_config.get("torch_dtype")
        if name is None:
            return None
        if platform.is_dtype(name):
            return name
        key = str(name).lower()
        return platform.dtype_from_name(key) if key in _HF_LOAD_DTYPES else None

    def _verify_in_checkpoint(self, paths: Sequence[str]) -> None:
        """Files about to be read as weights, checked against the manifest of the checkpoint folder
        they live in, if any (a ``step_<N>/hf_ckpt/`` export): size and sha256 before use."""
        verify_files_in_checkpoint(
            paths, field="model.weights_path", allow_unverified=self.config.allow_unverified
        )

    def _load_hf_weights(self, path: str) -> None:
        """Verified (a checkpoint's export: its manifest), described from the safetensors headers
        and checked against the model with every layer of the file kept (a larger model's export
        is named, not truncated), all before the adapter reads and casts."""
        platform = get_platform()
        self._verify_in_checkpoint(
            [
                f
                for f in (os.path.join(path, HF_INDEX_FILE), os.path.join(path, HF_CONFIG_FILE))
                if os.path.isfile(f)
            ]
        )
        shards = hf_folder_shards(path)
        self._verify_in_checkpoint(shards)
        for file in shards:  # a damaged file is named before anything reads it
            platform.check_safetensors(file)
        described = self.sd_adapter.map_hf_entries(hf_folder_entries(path))
        fits = [self._fit_entries(path, part, described) for part in self.model_parts]
        hf_state = self.sd_adapter.load_hf_state_dict(
            path, self._model_config(), dtype=self._hf_load_dtype(path)
        )
        for part, part_fits in zip(self.model_parts, fits, strict=True):
            valid = {key: hf_state[key] for key in part_fits if key in hf_state}
            platform.set_full_model_state_dict(part, valid, strict=False)
            logger.info_rank0("loaded %d weights from %s", len(valid), path)

    def _load_dcp_weights(self, path: str) -> None:
        platform = get_platform()
        if os.path.isfile(os.path.join(path, MANIFEST_FILE)):  # a step_<N> folder: check it first
            verify_manifest(path, (DCP_METADATA_FILE,))
        else:  # a DCP folder inside a checkpoint folder: that manifest vouches for its files
            self._verify_in_checkpoint(
                sorted(
                    os.path.join(path, n) for n in os.listdir(path) if os.path.isfile(os.path.join(path, n))
                )
            )
        meta = os.path.join(path, DCP_METADATA_FILE)
        try:
            stored = platform.dcp_entries(path)
        except platform.unsafe_pickle_error() as exc:
            raise UnsafeCheckpointError(meta, exc, problem="is refused") from None
        except Exception as exc:  # any other failure means an unreadable file
            raise CheckpointCorruptError(
                meta, f"unreadable DCP metadata ({type(exc).__name__}: {exc})"
            ) from exc
        states, merged = part_state_dicts(self.model_parts)
        entries: dict[str, Any] = {}
        required: list[str] = []
        aliases: dict[str, str] = {}
        for part in self.model_parts:
            part_entries, part_required, part_aliases = self._model_entries(part)
            entries.update(part_entries)
            required += part_required
            aliases.update(part_aliases)
        # The stored dtype class is checked here: the load copies into the model's tensors (a cast).
        check_weights_fit(
            path,
            entries,
            {key: entry for key, entry in stored.items() if entry is not None},
            required=required,
            aliases=aliases,
            allow_partial=self.config.allow_partial_weights,
        )
        target = {key: value for key, value in merged.items() if stored.get(key) is not None}
        try:
            platform.dcp_load(target, path)
        except platform.unsafe_pickle_error() as exc:
            raise UnsafeCheckpointError(meta, exc, problem="is refused") from None
        except lenient_errors() as exc:
            raise_if_damaged(path, exc)
            raise
        merged.update(target)
        for part, state in zip(self.model_parts, states, strict=True):
            part.load_state_dict({key: merged[key] for key in state})

    def _load_weights_file(self, path: str) -> None:
        platform = get_platform()
        self._verify_in_checkpoint([path])
        if path.endswith(".safetensors"):  # a damaged header is one line naming the file
            platform.check_safetensors(path)
        try:
            if path.endswith(".safetensors"):
                state = platform.load_safetensors(path)
            else:
                state = platform.load(path, weights_only=True)
        except CheckpointCorruptError:
            raise
        except Exception as exc:  # unreadable, crafted or foreign
            raise load_error(path, exc) from exc
        if not isinstance(state, dict):
            raise CheckpointCorruptError(
                path, f"expected a dict of tensors, got {type(state).__name__}", problem="is refused"
            )
        for part in self.model_parts:
            fits = self._fit(path, part, state)
            platform.set_full_model_state_dict(part, {key: state[key] for key in fits}, strict=False)
