"""Tier C end to end: ``python -m parity cross`` (torch legacy vs MindSpore new) passes as shipped, and a
divergence planted on the new side only is named artifact by artifact.

Each run starts its two sides in subprocesses of their own (torch, then MindSpore): about 40 s a run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._subprocess import REPO, child_env

pytest.importorskip("mindspore")


def _cross(tmp_path: Path, *plant: str) -> tuple[int, dict, str]:
    report = tmp_path / "reports"
    proc = subprocess.run(
        [sys.executable, "-m", "parity", "cross", "--report-dir", str(report), *plant],
        cwd=REPO,
        env=child_env(PYTHONHASHSEED="0"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    payload = json.loads((report / "cross.json").read_text()) if (report / "cross.json").exists() else {}
    return proc.returncode, payload, proc.stdout + proc.stderr


def test_cross_passes_within_the_table(tmp_path: Path) -> None:
    rc, payload, out = _cross(tmp_path)
    assert rc == 0, out
    results = {r["artifact"]: r for r in payload["results"]}
    assert {r["status"] for r in results.values()} == {"pass"}
    # The toleranced artifacts really differ across frameworks (else the table would be exact).
    assert results["weights"]["max_abs"] > 0 and results["logits"]["max_abs"] > 0
    assert "9 passed, 0 failed" in out


def test_a_planted_weight_decay_is_named(tmp_path: Path) -> None:
    rc, payload, out = _cross(tmp_path, "--new-override=--train.optimizer.weight_decay=0.02")
    assert rc == 1, out
    results = {r["artifact"]: r for r in payload["results"]}
    assert results["param_groups"]["status"] == "FAIL"
    assert "param_groups[0].weight_decay" in results["param_groups"]["detail"]
    assert results["weights"]["status"] == "FAIL" and results["weights"]["first_index"] is not None
    for unchanged in ("lr_curve", "batches", "metric_keys", "checkpoint_layout"):
        assert results[unchanged]["status"] == "pass", results[unchanged]
    assert "FAIL cross.param_groups" in out and "repro: python -m parity cross" in out
