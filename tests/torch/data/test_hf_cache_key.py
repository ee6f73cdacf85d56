"""The ``datasets`` cache of hf/json data is keyed by the data's content, not its modification time.

A user probe replaced a data file and restored its mtime (as ``cp -p`` does): ``datasets`` keys a
local file by path and mtime only, so both trainers kept training on the old rows. Now
``load_raw_dataset`` keys its cache by each file's size and sha256; the tokenised rows follow.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hyper_parallel.data.hf import load_raw_dataset, tokenize_dataset


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """A cache of this test's own (what it finds there, it put there)."""
    import datasets

    cache = tmp_path / "hf_cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))


def _write_rows(path: Path, texts: list[str], mtime: float | None = None) -> None:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    if mtime is not None:  # what `cp -p` leaves: new bytes, the old modification time
        os.utime(path, (mtime, mtime))


def _texts(ds) -> list[str]:
    return list(ds["text"])


def _replace_keeping_mtime(path: Path, texts: list[str]) -> None:
    stat = path.stat()
    _write_rows(path, texts, mtime=stat.st_mtime)
    assert path.stat().st_mtime == stat.st_mtime


@pytest.mark.parametrize("data_type", ["json_file", "hf_datasets"])
def test_a_replaced_file_with_its_old_mtime_is_read_again(tmp_path, data_type):
    path = tmp_path / "data.jsonl"
    _write_rows(path, ["old row one", "old row two"])
    assert _texts(load_raw_dataset(data_type, path)) == ["old row one", "old row two"]
    _replace_keeping_mtime(path, ["new row one", "new row two"])  # the same size, too
    assert _texts(load_raw_dataset(data_type, path)) == ["new row one", "new row two"]


def test_a_replaced_file_in_a_dataset_folder_is_read_again(tmp_path):
    folder = tmp_path / "dataset"
    folder.mkdir()
    _write_rows(folder / "train.jsonl", ["old a", "old b"])
    assert _texts(load_raw_dataset("hf_datasets", folder)) == ["old a", "old b"]
    _replace_keeping_mtime(folder / "train.jsonl", ["new a", "new b"])
    assert _texts(load_raw_dataset("hf_datasets", folder)) == ["new a", "new b"]


def test_the_tokenised_rows_follow_the_new_content(tmp_path):
    path = tmp_path / "data.jsonl"

    def transform(batch):
        ids = [[len(word) for word in text.split()] for text in batch["text"]]
        return {"input_ids": ids, "labels": ids}

    _write_rows(path, ["aa bbb", "c dddd"])
    first = tokenize_dataset(load_raw_dataset("json_file", path), transform)
    assert list(first["input_ids"]) == [[2, 3], [1, 4]]
    _replace_keeping_mtime(path, ["aaa bb", "cccc d"])
    second = tokenize_dataset(load_raw_dataset("json_file", path), transform)
    assert list(second["input_ids"]) == [[3, 2], [4, 1]]


def test_unchanged_content_is_served_from_the_cache(tmp_path):
    """The key is the content: reading the same bytes twice reuses the first load's cache files."""
    path = tmp_path / "data.jsonl"
    _write_rows(path, ["same row"])
    first = load_raw_dataset("json_file", path)
    second = load_raw_dataset("json_file", path)
    assert [f["filename"] for f in second.cache_files] == [f["filename"] for f in first.cache_files]
