"""Canonical JSON text and atomic file writes, shared by the golden store and the reports."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["canonical_json", "write_text_atomic", "TMP_SUFFIX"]

TMP_SUFFIX = ".tmp"


def canonical_json(data: Any) -> str:
    """Sorted keys, indent 2, ASCII, ``\\n`` newlines and a trailing newline: stable bytes."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def write_text_atomic(path: Path, text: str) -> None:
    """Write via a temp file in the same directory and ``os.replace``: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
