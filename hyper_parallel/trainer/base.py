"""BaseTrainer: the legacy procedural trainer (``args`` from YAML, ``_build_*`` steps).

This file is the reference behaviour (every formula, order and default): the new component path
is compared against it bit for bit, so it changes only on purpose.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from hyper_parallel.platform import GroupInfo, get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.platform.torch_platform import TRAINING_DTYPES
from hyper_parallel.trainer import init_helpers
from hyper_parallel.trainer.init_helpers import TrainerState
from hyper_parallel.trainer.parallel_dims import ParallelDims
from hyper_parallel.trainer.utils.loss import count_loss_token, mean_global_loss

if TYPE_CHECKING:
    from torch.utils.data.distributed import DistributedSampler
    from transformers import PreTrainedTokenizerBase

logger = get_logger(__name__)

# Substrings that put a parameter in the no-decay group (matched on the lower-cased name).
NO_DECAY_KEYWORDS = ("bias", "layernorm", "norm", "rmsnorm")


def _get(obj, name: str, default=None):
    value = getattr(obj, name, default) if obj is not None else default
    return default if value is None and default is not None else value


def _move_to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, dict):
        return {k: _move_to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_move_to_device(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_move_to_device(v, device) for v in obj)
    return obj


def _full_tensor(t):
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def _load_errors() -> tuple[type[BaseException], ...]:
    """Any Exception, and DCP's CheckpointException (a BaseException)."""
    from torch.distributed.checkpoint.api import CheckpointException

    return (Exception, CheckpointException)


def _files_in(folder: str) -> list[str]:
    """The files directly in ``folder``, sorted."""
    return sorted(
        os.path.join(folder, n) for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n))
    )


def _logical_name(name: str) -> str:
    return name.replace("._checkpoint_wrapped_module", "")


class BaseTrainer:
    """Builds everything procedurally from ``args``; ``LLMTrainer`` drives the build order."""

    def __init__(self, args) -> None:
        from hyper_parallel.models.spec import get_spec

        platform = get_platform()
        if getattr(platform, "name", None) != "torch":
            raise RuntimeError(
                f"the legacy trainer needs the torch platform, got {getattr(platform, 'name', platform)!r}; "
                "set HYPER_PARALLEL_PLATFORM=torch"
            )
        self.args = args
        self.spec = get_spec(args.model.name)
        self.state = TrainerState(max_steps=getattr(args.train, "max_steps", 0))
        self._last_global_tokens: int | None = None
        # The model and the optimizer are None until their build step; every later step and the
        # train loop read them as built (LLMTrainer drives the order), hence the non-Optional types.
        self.model: torch.nn.Module = None  # type: ignore[assignment]  # built by _build_model
        self.optimizer: torch.optim.Optimizer = None  # type: ignore[assignment]  # built by _build_optimizer
        self.lr_scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
        self.tokenizer: PreTrainedTokenizerBase | None = None
        self.processor: Any = None
        self.data_transform: Callable[..., Any] | None = None
        # A torch Dataset from the registry or an HF ``datasets.Dataset`` (untyped): map-style, sized.
        self.train_dataset: Any = None
        self.collate_fn: Callable[..., dict[str, torch.Tensor]] | None = None
        self.sampler: DistributedSampler[Any] | None = None
        self.train_dataloader: Any = None  # torchdata's StatefulDataLoader (no type information)
        self._grad_accum = 1
        self._dp_group_info: GroupInfo | None = None
        self.user_callbacks: list = []

    # ------------------------------------------------------------------ 1. setup
    def _setup(self) -> None:
        """Process group, device, ParallelDims and mesh, the trainer DP group, seeds, determinism."""
        train = self.args.train
        debug = getattr(train, "debug", None)
        dist = init_helpers.setup_distributed(
            comm_backend=getattr(train, "comm_backend", None),
            local_rank=getattr(train, "local_rank", 0),
            make_parallel_dims=lambda world_size: ParallelDims.from_config(
                train.accelerator, world_size=world_size
            ),
            seed=getattr(train, "seed", 42),
            deterministic=bool(debug is not None and getattr(debug, "deterministic", False)),
            deterministic_warn_only=bool(getattr(debug, "deterministic_warn_only", False)),
        )
        self.device = dist.device
        self.parallel_dims = dist.parallel_dims
        self.mesh = dist.mesh
        self._dp_group_info = dist.dp_group_info
        platform = get_platform()
        logger.info_rank0(
            "rank %d / world size %d, mesh dims %s",
            platform.get_rank(),
            platform.get_world_size(),
            self.mesh.mesh_dim_names,
        )
        logger.info_rank0(
            "data.type=%s model.name=%s model.num_hidden_layers=%s train.init_device=%s max_steps=%d "
            "global_batch_size=%s",
            _get(self.args.data, "type", "dummy"),
            self.args.model.name,
            getattr(self.args.model, "num_hidden_layers", None),
            getattr(train, "init_device", "meta"),
            self.state.max_steps,
            getattr(train, "global_batch_size", 8),
        )

    # -------------------------------------------------------------- 2-3. model
    def _build_model(self) -> None:
        # On meta, or on a real device with the constructors' RNG draws undone: the weights are
        # initialised after parallelize either way (_materialize_and_init_shards), to the same bits.
        build = self.spec.build_model_fn
        assert build is not None, "legacy specs all set build_model_fn"
        self.model = init_helpers.build_model(
            lambda: build(self.args),
            init_device=getattr(self.args.train, "init_device", "meta"),
            field="train.init_device",
        )
        self.parallel_dims.validate_against_model(
            self.model, seq_len=_get(self.args.data, "max_seq_len", 2048)
        )

    def _freeze_model(self) -> None:
        patterns = getattr(self.args.model, "freeze_modules", None) or []
        if not patterns:
            return
        frozen = 0
        for name, param in self.model.named_parameters():
            if any(p in name for p in patterns):
                param.requires_grad_(False)
                frozen += 1
        logger.info_rank0("froze %d parameters matching %s", frozen, patterns)

    # ------------------------------------------------------------- 4-7. data
    def _build_model_assets(self) -> None:
        self.tokenizer = None
        self.processor = None

    def _build_data_transform(self) -> None:
        self.data_transform = None

    def _build_dataset(self) -> None:
        """Base datasets: ``dummy`` and a raw ``hf_datasets`` load (LLMTrainer has the full registry)."""
        data_type = _get(self.args.data, "type", "dummy")
        if data_type == "dummy":
            from hyper_parallel.data.registry import get_dataset_builder

            self.train_dataset = get_dataset_builder("dummy")(self)
        elif data_type == "hf_datasets":
            from datasets import load_dataset

            ds = load_dataset(self.args.data.train_path, split="train")
            if self.data_transform is not None:
                ds = ds.map(self.data_transform)
            self.train_dataset = ds
        else:
            raise ValueError(
                f"Unknown data.type '{data_type}' for BaseTrainer. Supported: dummy, hf_datasets"
            )

    def _build_collate_fn(self) -> None:
        from hyper_parallel.data.collate import pad_collate

        self.collate_fn = pad_collate

    # ------------------------------------------------------------ 8. dataloader
    def _build_dataloader(self) -> None:
        from torch.utils.data.distributed import DistributedSampler
        from torchdata.stateful_dataloader import StatefulDataLoader

        train, data = self.args.train, self.args.data
        platform = get_platform()
        dp_size = self.parallel_dims.dp_size
        non_dp = self.parallel_dims.non_dp_size
        rank = platform.get_rank()
        dp_rank = rank // non_dp if non_dp > 1 else rank
        micro_batch_size = _get(train, "micro_batch_size", 1)
        global_batch_size = _get(train, "global_batch_size", micro_batch_size)
        if global_batch_size % (micro_batch_size * dp_size):
            raise ValueError(
                f"Invalid value for 'train.global_batch_size': {global_batch_size} is not a multiple of "
                f"train.micro_batch_size * dp size = {micro_batch_size} * {dp_size}; expected the global "
                "batch to split into whole micro batches on every data-parallel rank"
            )

        self.sampler = DistributedSampler(
            self.train_dataset,
            num_replicas=dp_size,
            rank=dp_rank,
            shuffle=_get(data, "shuffle", True),
            seed=_get(train, "seed", 0),
            drop_last=True,
        )
        num_workers = _get(data, "num_workers", 0)
        kwargs: dict[str, Any] = {}
        prefetch = getattr(data, "prefetch_factor", None)
        if num_workers > 0 and prefetch is not None:
            kwargs["prefetch_factor"] = prefetch
        self.train_dataloader = StatefulDataLoader(
            self.train_dataset,
            batch_size=micro_batch_size,
            sampler=self.sampler,
            collate_fn=self.collate_fn,
            num_workers=num_workers,
            pin_memory=bool(_get(data, "pin_memory", True)) and platform.device_type() != "cpu",
            drop_last=True,
            **kwargs,
        )
        self._grad_accum = max(global_batch_size // (micro_batch_size * dp_size), 1)
        logger.info_rank0(
            "micro batch size %d, grad_accum %d, dataset length %d",
            micro_batch_size,
            self._grad_accum,
            len(self.train_dataset),
        )

    def _make_micro_batch_iterator(self):
        """Group micro-batches into lists of ``_grad_accum``; the trailing partial list is yielded too.

        The loader iterator is created here, eagerly, without consuming the global RNG: creating it
        draws a worker base seed, which would otherwise put a resumed run one draw away from an
        uninterrupted one (the RNG is restored in ``on_train_begin``, before this call) **(ours)**.
        """
        platform = get_platform()
        rng_state = platform.get_rng_state()
        loader_iter = iter(self.train_dataloader)
        platform.set_rng_state(rng_state)
        return self._group_micro_batches(loader_iter)

    def _group_micro_batches(self, loader_iter):
        group: list = []
        for batch in loader_iter:
            group.append(batch)
            if len(group) == self._grad_accum:
                yield group
                group = []
        if group:
            yield group

    # -------------------------------------------------------- 9. parallelize
    def _build_parallelized_model(self) -> None:
        if self.spec.parallelize_fn is None:
            raise ValueError(f"model '{self.args.model.name}' has no parallelize_fn in its ModelSpec")
        self.model = self.spec.parallelize_fn(self.model, self.mesh, self.args)
        self._post_parallelize()

    def _post_parallelize(self) -> None:
        mp = getattr(self.args.train, "mixed_precision", None)
        init_helpers.post_parallelize(
            self.model,
            mixed_precision=bool(mp is not None and getattr(mp, "enabled", False)),
            materialize=self._materialize_and_init_shards,
        )
        weights_path = getattr(self.args.model, "weights_path", None)
        if weights_path:
            self._load_weights(weights_path)

    def _materialize_and_init_shards(self) -> None:
        """Allocate the model (meta or not) and initialise each rank's local shard from the default generator."""
        model = self.model
        model.to_empty(device=get_platform().device_type())
        with torch.no_grad():
            for _name, param in model.named_parameters():
                local = param.to_local() if hasattr(param, "to_local") else param
                if local.is_meta:
                    continue
                if local.dim() >= 2:
                    torch.nn.init.kaiming_uniform_(local)
                else:
                    torch.nn.init.zeros_(local)
            for buffer in model.buffers():
                local = buffer.to_local() if hasattr(buffer, "to_local") else buffer
                local.zero_()
        for module in model.modules():
            reset_inv_freq = getattr(module, "reset_inv_freq", None)
            if reset_inv_freq is not None:
                reset_inv_freq()
        tie_weights = getattr(model, "tie_weights", None)
        if tie_weights is not None:
            tie_weights()

    def _load_weights(self, path: str) -> None:
        """Load initial weights from an HF folder, a DCP folder or a single file; never fall back.

        Whole or not at all: a file that misses a parameter, carries an unknown tensor or one of
        another shape or dtype class is an error before anything is copied
        (``checkpointing.weights_fit``; ``train.checkpoint.allow_partial_weights`` loads what
        fits). The legacy loader; HyperTrainer loads through ``CheckpointManager.load_weights``.
        """
        from hyper_parallel.checkpointing import WeightsLoadError

        if not os.path.exists(path):
            raise WeightsLoadError(path, "model.weights_path does not exist")
        try:
            if os.path.isdir(path):
                has_hf = os.path.isfile(os.path.join(path, "model.safetensors.index.json")) or os.path.isfile(
                    os.path.join(path, "model.safetensors")
                )
                if has_hf and self.spec.state_dict_adapter is not None:
                    self._load_hf_safetensors(path)
                elif os.path.isfile(os.path.join(path, ".metadata")):
                    self._load_dcp(path)
                else:
                    raise ValueError(
                        "model.weights_path directory must hold model.safetensors(.index.json) with a "
                        "state-dict adapter, or a DCP checkpoint (.metadata)"
                    )
            else:
                self._load_single_file(path)
        except _load_errors() as exc:
            # DCP's CheckpointException derives from BaseException: name it so it is wrapped too.
            raise WeightsLoadError(path, " ".join(str(exc).split()) or type(exc).__name__) from exc

    def _checkpoint_flag(self, name: str) -> bool:
        """``train.checkpoint.<name>`` (False when the config has no such section)."""
        checkpoint_cfg = getattr(getattr(getattr(self, "args", None), "train", None), "checkpoint", None)
        return bool(getattr(checkpoint_cfg, name, False))

    def _verify_in_checkpoint(self, paths: list[str]) -> None:
        """Files about to be read as weights, checked against the manifest of the checkpoint folder
        they live in, if any (a ``step_<N>/hf_ckpt/`` export): size and sha256 before use."""
        from hyper_parallel.checkpointing import verify_files_in_checkpoint

        verify_files_in_checkpoint(
            paths, field="model.weights_path", allow_unverified=self._checkpoint_flag("allow_unverified")
        )

    def _weights_fit(self, path: str, loaded: dict[str, Any]) -> set[str]:
        """The keys of ``loaded`` (tensors, as stored in the file) that fit the model: an error
        unless all do, or ``train.checkpoint.allow_partial_weights``."""
        described = {
            key: (tuple(v.shape), v.is_floating_point())
            for key, v in loaded.items()
            if isinstance(v, torch.Tensor)
        }
        return self._weights_fit_entries(path, described)

    def _weights_fit_entries(
        self, path: str, described: Mapping[str, tuple[tuple[int, ...], bool | None]]
    ) -> set[str]:
        """The names of ``described`` (``{name: (shape, is_floating)}``, from the file's header or
        metadata, before any cast) that fit the model (``checkpointing.check_weights_fit``)."""
        from hyper_parallel.checkpointing import check_weights_fit

        entries = {
            _logical_name(n): (tuple(t.shape), t.is_floating_point())
            for n, t in self.model.state_dict().items()
        }
        first: dict[int, str] = {}
        aliases: dict[str, str] = {}
        for name, param in self.model.named_parameters(remove_duplicate=False):
            logical = _logical_name(name)
            entries.setdefault(logical, (tuple(param.shape), param.is_floating_point()))
            if id(param) in first:
                aliases[logical] = first[id(param)]
            else:
                first[id(param)] = logical
        return check_weights_fit(
            path,
            entries,
            described,
            required=list(first.values()),
            aliases=aliases,
            allow_partial=self._checkpoint_flag("allow_partial_weights"),
        )

    def _load_dtype(self, path: str):
        config = self.model.config
        name = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
        if name is None:
            cfg_file = os.path.join(path, "config.json")
            if os.path.isfile(cfg_file):
                with open(cfg_file, encoding="utf-8") as fh:
                    hf_cfg = json.load(fh)
                name = hf_cfg.get("dtype") or hf_cfg.get("torch_dtype")
        if isinstance(name, torch.dtype):
            return name
        return TRAINING_DTYPES.get(str(name).lower()) if name is not None else None

    def _load_hf_safetensors(self, path: str) -> None:
        """The folder's files are verified (a checkpoint's export: its manifest) and described from
        their headers; the description is checked against the model (every layer of the file
        kept: a larger model's export is named, not truncated) before the adapter reads and casts."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        from hyper_parallel.checkpointing.weights_fit import (
            HF_CONFIG_FILE,
            HF_INDEX_FILE,
            hf_folder_entries,
            hf_folder_shards,
        )

        self._verify_in_checkpoint(
            [
                f
                for f in (os.path.join(path, HF_INDEX_FILE), os.path.join(path, HF_CONFIG_FILE))
                if os.path.isfile(f)
            ]
        )
        shards = hf_folder_shards(path)
        self._verify_in_checkpoint(shards)
        for shard in shards:  # a damaged header is named before anything reads it
            get_platform().check_safetensors(shard)
        adapter_cls = self.spec.state_dict_adapter
        assert adapter_cls is not None, "_load_weights reads HF folders only with a state-dict adapter"
        adapter = adapter_cls() if isinstance(adapter_cls, type) else adapter_cls
        fits = self._weights_fit_entries(path, adapter.map_hf_entries(hf_folder_entries(path)))
        hf_sd = adapter.load_hf_state_dict(path, self.model.config, dtype=self._load_dtype(path))
        valid = {key: hf_sd[key] for key in fits if key in hf_sd}
        set_model_state_dict(self.model, valid, options=StateDictOptions(full_state_dict=True, strict=False))
        logger.info_rank0("loaded %d weights from %s", len(valid), path)

    def _load_dcp(self, path: str) -> None:
        # A step_<N> folder's manifest is checked first; the platform's restricted reader then
        # makes sure that a crafted .metadata runs no code.
        from hyper_parallel.checkpointing import MANIFEST_FILE, verify_manifest
        from hyper_parallel.checkpointing.reader import lenient_errors, raise_if_damaged

        if os.path.isfile(os.path.join(path, MANIFEST_FILE)):
            verify_manifest(path, (".metadata",))
        else:  # a DCP folder inside a checkpoint folder: that manifest vouches for its files
            self._verify_in_checkpoint(_files_in(path))
        platform = get_platform()
        try:
            stored = platform.dcp_entries(path)
        except platform.unsafe_pickle_error():
            raise
        except Exception as exc:  # any other failure means an unreadable file
            from hyper_parallel.checkpointing import CheckpointCorruptError

            raise CheckpointCorruptError(
                os.path.join(path, ".metadata"), f"unreadable DCP metadata ({type(exc).__name__}: {exc})"
            ) from exc
        # The stored dtype class is checked here: the load copies into the model's tensors (a cast).
        fits = self._weights_fit_entries(
            path, {_logical_name(key): entry for key, entry in stored.items() if entry is not None}
        )
        state_dict = self.model.state_dict()
        target = {key: value for key, value in state_dict.items() if _logical_name(key) in fits}
        try:
            get_platform().dcp_load(target, path)
        except lenient_errors() as exc:  # a shard missing or damaged: one line naming the file
            raise_if_damaged(path, exc)
            raise
        state_dict.update(target)
        self.model.load_state_dict(state_dict)

    def _load_single_file(self, path: str) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        from hyper_parallel.checkpointing import CheckpointCorruptError, load_error

        self._verify_in_checkpoint([path])
        if path.endswith(".safetensors"):  # a damaged header is one line naming the file
            get_platform().check_safetensors(path)
        try:
            if path.endswith(".safetensors"):
                from safetensors.torch import load_file

                state_dict = load_file(path)
            else:
                state_dict = torch.load(path, map_location="cpu", weights_only=True)
        except CheckpointCorruptError:
            raise
        except Exception as exc:  # unreadable, crafted or foreign
            raise load_error(path, exc) from exc
        if not isinstance(state_dict, dict):
            raise CheckpointCorruptError(
                path, f"expected a dict of tensors, got {type(state_dict).__name__}", problem="is refused"
            )
        fits = self._weights_fit(path, state_dict)
        set_model_state_dict(
            self.model,
            {key: state_dict[key] for key in fits},
            options=StateDictOptions(full_state_dict=True, strict=False),
        )

    # ------------------------------------------------------- 10-11. optimizer
    def _build_optimizer(self) -> None:
        opt = self.args.train.optimizer
        lr = _get(opt, "lr", 1e-4)
        weight_decay = _get(opt, "weight_decay", 0.01)
        eps = _get(opt, "eps", 1e-8)
        betas = _get(opt, "betas", (0.9, 0.999))
        decay, no_decay, seen = [], [], set()  # type: ignore[var-annotated]  # lists of Parameters
        for name, param in self.model.named_parameters():
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            lname = name.lower()
            (no_decay if any(k in lname for k in NO_DECAY_KEYWORDS) else decay).append(param)
        groups = [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        self.optimizer = torch.optim.AdamW(
            groups,
            lr=lr,
            betas=tuple(float(b) for b in betas),  # type: ignore[arg-type]  # two betas
            eps=eps,
            foreach=None,
        )
        logger.info_rank0(
            "AdamW lr=%s weight_decay=%s: %d decay / %d no-decay params",
            lr,
            weight_decay,
            len(decay),
            len(no_decay),
        )

    def _build_lr_scheduler(self) -> None:
        opt = self.args.train.optimizer
        lr = _get(opt, "lr", 1e-4)
        total = self.state.max_steps
        warmup = math.ceil(total * _get(opt, "lr_warmup_ratio", 0.0))
        decay_style = _get(opt, "lr_decay_style", "cosine")
        lr_min = _get(opt, "lr_min", 0.0)
        min_ratio = lr_min / lr if lr > 0 else 0.0

        def lr_lambda(step: int) -> float:
            if step < warmup:
                return step / max(1, warmup)
            if decay_style == "constant":
                return 1.0
            progress = (step - warmup) / max(1, total - warmup)
            return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_lambda)

    # ----------------------------------------------------- 12. training context
    def _build_training_context(self) -> None:
        self.model_fwd_context = contextlib.nullcontext()
        self.model_bwd_context = contextlib.nullcontext()
        self.grad_scaler = None
        mp = getattr(self.args.train, "mixed_precision", None)
        if mp is not None and getattr(mp, "enabled", False):
            logger.info_rank0("mixed precision comes from the FSDP2 MixedPrecisionPolicy (no autocast)")

    # ----------------------------------------------------------- 13. callbacks
    _GENERIC_ORDER = (
        "logging_callback",
        "eval_callback",
        "profiler_callback",
        "wandb_callback",
        "tensorboard_callback",
        "progress_callback",
        "checkpoint_callback",
        "hf_export_callback",
        "moe_monitor_callback",
        "gradient_health_callback",
        "memory_monitor_callback",
        "gc_callback",
    )
    _HOOK_ORDERS = {
        "on_train_begin": (
            "memory_monitor_callback",
            "moe_monitor_callback",
            "profiler_callback",
            "wandb_callback",
            "tensorboard_callback",
            "progress_callback",
            "checkpoint_callback",
        ),
        "on_train_end": (
            "checkpoint_callback",
            "hf_export_callback",
            "progress_callback",
            "tensorboard_callback",
            "wandb_callback",
            "profiler_callback",
            "gc_callback",  # (ours) re-enables automatic GC that GCCallback turned off
        ),
        "on_step_begin": ("logging_callback",),
        "on_substep_end": ("moe_monitor_callback",),
        "on_pre_optimizer_step": (
            "gradient_health_callback",
            "logging_callback",
            "wandb_callback",
            "tensorboard_callback",
        ),
    }

    def _init_callbacks(self) -> None:
        from hyper_parallel.trainer import callbacks as cb

        self.logging_callback = cb.LoggingCallback(self)
        self.checkpoint_callback = cb.CheckpointCallback(self)
        self.hf_export_callback = cb.SafetensorsExportCallback(self)
        self.eval_callback = cb.EvalCallback(self)
        self.profiler_callback = cb.ProfilerCallback(self)
        self.wandb_callback = cb.WandbCallback(self)
        self.tensorboard_callback = cb.TensorBoardCallback(self)
        self.progress_callback = cb.ProgressCallback(self)
        self.moe_monitor_callback = cb.MoEMonitorCallback(self)
        self.gradient_health_callback = cb.GradientHealthCallback(self)
        self.memory_monitor_callback = cb.MemoryMonitorCallback(self)
        self.gc_callback = cb.GCCallback(self)
        self.user_callbacks = []

    def add_callback(self, callback) -> None:
        self.user_callbacks.append(callback)

    def _dispatch(self, hook: str, **kwargs) -> None:
        names = self._HOOK_ORDERS.get(hook, self._GENERIC_ORDER)
        for name in names:
            callback = getattr(self, name, None)
            if callback is not None:
                getattr(callback, hook)(self.state, **kwargs)
        init_helpers.dispatch_callbacks(self.user_callbacks, hook, self.state, **kwargs)

    def on_init_end(self) -> None:
        self._dispatch("on_init_end")

    def dispatch_log_event(self, metrics) -> None:
        self._dispatch("on_log", metrics=metrics)

    def dispatch_save_event(self, checkpoint_dir) -> None:
        self._dispatch("on_save", checkpoint_dir=checkpoint_dir)

    def dispatch_load_event(self, checkpoint_dir) -> None:
        self._dispatch("on_load", checkpoint_dir=checkpoint_dir)

    def dispatch_evaluate_event(self, metrics=None) -> None:
        self._dispatch("on_evaluate", metrics=metrics)

    # ------------------------------------------------------------ train step
    def forward_backward_step(self, micro_batch, mb_tokens: int, global_tokens: int, num_micro: int = 1):
        micro_batch = _move_to_device(micro_batch, self.device)
        with self.model_fwd_context:
            out = self.model(**micro_batch, use_cache=False)
            loss = out["loss"] if isinstance(out, dict) else out.loss
            loss = _full_tensor(loss)
        raw = loss.detach()
        aggregation = _get(self.args.train.optimizer, "loss_aggregation", "token_weighted")
        if aggregation == "rank_average":
            scaled = loss / num_micro if num_micro > 1 else loss
        else:
            scaled = mean_global_loss(loss, mb_tokens, global_tokens, self.parallel_dims.dp_size)
        with self.model_bwd_context:
            scaled.backward()
        return raw, mb_tokens

    def train_step(self, it) -> dict[str, float]:
        micro_batches = next(it)
        self.state.global_step += 1
        n = len(micro_batches)

        counts = [count_loss_token(mb) for mb in micro_batches]
        global_tokens = init_helpers.global_tokens(counts, self._dp_group_info, self.device)
        self._last_global_tokens = global_tokens

        loss_sum = arith_sum = 0.0
        tok_local = 0
        for i, mb in enumerate(micro_batches):
            init_helpers.fsdp_micro_batch_flags(self.model, i, n)
            raw, tok = self.forward_backward_step(mb, counts[i], global_tokens, num_micro=n)
            value = raw.item()
            loss_sum += value * tok
            arith_sum += value
            tok_local += tok
            self._dispatch("on_substep_end")

        clip = self.spec.clip_grad_fn or torch.nn.utils.clip_grad_norm_
        grad_norm = _full_tensor(clip(self.model.parameters(), self.args.train.optimizer.max_grad_norm))
        self._dispatch("on_pre_optimizer_step", grad_norm=grad_norm.item())

        self.optimizer.step()
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        self.optimizer.zero_grad()

        aggregation = _get(self.args.train.optimizer, "loss_aggregation", "token_weighted")
        loss = init_helpers.reported_loss(
            aggregation,
            loss_sum=loss_sum,
            arith_sum=arith_sum,
            num_micro=n,
            tok_local=tok_local,
            global_tokens=global_tokens,
            dp_group_info=self._dp_group_info,
            device=self.device,
        )
        return {"loss": loss, "grad_norm": grad_norm.item()}

    # ------------------------------------------------------------------ train
    def train(self) -> None:
        train = self.args.train
        epochs = _get(train, "num_train_epochs", 1)
        logger.info_rank0("training for max_steps=%d, num_train_epochs=%d", self.state.max_steps, epochs)
        debug = getattr(train, "debug", None)
        loss_watch = init_helpers.LossWatch(
            check_nan_inf=bool(getattr(debug, "check_nan_inf", False)), field="train.debug.check_nan_inf"
        )
        self._dispatch("on_train_begin")
        if self.state.global_step > 0:
            logger.info_rank0("Resuming training from step %d", self.state.global_step)
        try:
            for epoch in range(epochs):
                if self.state.global_step >= self.state.max_steps:
                    break
                self.state.epoch = epoch
                if self.sampler is not None:
                    self.sampler.set_epoch(epoch)
                self._dispatch("on_epoch_begin")
                it = self._make_micro_batch_iterator()
                while self.state.global_step < self.state.max_steps:
                    self._dispatch("on_step_begin")
                    try:
                        metrics = self.train_step(it)
                    except StopIteration:
                        logger.info_rank0("Epoch %d: dataloader exhausted", epoch)
                        break
                    # A non-finite loss stops the run here (check_nan_inf) or is warned about once.
                    loss_watch.check(metrics["loss"], self.state.global_step)
                    self._dispatch("on_step_end", loss=metrics["loss"], grad_norm=metrics["grad_norm"])
                self._dispatch("on_epoch_end")
        except BaseException:
            # A run that stops mid-loop (check_nan_inf, a failed save, Ctrl-C) ends its progress bar
            # first, so that the error line the entry point prints is a line of its own.
            progress = getattr(self, "progress_callback", None)
            if progress is not None:
                progress.on_train_end(self.state)
            raise
        self._dispatch("on_train_end")
        get_platform().destroy_process_group()
        logger.info_rank0("Training completed")


__all__ = ["BaseTrainer", "TrainerState", "NO_DECAY_KEYWORDS"]
