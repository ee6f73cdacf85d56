"""Rank-aware logging: ``get_logger(name)`` gives a logger with ``info_rank0``/``warning_rank0``
and ``info_once``/``warning_once``.

The helpers live on :class:`RankLogger`, a :class:`logging.LoggerAdapter` over the stdlib logger
of the same name, so a type checker sees them and ``logging.Logger`` itself is never patched.
Handlers, levels and ``caplog`` work on the underlying logger as usual. The module sits in the
platform layer so that components and the harness can log without importing the trainer.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any

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


@functools.cache
def _once(logger_name: str, level: int, msg: str) -> None:
    """Log ``msg`` the first time this (logger, level, text) is seen in the process."""
    logging.getLogger(logger_name).log(level, msg, stacklevel=4)


class RankLogger(logging.LoggerAdapter):
    """A stdlib logger plus the rank-aware helpers; everything else is the wrapped logger's.

    ``*_rank0`` log on rank 0 only (the others would repeat the same line); ``*_once`` log the
    first occurrence of a formatted message on rank 0, so a warning about a setting prints once
    per process however many times the code path runs.
    """

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return msg, kwargs

    def info_rank0(self, msg: object, *args: Any, **kwargs: Any) -> None:
        if current_rank() == 0:
            kwargs.setdefault("stacklevel", 2)
            self.logger.info(msg, *args, **kwargs)

    def warning_rank0(self, msg: object, *args: Any, **kwargs: Any) -> None:
        if current_rank() == 0:
            kwargs.setdefault("stacklevel", 2)
            self.logger.warning(msg, *args, **kwargs)

    def info_once(self, msg: str, *args: Any) -> None:
        if current_rank() == 0:
            _once(self.logger.name, logging.INFO, msg % args if args else msg)

    def warning_once(self, msg: str, *args: Any) -> None:
        if current_rank() == 0:
            _once(self.logger.name, logging.WARNING, msg % args if args else msg)


@functools.cache
def get_logger(name: str) -> RankLogger:
    """The :class:`RankLogger` over ``logging.getLogger(name)`` (one per name)."""
    return RankLogger(logging.getLogger(name), {})


class _RankFilter(logging.Filter):
    """Stamps ``record.rank``; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.rank = current_rank()
        return True


def init_logger(
    level: int = logging.INFO, fmt: str | None = None, datefmt: str = "%H:%M:%S", stream: Any = None
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


def forget_once() -> None:
    """Forget which ``*_once`` messages were logged: the next occurrence of each logs again, as in a
    fresh process (for a process that runs one trainer after another, such as the parity harness)."""
    _once.cache_clear()
