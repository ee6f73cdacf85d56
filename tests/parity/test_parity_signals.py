"""SIGTERM or SIGINT to a parallel ``parity run`` ends its workers and what they started.

A user probe sent SIGTERM to ``python -m parity run -j 2``: the parent died at once and its forked
workers ran on under PID 1, with the run still marked ``running``. Now the harness, on SIGTERM or
SIGINT sent to it alone, ends every worker with the processes it started, marks the run
``interrupted`` in ``last_run.json`` (with the signal) and exits non-zero (128 + the signal).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._subprocess import REPO, child_env

CASES = "tests.parity.parity_signal_cases:REGISTRY"


def _gone(pid: int) -> bool:
    """No such process, or a zombie (ended, not yet reaped by whoever inherited it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_harness_ends_its_workers_and_marks_the_run_interrupted(tmp_path, signum):
    pids = tmp_path / "pids"
    pids.mkdir()
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "last_run.json").write_text(json.dumps({"status": "finished", "cases": [], "tree": "old"}))
    env = child_env(PARITY_TEST_PIDS=str(pids), PARITY_TEST_SLEEP="120", TMPDIR=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "parity", "run", "--cases", CASES, "-j", "2", "--backend", "torch",
         "--report-dir", str(reports), "--golden-dir", str(tmp_path / "golden")],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,  # a group of its own: the test signals the harness alone, as `kill` does
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(list(pids.glob("*.worker"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = [int(p.stem) for p in pids.glob("*.worker")]
        children = [int(p.stem) for p in pids.glob("*.child")]
        assert len(workers) == 2 and len(children) >= 2, "the two cases did not start in two workers"
        assert proc.pid not in workers
        os.kill(proc.pid, signum)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for path in pids.iterdir():  # never leave a sleeper behind, whatever the test found
            try:
                os.kill(int(path.stem), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    text = out.decode()
    assert proc.returncode == 128 + signum, text[-3000:]
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[-1].startswith("interrupted: ") and "Traceback" not in text, text[-3000:]
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in workers + children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in workers + children if not _gone(pid)] == [], "processes left running"
    state = json.loads((reports / "last_run.json").read_text())
    assert state["status"] == "interrupted" and state["signal"] == signal.Signals(signum).name, state
