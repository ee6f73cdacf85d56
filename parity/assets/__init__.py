"""Small committed test assets (tokenizer, text datasets) and path helpers.

Regenerate with ``python -m parity.assets.build_assets``; the files are deterministic.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

__all__ = [
    "ASSETS_DIR",
    "tokenizer_dir",
    "text_jsonl",
    "alpaca_json",
    "short_text_jsonl",
    "short_alpaca_json",
    "alpaca_grid_json",
    "text_disk_dir",
    "text_disk_copy",
    "preset_pt",
]

ASSETS_DIR = Path(__file__).resolve().parent


def tokenizer_dir() -> Path:
    """HF tokenizer folder: byte-level BPE, 512 ids, eos ``<|endoftext|>``, no pad token, no default BOS/EOS."""
    return ASSETS_DIR / "tokenizer"


def text_jsonl() -> Path:
    """200 ``{"text": ...}`` rows (varied lengths, multilingual, two empty strings)."""
    return ASSETS_DIR / "data" / "text.jsonl"


def alpaca_json() -> Path:
    """64 alpaca records with ``instruction``/``input``/``output`` (some inputs empty)."""
    return ASSETS_DIR / "data" / "alpaca.json"


def short_text_jsonl() -> Path:
    """39 short ``{"text": ...}`` rows (1-20 words, four empty): 35 rows remain, they pad at 16 tokens."""
    return ASSETS_DIR / "data" / "short_text.jsonl"


def short_alpaca_json() -> Path:
    """32 short alpaca records (some empty outputs, one all-empty record): 31 rows remain."""
    return ASSETS_DIR / "data" / "short_alpaca.json"


def alpaca_grid_json(grid: str) -> Path:
    """Alpaca records whose prompt and response tokenise to the lengths of a grid cell, one record
    per cell (``build_assets.ALPACA_GRIDS``: ``full`` 180 records, ``small`` 30)."""
    return ASSETS_DIR / "data" / f"alpaca_grid_{grid}.json"


def text_disk_dir() -> Path:
    """``Dataset.save_to_disk`` folder with a ``text`` column (64 rows, one of them empty).

    ``datasets.map`` writes ``cache-*.arrow`` files next to a loaded-from-disk dataset; tests
    should copy this folder to a temporary directory first.
    """
    return ASSETS_DIR / "data" / "text_disk"


@functools.cache
def text_disk_copy() -> Path:
    """A copy of :func:`text_disk_dir` in this process's temp folder (made once per process), for
    code that loads it with ``datasets``: the cache files ``map`` writes land there, never in the
    source tree (which may be read-only). Under the parity harness the temp folder is the run's
    scratch folder (``parity.scratch``), removed with the run."""
    import atexit
    import shutil
    import tempfile

    root, owner = Path(tempfile.mkdtemp(prefix="parity-text-disk-")), os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # not in a forked child that reaches atexit
            shutil.rmtree(root, ignore_errors=True)

    atexit.register(remove)
    folder = root / "text_disk"
    shutil.copytree(text_disk_dir(), folder)
    return folder


def preset_pt(
    path: str | os.PathLike,
    *,
    num_stacked: int = 2,
    batch_size: int = 2,
    seq_len: int = 8,
    vocab_size: int = 64,
    rank_seq_lens: tuple[int, ...] = (8, 6),
    seed: int = 0,
) -> Path:
    """Write a small preset_pt batches file and return its path.

    Layout: ``num_stacked`` stacked dicts ``{input_ids, labels[, attention_mask]}`` of shape
    ``[batch_size, seq_len]`` (only the first carries a 2-D ``attention_mask``), then one entry that
    is a list of per-rank dicts whose sequence lengths are ``rank_seq_lens``. Labels are the ids
    with the first position set to -100. Content is fixed by ``seed``.
    """
    import torch

    g = torch.Generator().manual_seed(seed)

    def stacked(length: int, with_mask: bool) -> dict[str, torch.Tensor]:
        ids = torch.randint(0, vocab_size, (batch_size, length), generator=g)
        labels = ids.clone()
        labels[:, 0] = -100
        batch = {"input_ids": ids, "labels": labels}
        if with_mask:
            batch["attention_mask"] = torch.ones(batch_size, length, dtype=torch.long)
        return batch

    batches: list = [stacked(seq_len, with_mask=(i == 0)) for i in range(num_stacked)]
    if rank_seq_lens:
        batches.append([stacked(length, with_mask=False) for length in rank_seq_lens])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(batches, path)
    return path
