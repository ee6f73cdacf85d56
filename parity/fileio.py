"""Canonical JSON text and atomic file writes, shared by the golden store and the reports."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hyper_parallel.checkpointing import fault_point, fsync_path

__all__ = ["canonical_json", "write_text_atomic", "TMP_SUFFIX"]

TMP_SUFFIX = ".tmp"


def canonical_json(data: Any) -> str:
    """Sorted keys, indent 2, ASCII, ``\\n`` newlines and a trailing newline: stable bytes."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def write_text_atomic(path: Path, text: str) -> None:
    """Write a temp file in the same directory, fsync it, ``os.replace`` it over ``path``, fsync the
    folder: readers (and a machine that loses power) see the old file or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        fault_point("golden:tmp_written")  # tests stop a write here (SIGKILL): old golden, whole
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(str(path.parent))
    fault_point("golden:replaced")
