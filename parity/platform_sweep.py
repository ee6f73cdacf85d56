"""The platform layer's settings and helpers where no trainer run looks, read in the harness process
and put back as they were: the rendezvous bound read from the environment, the process group's
timeout (in a child process: a group of the harness's own is never touched), the quiet filters,
the once-per-run warnings, the non-finite-loss warning's text and ``move_to_device`` through
nested containers.

Used by the ``platform_settings`` golden (``parity/suites/platform_rows.py``).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from parity.canonical import error_line

__all__ = [
    "RENDEZVOUS_VALUES",
    "loss_watch_rows",
    "move_rows",
    "platform_rows",
    "process_group_rows",
    "quiet_rows",
    "rendezvous_rows",
]

# ``HYPER_PARALLEL_RENDEZVOUS_TIMEOUT`` values: a number, the refused bounds and non-numbers, empty.
RENDEZVOUS_VALUES = ("5", "0", "inf", "nan", "x", "", " 2.5 ")
# The variables a process group's rendezvous reads, and the platform's own: removed in the child.
_WORLD_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "HYPER_PARALLEL_SELF_WORLD",
    "HYPER_PARALLEL_RENDEZVOUS_TIMEOUT",
)


def _outcome(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:
        return error_line(exc)


def rendezvous_rows() -> dict[str, Any]:
    """``rendezvous_timeout_seconds()`` per value of its variable (and unset): seconds or the refusal."""
    from hyper_parallel.platform.base import RENDEZVOUS_TIMEOUT_ENV, rendezvous_timeout_seconds

    rows: dict[str, Any] = {}
    with mock.patch.dict(os.environ):
        os.environ.pop(RENDEZVOUS_TIMEOUT_ENV, None)
        rows["(unset)"] = _outcome(rendezvous_timeout_seconds)
        for value in RENDEZVOUS_VALUES:
            os.environ[RENDEZVOUS_TIMEOUT_ENV] = value
            rows[repr(value)] = _outcome(rendezvous_timeout_seconds)
    return rows


_CHILD = r"""
import json, os, sys
import torch
from torch.distributed import distributed_c10d as c10d
from hyper_parallel.platform import PLATFORM_ENV, get_platform, reset_platform_cache

rows = {}
platform = get_platform()
platform.init_process_group(timeout_seconds=7)
group = c10d._get_default_group()
rows["timeout after init_process_group(timeout_seconds=7)"] = str(
    group._get_backend(torch.device("cpu")).options._timeout
)
rows["world"] = [platform.get_rank(), platform.get_world_size()]
platform.destroy_process_group()
rows["after destroy: distributed"] = platform.is_distributed()
rows["after destroy: world variables set"] = sorted(n for n in json.loads(sys.argv[1]) if n in os.environ)
for value in json.loads(sys.argv[2]):
    os.environ[PLATFORM_ENV] = value
    reset_platform_cache()
    try:
        rows[f"get_platform() with {PLATFORM_ENV}={value!r}"] = get_platform().name
    except Exception as exc:
        rows[f"get_platform() with {PLATFORM_ENV}={value!r}"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
print(json.dumps(rows))
"""


def process_group_rows() -> dict[str, Any]:
    """In a child process with no world variables (a 1-rank world of the platform's own): the group
    timeout after ``init_process_group(timeout_seconds=7)``, what ``destroy_process_group`` leaves,
    and ``get_platform()`` after a cache reset under each ``HYPER_PARALLEL_PLATFORM`` value."""
    env = {k: v for k, v in os.environ.items() if k not in _WORLD_VARS}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(_WORLD_VARS), json.dumps(["torch", " Torch ", "jax"])],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return {"exit": done.returncode, "last line": lines[-1] if lines else ""}
    return json.loads(done.stdout.splitlines()[-1])


@contextlib.contextmanager
def _captured(name: str) -> Iterator[list[str]]:
    """``name``'s records as ``LEVEL message`` lines, seen by a handler of its own only (not
    propagated) while inside; the logger's handlers, level and propagation are put back after."""
    logger = logging.getLogger(name)
    saved = (list(logger.handlers), logger.level, logger.propagate)
    lines: list[str] = []

    class _Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(f"{record.levelname} {record.getMessage()}")

    logger.handlers, logger.propagate = [_Lines()], False
    logger.setLevel(logging.DEBUG)
    try:
        yield lines
    finally:
        logger.handlers, logger.propagate = saved[0], saved[2]
        logger.setLevel(saved[1])


def _mesh_rows() -> dict[str, Any]:
    """What reaches the DeviceMesh logger's handlers after ``quiet_third_party(False)`` (quiet) and
    after ``quiet_third_party(True)`` (verbose): the known pickling notice and another warning."""
    from hyper_parallel.platform import quiet as q

    name = "torch.distributed.device_mesh"
    notice = "It seems like pickling/unpickling of the DeviceMesh occurred before the PGs were created"
    rows: dict[str, Any] = {}
    for verbose in (False, True):
        q.quiet_third_party(verbose)

        def say() -> list[str]:
            with _captured(name) as lines:
                logging.getLogger(name).warning("%s (parity)", notice)
                logging.getLogger(name).warning("another device mesh warning")
            return lines

        rows[f"quiet_third_party({verbose}): {name} lines"] = _outcome(say)
    return rows


def _once_rows() -> dict[str, Any]:
    """The same warning logged twice through the root logger after ``say_once_per_run(folder)``,
    an info line twice, then the same after ``say_once_per_run(None)``: the lines a root handler got."""
    from hyper_parallel.platform import quiet as q

    root = logging.getLogger()
    logger = logging.getLogger("parity.platform_sweep.once")
    saved = (list(root.handlers), root.level, logger.level, logger.propagate)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    rows: dict[str, Any] = {}
    try:
        root.handlers = [handler]
        root.setLevel(logging.INFO)
        logger.setLevel(logging.INFO)
        logger.propagate = True
        with tempfile.TemporaryDirectory(prefix="parity-once-") as tmp:
            for label, folder in (
                ("say_once_per_run(folder)", Path(tmp) / "warned"),
                ("say_once_per_run(None)", None),
            ):
                q.say_once_per_run(folder)
                for _ in range(2):
                    logger.warning("the same warning")
                    logger.info("the same info")
                rows[label] = stream.getvalue().splitlines()
                stream.seek(0)
                stream.truncate()
            q.say_once_per_run(None)
    finally:
        root.handlers = saved[0]
        root.setLevel(saved[1])
        logger.setLevel(saved[2])
        logger.propagate = saved[3]
    return rows


def quiet_rows() -> dict[str, Any]:
    """``_mesh_rows`` and ``_once_rows`` with the quiet module's state, the environment, the
    warning filters and the third-party loggers' filters put back after."""
    from hyper_parallel.platform import quiet as q

    saved = (q._verbose, q._quiet, dict(q._installed), dict(q._env_set), q._once_filter)
    loggers = {name: list(logging.getLogger(name).filters) for name, _ in q.THIRD_PARTY_LOG_RECORDS}
    try:
        with mock.patch.dict(os.environ), warnings.catch_warnings():
            q._verbose, q._once_filter = False, None
            rows = _mesh_rows()
            q._verbose = False  # say_once_per_run does nothing under --verbose
            return {**rows, **_once_rows()}
    finally:
        q._verbose, q._quiet, q._once_filter = saved[0], saved[1], saved[4]
        q._installed.clear()
        q._installed.update(saved[2])
        q._env_set.clear()
        q._env_set.update(saved[3])
        for name, filters in loggers.items():
            logging.getLogger(name).filters = filters


def loss_watch_rows() -> dict[str, Any]:
    """``LossWatch`` with ``check_nan_inf`` off: the warning lines for nan at step 3, inf at step 4
    (not reported again), and with it on: the refusal."""
    from hyper_parallel.trainer.init_helpers import LossWatch

    watch = LossWatch(check_nan_inf=False, field="debug.check_nan_inf")
    with _captured("hyper_parallel.trainer.init_helpers") as lines:
        watch.check(float("nan"), 3)
        watch.check(float("inf"), 4)
        watch.check(1.5, 5)
    on = LossWatch(check_nan_inf=True, field="train.debug.check_nan_inf")
    return {
        "check_nan_inf off": {"lines": lines, "warned_step": watch.warned_step},
        "check_nan_inf on": _outcome(lambda: on.check(float("nan"), 3)),
    }


def _shape(obj: Any) -> Any:
    """A structure as JSON: containers kept (a tuple as ``{"tuple": [...]}``), tensors as their
    device, dtype and values."""
    import torch

    if isinstance(obj, torch.Tensor):
        return {"tensor": str(obj.device), "dtype": str(obj.dtype), "values": obj.tolist()}
    if isinstance(obj, dict):
        return {"dict": {str(k): _shape(v) for k, v in obj.items()}}
    if isinstance(obj, list):
        return [_shape(v) for v in obj]
    if isinstance(obj, tuple):
        return {"tuple": [_shape(v) for v in obj]}
    return obj if isinstance(obj, (str, int, float, bool, type(None))) else type(obj).__name__


def move_rows() -> dict[str, Any]:
    """``move_to_device(obj, "cpu")`` on nested dict/list/tuple structures with tensors and plain values."""
    import torch

    from hyper_parallel.platform import get_platform

    t = torch.arange(3)
    cases = {
        "tensor": t,
        "dict of list of tuple": {"ids": t, "extra": [t, (t.float(), 3)], "name": "x", "none": None},
        "list": [t, [t], ()],
        "tuple": (t, {"a": [t]}),
    }
    return {
        label: _outcome(lambda o=obj: _shape(get_platform().move_to_device(o, "cpu")))
        for label, obj in cases.items()
    }


def platform_rows() -> dict[str, Any]:
    """Every table above under its name."""
    return {
        "rendezvous_timeout_seconds": rendezvous_rows(),
        "process group (child process)": process_group_rows(),
        "quiet filters": quiet_rows(),
        "LossWatch": loss_watch_rows(),
        "move_to_device": move_rows(),
    }
