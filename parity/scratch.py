"""One scratch folder per harness process tree: every temporary file of a run lands in it.

Cases write temporary folders (tokenizer variants, data sets, checkpoints) from forked workers
and ranks, which end with ``os._exit`` and never run ``atexit``; a folder one of them made would
outlive the run. :func:`install` points ``tempfile`` (and ``TMPDIR``, for subprocesses) at one
folder under the system temp folder, which the process that made it removes when it exits,
together with whatever its children left there. A green run leaves nothing behind.

torch's compiler cache (``TORCHINDUCTOR_CACHE_DIR``, made empty when ``torch._dynamo`` is first
imported, by default under the temp folder) is a cache, not scratch: it goes to the user's cache
folder, so a late import after the run cannot leave a folder in the temp folder either.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["PREFIX", "cleanup", "install"]

PREFIX = "parity-run-"

_root: Path | None = None
_owner: int | None = None
_previous: tuple[str | None, str | None] = (None, None)


def install() -> Path:
    """The scratch folder of this process tree (made on the first call); idempotent."""
    global _root, _owner, _previous
    if _root is not None and _root.is_dir():
        return _root
    _previous = (tempfile.tempdir, os.environ.get("TMPDIR"))
    _root = Path(tempfile.mkdtemp(prefix=PREFIX))
    _owner = os.getpid()
    tempfile.tempdir = str(_root)
    os.environ["TMPDIR"] = str(_root)
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "torchinductor")
    atexit.register(cleanup)
    return _root


def cleanup() -> None:
    """Remove the scratch folder and point ``tempfile`` back; only in the process that made it
    (a forked child that reaches ``atexit`` must not remove its parent's folder)."""
    global _root, _owner
    if _root is None or _owner != os.getpid():
        return
    root, _root, _owner = _root, None, None
    tempdir, env = _previous
    tempfile.tempdir = tempdir
    if env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = env
    shutil.rmtree(root, ignore_errors=True)
