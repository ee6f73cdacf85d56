"""Initial weights load whole or not at all: does a weights file fit the model?

Both loaders (the legacy ``BaseTrainer._load_*`` and ``CheckpointManager.load_weights``) describe
the model and the file as ``{name: (shape, is_floating)}`` and call :func:`check_weights_fit`
before copying anything, and before any cast: the HF and single-file loaders describe the file
from its safetensors header (:func:`safetensors_entries`, dtypes as stored), the DCP loaders from
its ``.metadata``. A parameter the file lacks, a tensor the model does not have (an HF export of a
model with more layers: the layer counts are named too), or a tensor of another shape or dtype
class (integer vs floating) is a :class:`WeightsMismatchError` naming the first offenders and the
counts; with ``allow_partial_weights`` the fitting tensors load, and one warning lists what was
dropped from the file and what keeps its random init.

:func:`check_checkpoint_fits` is the resume's counterpart: a checkpoint of another model (another
shape, more or fewer layers, other tensor names) is a :class:`CheckpointMismatchError` before the
run settings are compared: a model-shape difference is never a setting that
``resume_config_changes: apply`` could change.
"""

from __future__ import annotations

import json
import logging
import os
import re
import struct
from collections.abc import Iterable, Mapping, Sequence

from hyper_parallel.checkpointing.errors import CheckpointMismatchError
from hyper_parallel.checkpointing.layout import HF_CONFIG_FILE, HF_INDEX_FILE, HF_WEIGHTS_FILE

__all__ = [
    "ALLOW_PARTIAL_HINT",
    "WeightsMismatchError",
    "check_checkpoint_fits",
    "check_weights_fit",
    "hf_folder_entries",
    "hf_folder_reads",
    "hf_folder_shards",
    "safetensors_entries",
]

logger = logging.getLogger(__name__)

ALLOW_PARTIAL_HINT = "checkpoint.allow_partial_weights=true"

Entry = tuple[tuple[int, ...], bool | None]  # (shape, is_floating); is_floating None: not checked


class WeightsMismatchError(CheckpointMismatchError):
    """Initial weights do not fit the model (nothing was loaded)."""


def _first(names: Sequence[str], n: int = 3) -> str:
    return ", ".join(names[:n]) + (", ..." if len(names) > n else "")


_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def _layer_count(names: Iterable[str]) -> int:
    """How many distinct ``layers.<i>.`` indices the names hold."""
    return len({match.group(1) for name in names if (match := _LAYER.search(name)) is not None})


def _layers_part(where: str, loaded: Iterable[str], model: Iterable[str]) -> str | None:
    """``"4 layers in the file, 2 in the model"`` when the layer counts differ, else None."""
    in_file, in_model = _layer_count(loaded), _layer_count(model)
    if in_file == in_model:
        return None
    return f"{in_file} layers in the {where}, {in_model} in the model"


# --------------------------------------------------------------------------- safetensors headers
_INTEGER_DTYPES = frozenset({"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64"})


def safetensors_entries(path: str) -> dict[str, tuple[tuple[int, ...], bool]]:
    """``{name: (shape, is_floating)}`` of a safetensors file, from its header alone: the dtype as
    stored, before anything reads or casts a tensor. A header that cannot be parsed is a
    ``ValueError`` naming the file (the loaders name a damaged file first, ``check_safetensors``)."""
    try:
        with open(path, "rb") as fh:
            (length,) = struct.unpack("<Q", fh.read(8))
            if length > os.fstat(fh.fileno()).st_size:
                raise ValueError(f"header length {length} exceeds the file")
            header = json.loads(fh.read(length))
        entries = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = str(info["dtype"]).upper()
            floating = dtype not in _INTEGER_DTYPES and (dtype.startswith("F") or dtype == "BF16")
            entries[name] = (tuple(int(n) for n in info["shape"]), floating)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, struct.error) as exc:
        raise ValueError(f"{path}: unreadable safetensors header ({type(exc).__name__}: {exc})") from exc
    return entries


def check_weights_fit(
    path: str,
    model: Mapping[str, Entry],
    loaded: Mapping[str, Entry],
    *,
    required: Sequence[str] | None = None,
    aliases: Mapping[str, str] | None = None,
    allow_partial: bool = False,
) -> set[str]:
    """The names of ``loaded`` that fit ``model``; an error unless everything fits.

    ``required`` are the model names that must be loaded (default: all of ``model``); ``aliases``
    maps a tied parameter's second name to the first, so loading either one counts.
    """
    aliases = aliases or {}
    unknown = sorted(name for name in loaded if name not in model)
    misfit = []
    for name in sorted(set(loaded) & set(model)):
        (src_shape, src_float), (dst_shape, dst_float) = loaded[name], model[name]
        if tuple(src_shape) != tuple(dst_shape):
            misfit.append(f"{name} (shape {list(src_shape)} in the file, {list(dst_shape)} in the model)")
        elif src_float is not None and dst_float is not None and src_float != dst_float:
            kinds = {True: "floating", False: "integer"}
            misfit.append(f"{name} ({kinds[src_float]} in the file, {kinds[dst_float]} in the model)")
    fits = {name for name in loaded if name in model} - {m.split(" ", 1)[0] for m in misfit}
    covered = fits | {alias for alias, target in aliases.items() if target in fits}
    covered |= {target for alias, target in aliases.items() if alias in fits}
    wanted = list(required if required is not None else model)
    stays_random = sorted(name for name in wanted if name not in covered)
    present = (
        set(loaded)
        | {a for a, t in aliases.items() if t in loaded}
        | {t for a, t in aliases.items() if a in loaded}
    )
    missing = sorted(name for name in wanted if name not in present)
    if not (unknown or misfit or stays_random):
        return fits
    parts = []
    layers = _layers_part("file", loaded, model)
    if layers is not None:
        parts.append(layers)
    if missing:
        parts.append(f"{len(missing)} model parameters missing from the file (first: {_first(missing)})")
    if unknown:
        parts.append(f"{len(unknown)} tensors the model does not have (first: {_first(unknown)})")
    if misfit:
        parts.append(f"{len(misfit)} tensors that do not fit (first: {_first(misfit, 2)})")
    summary = "; ".join(parts)
    if not allow_partial:
        raise WeightsMismatchError(
            f"weights {path} do not fit the model: {summary}; nothing was loaded (set "
            f"{ALLOW_PARTIAL_HINT} to load the tensors that fit and keep the rest at random init)"
        )
    dropped = sorted(set(unknown) | {m.split(" ", 1)[0] for m in misfit})
    logger.warning(
        f"Loading weights {path} PARTIALLY ({ALLOW_PARTIAL_HINT}): {summary}; "
        f"{len(dropped)} tensors of the file are dropped"
        + (f": {', '.join(dropped)}" if dropped else "")
        + f"; {len(stays_random)} parameters keep their random init"
        + (f": {', '.join(stays_random)}" if stays_random else "")
    )
    return fits


# --------------------------------------------------------------------------- HF folders


def _weight_map(folder: str) -> dict[str, str] | None:
    """The index's ``weight_map`` (key -> shard file name), or None for a single-file folder."""
    index = os.path.join(folder, HF_INDEX_FILE)
    if not os.path.isfile(index):
        return None
    try:
        with open(index, encoding="utf-8") as fh:
            weight_map = json.load(fh)["weight_map"]
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise TypeError("weight_map is not a {key: file name} object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{index}: unreadable safetensors index ({type(exc).__name__}: {exc})") from exc
    return weight_map


def hf_folder_shards(folder: str) -> list[str]:
    """The safetensors files of an HF folder: the index's shards, or ``model.safetensors``."""
    weight_map = _weight_map(folder)
    if weight_map is None:
        return [os.path.join(folder, HF_WEIGHTS_FILE)]
    return [os.path.join(folder, name) for name in sorted(set(weight_map.values()))]


def hf_folder_reads(folder: str) -> list[str]:
    """Every file a load of the HF folder reads: the index, the shards and ``config.json``."""
    files = (
        [os.path.join(folder, HF_INDEX_FILE)] if os.path.isfile(os.path.join(folder, HF_INDEX_FILE)) else []
    )
    files += hf_folder_shards(folder)
    if os.path.isfile(os.path.join(folder, HF_CONFIG_FILE)):
        files.append(os.path.join(folder, HF_CONFIG_FILE))
    return files


def hf_folder_entries(folder: str) -> dict[str, tuple[tuple[int, ...], bool]]:
    """``{hf key: (shape, is_floating)}`` of an HF folder from its safetensors headers (the keys the
    index maps to each shard, or every key of ``model.safetensors``); nothing is read or cast."""
    weight_map = _weight_map(folder)
    entries: dict[str, tuple[tuple[int, ...], bool]] = {}
    for shard in hf_folder_shards(folder):
        header = safetensors_entries(shard)
        if weight_map is None:
            entries.update(header)
            continue
        name = os.path.basename(shard)
        for key, file in weight_map.items():
            if file == name and key in header:
                entries[key] = header[key]
    return entries


def check_checkpoint_fits(
    folder: str,
    saved: Mapping[str, tuple[Sequence[int], bool | None] | None],
    model: Mapping[str, Sequence[int]],
) -> None:
    """A resume's model check, before anything is loaded or compared: ``saved`` (the checkpoint's
    ``.metadata``: ``(shape, is_floating)`` per tensor, None for a non-tensor entry, which the load
    itself judges) against ``model`` (the live state dict, ``{key: shape}``).

    A tensor of another shape, a layer count that differs, a tensor only one side has: a
    :class:`CheckpointMismatchError` naming the first tensor and both shapes, the layer counts
    and the first extra or missing tensors with their counts.
    """
    tensors = {key: tuple(entry[0]) for key, entry in saved.items() if entry is not None}
    parts = []
    for key in model:
        if key in tensors and tensors[key] != tuple(model[key]):
            parts.append(
                f"tensor {key!r} has shape {list(tensors[key])} in the checkpoint and {list(model[key])} "
                "in the model"
            )
            break
    layers = _layers_part("checkpoint", tensors, model)
    if layers is not None:
        parts.append(layers)
    extra = sorted(key for key in tensors if key not in model)
    missing = sorted(key for key in model if key not in saved)
    if extra:
        parts.append(f"{len(extra)} tensors the model does not have (first: {_first(extra)})")
    if missing:
        parts.append(f"{len(missing)} model tensors missing from the checkpoint (first: {_first(missing)})")
    if parts:
        raise CheckpointMismatchError(
            f"checkpoint {folder} does not fit the model: {'; '.join(parts)}; it was written by a model "
            "of another size or architecture (a model-shape difference is not a setting "
            "resume_config_changes=apply can change): resume it with the model it was trained with"
        )
