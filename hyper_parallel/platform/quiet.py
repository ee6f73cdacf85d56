"""Quiet command lines: known third-party notices are filtered unless ``--verbose`` is given.

The entry points (``python -m hyper_parallel.train``, ``scripts/train_lm.py``, ``python -m
parity``) call ``split_verbose(argv)`` before their parser (so ``--verbose`` works with the tyro
CLI and the legacy YAML CLI alike, anywhere on the line) and then ``quiet_third_party(verbose)``.

Each notice is filtered by category, message and module (``THIRD_PARTY_WARNINGS``) or by logger
and message (``THIRD_PARTY_LOG_RECORDS``); nothing else is touched, so a new or unexpected warning
still shows. Every one of them is a notice about the library's own future or internals, not about
the run: the values trained are the same with or without them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import warnings
from collections.abc import Iterator, Sequence

__all__ = [
    "PROGRESS_ENV",
    "THIRD_PARTY_LOG_RECORDS",
    "THIRD_PARTY_WARNINGS",
    "VERBOSE_FLAG",
    "progress_bars_off",
    "quiet_third_party",
    "split_verbose",
]

VERBOSE_FLAG = "--verbose"
# Read by the legacy ProgressCallback when training begins: "0" shows no bar.
PROGRESS_ENV = "HYPER_PARALLEL_PROGRESS"

# (category, message regex matched at the start, module regex matched at the start)
THIRD_PARTY_WARNINGS: tuple[tuple[type[Warning], str, str], ...] = (
    # torchdata's StatefulDataLoader calls a deprecated torch API on every construction.
    (UserWarning, r"'set_vital' is deprecated", r"torchdata\."),
    # DeviceMesh["dp"] on a flattened dim (how both trainers get the data-parallel group).
    (UserWarning, r"Slicing a flattened dim from root mesh will be deprecated", r"torch\.distributed\."),
    # DCP save/load without a process group (the harness reads and writes checkpoints in-process).
    (
        UserWarning,
        r"torch\.distributed is disabled, unavailable or uninitialized, assuming the intent is to "
        r"(save|load) in a single process",
        r"torch\.distributed\.checkpoint\.",
    ),
)

# (logger name, message regex matched at the start)
THIRD_PARTY_LOG_RECORDS: tuple[tuple[str, str], ...] = (
    # A DeviceMesh copied (e.g. deep-copied with a model) in a process whose groups are gone.
    (
        "torch.distributed.device_mesh",
        r"It seems like pickling/unpickling of the DeviceMesh occurred before the PGs were created",
    ),
)


def split_verbose(argv: Sequence[str]) -> tuple[list[str], bool]:
    """``argv`` without ``--verbose`` (anywhere before a ``--``), and whether it was there."""
    args = list(argv)
    end = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:end] if a != VERBOSE_FLAG] + args[end:]
    return kept, len(kept) != len(args)


class _DropMessages(logging.Filter):
    """Drops the records whose message starts with one of ``patterns``."""

    def __init__(self, patterns: Sequence[str]) -> None:
        super().__init__()
        self.patterns = [re.compile(p) for p in patterns]

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(p.match(message) for p in self.patterns)


_installed: dict[str, _DropMessages] = {}


def quiet_third_party(verbose: bool = False) -> None:
    """Filter the known third-party notices (module docstring); ``verbose``: leave them all on.

    Meant for an entry point, once per process; calling it again does not stack the log filters.
    """
    for name, flt in list(_installed.items()):
        logging.getLogger(name).removeFilter(flt)
        del _installed[name]
    if verbose:
        return
    for category, message, module in THIRD_PARTY_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)
    by_logger: dict[str, list[str]] = {}
    for name, message in THIRD_PARTY_LOG_RECORDS:
        by_logger.setdefault(name, []).append(message)
    for name, patterns in by_logger.items():
        flt = _DropMessages(patterns)
        logging.getLogger(name).addFilter(flt)
        _installed[name] = flt


@contextlib.contextmanager
def progress_bars_off(off: bool = True) -> Iterator[None]:
    """While inside, the legacy trainer shows no progress bar (``HYPER_PARALLEL_PROGRESS=0``).

    Scoped: the variable is put back on exit, and a value the user set is left alone. (tqdm's own
    ``TQDM_DISABLE`` is read once, when tqdm is imported, so it cannot be scoped.)
    """
    if not off or PROGRESS_ENV in os.environ:
        yield
        return
    os.environ[PROGRESS_ENV] = "0"
    try:
        yield
    finally:
        os.environ.pop(PROGRESS_ENV, None)
