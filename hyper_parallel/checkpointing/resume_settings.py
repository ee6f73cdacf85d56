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

Every setting the config resolves is compared, set or defaulted: each param group's
hyperparameters (torch fills in the defaults), the trainable set, ``global_batch_size``,
``seq_len``, ``max_steps``, and the LR schedule as it runs (:func:`resolved_schedule`: warmup
steps, decay style, ``lr_max`` and ``lr_min``, however the config spells them, so a schedule
field that was left at its default when saving is compared too). A field the config resolves but
the checkpoint does not record (an older manifest, or one without ``"settings"`` at all) cannot be
compared: the resume is refused naming it, unless ``resume_config_changes: apply`` (train on with
the config's values) or ``allow_unverified`` (then one warning names what was not compared).

The micro-batch size is not recorded: with the same global batch the samples of a step stay the
same. Pure Python: the trainers pass in param groups, names and numbers.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "RESUME_MODES",
    "ResumeConfigError",
    "ResumePastEndError",
    "apply_optimizer_settings",
    "check_resume",
    "optimizer_settings",
    "resolved_schedule",
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


_SCALARS = ("global_batch_size", "seq_len", "max_steps")


def resolved_schedule(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The LR schedule that ``settings`` run, field by field, as both trainers build it.

    From the recorded ``lr_scheduler`` fields (``None`` values were left out when recording, so a
    missing field is its default), ``max_steps`` and the first param group's ``lr``:
    ``warmup_steps`` (``warmup_steps``, else ``ceil(max_steps * lr_warmup_ratio)``),
    ``decay_style`` (``"constant"``, anything else runs cosine), ``lr_min`` and ``lr_max`` (the lr
    that ``lr_min`` is relative to: ``lr_max``, else the optimizer lr). Without ``max_steps`` a
    non-zero ratio cannot become steps: ``lr_warmup_ratio`` is given instead, so that a changed
    ratio is still seen. No ``lr_scheduler`` at all gives ``{}``.
    ``lr_max_explicit`` says whether ``lr_max`` was set (else it repeats the group lr).
    """
    sched = settings.get("lr_scheduler")
    if not isinstance(sched, Mapping):
        return {}
    out: dict[str, Any] = {}
    ratio = sched.get("lr_warmup_ratio") or 0.0
    max_steps = settings.get("max_steps")
    if sched.get("warmup_steps") is not None:
        out["warmup_steps"] = sched["warmup_steps"]
    elif isinstance(max_steps, int) and isinstance(ratio, (int, float)):
        out["warmup_steps"] = math.ceil(max_steps * ratio)
    else:  # no horizon recorded (a manager built without max_steps): the ratio itself is compared
        out["lr_warmup_ratio"] = ratio
    style = sched.get("decay_style")
    out["decay_style"] = "constant" if style == "constant" else "cosine"
    out["lr_min"] = sched.get("lr_min") if sched.get("lr_min") is not None else 0.0
    groups = settings.get("optimizer")
    group_lr = (
        groups[0].get("lr") if isinstance(groups, list) and groups and isinstance(groups[0], dict) else None
    )
    if sched.get("lr_max") is not None:
        out["lr_max"], out["lr_max_explicit"] = sched["lr_max"], True
    elif group_lr is not None:
        out["lr_max"], out["lr_max_explicit"] = group_lr, False
    return out


def _differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``(differences, unchecked)``: ``field: <checkpoint> -> <config>`` for each field that
    differs, and the fields the config resolves but the checkpoint does not record."""
    out: list[str] = []
    unchecked: list[str] = []
    saved_groups, current_groups = saved.get("optimizer"), current.get("optimizer")
    if isinstance(current_groups, list) and not isinstance(saved_groups, list):
        unchecked.append("optimizer hyperparameters")
    if isinstance(saved_groups, list) and isinstance(current_groups, list):
        if len(saved_groups) != len(current_groups):
            out.append(
                f"optimizer param groups: {len(saved_groups)} in the checkpoint, {len(current_groups)} "
                "in the config"
            )
        for index, (old, new) in enumerate(zip(saved_groups, current_groups, strict=False)):
            for key in sorted(new):
                if key == "num_params":
                    continue  # the trainable set below names the parameters
                if key not in old:
                    unchecked.append(f"optimizer.param_groups[{index}].{key}")
                elif old[key] != new[key]:
                    out.append(f"optimizer.param_groups[{index}].{key}: {old[key]!r} -> {new[key]!r}")
    old_sched, new_sched = resolved_schedule(saved), resolved_schedule(current)
    for key in ("warmup_steps", "lr_warmup_ratio", "decay_style", "lr_max", "lr_min"):
        if key not in new_sched:
            continue
        if key not in old_sched:
            unchecked.append(f"lr_schedule.{key}")
            continue
        if key == "lr_max" and not (old_sched["lr_max_explicit"] or new_sched["lr_max_explicit"]):
            continue  # both are the optimizer lr, compared with the param groups
        if old_sched[key] != new_sched[key]:
            out.append(f"lr_schedule.{key}: {old_sched[key]!r} -> {new_sched[key]!r}")
    old_train, new_train = saved.get("trainable"), current.get("trainable")
    if isinstance(new_train, list) and not isinstance(old_train, list):
        unchecked.append("trainable parameters")
    if isinstance(old_train, list) and isinstance(new_train, list) and old_train != new_train:
        frozen = sorted(set(old_train) - set(new_train))
        thawed = sorted(set(new_train) - set(old_train))
        parts = []
        if frozen:
            parts.append(f"{len(frozen)} now frozen (first: {', '.join(frozen[:3])})")
        if thawed:
            parts.append(f"{len(thawed)} now trainable (first: {', '.join(thawed[:3])})")
        out.append(f"trainable parameters: {'; '.join(parts)}")
    for key in _SCALARS:
        if key not in current:
            continue
        if key not in saved:
            unchecked.append(key)
        elif saved[key] != current[key]:
            out.append(f"{key}: {saved[key]!r} -> {current[key]!r}")
    return out, unchecked


def check_resume(
    saved: Mapping[str, Any] | None,
    current: Mapping[str, Any],
    *,
    folder: str,
    step: int,
    max_steps: int | None,
    mode: str,
    field: str,
    allow_unverified: bool = False,
    unverified_field: str = "checkpoint.allow_unverified",
) -> list[str]:
    """Before the first resumed step: the differences between the checkpoint and the config.

    ``mode="refuse"``: any difference is a :class:`ResumeConfigError` listing all of them, and so
    is a field the config resolves that the checkpoint does not record (``saved`` is None for a
    checkpoint written before settings were recorded: nothing can be compared), unless
    ``allow_unverified`` (one warning names what was not compared); ``"apply"``: both are logged
    and the differences returned (the caller applies the config's optimizer values with
    :func:`apply_optimizer_settings`). ``step >= max_steps`` is a :class:`ResumePastEndError`.
    """
    if max_steps is not None and step >= max_steps:
        raise ResumePastEndError(
            f"checkpoint {folder} is at step {step}, at or past max_steps={max_steps}: there is nothing "
            f"left to train; to train further raise max_steps and set {field}=apply"
        )
    if saved is None:
        diffs: list[str] = []
        recorded = [name for name in ("optimizer", "lr_scheduler", *_SCALARS, "trainable") if name in current]
        not_checked = (
            f"it records no run settings (written before they were recorded), so the config's "
            f"{', '.join(recorded) or 'settings'} cannot be compared with it"
        )
    else:
        diffs, unchecked = _differences(saved, current)
        not_checked = (
            f"it does not record {', '.join(unchecked)}, so the config's values cannot be compared with it"
            if unchecked
            else ""
        )
    if diffs and mode != "apply":
        extra = f"; besides, {not_checked}" if not_checked else ""
        raise ResumeConfigError(
            f"checkpoint {folder} was trained with other settings (checkpoint -> config): "
            f"{'; '.join(diffs)}{extra}; resume with the checkpoint's settings, or set {field}=apply to "
            "train on with the config's"
        )
    if not_checked and mode != "apply" and not allow_unverified:
        raise ResumeConfigError(
            f"checkpoint {folder} cannot be checked against the config: {not_checked}; set {field}=apply "
            f"to train on with the config's settings (or {unverified_field}=true to resume without "
            "the check)"
        )
    if not_checked:
        reason = f"{field}=apply" if mode == "apply" else f"{unverified_field}=true"
        logger.warning(f"Resuming {folder} UNCHECKED against the config ({reason}): {not_checked}")
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
