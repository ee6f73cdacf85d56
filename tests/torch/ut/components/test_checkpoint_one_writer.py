"""Issue 21, checkpoint items, on both trainers (the legacy callbacks and ``CheckpointManager``):
one writer per run folder, verified-or-refused loads, a replacement that cannot lose both copies,
no silent change of settings on resume, and save errors that say what happened."""

from __future__ import annotations

import errno
import json
import logging
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from hyper_parallel import checkpointing
from hyper_parallel.checkpointing import (
    CheckpointCorruptError,
    CheckpointSaveError,
    ExistingCheckpointsError,
    ResumeConfigError,
    ResumePastEndError,
    RunFolderLockedError,
    UnsafeCheckpointError,
    acquire_run_folder,
    release_run_folder,
    resolve_checkpoint,
    verify_manifest,
)
from hyper_parallel.checkpointing.run_lock import LOCK_FILE
from parity.suites import components_checkpoint as suite
from tests._subprocess import child_env

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
    "ignore:Detected an existing checkpoint:UserWarning",
)

STEPS = 2
TRAINERS = ("legacy", "manager")
REPO = Path(__file__).resolve().parents[4]


# --------------------------------------------------------------------------- both trainers, one API
def _saver(trainer: str, state, output_dir: Path, **flags):
    """A started writer of ``trainer`` (lock taken at setup); ``save()`` writes the current step."""
    if trainer == "legacy":
        ckpt, _export = suite.legacy_callbacks(
            state, str(output_dir), save_steps=1, save_hf_weights=False, **flags
        )
        ckpt.trainer.state = SimpleNamespace(max_steps=10)

        def save():
            progress = SimpleNamespace(global_step=state.step, epoch=state.epoch)
            ckpt.save(progress)
            ckpt.wait_for_pending()

        return SimpleNamespace(save=save, close=lambda: ckpt.writer.unlock())
    mgr = suite.manager(state, str(output_dir), save_steps=1, save_hf_weights=False, **flags)

    def save():
        mgr.save(state.step, state.epoch, force=True)

    return SimpleNamespace(save=save, close=mgr.close)


def _resume(trainer: str, target, load_path: str, tmp: Path, *, max_steps: int = 10, **flags) -> int:
    """Resume ``target`` from ``load_path`` through ``trainer``; the resumed global step."""
    if trainer == "legacy":
        ckpt, _export = suite.legacy_callbacks(
            target, str(tmp / "out"), save_steps=0, load_path=load_path, **flags
        )
        ckpt.trainer.state = SimpleNamespace(max_steps=max_steps)
        progress = SimpleNamespace(global_step=0, epoch=0)
        ckpt.on_train_begin(progress)
        return progress.global_step
    from hyper_parallel.components.checkpoint import CheckpointManager

    mgr = CheckpointManager.Config(
        output_dir=str(tmp / "out"), save_steps=0, load_path=load_path, **flags
    ).build(
        model_parts=[target.model],
        optimizers=target.optimizer,
        lr_schedulers=target.lr_scheduler,
        dataloader=target.dataloader,
        sd_adapter=target.adapter,
        run_settings={"max_steps": max_steps},
    )
    return mgr.load()[0]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``step_2/`` written by each trainer (with its settings in the manifest)."""
    root = tmp_path_factory.mktemp("saved")
    state = suite.trained_state(steps=STEPS)
    out = {}
    for trainer in TRAINERS:
        writer = _saver(trainer, state, root / trainer)
        writer.save()
        writer.close()
        out[trainer] = root / trainer / f"step_{STEPS}"
    return SimpleNamespace(root=root, **out)


def _copy(folder: Path, dest: Path) -> Path:
    return Path(shutil.copytree(folder, dest))


def _rewrite_manifest(folder: Path, step: int) -> None:
    """A new manifest for an edited folder that keeps its run settings (a manifest without
    settings is refused on resume)."""
    settings = json.loads((folder / "manifest.json").read_text())["settings"]
    checkpointing.write_manifest(str(folder), step, settings=settings)


# --------------------------------------------------------------------------- 1. one writer
_HOLD = textwrap.dedent(
    """
    import sys, time
    from hyper_parallel.checkpointing import acquire_run_folder
    acquire_run_folder(sys.argv[1], field="checkpoint.output_dir")
    print("held", flush=True)
    time.sleep(60)
    """
)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_second_run_on_a_locked_folder_stops_naming_the_holder(trainer, tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=REPO,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        state = suite.trained_state(steps=0)
        with pytest.raises(
            RunFolderLockedError, match=rf"in use by another run \(host .*, pid {holder.pid},"
        ):
            _saver(trainer, state, tmp_path)
    finally:
        holder.kill()
        holder.wait()
    # The holder died without releasing: the kernel dropped its flock, the next run takes over.
    state = suite.trained_state(steps=0)
    writer = _saver(trainer, state, tmp_path)
    lock = json.loads((tmp_path / LOCK_FILE).read_text())
    assert lock["pid"] == os.getpid() and lock["host"] and lock["started"]
    writer.close()
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_stale_lock_file_is_taken_over_with_a_warning(tmp_path, caplog):
    (tmp_path / LOCK_FILE).write_text('{"host": "gone", "pid": 999999, "started": "earlier"}\n')
    with caplog.at_level(logging.WARNING):
        key = acquire_run_folder(str(tmp_path), field="checkpoint.output_dir")
    assert any(
        "Taking over the lock" in r.getMessage() and "pid 999999" in r.getMessage() for r in caplog.records
    )
    release_run_folder(key)
    assert not (tmp_path / LOCK_FILE).exists()


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_fresh_run_into_finished_checkpoints_stops(trainer, saved, tmp_path):
    out = tmp_path / "run"
    _copy(saved.manager, out / "step_2")
    state = suite.trained_state(steps=0)
    with pytest.raises(ExistingCheckpointsError) as err:
        _saver(trainer, state, out)
    message = str(err.value)
    assert f"newest: {out / 'step_2'}" in message
    assert "load_path=" in message and "another" in message and "overwrite=true" in message
    assert "\n" not in message
    # The explicit ways out: overwrite, or resume (load_path).
    _saver(trainer, state, out, overwrite=True).close()


# --------------------------------------------------------------------------- 2. verified or refused
@pytest.mark.parametrize("trainer", TRAINERS)
def test_an_empty_manifest_is_refused(trainer, saved, tmp_path):
    copy = _copy(saved.legacy, tmp_path / "step_2")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"] = {}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointCorruptError, match="it lists no files"):
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(copy), tmp_path)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_manifest_that_omits_a_file_the_resume_reads_is_refused(trainer, saved, tmp_path):
    copy = _copy(saved.manager, tmp_path / "step_2")
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"]["optimizer_rank0.pt"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointCorruptError, match="does not list optimizer_rank0.pt"):
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(copy), tmp_path)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_folder_without_manifest_is_refused_unless_allowed(trainer, saved, tmp_path, caplog):
    copy = _copy(saved.manager, tmp_path / "step_2")
    os.remove(copy / "manifest.json")
    with pytest.raises(CheckpointCorruptError, match="allow_unverified=true"):
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(copy), tmp_path)
    checkpointing.verify._warned_unverified.clear()
    with caplog.at_level(logging.WARNING):
        step = _resume(
            trainer, suite.trained_state(steps=0, seed=3), str(copy), tmp_path, allow_unverified=True
        )
    assert step == STEPS
    assert any(
        "UNVERIFIED" in r.getMessage() and "optimizer_rank0.pt" in r.getMessage() for r in caplog.records
    )


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_partial_folder_named_as_load_path_is_refused(trainer, saved, tmp_path):
    partial = _copy(saved.manager, tmp_path / ".partial.step_2")
    with pytest.raises(CheckpointCorruptError, match=r"did not finish \(a \.partial\.\* folder\)"):
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(partial), tmp_path)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_metadata_naming_a_shard_outside_the_folder_is_refused(trainer, saved, tmp_path):
    from torch.distributed.checkpoint.filesystem import _StorageInfo

    from hyper_parallel.platform.safe_dcp import read_metadata

    copy = _copy(saved.manager, tmp_path / "ckpt" / "step_2")
    shutil.copy(copy / "__0_0.distcp", tmp_path / "ckpt" / "outside.distcp")
    metadata = read_metadata(str(copy))
    for key, info in list(metadata.storage_data.items()):
        metadata.storage_data[key] = _StorageInfo("../outside.distcp", info.offset, info.length)
    with open(copy / ".metadata", "wb") as fh:
        pickle.dump(metadata, fh)
    _rewrite_manifest(copy, STEPS)  # the manifest vouches for the edited folder
    with pytest.raises(
        UnsafeCheckpointError, match=r"names shard '\.\./outside\.distcp', outside the checkpoint"
    ):
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(copy), tmp_path)


# --------------------------------------------------------------------------- 3. replacement
class _Killed(BaseException):
    pass


@pytest.mark.parametrize("point", ["replace:begin", "commit:rename", "commit:done", "replace:done"])
@pytest.mark.parametrize("trainer", TRAINERS)
def test_an_interrupted_replacement_keeps_a_complete_step(trainer, point, tmp_path):
    state = suite.trained_state(steps=STEPS)
    writer = _saver(trainer, state, tmp_path)
    writer.save()

    def hook(event: str) -> None:
        if event == point:
            raise _Killed(point)

    checkpointing.set_fault_hook(hook)
    try:
        with pytest.raises((_Killed, CheckpointSaveError)):
            writer.save()  # the same step again: a replacement
    finally:
        checkpointing.set_fault_hook(None)
        writer.close()
    found = resolve_checkpoint(str(tmp_path), field="load_path")
    assert Path(found).name in ("step_2", ".replaced.step_2")
    verify_manifest(found)


def test_the_leftover_of_a_replacement_is_found_and_then_cleaned(tmp_path):
    partial = checkpointing.prepare_partial_dir(str(tmp_path), 1, coordinator=True)
    Path(partial, "a.bin").write_bytes(b"new")
    old = tmp_path / ".replaced.step_1"
    old.mkdir()
    (old / "a.bin").write_bytes(b"old")
    checkpointing.write_manifest(str(old), 1)
    assert resolve_checkpoint(str(tmp_path), field="load_path") == str(old)
    checkpointing.commit_step_dir(partial, str(tmp_path / "step_1"), 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_1"]


# --------------------------------------------------------------------------- 4. nothing changes silently
@pytest.mark.parametrize("writer", TRAINERS)
@pytest.mark.parametrize("trainer", TRAINERS)
def test_changed_optimizer_settings_are_refused_listing_every_field(trainer, writer, saved, tmp_path):
    target = suite.trained_state(steps=0, seed=3)
    target.optimizer.param_groups[0]["weight_decay"] = 0.3
    target.optimizer.param_groups[1]["betas"] = (0.5, 0.6)
    with pytest.raises(ResumeConfigError) as err:
        _resume(trainer, target, str(getattr(saved, writer)), tmp_path)
    message = str(err.value)
    assert "optimizer.param_groups[0].weight_decay: 0.01 -> 0.3" in message
    assert "optimizer.param_groups[1].betas: [0.9, 0.999] -> [0.5, 0.6]" in message
    assert "resume_config_changes=apply" in message


@pytest.mark.parametrize("trainer", TRAINERS)
def test_changed_settings_are_applied_with_the_flag(trainer, saved, tmp_path, caplog):
    target = suite.trained_state(steps=0, seed=3)
    target.optimizer.param_groups[0]["weight_decay"] = 0.3
    for group in target.optimizer.param_groups:
        group["initial_lr"] = group["initial_lr"] * 2
    scheduler = target.lr_scheduler
    scheduler.base_lrs = [lr * 2 for lr in scheduler.base_lrs]
    with caplog.at_level(logging.WARNING):
        step = _resume(trainer, target, str(saved.manager), tmp_path, resume_config_changes="apply")
    assert step == STEPS
    # torch's load_state_dict put 0.01 back; the configured value wins, and it was said.
    assert target.optimizer.param_groups[0]["weight_decay"] == 0.3
    assert scheduler.base_lrs == [group["initial_lr"] for group in target.optimizer.param_groups]
    expected = [base * fn(scheduler.last_epoch) for base, fn in zip(scheduler.base_lrs, scheduler.lr_lambdas)]
    assert [g["lr"] for g in target.optimizer.param_groups] == expected
    assert any("weight_decay: 0.01 -> 0.3" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_changed_frozen_set_is_refused(trainer, saved, tmp_path):
    target = suite.trained_state(steps=0, seed=3)
    name, param = next(iter(target.model.named_parameters()))
    param.requires_grad_(False)
    with pytest.raises(ResumeConfigError, match=rf"trainable parameters: 1 now frozen \(first: {name}\)"):
        _resume(trainer, target, str(saved.manager), tmp_path)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_resuming_at_or_past_max_steps_is_an_error(trainer, saved, tmp_path):
    with pytest.raises(ResumePastEndError, match=rf"at step {STEPS}, at or past max_steps={STEPS}"):
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(saved.manager), tmp_path, max_steps=STEPS)


def test_the_settings_are_in_the_manifest_and_the_golden_files_keep_their_content(saved):
    for folder in (saved.legacy, saved.manager):
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["settings"]["optimizer"][0]["weight_decay"] == 0.01
        assert json.loads((folder / "extra_state.json").read_text()) == {"global_step": STEPS, "epoch": 0}


# --------------------------------------------------------------------------- 6. save errors
@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_full_disk_is_named(trainer, tmp_path, monkeypatch):
    state = suite.trained_state(steps=1)
    writer = _saver(trainer, state, tmp_path)
    real_save = torch.save

    def full(obj, f, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", full)
    try:
        with pytest.raises(CheckpointSaveError) as err:
            writer.save()
    finally:
        monkeypatch.setattr(torch, "save", real_save)
        writer.close()
    assert f"checkpoint save to {tmp_path / 'step_1'} failed at step 1: no space left on device" in str(
        err.value
    )


_FSIZE = textwrap.dedent(
    """
    import os, resource, sys
    os.environ["HYPER_PARALLEL_PLATFORM"] = "torch"
    from parity.suites import components_checkpoint as suite
    state = suite.trained_state(steps=1)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
    mgr = suite.manager(state, sys.argv[1], save_steps=1, save_hf_weights=False)
    try:
        if sys.argv[2] == "hf":
            mgr._export_step(1, into=sys.argv[1])
        else:
            mgr.save(1, 0, force=True)
    except Exception as exc:
        print(type(exc).__name__, exc)
    """
)


@pytest.mark.parametrize("what", ["dcp", "hf"])
def test_a_file_size_limit_is_named(what, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", _FSIZE, str(tmp_path / "out"), what],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=REPO,
        timeout=300,
    )
    assert proc.stdout.startswith("CheckpointSaveError checkpoint save to "), (
        proc.stdout + proc.stderr[-2000:]
    )
    assert "file size limit" in proc.stdout


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_pt_holding_objects_is_refused_without_weights_only_advice(trainer, saved, tmp_path):
    # The legacy writer's folder: its settings hold everything either resumer here compares.
    copy = _copy(saved.legacy, tmp_path / "step_2")
    torch.save({"state": {}, "param_groups": [], "evil": SimpleNamespace(a=1)}, copy / "optimizer_rank0.pt")
    _rewrite_manifest(copy, STEPS)
    with pytest.raises(UnsafeCheckpointError) as err:
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(copy), tmp_path)
    message = str(err.value)
    assert "is refused: it holds objects other than tensors (types.SimpleNamespace)" in message
    assert "weights_only" not in message and "\n" not in message


# --------------------------------------------------------------------------- 5. weights whole or not at all
def _load_weights(trainer: str, path: str, **flags):
    """Initial weights into a fresh model through ``trainer``; its state dict afterwards."""
    state = suite.trained_state(steps=0, seed=11)
    if trainer == "legacy":
        from hyper_parallel.trainer.base import BaseTrainer

        loader = BaseTrainer.__new__(BaseTrainer)
        loader.model = state.model
        loader.spec = SimpleNamespace(state_dict_adapter=state.adapter)
        loader.args = SimpleNamespace(train=SimpleNamespace(checkpoint=SimpleNamespace(**flags)))
        loader._load_weights(path)
    else:
        suite.manager(state, "unused", save_steps=0, **flags).load_weights(path)
    return state.model.state_dict()


@pytest.fixture(scope="module")
def weights(saved):
    full = {k: v.clone() for k, v in suite.trained_state(steps=0, seed=5).model.state_dict().items()}
    return full


@pytest.mark.parametrize("trainer", TRAINERS)
def test_renamed_weights_are_an_error_naming_offenders_and_counts(trainer, weights, tmp_path):
    renamed = {f"renamed.{k}": v for k, v in weights.items()}
    torch.save(renamed, tmp_path / "w.pt")
    with pytest.raises(CheckpointCorruptError) as err:
        _load_weights(trainer, str(tmp_path / "w.pt"))
    message = str(err.value)
    n = len(weights)
    assert "model parameters missing from the file (first: " in message
    assert f"{n} tensors the model does not have (first: renamed." in message
    assert "allow_partial_weights=true" in message and "\n" not in message


@pytest.mark.parametrize("trainer", TRAINERS)
def test_integer_and_misshapen_weights_are_an_error(trainer, weights, tmp_path):
    name = next(k for k, v in weights.items() if v.dim() == 2)
    as_int = dict(weights)
    as_int[name] = weights[name].to(torch.int32)
    torch.save(as_int, tmp_path / "int.pt")
    with pytest.raises(
        CheckpointCorruptError,
        match=rf"1 tensors that do not fit \(first: {name} \(integer in the file, floating",
    ):
        _load_weights(trainer, str(tmp_path / "int.pt"))
    wrong = dict(weights)
    wrong[name] = weights[name][:1]
    torch.save(wrong, tmp_path / "shape.pt")
    with pytest.raises(CheckpointCorruptError, match=rf"{name} \(shape \[1, "):
        _load_weights(trainer, str(tmp_path / "shape.pt"))


@pytest.mark.parametrize("trainer", TRAINERS)
def test_partial_weights_load_only_with_the_flag_and_say_what_stays_random(
    trainer, weights, tmp_path, caplog
):
    name = [k for k in weights if ".layers." in k][-1]
    partial = {k: v for k, v in weights.items() if k != name}
    torch.save(partial, tmp_path / "p.pt")
    with pytest.raises(
        CheckpointCorruptError, match=rf"1 model parameters missing from the file \(first: {name}\)"
    ):
        _load_weights(trainer, str(tmp_path / "p.pt"))
    with caplog.at_level(logging.WARNING):
        loaded = _load_weights(trainer, str(tmp_path / "p.pt"), allow_partial_weights=True)
    assert any(f"1 parameters keep their random init: {name}" in r.getMessage() for r in caplog.records)
    other = next(k for k in weights if k != name)
    assert torch.equal(loaded[other], weights[other])


@pytest.mark.parametrize("trainer", TRAINERS)
def test_dcp_weights_of_another_model_are_an_error(trainer, saved, tmp_path):
    from hyper_parallel.platform.safe_dcp import read_metadata

    copy = _copy(saved.manager, tmp_path / "step_2")
    metadata = read_metadata(str(copy))
    first = next(iter(metadata.state_dict_metadata))
    metadata.state_dict_metadata[f"other.{first}"] = metadata.state_dict_metadata.pop(first)
    with open(copy / ".metadata", "wb") as fh:
        pickle.dump(metadata, fh)
    os.remove(copy / "manifest.json")
    with pytest.raises(
        CheckpointCorruptError, match=rf"1 tensors the model does not have \(first: other\.{first}\)"
    ):
        _load_weights(trainer, str(copy))


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_malformed_safetensors_header_is_one_line(trainer, tmp_path):
    bad = tmp_path / "w.safetensors"
    bad.write_bytes((1 << 40).to_bytes(8, "little") + b"{}")
    with pytest.raises(CheckpointCorruptError) as err:
        _load_weights(trainer, str(bad))
    assert str(err.value).startswith(f"Failed to load weights from {bad}: {bad}: unreadable safetensors file")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_crafted_weights_pt_is_refused(trainer, tmp_path):
    torch.save({"w": SimpleNamespace(a=1)}, tmp_path / "w.pt")
    with pytest.raises(CheckpointCorruptError, match="holds objects other than tensors") as err:
        _load_weights(trainer, str(tmp_path / "w.pt"))
    assert "weights_only" not in str(err.value)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_changed_max_steps_is_refused_by_default(trainer, saved, tmp_path):
    # The legacy writer recorded max_steps=10: extending the run reshapes the LR schedule.
    with pytest.raises(ResumeConfigError, match=r"max_steps: 10 -> 12") as err:
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(saved.legacy), tmp_path, max_steps=12)
    assert "resume_config_changes=apply" in str(err.value)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_changed_max_steps_is_applied_and_listed_with_apply(trainer, saved, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        step = _resume(
            trainer,
            suite.trained_state(steps=0, seed=3),
            str(saved.legacy),
            tmp_path,
            max_steps=12,
            resume_config_changes="apply",
        )
    assert step == STEPS
    assert any("max_steps: 10 -> 12" in r.getMessage() for r in caplog.records)
