"""A rendezvous that no other rank joins stops within a bound, in one line naming what it read.

A user probe left ``WORLD_SIZE=2`` in the environment (no launcher, no second rank): both trainers
waited 301 s without a word, then ended in torch's raw store-timeout traceback. Now the process
group's rendezvous is bounded (``HYPER_PARALLEL_RENDEZVOUS_TIMEOUT`` seconds, 60 by default), and
a rendezvous that does not complete stops with one line naming RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT as read, and what to do. The tests set the bound to a few seconds.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import pytest

from tests._subprocess import child_env
from tests.torch.legacy_trainer._recipes import DEBUG_YAML, REPO_ROOT

BOUND = "3"
NAMED = (
    "RANK=",
    "WORLD_SIZE=2",
    "MASTER_ADDR=127.0.0.1",
    "MASTER_PORT=",
    "HYPER_PARALLEL_RENDEZVOUS_TIMEOUT",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stale_env(rank: str = "0", **extra: str) -> dict[str, str]:
    env = child_env()
    env.update(
        RANK=rank,
        WORLD_SIZE="2",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
        HYPER_PARALLEL_RENDEZVOUS_TIMEOUT=BOUND,
    )
    env.update(extra)
    env.pop("HYPER_PARALLEL_DEBUG", None)
    return env


def _run(argv: list[str], env: dict[str, str], cwd) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=90
    )
    return proc, time.monotonic() - start


@pytest.mark.parametrize(
    ("head", "prog"),
    [([str(REPO_ROOT / "scripts" / "train_lm.py")], "train_lm.py"), (["-m", "hyper_parallel.train"], "hyper_parallel.train")],
    ids=["legacy", "new"],
)  # fmt: skip
@pytest.mark.parametrize("rank", ["0", "1"])
def test_a_stale_world_size_stops_within_the_bound_in_one_line(tmp_path, head, prog, rank):
    argv = [
        *head,
        str(DEBUG_YAML),
        "--train.max_steps=1",
        f"--train.checkpoint.output_dir={tmp_path / 'out'}",
    ]
    proc, seconds = _run(argv, _stale_env(rank), tmp_path)
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = errors[0]
    assert line.startswith(f"{prog}: error: "), line
    assert re.search(r"rendezvous .*did not complete within 3 s", line), line
    for part in NAMED:
        assert part in line, (part, line)
    assert f"RANK={rank}" in line and "torchrun" in line and "unset WORLD_SIZE" in line, line
    assert seconds < 60, seconds  # the bound, plus the start of a process that imports torch


def test_the_platform_raises_a_rendezvous_timeout_error(tmp_path):
    code = (
        "from hyper_parallel.platform import get_platform\n"
        "from hyper_parallel.platform.base import RendezvousTimeoutError\n"
        "try:\n"
        "    get_platform().init_process_group(timeout_seconds=300)\n"
        "except RendezvousTimeoutError as exc:\n"
        "    print('RAISED', exc)\n"
    )
    proc, seconds = _run(["-c", code], _stale_env(HYPER_PARALLEL_PLATFORM="torch"), tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("RAISED "), proc.stdout + proc.stderr[-3000:]
    assert "within 3 s" in proc.stdout and seconds < 60


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_a_bad_bound_names_the_variable(tmp_path, value):
    code = "from hyper_parallel.platform import get_platform\nget_platform().init_process_group()\n"
    env = _stale_env(HYPER_PARALLEL_PLATFORM="torch", HYPER_PARALLEL_RENDEZVOUS_TIMEOUT=value)
    proc, _ = _run(["-c", code], env, tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert re.search(
        rf"ValueError: HYPER_PARALLEL_RENDEZVOUS_TIMEOUT={value!r}: expected a number of seconds > 0", last
    )
