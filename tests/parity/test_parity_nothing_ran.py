"""A ``parity run`` whose selection runs nothing is not a pass: exit status 5 and one line saying why.

A user probe ran ``python -m parity run --backend mindspore`` without MindSpore: every case was
skipped and the run was green (exit 0) with 0 cases run. pytest's exit status 5 (no tests ran) is
the model: a selection that runs nothing now exits 5 with one line naming why.
"""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys

import pytest
from rich.console import Console

from parity.cli import main
from tests._subprocess import REPO, child_env

CASES = "tests.parity.parity_synthetic:REGISTRY"


def _cli(tmp_path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(
        [*argv, "--golden-dir", str(tmp_path / "golden"), "--report-dir", str(tmp_path / "reports")],
        console=Console(file=out, width=250, color_system=None),
    )
    return code, out.getvalue()


def test_a_selection_with_no_case_for_the_backend_exits_5(tmp_path):
    # The synthetic cases run on torch only: for mindspore the selection holds no job at all.
    code, out = _cli(
        tmp_path, "run", "--cases", CASES, "-k", "warmup_ceil", "--backend", "mindspore", "-j", "1"
    )
    assert code == 5, out
    lines = [line for line in out.splitlines() if "nothing ran" in line]
    assert len(lines) == 1, out
    assert "backend mindspore" in lines[0] and "1 selected case" in lines[0], lines[0]


def test_a_selection_that_runs_is_still_green(tmp_path):
    code, out = _cli(tmp_path, "run", "--cases", CASES, "-k", "warmup_ceil", "--backend", "torch", "-j", "1")
    assert code == 0, out
    assert "nothing ran" not in out


@pytest.mark.skipif(importlib.util.find_spec("mindspore") is not None, reason="MindSpore is installed here")
def test_mindspore_without_mindspore_exits_5_naming_the_reason(tmp_path):
    env = child_env(PYTHONHASHSEED="0")
    proc = subprocess.run(
        [sys.executable, "-m", "parity", "run", "--backend", "mindspore", "-k", "lr_curve", "-j", "1",
         "--report-dir", str(tmp_path / "reports")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 5, out[-3000:]
    lines = [line for line in out.splitlines() if "nothing ran" in line]
    assert len(lines) == 1, out[-3000:]
    assert "skipped" in lines[0] and "mindspore is not installed" in lines[0], lines[0]
