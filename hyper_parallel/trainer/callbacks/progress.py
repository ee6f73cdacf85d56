"""ProgressCallback: a rank-0 tqdm bar over ``state.max_steps``.

While the bar is open, the root logger's console handlers write through ``tqdm.write`` (each
keeps its formatter, filters, level and stream), so a log line never lands in the middle of the
bar; they are put back when the bar closes. ``HYPER_PARALLEL_PROGRESS=0`` (read when training
begins; ``python -m parity`` sets it around its runs) shows no bar.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, TypeGuard

from hyper_parallel.platform.logging import get_logger
from hyper_parallel.platform.quiet import PROGRESS_ENV
from hyper_parallel.trainer.callbacks.base import Callback, _rank

logger = get_logger(__name__)


class _TqdmConsoleHandler(logging.Handler):
    """A console handler's twin that writes with ``tqdm.write`` (which clears and redraws the bar)."""

    def __init__(self, tqdm: Any, original: logging.StreamHandler) -> None:
        super().__init__(original.level)
        self._tqdm = tqdm
        self.stream = original.stream
        self.setFormatter(original.formatter)
        for flt in original.filters:
            self.addFilter(flt)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._tqdm.write(self.format(record), file=self.stream)
        except Exception:  # logging's own contract: report, never raise
            self.handleError(record)


def _is_console(handler: logging.Handler) -> TypeGuard[logging.StreamHandler]:
    return type(handler) is logging.StreamHandler and getattr(handler, "stream", None) in (
        sys.stderr,
        sys.stdout,
        sys.__stderr__,
        sys.__stdout__,
    )


class ProgressCallback(Callback):
    """Shows loss and grad norm per step; without tqdm it warns once and shows nothing."""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        self.bar = None
        self._swapped: list[tuple[logging.Handler, logging.Handler]] = []
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
            logger.warning_rank0("tqdm is not installed; no progress bar will be shown")
        self._tqdm = tqdm

    def on_train_begin(self, state: Any, **kwargs: Any) -> None:
        if self._tqdm is None or _rank() != 0 or self.bar is not None:
            return
        if os.environ.get(PROGRESS_ENV, "1") == "0":
            return
        self.bar = self._tqdm(
            total=state.max_steps,
            initial=state.global_step,
            desc="Training",
            unit="step",
            dynamic_ncols=True,
        )
        self._redirect_logging()

    def _redirect_logging(self) -> None:
        root = logging.getLogger()
        for handler in list(root.handlers):
            if _is_console(handler):
                twin = _TqdmConsoleHandler(self._tqdm, handler)
                root.removeHandler(handler)
                root.addHandler(twin)
                self._swapped.append((handler, twin))

    def _restore_logging(self) -> None:
        root = logging.getLogger()
        for handler, twin in self._swapped:
            root.removeHandler(twin)
            root.addHandler(handler)
        self._swapped = []

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
        self._restore_logging()
