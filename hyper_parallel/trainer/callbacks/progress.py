"""ProgressCallback: a rank-0 tqdm bar over ``state.max_steps`` (spec 13.6)."""

from __future__ import annotations

import logging
from typing import Any

from hyper_parallel.trainer.callbacks.base import Callback, _rank

logger = logging.getLogger(__name__)


class ProgressCallback(Callback):
    """Shows loss and grad norm per step; without tqdm it warns once and shows nothing."""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        self.bar = None
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
            logger.warning_rank0("tqdm is not installed; no progress bar will be shown")
        self._tqdm = tqdm

    def on_train_begin(self, state: Any, **kwargs: Any) -> None:
        if self._tqdm is None or _rank() != 0 or self.bar is not None:
            return
        self.bar = self._tqdm(
            total=state.max_steps,
            initial=state.global_step,
            desc="Training",
            unit="step",
            dynamic_ncols=True,
        )

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        if self.bar is None:
            return
        postfix = {}
        if loss is not None:
            postfix["loss"] = f"{loss:.4f}"
        if grad_norm is not None:
            postfix["gnorm"] = f"{grad_norm:.4f}"
        if postfix:
            self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(1)

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
