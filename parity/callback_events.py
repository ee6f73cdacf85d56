"""A user callback that records the event sequence a trainer dispatches, in canonical form.

Both trainers promise a migrating user the legacy callback API: the same hooks, in the same order,
with the same trainer state and keyword arguments. ``EventRecorder`` is handed to either trainer
with ``add_callback``; its ``events`` are comparable bit for bit: each hook's name (the key of its
entry), the trainer state it sees (``global_step``, ``epoch``, ``max_steps``) and its keyword
arguments (floats as float leaves, tensors by canonical hash, the ``on_log`` metrics with the values
of the deterministic keys and the types of the others, checkpoint folders relative to the run's
folder). Every end-to-end run records one (``parity.e2e``'s ``events`` artifact).
"""

from __future__ import annotations

import os
from typing import Any

from parity import canonical

__all__ = ["DETERMINISTIC_METRICS", "EventRecorder"]

# on_log metrics whose values are the same in every run; the others (step time, throughput) are
# compared by key and type only.
DETERMINISTIC_METRICS = ("step", "loss", "grad_norm", "lr", "aux_loss")


class EventRecorder:
    """A user callback that records every hook a trainer calls on it, in order.

    Any ``on_*`` attribute is a recording hook, so a hook that one trainer dispatches and the other
    does not still shows up in the sequence.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.events: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("on_"):
            raise AttributeError(name)

        def hook(state: Any, **kwargs: Any) -> None:
            # Keyed by the hook's name, so that an event out of place is a missing/extra key that
            # names both events (a difference path reads ``events.fresh[12].on_save``).
            self.events.append(
                {
                    name: {
                        "step": state.global_step,
                        "epoch": state.epoch,
                        "max_steps": state.max_steps,
                        "args": {key: self._arg(key, value) for key, value in sorted(kwargs.items())},
                    }
                }
            )

        return hook

    def _arg(self, key: str, value: Any) -> Any:
        if key == "checkpoint_dir" and isinstance(value, str):
            return os.path.relpath(value, self.root)
        if key == "metrics" and isinstance(value, dict):
            return canonical.metrics(value, deterministic=DETERMINISTIC_METRICS)
        return canonical.canonicalise(value, f"args.{key}")
