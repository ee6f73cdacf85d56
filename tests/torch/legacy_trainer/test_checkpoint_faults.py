"""SIGKILL during a checkpoint save, then resume: the last complete checkpoint wins, bit for bit.

The debug recipe trains 5 steps with ``save_steps=2`` (saves at steps 2, 4 and the final 5). A child
process kills itself with SIGKILL at a named point of the step-4 save (``_fault_worker.py`` hooks
``hyper_parallel.checkpointing.fault_point``: before, while and after each file, before and after
the manifest, around the folder rename). A second process resumes with ``load_path`` at the run
folder: it must pick step 4 only when the kill came after the rename, step 2 otherwise, report the
leftover ``.partial.step_4`` and then reproduce the uninterrupted loss curve exactly.

A replacement (a run resumed at step 2 saving a step that exists, ``step_4``, which it may replace
only with ``overwrite=true``) is killed at each of its points too: before the old folder moves aside
to ``.replaced.step_4``, before the new one takes its name, before and after the old copy is
deleted. A resume from the run folder must find step 4 (under either name) at every one of them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests._subprocess import child_env

WORKER = Path(__file__).with_name("_fault_worker.py")
COMMON = ("--train.max_steps=5", "--train.checkpoint.save_steps=2")

ARTIFACTS = (
    "optimizer_rank0.pt",
    "scheduler.pt",
    "extra_state.json",
    "rng_rank0.pt",
    "dataloader_rank0.pt",
    "model.safetensors",
    "config.json",
)
# Every point of one save, in the order a save reaches them.
POINTS = (
    "before:model",
    "after:model",
    *(f"{when}:{name}" for name in ARTIFACTS for when in ("before", "written", "after")),
    "before:manifest.json",
    "written:manifest.json",
    "after:manifest.json",
    "commit:rename",
    "commit:done",
)
# Kept in the default run (one per trainer); the full table is marked slow.
DEFAULT_POINTS = {("legacy", "written:rng_rank0.pt"), ("new", "after:manifest.json")}


def _run(
    trainer: str, out: Path, curve: Path, *extra: str, timeout: int = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(WORKER), trainer, str(out), str(curve), *COMMON, *extra],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted 5-step curve of each trainer."""
    curves = {}
    for trainer in ("legacy", "new"):
        root = tmp_path_factory.mktemp(f"ref_{trainer}")
        proc = _run(trainer, root / "ckpt", root / "curve.json")
        assert proc.returncode == 0, proc.stderr[-4000:]
        curves[trainer] = json.loads((root / "curve.json").read_text())
        assert sorted(curves[trainer], key=int) == ["1", "2", "3", "4", "5"]
    return curves


def _params():
    for trainer in ("legacy", "new"):
        for point in POINTS:
            marks = () if (trainer, point) in DEFAULT_POINTS else (pytest.mark.slow,)
            yield pytest.param(trainer, point, id=f"{trainer}-{point}", marks=marks)


@pytest.mark.parametrize(("trainer", "point"), list(_params()))
def test_kill_during_save_then_resume_reproduces_the_curve(reference, tmp_path, trainer, point):
    out = tmp_path / "ckpt"
    killed = _run(trainer, out, tmp_path / "killed.json", "--kill", f"{point}:2")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-4000:]
    assert (out / "step_2" / "manifest.json").is_file()
    complete = point == "commit:done"
    assert (out / "step_4").is_dir() == complete
    if not complete:
        assert (out / ".partial.step_4").is_dir()  # the killed save, never renamed

    resumed = _run(trainer, out, tmp_path / "resumed.json", "--load", str(out))
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    start = 4 if complete else 2
    assert f"resuming from its newest complete checkpoint {out / f'step_{start}'}" in resumed.stderr
    if not complete:
        assert f"Ignoring {out / '.partial.step_4'}" in resumed.stderr
    curve = json.loads((tmp_path / "resumed.json").read_text())
    expected = {step: loss for step, loss in reference[trainer].items() if int(step) > start}
    assert curve == expected
    # The resumed run re-saved step 4 over the leftover and finished with step 5.
    assert sorted(p.name for p in out.iterdir()) == ["step_2", "step_4", "step_5"]


# Every point of a replacement of an existing step_<N>/ (commit_step_dir), in order.
REPLACE_POINTS = ("replace:begin", "commit:rename", "commit:done", "replace:done")
DEFAULT_REPLACE_POINTS = {("legacy", "commit:rename")}


def _replace_params():
    for trainer in ("legacy", "new"):
        for point in REPLACE_POINTS:
            marks = () if (trainer, point) in DEFAULT_REPLACE_POINTS else (pytest.mark.slow,)
            yield pytest.param(trainer, point, id=f"{trainer}-{point}", marks=marks)


@pytest.mark.parametrize(("trainer", "point"), list(_replace_params()))
def test_kill_during_a_replacement_then_resume_finds_the_step(reference, tmp_path, trainer, point):
    out = tmp_path / "ckpt"
    # Run 1 leaves step_2/ and step_4/ complete (killed as its final step-5 save starts).
    first = _run(trainer, out, tmp_path / "first.json", "--kill", "before:model:3")
    assert first.returncode == -signal.SIGKILL, first.stderr[-4000:]
    assert (out / "step_4" / "manifest.json").is_file()
    # Run 2 resumes step 2 and saves step 4 again (asked for: overwrite), killed at ``point``.
    second = _run(
        trainer,
        out,
        tmp_path / "second.json",
        "--load",
        str(out / "step_2"),
        "--train.checkpoint.overwrite=true",
        "--kill",
        f"{point}:1",
    )
    assert second.returncode == -signal.SIGKILL, second.stderr[-4000:]
    assert "Taking over the lock" in second.stderr  # run 1 died holding it
    moved = point in ("commit:rename",)
    assert (out / "step_4").is_dir() != moved
    assert (out / ".replaced.step_4").is_dir() == (point in ("commit:rename", "commit:done"))

    third = _run(trainer, out, tmp_path / "third.json", "--load", str(out))
    assert third.returncode == 0, third.stderr[-4000:]
    found = out / (".replaced.step_4" if moved else "step_4")
    assert f"resuming from its newest complete checkpoint {found}" in third.stderr
    curve = json.loads((tmp_path / "third.json").read_text())
    assert curve == {"5": reference[trainer]["5"]}
    names = {p.name for p in out.iterdir()}
    assert {"step_2", "step_5", found.name} <= names
    assert not (out / ".hyper_parallel.lock").exists()
