"""The checkpoint integrity leaf (``hyper_parallel.checkpointing``) and how CheckpointManager uses it:
staging and commit, replacing a leftover or an older folder, async commits, the restricted DCP
metadata reader on real (also FSDP2) metadata, and the output-folder probe."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch

from hyper_parallel import checkpointing
from hyper_parallel.checkpointing import (
    MANIFEST_FILE,
    CheckpointCorruptError,
    CheckpointSaveError,
    UnwritableDirError,
    check_writable_dir,
    commit_step_dir,
    prepare_partial_dir,
    resolve_checkpoint,
    verify_manifest,
)
from hyper_parallel.components.checkpoint import CheckpointManager
from hyper_parallel.platform import get_platform

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
    "ignore:Detected an existing checkpoint:UserWarning",
)


def _manager(tmp_path: Path, **fields) -> CheckpointManager:
    model = torch.nn.Linear(3, 2)
    return CheckpointManager.Config(output_dir=str(tmp_path), save_hf_weights=False, **fields).build(
        model_parts=[model],
        optimizers=torch.optim.AdamW(model.parameters()),
        lr_schedulers=None,
        dataloader=None,
    )


def _save(tmp_path: Path, step: int = 1, **fields) -> CheckpointManager:
    """``save(step)`` and ``wait()``: the background commit joined, ``step_<step>/`` in place."""
    mgr = _manager(tmp_path, save_steps=1, **fields)
    mgr.save(step)
    mgr.wait()
    return mgr


# --------------------------------------------------------------------------- staging and commit
def test_commit_writes_the_manifest_last_and_renames(tmp_path):
    partial = prepare_partial_dir(str(tmp_path), 3, coordinator=True)
    Path(partial, "a.bin").write_bytes(b"abc")
    os.makedirs(Path(partial, "sub"))
    Path(partial, "sub", "b.json").write_text("{}")
    Path(partial, ".x.tmp").write_text("stray")
    commit_step_dir(partial, str(tmp_path / "step_3"), 3)
    assert not Path(partial).exists()
    manifest = verify_manifest(str(tmp_path / "step_3"))
    assert sorted(manifest["files"]) == ["a.bin", "sub/b.json"]
    assert manifest["files"]["a.bin"] == {
        "size": 3,
        "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    }


def test_fault_points_come_in_save_order(tmp_path):
    seen: list[str] = []
    checkpointing.set_fault_hook(seen.append)
    try:
        _save(tmp_path)
    finally:
        checkpointing.set_fault_hook(None)
    assert seen == [
        "before:model",
        "after:model",
        "before:optimizer_rank0.pt",
        "written:optimizer_rank0.pt",
        "after:optimizer_rank0.pt",
        "before:extra_state.json",
        "written:extra_state.json",
        "after:extra_state.json",
        "before:rng_rank0.pt",
        "written:rng_rank0.pt",
        "after:rng_rank0.pt",
        "before:manifest.json",
        "written:manifest.json",
        "after:manifest.json",
        "commit:rename",
        "commit:done",
    ]


def test_a_leftover_partial_folder_is_replaced_with_a_warning(tmp_path, caplog):
    leftover = tmp_path / ".partial.step_1"
    leftover.mkdir()
    (leftover / "__0_0.distcp").write_bytes(b"half")
    with caplog.at_level("WARNING"):
        _save(tmp_path)
    assert any(f"Removing {leftover}" in r.getMessage() for r in caplog.records)
    assert not leftover.exists()
    verify_manifest(str(tmp_path / "step_1"))


def test_saving_a_step_again_replaces_the_older_folder_whole(tmp_path):
    _save(tmp_path).close()
    (tmp_path / "step_1" / "stale.txt").write_text("from an earlier run")
    _save(tmp_path, overwrite=True).close()  # close: the run-folder lock file goes too
    assert not (tmp_path / "step_1" / "stale.txt").exists()
    verify_manifest(str(tmp_path / "step_1"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_1"]


def test_a_save_is_committed_in_the_background_and_joined_by_wait(tmp_path):
    mgr = _manager(tmp_path, save_steps=2)
    assert mgr.maybe_save(2) == str(tmp_path / "step_2")
    mgr.wait()
    assert not (tmp_path / ".partial.step_2").exists()
    verify_manifest(str(tmp_path / "step_2"))
    mgr.maybe_save(4)  # load() joins the commit in flight first: it finds step_4
    assert mgr.load(str(tmp_path)) == (4, 0)


def test_a_failed_background_commit_stops_the_run_at_the_next_wait(tmp_path):
    def hook(event: str) -> None:
        if event == f"before:{MANIFEST_FILE}":
            raise OSError(28, "No space left on device")

    mgr = _manager(tmp_path, save_steps=1)
    checkpointing.set_fault_hook(hook)
    try:
        mgr.save(1)  # the files are written; the commit fails on the background thread
        with pytest.raises(
            CheckpointSaveError,
            match=r"step_1 failed at step 1: no space left on device \(OSError: \[Errno 28\]",
        ):
            mgr.wait()
    finally:
        checkpointing.set_fault_hook(None)
    assert (tmp_path / ".partial.step_1").is_dir() and not (tmp_path / "step_1").exists()
    mgr.wait()  # reported once; nothing is in flight any more


def test_async_save_is_committed_at_wait(tmp_path):
    mgr = _manager(tmp_path, save_steps=2, save_async=True)
    mgr.maybe_save(2)
    assert (tmp_path / ".partial.step_2").is_dir() and not (tmp_path / "step_2").exists()
    mgr.wait()
    assert not (tmp_path / ".partial.step_2").exists()
    verify_manifest(str(tmp_path / "step_2"))
    assert mgr.load(str(tmp_path)) == (2, 0)


# --------------------------------------------------------------------------- verification
def test_an_extra_file_beside_the_manifest_is_ignored(tmp_path):
    _save(tmp_path)
    (tmp_path / "step_1" / "notes.txt").write_text("added later")
    assert resolve_checkpoint(str(tmp_path / "step_1"), field="f") == str(tmp_path / "step_1")


def test_a_manifest_entry_leaving_the_folder_is_refused(tmp_path):
    _save(tmp_path)
    manifest_path = tmp_path / "step_1" / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["../elsewhere"] = {"size": 1, "sha256": "0" * 64}
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(CheckpointCorruptError, match="leaves the folder"):
        verify_manifest(str(tmp_path / "step_1"))


# --------------------------------------------------------------------------- restricted metadata reader
def test_real_metadata_passes_the_restricted_reader(tmp_path):
    import torch.distributed.checkpoint as dcp

    state = {
        "f32": torch.ones(3),
        "bf16": torch.ones(2, 2, dtype=torch.bfloat16),
        "i64": torch.arange(4),
        "b": torch.zeros(2, dtype=torch.bool),
    }
    dcp.save(state, checkpoint_id=str(tmp_path))
    shapes = get_platform().dcp_tensor_shapes(str(tmp_path))
    assert shapes == {"f32": (3,), "bf16": (2, 2), "i64": (4,), "b": (2,)}
    target = {k: torch.empty_like(v) for k, v in state.items()}
    get_platform().dcp_load(target, str(tmp_path))
    assert all(torch.equal(target[k], state[k]) for k in state)


def test_fsdp2_metadata_passes_the_restricted_reader(tmp_path, gloo_world):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.fsdp import fully_shard

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    fully_shard(model)
    dcp.save(model.state_dict(), checkpoint_id=str(tmp_path))
    assert get_platform().dcp_tensor_shapes(str(tmp_path))["0.weight"] == (4, 4)
    get_platform().dcp_load(model.state_dict(), str(tmp_path))


def test_the_restricted_reader_refuses_any_other_global(tmp_path):
    (tmp_path / ".metadata").write_bytes(pickle.dumps({"x": torch.nn.Linear}))
    with pytest.raises(pickle.UnpicklingError, match=r"refused to unpickle global torch\.nn\.modules"):
        get_platform().dcp_read_metadata(str(tmp_path))


# --------------------------------------------------------------------------- output folders
def test_check_writable_dir_creates_nothing(tmp_path):
    check_writable_dir(str(tmp_path / "a" / "b"), "x.output_dir")
    check_writable_dir(str(tmp_path), "x.output_dir")
    assert list(tmp_path.iterdir()) == []


def test_check_writable_dir_refuses_a_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK) and os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        with pytest.raises(UnwritableDirError, match=r"x\.output_dir='.*ro/sub' cannot be written"):
            check_writable_dir(str(ro / "sub"), "x.output_dir")
    finally:
        ro.chmod(0o700)
