"""A warm server for the checkpoint kill matrix: import torch and both entry points once, then fork
one child per command line.

    python _warm_trainers.py       (driven by ``WarmTrainers`` below, JSON lines on stdin/stdout)

A fresh interpreter spends about 5 s importing torch and the trainers before a 1 s debug run; the
matrix starts dozens of runs. Each request ``{"trainer", "argv", "log", "kill"}`` is answered by a
forked child that runs exactly what the command line runs (``scripts/train_lm.py``'s ``main`` for
``legacy``, ``hyper_parallel.train.main`` for ``new``: one-line errors and exit status 2 included),
with stdout and stderr in ``log``. ``kill`` is ``EVENT:N``: the child sends itself SIGKILL the N-th
time a save reaches ``EVENT`` (a ``hyper_parallel.checkpointing.fault_point`` name, as
``_fault_worker.py --kill``). The server answers ``{"pid"}`` at the fork and ``{"status"}`` (the
exit status, negative for a signal) once the child is reaped. The server runs no torch op before
forking (forking after ATen's thread pool started can hang), and each child is a session leader so
a timeout can kill it with what it started.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
DEBUG_YAML = REPO / "examples" / "debug" / "train.yaml"


# --------------------------------------------------------------------------- the server (child side)
def _load_entries() -> dict[str, Any]:
    os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")
    sys.path.insert(0, str(REPO))
    import torch
    import torch.distributed.checkpoint  # noqa: F401

    import hyper_parallel.components.checkpoint
    import hyper_parallel.train as new_entry
    import hyper_parallel.trainer
    import hyper_parallel.trainer.legacy_mapping  # noqa: F401

    spec = importlib.util.spec_from_file_location("train_lm", REPO / "scripts" / "train_lm.py")
    assert spec is not None and spec.loader is not None
    legacy_entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(legacy_entry)
    return {"legacy": legacy_entry.main, "new": new_entry.main}


def _child(entries: dict[str, Any], job: dict[str, Any]) -> None:
    code = 1
    try:
        os.setsid()
        fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        sys.argv = [job["trainer"], *job["argv"]]
        if job.get("kill"):
            from tests.torch.legacy_trainer._fault_worker import _install_kill  # the kill tests' hook

            _install_kill(job["kill"])
        code = entries[job["trainer"]](list(job["argv"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # as a process that returns from main: the run lock goes, logs flush
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print of an import must not corrupt the protocol
    entries = _load_entries()
    proto.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(entries, job)
        proto.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        proto.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")


# --------------------------------------------------------------------------- the client (test side)
@dataclass
class Result:
    returncode: int
    output: str
    seconds: float


class WarmTrainers:
    """The test side: start the server once, then ``run(trainer, argv, kill=...)`` per command line."""

    def __init__(self, env: dict[str, str], *, start_timeout: float = 300.0) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
            bufsize=1,
        )
        ready = self._read(start_timeout)
        if "ready" not in ready:
            raise RuntimeError(f"the warm trainer server did not start: {ready}")

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError(f"no answer from the warm trainer server within {timeout:.0f} s")
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the warm trainer server is gone (exit status {self._proc.poll()})")
        return json.loads(line)

    def run(
        self, trainer: str, argv: list[str], log: Path, *, kill: str | None = None, timeout: float = 180.0
    ):
        assert self._proc.stdin is not None
        start = time.monotonic()
        job = {"trainer": trainer, "argv": argv, "log": str(log), "kill": kill}
        self._proc.stdin.write(json.dumps(job) + "\n")
        self._proc.stdin.flush()
        pid = self._read(60)["pid"]
        try:
            status = self._read(timeout)["status"]
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            self._read(60)
            raise
        return Result(status, log.read_text(errors="replace"), time.monotonic() - start)

    def close(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


if __name__ == "__main__":
    serve()
