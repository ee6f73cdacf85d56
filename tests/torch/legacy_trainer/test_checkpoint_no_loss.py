"""No checkpoint is lost without being asked for, in both trainers (the legacy callbacks and
``CheckpointManager``), for the four findings of a user probe:

1. A fresh run (no ``load_path``) into a folder that holds a ``.replaced.step_<N>/`` (left by an
   interrupted replacement) or a ``step_<N>/`` without a manifest stops before its first step,
   naming the folder and the ways out; ``overwrite: true`` covers ``step_<N>/`` folders only.
2. A resume from ``step_2`` into a folder that also holds ``step_4`` stops before training, naming
   ``step_4`` and the ways out (resume the newest, another ``output_dir``, ``overwrite: true``).
3. A symlinked ``.hyper_parallel.lock`` is refused, never followed.
4. A save whose new folder is committed but whose old ``.replaced.step_<N>/`` copy cannot be
   removed is a warning naming that copy, not a failed save.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from hyper_parallel import checkpointing
from hyper_parallel.checkpointing import (
    MANIFEST_FILE,
    ExistingCheckpointsError,
    acquire_run_folder,
    release_run_folder,
    resolve_checkpoint,
    verify_manifest,
)
from hyper_parallel.checkpointing.run_lock import LOCK_FILE
from parity.suites import components_checkpoint as suite

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
    "ignore:Detected an existing checkpoint:UserWarning",
)

TRAINERS = ("legacy", "manager")
MAX_STEPS = 10


# --------------------------------------------------------------------------- both trainers, one API
def _run(trainer: str, state, output_dir: Path, *, save_steps: int = 2, load_path=None, **flags):
    """A started run of ``trainer`` on ``output_dir`` (its setup checks done, its lock taken).

    ``save()`` writes ``state.step`` and joins the commit, ``resume()`` loads ``load_path`` (the
    resumed step), ``close()`` gives the lock back.
    """
    if trainer == "legacy":
        ckpt, _export = suite.legacy_callbacks(
            state, str(output_dir), save_steps=save_steps, load_path=load_path, save_hf_weights=False, **flags
        )
        ckpt.trainer.state = SimpleNamespace(max_steps=MAX_STEPS)

        def save():
            ckpt.save(SimpleNamespace(global_step=state.step, epoch=state.epoch))
            ckpt.wait_for_pending()

        def resume():
            progress = SimpleNamespace(global_step=0, epoch=0)
            ckpt.on_train_begin(progress)
            return progress.global_step

        return SimpleNamespace(save=save, resume=resume, close=ckpt.writer.unlock)
    from hyper_parallel.components.checkpoint import CheckpointManager

    mgr = CheckpointManager.Config(
        output_dir=str(output_dir),
        save_steps=save_steps,
        load_path=load_path,
        save_hf_weights=False,
        **flags,
    ).build(
        model_parts=[state.model],
        optimizers=state.optimizer,
        lr_schedulers=state.lr_scheduler,
        dataloader=state.dataloader,
        sd_adapter=state.adapter,
        run_settings={"max_steps": MAX_STEPS},
    )
    return SimpleNamespace(
        save=lambda: mgr.save(state.step, state.epoch, force=True),
        resume=lambda: mgr.load()[0],
        close=mgr.close,
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Per trainer, a run folder with complete ``step_2/`` and ``step_4/`` (manifests, settings)."""
    root = tmp_path_factory.mktemp("no_loss")
    out = {}
    for trainer in TRAINERS:
        state = suite.trained_state(steps=2)
        run = _run(trainer, state, root / trainer)
        run.save()
        state.step = 4  # the same weights, recorded as step 4: only the folder's existence matters
        run.save()
        run.close()
        out[trainer] = root / trainer
    return SimpleNamespace(**out)


def _copy(folder: Path, dest: Path) -> Path:
    return Path(shutil.copytree(folder, dest))


def _one_line(message: str) -> str:
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------- 1. fresh run
@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_fresh_run_never_removes_a_replaced_copy(trainer, saved, tmp_path):
    """Finding 1: the only copy of step 2 sits at ``.replaced.step_2/`` (a replacement killed before
    the new folder took its name); a fresh run saving step 2 used to delete it at its commit."""
    run_dir = tmp_path / "run"
    aside = _copy(saved.manager / "step_2", run_dir / ".replaced.step_2")
    state = suite.trained_state(steps=2, seed=5)
    with pytest.raises(ExistingCheckpointsError) as err:
        _run(trainer, state, run_dir).save()
    message = _one_line(str(err.value))
    assert str(aside) in message
    assert f"load_path={str(run_dir)!r}" in message and "another" in message
    # overwrite: true covers step_<N>/ folders only: the interrupted replacement's copy stays refused.
    with pytest.raises(ExistingCheckpointsError) as err:
        _run(trainer, state, run_dir, overwrite=True).save()
    message = _one_line(str(err.value))
    assert str(aside) in message and "move it" in message
    verify_manifest(str(aside))
    assert resolve_checkpoint(str(run_dir), field="load_path") == str(aside)
    assert not (run_dir / LOCK_FILE).exists()


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_fresh_run_never_replaces_a_step_without_a_manifest_unless_asked(trainer, saved, tmp_path):
    """Finding 1: a ``step_<N>/`` written before manifests is a checkpoint too."""
    run_dir = tmp_path / "run"
    old = _copy(saved.manager / "step_2", run_dir / "step_2")
    os.remove(old / MANIFEST_FILE)
    (old / "note.txt").write_text("an earlier run")
    state = suite.trained_state(steps=2, seed=5)
    with pytest.raises(ExistingCheckpointsError) as err:
        _run(trainer, state, run_dir).save()
    message = _one_line(str(err.value))
    assert str(old) in message and "without a manifest" in message
    assert f"load_path={str(run_dir)!r}" in message and "another" in message and "overwrite=true" in message
    assert (old / "note.txt").is_file()
    # Asked for exactly that: the run replaces the step_<N>/ folder it saves again.
    run = _run(trainer, state, run_dir, overwrite=True)
    try:
        run.save()
    finally:
        run.close()
    assert not (old / "note.txt").exists()
    verify_manifest(str(old))
    assert sorted(p.name for p in run_dir.iterdir()) == ["step_2"]


# --------------------------------------------------------------------------- 2. resume
@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_resume_that_would_overwrite_later_steps_is_refused(trainer, saved, tmp_path):
    """Finding 2: resuming step 2 of a folder that holds step 4 would replace step 4 at its save."""
    run_dir = _copy(getattr(saved, trainer), tmp_path / "run")
    before = (run_dir / "step_4" / MANIFEST_FILE).read_bytes()
    target = suite.trained_state(steps=0, seed=3)
    run = _run(trainer, target, run_dir, load_path=str(run_dir / "step_2"))
    try:
        with pytest.raises(ExistingCheckpointsError) as err:
            run.resume()
    finally:
        run.close()
    message = _one_line(str(err.value))
    assert "step 2" in message and str(run_dir / "step_4") in message
    assert f"load_path={str(run_dir)!r}" in message  # resume the newest
    assert "another" in message and "overwrite=true" in message
    assert (run_dir / "step_4" / MANIFEST_FILE).read_bytes() == before
    verify_manifest(str(run_dir / "step_4"))
    # The ways out: the newest step (through the run folder), or overwrite: true.
    run = _run(trainer, suite.trained_state(steps=0, seed=3), run_dir, load_path=str(run_dir))
    try:
        assert run.resume() == 4
    finally:
        run.close()
    run = _run(
        trainer,
        suite.trained_state(steps=0, seed=3),
        run_dir,
        load_path=str(run_dir / "step_2"),
        overwrite=True,
    )
    try:
        assert run.resume() == 2
    finally:
        run.close()


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_resume_into_another_folder_with_later_steps_is_refused(trainer, saved, tmp_path):
    """Finding 2, with ``load_path`` outside ``output_dir``: its step 4 would be replaced too."""
    out = _copy(getattr(saved, trainer), tmp_path / "out")
    shutil.rmtree(out / "step_2")
    run = _run(
        trainer, suite.trained_state(steps=0, seed=3), out, load_path=str(getattr(saved, trainer) / "step_2")
    )
    try:
        with pytest.raises(ExistingCheckpointsError, match=r"step_4"):
            run.resume()
    finally:
        run.close()
    verify_manifest(str(out / "step_4"))


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_resume_that_saves_nothing_is_not_refused(trainer, saved, tmp_path):
    """A resume that writes no checkpoint (``save_steps <= 0``) overwrites nothing."""
    run = _run(
        trainer,
        suite.trained_state(steps=0, seed=3),
        getattr(saved, trainer),
        save_steps=0,
        load_path=str(getattr(saved, trainer) / "step_2"),
    )
    try:
        assert run.resume() == 2
    finally:
        run.close()


# --------------------------------------------------------------------------- 3. the lock file
@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_a_symlinked_lock_file_is_refused_and_never_followed(tmp_path, dangling):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    target = tmp_path / "precious.txt"
    if not dangling:
        target.write_text("precious\n")
    (run_dir / LOCK_FILE).symlink_to(target)
    with pytest.raises(ValueError) as err:
        acquire_run_folder(str(run_dir), field="checkpoint.output_dir")
    message = _one_line(str(err.value))
    assert str(run_dir / LOCK_FILE) in message and "symbolic link" in message
    if dangling:
        assert not target.exists()
    else:
        assert target.read_text() == "precious\n"
    assert (run_dir / LOCK_FILE).is_symlink()  # nothing removed either: the user decides


@pytest.mark.parametrize("trainer", TRAINERS)
def test_both_trainers_refuse_a_symlinked_lock_file(trainer, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("precious\n")
    (run_dir / LOCK_FILE).symlink_to(target)
    with pytest.raises(ValueError, match=rf"{LOCK_FILE} is a symbolic link"):
        _run(trainer, suite.trained_state(steps=0), run_dir)
    assert target.read_text() == "precious\n"


def test_a_lock_file_that_is_not_a_regular_file_is_refused(tmp_path):
    (tmp_path / LOCK_FILE).mkdir()
    with pytest.raises(ValueError, match=rf"{LOCK_FILE}.*not a regular file"):
        acquire_run_folder(str(tmp_path), field="checkpoint.output_dir")


def test_a_regular_lock_file_still_works(tmp_path):
    key = acquire_run_folder(str(tmp_path), field="checkpoint.output_dir")
    assert (tmp_path / LOCK_FILE).is_file()
    release_run_folder(key)
    assert not (tmp_path / LOCK_FILE).exists()


# --------------------------------------------------------------------------- 4. old copy stays
@pytest.mark.parametrize("trainer", TRAINERS)
def test_an_old_copy_that_cannot_be_removed_is_a_warning_not_a_failed_save(
    trainer, saved, tmp_path, monkeypatch, caplog
):
    run_dir = tmp_path / "run"
    _copy(saved.manager / "step_2", run_dir / "step_2")
    real_rmtree = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        if os.path.basename(os.fspath(path)).startswith(checkpointing.REPLACED_PREFIX):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(checkpointing.staging.shutil, "rmtree", rmtree)
    state = suite.trained_state(steps=2, seed=5)
    run = _run(trainer, state, run_dir, overwrite=True)
    try:
        with caplog.at_level(logging.WARNING):
            run.save()  # committed: no CheckpointSaveError
    finally:
        run.close()
        monkeypatch.setattr(checkpointing.staging.shutil, "rmtree", real_rmtree)
    aside = run_dir / ".replaced.step_2"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(str(aside) in w and "Permission denied" in w for w in warnings), warnings
    verify_manifest(str(run_dir / "step_2"))  # the new save
    verify_manifest(str(aside))  # the old copy, intact
    assert resolve_checkpoint(str(run_dir), field="load_path") == str(run_dir / "step_2")
