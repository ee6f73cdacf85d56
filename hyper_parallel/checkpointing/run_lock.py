"""One writer per run folder: an exclusive ``fcntl.flock`` on ``<output_dir>/.hyper_parallel.lock``.

Two runs saving into one ``output_dir`` overwrite and delete each other's checkpoints, so the
coordinator of a run (rank 0) takes this lock at setup time, before its first step. The lock file
records who holds it (host, pid, start time); a second run stops with one line naming that
holder. The kernel drops a ``flock`` when its process dies, so a killed run never blocks the next
one: its leftover file is taken over with a warning. A run that ends (``release``) or exits
normally removes the file, so a finished run folder holds only its checkpoints. A lock path that
is a symbolic link (or anything but a regular file) is refused, never followed: a run must not
write through it into another file.

The same leaf decides which checkpoints already in the folder a run may replace
(:func:`check_fresh_output_dir`, :func:`check_resume_output_dir`): none without being asked.

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
import stat
import threading
import time

from hyper_parallel.checkpointing.layout import MANIFEST_FILE, find_replaced_dirs, find_step_dirs

__all__ = [
    "LOCK_FILE",
    "ExistingCheckpointsError",
    "LockFileRefusedError",
    "RunFolderLockedError",
    "acquire_run_folder",
    "check_fresh_output_dir",
    "check_resume_output_dir",
    "existing_checkpoints",
    "release_run_folder",
]

logger = logging.getLogger(__name__)

LOCK_FILE = ".hyper_parallel.lock"


class RunFolderLockedError(ValueError):
    """Another live process holds the run folder's lock."""


class ExistingCheckpointsError(ValueError):
    """A run would replace or remove checkpoints already in its ``output_dir`` without being asked."""


class LockFileRefusedError(ValueError):
    """The lock path of a run folder is a symbolic link or not a regular file (never followed)."""


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
            fd = _open_lock_file(path, os.path.join(output_dir, LOCK_FILE), field)
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
                same = os.path.samestat(os.fstat(fd), os.lstat(path))
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


def _link_target(path: str) -> str:
    try:
        return f" (to {os.readlink(path)!r})"
    except OSError:
        return ""


def _open_lock_file(path: str, shown: str, field: str) -> int:
    """The lock file, opened (created if missing) without following a symbolic link.

    ``LockFileRefusedError`` naming ``shown`` (the path as the user wrote the folder) when it is a
    link (dangling or not) or anything but a regular file: nothing is written or removed there.
    """

    def refuse(what: str) -> LockFileRefusedError:
        return LockFileRefusedError(
            f"lock file {shown} {what}; a run never writes through it: remove it (it is not a "
            f"checkpoint) or pick another {field}"
        )

    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | nofollow | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise refuse(f"is a symbolic link{_link_target(path)}") from None
        if exc.errno == errno.EISDIR:
            raise refuse("is not a regular file (a folder)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise refuse("is not a regular file")
    if not nofollow and os.path.islink(path):  # no O_NOFOLLOW here: nothing was written yet
        os.close(fd)
        raise refuse(f"is a symbolic link{_link_target(path)}")
    return fd


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


# --------------------------------------------------------------------------- checkpoints already there
def _holds_something(folder: str) -> bool:
    """True unless ``folder`` is empty (an unreadable folder counts: it is never replaced unasked)."""
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except OSError:
        return True


def existing_checkpoints(
    output_dir: str, *, after: int = -1, besides: str | None = None
) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """The checkpoints of ``output_dir`` a run could replace or remove, newest first:
    ``(step_<N>/ folders, .replaced.step_<N>/ folders)`` of a step above ``after``.

    Every such folder that holds anything counts, with or without a manifest (a checkpoint written
    before manifests is still someone's checkpoint); ``.partial.*`` folders (saves that did not
    finish) do not. ``besides`` (the folder being resumed) is left out.
    """
    skip = os.path.realpath(besides) if besides else None

    def keep(found: list[tuple[int, str]]) -> list[tuple[int, str]]:
        return [
            (step, folder)
            for step, folder in found
            if step > after and os.path.realpath(folder) != skip and _holds_something(folder)
        ]

    return keep(find_step_dirs(output_dir)), keep(find_replaced_dirs(output_dir))


def _has_manifest(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, MANIFEST_FILE))


def _named(found: list[tuple[int, str]], limit: int = 4) -> str:
    names = [folder + ("" if _has_manifest(folder) else " (without a manifest)") for _s, folder in found]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def check_fresh_output_dir(
    output_dir: str, *, field: str, load_field: str, overwrite_field: str, overwrite: bool
) -> None:
    """Before a run without ``load_path`` saves into ``output_dir``: ``ExistingCheckpointsError``
    (one line: the folder, the ways out) when it holds checkpoints of an earlier run.

    ``overwrite`` covers exactly the ``step_<N>/`` folders this run saves again (with or without
    a manifest; the others stay as they are). A ``.replaced.step_<N>/`` folder (the older copy an
    interrupted replacement left, possibly the only one of step N) is never removed by a run,
    ``overwrite`` included: it is refused until it is resumed or moved away.
    """
    steps, replaced = existing_checkpoints(output_dir)
    if replaced:
        raise ExistingCheckpointsError(
            f"{field}={output_dir!r} holds {_named(replaced)}, a complete copy of a checkpoint left "
            f"by an interrupted replacement, which a run never removes ({overwrite_field}=true "
            f"included); resume it with {load_field}={output_dir!r}, pick another {field}, or "
            "move it out of the folder yourself"
        )
    if not steps:
        return
    _step, newest = steps[0]
    if not overwrite:
        note = "" if _has_manifest(newest) else ", without a manifest"
        raise ExistingCheckpointsError(
            f"{field}={output_dir!r} already holds checkpoints (newest: {newest}{note}); "
            f"resume it with {load_field}={output_dir!r}, pick another {field}, or set "
            f"{overwrite_field}=true to replace the step_<N> folders this run saves again"
        )
    logger.warning(
        f"{overwrite_field}=true: this run replaces the checkpoints of {output_dir} that it saves "
        f"again (the folder holds {_named(steps)}); the others stay"
    )


def check_resume_output_dir(
    output_dir: str,
    step: int,
    *,
    resumed: str,
    field: str,
    load_field: str,
    overwrite_field: str,
    overwrite: bool,
) -> None:
    """Before a run resumed at ``step`` (from the folder ``resumed``) saves into ``output_dir``:
    ``ExistingCheckpointsError`` when that folder holds checkpoints of later steps.

    Its saves would replace them (or leave a folder mixing two histories, where a run-folder
    resume picks the wrong one as the newest). ``overwrite`` lets the run replace later
    ``step_<N>/`` folders; a later ``.replaced.step_<N>/`` is refused even then (as for a fresh run).
    """
    steps, replaced = existing_checkpoints(output_dir, after=step, besides=resumed)
    if replaced:
        raise ExistingCheckpointsError(
            f"{load_field} resumes step {step} ({resumed}), but {field}={output_dir!r} holds "
            f"{_named(replaced)}, a complete copy of a later checkpoint left by an interrupted "
            f"replacement, which a run never removes ({overwrite_field}=true included); resume the "
            f"newest with {load_field}={output_dir!r}, pick another {field}, or move it out of the "
            "folder yourself"
        )
    if not steps:
        return
    if not overwrite:
        raise ExistingCheckpointsError(
            f"{load_field} resumes step {step} ({resumed}), but {field}={output_dir!r} holds later "
            f"checkpoints that this run's saves would replace: {_named(steps)}; resume the newest "
            f"with {load_field}={output_dir!r}, pick another {field}, or set {overwrite_field}=true "
            "to replace them"
        )
    logger.warning(
        f"{overwrite_field}=true: resuming step {step}, this run replaces the later checkpoints of "
        f"{output_dir} that it saves again ({_named(steps)}); the others stay"
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
