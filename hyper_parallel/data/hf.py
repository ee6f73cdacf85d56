"""``data.type: hf_datasets`` and ``json_file``: local HF datasets tokenised by the data transform.

Nothing is downloaded: ``data.train_path`` must exist locally. ``datasets`` is imported lazily so
that importing :mod:`hyper_parallel.data` stays cheap.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

from hyper_parallel.data.transforms import name_data_rows
from hyper_parallel.platform.logging import get_logger

__all__ = [
    "FILE_BUILDERS",
    "TokenizedDataset",
    "check_train_path",
    "content_cache_dir",
    "load_raw_dataset",
    "tokenize_dataset",
    "build_hf_dataset",
]

logger = get_logger(__name__)

# Single-file builder by extension for data.type=hf_datasets (ours).
FILE_BUILDERS: dict[str, str] = {
    ".json": "json",
    ".jsonl": "json",
    ".parquet": "parquet",
    ".csv": "csv",
    ".txt": "text",
}

# Files that mark a directory written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``.
_SAVE_TO_DISK_MARKERS = ("state.json", "dataset_dict.json")


def check_train_path(
    data_type: str, train_path: str | os.PathLike | None, *, streaming: bool = False
) -> Path:
    """Validate ``data.train_path`` and ``data.streaming`` for the hf/json path."""
    if train_path is None or str(train_path) == "":
        raise ValueError(
            f"data.type={data_type} needs data.train_path (a local file or directory); it is not set"
        )
    path = Path(train_path)
    if not path.exists():
        raise FileNotFoundError(
            f"data.train_path={str(train_path)!r} does not exist; data.type={data_type} expects a local "
            "file or directory (nothing is downloaded)"
        )
    if path.is_file() and _is_blank(path):
        raise ValueError(
            f"data.train_path={str(train_path)!r} is empty; data.type={data_type} expects at least one record"
        )
    if streaming:
        raise NotImplementedError(
            "data.streaming=true is not supported: the distributed sampler needs a dataset with a length"
        )
    return path


def _is_blank(path: Path, probe: int = 1 << 16) -> bool:
    """True for a file with no bytes, or only whitespace (small files are read whole)."""
    size = path.stat().st_size
    if size == 0:
        return True
    if size > probe:
        return False
    return not path.read_bytes().strip()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def content_cache_dir(path: Path) -> Path:
    """The ``datasets`` cache folder for the data at ``path``, named after its content.

    ``datasets`` keys a local data file by its path and modification time only, so a file replaced
    with other rows and its old mtime (``cp -p``, a restored backup) was served from the cache of
    the old rows, and so was its tokenisation (``map`` caches by the loaded files). Each content
    gets a cache folder of its own instead: the sha256 of every file's relative name, size and
    sha256 (a folder: each file in it, hidden ones aside, as ``datasets`` skips them). The same
    bytes find their cache again; other bytes never find it.
    """
    import datasets

    files = (
        [path]
        if path.is_file()
        else sorted(
            f
            for f in path.rglob("*")
            if f.is_file() and not any(p.startswith(".") for p in f.relative_to(path).parts)
        )
    )
    digest = hashlib.sha256()
    for file in files:
        name = file.name if file == path else file.relative_to(path).as_posix()
        digest.update(f"{name}\0{file.stat().st_size}\0{_file_sha256(file)}\n".encode())
    return Path(datasets.config.HF_DATASETS_CACHE) / "hyper_parallel_by_content" / digest.hexdigest()


def load_raw_dataset(
    data_type: str,
    train_path: str | os.PathLike | None,
    subset: str | None = None,
    *,
    streaming: bool = False,
):
    """Load the "train" split of a local dataset; returns a ``datasets.Dataset``.

    An unset ``train_path`` (None) is the one-line error of :func:`check_train_path`.
    """
    import datasets

    path = check_train_path(data_type, train_path, streaming=streaming)
    if data_type not in ("json_file", "hf_datasets"):
        raise ValueError(f"load_raw_dataset handles data.type hf_datasets or json_file, got {data_type!r}")
    if (
        data_type == "hf_datasets"
        and path.is_dir()
        and any((path / m).is_file() for m in _SAVE_TO_DISK_MARKERS)
    ):
        loaded = datasets.load_from_disk(str(path))  # arrow files read in place: no load cache
        if isinstance(loaded, datasets.DatasetDict):
            if "train" not in loaded:
                raise ValueError(
                    f"data.train_path={str(path)!r} is a saved DatasetDict without a 'train' split; "
                    f"splits: {sorted(loaded.keys())}"
                )
            return loaded["train"]
        return loaded
    builder = None
    if data_type == "hf_datasets" and not path.is_dir():
        builder = FILE_BUILDERS.get(path.suffix.lower())
        if builder is None:
            raise ValueError(
                f"data.train_path={str(path)!r} has an unsupported extension {path.suffix!r}; expected a directory "
                f"or a file ending in {', '.join(FILE_BUILDERS)}"
            )
    cache_dir = str(content_cache_dir(path))
    if data_type == "hf_datasets" and builder is None:  # a folder of data files
        if subset:
            return datasets.load_dataset(str(path), subset, split="train", cache_dir=cache_dir)
        return datasets.load_dataset(str(path), split="train", cache_dir=cache_dir)
    try:
        return datasets.load_dataset(
            builder or "json", data_files=str(path), split="train", cache_dir=cache_dir
        )
    except StopIteration as exc:  # the schema inference of an empty file
        raise ValueError(f"data.train_path={str(path)!r} holds no records; expected at least one") from exc


class TokenizedDataset(Dataset):
    """Map-style view of a tokenised HF dataset; items are int64 ``input_ids`` and ``labels`` tensors."""

    def __init__(self, dataset: Any):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, idx: int) -> dict[str, torch.Tensor]:
        row = self.dataset[int(idx)]
        return {
            "input_ids": torch.tensor(row["input_ids"], dtype=torch.long),
            "labels": torch.tensor(row["labels"], dtype=torch.long),
        }


def tokenize_dataset(ds: Any, data_transform: Any, train_size: int | None = None, *, source: Any = None):
    """After loading: optional ``select``, batched ``map`` dropping raw columns, drop empty rows.

    With ``source`` (the data file), a row the transform cannot tokenize names the file and the row.
    """
    if train_size is not None and train_size < len(ds):
        ds = ds.select(range(train_size))
    if source is not None:
        data_transform = name_data_rows(data_transform, source)
    ds = ds.map(data_transform, batched=True, remove_columns=ds.column_names, desc="Tokenizing")
    return ds.filter(lambda r: len(r["input_ids"]) > 0)


def build_hf_dataset(trainer: Any) -> TokenizedDataset:
    """Legacy dispatch for ``hf_datasets`` / ``json_file``; shrinks ``state.max_steps`` to the data."""
    args = trainer.args
    data = getattr(args, "data", None)
    train = getattr(args, "train", None)
    data_type = getattr(data, "type", "dummy")
    train_path = getattr(data, "train_path", None)
    data_transform = getattr(trainer, "data_transform", None)
    if data_transform is None:
        raise ValueError(
            f"data.type={data_type} needs a tokenizer-backed data transform: set model.tokenizer_path "
            "(or model.weights_path)"
        )
    ds = load_raw_dataset(
        data_type,
        train_path,
        getattr(data, "subset", None),
        streaming=bool(getattr(data, "streaming", False)),
    )
    ds = tokenize_dataset(ds, data_transform, getattr(data, "train_size", None), source=train_path)
    dataset = TokenizedDataset(ds)

    global_batch_size = getattr(train, "global_batch_size", 8)
    requested = getattr(train, "max_steps", 0)
    max_steps = min(int(requested), len(dataset) // max(int(global_batch_size), 1))
    if max_steps == 0:
        raise ValueError(
            f"data.train_path={str(train_path)!r} gives {len(dataset)} samples after tokenisation with "
            f"train.global_batch_size={global_batch_size} and train.max_steps={requested}: max_steps would be 0; "
            "expected at least one full global batch"
        )
    trainer.state.max_steps = max_steps
    logger.info_rank0(
        "%s dataset %s: %d samples, max_steps=%d", data_type, train_path, len(dataset), max_steps
    )
    return dataset
