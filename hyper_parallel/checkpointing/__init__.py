"""Checkpoint integrity: leaf helpers that the legacy callbacks and ``CheckpointManager`` both use.

What a checkpoint holds and in which order it is written and restored is each trainer's own code
(``trainer/callbacks/checkpoint.py`` and ``components/checkpoint.py``). What is shared here is the
part that must be identical for a folder written by one to be trusted by the other:

- **Staging.** A save writes into ``<output_dir>/.partial.step_<N>/`` and, once every file is on
  disk and fsynced, :func:`commit_step_dir` writes ``manifest.json`` (every file's relative path,
  size and sha256) as the last file and renames the folder to ``step_<N>/``. A killed save leaves
  only a ``.partial.*`` folder, which is reported and never loaded.
- **Background commit.** :class:`StepCommitter` runs that commit on one background thread of
  rank 0 (``ckpt-commit``), so a synchronous save returns once its files are written, and the
  hashing, manifest, fsyncs and rename overlap with training. The trainers join it (``wait``)
  before the next save, before a load and at train end; a failed commit raises
  :class:`CheckpointSaveError` there, naming the folder.
- **Verification.** :func:`resolve_checkpoint` accepts a ``step_<N>/`` folder whose manifest
  matches its files, or a run folder (the ``output_dir``), where it takes the newest complete
  ``step_<N>/``. Anything else is a :class:`CheckpointCorruptError` naming the folder and the
  first missing or mismatched file.
- **Checkpoints written before manifests existed** (no ``manifest.json``) still load when every
  file the resuming trainer reads is present and the DCP shards cover their metadata; one
  warning per folder says that it was loaded without an integrity check. Otherwise they are
  refused like a damaged folder.
- **Errors**: :class:`CheckpointCorruptError` (and :class:`UnsafeCheckpointError` for a crafted
  pickle), :class:`CheckpointSaveError`, :class:`CheckpointMismatchError`,
  :class:`UnwritableDirError`.

Pure Python (``os``, ``hashlib``, ``json``): the framework is reached through the callables the
trainers pass in (``dcp_check``) and the platform.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = [
    "MANIFEST_FILE",
    "MANIFEST_FORMAT",
    "PARTIAL_PREFIX",
    "CheckpointCorruptError",
    "CheckpointNotFoundError",
    "CheckpointSaveError",
    "CheckpointMismatchError",
    "StepCommitter",
    "UnsafeCheckpointError",
    "UnwritableDirError",
    "check_writable_dir",
    "commit_step_dir",
    "discard_partial",
    "fault_point",
    "file_written",
    "in_staged_folder",
    "find_partials",
    "find_step_dirs",
    "partial_step_dir",
    "prepare_partial_dir",
    "resolve_checkpoint",
    "set_fault_hook",
    "verify_manifest",
    "write_manifest",
]

logger = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = "hyper_parallel.checkpoint/1"
PARTIAL_PREFIX = ".partial."
_STEP_RE = re.compile(r"^step_(\d+)$")


# --------------------------------------------------------------------------- errors
class CheckpointCorruptError(RuntimeError):
    """A checkpoint file is missing, truncated, altered or unreadable; ``path`` names it.

    ``folder`` is the checkpoint folder it belongs to. Both trainers raise this one type, with
    this one message form, for the same damage.
    """

    def __init__(self, path: str, cause: object, *, problem: str = "is truncated or corrupt", folder=None):
        self.path = path
        self.folder = folder if folder is not None else os.path.dirname(path)
        super().__init__(f"checkpoint file {path} {problem}: {cause}")


class UnsafeCheckpointError(CheckpointCorruptError):
    """A checkpoint pickle references a type a checkpoint never holds; nothing from it was run."""


class CheckpointNotFoundError(CheckpointCorruptError):
    """A run folder given as ``load_path`` holds no complete ``step_<N>/`` checkpoint."""

    def __init__(self, folder: str, cause: object) -> None:
        self.path = self.folder = folder
        RuntimeError.__init__(
            self, f"checkpoint folder {folder} holds no complete step_<N> checkpoint: {cause}"
        )


class CheckpointSaveError(RuntimeError):
    """Writing a checkpoint failed; the run stops (``path`` is the folder being written)."""

    def __init__(self, path: str, step: int, cause: BaseException) -> None:
        super().__init__(
            f"checkpoint save to {path} failed at step {step}: {type(cause).__name__}: {cause}; "
            "the run stops so that no later step trains without a checkpoint"
        )
        self.path = path
        self.step = step


class CheckpointMismatchError(ValueError):
    """The checkpoint was written by another model (a tensor of another shape, a missing key)."""


class UnwritableDirError(ValueError):
    """An output folder cannot be created or written."""


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


def _sha256(path: str) -> str:
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
    return {"size": os.path.getsize(path), "sha256": _sha256(path)}


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


# --------------------------------------------------------------------------- staging
def partial_step_dir(output_dir: str, step: int) -> str:
    return os.path.join(output_dir, f"{PARTIAL_PREFIX}step_{step}")


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
    folder: str, step: int, precomputed: dict[str, dict[str, Any]] | None = None
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
    manifest = {"format": MANIFEST_FORMAT, "step": int(step), "files": files}
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


def commit_step_dir(partial: str, final: str, step: int) -> None:
    """Manifest last, then rename ``partial`` to ``final`` (an older ``final`` is replaced)."""
    with _hashers_lock:
        hasher = _hashers.pop(os.path.abspath(partial), None)
    write_manifest(partial, step, hasher.collect() if hasher is not None else None)
    parent = os.path.dirname(os.path.abspath(final))
    aside = None
    if os.path.lexists(final):
        aside = os.path.join(
            parent, f"{PARTIAL_PREFIX}replaced.{os.path.basename(final)}.{uuid.uuid4().hex[:8]}"
        )
        os.rename(final, aside)
    fault_point("commit:rename")
    os.rename(partial, final)
    fsync_path(parent)
    fault_point("commit:done")
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def _drain() -> None:
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

    def start(self, partial: str, final: str, step: int, *, coordinator: bool) -> None:
        if self._pending is not None:
            raise RuntimeError("a checkpoint commit is already in flight: join it first")
        future = _worker().submit(commit_step_dir, partial, final, step) if coordinator else None
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


# --------------------------------------------------------------------------- verification
def _read_manifest(folder: str) -> dict[str, Any]:
    path = os.path.join(folder, MANIFEST_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError) as exc:
        raise CheckpointCorruptError(path, f"{type(exc).__name__}: {exc}", folder=folder) from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != MANIFEST_FORMAT
        or not isinstance(files, dict)
        or not all(
            isinstance(v, dict) and isinstance(v.get("size"), int) and isinstance(v.get("sha256"), str)
            for v in files.values()
        )
    ):
        raise CheckpointCorruptError(
            path, f"not a {MANIFEST_FORMAT} manifest (expected format, files: {{name: {{size, sha256}}}})"
        )
    return manifest


def verify_manifest(folder: str) -> dict[str, Any]:
    """The manifest of ``folder`` after checking every listed file's size and sha256."""
    manifest = _read_manifest(folder)
    for rel in sorted(manifest["files"]):
        entry = manifest["files"][rel]
        path = os.path.join(folder, *rel.split("/"))
        if os.path.isabs(rel) or ".." in rel.split("/"):
            raise CheckpointCorruptError(
                os.path.join(folder, MANIFEST_FILE), f"file name {rel!r} leaves the folder"
            )
        if not os.path.isfile(path):
            raise CheckpointCorruptError(
                path,
                f"listed in {MANIFEST_FILE} of checkpoint folder {folder}",
                problem="is missing",
                folder=folder,
            )
        size = os.path.getsize(path)
        if size != entry["size"]:
            raise CheckpointCorruptError(
                path,
                f"{size} bytes, {MANIFEST_FILE} of checkpoint folder {folder} records {entry['size']}",
                folder=folder,
            )
        if _sha256(path) != entry["sha256"]:
            raise CheckpointCorruptError(
                path, f"its sha256 differs from {MANIFEST_FILE} of checkpoint folder {folder}", folder=folder
            )
    return manifest


_warned_unverified: set[str] = set()


def _check_without_manifest(
    folder: str, required: Sequence[str], dcp_check: Callable[[str], tuple[str, str] | None] | None
) -> None:
    """The policy for folders written before manifests: complete, or refused; one warning each."""
    manifest = os.path.join(folder, MANIFEST_FILE)
    for name in required:
        if not os.path.isfile(os.path.join(folder, name)):
            raise CheckpointCorruptError(
                manifest,
                f"checkpoint folder {folder} is incomplete ({name} is missing too): a save that did not "
                "finish, or not a checkpoint folder",
                problem="is missing",
                folder=folder,
            )
    if dcp_check is not None:
        damaged = dcp_check(folder)
        if damaged is not None:
            raise CheckpointCorruptError(damaged[0], damaged[1], folder=folder)
    key = os.path.abspath(folder)
    if key not in _warned_unverified:
        _warned_unverified.add(key)
        logger.warning(
            f"Checkpoint folder {folder} has no {MANIFEST_FILE} (written before checkpoints had "
            "manifests): its files are all present, so it is loaded without an integrity check; "
            "save again to get a manifest"
        )


def find_step_dirs(root: str) -> list[tuple[int, str]]:
    """``(step, path)`` of the ``step_<N>/`` folders directly under ``root``, newest first."""
    found = []
    with contextlib.suppress(OSError):
        for name in os.listdir(root):
            match = _STEP_RE.match(name)
            if match and os.path.isdir(os.path.join(root, name)):
                found.append((int(match.group(1)), os.path.join(root, name)))
    return sorted(found, reverse=True)


def find_partials(root: str) -> list[str]:
    with contextlib.suppress(OSError):
        return sorted(os.path.join(root, n) for n in os.listdir(root) if n.startswith(PARTIAL_PREFIX))
    return []


def _is_run_root(folder: str) -> bool:
    names = set(os.listdir(folder))
    if MANIFEST_FILE in names or any(n.endswith(".metadata") for n in names):
        return False
    return any(_STEP_RE.match(n) or n.startswith(PARTIAL_PREFIX) for n in names)


def _validate(folder: str, required: Sequence[str], dcp_check) -> None:
    if os.path.isfile(os.path.join(folder, MANIFEST_FILE)):
        verify_manifest(folder)
    else:
        _check_without_manifest(folder, required, dcp_check)


def resolve_checkpoint(
    path: str,
    *,
    field: str,
    required: Iterable[str] = (),
    dcp_check: Callable[[str], tuple[str, str] | None] | None = None,
) -> str:
    """The verified checkpoint folder that ``path`` (``field`` in the config) designates.

    ``path`` is a ``step_<N>/`` folder, or a run folder holding them (then the newest complete
    one, logged). ``required`` are the files the resuming trainer reads, checked only for folders
    without a manifest; ``dcp_check(folder)`` returns ``(file, reason)`` for damaged DCP shards.
    """
    required = tuple(required)
    _drain()  # a folder this process is still committing (another trainer's save) may be the one
    if not os.path.isdir(path):
        raise ValueError(
            f"{field}={path!r} is not an existing directory; expected a step_<N> checkpoint folder "
            "or the run folder (output_dir) that holds them"
        )
    for partial in find_partials(path):
        logger.warning(f"Ignoring {partial}: a checkpoint save that did not finish (never loaded)")
    if not _is_run_root(path):
        _validate(path, required, dcp_check)
        return path
    rejected = []
    for _step, folder in find_step_dirs(path):
        try:
            _validate(folder, required, dcp_check)
        except CheckpointCorruptError as exc:
            logger.warning(f"Skipping {folder}: {exc}")
            rejected.append(f"{os.path.basename(folder)}: {exc}")
            continue
        logger.info(f"{field}={path} is a run folder: resuming from its newest complete checkpoint {folder}")
        return folder
    raise CheckpointNotFoundError(
        path, "; ".join(rejected) if rejected else "only checkpoint saves that did not finish (.partial.*)"
    )


def _forget_background_work() -> None:
    """In a forked child: the parent's background thread does not exist here, so start afresh
    (a job queued to the inherited executor would never run, and its wait would hang)."""
    global _pool, _hashers_lock
    _pool = None
    _hashers_lock = threading.Lock()
    _hashers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_background_work)
