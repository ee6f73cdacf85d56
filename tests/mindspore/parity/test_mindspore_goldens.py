"""The MindSpore tier B goldens (``parity/golden/mindspore/<key>/``) pass as committed and can fail.

Each test runs the parity CLI in a child process on the MindSpore platform, as ``nox -s
"parity(mindspore)"`` does: a few cases green against their committed goldens, then one case with a
divergence planted inside the component under test (the cross-entropy loss returns twice its value,
so the loss and every element of the logits gradient change bits), whose report must name that case,
the backend, the golden file and the differing artifacts. About 20 s for both on 2 cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._subprocess import REPO, child_env

pytest.importorskip("mindspore")

_GREEN = "lrsched_new_curve or component_tokenizer or dataloader_dummy_golden or component_loss"
_LOSS_CASE = "losses.component_loss-batch=2-chunks=0-data_seed=7-ignore=prompt-seed=0-seq=32"
_LR_CASE = "lr_curve.lrsched_new_curve-decay_style=constant-lr_min=0.0001-steps=7-warmup_ratio=0.5"

# Applied in the child before the CLI runs (``-j 1``: every case in that process).
_PLANT_LOSS = """
import sys
from hyper_parallel.components import loss

_original = loss.CrossEntropyLoss.__call__
loss.CrossEntropyLoss.__call__ = lambda self, logits, labels: _original(self, logits, labels) * 2.0
from parity.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _parity_run(report_dir: Path, *args: str, plant: str | None = None) -> tuple[int, str]:
    head = [sys.executable, "-c", plant] if plant else [sys.executable, "-m", "parity"]
    proc = subprocess.run(
        [*head, "run", "--backend", "mindspore", "--report-dir", str(report_dir), *args],
        cwd=REPO,
        env=child_env(PYTHONHASHSEED="0", HYPER_PARALLEL_PLATFORM="mindspore"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _mindspore_golden_dir() -> Path:
    folders = [p for p in (REPO / "parity" / "golden" / "mindspore").iterdir() if p.is_dir()]
    assert len(folders) == 1, folders  # one platform key on MindSpore CPU
    return folders[0]


def test_committed_mindspore_goldens_pass(tmp_path: Path) -> None:
    rc, out = _parity_run(tmp_path / "reports", "-k", _GREEN)
    assert rc == 0, out
    # 2 LR curves, 3 tokenizer, 3 dummy-dataloader and 3 loss goldens, checked on MindSpore only.
    assert "11 passed, 0 failed, 0 skipped, 0 unused golden(s)" in out, out
    golden = _mindspore_golden_dir() / f"{_LOSS_CASE}.json"
    fingerprint = json.loads(golden.read_text())["fingerprint"]
    import mindspore

    assert fingerprint["backend"] == "mindspore" and fingerprint["mindspore"] == mindspore.__version__
    assert fingerprint["platform"] == golden.parent.name and fingerprint["deterministic"] is True


def test_a_scaled_loss_fails_its_mindspore_golden(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    rc, out = _parity_run(reports, "-j", "1", "--id", _LOSS_CASE, "--id", _LR_CASE, plant=_PLANT_LOSS)
    assert rc == 1, out
    assert "1 passed, 1 failed" in out, out  # the LR curve does not read the loss: still green
    assert not list(reports.rglob(f"{_LR_CASE}.json"))
    files = list(reports.rglob(f"{_LOSS_CASE}.json"))
    assert len(files) == 1, sorted(str(p) for p in reports.rglob("*"))
    report = json.loads(files[0].read_text())
    assert report["case_id"] == _LOSS_CASE and report["backend"] == "mindspore"
    assert report["golden_path"] == str(_mindspore_golden_dir() / f"{_LOSS_CASE}.json")
    assert report["environment"] is None  # the same environment: only the bits moved
    paths = {d["path"] for d in report["differences"]}
    assert paths == {"losses.loss", "losses.logits_grad"}, paths
    assert report["summary"]["artifact_path"] in paths
    assert f"mindspore {_LOSS_CASE}" in out and "--backend mindspore" in out
