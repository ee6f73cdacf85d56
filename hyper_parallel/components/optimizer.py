"""Optimizer containers: AdamW over the model parts, with the legacy decay / no-decay grouping.

``OptimizersContainer`` is the component form of the legacy ``BaseTrainer._build_optimizer``.
The grouping rule is re-implemented here, not shared:

- parameters are visited in ``named_parameters()`` order of each model part in turn; frozen ones
  (``requires_grad=False``) are skipped; a parameter seen before (tied weights, or shared between
  parts) is skipped, so the first name wins;
- a parameter is *no-decay* iff one of ``decay_keywords`` is a substring of ``name.lower()``;
- there are always exactly two groups, ``[decay (weight_decay), no_decay (0.0)]``, even if one
  is empty.

Layout choice: torchtitan keeps one optimizer per model part. The legacy trainer has ONE AdamW
over everything, and its checkpoint is ``optimizer.state_dict()`` of that AdamW; we keep one
optimizer too, so ``state_dict()`` has exactly the legacy layout (integer parameter indices,
decay group first) and a legacy ``optimizer_rank{r}.pt`` loads as is.

``OptimizersInBackwardContainer`` steps one AdamW per parameter from a post-accumulate-grad hook,
so a gradient is consumed (and freed) as soon as backward produces it. AdamW is elementwise per
parameter, so the updates are bit-identical to the plain container's as long as nothing couples
parameters between backward and step. Gradient clipping does (it needs the global norm), so it
is NOT applied with this container; neither is gradient accumulation (every backward steps).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.protocols.configurable import Configurable

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEFAULT_DECAY_KEYWORDS",
    "LOSS_AGGREGATIONS",
    "OptimizersContainer",
    "OptimizersInBackwardContainer",
    "split_decay_groups",
]

logger = get_logger(__name__)

DEFAULT_DECAY_KEYWORDS: tuple[str, ...] = ("bias", "layernorm", "norm", "rmsnorm")
# Read by the trainer's loss scaling, not by the optimizer; kept here because the legacy YAML
# has it under ``train.optimizer``.
LOSS_AGGREGATIONS = ("token_weighted", "rank_average")


# ----------------------------------------------------------------------------- validation


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _fail(cfg: Any, name: str, expected: str) -> None:
    value = getattr(cfg, name)
    raise ValueError(
        f"{type(cfg).__qualname__}.{name}: expected {expected}, got {value!r} ({type(value).__name__})"
    )


def _validate(cfg: OptimizersContainer.Config) -> None:
    """Check every field and normalise YAML lists to tuples (the ranges are AdamW's own)."""
    for name in ("lr", "eps", "weight_decay"):
        if not _is_real(getattr(cfg, name)) or getattr(cfg, name) < 0:
            _fail(cfg, name, "a finite number >= 0")
    betas = cfg.betas
    if (
        isinstance(betas, (str, bytes))
        or not isinstance(betas, Sequence)
        or len(betas) != 2
        or not all(_is_real(b) and 0.0 <= b < 1.0 for b in betas)
    ):
        _fail(cfg, "betas", "a pair of numbers in [0, 1)")
    cfg.betas = (betas[0], betas[1])  # checked above: two numbers
    for name in ("foreach", "fused"):
        if getattr(cfg, name) not in (None, True, False):
            _fail(cfg, name, "True, False or None")
    if cfg.foreach and cfg.fused:
        raise ValueError(
            f"{type(cfg).__qualname__}: foreach=True and fused=True are mutually exclusive; set at most one"
        )
    keywords = cfg.decay_keywords
    if (
        isinstance(keywords, (str, bytes))
        or not isinstance(keywords, Sequence)
        or not all(isinstance(k, str) and k and k == k.lower() for k in keywords)
    ):
        _fail(
            cfg,
            "decay_keywords",
            "a list of non-empty lowercase strings (matched against the lower-cased parameter name)",
        )
    cfg.decay_keywords = tuple(keywords)
    if cfg.loss_aggregation not in LOSS_AGGREGATIONS:
        _fail(cfg, "loss_aggregation", f"one of {', '.join(map(repr, LOSS_AGGREGATIONS))}")


# ----------------------------------------------------------------------------- grouping


def split_decay_groups(
    model_parts: Sequence[Any], decay_keywords: Sequence[str]
) -> tuple[list[tuple[str, torch.nn.Parameter]], list[tuple[str, torch.nn.Parameter]]]:
    """``(decay, no_decay)`` as ``(first name, parameter)`` lists, in visiting order.

    Frozen parameters are skipped and each parameter object is kept once (first name wins).
    """
    decay: list[tuple[str, Any]] = []
    no_decay: list[tuple[str, Any]] = []
    seen: set[int] = set()
    for part in model_parts:
        for name, param in part.named_parameters():
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            lname = name.lower()
            (no_decay if any(k in lname for k in decay_keywords) else decay).append((name, param))
    return decay, no_decay


def _check_model_parts(model_parts: Any) -> list[Any]:
    if hasattr(model_parts, "named_parameters") or not isinstance(model_parts, Sequence) or not model_parts:
        raise TypeError(
            f"model_parts: expected a non-empty list of modules (e.g. [model]), got {type(model_parts).__name__}"
        )
    for i, part in enumerate(model_parts):
        if not hasattr(part, "named_parameters"):
            raise TypeError(
                f"model_parts[{i}]: expected a module with named_parameters(), got {type(part).__name__}"
            )
    return list(model_parts)


def _adamw_kwargs(cfg: OptimizersContainer.Config) -> dict[str, Any]:
    """AdamW keyword arguments; ``fused`` only when set (the legacy builder passes none)."""
    kwargs: dict[str, Any] = {
        "lr": cfg.lr,
        "betas": tuple(float(b) for b in cfg.betas),
        "eps": cfg.eps,
        "foreach": cfg.foreach,
    }
    if cfg.fused is not None:
        kwargs["fused"] = cfg.fused
    return kwargs


# ----------------------------------------------------------------------------- containers


class OptimizersContainer(Configurable):
    """One AdamW over every model part, with the two legacy parameter groups."""

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        """AdamW hyperparameters; names and defaults follow the legacy ``train.optimizer`` section."""

        lr: float = 1e-4
        """Peak learning rate (legacy ``train.optimizer.lr``); the LR scheduler scales it."""
        betas: tuple[float, float] = (0.9, 0.999)
        """AdamW's (beta1, beta2), each in [0, 1)."""
        eps: float = 1e-8
        """AdamW's denominator epsilon."""
        weight_decay: float = 0.01
        """Decoupled weight decay of the decay group; the no-decay group always has 0.0."""
        foreach: bool | None = None
        """AdamW's ``foreach`` switch; None lets the framework choose (the legacy trainer passes None)."""
        fused: bool | None = None
        """AdamW's fused kernel; None passes no ``fused`` argument (as the legacy trainer does)."""
        decay_keywords: tuple[str, ...] = DEFAULT_DECAY_KEYWORDS
        """A parameter whose lower-cased name contains one of these is in the no-decay group."""
        loss_aggregation: str = "token_weighted"
        """Loss mean: "token_weighted" (over the global batch's tokens) or "rank_average" (of rank means)."""

        def __post_init__(self) -> None:
            _validate(self)

    def __init__(self, config: OptimizersContainer.Config, *, model_parts: list[Any]) -> None:
        self.config = config
        self.model_parts = _check_model_parts(model_parts)
        decay, no_decay = split_decay_groups(self.model_parts, config.decay_keywords)
        # FQNs per group (decay, no_decay), in the order the optimizer holds the parameters.
        self.param_names: list[list[str]] = [[n for n, _ in decay], [n for n, _ in no_decay]]
        groups = [
            {"params": [p for _, p in decay], "weight_decay": config.weight_decay},
            {"params": [p for _, p in no_decay], "weight_decay": 0.0},
        ]
        self.optimizers = [get_platform().adamw(groups, **_adamw_kwargs(config))]
        logger.info_rank0(
            "AdamW lr=%s weight_decay=%s: %d decay / %d no-decay params",
            config.lr,
            config.weight_decay,
            len(decay),
            len(no_decay),
        )

    # The underlying optimizer(s), like torchtitan's container.
    def __iter__(self) -> Iterator[Any]:
        return iter(self.optimizers)

    def __len__(self) -> int:
        return len(self.optimizers)

    @property
    def optimizer(self) -> Any:
        """The single AdamW (this container never holds more than one)."""
        return self.optimizers[0]

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        """The live ``[decay, no_decay]`` groups (the LR scheduler writes their ``lr``)."""
        return self.optimizers[0].param_groups

    def step(self) -> None:
        for optimizer in self.optimizers:
            optimizer.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """The AdamW state dict: the same layout as the legacy ``optimizer_rank{r}.pt``."""
        return self.optimizers[0].state_dict()

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self.optimizers[0].load_state_dict(state_dict)


class OptimizersInBackwardContainer(OptimizersContainer):
    """AdamW stepped per parameter inside backward (same groups and hyperparameters).

    Each trainable parameter gets its own single-parameter AdamW and a post-accumulate-grad hook
    that steps it and frees its gradient. ``step()`` and ``zero_grad()`` therefore do no work on
    the parameters. Not applied: gradient clipping (the hook runs before the global norm exists)
    and gradient accumulation (every backward steps). A tied parameter is stepped once per
    backward: its hook fires after both uses have accumulated.

    A parameter-free AdamW with the two groups (``group_record``) is kept first in
    ``optimizers``: the LR scheduler sets its ``lr`` like every other optimizer's, and it gives
    ``param_groups`` and ``state_dict()`` the plain container's layout, so checkpoints move
    between the two containers.
    """

    @dataclass(kw_only=True, slots=True)
    class Config(OptimizersContainer.Config):
        """The same fields as ``OptimizersContainer.Config``."""

    def __init__(self, config: OptimizersInBackwardContainer.Config, *, model_parts: list[Any]) -> None:
        platform = get_platform()
        self.config = config
        self.model_parts = _check_model_parts(model_parts)
        groups = split_decay_groups(self.model_parts, config.decay_keywords)
        self.param_names = [[n for n, _ in group] for group in groups]
        kwargs = _adamw_kwargs(config)
        weight_decays = (config.weight_decay, 0.0)
        self.group_record = platform.adamw(
            [{"params": [], "weight_decay": wd} for wd in weight_decays], **kwargs
        )
        self._group_params: list[list[Any]] = [[p for _, p in group] for group in groups]
        self._group_optimizers: list[list[Any]] = []
        self._hook_handles: list[Any] = []
        for params, wd in zip(self._group_params, weight_decays, strict=True):
            optimizers = []
            for param in params:
                optimizer = platform.adamw([{"params": [param], "weight_decay": wd}], **kwargs)
                self._hook_handles.append(
                    platform.register_post_accumulate_grad_hook(param, _step_hook(optimizer))
                )
                optimizers.append(optimizer)
            self._group_optimizers.append(optimizers)
        self.optimizers = [self.group_record, *(o for group in self._group_optimizers for o in group)]
        logger.info_rank0(
            "AdamW in backward lr=%s weight_decay=%s: %d decay / %d no-decay params",
            config.lr,
            config.weight_decay,
            len(self._group_params[0]),
            len(self._group_params[1]),
        )

    @property
    def optimizer(self) -> Any:
        raise AttributeError("OptimizersInBackwardContainer has one optimizer per parameter: use .optimizers")

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        """A read-only view ``[decay, no_decay]``: live hyperparameters plus the group's parameters."""
        return [
            {**{k: v for k, v in record.items() if k != "params"}, "params": list(params)}
            for record, params in zip(self.group_record.param_groups, self._group_params, strict=True)
        ]

    def step(self) -> None:
        # The parameters were stepped in backward. Stepping the parameter-free record is a no-op
        # that tells its LR scheduler an optimizer step happened (no out-of-order warning).
        self.group_record.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Nothing to do: each hook frees its gradient right after its step."""

    def remove_hooks(self) -> None:
        """Detach the backward hooks (the parameters stop being stepped in backward)."""
        for handle in self._hook_handles:
            handle.remove()
        self._hook_handles.clear()

    def state_dict(self) -> dict[str, Any]:
        """The plain container's layout: one state entry per parameter index, two groups."""
        state: dict[int, Any] = {}
        groups = []
        index = 0
        for record, optimizers in zip(self.group_record.param_groups, self._group_optimizers, strict=True):
            indices = []
            for optimizer in optimizers:
                param_state = optimizer.state_dict()["state"]
                if 0 in param_state:
                    state[index] = param_state[0]
                indices.append(index)
                index += 1
            groups.append({**{k: v for k, v in record.items() if k != "params"}, "params": indices})
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Load a state dict of either container (the layouts are the same)."""
        groups = state_dict["param_groups"]
        sizes = [len(params) for params in self._group_params]
        if len(groups) != 2 or [len(g["params"]) for g in groups] != sizes:
            raise ValueError(
                f"optimizer state_dict: expected 2 param groups of sizes {sizes}, got "
                f"{[len(g['params']) for g in groups]}"
            )
        state = state_dict["state"]
        hypers = [{k: v for k, v in group.items() if k != "params"} for group in groups]
        self.group_record.load_state_dict(
            {"state": {}, "param_groups": [{**h, "params": []} for h in hypers]}
        )
        for group, hyper, optimizers in zip(groups, hypers, self._group_optimizers, strict=True):
            for index, optimizer in zip(group["params"], optimizers, strict=True):
                own = {0: state[index]} if index in state else {}
                optimizer.load_state_dict({"state": own, "param_groups": [{**hyper, "params": [0]}]})


def _step_hook(optimizer: Any) -> Callable[[Any], None]:
    """The post-accumulate-grad hook of one parameter: step its AdamW, then free the gradient."""

    def hook(_param: Any) -> None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return hook
