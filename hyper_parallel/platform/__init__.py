"""Framework access for new code.

New code (protocols, config, components, HyperTrainer, the parity core) reaches tensors, RNG,
collectives and optimizers through the object returned by :func:`get_platform`, so that a
MindSpore platform can slot in beside the torch one.
"""

from __future__ import annotations

import os
import threading
from typing import cast

from hyper_parallel.platform.base import Platform
from hyper_parallel.platform.group import GroupInfo

__all__ = [
    "GroupInfo",
    "Platform",
    "get_platform",
    "reset_platform_cache",
    "PLATFORM_ENV",
    "SUPPORTED_PLATFORMS",
]

PLATFORM_ENV = "HYPER_PARALLEL_PLATFORM"
SUPPORTED_PLATFORMS = ("torch", "mindspore")

_lock = threading.Lock()
_cached: Platform | None = None


def _load(name: str) -> Platform:
    if name == "torch":
        from hyper_parallel.platform.torch_platform import TorchPlatform

        return TorchPlatform()  # checked against Platform statically (mypy) and by tests/torch/platform
    from hyper_parallel.platform.mindspore_platform import MindSporePlatform

    # mypy does not hold it to the protocol (MindSpore has no type information): the cast; its members'
    # signatures are checked against Platform by tests/mindspore/platform/test_mindspore_platform.py.
    return cast(Platform, MindSporePlatform())


def get_platform() -> Platform:
    """Return the process-wide platform, chosen once from ``HYPER_PARALLEL_PLATFORM``.

    Unset: MindSpore is tried first and torch is the fallback (upstream order; the entry script
    pins ``torch``). Any other value is a ``ValueError`` listing the supported names.
    """
    global _cached
    if _cached is not None:
        return _cached
    with _lock:
        if _cached is not None:
            return _cached
        requested = os.environ.get(PLATFORM_ENV)
        if requested is None or requested == "":
            try:
                platform = _load("mindspore")
            except ImportError:
                platform = _load("torch")
        else:
            name = requested.strip().lower()
            if name not in SUPPORTED_PLATFORMS:
                raise ValueError(
                    f"{PLATFORM_ENV}={requested!r} is not supported; expected one of "
                    f"{', '.join(SUPPORTED_PLATFORMS)}"
                )
            try:
                platform = _load(name)
            except ImportError as exc:
                raise ImportError(
                    f"{PLATFORM_ENV}={name} selects a framework that cannot be imported: {exc}"
                ) from exc
        _cached = platform
        return platform


def reset_platform_cache() -> None:
    """Forget the cached platform (tests that switch ``HYPER_PARALLEL_PLATFORM`` use this)."""
    global _cached
    with _lock:
        _cached = None
