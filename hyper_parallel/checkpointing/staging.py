"""Staging and commit: how a save becomes a ``step_<N>/`` folder that is complete or absent.

Files are written into ``.partial.step_<N>/`` (``atomic_write``, ``file_written``: each file is
hashed as it lands, on a background worker), then ``commit_step_dir`` writes the manifest last and
renames the folder; ``StepCommitter`` runs that commit on one background thread of rank 0. The
fault hook lets tests stop a save at any named point.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from hyper_parallel.checkpointing.errors import CheckpointSaveError, UnwritableDirError
from hyper_parallel.checkpointing.layout import (
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    PARTIAL_PREFIX,
    partial_step_dir,
    replaced_step_dir,
)

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- fault points
# Tests install a hook to stop a process at a named point of a save (``before:<file>``,
# ``written:<file>``, ``after:<file>``, ``commit:...``); it is None in normal runs.
_fault_hook: Callable[[str], None] | None = None


def set_fault_hook(hook: Callable[[str], None] | None) -> None:
    global _fault_hook
    _fault_hook = hook


def fault_point(event: str) -> None:
    if _fault_hook is not None:
        _fault_hook(event)


# --------------------------------------------------------------------------- disk helpers
def fsync_path(path: str) -> None:
    """fsync a file or a folder; some filesystems refuse folders, which is harmless here."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def check_writable_dir(path: str, field: str) -> None:
    """``UnwritableDirError`` naming ``field`` unless ``path`` is (or can become) a writable folder.

    Creates nothing that stays: an existing folder gets a probe file written and removed; a
    missing one is checked at its nearest existing ancestor, which must be a writable folder.
    """
    if not isinstance(path, str) or not path:
        raise UnwritableDirError(f"{field}: expected a folder path, got {path!r}")
    target = os.path.abspath(path)
    probe_dir = target
    while not os.path.exists(probe_dir):
        if os.path.islink(probe_dir):  # a link to nothing: makedirs would fail on it, not create it
            link = f"a symbolic link to a missing target ({os.readlink(probe_dir)})"
            where = f"is {link}" if probe_dir == target else f"has {link} in its path ({probe_dir})"
            raise UnwritableDirError(f"{field}={path!r} cannot be created: it {where}; expected a folder")
        parent = os.path.dirname(probe_dir)
        if parent == probe_dir:
            break
        probe_dir = parent
    if not os.path.isdir(probe_dir):
        where = "is a file" if probe_dir == target else f"has a file in its path ({probe_dir})"
        raise UnwritableDirError(f"{field}={path!r} cannot be created: it {where}; expected a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=probe_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UnwritableDirError(
            f"{field}={path!r} cannot be written ({probe_dir}: {exc.strerror or exc}); expected a writable folder"
        ) from exc


def file_sha256(path: str) -> str:
    """The file's sha256, in one ``update`` over a read-only mmap: hashlib drops the GIL for the
    whole file, so the background thread hands the GIL back and forth once per file rather than
    twice per chunk (each hand-off can stall the training thread for a switch interval)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return digest.hexdigest()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            digest.update(view)
    return digest.hexdigest()


def _files_under(folder: str) -> list[str]:
    """Relative paths of every file under ``folder`` except the manifest and stray temp files."""
    out = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            if name.endswith(".tmp"):
                continue
            rel = os.path.relpath(os.path.join(root, name), folder)
            if rel != MANIFEST_FILE:
                out.append(rel.replace(os.sep, "/"))
    return sorted(out)


# --------------------------------------------------------------------------- background hashing
def _manifest_entry(path: str) -> dict[str, Any]:
    # No fsync here: every writer fsyncs its file (the atomic writers before their os.replace,
    # DCP through FileSystemWriter(sync_files=True), for shards and .metadata alike).
    return {"size": os.path.getsize(path), "sha256": file_sha256(path)}


def in_staged_folder(path: str) -> bool:
    """True for a path inside a ``.partial.*`` staging folder (any depth)."""
    return any(part.startswith(PARTIAL_PREFIX) for part in os.path.abspath(path).split(os.sep))


class _Hasher:
    """Hashes the files of one staged folder on the background thread, as the coordinator writes them.

    Only for async saves (``prepare_partial_dir(..., hash_while_writing=True)``): their commit runs
    at the next ``wait``, which blocks the training thread, so hashing the files written before it
    saves that time. ``hashlib`` and file reads release the GIL, so hashing a file overlaps with
    serialising the next one. Files it never saw (DCP shards, other ranks' files) are hashed at
    commit. A synchronous save has no hasher: its background commit hashes everything after the
    save returned, so that no hashing competes with the writes for the CPU (on a machine whose
    cores torch's intra-op threads already use, it slowed a save by the whole hashing time).
    """

    def __init__(self, folder: str) -> None:
        self.folder = os.path.abspath(folder)
        self._futures: dict[str, Future] = {}

    def add(self, path: str) -> None:
        rel = os.path.relpath(os.path.abspath(path), self.folder).replace(os.sep, "/")
        if rel not in self._futures and not rel.startswith(".."):
            self._futures[rel] = _worker().submit(_manifest_entry, path)

    def collect(self) -> dict[str, dict[str, Any]]:
        """Every entry; one whose hash has not started yet is left to ``write_manifest``."""
        return {rel: future.result() for rel, future in self._futures.items() if not future.cancel()}

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()


_pool: ThreadPoolExecutor | None = None


def _worker() -> ThreadPoolExecutor:
    """The one background thread of a process (hashes, then commits), started on first use.

    One thread, first in first out: a commit runs after every hash queued before it, and commits
    run in save order. At interpreter exit it finishes its queue (``concurrent.futures`` joins it),
    so a normal exit never drops a commit.
    """
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt-commit")
    return _pool


_hashers: dict[str, _Hasher] = {}
_hashers_lock = threading.Lock()


def _new_hasher(folder: str) -> _Hasher | None:
    return _Hasher(folder)


def file_written(path: str) -> None:
    """A save finished writing ``path`` (fsynced, final): hash it now if its folder is being staged."""
    if not _hashers:
        return
    target = os.path.abspath(path)
    with _hashers_lock:
        for folder, hasher in _hashers.items():
            if target.startswith(folder + os.sep):
                hasher.add(target)
                return


def atomic_write(path: str, writer: Callable[[str], None]) -> None:
    """Run ``writer(tmp_path)`` on a temporary file next to ``path``, then ``os.replace`` it.

    Both trainers write every checkpoint file through this. The temporary name is hidden and
    unique per process, so concurrent ranks never collide and a crash leaves at most a
    ``.<name>.*.tmp`` file, never a half-written ``path``.
    """
    directory, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    fault_point(f"before:{name}")
    try:
        writer(tmp)
        fsync_path(tmp)
        fault_point(f"written:{name}")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if not in_staged_folder(directory):  # a staged folder is fsynced once, at its commit
        fsync_path(directory)
    file_written(path)
    fault_point(f"after:{name}")


def atomic_write_json(obj: Any, path: str) -> None:
    """``obj`` as indented JSON with a trailing newline, written by :func:`atomic_write`."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2)
            fh.write("\n")

    atomic_write(path, write)


def dcp_files_written(folder: str) -> None:
    """``dcp.save`` into ``folder`` returned: every rank's shards and ``.metadata`` are final."""
    if not _hashers:
        return
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(folder)):
            if name.endswith((".distcp", ".metadata")):
                file_written(os.path.join(folder, name))


def discard_partial(partial: str) -> None:
    """Stop hashing for a staged folder whose save failed (its folder stays, and is reported)."""
    with _hashers_lock:
        hasher = _hashers.pop(os.path.abspath(partial), None)
    if hasher is not None:
        hasher.close()


def prepare_partial_dir(
    output_dir: str, step: int, *, coordinator: bool, hash_while_writing: bool = False
) -> str:
    """The staging folder of ``step``; the coordinator removes a leftover of a killed save first.

    Every rank calls it; the caller places a barrier between the coordinator's call and the
    other ranks' writes. ``hash_while_writing`` (async saves) hashes each file as it is written
    (:class:`_Hasher`); otherwise the commit hashes them all.
    """
    partial = partial_step_dir(output_dir, step)
    if coordinator:
        discard_partial(partial)
        if os.path.lexists(partial):
            logger.warning(f"Removing {partial}: left by a checkpoint save that did not finish")
            shutil.rmtree(partial, ignore_errors=False) if os.path.isdir(partial) else os.unlink(partial)
        os.makedirs(partial)
        hasher = _new_hasher(partial) if hash_while_writing else None
        if hasher is not None:
            with _hashers_lock:
                _hashers[hasher.folder] = hasher
    return partial


def write_manifest(
    folder: str,
    step: int,
    precomputed: dict[str, dict[str, Any]] | None = None,
    *,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Hash every file of ``folder`` (its writers fsynced them), then write ``manifest.json``
    atomically, last, and fsync the folder tree.

    ``precomputed`` entries (from an async save's hasher) are reused when the size still matches.
    """
    precomputed = precomputed or {}
    files = {}
    for rel in _files_under(folder):
        path = os.path.join(folder, rel)
        entry = precomputed.get(rel)
        if entry is None or entry["size"] != os.path.getsize(path):
            entry = _manifest_entry(path)
        files[rel] = entry
    manifest: dict[str, Any] = {"format": MANIFEST_FORMAT, "step": int(step), "files": files}
    if settings is not None:
        manifest["settings"] = settings
    fault_point(f"before:{MANIFEST_FILE}")
    tmp = os.path.join(folder, f".{MANIFEST_FILE}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    fault_point(f"written:{MANIFEST_FILE}")
    os.replace(tmp, os.path.join(folder, MANIFEST_FILE))
    # The folder entries, once for the whole tree (manifest included): writers inside a staged
    # folder skip their per-file folder fsync (``in_staged_folder``).
    for root, _dirs, _files in os.walk(folder):
        fsync_path(root)
    fault_point(f"after:{MANIFEST_FILE}")
    return manifest


def commit_step_dir(partial: str, final: str, step: int, settings: dict[str, Any] | None = None) -> None:
    """Manifest last, then rename ``partial`` to ``final``.

    An older ``final`` is first renamed to ``.replaced.step_<N>`` (which resume also accepts), so a
    complete step N is findable at every instant of a replacement; it is deleted once the new
    folder is in place (a deletion that fails is a warning naming it: the save is committed).
    ``settings`` (the run's resume-relevant settings) go into the manifest.
    """
    with _hashers_lock:
        hasher = _hashers.pop(os.path.abspath(partial), None)
    write_manifest(partial, step, hasher.collect() if hasher is not None else None, settings=settings)
    parent = os.path.dirname(os.path.abspath(final))
    aside = replaced_step_dir(final)
    if os.path.lexists(final):
        if os.path.lexists(aside):  # an older leftover: ``final`` is complete, so it can go
            shutil.rmtree(aside)
        fault_point("replace:begin")
        os.rename(final, aside)
        fsync_path(parent)
    fault_point("commit:rename")
    os.rename(partial, final)
    fsync_path(parent)
    fault_point("commit:done")
    if os.path.lexists(aside):
        # The new folder is committed: the data is safe whatever happens to the older copy.
        try:
            shutil.rmtree(aside)
            fsync_path(parent)
        except OSError as exc:
            logger.warning(
                f"Checkpoint {final} is committed, but the copy it replaced, {aside}, could not be "
                f"removed ({type(exc).__name__}: {exc.strerror or exc}); step {step} is safe in "
                f"{final}: remove {aside} yourself (a later run refuses this folder while it is there)"
            )
        else:
            fault_point("replace:done")


def drain_commits() -> None:
    """Wait until every commit queued in this process so far is done (failures are its owner's to
    report, at its ``join``)."""
    if _pool is not None:
        _pool.submit(lambda: None).result()


class StepCommitter:
    """One trainer's commit in flight: :func:`commit_step_dir` on the background thread (rank 0).

    ``start`` returns at once; ``join`` blocks until the commit is done and raises
    :class:`CheckpointSaveError` naming the folder if it failed. Barriers stay with the caller,
    on the training thread: one before ``start`` (every rank's files are on disk) and one after
    ``join`` returned True (the folder exists for every rank). Other ranks ``start`` too, with
    ``coordinator=False``: they only remember that a commit is in flight.
    """

    def __init__(self) -> None:
        self._pending: tuple[Future | None, str, int] | None = None

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def start(
        self,
        partial: str,
        final: str,
        step: int,
        *,
        coordinator: bool,
        settings: dict[str, Any] | None = None,
    ) -> None:
        if self._pending is not None:
            raise RuntimeError("a checkpoint commit is already in flight: join it first")
        future = _worker().submit(commit_step_dir, partial, final, step, settings) if coordinator else None
        self._pending = (future, final, step)

    def join(self) -> bool:
        """Wait for the commit in flight (if any); True when there was one."""
        if self._pending is None:
            return False
        future, final, step = self._pending
        self._pending = None
        if future is not None:
            try:
                future.result()
            except Exception as exc:  # any failure of a commit is a failed save
                raise CheckpointSaveError(final, step, exc) from exc
        return True


def _forget_background_work() -> None:
    """In a forked child: the parent's background thread does not exist here, so start afresh
    (a job queued to the inherited executor would never run, and its wait would hang)."""
    global _pool, _hashers_lock
    _pool = None
    _hashers_lock = threading.Lock()
    _hashers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_background_work)
