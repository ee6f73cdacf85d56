"""Rank-aware logging: ``info_rank0``/``warning_rank0`` and ``info_once``/``warning_once``.

Importing this module installs the four helpers on :class:`logging.Logger`. It lives in the
platform layer so that components and the harness can use it without importing the trainer.
``get_logger(name)`` is ``logging.getLogger(name)`` typed with the helpers, so that a type checker
sees them (a plain ``logging.getLogger`` result is a ``Logger`` without them).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:

    class RankLogger(logging.Logger):
        """A ``logging.Logger`` with the helpers this module installs (a type, never instantiated)."""

        def info_rank0(self, msg: object, *args: Any, **kwargs: Any) -> None: ...
        def warning_rank0(self, msg: object, *args: Any, **kwargs: Any) -> None: ...
        def info_once(self, msg: str, *args: Any) -> None: ...
        def warning_once(self, msg: str, *args: Any) -> None: ...

else:
    RankLogger = logging.Logger

DEFAULT_FORMAT = "[%(asctime)s][rank%(rank)s][%(levelname)s] %(name)s: %(message)s"


def current_rank() -> int:
    """Process-group rank when a group exists, else ``RANK``, else ``LOCAL_RANK``, else 0."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except ImportError:
        pass
    for var in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(var)
        if value not in (None, ""):
            try:
                return int(value)
            except ValueError:
                continue
    return 0


def _info_rank0(self: logging.Logger, msg, *args, **kwargs):
    if current_rank() == 0:
        kwargs.setdefault("stacklevel", 2)
        self.info(msg, *args, **kwargs)


def _warning_rank0(self: logging.Logger, msg, *args, **kwargs):
    if current_rank() == 0:
        kwargs.setdefault("stacklevel", 2)
        self.warning(msg, *args, **kwargs)


@functools.cache
def _once(logger_name: str, level: int, msg: str) -> None:
    logging.getLogger(logger_name).log(level, msg, stacklevel=4)


def _info_once(self: logging.Logger, msg: str, *args):
    if current_rank() == 0:
        _once(self.name, logging.INFO, msg % args if args else msg)


def _warning_once(self: logging.Logger, msg: str, *args):
    if current_rank() == 0:
        _once(self.name, logging.WARNING, msg % args if args else msg)


def install_rank_helpers() -> None:
    logging.Logger.info_rank0 = _info_rank0  # type: ignore[attr-defined]
    logging.Logger.warning_rank0 = _warning_rank0  # type: ignore[attr-defined]
    logging.Logger.info_once = _info_once  # type: ignore[attr-defined]
    logging.Logger.warning_once = _warning_once  # type: ignore[attr-defined]


def get_logger(name: str) -> RankLogger:
    """``logging.getLogger(name)`` (the same object), typed with the rank-aware helpers."""
    return cast(RankLogger, logging.getLogger(name))


class _RankFilter(logging.Filter):
    """Stamps ``record.rank``; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.rank = current_rank()
        return True


def init_logger(
    level: int = logging.INFO, fmt: str | None = None, datefmt: str = "%H:%M:%S", stream=None
) -> None:
    """Replace the root handlers with one rank-stamping stream handler."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(_RankFilter())
    handler.setFormatter(logging.Formatter(fmt or DEFAULT_FORMAT, datefmt=datefmt))
    root.addHandler(handler)
    root.setLevel(level)


install_rank_helpers()
