"""Forked ranks of one world: run a function in N processes forked from this one.

A fork starts a rank in well under a second (the parent's imports are done), where a launcher
spends seconds importing. Each rank gets the rendezvous variables (``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``/``MASTER_PORT`` on a free port), writes its output to a log file of its own,
and runs the function in a thread of its own (see :func:`fork_ranks`).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["fork_ranks"]


def fork_ranks(
    what: str, nproc: int, target: Callable[[], object], *, logs: Path, timeout: float = 300
) -> None:
    """Run ``target`` in ``nproc`` forked ranks of one world (rendezvous variables set); raise
    ``RuntimeError`` naming ``what`` and the failing rank's log tail when one fails or hangs.

    Each rank runs ``target`` in a thread of its own, not in the thread it was forked from: a fork
    copies the OpenMP (libgomp) pool's bookkeeping but not its threads, so the forking thread would
    wait forever in its first parallel region once the parent ran one on two or more threads
    (``--cpu-profile native`` on a multi-core machine). A new thread starts a pool of its own.
    Rank ``r`` writes its output to ``<logs>_rank<r>.log``.
    """
    import signal
    import socket
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Garbage of earlier runs (process groups among it) is collected here, where its threads live,
    # and whatever survives is frozen: a child that collected an inherited gloo group would join
    # threads that do not exist in it, and hang.
    gc.collect()
    gc.freeze()
    pids: dict[int, int] = {}
    log_of = {rank: logs.parent / f"{logs.name}_rank{rank}.log" for rank in range(nproc)}
    for rank in range(nproc):
        pid = os.fork()
        if pid == 0:  # the rank: never returns into the parent's code
            code = 1
            try:
                fd = os.open(log_of[rank], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                # Python's streams too (a test runner may have replaced them with its own).
                sys.stdout = open(1, "w", buffering=1, closefd=False)
                sys.stderr = open(2, "w", buffering=1, closefd=False)
                os.environ.pop("HYPER_PARALLEL_SELF_WORLD", None)
                os.environ.update(
                    RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                    LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                )  # fmt: skip
                _in_own_thread(target, f"rank{rank}")
                code = 0
            except BaseException:  # reported through the log and the exit code
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        pids[pid] = rank
    gc.unfreeze()
    deadline = time.monotonic() + timeout
    failed: list[int] = []
    while pids:
        pid, status = os.waitpid(-1, os.WNOHANG) if time.monotonic() < deadline else (0, 0)
        if pid == 0:
            if time.monotonic() >= deadline:
                for other in pids:
                    os.kill(other, signal.SIGKILL)
                    os.waitpid(other, 0)
                raise RuntimeError(f"{what}: ranks still running after {timeout:.0f} s")
            time.sleep(0.02)
            continue
        if pid not in pids:
            continue
        rank = pids.pop(pid)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(rank)
            for other in pids:  # the others would wait for it in a collective
                os.kill(other, signal.SIGKILL)
    if failed:
        rank = failed[0]
        tail = "\n".join(log_of[rank].read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"{what}: rank {rank} failed:\n{tail}")


def _in_own_thread(target: Callable[[], object], name: str) -> None:
    """``target()`` in a new thread of this process (its OpenMP pool starts afresh); re-raises."""
    import threading

    failure: list[BaseException] = []

    def body() -> None:
        try:
            target()
        except BaseException as exc:  # re-raised in the calling thread
            failure.append(exc)

    worker = threading.Thread(target=body, name=name)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
