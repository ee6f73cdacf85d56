"""Nothing changes silently on resume: the run settings a checkpoint was trained with.

``optimizer.load_state_dict`` restores the checkpoint's hyperparameters over the configured ones
(torch copies every param-group key), and an LR schedule, a frozen set, a batch or a sequence
length that differ from the checkpoint's change the run without a word. Both trainers therefore
record :func:`run_settings` in the step's ``manifest.json`` (``"settings"``; the other checkpoint
files keep their layout) and, before the first resumed step, compare them with the config
(:func:`check_resume`): a difference is refused with one line listing every differing field, or,
with ``resume_config_changes: apply``, listed and applied (:func:`apply_optimizer_settings` after
the optimizer and scheduler states were loaded). A changed ``max_steps`` is one of those fields:
extending a run is a deliberate change (``apply``), since it reshapes the LR schedule of the steps
already trained toward the old end. Resuming at or past ``max_steps`` is an error.

The micro-batch size is not recorded: with the same global batch the samples of a step stay the
same. Pure Python: the trainers pass in param groups, names and numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "RESUME_MODES",
    "ResumeConfigError",
    "ResumePastEndError",
    "apply_optimizer_settings",
    "check_resume",
    "optimizer_settings",
    "run_settings",
]

logger = logging.getLogger(__name__)

RESUME_MODES = ("refuse", "apply")

# Param-group keys that change what a step computes (implementation switches such as foreach or
# fused are left out: they change no result the resume promises).
_GROUP_KEYS = (
    "lr",
    "betas",
    "eps",
    "weight_decay",
    "amsgrad",
    "maximize",
    "momentum",
    "dampening",
    "nesterov",
    "decoupled_weight_decay",
)


class ResumeConfigError(ValueError):
    """The config differs from the settings the checkpoint was trained with (refused)."""


class ResumePastEndError(ValueError):
    """The checkpoint is at or past ``max_steps``: there is nothing left to train."""


def _plain(value: Any) -> Any:
    """A JSON value: tuples to lists, tensors/numpy scalars to Python numbers."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError, RuntimeError):
            pass
    return repr(value)


def optimizer_settings(param_groups: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The hyperparameters of each param group; ``lr`` is the configured one (``initial_lr``, set
    by the scheduler), not the scheduled value of the current step."""
    out = []
    for group in param_groups:
        entry = {key: _plain(group[key]) for key in _GROUP_KEYS if key in group and key != "lr"}
        lr = group.get("initial_lr", group.get("lr"))
        if lr is not None:
            entry["lr"] = _plain(lr)
        entry["num_params"] = len(group.get("params", ()))
        out.append(entry)
    return out


def run_settings(
    *,
    param_groups: Iterable[Mapping[str, Any]] | None,
    trainable: Iterable[str],
    scheduler: Mapping[str, Any] | None = None,
    **scalars: Any,
) -> dict[str, Any]:
    """What :func:`check_resume` compares: optimizer groups, trainable names, scheduler fields and
    ``scalars`` (``global_batch_size``, ``seq_len``, ``max_steps``; None values are left out)."""
    settings: dict[str, Any] = {"trainable": sorted(trainable)}
    if param_groups is not None:
        settings["optimizer"] = optimizer_settings(param_groups)
    if scheduler:
        settings["lr_scheduler"] = {k: _plain(v) for k, v in scheduler.items() if v is not None}
    for key, value in scalars.items():
        if value is not None:
            settings[key] = _plain(value)
    return settings


def _differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``field: <checkpoint> in the checkpoint, <config> in the config`` for each differing field
    both sides record."""
    out = []
    saved_groups, current_groups = saved.get("optimizer"), current.get("optimizer")
    if isinstance(saved_groups, list) and isinstance(current_groups, list):
        if len(saved_groups) != len(current_groups):
            out.append(
                f"optimizer param groups: {len(saved_groups)} in the checkpoint, {len(current_groups)} "
                "in the config"
            )
        for index, (old, new) in enumerate(zip(saved_groups, current_groups, strict=False)):
            for key in sorted(set(old) & set(new)):
                if key == "num_params":
                    continue  # the trainable set below names the parameters
                if old[key] != new[key]:
                    out.append(f"optimizer.param_groups[{index}].{key}: {old[key]!r} -> {new[key]!r}")
    old_sched, new_sched = saved.get("lr_scheduler"), current.get("lr_scheduler")
    if isinstance(old_sched, dict) and isinstance(new_sched, dict):
        for key in sorted(set(old_sched) & set(new_sched)):
            if old_sched[key] != new_sched[key]:
                out.append(f"lr_scheduler.{key}: {old_sched[key]!r} -> {new_sched[key]!r}")
    old_train, new_train = saved.get("trainable"), current.get("trainable")
    if isinstance(old_train, list) and isinstance(new_train, list) and old_train != new_train:
        frozen = sorted(set(old_train) - set(new_train))
        thawed = sorted(set(new_train) - set(old_train))
        parts = []
        if frozen:
            parts.append(f"{len(frozen)} now frozen (first: {', '.join(frozen[:3])})")
        if thawed:
            parts.append(f"{len(thawed)} now trainable (first: {', '.join(thawed[:3])})")
        out.append(f"trainable parameters: {'; '.join(parts)}")
    for key in ("global_batch_size", "seq_len", "max_steps"):
        if key in saved and key in current and saved[key] != current[key]:
            out.append(f"{key}: {saved[key]!r} -> {current[key]!r}")
    return out


def check_resume(
    saved: Mapping[str, Any] | None,
    current: Mapping[str, Any],
    *,
    folder: str,
    step: int,
    max_steps: int | None,
    mode: str,
    field: str,
) -> list[str]:
    """Before the first resumed step: the differences between the checkpoint and the config.

    ``mode="refuse"``: any difference is a :class:`ResumeConfigError` listing all of them;
    ``"apply"``: they are logged and returned (the caller applies the config's optimizer values
    with :func:`apply_optimizer_settings`). ``step >= max_steps`` is a :class:`ResumePastEndError`.
    ``saved`` is None for a checkpoint written before settings were recorded (nothing to compare;
    one warning).
    """
    if max_steps is not None and step >= max_steps:
        raise ResumePastEndError(
            f"checkpoint {folder} is at step {step}, at or past max_steps={max_steps}: there is nothing "
            f"left to train; to train further raise max_steps and set {field}=apply"
        )
    if saved is None:
        logger.warning(
            f"Checkpoint {folder} records no run settings (written before they were recorded): the "
            "config's optimizer, schedule, batch and frozen set are not compared with it"
        )
        diffs: list[str] = []
    else:
        diffs = _differences(saved, current)
    if diffs and mode != "apply":
        raise ResumeConfigError(
            f"checkpoint {folder} was trained with other settings (checkpoint -> config): "
            f"{'; '.join(diffs)}; resume with the checkpoint's settings, or set {field}=apply to "
            "train on with the config's"
        )
    if diffs:
        logger.warning(f"Resuming {folder} with the config's settings ({field}=apply): {'; '.join(diffs)}")
    return diffs


def capture_groups(param_groups: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The configured hyperparameters of each group (before a load overwrites them)."""
    return [
        {key: group[key] for key in (*_GROUP_KEYS, "initial_lr") if key in group} for group in param_groups
    ]


def _schedulers(scheduler: Any) -> list[Any]:
    if scheduler is None:
        return []
    inner = getattr(scheduler, "schedulers", None)
    return list(inner) if isinstance(inner, (list, tuple)) else [scheduler]


def apply_optimizer_settings(
    param_groups: Sequence[dict[str, Any]], configured: Sequence[Mapping[str, Any]], scheduler: Any
) -> None:
    """Put the configured hyperparameters back after ``load_state_dict`` restored the checkpoint's.

    The base lr goes to ``initial_lr`` and the scheduler's ``base_lrs``; the lr of the current
    step is then recomputed from the (configured) schedule at the checkpoint's step.
    """
    for group, config in zip(param_groups, configured, strict=False):
        for key, value in config.items():
            if key != "lr":
                group[key] = value
        base = config.get("initial_lr", config.get("lr"))
        if base is not None:
            group["initial_lr"] = base
            if not _schedulers(scheduler):
                group["lr"] = base
    for sched in _schedulers(scheduler):
        groups = sched.optimizer.param_groups
        sched.base_lrs = [group.get("initial_lr", group["lr"]) for group in groups]
        lambdas = getattr(sched, "lr_lambdas", None)
        if lambdas:
            lrs = [base * fn(sched.last_epoch) for base, fn in zip(sched.base_lrs, lambdas, strict=False)]
            for group, lr in zip(groups, lrs, strict=False):
                group["lr"] = lr
            sched._last_lr = lrs
