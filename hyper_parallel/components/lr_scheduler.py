"""LR schedule: linear warmup from 0, then cosine decay to ``lr_min`` (or constant).

The component form of the legacy ``BaseTrainer._build_lr_scheduler``. The
factor that multiplies each group's initial lr at step ``s`` (``W`` warmup steps, ``T`` training
steps, ``r = lr_min / lr``) is, in Python floats and in the legacy operation order::

    s < W                 ->  s / max(1, W)            (step 0 at lr 0: LambdaLR evaluates it at build)
    decay_style constant  ->  1.0
    otherwise             ->  r + (1 - r) * 0.5 * (1 + cos(pi * (s - W) / max(1, T - W)))

There is no clamp past ``T`` (the cosine rises again), and every style except ``"constant"``
is cosine, as in the legacy trainer (a warning names the unknown style).

Warmup hazard: the legacy YAML gives a ratio, and ``W = ceil(T * ratio)`` uses the ``T`` left
AFTER the dataset step (an HF dataset shrinks ``max_steps``, preset_pt resets it). So the ratio
stays a ratio here: ``W`` is computed at build time from the ``training_steps`` kwarg, which the
trainer passes after building the dataloader. ``warmup_steps`` fixes ``W`` directly instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hyper_parallel.config.cross_checks import DECAY_STYLES
from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.protocols.configurable import Configurable

__all__ = ["DECAY_STYLES", "LRSchedulersContainer", "lr_factor"]

logger = get_logger(__name__)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fail(cfg: Any, name: str, expected: str) -> None:
    value = getattr(cfg, name)
    raise ValueError(
        f"{type(cfg).__qualname__}.{name}: expected {expected}, got {value!r} ({type(value).__name__})"
    )


def lr_factor(*, warmup: int, total: int, decay_style: str, min_ratio: float) -> Callable[[int], float]:
    """The LambdaLR factor as a plain function.

    It must stay a plain function (not a bound method or a callable object): LambdaLR's
    ``state_dict`` stores ``None`` for functions but the ``__dict__`` of anything else, and the
    legacy scheduler state holds ``None``.
    """
    constant = decay_style == "constant"

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        if constant:
            return 1.0
        progress = (step - warmup) / max(1, total - warmup)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


class LRSchedulersContainer(Configurable):
    """One LambdaLR per optimizer of the container, all on the same factor."""

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        """Warmup and decay; the legacy ``train.optimizer.lr_*`` fields, RFC names where they differ."""

        warmup_steps: int | None = None
        """Warmup length in steps; None: ceil(training_steps * lr_warmup_ratio) at build time."""
        lr_warmup_ratio: float = 0.0
        """Warmup length as a fraction of the training steps; set this or warmup_steps, not both."""
        decay_style: str = "cosine"
        """Legacy ``lr_decay_style``: "cosine" or "constant" (anything else is cosine, with a warning)."""
        lr_min: float = 0.0
        """Absolute floor of the cosine (legacy ``lr_min``), reached exactly at training_steps."""
        lr_max: float | None = None
        """lr_min is relative to it (min ratio = lr_min / lr_max); None: the optimizer lr, also the peak."""

        def __post_init__(self) -> None:
            if self.warmup_steps is not None and not (_is_int(self.warmup_steps) and self.warmup_steps >= 0):
                _fail(self, "warmup_steps", "an int >= 0 or None")
            if not (_is_real(self.lr_warmup_ratio) and self.lr_warmup_ratio >= 0):
                _fail(self, "lr_warmup_ratio", "a finite number >= 0")
            if self.warmup_steps is not None and self.lr_warmup_ratio:
                raise ValueError(
                    f"{type(self).__qualname__}: warmup_steps={self.warmup_steps!r} and lr_warmup_ratio="
                    f"{self.lr_warmup_ratio!r} are both set; set only one of them"
                )
            if not isinstance(self.decay_style, str) or not self.decay_style:
                _fail(self, "decay_style", f"a non-empty string ({' or '.join(map(repr, DECAY_STYLES))})")
            if not (_is_real(self.lr_min) and self.lr_min >= 0):
                _fail(self, "lr_min", "a finite number >= 0")
            if self.lr_max is not None and not (_is_real(self.lr_max) and self.lr_max >= 0):
                _fail(self, "lr_max", "a finite number >= 0 or None")

    def __init__(self, config: LRSchedulersContainer.Config, *, optimizers: Any, training_steps: int) -> None:
        if not _is_int(training_steps) or training_steps < 0:
            raise ValueError(
                f"training_steps: expected an int >= 0 (max_steps after the dataset step), got {training_steps!r}"
            )
        self.config = config
        self.optimizers = _optimizer_list(optimizers)
        self.training_steps = training_steps
        if config.warmup_steps is not None:
            self.warmup_steps = config.warmup_steps
        else:
            self.warmup_steps = math.ceil(training_steps * config.lr_warmup_ratio)
        lr = config.lr_max if config.lr_max is not None else _configured_lr(optimizers, self.optimizers[0])
        min_ratio = config.lr_min / lr if lr > 0 else 0.0
        if config.decay_style not in DECAY_STYLES:
            logger.warning_once(
                "LRSchedulersContainer.Config.decay_style=%r is not one of %s: using cosine (as the legacy trainer)",
                config.decay_style,
                ", ".join(DECAY_STYLES),
            )
        factor = lr_factor(
            warmup=self.warmup_steps,
            total=training_steps,
            decay_style=config.decay_style,
            min_ratio=min_ratio,
        )
        platform = get_platform()
        self.schedulers = [platform.lambda_lr(optimizer, factor) for optimizer in self.optimizers]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.schedulers)

    def __len__(self) -> int:
        return len(self.schedulers)

    def step(self) -> None:
        """Advance every scheduler by one step (call it after the optimizer step)."""
        for scheduler in self.schedulers:
            scheduler.step()

    def get_last_lr(self) -> list[float]:
        """The lr per group of the first optimizer (the decay group first), as the legacy logs it."""
        return self.schedulers[0].get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """The first scheduler's state (all of them hold the same step): the legacy ``scheduler.pt``."""
        return self.schedulers[0].state_dict()

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Load one scheduler state into every scheduler, fitted to its number of param groups."""
        for scheduler in self.schedulers:
            scheduler.load_state_dict(_fit_groups(state_dict, len(scheduler.base_lrs)))


def _optimizer_list(optimizers: Any) -> list[Any]:
    """The optimizers of a container (``.optimizers``), or a single optimizer (``param_groups``)."""
    inner = getattr(optimizers, "optimizers", None)
    if inner is not None:
        found = list(inner)
    elif hasattr(optimizers, "param_groups"):
        found = [optimizers]
    else:
        found = []
    if not found:
        raise TypeError(
            "optimizers: expected an optimizers container (with .optimizers) or an optimizer, "
            f"got {type(optimizers).__name__}"
        )
    return found


def _configured_lr(optimizers: Any, first: Any) -> float:
    """The lr the optimizer was configured with: the container's Config, else AdamW's defaults."""
    config = getattr(optimizers, "config", None)
    lr = getattr(config, "lr", None)
    return first.defaults["lr"] if lr is None else lr


def _fit_groups(state_dict: Mapping[str, Any], num_groups: int) -> dict[str, Any]:
    """A copy whose per-group lists have ``num_groups`` entries (they must all be equal to resize)."""
    out = dict(state_dict)
    for key in ("base_lrs", "_last_lr", "lr_lambdas"):
        values = out.get(key)
        if values is None or len(values) == num_groups:
            continue
        if any(v != values[0] for v in values):
            raise ValueError(
                f"scheduler state_dict: {key} has {len(values)} different entries, cannot load it into a "
                f"scheduler of {num_groups} param groups"
            )
        out[key] = [values[0]] * num_groups
    return out
