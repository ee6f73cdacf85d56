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
- **Nothing unverified.** A manifest must list every file a resume reads (an empty or partial
  list is refused). A folder without a manifest (written before manifests, or not a checkpoint)
  and a ``.partial.*`` folder are refused unless ``allow_unverified``, which loads them with one
  warning naming what was not verified. A file read as initial weights from inside a checkpoint
  folder (a ``step_<N>/hf_ckpt/`` export given as ``weights_path``) is checked against that
  folder's manifest first (:func:`verify_files_in_checkpoint`).
- **Replacement.** A new save of an existing step renames the old folder to
  ``.replaced.step_<N>/`` (complete, found by resume) before the new one takes its name, and
  deletes it after (a failure to delete it is a warning: the new folder is committed). Which
  existing checkpoints a run may replace at all is decided before its first step
  (:func:`.run_lock.check_fresh_output_dir`, :func:`.run_lock.check_resume_output_dir`).
- **One writer** (:mod:`.run_lock`), **resume settings** (:mod:`.resume_settings`) and the
  **initial-weights fit** (:mod:`.weights_fit`) are the other shared leaves.
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
    "atomic_write",
    "atomic_write_json",
    "MANIFEST_FILE",
    "MANIFEST_FORMAT",
    "PARTIAL_PREFIX",
    "REPLACED_PREFIX",
    "WeightsLoadError",
    "load_error",
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
    "find_replaced_dirs",
    "partial_step_dir",
    "prepare_partial_dir",
    "resolve_checkpoint",
    "set_fault_hook",
    "verify_files_in_checkpoint",
    "verify_manifest",
    "write_manifest",
]

logger = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = "hyper_parallel.checkpoint/1"
PARTIAL_PREFIX = ".partial."
# An older step_<N>/ being replaced by a new save of the same step: complete and verifiable, and
# found by resume until the new folder is in place (commit_step_dir).
REPLACED_PREFIX = ".replaced."
_STEP_RE = re.compile(r"^step_(\d+)$")
_REPLACED_RE = re.compile(r"^\.replaced\.step_(\d+)$")


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
        what = _save_failure(path, cause)
        lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
        if "Traceback (most recent call last)" in str(cause):  # DCP's per-rank report: its last line
            lines = lines[-1:]
        detail = " ".join(" ".join(lines).split()) or type(cause).__name__
        if len(detail) > 300:
            detail = detail[:300] + "..."
        reason = f"{what} ({type(cause).__name__}: {detail})" if what else f"{type(cause).__name__}: {detail}"
        super().__init__(
            f"checkpoint save to {path} failed at step {step}: {reason}; "
            "the run stops so that no later step trains without a checkpoint"
        )
        self.path = path
        self.step = step


def _save_failure(path: str, cause: BaseException) -> str | None:
    """ "no space left on device" / "file size limit" when that is why a save failed, else None.

    torch's zip writer and safetensors report a full disk without an errno ("enforce fail at
    inline_container.cc", "IoError ... StorageFull"), so their text and the folder's free space
    are checked as well as the errno of every exception in the chain.
    """
    import errno

    seen: BaseException | None = cause
    texts = []
    while seen is not None:
        code = getattr(seen, "errno", None)
        if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
            return "no space left on device"
        if code == errno.EFBIG:
            return "file size limit (RLIMIT_FSIZE) exceeded"
        texts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    text = " ".join(texts)
    if "No space left" in text or "StorageFull" in text or "Disk quota" in text:
        return "no space left on device"
    if "File too large" in text or "FileTooLarge" in text:
        return "file size limit (RLIMIT_FSIZE) exceeded"
    probe = os.path.abspath(path)
    while not os.path.isdir(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    with contextlib.suppress(OSError):
        stat = os.statvfs(probe)
        if stat.f_bavail * stat.f_frsize < (1 << 20):
            return "no space left on device"
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        if soft != resource.RLIM_INFINITY:
            return f"file size limit (RLIMIT_FSIZE={soft} bytes) reached"
    return None


class WeightsLoadError(CheckpointCorruptError):
    """Initial weights (``model.weights_path``) could not be loaded; nothing falls back to random."""

    def __init__(self, path: str, cause: object) -> None:
        self.path = self.folder = path
        RuntimeError.__init__(self, f"Failed to load weights from {path}: {cause}")


def load_error(path: str, exc: BaseException) -> CheckpointCorruptError:
    """The error for a ``.pt`` file that ``weights_only=True`` could not read.

    A pickle that references anything but tensors and plain containers is refused (crafted or
    foreign), without torch's advice to turn the check off; anything else is damage.
    """
    import pickle

    text = str(exc)
    if isinstance(exc, pickle.UnpicklingError) and "Weights only load failed" in text:
        match = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
        what = f" ({match.group(1)})" if match else ""
        return UnsafeCheckpointError(
            path,
            f"it holds objects other than tensors{what}: only tensors and plain containers are "
            "loaded (a crafted or foreign file; nothing from it was run)",
            problem="is refused",
        )
    first = text.strip().splitlines()[0] if text.strip() else ""
    return CheckpointCorruptError(path, f"{type(exc).__name__}: {first}")


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


def replaced_step_dir(final: str) -> str:
    """Where an older ``step_<N>/`` waits while a new save of step N takes its name."""
    parent, name = os.path.split(os.path.abspath(final))
    return os.path.join(parent, f"{REPLACED_PREFIX}{name}")


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


def verify_manifest(folder: str, required: Iterable[str] = ()) -> dict[str, Any]:
    """The manifest of ``folder`` after checking every listed file's size and sha256.

    It must list at least one file and every name in ``required`` (the files a resume reads): a
    file that a resume would read without the manifest vouching for it is refused.
    """
    manifest = _read_manifest(folder)
    manifest_path = os.path.join(folder, MANIFEST_FILE)
    if not manifest["files"]:
        raise CheckpointCorruptError(
            manifest_path, "it lists no files (a checkpoint lists every file it holds)", folder=folder
        )
    unlisted = [name for name in required if name not in manifest["files"]]
    if unlisted:
        raise CheckpointCorruptError(
            manifest_path,
            f"it does not list {', '.join(unlisted)}, which a resume reads (a partial or altered list)",
            folder=folder,
        )
    for rel in sorted(manifest["files"]):
        _check_listed_file(folder, rel, manifest["files"][rel])
    return manifest


def _check_listed_file(folder: str, rel: str, entry: dict[str, Any]) -> None:
    """The file ``rel`` of ``folder`` against its manifest entry (size, then sha256)."""
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


def _is_checkpoint_manifest(folder: str) -> bool:
    """Whether ``folder`` holds a checkpoint's ``manifest.json``: a checkpoint folder's name
    (``step_<N>``, ``.replaced.step_<N>``, ``.partial.*``) or a manifest of our format (a
    ``manifest.json`` of something else, elsewhere up the path, is not ours to judge)."""
    manifest = os.path.join(folder, MANIFEST_FILE)
    if not os.path.isfile(manifest):
        return False
    name = os.path.basename(folder)
    if _STEP_RE.match(name) or _REPLACED_RE.match(name) or name.startswith(PARTIAL_PREFIX):
        return True
    try:
        with open(manifest, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT


def _enclosing_checkpoint(path: str) -> str | None:
    """The nearest folder above ``path`` that holds a checkpoint manifest, or None."""
    current = os.path.dirname(os.path.abspath(path))
    while True:
        if _is_checkpoint_manifest(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


_warned_unlisted: set[str] = set()


def verify_files_in_checkpoint(paths: Iterable[str], *, field: str, allow_unverified: bool = False) -> None:
    """Each of ``paths`` (files about to be read) that lives inside a checkpoint folder, checked
    against that folder's ``manifest.json`` (size and sha256) before it is used.

    A file the manifest lists but that differs is a :class:`CheckpointCorruptError` naming it; a
    file inside the folder that the manifest does not list is refused too, unless
    ``allow_unverified`` (one warning). Files outside any checkpoint folder are not touched.
    """
    manifests: dict[str, dict[str, Any]] = {}
    for path in paths:
        folder = _enclosing_checkpoint(path)
        if folder is None:
            continue
        if folder not in manifests:
            manifests[folder] = _read_manifest(folder)
        rel = os.path.relpath(os.path.abspath(path), folder).replace(os.sep, "/")
        entry = manifests[folder]["files"].get(rel)
        if entry is not None:
            _check_listed_file(folder, rel, entry)
            continue
        if not allow_unverified:
            raise CheckpointCorruptError(
                path,
                f"{field} reads it from checkpoint folder {folder}, whose {MANIFEST_FILE} does not list "
                f"it (added after the save, or not part of the checkpoint); set {ALLOW_UNVERIFIED_HINT} "
                "to read it anyway",
                problem="is not verified",
                folder=folder,
            )
        key = os.path.abspath(path)
        if key not in _warned_unlisted:
            _warned_unlisted.add(key)
            logger.warning(
                f"Reading {path} UNVERIFIED ({ALLOW_UNVERIFIED_HINT}): {MANIFEST_FILE} of checkpoint "
                f"folder {folder} does not list it"
            )


_warned_unverified: set[str] = set()

ALLOW_UNVERIFIED_HINT = "checkpoint.allow_unverified=true"


def _check_without_manifest(
    folder: str,
    required: Sequence[str],
    dcp_check: Callable[[str], tuple[str, str] | None] | None,
    allow_unverified: bool = False,
) -> None:
    """A folder without a manifest: refused, unless ``allow_unverified`` (then it must hold every
    file the resume reads, and one warning lists what was not verified)."""
    manifest = os.path.join(folder, MANIFEST_FILE)
    if not allow_unverified:
        raise CheckpointCorruptError(
            manifest,
            f"checkpoint folder {folder} cannot be verified (a save that did not finish, a checkpoint "
            f"written before manifests, or not a checkpoint folder); set {ALLOW_UNVERIFIED_HINT} to "
            "load it without an integrity check",
            problem="is missing",
            folder=folder,
        )
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
            f"Checkpoint folder {folder} is loaded UNVERIFIED ({ALLOW_UNVERIFIED_HINT}): it has no "
            f"{MANIFEST_FILE}, so no size or sha256 of {', '.join(required) or 'its files'} (nor of "
            "the DCP shards) was checked"
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


def find_replaced_dirs(root: str) -> list[tuple[int, str]]:
    """``(step, path)`` of the ``.replaced.step_<N>/`` folders under ``root`` (a replacement that
    was interrupted), newest first."""
    found = []
    with contextlib.suppress(OSError):
        for name in os.listdir(root):
            match = _REPLACED_RE.match(name)
            if match and os.path.isdir(os.path.join(root, name)):
                found.append((int(match.group(1)), os.path.join(root, name)))
    return sorted(found, reverse=True)


def find_partials(root: str) -> list[str]:
    with contextlib.suppress(OSError):
        return sorted(os.path.join(root, n) for n in os.listdir(root) if n.startswith(PARTIAL_PREFIX))
    return []


def _candidates(root: str) -> list[str]:
    """Checkpoint folders of a run folder, newest step first; ``step_<N>`` before its
    ``.replaced.step_<N>`` (the older copy, findable while a replacement is interrupted)."""
    ranked = [(step, 1, path) for step, path in find_step_dirs(root)]
    ranked += [(step, 0, path) for step, path in find_replaced_dirs(root)]
    return [path for _step, _rank, path in sorted(ranked, reverse=True)]


def _is_run_root(folder: str) -> bool:
    names = set(os.listdir(folder))
    if MANIFEST_FILE in names or any(n.endswith(".metadata") for n in names):
        return False
    return any(_STEP_RE.match(n) or n.startswith(PARTIAL_PREFIX) or _REPLACED_RE.match(n) for n in names)


def _validate(folder: str, required: Sequence[str], dcp_check, allow_unverified: bool) -> None:
    if os.path.isfile(os.path.join(folder, MANIFEST_FILE)):
        verify_manifest(folder, required)
    else:
        _check_without_manifest(folder, required, dcp_check, allow_unverified)


def resolve_checkpoint(
    path: str,
    *,
    field: str,
    required: Iterable[str] = (),
    dcp_check: Callable[[str], tuple[str, str] | None] | None = None,
    allow_unverified: bool = False,
) -> str:
    """The verified checkpoint folder that ``path`` (``field`` in the config) designates.

    ``path`` is a ``step_<N>/`` folder, or a run folder holding them (then the newest complete
    one, logged; a ``.replaced.step_<N>/`` left by an interrupted replacement counts). ``required``
    are the files the resuming trainer reads: the manifest must list each of them. A folder
    without a manifest, or a ``.partial.*`` one, is refused unless ``allow_unverified``;
    ``dcp_check(folder)`` then returns ``(file, reason)`` for damaged DCP shards.
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
        if in_staged_folder(path):
            if not allow_unverified:
                raise CheckpointCorruptError(
                    path,
                    f"it is a checkpoint save that did not finish (a {PARTIAL_PREFIX}* folder); set "
                    f"{ALLOW_UNVERIFIED_HINT} to load it anyway",
                    problem="is refused",
                    folder=path,
                )
            logger.warning(f"Loading {path}, a save that did not finish, because of {ALLOW_UNVERIFIED_HINT}")
        _validate(path, required, dcp_check, allow_unverified)
        return path
    rejected = []
    for folder in _candidates(path):
        try:
            _validate(folder, required, dcp_check, allow_unverified)
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


# The other shared leaves (they import the errors above).
from hyper_parallel.checkpointing.run_lock import (  # noqa: E402
    ExistingCheckpointsError,
    LockFileRefusedError,
    RunFolderLockedError,
    acquire_run_folder,
    check_fresh_output_dir,
    check_resume_output_dir,
    release_run_folder,
)

__all__ += [
    "ExistingCheckpointsError",
    "LockFileRefusedError",
    "RunFolderLockedError",
    "acquire_run_folder",
    "check_fresh_output_dir",
    "check_resume_output_dir",
    "release_run_folder",
]
from hyper_parallel.checkpointing.resume_settings import (  # noqa: E402
    ResumeConfigError,
    ResumePastEndError,
)
from hyper_parallel.checkpointing.weights_fit import WeightsMismatchError, check_weights_fit  # noqa: E402

__all__ += ["ResumeConfigError", "ResumePastEndError", "WeightsMismatchError", "check_weights_fit"]
