"""The checkpoint errors both trainers raise, each naming the folder or file and what was wrong."""

from __future__ import annotations

import contextlib
import os
import re

# IMPORTS


# --------------------------------------------------------------------------- errors
class CheckpointCorruptError(RuntimeError):
    """A checkpoint file is missing, truncated, altered or unreadable; ``path`` names it.

    ``folder`` is the checkpoint folder it belongs to. Both trainers raise this one type, with
    this one message form, for the same damage.
    """

    def __init__(self, path: str, cause: object, *, problem: str = "is truncated or corrupt", folder=None):
        self.path = path
        self.folder = folder if folder is not None else os.path.dirname(path)
        super().__init__(f"checkpoint file {path} {problem}: {cause}")


class UnsafeCheckpointError(CheckpointCorruptError):
    """A checkpoint pickle references a type a checkpoint never holds; nothing from it was run."""


class CheckpointNotFoundError(CheckpointCorruptError):
    """A run folder given as ``load_path`` holds no complete ``step_<N>/`` checkpoint."""

    def __init__(self, folder: str, cause: object) -> None:
        self.path = self.folder = folder
        RuntimeError.__init__(
            self, f"checkpoint folder {folder} holds no complete step_<N> checkpoint: {cause}"
        )


class CheckpointSaveError(RuntimeError):
    """Writing a checkpoint failed; the run stops (``path`` is the folder being written)."""

    def __init__(self, path: str, step: int, cause: BaseException) -> None:
        what = _save_failure(path, cause)
        lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
        if "Traceback (most recent call last)" in str(cause):  # DCP's per-rank report: its last line
            lines = lines[-1:]
        detail = " ".join(" ".join(lines).split()) or type(cause).__name__
        if len(detail) > 300:
            detail = detail[:300] + "..."
        reason = f"{what} ({type(cause).__name__}: {detail})" if what else f"{type(cause).__name__}: {detail}"
        super().__init__(
            f"checkpoint save to {path} failed at step {step}: {reason}; "
            "the run stops so that no later step trains without a checkpoint"
        )
        self.path = path
        self.step = step


def _save_failure(path: str, cause: BaseException) -> str | None:
    """ "no space left on device" / "file size limit" when that is why a save failed, else None.

    torch's zip writer and safetensors report a full disk without an errno ("enforce fail at
    inline_container.cc", "IoError ... StorageFull"), so their text and the folder's free space
    are checked as well as the errno of every exception in the chain.
    """
    import errno

    seen: BaseException | None = cause
    texts = []
    while seen is not None:
        code = getattr(seen, "errno", None)
        if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
            return "no space left on device"
        if code == errno.EFBIG:
            return "file size limit (RLIMIT_FSIZE) exceeded"
        texts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    text = " ".join(texts)
    if "No space left" in text or "StorageFull" in text or "Disk quota" in text:
        return "no space left on device"
    if "File too large" in text or "FileTooLarge" in text:
        return "file size limit (RLIMIT_FSIZE) exceeded"
    probe = os.path.abspath(path)
    while not os.path.isdir(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    with contextlib.suppress(OSError):
        stat = os.statvfs(probe)
        if stat.f_bavail * stat.f_frsize < (1 << 20):
            return "no space left on device"
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        if soft != resource.RLIM_INFINITY:
            return f"file size limit (RLIMIT_FSIZE={soft} bytes) reached"
    return None


class WeightsLoadError(CheckpointCorruptError):
    """Initial weights (``model.weights_path``) could not be loaded; nothing falls back to random."""

    def __init__(self, path: str, cause: object) -> None:
        self.path = self.folder = path
        RuntimeError.__init__(self, f"Failed to load weights from {path}: {cause}")


def load_error(path: str, exc: BaseException) -> CheckpointCorruptError:
    """The error for a ``.pt`` file that ``weights_only=True`` could not read.

    A pickle that references anything but tensors and plain containers is refused (crafted or
    foreign), without torch's advice to turn the check off; anything else is damage.
    """
    import pickle

    text = str(exc)
    if isinstance(exc, pickle.UnpicklingError) and "Weights only load failed" in text:
        match = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
        what = f" ({match.group(1)})" if match else ""
        return UnsafeCheckpointError(
            path,
            f"it holds objects other than tensors{what}: only tensors and plain containers are "
            "loaded (a crafted or foreign file; nothing from it was run)",
            problem="is refused",
        )
    first = text.strip().splitlines()[0] if text.strip() else ""
    return CheckpointCorruptError(path, f"{type(exc).__name__}: {first}")


class CheckpointMismatchError(ValueError):
    """The checkpoint was written by another model (a tensor of another shape, a missing key)."""


class UnwritableDirError(ValueError):
    """An output folder cannot be created or written."""
