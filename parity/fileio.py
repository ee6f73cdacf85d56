"""Canonical JSON text and atomic file writes, shared by the golden store and the reports."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["canonical_json", "write_text_atomic", "TMP_SUFFIX"]

TMP_SUFFIX = ".tmp"

# Tests set this to a callable(event) to stop a write at a named point (``tmp_written``,
# ``replaced``), e.g. with SIGKILL, and check that a golden is then complete or absent.
_fault_hook: Any = None


def _fault(event: str) -> None:
    if _fault_hook is not None:
        _fault_hook(event)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse to fsync a folder; the rename is still atomic
        pass
    finally:
        os.close(fd)


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
        _fault("tmp_written")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    _fault("replaced")
