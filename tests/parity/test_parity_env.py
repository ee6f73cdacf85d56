"""Environment pieces: golden platform keys, fingerprints, xdist worker device pinning."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path

import pytest

from parity.env import fingerprint, platform_key


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


def test_platform_key_records_the_device():
    assert platform_key(_FakePlatform("cpu")) == "cpu"
    assert platform_key(_FakePlatform("cuda")) == "cuda-h200"


def test_fingerprint_fields():
    fp = fingerprint("torch", _FakePlatform("cpu"))
    assert set(fp) == {"backend", "torch", "deterministic", "numpy", "platform", "python"}
    assert fp["torch"].startswith("2.13.0") and fp["deterministic"] is True


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
