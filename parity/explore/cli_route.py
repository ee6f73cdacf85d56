"""The command-line ways into ``HyperTrainer``: a recipe plus flags, or a legacy YAML plus overrides.

``cli_config``: ``--module qwen3_5 --config debug`` plus dotted flags; ``yaml_config``: the
command line's YAML path (``examples/debug/train.yaml --a.b=v``), both through ConfigManager.

``cli_argv(overrides)`` turns the legacy ``--a.b=v`` overrides of a point into the recipe command
line, flag by flag, from a table of its own (``FLAGS``), written from the schema's documentation,
not from ``legacy_mapping.FIELD_MAP``: a slip in the mapping, in the ``debug`` recipe or in the
ConfigManager/tyro parsing then shows as a difference against the legacy trainer instead of being
copied into both routes. Only the overrides that change a value of ``examples/debug/train.yaml``
become flags: every other value comes from the recipe's own defaults, which must agree with the
debug YAML (and the legacy schema's defaults) for the runs to match. ``spelling`` writes bools and
floats in one of the forms the command line accepts (``SPELLINGS``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import yaml

__all__ = ["FLAGS", "SPELLINGS", "cli_argv", "cli_config", "respell", "yaml_config"]

RECIPE = ("--module", "qwen3_5", "--config", "debug")


def _same(value: str) -> list[str]:
    return [value]


def _list(value: str) -> list[str]:
    items = yaml.safe_load(value)
    return [str(v) for v in items] if items else ["None"]


def _ac(value: str) -> list[str]:
    return ["none" if value.strip().lower() in ("off", "none", "false", "") else "full"]


# legacy data.type -> the dataloader subcommand (the loader's Config class) and what it implies
DATALOADER: dict[str, list[str]] = {
    "dummy": ["dataloader:dummy"],
    "hf_datasets": ["dataloader:hf_text"],
    "json_file": ["dataloader:hf_text", "--dataloader.format", "json_file"],
    "preset_pt": ["dataloader:preset_pt"],
}

# legacy dotted key -> (flag of the recipe command line, value -> flag arguments)
FLAGS: dict[str, tuple[str, Callable[[str], list[str]]]] = {
    "data.train_path": ("--dataloader.train_path", _same),
    "data.train_size": ("--dataloader.train_size", _same),
    "data.max_seq_len": ("--training.seq_len", _same),
    "data.text_key": ("--dataloader.text_key", _same),
    "data.template": ("--dataloader.template", _same),
    "data.shuffle": ("--dataloader.shuffle", _same),
    "model.tokenizer_path": ("--tokenizer.path", _same),
    "model.weights_path": ("--training.weights_path", _same),
    "model.freeze_modules": ("--training.freeze_modules", _list),
    "train.max_steps": ("--training.steps", _same),
    "train.num_train_epochs": ("--training.num_train_epochs", _same),
    "train.global_batch_size": ("--training.global_batch_size", _same),
    "train.micro_batch_size": ("--training.local_batch_size", _same),
    "train.seed": ("--training.seed", _same),
    "train.accelerator.dp_shard": ("--parallelism.data_parallel_shard_degree", _same),
    "train.accelerator.reshard_after_forward": ("--parallelism.reshard_after_forward", _same),
    "train.mixed_precision.enabled": ("--training.enable_mixed_precision", _same),
    "train.mixed_precision.reduce_dtype": ("--training.mixed_precision_reduce", _same),
    "train.gradient_checkpointing.activation_checkpoint": ("--activation_checkpoint.mode", _ac),
    "train.optimizer.lr": ("--optimizer.lr", _same),
    "train.optimizer.betas": ("--optimizer.betas", _list),
    "train.optimizer.eps": ("--optimizer.eps", _same),
    "train.optimizer.weight_decay": ("--optimizer.weight_decay", _same),
    "train.optimizer.loss_aggregation": ("--optimizer.loss_aggregation", _same),
    "train.optimizer.max_grad_norm": ("--training.max_norm", _same),
    "train.optimizer.lr_min": ("--lr_scheduler.lr_min", _same),
    "train.optimizer.lr_decay_style": ("--lr_scheduler.decay_style", _same),
    "train.optimizer.lr_warmup_ratio": ("--lr_scheduler.lr_warmup_ratio", _same),
    "train.checkpoint.output_dir": ("--checkpoint.output_dir", _same),
    "train.checkpoint.save_steps": ("--checkpoint.save_steps", _same),
    "train.checkpoint.save_async": ("--checkpoint.save_async", _same),
    "train.checkpoint.save_hf_weights": ("--checkpoint.save_hf_weights", _same),
    "train.checkpoint.load_path": ("--checkpoint.load_path", _same),
    "train.logging.log_steps": ("--metrics.log_steps", _same),
    "train.tensorboard.enabled": ("--metrics.tensorboard.enabled", _same),
    "train.tensorboard.output_dir": ("--metrics.tensorboard.output_dir", _same),
    "train.tensorboard.log_steps": ("--metrics.tensorboard.log_steps", _same),
    "train.profile.enabled": ("--profiler.enabled", _same),
    "train.profile.output_dir": ("--profiler.output_dir", _same),
    "train.profile.wait_steps": ("--profiler.wait_steps", _same),
    "train.profile.warmup_steps": ("--profiler.warmup_steps", _same),
    "train.profile.active_steps": ("--profiler.active_steps", _same),
}


# spelling -> (true, false, float -> text); every form parses to the same value
SPELLINGS: dict[str, tuple[str, str, Callable[[float], str]]] = {
    "lower": ("true", "false", repr),
    "title": ("True", "False", lambda v: _shortest_exponent(v)),
    "digit": ("1", "0", lambda v: f"{v:.17e}"),
}


def _shortest_exponent(value: float) -> str:
    """``1e-03`` for 0.001: the shortest exponent form that reads back as ``value``."""
    for digits in range(18):
        text = f"{value:.{digits}e}"
        if float(text) == value:
            return text
    return f"{value:.17e}"


def respell(arg: str, spelling: str) -> str:
    """``arg`` (one flag value as the legacy override wrote it: ``true``, ``0.001``) in ``spelling``."""
    true, false, number = SPELLINGS[spelling]
    if arg in ("true", "false"):
        return true if arg == "true" else false
    try:
        int(arg)
        return arg
    except ValueError:
        pass
    try:
        return number(float(arg))
    except ValueError:
        return arg  # a path or a word


def _legacy_defaults_dropped(values: dict[str, str]) -> dict[str, str]:
    """``values`` without the keys whose value the debug YAML (or the legacy schema) already has."""
    from parity.legacy_driver import legacy_args

    if not values:
        return values
    given = legacy_args(*(f"--{k}={v}" for k, v in values.items()))
    default = legacy_args()

    def get(args: Any, key: str) -> Any:
        for part in key.split("."):
            args = getattr(args, part, None)
        return args

    return {k: v for k, v in values.items() if get(given, k) != get(default, k)}


def _resolve_dp(values: dict[str, str]) -> None:
    """The legacy ``dp`` alias folded into ``dp_shard`` (dp_shard wins; else dp; else 1)."""
    dp = values.pop("train.accelerator.dp", None)
    shard = values.get("train.accelerator.dp_shard")
    if shard is not None and yaml.safe_load(shard) is None:
        values["train.accelerator.dp_shard"] = "1" if dp is None or yaml.safe_load(dp) is None else dp
    elif shard is None and dp is not None and yaml.safe_load(dp) is not None:
        values["train.accelerator.dp_shard"] = dp  # the debug YAML's dp_shard is -1: never None there


def _split(token: str) -> tuple[str, str]:
    key, sep, value = token[2:].partition("=")
    if not token.startswith("--") or not sep:
        raise ValueError(f"override {token!r}: expected --dotted.key=value")
    return key, value


def cli_argv(
    overrides: Sequence[str], *, warmup_as_steps: bool = False, spelling: str = "lower"
) -> list[str]:
    """The recipe command line of legacy ``overrides``; ``warmup_as_steps`` gives the warmup as
    ``--lr_scheduler.warmup_steps ceil(max_steps * ratio)`` (the horizon must be max_steps)."""
    if spelling not in SPELLINGS:
        raise ValueError(f"spelling={spelling!r}: expected one of {sorted(SPELLINGS)}")
    given = dict(_split(t) for t in overrides)
    unknown = sorted(k for k in given if k not in FLAGS and k not in ("data.type", "train.accelerator.dp"))
    if unknown:
        raise ValueError(
            f"no recipe flag for legacy key(s) {unknown}; add them to parity.explore.cli_route.FLAGS"
        )
    values = _legacy_defaults_dropped(given)
    _resolve_dp(values)
    # The legacy tokenizer falls back to the weights folder; the recipe's tokenizer path is its own flag.
    if "model.weights_path" in values and "model.tokenizer_path" not in values and "data.type" in values:
        if values["data.type"] not in ("dummy", "preset_pt"):
            values["model.tokenizer_path"] = values["model.weights_path"]
    if warmup_as_steps:
        values.pop("train.optimizer.lr_warmup_ratio", None)
        ratio = float(given.get("train.optimizer.lr_warmup_ratio", "0.1"))
        total = int(given.get("train.max_steps", "20"))
        argv = [
            "--lr_scheduler.warmup_steps",
            str(math.ceil(total * ratio)),
            "--lr_scheduler.lr_warmup_ratio",
            "0",
        ]
    else:
        argv = []
    if "data.type" in values:  # a subcommand: it comes before the flags of its Config
        argv = [*DATALOADER[values.pop("data.type")], *argv]
    for key, value in values.items():
        flag, convert = FLAGS[key]
        argv += [flag, *(respell(arg, spelling) for arg in convert(value))]
    return [*RECIPE, *argv]


def cli_config(overrides: Sequence[str], *, warmup_as_steps: bool = False, spelling: str = "lower") -> Any:
    """``HyperTrainer.Config`` parsed by ``python -m hyper_parallel.train``'s ConfigManager."""
    from hyper_parallel.trainer.legacy_mapping import config_manager

    return _parse(config_manager(), cli_argv(overrides, warmup_as_steps=warmup_as_steps, spelling=spelling))


def _parse(manager: Any, argv: list[str]) -> Any:
    """``manager.parse_args(argv)``; tyro's usage exit becomes an error of the case, not of the run."""
    try:
        return manager.parse_args(argv)
    except SystemExit as exc:
        raise ValueError(
            f"the command line refused {' '.join(argv)!r} (exit {exc.code}); see its message above"
        ) from exc  # the product's frames stay in the traceback (a mutant's refusal is the product's)


def yaml_config(overrides: Sequence[str]) -> Any:
    """``HyperTrainer.Config`` of ``python -m hyper_parallel.train examples/debug/train.yaml --a.b=v ...``."""
    from hyper_parallel.trainer.legacy_mapping import config_manager
    from parity.legacy_driver import DEBUG_YAML

    return _parse(config_manager(), [str(DEBUG_YAML), *overrides])
