"""The CPU numerics profile: which kernels decide the bits, pinned before the framework loads.

Float results on CPU depend on the code paths the libraries pick for the CPU they run on: ATen's
vectorised kernels (AVX2 vs AVX-512 round differently), MKL's GEMM code path, oneDNN's JIT ISA
and the intra-op thread count (a parallel reduction splits its sum by thread). A golden recorded
on one x86-64 machine holds on another only when all four are pinned to something both machines
run. Two profiles, chosen by ``--cpu-profile`` or ``PARITY_CPU_PROFILE``:

- ``portable`` (default): the knobs below, set in ``os.environ`` so that every subprocess the
  harness or the tests start (torchrun workers included) inherits them, and the thread count set
  in the running framework too;
- ``native``: nothing is pinned; the machine's own kernels run (goldens are then keyed by what
  the machine picked, see ``parity.env.platform_key``).

Each knob is read by its library lazily, at first use, not at ``import torch``: ATen reads
``ATEN_CPU_CAPABILITY`` when the first kernel dispatches, MKL reads ``MKL_CBWR`` at its first
call, oneDNN reads ``ONEDNN_MAX_CPU_ISA`` when it creates its first primitive, and
``torch.set_num_threads`` works at any time. So pinning still works after ``import torch``, as
long as no kernel ran yet. When ATen's capability was already fixed to another value,
:func:`apply` raises :class:`ProfileError` (the CLI re-executes itself instead, see
``parity.__main__``).

Evidence that each knob changes bits (``tests/parity/test_parity_numerics.py`` checks the first
and the last; measured with torch 2.13.0+cpu on an AMD EPYC with AVX-512):

- ``ATEN_CPU_CAPABILITY=avx2``: softmax over a 257x513 fp32 tensor differs between AVX512 and
  AVX2; with ``default`` matmul, exp and sum differ too; the suite's 9 float goldens differ.
- ``MKL_CBWR=COMPATIBLE``: fp32 matmul and conv1d bits change. MKL's other branches (``AVX2``,
  ``AVX512``) are reported as ``CNR:AUTO`` by ``MKL_VERBOSE`` on this AMD CPU: MKL honours them
  only on Intel CPUs, so ``AVX2`` would give Intel and AMD machines different GEMM paths. The
  compatible branch is the one code path both vendors run.
  ``MKL_ENABLE_INSTRUCTIONS`` was dropped: no value of it (SSE4_2, AVX, AVX2, AVX512) changed a
  bit here, and the CNR branch already fixes MKL's code path.
- ``ONEDNN_MAX_CPU_ISA=AVX2``: bf16 matmul (oneDNN) bits change against the AVX-512 default.
- one intra-op thread: the fp32 sum of 4M elements differs between 1, 2 and 4 threads.
- ``NPY_DISABLE_CPU_FEATURES`` (numpy's own SIMD dispatch, read when numpy is imported): float32
  ``power`` over 1000 elements changes bits between the AVX-512 and AVX2 code paths (the issue
  measured 21% of elements); numpy 2.x names its targets ``X86_V4 AVX512_ICL AVX512_SPR``, numpy
  1.26 (the MindSpore venv) ``AVX512F ... AVX512_ICL``. The knob carries both lists (a name one
  major does not know, it ignores silently), so a MindSpore child started from the torch
  environment is pinned too. Code that feeds goldens does not rely on it: the MindSpore model's
  RoPE frequencies are exact Python (``inv_freq_values``), because a process that imported
  numpy before the profile was applied (pytest, a user's script) runs numpy's native dispatch.
- ``GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA,-FMA4`` (read by the dynamic loader at process start):
  glibc 2.36's ``cos`` takes its non-FMA variant; ``0.5 * (1 + cos(pi * i / n))`` over 100,001
  points changes bits against the FMA variant, so the cosine LR curve depends on it.

Both process-start knobs act only in a process started with them: :func:`needs_reexec` is true
while they are not in this process's start environment (``/proc/self/environ``), and the CLI then
re-executes itself with them in its environment; every child the harness starts inherits them.
A process that cannot re-execute (pytest) keeps the libm and numpy it started with; the
fingerprint's explanation rows (``libc``, ``libm_variant``, ``numpy_dispatch``) say which.
"""

from __future__ import annotations

import os
import platform as pyplatform
import sys
from dataclasses import dataclass

__all__ = [
    "PROFILE_ENV",
    "PROFILES",
    "DEFAULT_PROFILE",
    "Knob",
    "KNOB_ENV_VARS",
    "ProfileError",
    "knobs",
    "portable_capability",
    "resolve",
    "apply",
    "active_profile",
    "needs_reexec",
    "export",
    "start_environment",
    "pending_at_start",
    "NUMPY_AVX512_TARGETS",
    "GLIBC_HWCAPS",
]

PROFILE_ENV = "PARITY_CPU_PROFILE"
PROFILES = ("portable", "native")
DEFAULT_PROFILE = "portable"
PORTABLE_THREADS = 1


@dataclass(frozen=True)
class Knob:
    """One environment variable the portable profile sets, and why.

    ``at_start``: the library reads it when the process starts (the dynamic loader) or when it is
    imported (numpy), so setting it later in a running process changes nothing there.
    """

    env: str
    value: str
    why: str
    at_start: bool = False


# numpy's dispatch targets above AVX2, by numpy major (``__cpu_dispatch__`` of each build).
NUMPY_AVX512_TARGETS: dict[int, tuple[str, ...]] = {
    2: ("X86_V4", "AVX512_ICL", "AVX512_SPR"),
    1: (
        "AVX512F",
        "AVX512CD",
        "AVX512_KNL",
        "AVX512_KNM",
        "AVX512_SKX",
        "AVX512_CLX",
        "AVX512_CNL",
        "AVX512_ICL",
    ),
}
_NUMPY_DISABLED = " ".join(dict.fromkeys(n for names in NUMPY_AVX512_TARGETS.values() for n in names))
# glibc's libm picks cos/sin/exp/log/pow variants by ifunc: FMA (with AVX2), FMA4, else AVX/SSE2.
GLIBC_HWCAPS = "glibc.cpu.hwcaps=-FMA,-FMA4"


# Per machine architecture. x86-64: AVX2 is what every x86-64 machine of the last decade runs,
# and what the committed goldens were recorded with.
_X86_64 = (
    Knob("ATEN_CPU_CAPABILITY", "avx2", "ATen's vectorised CPU kernels (AVX-512 rounds differently)"),
    Knob("MKL_CBWR", "COMPATIBLE", "MKL's GEMM code path, the same on Intel and AMD CPUs"),
    Knob("ONEDNN_MAX_CPU_ISA", "AVX2", "oneDNN's JIT kernels (bf16 matmul, conv)"),
    Knob("OMP_NUM_THREADS", str(PORTABLE_THREADS), "intra-op threads of child processes"),
    Knob(
        "NPY_DISABLE_CPU_FEATURES",
        _NUMPY_DISABLED,
        "numpy's SIMD dispatch (AVX-512 rounds differently)",
        True,
    ),
    Knob("GLIBC_TUNABLES", GLIBC_HWCAPS, "libm's non-FMA cos/exp/pow (the cosine LR curve)", True),
)
# aarch64 (not measured here): ATen's scalar kernels; no MKL or oneDNN x86 knobs apply.
_AARCH64 = (
    Knob("ATEN_CPU_CAPABILITY", "default", "ATen's CPU kernels (SVE widths differ between machines)"),
    Knob("OMP_NUM_THREADS", str(PORTABLE_THREADS), "intra-op threads of child processes"),
)
_KNOBS = {"x86_64": _X86_64, "amd64": _X86_64, "aarch64": _AARCH64, "arm64": _AARCH64}
# Every variable some profile sets, on any arch (the fingerprint records their values as found).
KNOB_ENV_VARS: tuple[str, ...] = tuple(sorted({k.env for ks in _KNOBS.values() for k in ks}))


class ProfileError(ValueError):
    """A bad profile name, or a profile that cannot take effect in this process."""


def machine_arch() -> str:
    return pyplatform.machine().lower() or "unknown"


def knobs(arch: str | None = None) -> tuple[Knob, ...]:
    """The environment the portable profile sets on ``arch`` (this machine by default)."""
    return _KNOBS.get(arch or machine_arch(), (Knob("OMP_NUM_THREADS", str(PORTABLE_THREADS), "threads"),))


def portable_capability(arch: str | None = None) -> str | None:
    """The ATen capability the portable profile pins on ``arch`` (upper case, as torch reports it)."""
    for knob in knobs(arch):
        if knob.env == "ATEN_CPU_CAPABILITY":
            return knob.value.upper()
    return None


def resolve(name: str | None = None) -> str:
    """The profile to use: ``name`` (a CLI flag) if given, else ``PARITY_CPU_PROFILE``, else portable."""
    source = "--cpu-profile"
    if name is None:
        name, source = os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE, PROFILE_ENV
    value = name.strip().lower()
    if value not in PROFILES:
        raise ProfileError(f"{source}={name!r} is not a CPU profile; expected one of {', '.join(PROFILES)}")
    return value


def _capability_fixed() -> str | None:
    """ATen's capability if torch is loaded (reading it fixes it: call only once the env is set)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return str(torch.backends.cpu.get_cpu_capability()).upper()


def start_environment() -> dict[str, str]:
    """The environment this process was started with (``/proc/self/environ``; else ``os.environ``)."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return dict(os.environ)
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def pending_at_start(arch: str | None = None) -> list[Knob]:
    """Process-start knobs of the portable profile that this process was not started with."""
    started = start_environment()
    return [k for k in knobs(arch) if k.at_start and started.get(k.env) != k.value]


def needs_reexec(name: str) -> bool:
    """True when only a fresh process can pin what ``name`` pins.

    That is when a process-start knob (libm, numpy) was not in this process's start environment
    (the knobs are then put in ``os.environ``, which the fresh process inherits), or when torch is loaded and the environment does not yet hold the knobs: MKL and oneDNN read
    their variables at first use, and a framework that is already loaded may have used them.
    """
    if name != "portable":
        return False
    if pending_at_start():
        export(name)  # the fresh process starts with them (a re-exec inherits os.environ)
        return True
    if "torch" not in sys.modules:
        return False
    return any(os.environ.get(k.env) != k.value for k in knobs())


def export(name: str) -> None:
    """Put profile ``name`` and its knobs in ``os.environ`` (before re-executing or starting a child)."""
    os.environ[PROFILE_ENV] = name
    if name == "portable":
        for knob in knobs():
            os.environ[knob.env] = knob.value


def apply(name: str | None = None) -> str:
    """Pin profile ``name`` (resolved as :func:`resolve` does) in this process and its children.

    Idempotent. Returns the profile name. Raises :class:`ProfileError` when torch already fixed a
    different CPU capability, since no setting can change that in a running process.
    """
    profile = resolve(name)
    os.environ[PROFILE_ENV] = profile
    if profile == "native":
        return profile
    for knob in knobs():
        os.environ[knob.env] = knob.value
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(PORTABLE_THREADS)
        wanted, got = portable_capability(), _capability_fixed()
        if wanted is not None and got != wanted:
            raise ProfileError(
                f"the {profile} CPU profile needs ATen capability {wanted}, but torch already runs {got} "
                f"kernels in this process (a kernel ran before the profile was applied): start it with "
                f"{PROFILE_ENV}={profile} ATEN_CPU_CAPABILITY={wanted.lower()} set, or through `python -m parity`"
            )
    return profile


def active_profile() -> str:
    """The profile this process (or its parent harness) applied; ``native`` when none was."""
    value = os.environ.get(PROFILE_ENV, "").strip().lower()
    return value if value in PROFILES else "native"
