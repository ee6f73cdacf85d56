"""The log lines one trainer run writes, as a list a golden can hold.

``capture(workdir)`` keeps every INFO-or-worse record of the product's loggers (``hyper_parallel.*``)
while a run builds and trains, formatted ``LEVEL logger: message``, with what differs from one run
to the next replaced by a placeholder and nothing else:

- the run's own folder becomes ``<run>``, any other path under the temporary folder ``<tmp>/NAME``
  (its last part), the project root ``<repo>``;
- the timed fields of the per-step line (``step_time``, ``tokens_per_sec``, ``tflops``, ``mfu``)
  become ``<timed>``: the clock, not the code, sets them. Losses, norms and learning rates stay:
  they are bit-for-bit values of the run (and the golden is kept per device key, as curves are);
- records of other threads (the background checkpoint commit) go after the run's own thread's,
  sorted: their place among the run's lines is the scheduler's choice.

Records the product logger would not have passed on before (INFO, on a quiet command line) stay
out of the terminal; the rest go where they went.

A message whose arguments do not fit its format (a slip ``logging`` would only print to stderr)
is kept as ``<unformattable: ...>``, so it differs from the right line. The platform's
once-per-process messages are forgotten at the start, so each run logs its first occurrences as a
fresh process would, whatever ran before it in this one.
"""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from parity.case_log import PRODUCT_LOGGER
from parity.legacy_driver import REPO_ROOT

__all__ = ["capture", "normalise"]

_TIMED = re.compile(r"\b(step_time|tokens_per_sec|tflops|mfu)=[^ |]+")


def normalise(message: str, workdir: str) -> str:
    """``message`` with the run folder, temporary paths, the project root and timed fields replaced."""
    text = message.replace(str(Path(workdir).resolve()), "<run>").replace(workdir, "<run>")
    tmp = re.escape(str(Path(tempfile.gettempdir()).resolve()))
    text = re.sub(tmp + r"(?:/[^/\s'\",:)]+)*/([^/\s'\",:)]+)", r"<tmp>/\1", text)
    text = text.replace(str(REPO_ROOT), "<repo>")
    return _TIMED.sub(r"\1=<timed>", text)


class _Keep(logging.Handler):
    """The product logger's only handler while a run is captured: keeps each line, and hands the
    records the logger would have passed before (``onward_from`` and up) to where they went."""

    def __init__(self, workdir: str, logger: logging.Logger) -> None:
        super().__init__(logging.INFO)
        self.workdir = workdir
        self.main: list[str] = []
        self.background: list[str] = []
        self.onward_from = logger.getEffectiveLevel()
        self.handlers, self.propagate = list(logger.handlers), logger.propagate
        self.parent = logger.parent
        self.thread = threading.get_ident()  # the run's own thread (a forked rank runs in a worker thread)

    def handle(self, record: logging.LogRecord) -> bool:
        self.emit(record)
        if record.levelno >= self.onward_from:
            for handler in self.handlers:
                if record.levelno >= handler.level:
                    handler.handle(record)
            if self.propagate and self.parent is not None:
                self.parent.handle(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception as exc:  # the format and its arguments disagree
            message = f"<unformattable: {record.msg!r} % {record.args!r} ({type(exc).__name__})>"
        line = f"{record.levelname} {record.name}: {' '.join(normalise(message, self.workdir).split())}"
        (self.main if threading.get_ident() == self.thread else self.background).append(line)


@contextlib.contextmanager
def capture(workdir: str) -> Iterator[list[str]]:
    """The run's log lines (module docstring), filled in when the block ends."""
    from hyper_parallel.platform.logging import forget_once

    forget_once()
    lines: list[str] = []
    logger = logging.getLogger(PRODUCT_LOGGER)
    handler, level = _Keep(workdir, logger), logger.level
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.handlers, logger.propagate = handler.handlers, handler.propagate
        logger.setLevel(level)
        lines.extend(handler.main)
        lines.extend(f"(background) {line}" for line in sorted(handler.background))
