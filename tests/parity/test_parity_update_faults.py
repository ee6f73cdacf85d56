"""``python -m parity update`` killed (SIGKILL) while it rewrites a golden: the golden is then the old
one or the new one, complete, never half; a leftover temp file is reported and never read.

The kill comes from the checkpoint fault hook (``hyper_parallel.checkpointing.set_fault_hook``) at
named points of the atomic write, not from a timer, so every point is hit on every machine.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from parity import golden
from parity.env import platform_key
from parity.fileio import TMP_SUFFIX
from tests._subprocess import REPO, child_env

CASES = "tests.parity.parity_synthetic:REGISTRY"
CASE_ID = "param_groups.groups"
KEY = platform_key()

_KILLING_UPDATE = """
import os, signal, sys
from hyper_parallel.checkpointing import set_fault_hook

def hook(event):
    if event == "golden:" + sys.argv[1]:
        os.kill(os.getpid(), signal.SIGKILL)

set_fault_hook(hook)
from parity.cli import main
raise SystemExit(main(sys.argv[2:]))
"""


def _parity(*args: str, kill_at: str | None = None) -> subprocess.CompletedProcess:
    if kill_at is None:
        cmd = [sys.executable, "-m", "parity", *args]
    else:
        cmd = [sys.executable, "-c", _KILLING_UPDATE, kill_at, *args]
    env = child_env(PYTHONHASHSEED="0", HYPER_PARALLEL_PLATFORM="torch")
    return subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.fixture
def stale_golden(tmp_path) -> Path:
    """A committed-looking golden whose eps leaf is stale, so that an update must rewrite it."""
    made = _parity("update", "--cases", CASES, "--id", CASE_ID, "--golden-dir", str(tmp_path))
    assert made.returncode == 0, made.stdout + made.stderr
    path = tmp_path / "torch" / KEY / f"{CASE_ID}.json"
    doc = json.loads(path.read_text())
    doc["artifacts"][0]["eps"]["hex"] = (1e-7).hex()
    path.write_text(golden.dumps(doc))
    return path


@pytest.mark.parametrize(("point", "survivor"), [("tmp_written", "old"), ("replaced", "new")])
def test_a_killed_update_leaves_a_whole_golden(stale_golden, point, survivor):
    old = stale_golden.read_text()
    killed = _parity(
        "update",
        "--cases",
        CASES,
        "--id",
        CASE_ID,
        "--golden-dir",
        str(stale_golden.parents[2]),
        kill_at=point,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    text = stale_golden.read_text()
    golden.parse(text, stale_golden)  # complete, valid JSON with every top-level field
    assert (text == old) is (survivor == "old")
    leftovers = sorted(p.name for p in stale_golden.parent.iterdir() if p.name.endswith(TMP_SUFFIX))
    # Killed before the rename: the temp file is left behind, and the run names it, unused.
    root = str(stale_golden.parents[2])
    checked = _parity("run", "--cases", CASES, "--id", CASE_ID, "--golden-dir", root)
    if survivor == "old":
        assert len(leftovers) == 1
        out = " ".join(checked.stdout.split())  # rich may wrap long lines
        assert checked.returncode == 1 and "leftover temp file of an interrupted write" in out, out
        assert "param_groups[0].eps" in out  # the stale golden, not the temp file, was read
        again = _parity("update", "--cases", CASES, "--id", CASE_ID, "--golden-dir", root, "--prune-unused")
        assert again.returncode == 0, again.stdout + again.stderr
    else:
        assert leftovers == [] and checked.returncode == 0, checked.stdout
    final = _parity("run", "--cases", CASES, "--id", CASE_ID, "--golden-dir", root)
    assert final.returncode == 0, final.stdout
