"""A consistent change of a product default moves only tier B goldens, and ``update --failed``
accepts it: the harness never pins a product value on one side of a tier A pair.

In a copy of the project, three defaults change in every place that holds them: the AdamW ``eps``
(legacy schema and component), the LR warmup ratio (legacy schema and the qwen3_5 recipe, the new
path's default) and the RMSNorm ``eps`` of the shared model. The optimizer, LR scheduler and loss cases
then run: every tier A pair stays green, some tier B goldens go red, ``update --failed`` rewrites
exactly those, and the same selection is green again. Slow (a few minutes on 2 busy cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SELECTION = "optim or lrsched or legacy_lr or lambda_ or loss"
# (file, old text, new text): each default in every place that holds it.
EDITS = (
    ("hyper_parallel/trainer/config.py", "    eps: float = 1e-8\n", "    eps: float = 1e-6\n"),
    ("hyper_parallel/components/optimizer.py", "        eps: float = 1e-8\n", "        eps: float = 1e-6\n"),
    (
        "hyper_parallel/trainer/config.py",
        "    lr_warmup_ratio: float = 0.1\n",
        "    lr_warmup_ratio: float = 0.2\n",
    ),
    (
        "hyper_parallel/recipes/qwen3_5.py",
        "LRSchedulersContainer.Config(lr_warmup_ratio=0.1,",
        "LRSchedulersContainer.Config(lr_warmup_ratio=0.2,",
    ),
    (
        "hyper_parallel/models/qwen3_5/config.py",
        "    rms_norm_eps: float = 1e-6\n",
        "    rms_norm_eps: float = 1e-5\n",
    ),
)
_IGNORE = shutil.ignore_patterns(
    ".git",
    ".nox",
    "reports",
    "__pycache__",
    ".hypothesis",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "outputs",
)


def _parity(copy: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": "0", "HYPER_PARALLEL_PLATFORM": "torch", "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, "-m", "parity", *argv, "--backend", "torch"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.slow
def test_a_consistent_default_change_moves_only_tier_b_and_update_failed_accepts_it(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=_IGNORE, symlinks=True)
    for rel, old, new in EDITS:
        path = copy / rel
        text = path.read_text()
        assert text.count(old) == 1, f"{rel}: the default {old.strip()!r} moved; update this test"
        path.write_text(text.replace(old, new))

    red = _parity(copy, "run", "-k", SELECTION, "-j", "2")
    assert red.returncode == 1, red.stdout[-3000:] + red.stderr[-3000:]
    rows = json.loads((copy / "parity" / "reports" / "last_run.json").read_text())["cases"]
    assert not [r["case_id"] for r in rows if r["tier"] == "A" and r["status"] != "pass"], red.stdout[-4000:]
    failed_b = sorted(r["case_id"] for r in rows if r["tier"] == "B" and r["status"] == "fail")
    assert failed_b, "no tier B golden moved: the selection does not cover the changed defaults"
    assert "python -m parity update --failed" in red.stdout

    update = _parity(copy, "update", "--failed")
    assert update.returncode == 0, update.stdout[-3000:] + update.stderr[-3000:]
    assert f"{len(failed_b)} golden(s) written" in update.stdout, update.stdout[-3000:]

    green = _parity(copy, "run", "-k", SELECTION, "-j", "2")
    assert green.returncode == 0, green.stdout[-4000:]
