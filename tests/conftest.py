"""Session-wide test setup: the torch platform, per-worker device pinning, hypothesis profiles,
determinism, parity options.

The device pinning runs first, before anything here imports a framework: a CUDA/NPU runtime reads
``CUDA_VISIBLE_DEVICES`` / ``ASCEND_RT_VISIBLE_DEVICES`` once, when it initialises.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings

# The test process runs the torch platform: ``get_platform()`` would otherwise try MindSpore first.
# Set here, once, before any test module imports a framework; MindSpore tests run their checks in
# child processes that set ``HYPER_PARALLEL_PLATFORM=mindspore`` in their own environment.
os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

_VISIBLE_VAR = {"cuda": "CUDA_VISIBLE_DEVICES", "npu": "ASCEND_RT_VISIBLE_DEVICES"}


def _accelerator() -> str | None:
    """``cuda`` / ``npu`` when the node has accelerators (``PARITY_ACCELERATOR`` overrides: cuda|npu|none)."""
    forced = os.environ.get("PARITY_ACCELERATOR", "").strip().lower()
    if forced:
        return None if forced == "none" else forced
    if shutil.which("nvidia-smi"):
        return "cuda"
    if shutil.which("npu-smi"):
        return "npu"
    return None


def _device_ids(kind: str) -> list[str]:
    """Devices this process may use: the visible-devices list if set, else those the SMI tool counts."""
    preset = os.environ.get(_VISIBLE_VAR[kind], "").strip()
    if preset:
        return [d.strip() for d in preset.split(",") if d.strip()]
    count = os.environ.get("PARITY_DEVICE_COUNT")
    if count is None:
        try:
            if kind == "cuda":
                out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
                count = str(sum(line.startswith("GPU ") for line in out.splitlines()))
            else:
                out = subprocess.run(
                    ["npu-smi", "info", "-l"], capture_output=True, text=True, timeout=20
                ).stdout
                match = re.search(r"Total Count\s*:\s*(\d+)", out)
                count = match.group(1) if match else "0"
        except (OSError, subprocess.SubprocessError):
            count = "0"
    return [str(i) for i in range(int(count))]


def _pin_xdist_worker_device() -> None:
    """Worker ``gwN`` sees only device ``N mod count``; nothing changes on CPU nodes or without xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    kind = _accelerator() if worker else None
    if not worker or kind not in _VISIBLE_VAR:
        return
    devices = _device_ids(kind)
    if not devices:
        return
    if "torch" in sys.modules or "mindspore" in sys.modules:
        warnings.warn("a framework was imported before device pinning; the pin may not apply", stacklevel=1)
    os.environ[_VISIBLE_VAR[kind]] = devices[int(worker.removeprefix("gw")) % len(devices)]


_pin_xdist_worker_device()


def _own_report_dir() -> None:
    """Reports, run state and reviews of every test go to one temporary folder of this run (its
    xdist workers and child processes inherit it), never to the repository's ``parity/reports``,
    which the user's ``update --failed`` and reviews read. Removed when the process that made it exits."""
    import atexit
    import tempfile

    if os.environ.get("PARITY_REPORT_DIR"):
        return
    folder = tempfile.mkdtemp(prefix="parity-test-reports-")
    os.environ["PARITY_REPORT_DIR"] = folder
    atexit.register(shutil.rmtree, folder, True)


_own_report_dir()

import pytest  # noqa: E402

from parity.hypothesis_profiles import load_selected_profile  # noqa: E402
from parity.pytest_plugin import pytest_addoption, pytest_configure  # noqa: E402,F401

load_selected_profile()


@pytest.fixture(scope="session", autouse=True)
def _deterministic_session():
    """Deterministic algorithms on for the whole session, and still on at its end."""
    from hyper_parallel.platform import get_platform

    platform = get_platform()
    platform.set_deterministic(True)
    yield
    assert platform.is_deterministic(), (
        "deterministic algorithms were turned off during the test session; "
        "a test must restore platform.set_deterministic(True) after changing it"
    )


@pytest.fixture(autouse=True)
def _process_globals_restored():
    """Each test starts with the process-wide switches a fresh process has: automatic GC on and the
    root logger's handlers as they were. Code under test may flip them (the legacy GC callback turns
    GC off in its constructor; ``hyper_parallel.train.main`` replaces the root handlers with one on
    the stderr pytest captured for that test, closed after it), and a later test on the same xdist
    worker would otherwise see it: a result that depends on the test order."""
    import gc
    import logging

    def own(handlers: list[logging.Handler]) -> list[logging.Handler]:
        # pytest's own handlers come and go with each phase of the test: left to pytest
        return [h for h in handlers if not type(h).__module__.startswith("_pytest")]

    root = logging.getLogger()
    handlers, level = own(root.handlers), root.level
    yield
    gc.enable()
    root.setLevel(level)
    for handler in own(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)


@pytest.fixture
def gloo_world(monkeypatch):
    """A 1-rank gloo process group on a free loopback port, torn down after the test."""
    import socket

    import torch.distributed as dist

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for key, value in {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "RANK": "0",
        "WORLD_SIZE": "1",
    }.items():
        monkeypatch.setenv(key, value)
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        yield
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
