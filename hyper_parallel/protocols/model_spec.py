"""ModelSpec: everything a trainer needs to know about one model family, in one record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class ModelSpec:
    """A model family's builders and adapters (v2 field set).

    The first six fields keep the legacy positional order
    ``ModelSpec(name, build_model_fn, parallelize_fn, clip_grad_fn, pipelining_fn, state_dict_adapter)``;
    ``flavor``, ``model`` (the model Config used by the new path) and ``post_optimizer_build_fn``
    are the v2 additions.
    """

    name: str
    build_model_fn: Callable[..., Any] | None = None
    parallelize_fn: Callable[..., Any] | None = None
    clip_grad_fn: Callable[..., Any] | None = None
    pipelining_fn: Callable[..., Any] | None = None
    state_dict_adapter: type | None = None
    flavor: str | None = None
    model: Any = None
    post_optimizer_build_fn: Callable[..., Any] | None = None
