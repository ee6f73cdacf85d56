"""What a model must provide to be trained by HyperTrainer (the new component path).

The trainer builds the model on the meta device, parallelises it, materialises it with
``to_empty`` + ``init_weights``, hands ``named_parameters`` to the optimizer, reads ``config`` for
shape checks, and calls ``forward_logits`` (the loss is a separate component). Checking all of
that once, right after construction, turns a late ``AttributeError`` deep in a step into one
error that lists everything missing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MODULE_PROTOCOL", "ModuleRequirement", "verify_module_protocol"]


@dataclass(frozen=True)
class ModuleRequirement:
    """One member the trainer uses: an attribute, or a method callable with the sample arguments."""

    name: str
    usage: str
    is_method: bool = True
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict, hash=False)

    def problem(self, model: Any) -> str | None:
        """Return why ``model`` fails this requirement, or None when it meets it."""
        if not hasattr(model, self.name):
            return f"{self.usage} (missing)"
        value = getattr(model, self.name)
        if not self.is_method:
            return f"{self.usage} (is None)" if value is None else None
        if not callable(value):
            return f"{self.usage} (not callable)"
        if not _accepts(value, self.args, self.kwargs):
            return f"{self.usage} (signature does not accept this call)"
        return None


def _accepts(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: give them the benefit of the doubt
        return True
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


# The whole protocol, in one place.
MODULE_PROTOCOL: tuple[ModuleRequirement, ...] = (
    ModuleRequirement("config", "config: the model's Config (read for shape checks)", is_method=False),
    ModuleRequirement("forward_logits", "forward_logits(input_ids, ...) -> logits", args=(None,)),
    ModuleRequirement("to_empty", "to_empty(device=...) (materialise meta tensors)", kwargs={"device": None}),
    ModuleRequirement(
        "init_weights",
        "init_weights(buffer_device=None) (initialise after to_empty)",
        kwargs={"buffer_device": None},
    ),
    ModuleRequirement("named_parameters", "named_parameters() (optimizer param groups)"),
)


def verify_module_protocol(model: Any) -> None:
    """Raise ``TypeError`` listing every member of :data:`MODULE_PROTOCOL` that ``model`` lacks."""
    problems = [p for req in MODULE_PROTOCOL if (p := req.problem(model)) is not None]
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise TypeError(
            f"{type(model).__qualname__} does not implement the module protocol HyperTrainer needs:\n{lines}"
        )
