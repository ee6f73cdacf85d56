"""Verification: a ``step_<N>/`` folder is trusted only when its manifest matches its files;
``resolve_checkpoint`` turns a load path (a step folder or a run folder) into a verified folder."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hyper_parallel.checkpointing.errors import CheckpointCorruptError, CheckpointNotFoundError
from hyper_parallel.checkpointing.layout import (
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    PARTIAL_PREFIX,
    REPLACED_RE,
    STEP_RE,
    find_partials,
    find_replaced_dirs,
    find_step_dirs,
)
from hyper_parallel.checkpointing.staging import drain_commits, file_sha256, in_staged_folder

logger = logging.getLogger(__name__)
# Each unverified or unlisted folder is warned about once per process.
_warned_unverified: set[str] = set()
_warned_unlisted: set[str] = set()

# IMPORTS


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
    if file_sha256(path) != entry["sha256"]:
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
    if STEP_RE.match(name) or REPLACED_RE.match(name) or name.startswith(PARTIAL_PREFIX):
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
    return any(STEP_RE.match(n) or n.startswith(PARTIAL_PREFIX) or REPLACED_RE.match(n) for n in names)


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
    drain_commits()  # a folder this process is still committing (another trainer's save) may be the one
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
