"""Right-padding collate of the legacy trainer."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from hyper_parallel.data.transforms import IGNORE_INDEX

__all__ = ["pad_collate", "make_pad_collate"]


def _pad(values: Any, length: int, fill: int) -> torch.Tensor:
    row = torch.as_tensor(values, dtype=torch.long)
    if row.dim() != 1:
        raise ValueError(f"collate expects 1-D sequences, got shape {tuple(row.shape)}")
    return torch.cat([row, torch.full((length - row.shape[0],), fill, dtype=torch.long)])


def pad_collate(items: Sequence[Mapping[str, Any]], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Right-pad ``input_ids`` with ``pad_id`` and ``labels`` with -100 to the longest item (int64).

    Only ``input_ids`` and ``labels`` are returned: an ``attention_mask`` (preset_pt) is dropped on
    purpose, because the legacy model never receives one.
    """
    if len(items) == 0:
        raise ValueError("collate received an empty list of items")
    length = max(len(item["input_ids"]) for item in items)
    return {
        "input_ids": torch.stack([_pad(item["input_ids"], length, pad_id) for item in items]),
        "labels": torch.stack([_pad(item["labels"], length, IGNORE_INDEX) for item in items]),
    }


def make_pad_collate(
    pad_id: int | None = 0,
) -> Callable[[Sequence[Mapping[str, Any]]], dict[str, torch.Tensor]]:
    """``pad_collate`` bound to ``pad_id`` (``None`` means 0, the tokenizer-less default)."""
    return functools.partial(pad_collate, pad_id=0 if pad_id is None else int(pad_id))
