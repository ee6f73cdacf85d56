"""Quiet command lines: known third-party notices are filtered unless ``--verbose`` is given.

The entry points (``python -m hyper_parallel.train``, ``scripts/train_lm.py``, ``python -m
parity``) call ``split_verbose(argv)`` before their parser (so ``--verbose`` works with the tyro
CLI and the legacy YAML CLI alike, anywhere on the line) and then ``quiet_third_party(verbose)``.

Each notice is filtered by category, message and module (``THIRD_PARTY_WARNINGS``) or by logger
and message (``THIRD_PARTY_LOG_RECORDS``); nothing else is touched, so a new or unexpected warning
still shows. Every one of them is a notice about the library's own future or internals, not about
the run: the values trained are the same with or without them.

Libraries that print from C++ or draw bars are quieted through the environment they read
(``QUIET_ENV``: datasets' progress bars, kineto's trace lines, MindSpore's log below errors); a
value the user set is left alone. :func:`say_once_per_run` makes the warnings of a multi-process
run (the parity harness's forked workers) print once per run instead of once per process.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "PROGRESS_ENV",
    "QUIET_ENV",
    "THIRD_PARTY_LOG_RECORDS",
    "THIRD_PARTY_WARNINGS",
    "VERBOSE_FLAG",
    "progress_bars_off",
    "quiet",
    "quiet_third_party",
    "say_once_per_run",
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
    # torch.profiler.schedule with warmup=0 (a setting the user chose; attributed to the caller).
    (UserWarning, r"Profiler won't be using warmup", r"(hyper_parallel|torch)\."),
    # DCP save/load without a process group (the harness reads and writes checkpoints in-process).
    (
        UserWarning,
        r"torch\.distributed is disabled, unavailable or uninitialized, assuming the intent is to "
        r"(save|load) in a single process",
        r"torch\.distributed\.checkpoint\.",
    ),
)

# Read by the library when it starts (datasets at import, MindSpore at its first log line, kineto at
# each profiler start): set when quiet, unless the user set the variable.
QUIET_ENV: dict[str, str] = {
    # datasets' Tokenizing / Filter / Map bars.
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    # kineto's USDT and STAGE lines at every profiler start and stop (6: above its highest level).
    "KINETO_LOG_LEVEL": "6",
    # MindSpore's C++ and Python log: errors only (3), no [WARNING] or [INFO] lines.
    "GLOG_v": "3",
}

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
_env_set: dict[str, str] = {}  # the QUIET_ENV variables this module set (and so may unset)
# Names the quiet settings set, passed to child processes: a child run with --verbose undoes them.
_SET_ENV = "HYPER_PARALLEL_QUIET_SET"
_verbose = False
_quiet = False  # quiet_third_party(verbose=False) was called in this process (or the one that forked it)


def quiet_third_party(verbose: bool = False) -> None:
    """Filter the known third-party notices (module docstring); ``verbose``: leave them all on.

    Meant for an entry point, once per process; calling it again does not stack the log filters.
    """
    global _verbose, _quiet
    _verbose = verbose
    _quiet = not verbose
    for name, flt in list(_installed.items()):
        logging.getLogger(name).removeFilter(flt)
        del _installed[name]
    # Ours to undo: what this process set, and what a quiet parent set for it (named in _SET_ENV).
    inherited = [n for n in os.environ.get(_SET_ENV, "").split(",") if n in QUIET_ENV]
    for name, value in [*_env_set.items(), *((n, QUIET_ENV[n]) for n in inherited)]:
        if os.environ.get(name) == value:
            os.environ.pop(name)
    _env_set.clear()
    os.environ.pop(_SET_ENV, None)
    if verbose:
        return
    for name, value in QUIET_ENV.items():
        if name not in os.environ:
            os.environ[name] = value
            _env_set[name] = value
    if _env_set:
        os.environ[_SET_ENV] = ",".join(sorted(_env_set))
    datasets = sys.modules.get("datasets")
    if datasets is not None and hasattr(datasets, "disable_progress_bars"):
        datasets.disable_progress_bars()  # imported before: the variable was read already
    for category, message, module in THIRD_PARTY_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)
    by_logger: dict[str, list[str]] = {}
    for name, message in THIRD_PARTY_LOG_RECORDS:
        by_logger.setdefault(name, []).append(message)
    for name, patterns in by_logger.items():
        flt = _DropMessages(patterns)
        logging.getLogger(name).addFilter(flt)
        _installed[name] = flt


def quiet() -> bool:
    """Whether an entry point asked for a quiet command line (``quiet_third_party`` without
    ``--verbose``); False in a process where no entry point did (pytest, a library user)."""
    return _quiet


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


class _OncePerRun(logging.Filter):
    """Lets a warning through the first time any process of the run says it: the first to create
    ``<folder>/<hash of logger, level and message>`` prints it (``O_EXCL``: one creator wins)."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = f"{record.name}\0{record.levelno}\0{record.getMessage()}".encode()
        try:
            fd = os.open(self.folder / hashlib.sha1(key).hexdigest(), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        except OSError:
            return True  # no folder: saying it twice beats saying nothing
        os.close(fd)
        return True


_once_filter: _OncePerRun | None = None


def say_once_per_run(folder: Path | None) -> None:
    """Each warning logged through the root logger prints once, in whichever process of the run
    (this one or the children it forks) says it first; ``folder`` is shared by them and lives as
    long as the run. ``None`` undoes it. Nothing changes under ``--verbose``.

    The root logger gets a stderr handler of its own when it has none (the last-resort handler
    that prints its warnings otherwise takes no filter).
    """
    global _once_filter
    root = logging.getLogger()
    if _once_filter is not None:
        for handler in root.handlers:
            handler.removeFilter(_once_filter)
        _once_filter = None
    if folder is None or _verbose:
        return
    folder.mkdir(parents=True, exist_ok=True)
    _once_filter = _OncePerRun(folder)
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setLevel(logging.WARNING)
        # The logger's name says whose warning it is (the last-resort handler prints the message only).
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    for handler in root.handlers:
        if not type(handler).__module__.startswith("_pytest"):  # pytest's capture keeps every record
            handler.addFilter(_once_filter)
