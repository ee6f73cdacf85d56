"""Environment pieces: golden platform keys, fingerprints, xdist worker device pinning."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path

import pytest

from parity import numerics
from parity.env import REQUIRED_FINGERPRINT_FIELDS, fingerprint, fingerprint_mismatches, platform_key


class _FakeHandle:
    def get_device_name(self, index):
        return "NVIDIA H200"


class _FakePlatform:
    def __init__(self, device_type):
        self._type = device_type

    def device_type(self):
        return self._type

    def get_device_handle(self, device_type=None):
        return _FakeHandle()

    def is_deterministic(self):
        return True

    def cpu_capability(self):
        return "AVX512"

    def cpu_libraries(self):
        return {"blas": "mkl 2024.2", "onednn": "v3.12.0"}

    def num_threads(self):
        return 3

    def determinism_settings(self):
        extra = {"cublas_workspace_config": ":4096:8"} if self._type == "cuda" else {}
        return {"deterministic_algorithms": True, **extra}


def test_platform_key_records_the_device_arch_and_capability():
    arch = numerics.machine_arch()
    assert platform_key(_FakePlatform("cpu")) == f"cpu-{arch}-avx512"
    assert platform_key(_FakePlatform("cuda")) == "cuda-h200"


def test_fingerprint_records_what_decides_the_bits():
    fp = fingerprint("torch", _FakePlatform("cpu"))
    assert set(fp) == {
        *("arch", "backend", "blas", "cpu_capability", "cpu_env", "cpu_profile", "cpu_vendor"),
        *("deterministic", "determinism", "numpy", "onednn", "platform", "python", "threads", "torch"),
        *("libc", "libm_variant", "numpy_dispatch"),
    }
    assert fp["libm_variant"] in ("fma", "fma4", "non-fma", "n/a", "unknown")
    assert isinstance(fp["numpy_dispatch"], list) and fp["libc"]
    assert fp["torch"].startswith("2.13.0") and fp["deterministic"] is True
    assert (fp["cpu_capability"], fp["blas"], fp["threads"]) == ("AVX512", "mkl 2024.2", 3)
    assert fp["cpu_profile"] == numerics.active_profile() and set(fp["cpu_env"]) >= {"ATEN_CPU_CAPABILITY"}
    cuda = fingerprint("torch", _FakePlatform("cuda"))
    assert cuda["determinism"]["cublas_workspace_config"] == ":4096:8"


def test_must_match_fields_are_arch_capability_profile_and_version():
    assert {"arch", "cpu_capability", "cpu_profile", "platform", "backend"} <= set(
        REQUIRED_FINGERPRINT_FIELDS
    )
    fp = fingerprint("torch", _FakePlatform("cpu"))
    other = {**fp, "cpu_capability": "AVX2", "threads": 1, "python": "3.0"}
    assert fingerprint_mismatches(other, fp) == [("cpu_capability", "AVX2", "AVX512")]


@pytest.fixture
def conftest_module():
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("_parity_conftest_copy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("env", "var", "expected"),
    [
        (
            {"PYTEST_XDIST_WORKER": "gw3", "PARITY_ACCELERATOR": "cuda", "PARITY_DEVICE_COUNT": "2"},
            "CUDA_VISIBLE_DEVICES",
            "1",
        ),
        (
            {"PYTEST_XDIST_WORKER": "gw1", "PARITY_ACCELERATOR": "npu", "ASCEND_RT_VISIBLE_DEVICES": "4,5,6"},
            "ASCEND_RT_VISIBLE_DEVICES",
            "5",
        ),
        (
            {"PYTEST_XDIST_WORKER": "gw1", "PARITY_ACCELERATOR": "none", "PARITY_DEVICE_COUNT": "8"},
            "CUDA_VISIBLE_DEVICES",
            None,
        ),
        (
            {"PARITY_ACCELERATOR": "cuda", "PARITY_DEVICE_COUNT": "8"},
            "CUDA_VISIBLE_DEVICES",
            None,
        ),  # not an xdist worker
    ],
)
def test_xdist_workers_pin_one_device_each(conftest_module, monkeypatch, env, var, expected):
    for name in ("PYTEST_XDIST_WORKER", "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # torch is already imported in this process, so a real pin also warns that it may come too late.
    warns = (
        pytest.warns(UserWarning, match="imported before device pinning")
        if expected
        else contextlib.nullcontext()
    )
    with warns:
        conftest_module._pin_xdist_worker_device()
    assert os.environ.get(var) == (expected if expected is not None else env.get(var))


@pytest.mark.skipif(numerics.machine_arch() not in ("x86_64", "amd64"), reason="glibc's x86-64 libm variants")
def test_libm_variant_names_what_the_process_started_with():
    """glibc picks its libm variant at process start: the row reads the start environment."""
    import subprocess
    import sys

    from parity import env

    if not (env.libc().startswith("glibc") and {"fma", "avx2"} <= env.cpu_flags()):
        pytest.skip("no FMA variant of glibc's libm on this machine")
    code = "from parity import env; print(env.libm_variant())"

    def variant(tunables: str | None) -> str:
        child = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        if tunables is not None:
            child["GLIBC_TUNABLES"] = tunables
        return subprocess.run(
            [sys.executable, "-c", code], env=child, capture_output=True, text=True
        ).stdout.strip()

    assert variant(None) == "fma"
    assert variant(numerics.GLIBC_HWCAPS) == "non-fma"
