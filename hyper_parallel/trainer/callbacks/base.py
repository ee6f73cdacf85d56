"""Callback base class and the config-section lookup shared by the built-in callbacks."""

from __future__ import annotations

from typing import Any

from hyper_parallel.platform import get_platform

__all__ = ["Callback", "_sub_cfg", "_rank"]

# Sections a callback may look up with `_sub_cfg`.
SECTION_NAMES = (
    "logging",
    "checkpoint",
    "eval",
    "profile",
    "wandb",
    "tensorboard",
    "memory_monitor",
    "moe_monitor",
    "debug",
)


def _sub_cfg(args: Any, name: str) -> Any:
    """Return ``args.train.<name>``, else ``args.<name>``, else None (decision D1).

    Upstream read the top level only, so a real YAML silently ran every callback on code
    defaults; the ``train`` section wins here.
    """
    train = getattr(args, "train", None)
    section = getattr(train, name, None) if train is not None else None
    if section is not None:
        return section
    return getattr(args, name, None)


def _rank() -> int:
    """Global rank (0 without a process group)."""
    return get_platform().get_rank()


def _positive_int(value: Any, field: str) -> int:
    """Validate a step interval read from the config; errors name the field."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{field} must be a positive int, got {value!r}")
    return value


class Callback:
    """Base class: every hook is a no-op that takes ``state`` first."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer

    def on_init_end(self, state: Any, **kwargs: Any) -> None:
        pass

    def on_train_begin(self, state: Any, **kwargs: Any) -> None:
        pass

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        pass

    def on_epoch_begin(self, state: Any, **kwargs: Any) -> None:
        pass

    def on_epoch_end(self, state: Any, **kwargs: Any) -> None:
        pass

    def on_step_begin(self, state: Any, **kwargs: Any) -> None:
        pass

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        pass

    def on_substep_end(self, state: Any, **kwargs: Any) -> None:
        pass

    def on_pre_optimizer_step(self, state: Any, *, grad_norm: float | None = None, **kwargs: Any) -> None:
        pass

    def on_log(self, state: Any, *, metrics: dict[str, Any], **kwargs: Any) -> None:
        pass

    def on_save(self, state: Any, *, checkpoint_dir: str, **kwargs: Any) -> None:
        pass

    def on_load(self, state: Any, *, checkpoint_dir: str, **kwargs: Any) -> None:
        pass

    def on_evaluate(self, state: Any, *, metrics: dict[str, Any] | None = None, **kwargs: Any) -> None:
        pass
