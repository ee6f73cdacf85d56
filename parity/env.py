"""What the harness needs to know about the running environment, reached through the platform.

- ``platform_key``: the device part of golden paths (``cpu``, ``cuda-h200``, ``npu-ascend910b``);
- ``fingerprint``: versions and determinism flags recorded in every golden;
- ``seed_all``: the identical reseed done before each side of a case;
- ``backend_skip_reason``: why a backend cannot run in this process, if it cannot.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform as pyplatform
import random
import re
from typing import Any

import numpy as np

__all__ = [
    "get_platform",
    "platform_key",
    "fingerprint",
    "seed_all",
    "backend_skip_reason",
    "ensure_deterministic",
    "REQUIRED_FINGERPRINT_FIELDS",
]

# Fingerprint fields a golden must share with the run that checks it (see parity.golden). The
# framework version is added under the backend's own name ("torch": "2.13.0+cpu").
REQUIRED_FINGERPRINT_FIELDS = ("backend", "platform", "deterministic")


def get_platform():
    from hyper_parallel.platform import get_platform as _get

    return _get()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def platform_key(platform: Any | None = None) -> str:
    """``cpu`` on CPU-only nodes, else ``<device type>-<device name>`` (``cuda-h200``)."""
    platform = platform or get_platform()
    device_type = platform.device_type()
    if device_type == "cpu":
        return "cpu"
    try:
        name = platform.get_device_handle(device_type).get_device_name(0)
    except Exception:  # noqa: BLE001 - a handle without names still gets a usable key
        return device_type
    slug = _slug(name).removeprefix("nvidia-").removeprefix("huawei-")
    return f"{device_type}-{slug}" if slug else device_type


def framework_version(backend: str) -> str:
    """Installed distribution version of the backend's framework (no framework import needed)."""
    try:
        return importlib.metadata.version(backend)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def fingerprint(backend: str, platform: Any | None = None) -> dict[str, Any]:
    """Versions and determinism flags of this run; recorded in goldens and checked against them."""
    platform = platform or get_platform()
    return {
        "backend": backend,
        backend: framework_version(backend),
        "deterministic": bool(platform.is_deterministic()),
        "numpy": np.__version__,
        "platform": platform_key(platform),
        "python": pyplatform.python_version(),
    }


def required_fields(backend: str) -> tuple[str, ...]:
    return (*REQUIRED_FINGERPRINT_FIELDS, backend)


def seed_all(seed: int, platform: Any | None = None) -> None:
    """Reseed the framework (host and device generators), ``random`` and numpy's global RNG."""
    platform = platform or get_platform()
    platform.seed_everything(seed)
    random.seed(seed)
    np.random.seed(seed % (1 << 32))


def ensure_deterministic(platform: Any | None = None) -> None:
    """Turn deterministic algorithms on (idempotent); goldens are only made and checked with them."""
    platform = platform or get_platform()
    if not platform.is_deterministic():
        platform.set_deterministic(True)


def backend_skip_reason(backend: str) -> str | None:
    """``None`` when this process runs ``backend``; else a message saying how to run it."""
    from hyper_parallel.platform import PLATFORM_ENV

    if importlib.util.find_spec(backend) is None:
        return f"backend {backend!r} skipped: {backend} is not installed"
    try:
        active = get_platform().name
    except ImportError as exc:
        return f"backend {backend!r} skipped: the platform cannot be loaded ({exc})"
    if active != backend:
        return (
            f"backend {backend!r} skipped: this process runs the {active} platform; "
            f"rerun with {PLATFORM_ENV}={backend}"
        )
    return None
