"""The MindSpore 100-step curve golden (``long_curve``, ``parity/suites/long_horizon.py``) can fail.

A child process runs the parity CLI on the MindSpore platform with the LR scheduler component's
factor scaled by ``1 + 2**-10`` past step 60 only (after every 20-step golden has ended): the
long curve goes red, and its report names the case, the backend, the golden file and an artifact
whose first difference lies past step 60. 100 MindSpore steps: 17 minutes measured on 2 shared
cores under load, so slow.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._subprocess import REPO, child_env

pytest.importorskip("mindspore")

_LONG_CURVE = "train_curve.long_curve-recipe=dummy-steps=100"
_PLANT_STEP = 60

# Applied in the child before the CLI runs (``-j 1``: the case runs in that process).
_PLANT_LR = f"""
import sys
from hyper_parallel.components import lr_scheduler

_factor_of = lr_scheduler.lr_factor


def _planted(**kwargs):
    factor = _factor_of(**kwargs)
    return lambda step: factor(step) * ((1 + 2**-10) if step > {_PLANT_STEP} else 1.0)


lr_scheduler.lr_factor = _planted
from parity.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _golden() -> Path:
    files = list((REPO / "parity" / "golden" / "mindspore").glob(f"*/{_LONG_CURVE}.json"))
    assert len(files) == 1, files  # one platform key on MindSpore CPU
    return files[0]


@pytest.mark.slow
def test_a_late_lr_change_fails_the_mindspore_long_curve(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    proc = subprocess.run(
        [sys.executable, "-c", _PLANT_LR, "run", "--backend", "mindspore", "--report-dir", str(reports)]
        + ["-j", "1", "--id", _LONG_CURVE],
        cwd=REPO,
        env=child_env(PYTHONHASHSEED="0", HYPER_PARALLEL_PLATFORM="mindspore"),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "0 passed, 1 failed" in out, out
    files = list(reports.rglob(f"{_LONG_CURVE}.json"))
    assert len(files) == 1, sorted(str(p) for p in reports.rglob("*"))
    report = json.loads(files[0].read_text())
    assert report["case_id"] == _LONG_CURVE and report["backend"] == "mindspore"
    assert report["golden_path"] == str(_golden())
    first = re.fullmatch(
        r"train_curve\.(grad_norms|losses|lr_curve)\[(\d+)\]", report["summary"]["artifact_path"]
    )
    assert first is not None, report["summary"]
    assert int(first[2]) > _PLANT_STEP, report["summary"]  # past every 20-step golden
    paths = {d["path"].split("[")[0] for d in report["differences"]}
    assert "train_curve.lr_curve" in paths, paths  # the planted LR itself is named
    assert f"mindspore {_LONG_CURVE}" in out, out
