"""Legacy YAML ``args`` -> ``HyperTrainer.Config``: one field-by-field table, reviewed against the schema.

Every leaf of the legacy schema (``trainer.config.legacy_field_paths()``) is either in
``FIELD_MAP`` (copied, possibly transformed, into exactly one new Config field) or in
``UNMAPPED`` with the reason; ``DERIVED`` lists the legacy fields that a computed value reads
(the model spec, the tokenizer path, the shard degree). A test fails when the schema gains a field
that none of the three mentions, so every new legacy field needs a decision.

It lives with the trainer because it reads the legacy schema and writes component Configs:
``config/`` never imports ``trainer``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hyper_parallel.components.checkpoint import CheckpointManager
from hyper_parallel.components.dataloader import (
    DummyDataLoader,
    HuggingFaceTextDataLoader,
    PresetPtDataLoader,
)
from hyper_parallel.components.loss import CrossEntropyLoss
from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
from hyper_parallel.components.metrics import MetricsProcessor, TensorBoardConfig, WandbConfig
from hyper_parallel.components.optimizer import OptimizersContainer
from hyper_parallel.components.profiler import Profiler
from hyper_parallel.components.tokenizer import HuggingFaceTokenizer
from hyper_parallel.config import (
    ActivationCheckpointConfig,
    CommConfig,
    CompileConfig,
    ConfigManager,
    DebugConfig,
    LegacyFormat,
    ParallelismConfig,
    TrainingConfig,
)
from hyper_parallel.models.qwen3_5.parallelize import AC_OFF_VALUES
from hyper_parallel.trainer.hyper_trainer import HyperTrainer

__all__ = [
    "FIELD_MAP",
    "UNMAPPED",
    "DATA_TYPES",
    "dataloader_config",
    "DERIVED",
    "FieldRule",
    "config_manager",
    "legacy_to_trainer_config",
    "mapped_legacy_paths",
]


def _ac_mode(value: Any) -> str:
    """Legacy AC is a switch: any "on" value means full per-layer checkpointing."""
    return "none" if value in AC_OFF_VALUES else "full"


def _tuple(value: Any) -> tuple:
    return tuple(float(v) for v in value)


@dataclass(frozen=True)
class FieldRule:
    """Copy legacy ``source`` into the one new ``target`` path (``section.field``), via ``transform``.

    One target only: a legacy field that fed two new fields would be a setting in two places.
    """

    source: str
    target: str
    transform: Callable[[Any], Any] | None = None


def _rule(source: str, target: str, transform: Callable[[Any], Any] | None = None) -> FieldRule:
    return FieldRule(source, target, transform)


FIELD_MAP: tuple[FieldRule, ...] = (
    # ---- data -> dataloader (max_seq_len is the training loop's: training.seq_len)
    _rule("data.train_path", "dataloader.train_path"),
    _rule("data.subset", "dataloader.subset"),
    _rule("data.train_size", "dataloader.train_size"),
    _rule("data.streaming", "dataloader.streaming"),
    _rule("data.max_seq_len", "training.seq_len"),
    _rule("data.text_key", "dataloader.text_key"),
    _rule("data.template", "dataloader.template"),
    _rule("data.num_workers", "dataloader.num_workers"),
    _rule("data.prefetch_factor", "dataloader.prefetch_factor"),
    _rule("data.pin_memory", "dataloader.pin_memory"),
    _rule("data.shuffle", "dataloader.shuffle"),
    # ---- model -> tokenizer / training
    _rule("model.trust_remote_code", "tokenizer.trust_remote_code"),
    _rule("model.weights_path", "training.weights_path"),
    _rule("model.freeze_modules", "training.freeze_modules", transform=lambda v: list(v) if v else None),
    # ---- train loop
    _rule("train.max_steps", "training.steps"),
    _rule("train.num_train_epochs", "training.num_train_epochs"),
    _rule("train.global_batch_size", "training.global_batch_size"),
    _rule("train.micro_batch_size", "training.local_batch_size"),
    _rule("train.seed", "training.seed"),
    _rule("train.init_device", "training.init_device"),
    _rule("train.comm_backend", "comm.backend"),
    # ---- accelerator -> parallelism (dp_shard is DERIVED: it falls back to the legacy dp)
    _rule("train.accelerator.dp_replicate", "parallelism.data_parallel_replicate_degree"),
    _rule("train.accelerator.tp", "parallelism.tensor_parallel_degree"),
    _rule("train.accelerator.cp", "parallelism.context_parallel_degree"),
    _rule("train.accelerator.pp", "parallelism.pipeline_parallel_degree"),
    _rule("train.accelerator.ep", "parallelism.expert_parallel_degree"),
    _rule("train.accelerator.etp", "parallelism.expert_tensor_parallel_degree"),
    _rule("train.accelerator.ulysses_degree", "parallelism.ulysses_degree"),
    _rule("train.accelerator.reshard_after_forward", "parallelism.reshard_after_forward"),
    # ---- numerics
    _rule("train.mixed_precision.enabled", "training.enable_mixed_precision"),
    _rule("train.mixed_precision.param_dtype", "training.mixed_precision_param"),
    _rule("train.mixed_precision.reduce_dtype", "training.mixed_precision_reduce"),
    _rule("train.mixed_precision.output_dtype", "training.mixed_precision_output"),
    _rule(
        "train.gradient_checkpointing.activation_checkpoint", "activation_checkpoint.mode", transform=_ac_mode
    ),
    # ---- optimizer / LR schedule (warmup stays a ratio: W = ceil(T * ratio) with T known at build)
    _rule("train.optimizer.lr", "optimizer.lr"),
    _rule("train.optimizer.betas", "optimizer.betas", transform=_tuple),
    _rule("train.optimizer.eps", "optimizer.eps"),
    _rule("train.optimizer.weight_decay", "optimizer.weight_decay"),
    _rule("train.optimizer.loss_aggregation", "optimizer.loss_aggregation"),
    _rule("train.optimizer.max_grad_norm", "training.max_norm"),
    _rule("train.optimizer.lr_warmup_ratio", "lr_scheduler.lr_warmup_ratio"),
    _rule("train.optimizer.lr_decay_style", "lr_scheduler.decay_style"),
    _rule("train.optimizer.lr_min", "lr_scheduler.lr_min"),
    # ---- checkpoint
    _rule("train.checkpoint.output_dir", "checkpoint.output_dir"),
    _rule("train.checkpoint.save_steps", "checkpoint.save_steps"),
    _rule("train.checkpoint.save_async", "checkpoint.save_async"),
    _rule("train.checkpoint.save_hf_weights", "checkpoint.save_hf_weights"),
    _rule("train.checkpoint.load_path", "checkpoint.load_path"),
    _rule("train.checkpoint.overwrite", "checkpoint.overwrite"),
    _rule("train.checkpoint.allow_unverified", "checkpoint.allow_unverified"),
    _rule("train.checkpoint.resume_config_changes", "checkpoint.resume_config_changes"),
    _rule("train.checkpoint.allow_partial_weights", "checkpoint.allow_partial_weights"),
    # ---- metrics (logging + tensorboard + wandb) and profiler
    _rule("train.logging.report_to", "metrics.report_to"),
    _rule("train.logging.log_steps", "metrics.log_steps"),
    _rule("train.logging.report_throughput", "metrics.report_throughput"),
    _rule("train.logging.model_flops_per_token", "metrics.model_flops_per_token"),
    _rule("train.logging.peak_tflops", "metrics.peak_tflops"),
    _rule("train.tensorboard.enabled", "metrics.tensorboard.enabled"),
    _rule("train.tensorboard.output_dir", "metrics.tensorboard.output_dir"),
    _rule("train.tensorboard.log_steps", "metrics.tensorboard.log_steps"),
    _rule("train.wandb.enabled", "metrics.wandb.enabled"),
    _rule("train.wandb.project", "metrics.wandb.project"),
    _rule("train.wandb.run_name", "metrics.wandb.run_name"),
    _rule("train.wandb.log_steps", "metrics.wandb.log_steps"),
    _rule("train.profile.enabled", "profiler.enabled"),
    _rule("train.profile.output_dir", "profiler.output_dir"),
    _rule("train.profile.wait_steps", "profiler.wait_steps"),
    _rule("train.profile.warmup_steps", "profiler.warmup_steps"),
    _rule("train.profile.active_steps", "profiler.active_steps"),
    # ---- debug
    _rule("train.debug.deterministic", "debug.deterministic"),
    _rule("train.debug.deterministic_warn_only", "debug.deterministic_warn_only"),
    _rule("train.debug.check_nan_inf", "debug.check_nan_inf"),
    _rule("train.debug.gc_steps", "debug.gc_steps"),
)

# Legacy fields read by computed values (see ``legacy_to_trainer_config``).
DERIVED: dict[str, str] = {
    "model.name": "model_spec: the registered ModelSpec of that name",
    "model.flavor": "model_spec.model: flavour preset of the model config",
    "model.num_hidden_layers": "model_spec.model: universal architecture override",
    "model.hidden_size": "model_spec.model: universal architecture override",
    "model.intermediate_size": "model_spec.model: universal architecture override",
    "model.num_attention_heads": "model_spec.model: universal architecture override",
    "model.num_key_value_heads": "model_spec.model: universal architecture override",
    "model.vocab_size": "model_spec.model: universal architecture override",
    "model.max_position_embeddings": "model_spec.model: universal architecture override",
    "model.config_overrides": "model_spec.model: free-form overrides, applied last",
    "model.tokenizer_path": "tokenizer.path (tokenizer_path, else weights_path)",
    "data.type": "dataloader: the loader Config class (DATA_TYPES), and HuggingFaceTextDataLoader.Config.format",
    "train.accelerator.dp_shard": "parallelism.data_parallel_shard_degree (dp_shard, else dp, else 1)",
    "train.accelerator.dp": "parallelism.data_parallel_shard_degree (legacy name of dp_shard)",
}

# Legacy fields with no new counterpart, and why.
UNMAPPED: dict[str, str] = {
    "model.tp_plan": "informational in the legacy schema; tensor parallelism is not implemented",
    "model.cp_modules": "informational in the legacy schema; context parallelism is not implemented",
    "model.ep_modules": "informational in the legacy schema; expert parallelism is not implemented",
    "data.image_key": "vision-language field; the LLM path never reads it",
    "data.messages_key": "vision-language field; the LLM path never reads it",
    "data.image_token_id": "vision-language field; the LLM path never reads it",
    "data.vl_grid_t": "vision-language field; the LLM path never reads it",
    "data.vl_grid_h": "vision-language field; the LLM path never reads it",
    "data.vl_grid_w": "vision-language field; the LLM path never reads it",
    "train.backend": "informational: the platform comes from HYPER_PARALLEL_PLATFORM",
    "train.local_rank": "runtime value, always read from the LOCAL_RANK environment variable",
    "train.accelerator.zero_stage": "unused by the legacy trainer (FSDP2 always shards)",
    "train.accelerator.async_cp": "unused by the legacy trainer",
    "train.accelerator.comm_fusion": "accepted but without effect under FSDP2",
    "train.optimizer.type": "never read: the legacy optimizer is always AdamW",
    "train.optimizer.bsz_warmup_ratio": "never read by the legacy trainer",
    "train.logging.report_global_loss": "never read by the legacy trainer",
    "train.memory_monitor.enabled": "no memory-monitor component yet (the legacy callback is a CPU no-op)",
    "train.memory_monitor.log_steps": "no memory-monitor component yet",
    "train.memory_monitor.reset_peak_each_step": "no memory-monitor component yet",
    "train.moe_monitor.enabled": "the dense model has no MoE layers (the legacy callback stays inactive)",
    "train.moe_monitor.lr": "the dense model has no MoE layers",
    "train.moe_monitor.num_recomputations": "the dense model has no MoE layers",
    "train.eval.eval_steps": "evaluation is a stub in the legacy trainer (a warning only)",
    "train.eval.eval_dataset": "evaluation is a stub in the legacy trainer",
}


# The loader Configs a legacy ``data.type`` can select (the types ``HyperTrainer.Config.dataloader`` takes).
LoaderConfig = DummyDataLoader.Config | HuggingFaceTextDataLoader.Config | PresetPtDataLoader.Config

# Legacy ``data.type`` -> the loader Config it selects, with the fields the name itself sets.
DATA_TYPES: dict[str, tuple[type[LoaderConfig], dict[str, Any]]] = {
    "dummy": (DummyDataLoader.Config, {}),
    "hf_datasets": (HuggingFaceTextDataLoader.Config, {"format": "hf_datasets"}),
    "json_file": (HuggingFaceTextDataLoader.Config, {"format": "json_file"}),
    "preset_pt": (PresetPtDataLoader.Config, {}),
}


def dataloader_config(data_type: str, **fields: Any) -> LoaderConfig:
    """The loader Config for legacy ``data.type`` (the one place that string picks a class), with ``fields``."""
    try:
        config_cls, implied = DATA_TYPES[data_type]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown data.type {data_type!r}; expected one of {', '.join(DATA_TYPES)}"
        ) from None
    return config_cls(**implied, **fields)


def mapped_legacy_paths() -> set[str]:
    """Every legacy leaf path the mapping makes a decision about."""
    return {rule.source for rule in FIELD_MAP} | set(DERIVED) | set(UNMAPPED)


def _read(args: Any, path: str) -> Any:
    node = args
    for name in path.split("."):
        node = getattr(node, name)
    return node


def _put(tree: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for name in parents:
        tree = tree.setdefault(name, {})
    tree[leaf] = value


def _model_spec(args: Any):
    """The registered spec of ``model.name`` with the merged model config attached (v2 fields)."""
    from hyper_parallel.models.qwen3_5 import config_from_args, new_path_spec
    from hyper_parallel.trainer.utils.discovery import discover_model_spec

    discover_model_spec(args.model.name)  # registers it; an unknown name is refused there
    if args.model.name != "qwen3_5":
        raise NotImplementedError(f"model.name={args.model.name!r}: only qwen3_5 has a new-path mapping")
    return new_path_spec(args.model.flavor, config_from_args(args))


# The computed targets (``DERIVED``) whose value comes from one legacy field the user sets.
_DERIVED_RULES: tuple[FieldRule, ...] = (
    _rule("train.accelerator.dp_shard", "parallelism.data_parallel_shard_degree"),
    _rule("model.tokenizer_path", "tokenizer.path"),
)


def _named_source(section: str, message: str) -> str | None:
    """The legacy field mapped into ``section`` whose new field ``message`` names first."""
    best: tuple[int, str] | None = None
    for rule in (*FIELD_MAP, *_DERIVED_RULES):
        field = rule.target.removeprefix(f"{section}.")
        if field == rule.target or "." in field:  # another section, or one nested in this one
            continue
        found = re.search(rf"(?<!\w){re.escape(field)}(?!\w)", message)
        if found and (best is None or found.start() < best[0]):
            best = (found.start(), rule.source)
    return None if best is None else best[1]


def _section(section: str, build: Callable[[], Any]) -> Any:
    """``build()`` of one new Config; its refusal also names the legacy field the value came from."""
    try:
        return build()
    except ValueError as exc:
        message = " ".join(str(exc).split())
        source = _named_source(section, message)
        if source is None:
            raise
        raise ValueError(f"Invalid value for '{source}' (mapped to {section}): {message}") from exc


def legacy_to_trainer_config(args: Any):
    """Map a parsed legacy ``LegacyTrainerArgs`` onto a ``HyperTrainer.Config`` tree.

    A value the legacy schema takes but a new Config refuses is a ``ValueError`` naming the legacy
    field first (``Invalid value for 'train.accelerator.dp_replicate' (mapped to parallelism): ...``).
    """
    tree: dict[str, Any] = {}
    for rule in FIELD_MAP:
        value = _read(args, rule.source)
        if rule.transform is not None:
            value = rule.transform(value)
        _put(tree, rule.target, value)

    acc = args.train.accelerator
    dp_shard = acc.dp_shard if acc.dp_shard is not None else acc.dp
    _put(tree, "parallelism.data_parallel_shard_degree", 1 if dp_shard is None else dp_shard)
    _put(tree, "tokenizer.path", args.model.tokenizer_path or args.model.weights_path)

    metrics = tree["metrics"]
    metrics["tensorboard"] = _section(
        "metrics.tensorboard", lambda: TensorBoardConfig(**metrics["tensorboard"])
    )
    metrics["wandb"] = _section("metrics.wandb", lambda: WandbConfig(**metrics["wandb"]))
    return HyperTrainer.Config(
        model_spec=_model_spec(args),
        tokenizer=_section("tokenizer", lambda: HuggingFaceTokenizer.Config(**tree["tokenizer"])),
        dataloader=_section("dataloader", lambda: dataloader_config(args.data.type, **tree["dataloader"])),
        optimizer=_section("optimizer", lambda: OptimizersContainer.Config(**tree["optimizer"])),
        lr_scheduler=_section("lr_scheduler", lambda: LRSchedulersContainer.Config(**tree["lr_scheduler"])),
        loss=CrossEntropyLoss.Config(),
        checkpoint=_section("checkpoint", lambda: CheckpointManager.Config(**tree["checkpoint"])),
        metrics=_section("metrics", lambda: MetricsProcessor.Config(**metrics)),
        profiler=_section("profiler", lambda: Profiler.Config(**tree["profiler"])),
        training=_section("training", lambda: TrainingConfig(**tree["training"])),
        parallelism=_section("parallelism", lambda: ParallelismConfig(**tree["parallelism"])),
        activation_checkpoint=_section(
            "activation_checkpoint", lambda: ActivationCheckpointConfig(**tree["activation_checkpoint"])
        ),
        compile=CompileConfig(),
        comm=_section("comm", lambda: CommConfig(**tree["comm"])),
        debug=_section("debug", lambda: DebugConfig(**tree["debug"])),
    )


def _parse_legacy_yaml(tokens: list[str]) -> Any:
    from hyper_parallel.trainer.config import LegacyTrainerArgs, parse_args

    return parse_args(LegacyTrainerArgs, tokens)


def config_manager(prog: str = "python -m hyper_parallel.train") -> ConfigManager:
    """The command line of the new path: recipes, or a legacy YAML parsed by the legacy schema and
    mapped by this table, into ``HyperTrainer.Config``."""
    return ConfigManager(
        root=HyperTrainer.Config,
        legacy=LegacyFormat(parse=_parse_legacy_yaml, to_root=legacy_to_trainer_config),
        prog=prog,
    )
