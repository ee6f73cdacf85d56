"""``data.type: preset_pt``: replay pre-tokenised batches saved with ``torch.save``.

The file is loaded with ``weights_only=True``: lists, dicts and tensors load, anything that
needs arbitrary pickled objects is refused (upstream used ``weights_only=False``).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

from hyper_parallel.platform.logging import get_logger

__all__ = [
    "PresetDataset",
    "load_preset_batches",
    "flatten_preset_batches",
    "load_preset_samples",
    "build_preset_dataset",
]

logger = get_logger(__name__)

_REQUIRED_KEYS = ("input_ids", "labels")


def load_preset_batches(path: str | os.PathLike) -> list:
    """Load and validate the batch list; returns it unflattened.

    Each entry is a stacked dict ``{input_ids:[B,S], labels:[B,S][, attention_mask:[B,S]]}`` or a
    list of such dicts (one per rank).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"preset_pt file data.train_path={str(path)!r} does not exist")
    if not path.is_file():
        raise ValueError(
            f"preset_pt data.train_path={str(path)!r} is not a file; expected a torch.save'd list"
        )
    try:
        batches = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ValueError(
            f"preset_pt file {str(path)!r} cannot be loaded with torch.load(weights_only=True): it needs "
            "pickled objects beyond lists, dicts and tensors, which are refused because unpickling them can run "
            f"arbitrary code. Re-save it as a list of dicts of tensors. ({exc})"
        ) from exc
    if not isinstance(batches, list) or len(batches) == 0:
        got = type(batches).__name__ if not isinstance(batches, list) else "an empty list"
        raise ValueError(f"preset_pt expects a non-empty list of batches, got {got} (file {str(path)!r})")
    for index, entry in enumerate(batches):
        for _ in _entry_dicts(entry, index):
            pass
    return batches


def _check_batch_dict(batch: Any, where: str) -> None:
    if not isinstance(batch, dict):
        raise ValueError(f"preset_pt {where} must be a dict of tensors, got {type(batch).__name__}")
    missing = [key for key in _REQUIRED_KEYS if key not in batch]
    if missing:
        raise ValueError(
            f"preset_pt {where} lacks {', '.join(missing)}; expected keys input_ids, labels[, attention_mask]"
        )
    ids, labels = batch["input_ids"], batch["labels"]
    for key, value in (("input_ids", ids), ("labels", labels)):
        if not isinstance(value, torch.Tensor) or value.dim() != 2:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise ValueError(f"preset_pt {where}: {key} must be a 2-D [B, S] tensor, got {shape}")
    if ids.shape[0] != labels.shape[0]:
        raise ValueError(
            f"preset_pt {where}: input_ids has {ids.shape[0]} rows but labels has {labels.shape[0]}"
        )


def _entry_dicts(entry: Any, index: int) -> list[dict]:
    """The stacked dicts of one entry (one, or one per rank), validated."""
    if isinstance(entry, dict):
        _check_batch_dict(entry, f"entry {index}")
        return [entry]
    if isinstance(entry, list):
        for rank, batch in enumerate(entry):
            _check_batch_dict(batch, f"entry {index} (rank dict {rank})")
        return entry
    raise ValueError(
        f"preset_pt entry {index} must be a dict or a list of per-rank dicts, got {type(entry).__name__}"
    )


def flatten_preset_batches(batches: Sequence[Any]) -> list[dict[str, torch.Tensor]]:
    """Samples in order entry -> rank dict -> row; ``attention_mask`` kept only when it is 2-D."""
    samples: list[dict[str, torch.Tensor]] = []
    for index, entry in enumerate(batches):
        for batch in _entry_dicts(entry, index):
            ids, labels = batch["input_ids"], batch["labels"]
            mask = batch.get("attention_mask")
            if not (isinstance(mask, torch.Tensor) and mask.dim() == 2):
                mask = None  # only a [batch, seq] mask is kept
            for i in range(ids.shape[0]):
                sample = {"input_ids": ids[i].clone(), "labels": labels[i].clone()}
                if mask is not None:
                    sample["attention_mask"] = mask[i].clone()
                samples.append(sample)
    return samples


def load_preset_samples(path: str | os.PathLike) -> list[dict[str, torch.Tensor]]:
    """``flatten_preset_batches(load_preset_batches(path))``."""
    return flatten_preset_batches(load_preset_batches(path))


class PresetDataset(Dataset):
    """Plain list-backed dataset of preset samples."""

    def __init__(self, samples: Sequence[dict[str, torch.Tensor]]):
        self.samples = list(samples)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, idx: int) -> dict[str, torch.Tensor]:
        return self.samples[idx]


def build_preset_dataset(trainer: Any) -> PresetDataset:
    """Legacy dispatch for ``preset_pt``; resets ``state.max_steps`` to ``train.max_steps`` when truthy."""
    args = trainer.args
    data = getattr(args, "data", None)
    train = getattr(args, "train", None)
    train_path = getattr(data, "train_path", None)
    if train_path is None or str(train_path) == "":
        raise ValueError(
            "data.type=preset_pt needs data.train_path (a torch.save'd list of batches); it is not set"
        )
    dataset = PresetDataset(load_preset_samples(train_path))
    max_steps = getattr(train, "max_steps", 0)
    if max_steps:
        trainer.state.max_steps = int(max_steps)
    if getattr(data, "shuffle", True):
        logger.warning_rank0(
            "preset_pt with data.shuffle=true does not replay the batches in order; set data.shuffle: false"
        )
    logger.info_rank0("preset_pt dataset %s: %d samples", train_path, len(dataset))
    return dataset
