"""One writer per run folder: an exclusive ``fcntl.flock`` on ``<output_dir>/.hyper_parallel.lock``.

Two runs saving into one ``output_dir`` overwrite and delete each other's checkpoints, so the
coordinator of a run (rank 0) takes this lock at setup time, before its first step. The lock file
records who holds it (host, pid, start time); a second run stops with one line naming that
holder. The kernel drops a ``flock`` when its process dies, so a killed run never blocks the next
one: its leftover file is taken over with a warning. A run that ends (``release``) or exits
normally removes the file, so a finished run folder holds only its checkpoints.

Within one process the lock is re-entrant (a trainer that resumes the folder of an earlier
trainer of the same process, as tests and the parity harness do): it is held until every taker
released it. A forked child does not hold its parent's locks.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import threading
import time

__all__ = [
    "LOCK_FILE",
    "ExistingCheckpointsError",
    "RunFolderLockedError",
    "acquire_run_folder",
    "check_no_finished_checkpoints",
    "release_run_folder",
]

logger = logging.getLogger(__name__)

LOCK_FILE = ".hyper_parallel.lock"


class RunFolderLockedError(ValueError):
    """Another live process holds the run folder's lock."""


class ExistingCheckpointsError(ValueError):
    """A fresh run (no ``load_path``) would replace finished checkpoints of an earlier run."""


# realpath of the folder -> [fd, how many takers of this process hold it]
# run folder -> [lock file descriptor, holds, whether acquiring created the folder]
_held: dict[str, list[int]] = {}
_held_lock = threading.Lock()


def _holder_text(raw: str) -> str:
    try:
        info = json.loads(raw)
        return f"host {info['host']}, pid {info['pid']}, started {info['started']}"
    except (ValueError, KeyError, TypeError):
        return "an unknown process (unreadable lock file)"


def _read(fd: int) -> str:
    with contextlib.suppress(OSError):
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 4096).decode("utf-8", "replace")
    return ""


def acquire_run_folder(output_dir: str, *, field: str) -> str:
    """Take the run folder's lock for this process (created if missing); returns its key.

    ``RunFolderLockedError`` (one line naming the holder) when another process holds it.
    """
    created = not os.path.isdir(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    key = os.path.realpath(output_dir)
    path = os.path.join(key, LOCK_FILE)
    with _held_lock:
        if key in _held:
            _held[key][1] += 1
            return key
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = _read(fd)
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                raise RunFolderLockedError(
                    f"{field}={output_dir!r} is in use by another run ({_holder_text(holder)}); "
                    "two runs writing one folder destroy each other's checkpoints: wait for it to "
                    "end or pick another folder"
                ) from None
            # A releasing holder unlinks the file before unlocking: retry on the new file.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = _read(fd).strip()
        if previous:
            logger.warning(
                f"Taking over the lock of {output_dir}: left by a run that is gone ({_holder_text(previous)})"
            )
        info = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (json.dumps(info) + "\n").encode())
        with contextlib.suppress(OSError):
            os.fsync(fd)
        _held[key] = [fd, 1, int(created)]
    return key


def release_run_folder(key: str | None) -> None:
    """Give back one hold on the lock; the last one removes the lock file and unlocks it."""
    if key is None:
        return
    with _held_lock:
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _held[key]
        _unlock(key, entry[0], created=bool(entry[2]))


def _unlock(key: str, fd: int, *, created: bool = False) -> None:
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(key, LOCK_FILE))
    with contextlib.suppress(OSError):
        os.close(fd)
    if created:  # a folder the lock made and nothing else used is not left behind
        with contextlib.suppress(OSError):
            os.rmdir(key)


def check_no_finished_checkpoints(output_dir: str, *, field: str, overwrite_field: str) -> None:
    """``ExistingCheckpointsError`` when ``output_dir`` holds a complete ``step_<N>/`` (a manifest).

    For a run without ``load_path``: its saves would silently replace those checkpoints.
    """
    from hyper_parallel.checkpointing import MANIFEST_FILE, find_step_dirs

    finished = [
        (step, folder)
        for step, folder in find_step_dirs(output_dir)
        if os.path.isfile(os.path.join(folder, MANIFEST_FILE))
    ]
    if finished:
        step, folder = finished[0]
        raise ExistingCheckpointsError(
            f"{field}={output_dir!r} already holds complete checkpoints (newest: {folder}); "
            f"resume it with load_path={output_dir!r}, pick another {field}, or set "
            f"{overwrite_field}=true to replace them"
        )


@atexit.register
def _release_all() -> None:
    with _held_lock:
        for key, (fd, _count, created) in list(_held.items()):
            _unlock(key, fd, created=bool(created))
        _held.clear()


def _forget_in_child() -> None:
    """A forked child shares its parent's lock; it neither holds nor releases it."""
    global _held_lock
    _held_lock = threading.Lock()
    for fd, _count, _created in _held.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
