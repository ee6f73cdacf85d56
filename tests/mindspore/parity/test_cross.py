"""Tier C end to end: ``python -m parity cross`` (torch legacy vs MindSpore new) passes as shipped, and a
divergence planted on the new side only is named artifact by artifact.

Each run starts its two sides in subprocesses of their own (torch, then MindSpore): about 35 s for
``dummy``, 3 to 6 minutes for the other recipes on 2 busy cores, so every test but the dummy plant is
marked slow.
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


@pytest.mark.slow
def test_cross_passes_within_the_table_on_every_single_rank_recipe(tmp_path: Path) -> None:
    rc, payload, out = _cross(tmp_path)
    assert rc == 0, out
    assert [run["recipe"] for run in payload["runs"]] == ["dummy", "hf_text", "alpaca", "preset"]
    for run in payload["runs"]:
        results = {r["artifact"]: r for r in run["results"]}
        assert {r["status"] for r in results.values()} == {"pass"}, run["recipe"]
        # The toleranced artifacts really differ across frameworks (else the table would be exact).
        assert results["weights"]["max_abs"] > 0 and results["logits"]["max_abs"] > 0, run["recipe"]
    assert set(payload["largest"]) == {"losses", "grad_norms", "logits", "weights"}
    assert list(payload["largest_by_recipe"]) == ["dummy", "hf_text", "alpaca", "preset"]
    for recipe, found in payload["largest_by_recipe"].items():
        assert set(found) == {"losses", "grad_norms", "logits", "weights"}, recipe
        assert found["weights"]["seeds"] == [], recipe  # the default run: the recipe's own train.seed
    assert "36 passed, 0 failed, 0 skipped (tier C: torch legacy vs MindSpore new, 4 run(s))" in out


def test_a_planted_weight_decay_is_named(tmp_path: Path) -> None:
    rc, payload, out = _cross(
        tmp_path, "--recipe", "dummy", "--new-override=--train.optimizer.weight_decay=0.02"
    )
    assert rc == 1, out
    (run,) = payload["runs"]
    results = {r["artifact"]: r for r in run["results"]}
    assert results["param_groups"]["status"] == "FAIL"
    assert "param_groups[0].weight_decay" in results["param_groups"]["detail"]
    assert results["weights"]["status"] == "FAIL" and results["weights"]["first_index"] is not None
    for unchanged in ("lr_curve", "batches", "metric_keys", "checkpoint_layout"):
        assert results[unchanged]["status"] == "pass", results[unchanged]
    assert "FAIL cross.param_groups (dummy)" in out and "repro: python -m parity cross --recipe dummy" in out


@pytest.mark.slow
def test_a_planted_loss_scale_on_a_masked_recipe_is_named(tmp_path: Path) -> None:
    """alpaca (masked SFT, accumulation 8): a new side that weights micro-batches by tokens moves the weights."""
    rc, payload, out = _cross(
        tmp_path,
        "--recipe",
        "alpaca",
        "--seed",
        "2",
        "--new-override=--train.optimizer.loss_aggregation=token_weighted",
    )
    assert rc == 1, out
    (run,) = payload["runs"]
    assert run["seed"] == 2
    results = {r["artifact"]: r for r in run["results"]}
    failed = {name for name, r in results.items() if r["status"] == "FAIL"}
    assert "weights" in failed, results
    assert "repro: python -m parity cross --recipe alpaca --seed 2" in out
