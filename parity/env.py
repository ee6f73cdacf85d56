"""What the harness needs to know about the running environment, reached through the platform.

- ``platform_key``: the device part of golden paths: ``cpu-<arch>-<ATen capability>`` on CPU
  (``cpu-x86_64-avx2``), ``<device type>-<device name>`` on accelerators (``cuda-h200``,
  ``npu-ascend910b``), so goldens of different hardware live side by side;
- ``fingerprint``: what decides the bits (arch, effective CPU capability, CPU profile, BLAS,
  threads, framework version, determinism settings, the C library and libm variant, numpy's
  active SIMD dispatch), recorded in every golden;
- ``fingerprint_mismatches``: the must-match fields in which a golden and a run differ;
- ``seed_all``: the identical reseed done before each side of a case;
- ``backend_skip_reason``: why a backend cannot run in this process, if it cannot.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform as pyplatform
import random
import re
from typing import Any

import numpy as np

from parity import numerics

__all__ = [
    "get_platform",
    "platform_key",
    "fingerprint",
    "seed_all",
    "backend_skip_reason",
    "ensure_deterministic",
    "fingerprint_mismatches",
    "informational_mismatches",
    "REQUIRED_FINGERPRINT_FIELDS",
]

# Fingerprint fields a golden must share with the run that checks it (see parity.golden). The
# framework version is added under the backend's own name ("torch": "2.13.0+cpu"). The others
# (python, numpy, BLAS, threads, CPU vendor, ...) are recorded to explain a difference.
REQUIRED_FINGERPRINT_FIELDS = (
    "backend",
    "platform",
    "arch",
    "cpu_capability",
    "cpu_profile",
    "deterministic",
)


def get_platform():
    from hyper_parallel.platform import get_platform as _get

    return _get()


def _slug(text: str, keep: str = "") -> str:
    return re.sub(rf"[^a-z0-9{re.escape(keep)}]+", "-", text.lower()).strip("-")


def cpu_key(arch: str, capability: str) -> str:
    return f"cpu-{_slug(arch, keep='_')}-{_slug(capability)}"


def platform_key(platform: Any | None = None) -> str:
    """``cpu-<arch>-<capability>`` on CPU-only nodes, else ``<device type>-<device name>`` (``cuda-h200``)."""
    platform = platform or get_platform()
    device_type = platform.device_type()
    if device_type == "cpu":
        return cpu_key(numerics.machine_arch(), platform.cpu_capability())
    try:
        name = platform.get_device_handle(device_type).get_device_name(0)
    except Exception:  # a handle without names still gets a usable key
        return device_type
    slug = _slug(name).removeprefix("nvidia-").removeprefix("huawei-")
    return f"{device_type}-{slug}" if slug else device_type


def framework_version(backend: str) -> str:
    """Installed distribution version of the backend's framework (no framework import needed)."""
    try:
        return importlib.metadata.version(backend)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def cpu_vendor() -> str:
    """``GenuineIntel`` / ``AuthenticAMD`` / ... (MKL picks its code paths by vendor)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(("vendor_id", "CPU implementer")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return pyplatform.processor() or "unknown"


def cpu_flags() -> set[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (empty where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def libc() -> str:
    """The C library and its version (``glibc 2.36``); libm's float functions come from it."""
    try:
        confstr = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        confstr = None
    if confstr:
        return confstr
    name, version = pyplatform.libc_ver()
    return f"{name} {version}".strip() or "unknown"


def libm_variant() -> str:
    """Which of glibc's x86-64 variants of cos/exp/pow this process runs: ``fma`` or ``non-fma``.

    glibc picks the FMA variant when the CPU has FMA and AVX2, unless ``GLIBC_TUNABLES`` masked
    those at process start (the portable profile does: ``parity.numerics.GLIBC_HWCAPS``).
    """
    if numerics.machine_arch() not in ("x86_64", "amd64"):
        return "n/a"
    if not libc().startswith("glibc"):
        return "unknown"
    tunables = numerics.start_environment().get("GLIBC_TUNABLES", "")
    flags = cpu_flags()
    if "fma" in flags and "avx2" in flags and "-FMA" not in tunables.replace("-FMA4", ""):
        return "fma"
    if "fma4" in flags and "-FMA4" not in tunables:
        return "fma4"
    return "non-fma"


def numpy_dispatch() -> list[str]:
    """numpy's dispatch targets enabled in this process (``NPY_DISABLE_CPU_FEATURES`` removes some)."""
    import importlib

    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")  # numpy 2.x
    except ImportError:
        umath = importlib.import_module("numpy.core._multiarray_umath")  # numpy 1.x
    features = umath.__cpu_features__
    return [name for name in umath.__cpu_dispatch__ if features.get(name)]


def fingerprint(backend: str, platform: Any | None = None) -> dict[str, Any]:
    """What decides the bits of this run; recorded in goldens and checked against them."""
    platform = platform or get_platform()
    libraries = platform.cpu_libraries()
    return {
        "arch": numerics.machine_arch(),
        "backend": backend,
        backend: framework_version(backend),
        "blas": libraries.get("blas", "unknown"),
        "cpu_capability": platform.cpu_capability(),
        "cpu_env": {name: os.environ.get(name, "unset") for name in numerics.KNOB_ENV_VARS},
        "cpu_profile": numerics.active_profile(),
        "cpu_vendor": cpu_vendor(),
        "deterministic": bool(platform.is_deterministic()),
        "determinism": platform.determinism_settings(),
        "libc": libc(),
        "libm_variant": libm_variant(),
        "numpy": np.__version__,
        "numpy_dispatch": numpy_dispatch(),
        "onednn": libraries.get("onednn", "unknown"),
        "platform": platform_key(platform),
        "python": pyplatform.python_version(),
        "threads": int(platform.num_threads()),
    }


def required_fields(backend: str) -> tuple[str, ...]:
    return (*REQUIRED_FINGERPRINT_FIELDS, backend)


def fingerprint_mismatches(recorded: dict[str, Any], current: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(field, golden value, run value)`` for every must-match field that differs."""
    return [
        (name, recorded.get(name), current.get(name))
        for name in required_fields(current["backend"])
        if recorded.get(name) != current.get(name)
    ]


def informational_mismatches(recorded: dict[str, Any], current: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Recorded fields that differ but do not fail a check by themselves (threads, BLAS, ...)."""
    required = set(required_fields(current["backend"]))
    names = sorted((recorded.keys() | current.keys()) - required)
    return [(n, recorded.get(n), current.get(n)) for n in names if recorded.get(n) != current.get(n)]


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
