"""Reading torch DCP folders without running code from them.

torch 2.13 reads a DCP folder's ``.metadata`` with a plain ``pickle.load``
(``FileSystemReader.read_metadata``), and loads non-tensor (``BYTE_IO``) entries with
``torch.load(weights_only=False)`` (``DefaultLoadPlanner.load_bytes``); there is no safe-globals
switch for either (``torch.serialization.add_safe_globals`` only covers ``weights_only`` loads).
A crafted folder passed as a resume path or as initial weights could therefore execute anything.

:class:`SafeFileSystemReader` is a ``FileSystemReader`` whose ``.metadata`` goes through a
restricted unpickler that resolves only the types DCP metadata is made of (the dataclasses of
``torch.distributed.checkpoint.metadata``, ``_StorageInfo``, ``torch.Size``, dtypes, layouts,
paths), and whose ``BYTE_IO`` entries must pass ``torch.load(weights_only=True)`` before the
planner sees them. Tensor shards are already read with ``weights_only=True`` by torch.
"""

from __future__ import annotations

import io
import json
import os
import pickle
from typing import Any, cast

import torch
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.planner import LoadPlanner

__all__ = ["SafeFileSystemReader", "ShardPathError", "UnsafePickleError", "read_metadata"]

METADATA_FILE = ".metadata"
MANIFEST_FILE = "manifest.json"  # hyper_parallel.checkpointing.MANIFEST_FILE (platform sits below it)

# (module, name) pairs a DCP ``.metadata`` pickle may reference (checked against torch 2.13
# single-process and FSDP2 saves; dtypes are allowed by value, below).
_ALLOWED_GLOBALS = frozenset(
    {
        *(
            ("torch.distributed.checkpoint.metadata", name)
            for name in (
                "Metadata",
                "MetadataIndex",
                "StorageMeta",
                "TensorProperties",
                "TensorStorageMetadata",
                "BytesStorageMetadata",
                "ChunkStorageMetadata",
                "_MEM_FORMAT_ENCODING",
            )
        ),
        ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
        ("torch.distributed.checkpoint.planner", "LoadItemType"),
        ("torch.distributed.checkpoint.planner", "WriteItemType"),
        ("torch", "Size"),
        ("torch.serialization", "_get_layout"),
        ("torch", "strided"),
        ("torch", "sparse_coo"),
        ("torch", "contiguous_format"),
        ("torch", "channels_last"),
        ("torch", "preserve_format"),
        ("pathlib", "Path"),
        ("pathlib", "PosixPath"),
        ("pathlib", "PurePosixPath"),
        ("pathlib", "WindowsPath"),
        ("pathlib", "PureWindowsPath"),
        ("collections", "OrderedDict"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
    }
)


class UnsafePickleError(pickle.UnpicklingError):
    """A checkpoint file references something a checkpoint never contains; nothing was run."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(
            f"{path}: refused to unpickle {what}: only DCP checkpoint metadata types are allowed "
            "(a crafted or foreign file; nothing from it was executed)"
        )
        self.path = path


class _MetadataUnpickler(pickle.Unpickler):
    def __init__(self, file: Any, path: str) -> None:
        super().__init__(file)
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise UnsafePickleError(self._path, f"global {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError(self._path, "a persistent id")


class ShardPathError(UnsafePickleError):
    """``.metadata`` names a shard outside its folder, or one its manifest does not vouch for."""

    def __init__(self, path: str, what: str) -> None:
        pickle.UnpicklingError.__init__(self, f"{path}: {what}; nothing was read from it")
        self.path = path


def _check_shard_paths(folder: str, path: str, metadata: Any) -> None:
    """Every shard of ``metadata`` is a plain relative name inside ``folder`` and, when the folder
    has a ``manifest.json``, one that it lists (so every byte a load reads was verified)."""
    storage = getattr(metadata, "storage_data", None) or {}
    names = set()
    for info in storage.values():
        rel = getattr(info, "relative_path", None)
        if not isinstance(rel, str) or not rel:
            raise ShardPathError(path, f"names a shard without a file name ({rel!r})")
        parts = rel.replace("\\", "/").split("/")
        if os.path.isabs(rel) or ".." in parts or rel.startswith(("/", "~")):
            raise ShardPathError(
                path, f"names shard {rel!r}, outside the checkpoint folder (only relative names inside it)"
            )
        names.add(rel)
    manifest_path = os.path.join(folder, MANIFEST_FILE)
    if names and os.path.isfile(manifest_path):
        try:
            with open(manifest_path, encoding="utf-8") as fh:
                listed = json.load(fh).get("files", {})
        except (OSError, ValueError, AttributeError):
            return  # an unreadable manifest is reported by the manifest check
        unlisted = sorted(names - set(listed))
        if unlisted:
            raise ShardPathError(
                path,
                f"names shard {unlisted[0]!r}, which {MANIFEST_FILE} does not list ({len(unlisted)} such)",
            )


def read_metadata(checkpoint_id: str | os.PathLike, rank: int | None = None) -> Any:
    """The ``Metadata`` of a DCP folder, through the restricted unpickler; its shard names are
    checked (``_check_shard_paths``)."""
    name = METADATA_FILE if rank is None else f"__{rank}{METADATA_FILE}"
    folder = os.fspath(checkpoint_id)
    path = os.path.join(folder, name)
    with open(path, "rb") as fh:
        metadata = _MetadataUnpickler(fh, path).load()
    _check_shard_paths(folder, path, metadata)
    return metadata


class _BytesCheckingPlanner:
    """Forwards to the real planner; ``BYTE_IO`` payloads must load with ``weights_only=True`` first."""

    def __init__(self, inner: Any, folder: str) -> None:
        self._inner = inner
        self._folder = folder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def load_bytes(self, read_item: Any, value: io.BytesIO) -> None:
        data = value.read()
        try:
            torch.load(io.BytesIO(data), weights_only=True)
        except pickle.UnpicklingError as exc:
            fqn = getattr(getattr(read_item, "dest_index", None), "fqn", "?")
            raise UnsafePickleError(self._folder, f"the non-tensor entry {fqn!r} ({exc})") from None
        self._inner.load_bytes(read_item, io.BytesIO(data))


class SafeFileSystemReader(FileSystemReader):
    """``FileSystemReader`` that never unpickles arbitrary objects (module docstring)."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
        from torch.distributed.checkpoint.metadata import StorageMeta

        metadata = read_metadata(os.fspath(self.path), kwargs.get("rank"))
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata

    def read_data(self, plan: Any, planner: Any) -> Any:
        # The wrapper forwards every LoadPlanner method to ``planner`` (duck-typed, not a subclass).
        checking = cast(LoadPlanner, _BytesCheckingPlanner(planner, os.fspath(self.path)))
        return super().read_data(plan, checking)
