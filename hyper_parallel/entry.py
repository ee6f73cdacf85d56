"""Error reporting shared by the entry points (``scripts/train_lm.py``, ``python -m hyper_parallel.train``).

A configuration or input error (a bad value, a missing or damaged file, an unusable output folder,
a checkpoint of another model) is printed as one line, ``<prog>: error: <message>``, with exit
status 2, as argparse does for a bad flag. A checkpoint save that fails, and a run stopped by
``check_nan_inf`` at a step whose loss or gradient norm is not finite, are printed the same way
with status 1. A refused command line (``CommandLineError``: an unknown flag, a value of the wrong
type or outside its choices, a missing value) is ``<prog>: error: <flag>: <what was expected>``,
status 2. Anything else is a bug and keeps its traceback. ``HYPER_PARALLEL_DEBUG=1`` shows the
traceback of every error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from hyper_parallel.checkpointing import CheckpointCorruptError, CheckpointSaveError
from hyper_parallel.config.refusals import CommandLineError
from hyper_parallel.platform.base import RendezvousTimeoutError

__all__ = ["DEBUG_ENV", "USAGE_ERRORS", "one_line", "run_main"]

DEBUG_ENV = "HYPER_PARALLEL_DEBUG"

# Errors whose message is the whole story for the user (every one names the field or file).
USAGE_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    FileNotFoundError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
    NotImplementedError,
    ImportError,
    CheckpointCorruptError,
    RendezvousTimeoutError,  # a stale WORLD_SIZE, a rank that never started: the environment's error
)


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line: lines joined with "; " (with " " after a line ending in
    ":", whose list follows), list bullets ("- ") dropped."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = ""
    for line in lines:
        item = line[2:] if line.startswith(("- ", "* ")) else line
        text += ("" if not text else " " if text.endswith(":") else "; ") + item
    return text or type(exc).__name__


def _usage_cause(exc: BaseException) -> BaseException | None:
    """``exc`` itself when it is a usage error; else a usage error it wraps (InitStepError)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, USAGE_ERRORS):
            return seen
        if type(seen).__name__ != "InitStepError":
            return None
        seen = seen.__cause__
    return None


def _is_run_stop(exc: BaseException) -> bool:
    """A run stopped on purpose at a step (a non-finite loss or grad norm under ``check_nan_inf``)."""
    from hyper_parallel.trainer.init_helpers import NonFiniteError  # loaded by then: the trainer raised it

    return isinstance(exc, NonFiniteError)


def run_main(prog: str, main: Callable[[], int]) -> int:
    """``main()``, with usage errors and failed saves reported as one line (module docstring)."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        return main()
    try:
        return main()
    except CheckpointSaveError as exc:
        print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        if _is_run_stop(exc):
            print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
            return 1
        if _usage_cause(exc) is None:
            raise
        if isinstance(exc, CommandLineError):  # the flag and what it expects: no traceback to offer
            print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
            return 2
        print(f"{prog}: error: {one_line(exc)} (set {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return 2
