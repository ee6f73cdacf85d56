"""``--dist=loadgroup`` (pyproject's addopts) must keep an ``xdist_group`` on one worker: the parity
cases that read one cached trainer run rely on it (``Case.share``). A pytest/xdist pair that breaks it
(pytest-dev/pytest-xdist#1386) runs those trainer runs on every worker, silently; this fails instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests._subprocess import child_env

_GROUPED = """
import os
import pytest

@pytest.mark.xdist_group("shared_run")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    with open(os.path.join(os.environ["GROUPING_OUT"], str(i)), "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(_GROUPED)
    (tmp_path / "workers").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist=loadgroup", "-q", "-p", "no:cacheprovider",
         str(tmp_path / "test_grouped.py")],
        cwd=tmp_path, env=child_env(GROUPING_OUT=str(tmp_path / "workers")), capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers = {p.read_text() for p in (tmp_path / "workers").iterdir()}
    assert len(workers) == 1, (
        f"one xdist_group ran on {sorted(workers)}: --dist=loadgroup ignores xdist_group"
    )
