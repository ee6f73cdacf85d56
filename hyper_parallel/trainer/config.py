"""Legacy YAML config schema and parser.

A YAML file plus ``--dotted.key=value`` overrides become nested plain dataclasses
(``LegacyTrainerArgs``) that ``LLMTrainer(args)`` reads as ``args.model``, ``args.data`` and
``args.train``. The schema defaults here are normative: the parity harness compares the new
component path against trainers built from them.

The classes are named ``Legacy*Args`` so that no name is shared with the new path's Configs
(``HyperTrainer.Config``, ``hyper_parallel.config.DebugConfig``...).

Strictness: a missing or empty config file, malformed YAML, a key given twice in one mapping,
malformed CLI tokens, a CLI override of a field that does not exist (with a closest match), bad
bool spellings, values of the wrong type or outside their range, unknown choices and forbidden
top-level keys are errors naming the field or file and what was expected. Unknown *nested* keys
of the YAML file only warn, with a closest match (kept lenient on purpose, spec D7).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import logging
import math
import os
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import yaml

from hyper_parallel.checkpointing.resume_settings import RESUME_MODES
from hyper_parallel.config._checks import FALSE_SPELLINGS, NULL_SPELLINGS, TRUE_SPELLINGS, parse_bool
from hyper_parallel.config.cross_checks import DECAY_STYLES
from hyper_parallel.config.runtime import COMM_BACKENDS
from hyper_parallel.config.training import DTYPE_NAMES, INIT_DEVICES

logger = logging.getLogger(__name__)

__all__ = [
    "LegacyAcceleratorArgs",
    "LegacyCheckpointArgs",
    "LegacyDataArgs",
    "LegacyDebugArgs",
    "LegacyEvalArgs",
    "LegacyGradientCheckpointingArgs",
    "LegacyTrainerArgs",
    "LegacyLoggingArgs",
    "LegacyMemoryMonitorArgs",
    "LegacyMixedPrecisionArgs",
    "LegacyModelArgs",
    "LegacyMoEMonitorArgs",
    "LegacyOptimizerArgs",
    "LegacyProfileArgs",
    "LegacyTensorBoardArgs",
    "LegacyTrainArgs",
    "LegacyWandbArgs",
    "DuplicateKeyError",
    "check_run_values",
    "config_to_dict",
    "load_yaml_text",
    "legacy_field_paths",
    "parse_args",
]


# --------------------------------------------------------------------------------------------------
# Value checks (run by the sections' __post_init__, so a bad YAML or CLI value fails at parse time)
# --------------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _bad(path: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"Invalid value for '{path}': expected {expected}, got {value!r}")


def _check_min_int(path: str, value: Any, minimum: int, expected: str | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _bad(path, value, expected or f"an int >= {minimum}")


def _check_min_number(path: str, value: Any, minimum: float, *, strict: bool = False) -> None:
    if not _is_number(value) or value < minimum or (strict and value == minimum):
        raise _bad(path, value, f"a finite number {'>' if strict else '>='} {minimum:g}")


def _check_choice(path: str, value: Any, choices: tuple[Any, ...], *, fold_case: bool = False) -> None:
    """``value`` is one of ``choices`` (strings compared case-insensitively when ``fold_case``)."""
    probe = value.lower() if fold_case and isinstance(value, str) else value
    if not any(probe == choice and type(probe) is type(choice) for choice in choices):
        raise _bad(path, value, "one of " + ", ".join(repr(c) for c in choices))


# The choices of the enum-like fields (what the legacy trainer reads; anything else used to be
# taken silently for a default: another decay style ran cosine, another optimizer ran AdamW).
OPTIMIZER_TYPES = ("adamw",)
LOSS_AGGREGATIONS = ("token_weighted", "rank_average")
# activation_checkpoint is a switch: these mean off (YAML reads a bare ``off`` as False) ...
ACTIVATION_CHECKPOINT_OFF = ("off", "none", "", False)
# ... and these on (whole layers are always checkpointed, whatever the spelling).
ACTIVATION_CHECKPOINT_ON = ("full", "on", "true", True)
# Where the model is built (``meta``, or a device type), the process-group backends (null: the
# device's own), the frameworks a legacy YAML may name (informational: the platform comes from
# HYPER_PARALLEL_PLATFORM), and what a resume does with changed settings. The first two and the
# last are shared with the new path's Configs (TrainingConfig, CommConfig, CheckpointManager).
TRAIN_BACKENDS = ("torch", "mindspore")


# --------------------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------------------


@dataclass
class LegacyModelArgs:
    """``model:``: which ModelSpec/flavour to build, where weights and tokenizer live, overrides."""

    name: str = "qwen3_5"
    flavor: str | None = None
    weights_path: str | None = None
    tokenizer_path: str | None = None
    trust_remote_code: bool = False
    freeze_modules: list[str] | None = None
    tp_plan: dict[str, Any] | None = None
    cp_modules: list[str] | None = None
    ep_modules: list[str] | None = None
    num_hidden_layers: int | None = None
    hidden_size: int | None = None
    intermediate_size: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    vocab_size: int | None = None
    max_position_embeddings: int | None = None
    config_overrides: dict[str, Any] | None = None


@dataclass
class LegacyDataArgs:
    """``data:``: dataset source, text fields, (unused) VL fields and dataloader knobs."""

    type: str = "dummy"
    train_path: str | None = None
    subset: str | None = None
    train_size: int | None = None
    streaming: bool = False
    max_seq_len: int = 2048
    text_key: str = "text"
    template: str = "empty"
    image_key: str = "image"
    messages_key: str = "messages"
    image_token_id: int = 151655
    vl_grid_t: int = 2
    vl_grid_h: int = 2
    vl_grid_w: int = 2
    num_workers: int = 0
    prefetch_factor: int | None = None
    pin_memory: bool = True
    shuffle: bool = True

    def __post_init__(self) -> None:
        _check_min_int("data.max_seq_len", self.max_seq_len, 1)
        _check_min_int("data.num_workers", self.num_workers, 0)
        if self.train_size is not None:
            _check_min_int("data.train_size", self.train_size, 1, "an int >= 1 or null (all rows)")


@dataclass
class LegacyAcceleratorArgs:
    """``train.accelerator``: parallel degrees (``dp`` is the legacy alias of ``dp_shard``)."""

    dp: int | None = None
    dp_replicate: int = 1
    dp_shard: int | None = None
    tp: int = 1
    cp: int = 1
    pp: int = 1
    ep: int = 1
    etp: int = 1
    zero_stage: int = 0
    reshard_after_forward: bool = True
    async_cp: bool = False
    ulysses_degree: int | None = None
    comm_fusion: bool = True


@dataclass
class LegacyMixedPrecisionArgs:
    """``train.mixed_precision``: FSDP2 MixedPrecisionPolicy dtypes, by name."""

    enabled: bool = False
    param_dtype: str = "bfloat16"
    reduce_dtype: str = "float32"
    output_dtype: str | None = None

    def __post_init__(self) -> None:
        for name in ("param_dtype", "reduce_dtype", "output_dtype"):
            value = getattr(self, name)
            if value is not None or name != "output_dtype":
                _check_choice(f"train.mixed_precision.{name}", value, DTYPE_NAMES, fold_case=True)


@dataclass
class LegacyGradientCheckpointingArgs:
    """``train.gradient_checkpointing``: activation checkpointing mode."""

    activation_checkpoint: str = "off"

    def __post_init__(self) -> None:
        value = self.activation_checkpoint
        if value is None:
            return
        _check_choice(
            "train.gradient_checkpointing.activation_checkpoint",
            value,
            ACTIVATION_CHECKPOINT_OFF + ACTIVATION_CHECKPOINT_ON,
            fold_case=True,
        )


@dataclass
class LegacyOptimizerArgs:
    """``train.optimizer``: AdamW and LR-schedule hyperparameters (no ``foreach``/``fused``)."""

    type: str = "adamw"
    lr: float = 1e-4
    lr_min: float = 1e-5
    lr_decay_style: str = "cosine"
    lr_warmup_ratio: float = 0.1
    loss_aggregation: str = "token_weighted"
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    bsz_warmup_ratio: float = 0.0
    eps: float = 1e-8
    betas: tuple[float, float] = (0.9, 0.999)

    def __post_init__(self) -> None:
        prefix = "train.optimizer"
        _check_choice(f"{prefix}.type", self.type, OPTIMIZER_TYPES, fold_case=True)
        _check_choice(f"{prefix}.loss_aggregation", self.loss_aggregation, LOSS_AGGREGATIONS)
        for name in ("lr", "lr_min", "weight_decay", "eps", "lr_warmup_ratio"):
            _check_min_number(f"{prefix}.{name}", getattr(self, name), 0.0)
        _check_min_number(f"{prefix}.max_grad_norm", self.max_grad_norm, 0.0, strict=True)
        betas = self.betas
        if (
            isinstance(betas, (str, bytes))
            or not isinstance(betas, (list, tuple))
            or len(betas) != 2
            or not all(_is_number(b) and 0.0 <= b < 1.0 for b in betas)
        ):
            raise _bad(f"{prefix}.betas", betas, "two numbers in [0, 1), such as [0.9, 0.999]")


@dataclass
class LegacyCheckpointArgs:
    """``train.checkpoint``: on by default (``save_steps=500``, HF export at train end).

    ``load_path`` is a ``step_<N>`` folder, or a run folder (an ``output_dir``): then its newest
    complete ``step_<N>`` (one with a matching ``manifest.json``) is resumed.
    """

    output_dir: str = "outputs"
    save_steps: int = 500
    save_hf_weights: bool = True
    load_path: str | None = None
    save_async: bool = False
    # A run without load_path into an output_dir holding complete checkpoints stops; True replaces them.
    overwrite: bool = False
    # Load a checkpoint folder without manifest.json (or a .partial.* one) without integrity check.
    allow_unverified: bool = False
    # Config differing from the checkpoint's settings on resume: "refuse" or "apply" (and list them).
    resume_config_changes: str = "refuse"
    # Initial weights that do not fit the model: load what fits, keep the rest at random init.
    allow_partial_weights: bool = False

    def __post_init__(self) -> None:
        _check_choice("train.checkpoint.resume_config_changes", self.resume_config_changes, RESUME_MODES)


@dataclass
class LegacyLoggingArgs:
    """``train.logging``: LoggingCallback cadence and throughput/MFU inputs."""

    report_to: str = "none"
    report_global_loss: bool = False
    log_steps: int = 10
    report_throughput: bool = True
    model_flops_per_token: int | None = None
    peak_tflops: float | None = None


@dataclass
class LegacyTensorBoardArgs:
    """``train.tensorboard``: real TensorBoard sink on rank 0."""

    enabled: bool = False
    output_dir: str = "tb_traces"
    log_steps: int = 1


@dataclass
class LegacyWandbArgs:
    """``train.wandb``: real W&B sink on rank 0."""

    enabled: bool = False
    project: str = "hyper-parallel"
    run_name: str | None = None
    log_steps: int = 1


@dataclass
class LegacyProfileArgs:
    """``train.profile``: torch profiler schedule (every rank)."""

    enabled: bool = False
    output_dir: str = "profiler_traces"
    wait_steps: int = 1
    warmup_steps: int = 1
    active_steps: int = 3


@dataclass
class LegacyMemoryMonitorArgs:
    """``train.memory_monitor``: periodic device-memory report."""

    enabled: bool = False
    log_steps: int = 50
    reset_peak_each_step: bool = False


@dataclass
class LegacyMoEMonitorArgs:
    """``train.moe_monitor``: MoE load-balance monitor."""

    enabled: bool = False
    lr: float = 1e-3
    num_recomputations: int = 1


@dataclass
class LegacyEvalArgs:
    """``train.eval``: evaluation cadence (0 disables)."""

    eval_steps: int = 0
    eval_dataset: str | None = None


@dataclass
class LegacyDebugArgs:
    """``train.debug``: determinism, NaN/Inf checks and manual GC cadence."""

    deterministic: bool = False
    deterministic_warn_only: bool = False
    check_nan_inf: bool = False
    gc_steps: int = 0


@dataclass
class LegacyTrainArgs:
    """``train:``: loop and runtime fields, then one sub-section per concern."""

    max_steps: int = 100
    num_train_epochs: int = 1
    global_batch_size: int = 8
    micro_batch_size: int = 1
    seed: int = 42
    backend: str = "torch"
    init_device: str = "meta"
    comm_backend: str | None = None
    local_rank: int = 0
    accelerator: LegacyAcceleratorArgs = field(default_factory=LegacyAcceleratorArgs)
    mixed_precision: LegacyMixedPrecisionArgs = field(default_factory=LegacyMixedPrecisionArgs)
    gradient_checkpointing: LegacyGradientCheckpointingArgs = field(
        default_factory=LegacyGradientCheckpointingArgs
    )
    optimizer: LegacyOptimizerArgs = field(default_factory=LegacyOptimizerArgs)
    checkpoint: LegacyCheckpointArgs = field(default_factory=LegacyCheckpointArgs)
    logging: LegacyLoggingArgs = field(default_factory=LegacyLoggingArgs)
    tensorboard: LegacyTensorBoardArgs = field(default_factory=LegacyTensorBoardArgs)
    wandb: LegacyWandbArgs = field(default_factory=LegacyWandbArgs)
    profile: LegacyProfileArgs = field(default_factory=LegacyProfileArgs)
    memory_monitor: LegacyMemoryMonitorArgs = field(default_factory=LegacyMemoryMonitorArgs)
    moe_monitor: LegacyMoEMonitorArgs = field(default_factory=LegacyMoEMonitorArgs)
    eval: LegacyEvalArgs = field(default_factory=LegacyEvalArgs)
    debug: LegacyDebugArgs = field(default_factory=LegacyDebugArgs)

    def __post_init__(self) -> None:
        _check_min_int(
            "train.max_steps",
            self.max_steps,
            0,
            "an int >= 1 (or 0: a preset_pt dataset then sets the number of steps)",
        )
        _check_min_int("train.num_train_epochs", self.num_train_epochs, 1)
        _check_choice("train.init_device", self.init_device, INIT_DEVICES)
        _check_choice("train.backend", self.backend, TRAIN_BACKENDS)
        if self.comm_backend is not None and self.comm_backend not in COMM_BACKENDS:
            raise _bad(
                "train.comm_backend",
                self.comm_backend,
                "one of " + ", ".join(map(repr, COMM_BACKENDS)) + " or null (the device's own)",
            )
        _check_min_int("train.global_batch_size", self.global_batch_size, 1)
        _check_min_int("train.micro_batch_size", self.micro_batch_size, 1)
        if self.global_batch_size % self.micro_batch_size:
            raise ValueError(
                f"Invalid value for 'train.global_batch_size': {self.global_batch_size} is not a multiple of "
                f"train.micro_batch_size={self.micro_batch_size}; expected the global batch to split into "
                "whole micro batches"
            )


@dataclass
class LegacyTrainerArgs:
    """Root of the legacy tree; ``train_steps`` mirrors ``train.max_steps`` at construction."""

    model: LegacyModelArgs = field(default_factory=LegacyModelArgs)
    data: LegacyDataArgs = field(default_factory=LegacyDataArgs)
    train: LegacyTrainArgs = field(default_factory=LegacyTrainArgs)
    train_steps: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.train_steps = self.train.max_steps


def check_run_values(args: LegacyTrainerArgs) -> None:
    """Refuse values the builders accept but that wreck a run; ``parse_args`` runs it.

    The builders work on any of these (the parity harness pins them there, so it builds args
    without this check), but none is what a user means: a sequence of one token leaves nothing to
    predict (NaN losses), another decay style runs cosine, a warmup longer than the run never
    reaches the peak, an ``lr_min`` above ``lr`` raises the LR where it should decay (with ``lr``
    0 the schedule stays at 0 whatever ``lr_min`` says).
    """
    _check_min_int("data.max_seq_len", args.data.max_seq_len, 2)
    opt = args.train.optimizer
    prefix = "train.optimizer"
    _check_choice(f"{prefix}.lr_decay_style", opt.lr_decay_style, DECAY_STYLES)
    if opt.lr_warmup_ratio > 1:
        raise _bad(
            f"{prefix}.lr_warmup_ratio", opt.lr_warmup_ratio, "a fraction of train.max_steps in [0, 1]"
        )
    if opt.lr > 0 and opt.lr_min > opt.lr:
        raise _bad(
            f"{prefix}.lr_min", opt.lr_min, f"a number <= {prefix}.lr={opt.lr!r} (the floor of the decay)"
        )


# --------------------------------------------------------------------------------------------------
# Type helpers
# --------------------------------------------------------------------------------------------------

_BOOL_HELP = f"one of {'/'.join(TRUE_SPELLINGS)} or {'/'.join(FALSE_SPELLINGS)} (case-insensitive)"
_CLI_FORM = "'--dotted.key=value' (for example --train.max_steps=10)"

# Forbidden top-level keys -> where they live now.
_TOP_LEVEL_HINTS: dict[str, str] = {
    "parallel": "train.accelerator",
    "optim": "train.optimizer",
    "memory": "train.gradient_checkpointing",
    "profiler": "train.profile",
    "runtime": "train (flatten init_device / backend / comm_backend)",
    "seed": "train.seed",
    **{
        name: f"train.{name}"
        for name in (
            "mixed_precision",
            "checkpoint",
            "logging",
            "tensorboard",
            "wandb",
            "memory_monitor",
            "moe_monitor",
            "eval",
            "debug",
        )
    },
}


@functools.cache
def _init_field_types(cls: type) -> dict[str, Any]:
    """Resolved annotations of the constructor fields of ``cls`` (computed fields excluded)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    """Return ``(X, True)`` for ``Optional[X]`` / ``X | None``, else ``(tp, False)``."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) < len(typing.get_args(tp)):
            return (args[0] if len(args) == 1 else Any), True
    return tp, False


def _container_kind(tp: Any) -> type | None:
    """``list``/``tuple``/``dict`` when ``tp`` is that container (bare or parametrised), else None."""
    base = typing.get_origin(tp) or tp
    return base if base in (list, tuple, dict) else None


def _is_section(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


class DuplicateKeyError(ValueError):
    """A YAML mapping gives one key twice (plain YAML keeps the last value without a word)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (merge keys ``<<`` aside)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                earlier = first_line.get(key)
                first_line[key] = line
            except TypeError:  # an unhashable key: SafeLoader reports it below
                continue
            if earlier is not None:
                raise DuplicateKeyError(
                    f"key {key!r} is given twice in one mapping (line {earlier} and line {line}); "
                    "expected each key once (YAML would silently keep only the last one)"
                )
        return super().construct_mapping(node, deep=deep)


def load_yaml_text(text: Any) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys (``DuplicateKeyError``)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: no code runs


def _parse_bool(key: str, raw: str) -> bool:
    """Accept the usual bool spellings; anything else is an error naming ``key``."""
    try:
        return parse_bool(raw)
    except ValueError:
        raise ValueError(f"Invalid bool for '{key}': {raw!r}; expected {_BOOL_HELP}") from None


def _is_null(raw: str) -> bool:
    return raw.strip().lower() in NULL_SPELLINGS


# --------------------------------------------------------------------------------------------------
# CLI overrides
# --------------------------------------------------------------------------------------------------


def _resolve_path_type(root_class: type, parts: list[str]) -> tuple[Any, bool] | None:
    """Walk the dataclass tree along ``parts``; None when the path is unknown or leaves the tree."""
    current: Any = root_class
    resolved: tuple[Any, bool] | None = None
    for part in parts:
        if not _is_section(current):
            return None
        field_types = _init_field_types(current)
        if part not in field_types:
            return None
        resolved = _unwrap_optional(field_types[part])
        current = resolved[0]
    return resolved


def _unknown_field(token: str, path: str, name: str, cls: type) -> ValueError:
    """The error for a CLI override of a field ``cls`` does not have, with the closest match."""
    known = list(_init_field_types(cls))
    match = difflib.get_close_matches(name, known, n=1)
    parent = path.rpartition(".")[0]
    hint = (
        f"did you mean '{parent + '.' if parent else ''}{match[0]}'?"
        if match
        else f"fields: {', '.join(known)}"
    )
    return ValueError(
        f"Unknown config key '{path}' in override {token!r} (not a field of {cls.__name__}); {hint}"
    )


def _check_override_path(token: str, root_class: type, parts: list[str], value: Any) -> None:
    """Every part names a field; past a free-form mapping field (``config_overrides``) anything goes.

    A mapping given for a section (``--train.optimizer={lr: 1}``) is checked key by key too.
    """
    if parts[0] not in _init_field_types(root_class):
        return  # a top-level key: _validate_top_level lists them all, with where they moved
    current: Any = root_class
    for depth, part in enumerate(parts):
        path = ".".join(parts[: depth + 1])
        if not _is_section(current):
            if _container_kind(current) is dict:
                return
            parent = ".".join(parts[:depth])
            raise ValueError(
                f"Unknown config key '{path}' in override {token!r}: '{parent}' is a value, not a section"
            )
        field_types = _init_field_types(current)
        if part not in field_types:
            raise _unknown_field(token, path, part, current)
        current = _unwrap_optional(field_types[part])[0]
    _check_section_keys(token, ".".join(parts), current, value)


def _check_section_keys(token: str, path: str, cls: Any, value: Any) -> None:
    if not (_is_section(cls) and isinstance(value, dict)):
        return
    field_types = _init_field_types(cls)
    for key, item in value.items():
        sub = f"{path}.{key}"
        if key not in field_types:
            raise _unknown_field(token, sub, str(key), cls)
        _check_section_keys(token, sub, _unwrap_optional(field_types[key])[0], item)


def _coerce_untyped(raw: str) -> Any:
    """Fallback for int/float/untyped targets: int, then float, then true/false, else the string."""
    for convert in (int, float):
        try:
            return convert(raw)
        except ValueError:
            pass
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    return raw


def _coerce_cli_value(key: str, raw: str, resolved: tuple[Any, bool] | None) -> Any:
    """Turn one CLI string into a value using the type of the field it targets."""
    if resolved is None:
        return _coerce_untyped(raw)
    tp, optional = resolved
    if optional and _is_null(raw):
        return None
    if tp is bool:
        return _parse_bool(key, raw)
    if tp is str:
        return raw
    if _container_kind(tp) is not None or _is_section(tp):
        try:
            return load_yaml_text(raw)
        except DuplicateKeyError as exc:
            raise ValueError(f"Invalid value for '{key}': {exc}") from None
        except yaml.YAMLError as exc:
            raise ValueError(
                f"Invalid value for '{key}': {raw!r} is not valid YAML; expected a YAML "
                f"{_type_name(_container_kind(tp) or dict)} such as [0.9, 0.95] or {{a: 1}}"
            ) from exc
    return _coerce_untyped(raw)


def _split_override(token: str) -> tuple[str, str]:
    """Split ``--a.b.c=value`` into ``("a.b.c", "value")``; anything else is an error."""
    key, sep, value = token[2:].partition("=") if token.startswith("--") else ("", "", "")
    parts = key.split(".")
    if not sep or not key or any(not p.strip() for p in parts):
        raise ValueError(f"Malformed command-line override {token!r}; expected the form {_CLI_FORM}")
    return key, value


def _looks_like_override(token: str) -> bool:
    return token.startswith("--") and "=" in token


def _parse_cli_overrides(tokens: list[str], root_class: type) -> dict[str, Any]:
    """Nest every ``--dotted.key=value`` token into a dict of type-coerced values."""
    overrides: dict[str, Any] = {}
    for token in tokens:
        if token.startswith(("--local-rank=", "--local_rank=")):
            continue
        key, raw = _split_override(token)
        parts = key.split(".")
        value = _coerce_cli_value(key, raw, _resolve_path_type(root_class, parts))
        _check_override_path(token, root_class, parts, value)
        node = overrides
        for depth, part in enumerate(parts[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                prefix = ".".join(parts[: depth + 1])
                raise ValueError(
                    f"Override {token!r} conflicts with an earlier non-mapping override of '{prefix}'"
                )
        node[parts[-1]] = value
    return overrides


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Dicts merge recursively; any other override value replaces the base value."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# --------------------------------------------------------------------------------------------------
# YAML file and top-level validation
# --------------------------------------------------------------------------------------------------


def _load_yaml(path: str) -> dict[str, Any]:
    """Read the config file; missing file, bad YAML and non-mapping content are errors."""
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"Config file not found: '{path}'")
    try:
        with file.open(encoding="utf-8") as handle:
            data = load_yaml_text(handle)
    except DuplicateKeyError as exc:
        raise ValueError(f"Config file '{path}': {exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"Config file '{path}' is not valid YAML: {exc}") from exc
    if data is None:
        raise ValueError(
            f"Config file '{path}' is empty (no settings, only blanks or comments); expected a mapping "
            "with model: / data: / train:"
        )
    if not isinstance(data, dict):
        raise ValueError(
            f"Config file '{path}' must contain a mapping at the top level "
            f"(model: / data: / train:), got {type(data).__name__}"
        )
    return data


def _validate_top_level(config: dict[str, Any], root_class: type) -> None:
    """Reject every top-level key the root does not declare, all in one error with hints."""
    allowed = list(_init_field_types(root_class))
    forbidden = [key for key in config if key not in allowed]
    if not forbidden:
        return
    lines = []
    for key in forbidden:
        hint = _TOP_LEVEL_HINTS.get(key) if isinstance(key, str) else None
        lines.append(f"  - '{key}': moved to '{hint}'" if hint else f"  - '{key}': not allowed")
    raise ValueError(
        f"Unsupported top-level config key(s); only {', '.join(repr(k) for k in allowed)} are allowed:\n"
        + "\n".join(lines)
    )


def _set_local_rank(config: dict[str, Any], root_class: type) -> None:
    """``train.local_rank`` always comes from env ``LOCAL_RANK`` (default 0)."""
    if "train" not in _init_field_types(root_class):
        return
    raw = os.environ.get("LOCAL_RANK", "0")
    try:
        local_rank = int(raw)
    except ValueError as exc:
        raise ValueError(f"Environment variable LOCAL_RANK={raw!r} is not an int") from exc
    train = config.get("train")
    if train is None:
        config["train"] = train = {}
    if isinstance(train, dict):
        train["local_rank"] = local_rank


# --------------------------------------------------------------------------------------------------
# Instantiation
# --------------------------------------------------------------------------------------------------


def _to_int(path: str, value: Any) -> int:
    """Ints pass; numeric strings and integral floats convert; anything else names the field."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number: Any = value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                number = float(value)
            except ValueError:
                number = None
    if isinstance(number, float) and number.is_integer():
        return int(number)
    raise ValueError(f"Invalid value for '{path}': expected int, got {value!r}")


def _to_float(path: str, value: Any) -> float:
    """Ints and floats pass as float; numeric strings (``1e-3``) convert; else an error."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError(f"Invalid value for '{path}': expected float, got {value!r}")


def _to_bool(path: str, value: Any) -> bool:
    """Bools pass; the CLI spellings (and 0/1) convert; anything else names the field."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _parse_bool(path, value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"Invalid value for '{path}': expected bool ({_BOOL_HELP}), got {value!r}")


def _convert_value(path: str, value: Any, annotation: Any) -> Any:
    """Check/convert one YAML or CLI value against its field annotation."""
    tp, optional = _unwrap_optional(annotation)
    if _is_section(tp):
        if isinstance(value, tp):
            return value
        if value is None or isinstance(value, dict):
            return _instantiate(tp, value or {}, path)
        raise ValueError(f"Invalid value for '{path}': expected a mapping ({tp.__name__}), got {value!r}")
    if value is None or (
        optional and isinstance(value, str) and tp in (int, float, bool) and _is_null(value)
    ):
        if optional or tp is Any:
            return None
        raise ValueError(f"Invalid value for '{path}': expected {_type_name(tp)}, got None")
    if tp is bool:
        return _to_bool(path, value)
    if tp is int:
        return _to_int(path, value)
    if tp is float:
        return _to_float(path, value)
    if tp is str:
        # A scalar is kept as given: YAML reads a bare ``off`` as False, and the legacy consumers
        # (e.g. the activation-checkpoint switch) accept that spelling. A list or a mapping is no
        # spelling of a string: refused here rather than met later as a crash in some builder.
        if isinstance(value, (list, tuple, dict)):
            raise ValueError(f"Invalid value for '{path}': expected a string, got {value!r}")
        return value
    kind = _container_kind(tp)
    if kind is dict and not isinstance(value, dict):
        raise ValueError(f"Invalid value for '{path}': expected a mapping, got {value!r}")
    if kind in (list, tuple) and not isinstance(value, (list, tuple)):
        raise ValueError(f"Invalid value for '{path}': expected a list, got {value!r}")
    return value


def _instantiate(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
    """Build ``cls`` from a nested dict; unknown keys warn with a closest match (lenient)."""
    field_types = _init_field_types(cls)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in field_types:
            _warn_unknown_key(path, str(key), cls, list(field_types))
            continue
        kwargs[key] = _convert_value(path, value, field_types[key])
    return cls(**kwargs)


def _warn_unknown_key(path: str, key: str, cls: type, known: list[str]) -> None:
    match = difflib.get_close_matches(key, known, n=1)
    suggestion = f"; did you mean '{match[0]}'?" if match else ""
    logger.warning("Ignoring unknown config key '%s' (not a field of %s)%s", path, cls.__name__, suggestion)


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def parse_args(
    root_class: type = LegacyTrainerArgs, argv: list[str] | None = None, *, run_checks: bool = True
) -> Any:
    """Parse ``[CONFIG.yaml] [--a.b.c=value ...]`` into ``root_class``.

    ``argv`` defaults to ``sys.argv[1:]``. CLI overrides win over the YAML file. ``run_checks``
    (a ``LegacyTrainerArgs`` root only) also refuses the values of ``check_run_values``; the parity
    harness turns it off to drive the builders on the whole range they accept.
    """
    if not _is_section(root_class):
        raise TypeError(f"root_class must be a dataclass, got {root_class!r}")
    parser = argparse.ArgumentParser(
        description="hyper_parallel legacy trainer: YAML config plus --dotted.key=value overrides",
        allow_abbrev=False,
    )
    parser.add_argument("config_file", nargs="?", default=None, help="path to the YAML config")
    tokens = list(sys.argv[1:] if argv is None else argv)
    # argparse files a token containing a space under positionals, so a quoted override such as
    # '--a.b=[1, 2]' would become the config file: route every '--key=value' token around it.
    overrides = [t for t in tokens if _looks_like_override(t)]
    known, extra = parser.parse_known_args([t for t in tokens if not _looks_like_override(t)])

    file_config = _load_yaml(known.config_file) if known.config_file is not None else {}
    config = _deep_merge(file_config, _parse_cli_overrides(overrides + extra, root_class))
    _validate_top_level(config, root_class)
    _set_local_rank(config, root_class)
    args = _instantiate(root_class, config)
    if run_checks and isinstance(args, LegacyTrainerArgs):
        check_run_values(args)
    return args


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """Nested plain dict of a config (tuples become lists) for W&B and other JSON-like sinks."""
    return _tuples_to_lists(dataclasses.asdict(cfg))


def _tuples_to_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _tuples_to_lists(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_tuples_to_lists(item) for item in value]
    return value


def legacy_field_paths(root_class: type = LegacyTrainerArgs) -> list[str]:
    """Every leaf dotted path of the schema, sorted; the legacy->new mapping is checked against it."""
    return sorted(_leaf_paths(root_class, ""))


def _leaf_paths(cls: type, prefix: str) -> list[str]:
    paths: list[str] = []
    for name, annotation in _init_field_types(cls).items():
        path = f"{prefix}{name}"
        tp, _ = _unwrap_optional(annotation)
        paths.extend(_leaf_paths(tp, f"{path}.") if _is_section(tp) else [path])
    return paths
