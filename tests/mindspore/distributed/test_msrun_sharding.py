"""The dataloader component on a real 2-rank MindSpore world (msrun, CPU) against the torch legacy
trainer's loader, rank by rank.

One msrun run (``_msrun_dataloader_worker.py new``) builds the loader as ``HyperTrainer`` does on
each rank, reads a few optimizer steps of micro-batches and all-reduces its label-token count; one
torch subprocess (``... legacy``, ``HYPER_PARALLEL_PLATFORM=torch``) builds the legacy loader for
rank 0 and rank 1 of the same configuration with a simulated rank. The test asserts, per case
(dummy, padded hf_datasets text, json_file alpaca with a trailing partial group):

- each rank's ids and labels are the legacy rank's, exactly, and so is the bookkeeping;
- the two ranks' sampler indices are disjoint and together are the sampler's permutation cut to
  ``total_size`` (``perm[r::2]``), so no row is read twice or dropped beyond drop_last;
- the all_reduce result on both ranks is the sum of the two ranks' counts.

msrun starts the scheduler and workers with ``python`` from PATH, so this interpreter's folder goes
first in PATH. On failure the tail of every msrun log is printed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# The folder conftest ignores this file without MindSpore; named explicitly, it skips here.
pytest.importorskip("mindspore")

pytestmark = [pytest.mark.slow, pytest.mark.distributed]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
WORKER = HERE.parent / "_msrun_dataloader_worker.py"
MSRUN_TIMEOUT_S = 300  # measured ~40 s on 2 loaded cores; init() alone waits ~30 s
LOG_TAIL = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(platform: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["HYPER_PARALLEL_PLATFORM"] = platform
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("GLOG_v", "2")  # MindSpore: warnings and up in the worker logs
    # msrun/MindSpore variables a parent run may have left must not leak into this one.
    for name in ("MS_ROLE", "MS_WORKER_NUM", "MS_SCHED_HOST", "MS_SCHED_PORT", "RANK_ID", "MS_NODE_ID"):
        env.pop(name, None)
    return env


def _tail(path: Path, n: int = LOG_TAIL) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return f"<unreadable: {exc}>"
    return "\n".join(lines[-n:])


def _logs(log_dir: Path, *extra: tuple[str, str]) -> str:
    parts = [f"--- {name} ---\n{text[-6000:]}" for name, text in extra]
    for path in sorted(log_dir.glob("*.log")):  # worker_0.log, worker_1.log, scheduler.log
        parts.append(f"--- {path.name} (last {LOG_TAIL} lines) ---\n{_tail(path)}")
    return "\n".join(parts)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill what is left of msrun's process group (its scheduler and workers: start_new_session),
    also after msrun itself exited, so no worker outlives the test."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_msrun_dataloader_sharding_matches_legacy(tmp_path: Path) -> None:
    sys.path.insert(0, str(WORKER.parent))
    try:
        import _msrun_dataloader_worker as worker
    finally:
        sys.path.remove(str(WORKER.parent))

    pad_dir = str(worker.write_pad_tokenizer(tmp_path / "tokenizer-pad"))
    out, log_dir = tmp_path / "out", tmp_path / "msrun-logs"
    msrun = Path(sys.executable).parent / "msrun"
    assert msrun.exists(), f"msrun not next to {sys.executable}"
    cmd = [
        str(msrun),
        f"--worker_num={worker.WORLD}",
        f"--local_worker_num={worker.WORLD}",
        f"--master_port={_free_port()}",
        f"--log_dir={log_dir}",
        "--join=True",
        "--cluster_time_out=120",
        str(WORKER),
        "new",
        str(out),
        pad_dir,
    ]
    start = time.monotonic()
    ms_proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=_env("mindspore"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        # The legacy side runs meanwhile: msrun spends most of its time waiting in init().
        legacy = subprocess.run(
            [sys.executable, str(WORKER), "legacy", str(out), pad_dir],
            cwd=ROOT,
            env=_env("torch"),
            capture_output=True,
            text=True,
            timeout=MSRUN_TIMEOUT_S,
        )
        ms_out, _ = ms_proc.communicate(timeout=max(MSRUN_TIMEOUT_S - (time.monotonic() - start), 1))
    except subprocess.TimeoutExpired as exc:
        _stop(ms_proc)
        pytest.fail(f"{exc.cmd[1:3]} ran past {exc.timeout:.0f}s\n" + _logs(log_dir))
    finally:
        _stop(ms_proc)
    elapsed = time.monotonic() - start
    print(f"msrun 2 ranks: {elapsed:.1f}s wall")

    logs = _logs(log_dir, ("msrun stdout", ms_out or ""), ("legacy stderr", legacy.stderr))
    assert legacy.returncode == 0, f"legacy side failed (rc {legacy.returncode})\n{logs}"
    assert ms_proc.returncode == 0, f"msrun failed (rc {ms_proc.returncode})\n{logs}"
    new = {r: _load(out / f"new_rank{r}.json") for r in range(worker.WORLD)}
    old = {r: _load(out / f"legacy_rank{r}.json") for r in range(worker.WORLD)}

    for r in range(worker.WORLD):
        assert new[r]["platform"] == "MindSporePlatform", new[r]["platform"]
        assert (new[r]["rank"], new[r]["world_size"], new[r]["dp_size"]) == (r, worker.WORLD, worker.WORLD)
        assert old[r]["platform"] == "TorchPlatform", old[r]["platform"]

    problems: list[str] = []

    def check(ok: bool, what: str) -> None:
        if not ok:
            problems.append(what)

    for name, case in worker.CASES.items():
        n_new = {r: new[r]["cases"][name] for r in range(worker.WORLD)}
        n_old = {r: old[r]["cases"][name] for r in range(worker.WORLD)}
        for r in range(worker.WORLD):
            got, want = n_new[r], n_old[r]
            check(
                got["tensor_types"] == ["mindspore"],
                f"{name} rank {r}: new batches are {got['tensor_types']}",
            )
            check(
                want["tensor_types"] == ["torch"],
                f"{name} rank {r}: legacy batches are {want['tensor_types']}",
            )
            check(got["dp_rank"] == r, f"{name} rank {r}: the loader's dp_rank is {got['dp_rank']}")
            check(got["groups_read"] == case["groups"], f"{name} rank {r}: {got['groups_read']} groups read")
            for key in (
                "group_sizes",
                "grad_accum",
                "training_steps",
                "dataset_len",
                "indices",
                "local_tokens",
                "input_ids",
                "labels",
            ):
                if got[key] == want[key]:
                    continue
                if key in ("input_ids", "labels") and len(got[key]) == len(want[key]):
                    bad = next(i for i, (a, b) in enumerate(zip(got[key], want[key])) if a != b)
                    detail = f"first differing micro batch {bad}: new {got[key][bad]} legacy {want[key][bad]}"
                else:
                    detail = f"new {got[key]} legacy {want[key]}"
                problems.append(f"{name} rank {r}: {key} differs from the legacy trainer's ({detail})")

        # The sampler's split: disjoint ranks that together cover perm[:total_size], rank r = perm[r::2].
        perm, total = n_old[0]["permutation"], n_old[0]["total_size"]
        kept = perm[:total]
        idx = [n_new[r]["indices"] for r in range(worker.WORLD)]
        shared = sorted(set(idx[0]) & set(idx[1]))
        check(not shared, f"{name}: both ranks read rows {shared}")
        check(sorted(idx[0] + idx[1]) == sorted(kept), f"{name}: the ranks' rows are not perm[:{total}]")
        for r in range(worker.WORLD):
            check(
                idx[r] == kept[r :: worker.WORLD], f"{name} rank {r}: indices are not perm[:{total}][{r}::2]"
            )
        check(total == 2 * (n_old[0]["dataset_len"] // 2), f"{name}: total_size {total}")
        check(
            n_new[0]["input_ids"][0] != n_new[1]["input_ids"][0],
            f"{name}: both ranks' first micro batches are the same",
        )

        # The collective: both ranks hold the sum of both counts, which the legacy counts give too.
        expected = sum(n_new[r]["local_tokens"] for r in range(worker.WORLD))
        legacy_sum = sum(n_old[r]["local_tokens"] for r in range(worker.WORLD))
        check(expected == legacy_sum, f"{name}: token count sum {expected}, legacy {legacy_sum}")
        for r in range(worker.WORLD):
            got_sum = n_new[r]["all_reduced_tokens"]
            check(
                got_sum == expected,
                f"{name} rank {r}: all_reduce gave {got_sum}, the ranks' sum is {expected}",
            )

    assert not problems, "\n".join(problems) + "\n" + logs
